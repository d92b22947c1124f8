"""In the candidate's process: torch.utils.cpp_extension's builders replaced before the submission
is imported, so that its extensions are built by the parent and never by the submission.

A call to `load_inline` or `load` becomes an ExtensionCall (its arguments, normalised; for `load`
the text of the files it names and of the headers beside them, read here where the submission
wrote them) sent to the parent; the parent guards and builds the sources and answers with the
module's path, which is imported and returned where torch would have returned it. Calls with the
same arguments are answered from this process's own memo, so a submission that calls load_inline
in every forward asks once.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from cuda_agent.sandbox.process.messages import (
    BuildAnswer,
    BuildRequest,
    ExtensionBuilt,
    ExtensionCall,
)

_HEADER_SUFFIXES = (".h", ".cuh", ".hpp", ".inl")
_CUDA_SUFFIXES = (".cu", ".cuh")
_MAX_FILE_BYTES = 512 * 1024


class ExtensionNotLinked(RuntimeError):
    """An extension compiled on a machine without torch's CUDA libraries was called."""


class UnlinkedExtension(ModuleType):
    """Where no GPU libraries exist to link against, what load_inline returns once the parent
    compiled the sources: the import and the constructor go on, and calling a function of the
    extension stops the run with ExtensionNotLinked."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)

        def not_linked(*args, **kwargs):
            raise ExtensionNotLinked(
                f"{self.__name__}.{name}() called: the extension compiled, but it cannot be "
                "linked and run without a GPU"
            )

        return not_linked


def install(ask: Callable[[BuildRequest], BuildAnswer]) -> None:
    """Replace load_inline and load (in torch.utils.cpp_extension, whichever way the submission
    imports them); `ask` sends a call to the parent and returns its answer."""
    from torch.utils import cpp_extension

    memo: dict[str, ModuleType] = {}

    def answer(call: ExtensionCall) -> ModuleType:
        key = hashlib.sha256(repr(call).encode()).hexdigest()
        if key not in memo:
            built = ask(call)
            if not isinstance(built, ExtensionBuilt):
                raise RuntimeError(f"the harness answered an extension call with {type(built)}")
            memo[key] = _import(built)
        return memo[key]

    inline_sig = inspect.signature(cpp_extension.load_inline)
    load_sig = inspect.signature(cpp_extension.load)

    def load_inline(*args, **kwargs):
        a = _bound(inline_sig, args, kwargs)
        _refuse_unsupported(a, "load_inline")
        return answer(inline_call(a))

    def load(*args, **kwargs):
        a = _bound(load_sig, args, kwargs)
        _refuse_unsupported(a, "load")
        paths = _strings(a["sources"])
        files = _read_files(paths)
        names = tuple(Path(p).name for p in paths)
        return answer(
            ExtensionCall(
                api="load",
                name=str(a["name"]),
                cpp_sources=tuple(n for n in names if not n.endswith(_CUDA_SUFFIXES)),
                cuda_sources=tuple(n for n in names if n.endswith(_CUDA_SUFFIXES)),
                functions=(),
                files=files,
                **_options(a),
            )
        )

    # what the submission (or anything reading the signature later) sees is torch's own
    load_inline.__doc__, load_inline.__signature__ = cpp_extension.load_inline.__doc__, inline_sig
    load.__doc__, load.__signature__ = cpp_extension.load.__doc__, load_sig
    cpp_extension.load_inline = load_inline
    cpp_extension.load = load


def inline_call(a: dict) -> ExtensionCall:
    """The ExtensionCall of load_inline's bound arguments (`a`: name -> value, defaults
    applied), normalised as the parent builds it."""
    return ExtensionCall(
        api="load_inline",
        name=str(a["name"]),
        cpp_sources=_strings(a["cpp_sources"]),
        cuda_sources=_strings(a.get("cuda_sources")),
        functions=_functions(a.get("functions")),
        files=(),
        **_options(a),
    )


def _import(built: ExtensionBuilt) -> ModuleType:
    if built.so_path is None:
        return UnlinkedExtension(built.module_name)
    spec = importlib.util.spec_from_file_location(built.module_name, built.so_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{built.so_path}: not an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[built.module_name] = module
    return module


def _bound(sig: inspect.Signature, args: tuple, kwargs: dict) -> dict:
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _refuse_unsupported(a: dict, api: str) -> None:
    if not a.get("is_python_module", True) or a.get("is_standalone"):
        raise ValueError(
            f"{api}(is_python_module=False or is_standalone=True) is not supported: the "
            "extension must be a Python module whose functions ModelNew calls"
        )
    if a.get("sycl_sources"):
        raise ValueError(f"{api}(sycl_sources=...) is not supported: CUDA only")


def _options(a: dict) -> dict:
    return {
        "extra_cflags": _strings(a.get("extra_cflags")),
        "extra_cuda_cflags": _strings(a.get("extra_cuda_cflags")),
        "extra_ldflags": _strings(a.get("extra_ldflags")),
        "extra_include_paths": _strings(a.get("extra_include_paths")),
        "with_cuda": None if a.get("with_cuda") is None else bool(a["with_cuda"]),
    }


def _strings(value) -> tuple[str, ...]:
    """A string or a sequence of them (as torch takes them), as a tuple of str."""
    if value is None:
        return ()
    if isinstance(value, str | Path):
        return (str(value),)
    return tuple(str(v) for v in value)


def _functions(value) -> tuple[tuple[str, str], ...]:
    """load_inline's `functions`: a name, a list of names, or a dict name -> docstring."""
    if value is None:
        return ()
    if isinstance(value, str):
        return ((value, value),)
    if isinstance(value, dict):
        return tuple((str(k), str(v)) for k, v in value.items())
    return tuple((str(v), str(v)) for v in value)


def _read_files(names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The text of each source `load` names and of the headers in their folders, keyed by name
    as the parent lays them out (the source's name, headers beside it)."""
    files: dict[str, str] = {}
    for name in names:
        path = Path(name)
        files[path.name] = _read(path)
        for header in sorted(path.parent.iterdir()):
            if header.suffix in _HEADER_SUFFIXES and header.is_file():
                files.setdefault(header.name, _read(header))
    return tuple(files.items())


def _read(path: Path) -> str:
    if path.stat().st_size > _MAX_FILE_BYTES:
        raise ValueError(f"{path}: over {_MAX_FILE_BYTES // 1024} KiB")
    return path.read_text()
