"""Execution filters: what a generated program must do to become a task. Run in isolated children.

`eager_check` (cheap, every candidate): runs, gives tensors, finite, deterministic, not constant
across inputs, outputs for different inputs distinguishable under the verification tolerance, not
degenerate (distinguishable from zeros), eager runtime inside the window; then the labels: traced,
and verified by counting wrappers (`verify.py`). `compile_check` (slow, only for survivors of the
cheap stages): torch.compile runs and agrees with eager under the tolerance.

Workers sharing one GPU share a reader-writer file lock: running a program holds it shared, timing
holds it exclusively, so a timing never overlaps another worker's GPU work. A timing stops as soon
as its verdict is certain (most of the timed calls outside the window decide the median), and a
program whose single warm call is far outside the window is rejected before it is timed, so a
slow program cannot hold the GPU for long.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from cuda_agent.sandbox import rw_lock
from cuda_agent.synth.program import build, load_program, make_inputs, seed_all, tensors_of


@dataclass(frozen=True)
class FilterConfig:
    device: str = "cpu"
    window_ms: tuple[float, float] = (0.05, 100.0)
    atol: float = 1e-2
    rtol: float = 1e-2
    determinism_tol: float = 1e-5  # same inputs twice: equal up to this (GPU reductions vary)
    warmup: int = 2
    reps: int = 7
    threads: int | None = None  # torch threads of the child
    gpu_lock: str | None = None  # reader-writer lock file of a shared GPU (and `.turnstile`)
    memory_fraction: float | None = None  # of the GPU, per worker
    compile_threads: int | None = 1  # inductor's compile workers per child
    compile_backend: str = "inductor"
    seed: int = 0
    # a call this many times the window's upper bound is too slow without timing it: untimed
    # (other workers may run beside it) and warm with the GPU to itself
    slow_untimed: float = 25.0
    slow_warm: float = 4.0


class Rejection(Exception):
    """A filter said no: `reason` is the short key the report counts, `detail` the specifics."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason, detail)
        self.reason, self.detail = reason, detail


def eager_check(code: str, cfg: FilterConfig) -> dict:
    """The cheap filters and the labels; a dict with `ok`, `stage` and `reason` on rejection.

    The GPU lock is taken shared per call, not for the whole check, so a timing waits for one
    call of another program at most."""
    _setup(cfg)
    lo, hi = cfg.window_ms
    try:
        loaded = load_program(code, "eager")
        with _gpu(cfg, exclusive=False):
            model = build(loaded, cfg.device, cfg.seed)
            first = make_inputs(loaded, cfg.device, cfg.seed + 1)
            second = make_inputs(loaded, cfg.device, cfg.seed + 2)
        outs, untimed = [], []
        for inputs, seed in ((first, 101), (first, 202), (second, 303)):
            with _gpu(cfg, exclusive=False), torch.no_grad():
                out, ms = _run(model, inputs, seed, cfg.device)
            outs.append(out)
            untimed.append(ms)
            # the first call pays one-time set-up (cuBLAS, cuDNN, kernels loaded): twice the bound
            bound = cfg.slow_untimed * hi * (2 if len(untimed) == 1 else 1)
            if min(untimed) > bound:
                raise Rejection("too slow", f"an untimed call took {min(untimed):.0f} ms, more "
                                f"than {bound / hi:g}x the window [{lo}, {hi}] ms")  # fmt: skip
        with _gpu(cfg, exclusive=False):
            _check_outputs(*outs, cfg)
        eager_ms = _time(model, first, cfg, window=cfg.window_ms)
        if not lo <= eager_ms <= hi:
            reason = "too fast" if eager_ms < lo else "too slow"
            raise Rejection(reason, f"eager {eager_ms:.3f} ms outside [{lo}, {hi}] ms")
    except Rejection as rej:
        return {"ok": False, "stage": "eager", "reason": rej.reason, "detail": rej.detail}
    except Exception as err:  # the program itself failed: that is a verdict, not a crash
        return {"ok": False, "stage": "eager", "reason": "error", "detail": _describe(err)}
    record = {
        "eager_ms": eager_ms,
        "input_shapes": [list(t.shape) for t in first if isinstance(t, torch.Tensor)],
        "output_shapes": [list(t.shape) for t in outs[0]],
    }
    return {**record, **_labels(code, loaded, model, first, cfg)}


