"""What `cuda-agent train` checks before it prepares data or launches anything: the rl extra is
installed, the model to start from exists, and a training stage has a GPU to run on. Each
failure is one line saying how to fix it, instead of a traceback from Hydra, a Hugging Face
message about tokenizers, or minutes of Ray and veRL start-up on a machine without a GPU."""

from __future__ import annotations

import os
import re
from pathlib import Path

from cuda_agent.errors import UserError

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
HUB_TIMEOUT_S = 10.0
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def check_rl_extra() -> None:
    """UserError unless veRL and Hydra import."""
    try:
        import hydra  # noqa: F401
        import verl  # noqa: F401
    except ImportError as err:
        raise UserError(
            f"the rl extra is not installed ({err.name or 'veRL'} is missing): "
            "pip install -e '.[rl]'"
        ) from None


def check_model(model: str, option: str = "--model") -> str | None:
    """UserError when `model` is neither a Hugging Face model folder nor an existing hub id; a
    note (returned) when it is a hub id that cannot be checked from here."""
    hint = "give a Hugging Face model folder (with config.json) or a hub id like Qwen/Qwen3-8B"
    path = Path(model).expanduser()
    if path.exists():
        if not path.is_dir():
            raise UserError(f"{option} {model}: a file, not a model folder; {hint}")
        if not (path / "config.json").is_file():
            raise UserError(f"{option} {model}: no config.json there, not a model folder; {hint}")
        return None
    if not HUB_ID.fullmatch(model):
        raise UserError(f"{option} {model}: no such folder, and not a hub id; {hint}")
    return _check_hub_id(model, option, hint)


def _check_hub_id(model: str, option: str, hint: str) -> str | None:
    try:
        from huggingface_hub import model_info, try_to_load_from_cache
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError
    except ImportError:
        return f"{option} {model}: not checked (huggingface_hub is not installed)"
    if isinstance(try_to_load_from_cache(model, "config.json"), str):
        return None  # downloaded before
    if any(os.environ.get(v, "").lower() in ("1", "true", "yes") for v in OFFLINE_VARIABLES):
        return (
            f"{option} {model}: not in the local Hugging Face cache, and the hub cannot be checked "
            "offline; training fails if it cannot be downloaded"
        )
    try:
        model_info(model, timeout=HUB_TIMEOUT_S)
    except GatedRepoError:
        return f"{option} {model}: a gated model; set HF_TOKEN to an account that has access"
    except RepositoryNotFoundError:
        raise UserError(
            f"{option} {model}: no such model on the Hugging Face hub (a private one needs "
            f"HF_TOKEN); {hint}"
        ) from None
    except Exception as err:  # the hub unreachable (any network error): say so, go on
        return f"{option} {model}: the hub could not be reached to check it ({type(err).__name__})"
    return None


def check_gpu(stage: str) -> None:
    """UserError when no CUDA GPU is visible."""
    import torch

    if not torch.cuda.is_available():
        raise UserError(
            f"stage {stage} runs on GPUs and none is visible here; run it on a GPU machine, or "
            "add --dry-run to prepare its data and print its command"
        )
