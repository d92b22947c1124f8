"""Probe a candidate operator: find the plans that run, on small CPU tensors and on meta tensors.

A plan is kept when its one-operator program (rendered by `codegen`, the renderer of the dataset)
runs, gives a finite float (or index) tensor of sane size, is deterministic, depends on its input,
is not the identity, and gives the same shape on meta tensors (composition infers shapes there).
"""

from __future__ import annotations

import inspect
import signal
from dataclasses import dataclass, field

import torch

from cuda_agent.synth.catalog.model import ArgSpec, Domain, Kind, OpEntry, Outcome, Plan
from cuda_agent.synth.catalog.rules import (
    OPTIONAL_ALWAYS,
    OPTIONAL_DIM,
    OPTIONAL_FALLBACK,
    REQUIRED,
    SELF_ATTENTION,
    Ctx,
    TensorArg,
    options,
    resolve,
)
from cuda_agent.synth.codegen import ProgramSpec, Step, render
from cuda_agent.synth.program import build, load_program, make_inputs, seed_all, tensors_of

PROBE_SHAPES = {1: (24,), 2: (4, 24), 3: (2, 8, 24), 4: (2, 8, 8, 12), 5: (2, 4, 4, 6, 8)}
DOMAINS: tuple[Domain, ...] = ("normal", "positive", "unit")
MAX_PLANS_PER_RANK = 3
MAX_COMBOS = 12
PLAN_SECONDS = 10
NONFINITE = "nonfinite"


@dataclass(frozen=True)
class Param:
    name: str
    required: bool
    keyword_only: bool = False


@dataclass(frozen=True)
class Candidate:
    """Something that might be an operator, with what its signature says it needs."""

    name: str
    kind: Kind
    library: str
    ref: str
    call_params: tuple[Param, ...]
    init_params: tuple[Param, ...] = ()
    primary: str = "input"
    imports: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)
    rules: dict[str, tuple[str, ...]] = field(default_factory=dict)  # per-candidate rule choices
    preference: int = 0  # among operators that compute the same thing, the lowest is kept
    ranks: tuple[int, ...] = (1, 2, 3, 4, 5)


def params_of(signature: inspect.Signature, skip: int) -> tuple[Param, ...]:
    out = []
    for p in list(signature.parameters.values())[skip:]:
        if p.kind is p.VAR_KEYWORD or p.name in ("out", "_stacklevel", "device", "dtype"):
            continue
        if p.kind is p.VAR_POSITIONAL and p.name not in REQUIRED:
            continue
        required = p.default is inspect.Parameter.empty
        out.append(Param(p.name, required, p.kind is p.KEYWORD_ONLY))
    return tuple(out)


@dataclass
class ProbeResult:
    plans: dict[int, tuple[Plan, ...]]
    outcomes: dict[int, Outcome]
    fingerprint: tuple
    category: str


def warm_up() -> None:
    """Pay the one-time costs (meta registrations, kernels' first calls) before timing probes."""
    step = Step(kind="function", ref="torch.tanh", label="torch.tanh")
    loaded = load_program(render(ProgramSpec(TensorArg((2, 3), "input"), (step,))), "probe")
    for device in ("cpu", "meta"):
        build(loaded, device)(*make_inputs(loaded, device, seed=0))


def probe(cand: Candidate) -> ProbeResult | None:
    """The plans per rank that pass; None when no rank works."""
    plans: dict[int, tuple[Plan, ...]] = {}
    outcomes: dict[int, Outcome] = {}
    prints = []
    for rank in cand.ranks:
        shape = PROBE_SHAPES[rank]
        found: list[tuple[Plan, Outcome, tuple]] = []
        for fallback in (False, True):
            for plan in _plans(cand, Ctx(shape, extra=cand.extra), fallback):
                for domain in DOMAINS:
                    result = _run_guarded(cand, plan.model_copy(update={"domain": domain}), shape)
                    if result != NONFINITE:  # another input domain only helps log, sqrt, ...
                        break
                if result is not None and result != NONFINITE:
                    found.append(result)
                if len(found) >= MAX_PLANS_PER_RANK:
                    break
            if found or not any(
                p.name in OPTIONAL_FALLBACK for p in (*cand.init_params, *cand.call_params)
            ):
                break
        if found:
            distinct = {}
            for plan, outcome, fp in found:
                distinct.setdefault(fp[0], (plan, outcome, fp))
            kept = list(distinct.values())
            plans[rank] = tuple(p for p, _, _ in kept)
            outcomes[rank] = kept[0][1]
            prints.append((rank, kept[0][2][:-1], kept[0][2][-1]))
    if not plans:
        return None
    return ProbeResult(plans, outcomes, tuple(prints), _category(cand, plans, prints))


