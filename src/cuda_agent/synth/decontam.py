"""Decontamination against KernelBench: operator-signature matches and normalized-AST similarity.

The signature is the sequence of aten ops a program runs (normalized, views and data movement
dropped) with the rank of each op's first tensor argument: shape-free, so it compares programs of
any size, and aten-level, so `F.relu(x)`, `torch.relu(x)` and `nn.ReLU()(x)` read the same. The
reference programs are traced in isolated children, cached on disk by content hash.

They are traced at small sizes on CPU (their module-level sizes lowered), on meta tensors when
that breaks them, and as written as a last resort; candidates are traced on their own device.
The normalization in `trace.aten_name` makes device-specific kernels (cudnn_batch_norm,
_scaled_dot_product_flash_attention, ...) read the same.
"""

from __future__ import annotations

import ast
import json
import math
import signal
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from cuda_agent.task import Task

CHUNK = 25  # programs per tracing child, at most


def ast_tokens(code: str) -> list[str]:
    """A preorder walk of the AST: node types, API names kept, variables and constants erased."""
    tree = ast.parse(code)
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # docstrings and bare constants
        out.append(type(node).__name__)
        if isinstance(node, ast.Attribute):
            out.append(node.attr)
        elif isinstance(node, ast.Name):
            out.append(node.id if node.id in ("torch", "nn", "F", "Model", "super") else "v")
        elif isinstance(node, ast.Constant):
            out.append(type(node.value).__name__)
        elif isinstance(node, ast.FunctionDef):
            out.append(node.name if node.name.startswith(("get_", "__", "forward")) else "f")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def similarity(a: list[str], b: list[str], threshold: float = 0.0) -> float:
    """SequenceMatcher ratio; 0.0 for pairs whose cheap upper bounds cannot exceed `threshold`."""
    m = SequenceMatcher(None, a, b, autojunk=False)
    if m.real_quick_ratio() <= threshold or m.quick_ratio() <= threshold:
        return 0.0
    return m.ratio()


@dataclass(frozen=True)
class Reference:
    """The contamination reference: each problem's name, signature and AST tokens."""

    names: tuple[str, ...]
    signatures: dict[tuple, str]  # signature -> first problem with it
    tokens: tuple[list[str], ...]
    untraced: tuple[str, ...]  # problems whose signature could not be traced

    def check(self, aten: list, code: str, threshold: float) -> dict:
        sig = tuple(tuple(a) for a in aten)
        if sig in self.signatures:
            return {"ok": False, "reason": "kernelbench signature",
                    "detail": self.signatures[sig]}  # fmt: skip
        mine = ast_tokens(code)
        best, best_name = 0.0, None
        for name, theirs in zip(self.names, self.tokens, strict=True):
            score = similarity(mine, theirs, max(threshold, best))
            if score > best:
                best, best_name = score, name
        if best > threshold:
            return {"ok": False, "reason": "kernelbench ast", "detail": best_name,
                    "similarity": round(best, 4)}  # fmt: skip
        return {"ok": True, "reason": None}


def cache_file(cache_dir: Path) -> Path:
    """Where traced reference signatures are kept (per torch version: aten names may change)."""
    import torch

    return Path(cache_dir) / f"kernelbench-signatures-torch{torch.__version__}.jsonl"


def build_reference(tasks: list[Task], cache_file: Path, trace: Callable,
                    parts: int = 1) -> Reference:  # fmt: skip
    """Signatures of `tasks`, traced where the cache lacks them: `trace(chunks)` takes tuples of
    (hash, code) items and yields a list of records per chunk, each appended as it comes. The
    missing ones are dealt into about `parts` chunks (for that many workers) of 4 to CHUNK, in
    turn, so that neighbours (VGG16 and VGG19, the slowest) land in different chunks."""
    cached = _read_cache(cache_file)
    missing = list(dict.fromkeys((t.hash, t.code) for t in tasks if t.hash not in cached))
    size = max(4, min(CHUNK, math.ceil(len(missing) / max(1, parts))))
    count = math.ceil(len(missing) / size)
    chunks = [tuple(missing[k::count]) for k in range(count)]
    if chunks:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        for records in trace(chunks):
            with cache_file.open("a") as fh:
                for rec in records:
                    fh.write(json.dumps(rec) + "\n")
                    cached[rec["hash"]] = rec
    signatures: dict[tuple, str] = {}
    untraced = []
    for t in tasks:
        aten = cached.get(t.hash, {}).get("aten")
        if aten is None:
            untraced.append(t.name)
        else:
            signatures.setdefault(tuple(tuple(a) for a in aten), t.name)
    return Reference(
        names=tuple(t.name for t in tasks),
        signatures=signatures,
        tokens=tuple(ast_tokens(t.code) for t in tasks),
        untraced=tuple(untraced),
    )


def trace_reference(items: list[tuple[str, str]]) -> list[dict]:
    """aten signatures of reference programs: on meta tensors, else on CPU (isolated child)."""
    import warnings

    import torch

    from cuda_agent.synth.catalog.probe import warm_up
    from cuda_agent.synth.program import build, load_program, make_inputs
    from cuda_agent.synth.trace import trace_forward

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    warm_up()
    out = []
    for key, code in items:
        record = {"hash": key, "aten": None, "device": None, "error": None}
        # CPU with the module-level sizes shrunk (fast, and it runs LSTMs, which are slow on meta,
        # and .item()); meta tensors at the real sizes when shrinking broke the program; then CPU
        for device, source, seconds in (("cpu-small", shrink_sizes(code), 20), ("meta", code, 10),
                                        ("cpu", code, 30)):  # fmt: skip
            old = signal.signal(signal.SIGALRM, _alarm)
            signal.alarm(seconds)
            try:
                loaded = load_program(source, "reference")
                model = build(loaded, device.removesuffix("-small"))
                inputs = make_inputs(loaded, device.removesuffix("-small"), 0)
                traced = trace_forward(model, inputs, loaded.filename, labels=False)
                record.update(aten=[list(a) for a in traced.aten], device=device, error=None)
                break
            except BaseException as err:  # a reference that will not trace, for any reason
                record["error"] = f"{type(err).__name__}: {err}".splitlines()[0][:200]
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, old)
        out.append(record)
    return out


def shrink_sizes(code: str, limit: int = 16) -> str:
    """The program with integer literals above `limit` in module-level assignments lowered to it:
    `batch_size = 4096` becomes 16, and sizes derived from it follow."""
    tree = ast.parse(code)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            for node in ast.walk(stmt):
                if (
                    isinstance(node, ast.Constant)
                    and type(node.value) is int
                    and node.value > limit
                ):
                    node.value = limit
    return ast.unparse(tree)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout("took too long")


def _read_cache(path: Path) -> dict[str, dict]:
    cached: dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a killed run
            cached[rec["hash"]] = rec
    return cached