def _labels(code: str, loaded, model, inputs, cfg: FilterConfig) -> dict:
    from cuda_agent.synth.trace import trace_forward
    from cuda_agent.synth.verify import count_label_calls

    try:
        with _gpu(cfg, exclusive=False):
            traced = trace_forward(model, inputs, loaded.filename)
        labels = list(traced.labels)
        with _gpu(cfg, exclusive=False):
            counts = count_label_calls(code, labels, cfg.device)
    except Exception as err:
        return {"ok": False, "stage": "labels", "reason": "trace failed", "detail": _describe(err)}
    unverified = [label for label, n in counts.items() if n == 0]
    result = {
        "ops": labels,
        "signature": [
            [c.label, [list(s) for s in c.inputs], [list(s) for s in c.outputs]]
            for c in traced.calls
        ],  # fmt: skip
        "aten": [list(a) for a in traced.aten],
        "label_counts": counts,
    }
    if not labels:
        return {**result, "ok": False, "stage": "labels", "reason": "no operators traced"}
    if unverified:
        detail = f"not called by the code: {', '.join(unverified)}"
        return {**result, "ok": False, "stage": "labels", "reason": "label mismatch",
                "detail": detail}  # fmt: skip
    return {**result, "ok": True, "stage": "labels", "reason": None}


def compile_check(code: str, cfg: FilterConfig) -> dict:
    """torch.compile runs, agrees with eager under the tolerance; its runtime and compile time.

    The compiled first call (compilation, seconds of CPU work) runs outside the GPU lock: held
    shared for that long it would keep every timing waiting."""
    _setup(cfg)
    try:
        if cfg.compile_threads is not None:
            import torch._inductor.config as inductor_config

            inductor_config.compile_threads = cfg.compile_threads
        loaded = load_program(code, "compile")
        with _gpu(cfg, exclusive=False), torch.no_grad():
            model = build(loaded, cfg.device, cfg.seed)
            inputs = make_inputs(loaded, cfg.device, cfg.seed + 1)
            expected, _ = _run(model, inputs, 101, cfg.device)
        compiled = torch.compile(model, backend=cfg.compile_backend)
        start = time.perf_counter()
        with torch.no_grad():
            got, _ = _run(compiled, inputs, 101, cfg.device)
        compile_s = time.perf_counter() - start
        with _gpu(cfg, exclusive=False):
            same = len(got) == len(expected) and all(
                g.shape == e.shape and torch.allclose(g.double(), e.double(), cfg.rtol, cfg.atol)
                for g, e in zip(got, expected, strict=True)
            )
        if not same:
            raise Rejection("compile differs", "torch.compile's output differs from eager's")
        compile_ms = _time(compiled, inputs, cfg)
    except Rejection as rej:
        return {"ok": False, "stage": "compile", "reason": rej.reason, "detail": rej.detail}
    except Exception as err:
        return {"ok": False, "stage": "compile", "reason": "compile error",
                "detail": _describe(err)}  # fmt: skip
    return {"ok": True, "stage": "compile", "reason": None, "compile_ms": compile_ms,
            "compile_s": compile_s}  # fmt: skip


def _setup(cfg: FilterConfig) -> None:
    warnings.filterwarnings("ignore")
    # the confined child's environment may lack PATH; inductor runs the C++ compiler by name
    os.environ.setdefault("PATH", os.defpath)
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    if cfg.device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device in this process")
        if cfg.memory_fraction is not None:
            torch.cuda.set_per_process_memory_fraction(cfg.memory_fraction)


