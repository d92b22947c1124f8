"""Candidate operators from transformers: activations, norms, rotary embeddings, MLP and attention
blocks, found by scanning the installed package's modeling files, not listed by hand.

Model families copy each other's blocks ("Copied from ..."), so classes are grouped by their
normalized source and one family speaks for each distinct implementation. Blocks that need a
config get one built in code from the family's config class with small sizes: nothing is
downloaded. Without transformers this yields nothing and says why.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import torch.nn as nn

from cuda_agent.synth.catalog.probe import Candidate, params_of

MISSING = (
    "transformers is not installed: the catalog has torch operators only "
    "(install it with: pip install 'cuda-agent[synth]')"
)
# Families tried first, so that a block shared by many families is named after a familiar one.
PREFERRED = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "olmo", "olmo2",
             "cohere", "granite", "starcoder2", "stablelm", "t5", "gpt_neox")  # fmt: skip
SUFFIXES = ("RMSNorm", "LayerNorm", "MLP", "Attention", "RotaryEmbedding")
CAPS = {"MLP": 12, "Attention": 12, "RotaryEmbedding": 16, "RMSNorm": 40, "LayerNorm": 40}
_CLASS = re.compile(r"^class (\w+?)(" + "|".join(SUFFIXES) + r")\((.*?)\):", re.M)
_APPLY = re.compile(r"^def apply_rotary_pos_emb\(", re.M)


def transformers_candidates() -> tuple[list[Candidate], list[str]]:
    try:
        import transformers
    except ImportError:
        return [], [MISSING]
    root = Path(transformers.__file__).parent
    cands = _activations()
    blocks = _scan(root / "models")
    taken = {suffix: 0 for suffix in SUFFIXES}
    for family, prefix, suffix, module_name in blocks:
        if taken[suffix] >= CAPS[suffix]:
            continue
        cand = _block(family, prefix, suffix, module_name)
        if cand is not None:
            cands.append(cand)
            taken[suffix] += 1
    notes = [f"transformers {transformers.__version__}: scanned {len(blocks)} distinct blocks"]
    return cands, notes


def _activations() -> list[Candidate]:
    from transformers import activations

    out, seen = [], set()
    for key, value in sorted(activations.ACT2CLS.items()):
        cls, kwargs = value if isinstance(value, tuple) else (value, {})
        if cls.__module__ != activations.__name__ or (cls, str(kwargs)) in seen:
            continue
        seen.add((cls, str(kwargs)))
        init = params_of(inspect.signature(cls.__init__), 1)
        fixed = {k: f"={v!r}" for k, v in kwargs.items()}
        name = cls.__name__ if not kwargs else f"{cls.__name__}"
        out.append(
            Candidate(
                name=f"transformers.activations.{name}",
                kind="module",
                library="transformers",
                ref=cls.__name__,
                init_params=tuple(p for p in init if p.required or p.name in fixed),
                call_params=(),
                imports=(f"from transformers.activations import {cls.__name__}",),
                rules={k: (v,) for k, v in fixed.items()},
                extra={"act": key},
            )
        )
    return out


def _scan(models: Path) -> list[tuple[str, str, str, str]]:
    """(family, class prefix, suffix, module) per distinct block, preferred families first."""
    files = sorted(models.glob("*/modeling_*.py"), key=lambda f: _order(f.parent.name))
    seen: set[tuple[str, str]] = set()
    out = []
    for f in files:
        text = f.read_text()
        lines = text.splitlines()
        has_apply = bool(_APPLY.search(text))
        module_name = f"transformers.models.{f.parent.name}.{f.stem}"
        for m in _CLASS.finditer(text):
            prefix, suffix = m.group(1), m.group(2)
            if suffix in ("RotaryEmbedding",) and not has_apply:
                continue
            src = _class_source(lines, text.count("\n", 0, m.start()))
            if suffix == "RotaryEmbedding":
                src += "\n" + _apply_source(text)
            key = (suffix, _normalized(src.replace(prefix, "X")))
            if key[1] and key not in seen:
                seen.add(key)
                out.append((f.parent.name, prefix, suffix, module_name))
    return out


def _order(family: str) -> tuple[int, str]:
    return (PREFERRED.index(family) if family in PREFERRED else len(PREFERRED), family)


def _class_source(lines: list[str], start: int) -> str:
    end = start + 1
    while end < len(lines) and (not lines[end] or lines[end][0] in " \t#)"):
        end += 1
    return "\n".join(lines[start:end])


def _apply_source(text: str) -> str:
    m = _APPLY.search(text)
    lines = text.splitlines()
    return _class_source(lines, text.count("\n", 0, m.start())) if m else ""


def _normalized(src: str) -> str:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            node.decorator_list = []
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False)


def _block(family: str, prefix: str, suffix: str, module_name: str) -> Candidate | None:
    try:
        module = importlib.import_module(module_name)
    except Exception:  # a family whose optional dependencies are missing
        return None
    cls = getattr(module, prefix + suffix, None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        return None
    label = f"transformers.{family}.{cls.__name__}"
    imports = [f"from {module_name} import {cls.__name__}"]
    rank = _order(family)[0]  # among blocks that compute the same, a familiar family names it
    try:
        init = params_of(inspect.signature(_undecorated(cls.__init__, "__init__")), 1)
        forward = params_of(inspect.signature(_undecorated(cls.forward, "forward")), 1)
    except (TypeError, ValueError):
        return None
    if suffix in ("RMSNorm", "LayerNorm"):
        if not init or init[0].name == "config" or not forward:
            return None
        first = init[0].name
        return Candidate(
            name=label, kind="module", library="transformers", ref=cls.__name__,
            init_params=tuple(p for p in init if p.required), call_params=forward[1:],
            primary=forward[0].name, imports=tuple(imports), rules={first: ("last",)},
            ranks=(2, 3, 4), preference=rank,
        )  # fmt: skip
    config = _config_class(module, prefix)
    if config is None or not init or init[0].name != "config":
        return None
    extra = _config_extra(config)
    imports.append(f"from {config.__module__} import {config.__name__}")
    if suffix == "MLP":
        if any(p.required for p in init[1:]) or any(p.required for p in forward[1:]):
            return None
        return Candidate(
            name=label, kind="module", library="transformers", ref=cls.__name__,
            init_params=init[:1], call_params=(), primary=forward[0].name,
            imports=tuple(imports), extra=extra, ranks=(3,), preference=rank,
        )  # fmt: skip
    if suffix == "RotaryEmbedding":
        imports.append(f"from {module_name} import apply_rotary_pos_emb")
        extra = {**extra, "apply": "apply_rotary_pos_emb", "layout": "heads"}
        return Candidate(
            name=label, kind="rope", library="transformers", ref=cls.__name__,
            init_params=init[:1], call_params=(), imports=tuple(imports), extra=extra,
            ranks=(4,), preference=rank,
        )  # fmt: skip
    rope = getattr(module, prefix + "RotaryEmbedding", None)
    names = {p.name for p in forward}
    if rope is None or "position_embeddings" not in names:
        return None
    imports.append(f"from {module_name} import {rope.__name__}")
    return Candidate(
        name=label, kind="attention", library="transformers", ref=cls.__name__,
        init_params=init[:1], call_params=(), imports=tuple(imports),
        extra={**extra, "rope": rope.__name__}, ranks=(3,), preference=rank,
    )  # fmt: skip


def _undecorated(fn, name: str):
    """The method a decorator wrapped: via __wrapped__, or the closure's function of that name."""
    fn = inspect.unwrap(fn)
    if fn.__name__ == name:
        return fn
    for cell in getattr(fn, "__closure__", None) or ():
        inner = cell.cell_contents
        if inspect.isfunction(inner) and inner.__name__ == name:
            return inner
    return fn


def _config_class(module, prefix: str):
    from transformers import PretrainedConfig

    for name in (f"{prefix}Config", f"{prefix}TextConfig"):
        cls = getattr(module, name, None)
        if isinstance(cls, type) and issubclass(cls, PretrainedConfig):
            return cls
    return None


def _config_extra(config) -> dict[str, str]:
    try:
        accepted = set(inspect.signature(config.__init__).parameters)
    except (TypeError, ValueError):
        accepted = set()
    extra = {"config_module": config.__module__, "config_cls": config.__name__}
    for key in ("d_model", "d_kv", "num_heads", "d_ff"):
        if key in accepted:
            extra[f"has_{key}"] = "1"
    return extra
