"""The null-kernel battery, run on the CPU with small reference programs."""

from pathlib import Path

import torch

from cuda_agent.sandbox.check.audit import run_battery
from cuda_agent.sandbox.check.reference import Reference
from cuda_agent.task import Task, TaskSource, load_task

RELU_UNIFORM = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.rand(64, 256)]
def get_init_inputs():
    return []
"""

TINY_OUTPUT = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 1e-5
def get_inputs():
    return [torch.randn(64, 256)]
def get_init_inputs():
    return []
"""

LOG_OF_INPUT = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x + 1e-5 * torch.log1p(x)
def get_inputs():
    return [torch.rand(64, 256)]
def get_init_inputs():
    return []
"""


def _battery(code: str):
    task = Task(name="t", code=code, source=TaskSource("file", "t.py"))
    return run_battery(Reference(task, torch.device("cpu")), "cpu", 1e-2, 1e-2)


def test_identity_passes_relu_on_uniform_inputs_so_inputs_are_redrawn():
    record = _battery(RELU_UNIFORM)
    assert "input 0 itself" in record.passing["task"]
    assert record.distribution == "normal" and record.redrawn and not record.degenerate
    assert record.passing["normal"] == []


def test_outputs_below_tolerance_are_degenerate():
    record = _battery(TINY_OUTPUT)
    assert record.degenerate
    assert all("zeros" in names for names in record.passing.values())


def test_distributions_with_nonfinite_reference_are_skipped():
    record = _battery(LOG_OF_INPUT)
    # log1p is NaN below -1: normal draws are rejected; the finite ones all let identity pass
    assert set(record.nonfinite) == {"normal", "normal_x4"}
    assert record.degenerate and record.distribution == "task"
    assert all("input 0 itself" in names for names in record.passing.values())


INPUT_INDEPENDENT = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(64, 256))
    def forward(self, x):
        return self.w + 0 * x
def get_inputs():
    return [torch.randn(64, 256)]
def get_init_inputs():
    return []
"""


def test_an_output_that_ignores_its_input_lets_a_stale_buffer_pass():
    record = _battery(INPUT_INDEPENDENT)
    assert all("another set's output" in names for names in record.passing.values())
    assert record.degenerate


BATCHNORM = (
    Path(__file__).parents[2] / "fixtures" / "workdirs" / "batchnorm_eval_cuda_agent" / "model.py"
)


def test_batchnorm_with_fresh_statistics_is_degenerate_in_eval_mode_only():
    task = load_task(BATCHNORM)
    trained = run_battery(Reference(task, torch.device("cpu"), "train"), "cpu", 1e-2, 1e-2)
    assert trained.module_mode == "train" and not trained.degenerate
    assert trained.passing["task"] == [] and trained.distribution == "task"
    evaluated = run_battery(Reference(task, torch.device("cpu"), "eval"), "cpu", 1e-2, 1e-2)
    assert evaluated.module_mode == "eval" and evaluated.degenerate
    assert all("input 0 itself" in passing for passing in evaluated.passing.values())


def test_the_reference_runs_in_its_mode():
    task = load_task(BATCHNORM)
    assert Reference(task, torch.device("cpu")).model.training  # as constructed
    assert not Reference(task, torch.device("cpu"), "eval").model.bn.training
