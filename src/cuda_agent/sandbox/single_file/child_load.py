"""In the candidate's process: the single-file submission imported, its hooks already in place.

The file is imported as a module of its own (never executed in a namespace the harness shares,
and never beside the reference, which this process does not have) after torch.utils.
cpp_extension's builders are replaced (hook.py) and, in a Triton file, Triton's compiler is set to
ask the parent for what needs a process (triton_hook.py).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from cuda_agent.sandbox.process.messages import BuildAnswer, BuildRequest
from cuda_agent.sandbox.single_file.hook import install
from cuda_agent.sandbox.single_file.submission import is_triton


class EntryPointMissing(Exception):
    """The module defines no class of the entry point's name."""


def import_entry(entry_path: str, entry_point: str, ask: Callable[[BuildRequest], BuildAnswer]):
    """The submission's entry point class, the module imported with the builders hooked (and,
    for a Triton file, Triton's process-starting steps handed to the parent)."""
    install(ask)
    if is_triton(Path(entry_path).read_text()):
        from cuda_agent.sandbox.single_file import triton_hook  # imports Triton

        triton_hook.install(ask)
    spec = importlib.util.spec_from_file_location("model_new", entry_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["model_new"] = module
    spec.loader.exec_module(module)
    cls = getattr(module, entry_point, None)
    if not isinstance(cls, type):
        raise EntryPointMissing(f"the submission defines no class {entry_point}")
    return cls


def asker(conn) -> Callable[[BuildRequest], BuildAnswer]:
    """Send a build request over the pipe to the parent and wait for its answer."""

    def ask(call: BuildRequest) -> BuildAnswer:
        conn.send(call)
        answer = conn.recv()
        if not isinstance(answer, BuildAnswer):
            raise RuntimeError(f"the harness answered a build request with {type(answer)}")
        return answer

    return ask