def _category(cand: Candidate, plans: dict[int, tuple[Plan, ...]], prints) -> str:
    """elementwise / binary / reduction / layer / layout / index, from what the probe saw."""
    if cand.library == "transformers" and "act" not in cand.extra:
        return "transformers"  # norms, MLPs, attention, rotary embeddings (not activations)
    rank, (out_shape, dtype, *_rest), has_params = prints[0][0], prints[0][1], prints[0][2]
    if "int" in dtype:
        return "index"
    rules = {s.rule for p in plans[rank] for s in (*p.init, *p.call)}
    if has_params or rules & {"linear_weight", "conv_weight", "mat2", "channel", "row"}:
        return "layer"
    in_shape = PROBE_SHAPES[rank]
    numel = lambda shape: int(torch.Size(shape).numel())  # noqa: E731
    if tuple(out_shape) == in_shape:
        return "binary" if "like" in rules else "elementwise"
    if numel(out_shape) < numel(in_shape):
        return "reduction"
    if numel(out_shape) == numel(in_shape):
        return "layout"
    return "other"


def _plans(cand: Candidate, ctx: Ctx, fallback: bool) -> list[Plan]:
    slots: list[tuple[str, bool, list[tuple[str, int]]]] = []  # (param, keyword, choices)
    for group, params in (("init", cand.init_params), ("call", cand.call_params)):
        for p in params:
            rules = _rules_for(cand, p, fallback)
            if rules is None:
                if p.required:
                    return []
                continue
            choices = [(r, k) for r in rules for k in range(len(_options(r, ctx)))]
            if not choices:
                if p.required:
                    return []
                continue
            keyword = group == "init" or not p.required or p.keyword_only
            slots.append((f"{group}:{p.name}", keyword, choices))
    combos = [tuple(0 for _ in slots)]
    for i, (_, _, choices) in enumerate(slots):
        for k in range(1, len(choices)):
            combos.append(tuple(k if j == i else 0 for j in range(len(slots))))
    plans = []
    for combo in combos[:MAX_COMBOS]:
        init, call = [], []
        for (slot, keyword, choices), k in zip(slots, combo, strict=True):
            group, name = slot.split(":", 1)
            rule, option = choices[k]
            spec = ArgSpec(param=name, rule=rule, option=option, keyword=keyword)
            (init if group == "init" else call).append(spec)
        plans.append(Plan(init=tuple(init), call=tuple(_positional_first(call))))
    return plans


def _positional_first(specs: list[ArgSpec]) -> list[ArgSpec]:
    return [s for s in specs if not s.keyword] + [s for s in specs if s.keyword]


def _rules_for(cand: Candidate, p: Param, fallback: bool) -> tuple[str, ...] | None:
    if p.name in cand.rules:
        return cand.rules[p.name]
    if cand.primary == "query" and p.name in SELF_ATTENTION:
        return ("self",)
    if p.required:
        return REQUIRED.get(p.name)
    if p.name in OPTIONAL_ALWAYS:
        return (OPTIONAL_ALWAYS[p.name],)
    if p.name in OPTIONAL_DIM and cand.kind != "module":
        return ("dim_optional",)
    if fallback and p.name in OPTIONAL_FALLBACK:
        return (OPTIONAL_FALLBACK[p.name],)
    return None


def _options(rule: str, ctx: Ctx) -> list:
    try:
        return options(rule, ctx)
    except (ArithmeticError, IndexError, ValueError):
        return []


def step_for(cand_or_entry, plan: Plan, ctx: Ctx) -> Step:
    """Resolve a plan's arguments against `ctx` (IndexError if an option does not exist)."""
    init = tuple(
        (s.param if s.keyword else None, resolve(s.rule, s.option, ctx)) for s in plan.init
    )
    call = tuple(
        (s.param if s.keyword else None, resolve(s.rule, s.option, ctx)) for s in plan.call
    )
    call = tuple((k, _with_domain(v, plan.domain)) for k, v in call)
    extra = dict(cand_or_entry.extra)
    if cand_or_entry.kind in ("rope", "attention"):
        extra["seq"] = ctx.shape[2] if cand_or_entry.kind == "rope" else ctx.shape[1]
    return Step(
        kind=cand_or_entry.kind,
        ref=cand_or_entry.ref,
        label=cand_or_entry.name,
        imports=tuple(cand_or_entry.imports),
        init=init,
        call=call,
        select=plan.select,
        extra=tuple(sorted(extra.items())),
    )