def _run(model, inputs, seed: int, device: str) -> tuple[list[torch.Tensor], float]:
    """Outputs as a list of tensors, and the wall time of the call in ms; a fresh RNG seed per
    call exposes stochastic operators."""
    seed_all(seed, device)
    start = time.perf_counter()
    out = tensors_of(model(*inputs))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    ms = (time.perf_counter() - start) * 1e3
    if not out:
        raise Rejection("no tensor output", "forward returned no tensor")
    return [t.detach() for t in out], ms


def _check_outputs(a: list, a2: list, b: list, cfg: FilterConfig) -> None:
    for t in (*a, *b):
        if t.dtype.is_floating_point and not bool(torch.isfinite(t).all()):
            raise Rejection("nonfinite", "output has NaN or Inf")
    tol = cfg.determinism_tol
    if not all(x.shape == y.shape and torch.allclose(x.double(), y.double(), tol, tol)
               for x, y in zip(a, a2, strict=True)):  # fmt: skip
        raise Rejection("nondeterministic", "same inputs gave different outputs")
    if all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b, strict=True)):
        raise Rejection("constant", "different inputs gave identical outputs")
    for out in (a, b):  # (near-zero outputs would also read as indistinguishable: say why)
        if all(_close(x, torch.zeros_like(x), cfg) for x in out):
            raise Rejection("degenerate", "output is indistinguishable from zeros")
    if all(_close(x, y, cfg) for x, y in zip(a, b, strict=True)):
        raise Rejection("indistinguishable", "outputs for different inputs agree within tolerance")


def _close(x: torch.Tensor, y: torch.Tensor, cfg: FilterConfig) -> bool:
    return x.shape == y.shape and torch.allclose(x.double(), y.double(), cfg.rtol, cfg.atol)


def _time(model, inputs, cfg: FilterConfig, window: tuple[float, float] | None = None) -> float:
    """Median milliseconds per call after warm-up, with the GPU to itself when it is shared.

    With a `window`, stops as soon as the median is sure to fall outside it (most of the timed
    calls already did) and returns the median of those; a warm call far above it is a verdict
    on its own (a Rejection)."""
    cuda = cfg.device.startswith("cuda")
    with torch.no_grad(), _gpu(cfg, exclusive=True):
        for k in range(cfg.warmup):
            ms = _wall_ms(model, inputs, cuda)
            if k == 0 and window is not None and ms > cfg.slow_warm * window[1]:
                raise Rejection("too slow", f"a warm call took {ms:.0f} ms, more than "
                                f"{cfg.slow_warm:g}x the window {list(window)} ms")  # fmt: skip
        samples: list[float] = []
        for _ in range(cfg.reps):
            samples.append(_event_ms(model, inputs) if cuda else _wall_ms(model, inputs, False))
            decided = outside_for_sure(samples, window, cfg.reps) if window else None
            if decided is not None:
                return decided
    return statistics.median(samples)


def outside_for_sure(samples: list[float], window: tuple[float, float], reps: int) -> float | None:
    """When most of `reps` samples already fall on one side of `window`, the median of all of
    them will too, whatever the rest are: the median of those (outside the window); else None."""
    for outside in ([t for t in samples if t > window[1]], [t for t in samples if t < window[0]]):
        if len(outside) >= reps // 2 + 1:
            return statistics.median(outside)
    return None


def _wall_ms(model, inputs, cuda: bool) -> float:
    start = time.perf_counter()
    model(*inputs)
    if cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def _event_ms(model, inputs) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    model(*inputs)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


@contextlib.contextmanager
def _gpu(cfg: FilterConfig, exclusive: bool):
    """The shared GPU's reader-writer lock (the sandbox's): exclusive for timing, shared for
    other GPU work, a waiting timer ahead of new shared holders."""
    if cfg.gpu_lock is None or not cfg.device.startswith("cuda"):
        yield
        return
    with rw_lock(Path(cfg.gpu_lock), exclusive):
        yield


def _describe(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}".strip()
    return text.splitlines()[0][:300] if text else type(err).__name__
