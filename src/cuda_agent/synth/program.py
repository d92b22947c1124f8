"""Load a KernelBench-format program from its source and build its model and inputs.

Only ever called inside an isolated child (`run_isolated`), never in the harness's process.
"""

from __future__ import annotations

import linecache
import types
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Loaded:
    module: types.ModuleType
    filename: str


def load_program(code: str, tag: str = "program") -> Loaded:
    """Execute `code` as a fresh module; its filename lets tracebacks and tracers find it."""
    from cuda_agent.task import content_hash

    filename = f"<synth-{tag}-{content_hash(code)}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    module = types.ModuleType(f"synth_{tag}_{content_hash(code)}")
    module.__file__ = filename
    exec(compile(code, filename, "exec"), module.__dict__)  # noqa: S102 - isolated child only
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise ValueError(f"the program defines no {name}")
    return Loaded(module, filename)


def seed_all(seed: int, device: str = "cpu") -> None:
    """Seed the generators `device` uses. Cheaper than torch.manual_seed, which, before CUDA is
    initialized, queues a seeding call per backend and records a stack trace for each."""
    torch.default_generator.manual_seed(seed)
    if device.startswith("cuda"):
        torch.cuda.manual_seed_all(seed)


def build(loaded: Loaded, device: str, seed: int = 0) -> torch.nn.Module:
    """`Model(*get_init_inputs())` on `device`: constructed there directly, except on the CPU."""
    seed_all(seed, device)
    init = loaded.module.get_init_inputs()
    if device == "cpu":
        return loaded.module.Model(*init)
    with torch.device(device):
        return loaded.module.Model(*init).to(device)


def make_inputs(loaded: Loaded, device: str, seed: int) -> list:
    """`get_inputs()` drawn with `seed` on `device` (by its generator: drawing gigabytes on the
    CPU and copying them over would cost seconds per call); anything left elsewhere is moved."""
    seed_all(seed, device)
    if device == "cpu":
        return list(loaded.module.get_inputs())
    with torch.device(device):
        values = loaded.module.get_inputs()
    if device == "meta":
        return list(values)
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def tensors_of(value) -> list[torch.Tensor]:
    """The tensors in an output: a tensor, or a (nested) tuple/list of them."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in tensors_of(v)]
    return []
