"""Whether a task's own program runs: get_init_inputs(), get_inputs() and Model(*init), on a
machine without a GPU.

Without a GPU nothing is verified, so a broken task would look like every other `no_gpu`
verdict. The functions run first with torch's meta device as the default, where tensors have
shapes but no storage: a problem with 6 GiB inputs costs nothing. An error of the task's own code
there is the answer. Code that needs real values (`.item()`, indexing with data) or an op without
a meta kernel cannot run on meta, so such a failure is tried again on the CPU at full size, under
a memory limit; a CPU run that runs out of memory or time reports nothing. The task's code runs
in a confined child, as any program the harness did not write.
"""

from __future__ import annotations

from cuda_agent.sandbox.process.isolated_call import run_isolated
from cuda_agent.task import Task

_TIMEOUT_S = 120.0
_CPU_MEMORY_MB = 4096


def task_program_error(task: Task) -> str | None:
    """One line saying which of the task's functions raised what, or None when they ran (or
    could not be judged here)."""
    on_meta = run_isolated(_run_task, (task.code, "meta"), timeout_s=_TIMEOUT_S)
    if on_meta.ok:
        return on_meta.value
    on_cpu = run_isolated(
        _run_task, (task.code, "cpu"), timeout_s=_TIMEOUT_S, memory_mb=_CPU_MEMORY_MB
    )
    return on_cpu.value if on_cpu.ok else None


def _run_task(code: str, device: str) -> str | None:
    """In the child: the task's functions on `device`. An error the task's own code raised is
    the answer; an error of the meta device itself is raised, so the caller tries the CPU."""
    import torch

    namespace: dict = {"__name__": "task_program"}
    step = "the program"
    try:
        with torch.device(device):
            exec(compile(code, "model.py", "exec"), namespace)
            step = "get_init_inputs()"
            init = namespace["get_init_inputs"]()
            step = "get_inputs()"
            namespace["get_inputs"]()
            step = "Model(*get_init_inputs())"
            namespace["Model"](*init)
    except Exception as err:
        if device == "meta" and _meta_cannot(err):
            raise
        if device == "cpu" and _out_of_memory(err):
            return None  # too big to judge here, not broken
        return f"{step} raised {type(err).__name__}: {err}"[:500]
    return None


def _meta_cannot(err: Exception) -> bool:
    """The meta device, not the task, failed: an op without a meta kernel, or one that needs
    values (`.item()`, data-dependent shapes)."""
    return isinstance(err, NotImplementedError) or "meta" in str(err).lower()


def _out_of_memory(err: Exception) -> bool:
    text = str(err).lower()
    return isinstance(err, MemoryError) or "allocate" in text or "out of memory" in text
