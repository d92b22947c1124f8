"""The module mode: a setting, else the submission format's, and the format of a folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.errors import UserError
from cuda_agent.sandbox import EnvConfig, create_workspace, read_solution, resolve_module_mode
from cuda_agent.sandbox.module_mode import folder_format
from cuda_agent.task import load_task

FIXTURES = Path(__file__).parents[1] / "fixtures"
WORKDIR = FIXTURES / "workdirs" / "axpby_cuda_agent"


@pytest.mark.parametrize(
    ("setting", "fmt", "mode"),
    [
        ("auto", "workspace", "train"),
        ("auto", "cuda-agent", "eval"),
        ("auto", "kernelbench", "train"),
        ("eval", "workspace", "eval"),
        ("train", "cuda-agent", "train"),
    ],
)
def test_the_setting_wins_else_the_format_decides(setting, fmt, mode):
    assert resolve_module_mode(setting, fmt) == mode


def test_unknown_settings_and_formats_are_user_errors():
    with pytest.raises(UserError, match="choose auto, train, eval"):
        resolve_module_mode("inference", "workspace")
    with pytest.raises(UserError, match="submission format 'triton'"):
        resolve_module_mode("auto", "triton")
    with pytest.raises(UserError, match="choose auto, train, eval"):
        EnvConfig(module_mode="training")


def test_a_cuda_agent_workdir_is_told_from_a_workspace(tmp_path):
    assert read_solution(WORKDIR).format == "cuda-agent"
    assert read_solution(FIXTURES / "solutions" / "elementwise_chain").format == "workspace"
    ours = create_workspace(load_task("elementwise_chain"), tmp_path / "ws")
    assert folder_format(ours) == "workspace"  # our own registry beside it
    (ours / "utils").mkdir()
    assert folder_format(ours) == "cuda-agent"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "binding_registry.h").write_text("#pragma once\nclass BindingRegistry {};\n")
    assert folder_format(foreign) == "cuda-agent"
