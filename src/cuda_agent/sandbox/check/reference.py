"""The trusted side of an evaluation: the reference model of a task, on this process's GPU."""

from __future__ import annotations

import time

import torch

from cuda_agent.sandbox.check.inputs import init_inputs, load_program, secret_seed
from cuda_agent.task import Task


class Reference:
    """Model(*get_init_inputs()) with secretly seeded weights, in `module_mode` (module_mode.py:
    "train" leaves it as constructed, "eval" calls .eval()); a torch.compile copy on demand."""

    def __init__(self, task: Task, device: torch.device, module_mode: str = "train"):
        self.task = task
        self.device = device
        self.module_mode = module_mode
        self.program = load_program(task.code, f"reference_{task.hash}")
        seed = secret_seed()
        self.seed = seed  # the candidate is built under it too, as KernelBench builds both
        self.init_inputs = init_inputs(self.program, seed)
        torch.manual_seed(seed)
        self.model = self.program.Model(*self.init_inputs).to(device)
        if module_mode == "eval":
            self.model.eval()
        self.compiled = None
        self.compile_first_call_s: float | None = None

    def __call__(self, *inputs):
        with torch.no_grad():
            return self.model(*inputs)

    def run_compiled(self, *inputs):
        with torch.no_grad():
            return self.compiled(*inputs)

    def ensure_compiled(self, example: list) -> float:
        """Compile (default mode) and make the first call; returns its seconds."""
        if self.compiled is None:
            # kept only once a first call succeeded: one may run out of memory
            compiled = torch.compile(self.model)
            start = time.perf_counter()
            with torch.no_grad():
                compiled(*example)
            torch.cuda.synchronize()
            self.compile_first_call_s = time.perf_counter() - start
            self.compiled = compiled
        return self.compile_first_call_s

    def state_for_candidate(self) -> dict:
        """A copy of the state_dict for the candidate (parameters and buffers, detached)."""
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}
