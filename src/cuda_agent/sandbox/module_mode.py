"""The module's mode during an evaluation: as constructed (training) or after `.eval()`.

KernelBench never calls `.eval()`, so its references run in training mode; CUDA Agent's
verification and profiling call `.eval()` on both models. With BatchNorm, Dropout and their kin
the outputs differ, so the mode is part of the evaluation: a setting (`EnvConfig.module_mode`),
applied to the reference and the candidate alike, recorded in the verdict.

    train   the models as constructed, `.eval()` never called (KernelBench's way)
    eval    `.eval()` called on both before any call (CUDA Agent's way)
    auto    by the submission's format (FORMAT_MODES)

`train` leaves the models exactly as their constructors made them (nothing is called), so a
verdict in that mode is the verdict the harness gave before the mode was a setting.
"""

from __future__ import annotations

from pathlib import Path

from cuda_agent.errors import UserError

MODULE_MODES = ("train", "eval")
SETTINGS = ("auto", *MODULE_MODES)
# The mode each submission format is written for. A workspace of this project's own has always
# been checked as constructed; CUDA Agent's workdirs are checked (by their own tools) in eval mode;
# KernelBench's single-file submissions are checked as constructed.
FORMAT_MODES = {"workspace": "train", "cuda-agent": "eval", "kernelbench": "train"}
# What marks a folder as a CUDA Agent workdir rather than one of this project's workspaces: its
# own tools folder, or a binding registry that is not the one this project writes.
_CUDA_AGENT_TOOLS = "utils"
_OWN_REGISTRY_MARK = "namespace cuda_agent"


def resolve_module_mode(setting: str, submission_format: str) -> str:
    """The mode an evaluation runs in: `setting` unless it is "auto", else the format's."""
    if setting not in SETTINGS:
        raise UserError(f"module mode {setting!r}: choose {', '.join(SETTINGS)}")
    if setting != "auto":
        return setting
    if submission_format not in FORMAT_MODES:
        known = ", ".join(FORMAT_MODES)
        raise UserError(f"submission format {submission_format!r}: one of {known} is expected")
    return FORMAT_MODES[submission_format]


def folder_format(folder: Path) -> str:
    """The format of a solution folder: "cuda-agent" for a CUDA Agent workdir (its utils/ folder,
    or a binding registry of its own), else "workspace"."""
    if (folder / _CUDA_AGENT_TOOLS).is_dir():
        return "cuda-agent"
    registry = folder / "binding_registry.h"
    try:
        own = _OWN_REGISTRY_MARK in registry.read_text(errors="replace")
    except OSError:
        return "workspace"
    return "workspace" if own else "cuda-agent"