def _with_domain(value, domain: Domain):
    if isinstance(value, TensorArg) and value.role == "input" and domain != "normal":
        return TensorArg(value.shape, value.role, domain)
    return value


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def _run_guarded(cand: Candidate, plan: Plan, shape) -> tuple[Plan, Outcome, tuple] | None:
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(PLAN_SECONDS)
    try:
        return _run(cand, plan, shape)
    except (_Timeout, Exception):
        return None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _run(cand: Candidate, plan: Plan, shape) -> tuple[Plan, Outcome, tuple] | None:
    primary = TensorArg(shape, "input", plan.domain)
    step = step_for(cand, plan, Ctx(shape, extra=cand.extra))
    loaded = load_program(render(ProgramSpec(primary, (step,))), "probe")
    model = build(loaded, "cpu")
    inputs = make_inputs(loaded, "cpu", seed=1)
    with torch.no_grad():
        seed_all(11)
        raw = model(*inputs)
        select = 0 if isinstance(raw, tuple | list) else None
        out = _pick(raw, select)
        seed_all(12)
        again = _pick(model(*inputs), select)
        other_inputs = make_inputs(loaded, "cpu", seed=2)
        other = _pick(model(*other_inputs), select)
    if out is None or again is None or other is None:
        return None
    if out.dtype.is_floating_point and not (
        torch.isfinite(out).all() and torch.isfinite(other).all()
    ):
        return NONFINITE
    if not _sane(out, inputs[0]):
        return None
    if not torch.equal(out, again) or torch.equal(out, other):
        return None
    if out.shape == inputs[0].shape and torch.equal(out, inputs[0]):
        return None  # the identity
    plan = plan.model_copy(update={"select": select})
    step = step_for(cand, plan, Ctx(shape, extra=cand.extra))
    final = load_program(render(ProgramSpec(primary, (step,))), "probe")
    meta_model = build(final, "meta")
    meta_out = meta_model(*make_inputs(final, "meta", seed=1))
    if not isinstance(meta_out, torch.Tensor) or meta_out.shape != out.shape:
        return None
    if meta_out.dtype != out.dtype:
        return None
    integer = not out.dtype.is_floating_point
    if integer and not (0 <= int(out.min()) and int(out.max()) <= max(shape)):
        return None  # only index results (argmax, argsort), not hashes
    if integer and out.shape == inputs[0].shape and torch.equal(out, inputs[0].to(out.dtype)):
        return None  # a cast
    both = torch.cat([out.flatten(), other.flatten()]).double()
    outcome = Outcome(
        rank=out.dim(),
        integer=integer,
        nonneg=bool((both >= 0).all()),
        positive=bool((both > 0).all()),
        unit=bool(((both >= 0) & (both <= 1)).all()),
    )
    has_params = any(True for _ in model.parameters())
    fp = (tuple(out.shape), str(out.dtype), round(float(both.sum()), 3),
          round(float(both.abs().sum()), 3), has_params)  # fmt: skip
    return plan, outcome, fp


def _pick(raw, select):
    if select is not None:
        if not raw or not isinstance(raw[0], torch.Tensor):
            return None
        raw = raw[0]
    return raw if isinstance(raw, torch.Tensor) and len(tensors_of(raw)) == 1 else None


def _sane(out: torch.Tensor, primary: torch.Tensor) -> bool:
    if out.device.type != "cpu" or out.is_complex() or out.dtype == torch.bool:
        return False
    if out.dtype.is_floating_point and out.dtype != torch.float32:
        return False
    return 0 < out.numel() <= 16 * primary.numel() + 64


def entry_from(cand: Candidate, result: ProbeResult, aliases: tuple[str, ...] = ()) -> OpEntry:
    return OpEntry(
        name=cand.name,
        kind=cand.kind,
        library=cand.library,
        ref=cand.ref,
        imports=cand.imports,
        category=result.category,
        aliases=aliases,
        plans=result.plans,
        outcomes=result.outcomes,
        extra=cand.extra,
    )
