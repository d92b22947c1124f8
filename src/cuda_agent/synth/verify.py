"""Check labels against the code by a second, independent mechanism: counting wrappers.

Every place a label's operator can be reached from (`torch.add`, `Tensor.add`, `Tensor.__add__`;
a module class's `forward`; a library function in its module) is replaced by a wrapper that counts
calls made straight from the program's own code, the program is loaded afresh and run once. A
label whose count stays 0 names an operator the code does not use: a mismatch.
"""

from __future__ import annotations

import sys

import torch

from cuda_agent.synth.naming import patch_targets
from cuda_agent.synth.program import build, load_program, make_inputs

_MODULE_PLUMBING = ("torch/nn/modules/module.py",)


def count_label_calls(code: str, labels: list[str], device: str) -> dict[str, int]:
    """How often the program's own code calls each label's operator in one forward pass."""
    first = load_program(code, "verify")  # brings the program's imports into sys.modules
    counts = {label: 0 for label in labels}
    patches: list[tuple[object, str, object, bool]] = []
    try:
        for label in labels:
            for owner, attr in _targets(label):
                own = attr in vars(owner)
                original = vars(owner)[attr] if own else getattr(owner, attr)
                is_forward = isinstance(owner, type) and attr == "forward"
                patches.append((owner, attr, original, own))
                setattr(owner, attr, _wrap(original, label, counts, first.filename, is_forward))
        loaded = load_program(code, "verify")
        model = build(loaded, device)
        inputs = make_inputs(loaded, device, seed=3)
        with torch.no_grad():
            model(*inputs)
    finally:
        for owner, attr, original, own in reversed(patches):
            if own:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)
    return counts


def _targets(label: str) -> list[tuple[object, str]]:
    obj = resolve_label(label)
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        return [(obj, "forward")]
    if obj is not None and label.startswith("transformers."):
        return [(sys.modules[obj.__module__], obj.__name__)]
    return patch_targets(label)


def resolve_label(label: str):
    """The class or function a label names, looked up among the modules already imported (the
    program's own imports brought them in); None when none has it."""
    prefix, _, name = label.rpartition(".")
    if prefix == "torch.nn":
        return getattr(torch.nn, name, None)
    if prefix.startswith("transformers."):
        family = prefix.split(".", 1)[1]
        for module_name, module in sorted(sys.modules.items()):
            if module_name == prefix or module_name.startswith(f"transformers.models.{family}."):
                found = vars(module).get(name)
                if found is not None:
                    return found
    return None


def _wrap(original, label: str, counts: dict[str, int], filename: str, is_forward: bool):
    def counted(*args, **kwargs):
        frame = sys._getframe(1)
        if is_forward:
            while frame is not None and frame.f_code.co_filename.endswith(_MODULE_PLUMBING):
                frame = frame.f_back
        if frame is not None and frame.f_code.co_filename == filename:
            counts[label] += 1
        return original(*args, **kwargs)

    return counted
