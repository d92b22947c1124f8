"""In the candidate's process: the single-file submission imported, its hooks already in place.

The file is imported as a module of its own (never executed in a namespace the harness shares,
and never beside the reference, which this process does not have) after torch.utils.
cpp_extension's builders are replaced (hook.py).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable

from cuda_agent.sandbox.process.messages import ExtensionBuilt, ExtensionCall
from cuda_agent.sandbox.single_file.hook import install


class EntryPointMissing(Exception):
    """The module defines no class of the entry point's name."""


def import_entry(entry_path: str, entry_point: str, ask: Callable[[ExtensionCall], ExtensionBuilt]):
    """The submission's entry point class, the module imported with the builders hooked."""
    install(ask)
    spec = importlib.util.spec_from_file_location("model_new", entry_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["model_new"] = module
    spec.loader.exec_module(module)
    cls = getattr(module, entry_point, None)
    if not isinstance(cls, type):
        raise EntryPointMissing(f"the submission defines no class {entry_point}")
    return cls


def asker(conn) -> Callable[[ExtensionCall], ExtensionBuilt]:
    """Send a call over the pipe to the parent and wait for its answer."""

    def ask(call: ExtensionCall) -> ExtensionBuilt:
        conn.send(call)
        answer = conn.recv()
        if not isinstance(answer, ExtensionBuilt):
            raise RuntimeError(f"the harness answered an extension call with {type(answer)}")
        return answer

    return ask
