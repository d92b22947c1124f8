"""A task's own functions, run in a confined child at no size (meta) or on the CPU."""

from cuda_agent.sandbox.check.task_probe import task_program_error
from cuda_agent.task import load_task

BIG = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, n))

    def forward(self, x):
        return x @ self.w

def get_inputs():
    return [torch.randn(1 << 20, 1 << 14)]  # 64 GiB of float32: only meta can hold it

def get_init_inputs():
    return [1 << 14]
"""


def _task(tmp_path, code: str):
    path = tmp_path / "task.py"
    path.write_text(code)
    return load_task(path)


def test_a_task_far_larger_than_memory_runs_on_meta(tmp_path):
    assert task_program_error(_task(tmp_path, BIG)) is None


def test_an_error_of_the_tasks_own_code_is_named_with_its_step(tmp_path):
    code = BIG.replace("return [1 << 14]", "raise KeyError('width')")
    error = task_program_error(_task(tmp_path, code))
    assert error == "get_init_inputs() raised KeyError: 'width'"


def test_code_that_needs_values_is_judged_on_the_cpu(tmp_path):
    # .item() has no meaning on meta: the CPU run decides, and here the program is sound
    code = BIG.replace(
        "return [torch.randn(1 << 20, 1 << 14)]",
        "n = int(torch.tensor(4).item())\n    return [torch.randn(n, 1 << 14)]",
    )
    assert task_program_error(_task(tmp_path, code)) is None


def test_a_model_that_cannot_be_built_is_named(tmp_path):
    code = BIG.replace("self.w = nn.Parameter(torch.randn(n, n))", "self.w = undefined_name")
    error = task_program_error(_task(tmp_path, code))
    assert error.startswith("Model(*get_init_inputs()) raised NameError")


def test_the_built_in_tasks_all_run():
    for name in ("elementwise_chain", "causal_attention", "conv_bias_relu"):
        assert task_program_error(load_task(name)) is None, name
