"""Compose 1 to 5 catalog operators into one program whose shapes agree, at realistic sizes.

Candidate `index` of a run with `seed` draws everything from `Random(f"{seed}:{index}")`, so a
run is reproducible and candidates are independent of each other and of the order they run in.
Each step's arguments are resolved against the shape the previous step really produced, found by
running the partial program on meta tensors; then the batch size is scaled so the cost model puts
the eager runtime inside the profile's target. Runs in isolated children (it executes programs).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.synth.catalog.model import Catalog, OpEntry, Outcome, Plan
from cuda_agent.synth.catalog.probe import step_for
from cuda_agent.synth.catalog.rules import Ctx, TensorArg
from cuda_agent.synth.codegen import ProgramSpec, Step, render
from cuda_agent.synth.profiles import Profile, estimate, profile_for
from cuda_agent.synth.program import build, load_program, make_inputs, tensors_of

OP_COUNT_WEIGHTS = {1: 0.08, 2: 0.2, 3: 0.26, 4: 0.25, 5: 0.21}
CATEGORY_WEIGHTS = {"layer": 3.0, "transformers": 2.0, "elementwise": 2.0, "binary": 1.5,
                    "reduction": 1.5, "layout": 0.5, "index": 0.3, "other": 0.7}  # fmt: skip
FAMILY_RANK = {"matrix": 2, "sequence": 3, "signal": 3, "image": 4, "heads": 4, "volume": 5}
TRIES_PER_STEP = 25
BASE_BATCH = 4


@dataclass(frozen=True)
class Choice:
    entry: str
    plan: int
    seed: int


class ComposeError(Exception):
    pass


def load_composer(catalog_path: str, device: str) -> Composer:
    catalog = Catalog.model_validate_json(Path(catalog_path).read_text())
    return Composer(catalog, profile_for(device))


def compose_record(composer: Composer, seed: int, index: int) -> dict:
    """Candidate `index` as a journal record: its program, or why there is none."""
    try:
        return {"id": index, "ok": True, **composer.compose(seed, index)}
    except ComposeError as err:
        return {"id": index, "ok": False, "reason": "no valid chain", "detail": str(err)}
    except Exception as err:
        detail = f"{type(err).__name__}: {err}".splitlines()[0][:300]
        return {"id": index, "ok": False, "reason": "compose error", "detail": detail}


class Composer:
    def __init__(self, catalog: Catalog, profile: Profile):
        self.entries = catalog.by_name()
        self.profile = profile
        self._outputs: dict[tuple[str, ...], object] = {}  # a step chain's meta output (or None)
        self.by_category: dict[str, list[OpEntry]] = {}
        for e in catalog.entries:
            self.by_category.setdefault(e.category, []).append(e)

    def compose(self, seed: int, index: int) -> dict:
        rng = random.Random(f"{seed}:{index}")
        self._outputs.clear()
        n_ops = rng.choices(list(OP_COUNT_WEIGHTS), weights=list(OP_COUNT_WEIGHTS.values()))[0]
        family = rng.choice(sorted(FAMILY_RANK))
        dims = self.profile.family_shape(family, rng)
        choices: list[Choice] = []
        outcome: Outcome | None = None
        for position in range(n_ops):
            last = position == n_ops - 1
            for _ in range(TRIES_PER_STEP):
                rank = len(dims) + 1 if outcome is None else outcome.rank
                entry = self._sample(rng, rank, last)
                if entry is None:
                    break
                plan_index = rng.randrange(len(entry.plans[rank]))
                plan = entry.plans[rank][plan_index]
                if not _domain_ok(plan, outcome):
                    continue
                trial = [*choices, Choice(entry.name, plan_index, rng.randrange(1 << 30))]
                try:
                    _, out = self._realize(trial, (BASE_BATCH, *dims))
                except Exception:
                    continue
                if out is None:
                    continue
                choices, outcome = trial, entry.outcomes[rank].model_copy(update={"rank": out})
                break
            if outcome is not None and (outcome.integer or outcome.rank == 0):
                break
        if not choices:
            raise ComposeError(f"no operator fits a {family} input of shape {dims}")
        spec, est_ms, batch = self._scale(rng, choices, dims)
        code = render(spec)
        return {
            "code": code,
            "intended": [s.label for s in spec.steps],
            "n_ops": len(spec.steps),
            "family": family,
            "primary_shape": list(spec.primary.shape),
            "est_ms": round(est_ms, 4),
        }

    def _sample(self, rng, rank: int, last: bool) -> OpEntry | None:
        pools = {}
        for category, entries in self.by_category.items():
            fits = [e for e in entries if rank in e.plans and (last or _continues(e, rank))]
            if fits:
                pools[category] = fits
        if not pools:
            return None
        names = sorted(pools)
        category = rng.choices(names, weights=[CATEGORY_WEIGHTS.get(c, 1.0) for c in names])[0]
        return rng.choice(pools[category])

    def _realize(self, choices: list[Choice], primary_shape) -> tuple[ProgramSpec, int | None]:
        """Resolve the steps in order against the shapes they really get (meta runs).

        Each step runs alone on the meta tensor the step before it gave, which is what it gets
        inside the whole chain (the rendered forward is one `x = ...` line per step), so a chain
        of n steps costs n step runs, and a prefix already run for an earlier trial costs none.
        """
        domain = self.entries[choices[0].entry].plans[len(primary_shape)][choices[0].plan].domain
        primary = TensorArg(tuple(primary_shape), "input", domain)
        steps: list[Step] = []
        shape = tuple(primary_shape)
        key: tuple[str, ...] = ()
        x = None
        for choice in choices:
            entry = self.entries[choice.entry]
            plan = entry.plans[len(shape)][choice.plan]
            ctx = Ctx(shape, random.Random(choice.seed), self.profile.name, entry.extra)
            steps.append(step_for(entry, plan, ctx))
            alone = ProgramSpec(primary if x is None else TensorArg(shape, "input"), (steps[-1],))
            key = (*key, render(alone))
            if key not in self._outputs:
                self._outputs[key] = _step_output(key[-1], x)
            x = self._outputs[key]
            if x is None:
                return ProgramSpec(primary, tuple(steps)), None
            shape = tuple(x.shape)
        return ProgramSpec(primary, tuple(steps)), len(shape)

    def _scale(self, rng, choices: list[Choice], dims) -> tuple[ProgramSpec, float, int]:
        """Pick the batch size that puts the estimated runtime at a log-uniform target."""
        lo, hi = self.profile.target_ms
        target = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        batch, best = BASE_BATCH, None
        for _ in range(3):
            spec, out = self._realize(choices, (batch, *dims))
            if out is None:
                break
            loaded = load_program(render(spec), "compose")
            cost = estimate(build(loaded, "meta"), make_inputs(loaded, "meta", 0), self.profile)
            if cost.peak_bytes <= self.profile.memory_bytes:
                best = (spec, cost.ms, batch)
            ratio = target / max(cost.ms, 1e-6)
            fit = self.profile.memory_bytes / max(cost.peak_bytes, 1)
            new = int(max(1, min(self.profile.max_batch, batch * min(ratio, fit))))
            if new == batch:
                break
            batch = new
        if best is None:
            raise ComposeError(f"no batch size fits {self.profile.memory_bytes >> 20} MiB")
        if best[1] < self.profile.window_ms[0] / 2:  # would only be timed to be rejected
            raise ComposeError(f"estimated {best[1]:.3f} ms is far below the runtime window")
        return best


def _step_output(code: str, x):
    """The meta output of a one-step program, fed `x` (the step before's output) when given;
    None when it gives no single non-empty tensor."""
    loaded = load_program(code, "compose")
    inputs = make_inputs(loaded, "meta", 0)
    if x is not None:
        inputs[0] = x
    out = tensors_of(build(loaded, "meta")(*inputs))
    return out[0] if len(out) == 1 and out[0].numel() > 0 else None


def _continues(entry: OpEntry, rank: int) -> bool:
    """An operator in the middle of a chain must give a float tensor with dimensions."""
    out = entry.outcomes.get(rank)
    return out is not None and not out.integer and out.rank > 0


def _domain_ok(plan: Plan, prev: Outcome | None) -> bool:
    if prev is None or plan.domain == "normal":
        return True
    return prev.unit if plan.domain == "unit" else prev.positive
