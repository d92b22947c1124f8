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

Outputs can be gigabytes, and a worker sharing the GPU may use only its share of the memory, with
the inputs and outputs of the calls under comparison already resident. Comparing whole outputs in
float64 would add several output-sized, doubled temporaries per comparison (enough to run out of
memory on programs that themselves fit), so every comparison walks its outputs a piece of `_CHUNK`
elements at a time (the sandbox's `tensor_pieces`, which its own comparison walks too), promoted
to float64 per piece only; and an output is freed as soon as its last check is done.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from cuda_agent.sandbox import rw_lock, tensor_pieces
from cuda_agent.synth.program import build, load_program, make_inputs, seed_all, tensors_of

# elements compared at once: torch.allclose on a piece promoted to float64 holds about 45 bytes of
# temporaries per element (both operands, the allowed and the actual error, masks), ~0.4 GB here
_CHUNK = 1 << 23


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
    # before the first full-size call, a warm call on 1/probe_slices of the batch predicts it
    probe_slices: int = 16


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
        _batch_slice_probe(model, first, cfg)
        untimed: list[float] = []
        a = _untimed_call(model, first, 101, cfg, untimed)
        again = _untimed_call(model, first, 202, cfg, untimed)
        with _gpu(cfg, exclusive=False):  # decided now so that `again` is freed before `b` runs
            tol = cfg.determinism_tol
            deterministic = len(a) == len(again) and all(
                _allclose(x, y, tol, tol) for x, y in zip(a, again, strict=True)
            )
        del again
        b = _untimed_call(model, second, 303, cfg, untimed)
        del second
        with _gpu(cfg, exclusive=False):
            _check_outputs(a, b, deterministic, cfg)
        output_shapes = [list(t.shape) for t in a]
        del a, b  # the timing and the labels run the model again
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
        "output_shapes": output_shapes,
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
                _allclose(g, e, cfg.rtol, cfg.atol) for g, e in zip(got, expected, strict=True)
            )
        del got, expected  # the timing runs the model again
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


def _untimed_call(model, inputs, seed: int, cfg: FilterConfig, untimed: list[float]) -> list:
    """`_run` under the shared GPU lock, its time appended to `untimed`; too slow when the fastest
    call so far is far above the window."""
    with _gpu(cfg, exclusive=False), torch.no_grad():
        out, ms = _run(model, inputs, seed, cfg.device)
    untimed.append(ms)
    lo, hi = cfg.window_ms
    bound = _untimed_bound(cfg, first=len(untimed) == 1)
    if min(untimed) > bound:
        raise Rejection("too slow", f"an untimed call took {min(untimed):.0f} ms, more "
                        f"than {bound / hi:g}x the window [{lo}, {hi}] ms")  # fmt: skip
    return out


def _untimed_bound(cfg: FilterConfig, first: bool) -> float:
    """Milliseconds an untimed call may take; the first pays one-time set-up (cuBLAS, cuDNN,
    kernels loaded): twice the bound."""
    return cfg.slow_untimed * cfg.window_ms[1] * (2 if first else 1)


def _batch_slice_probe(model, inputs: list, cfg: FilterConfig) -> None:
    """Reject a program whose full-size call would take far longer than the untimed-call bound,
    from a warm call on a slice of its batch, before it runs at full size.

    The composer's cost model prices bytes and FLOPs; some operators (linear-algebra
    decompositions such as linalg.cond, qr and svdvals at large batch sizes) run far slower than
    that: single calls of 14–31 s on the H200, for programs priced under 10 ms. Run at full
    size, such a call holds a worker and the shared GPU lock, and with it every other worker's
    timing, for that long. A program the slice cannot run (its code assumes the whole batch) is
    left to the full-size call."""
    if cfg.probe_slices < 2:
        return
    batched = [isinstance(t, torch.Tensor) and t.dim() > 0 for t in inputs]
    batch = next((t.shape[0] for t, b in zip(inputs, batched, strict=True) if b), 0)
    part = batch // cfg.probe_slices
    if part < 1:
        return
    sliced = [t[:part] if b and t.shape[0] == batch else t
              for t, b in zip(inputs, batched, strict=True)]  # fmt: skip
    try:
        with _gpu(cfg, exclusive=False), torch.no_grad():
            _run(model, sliced, 0, cfg.device)  # pays the one-time set-up (cuBLAS, cuDNN, ...)
            _, ms = _run(model, sliced, 0, cfg.device)
    except Exception:
        return
    lo, hi = cfg.window_ms
    whole = ms * batch / part
    bound = _untimed_bound(cfg, first=True)  # what the full-size first call would be held to
    if whole > bound:
        raise Rejection("too slow", f"an untimed call on {part} of the batch's {batch} took "
                        f"{ms:.0f} ms: about {whole:.0f} ms for the whole batch, more than "
                        f"{bound / hi:g}x the window [{lo}, {hi}] ms")  # fmt: skip


def _check_outputs(a: list, b: list, deterministic: bool, cfg: FilterConfig) -> None:
    """The output filters in verdict order, on the outputs `a` and `b` for two input sets;
    `deterministic`: whether a second call on `a`'s inputs agreed with `a` (its verdict still
    comes after the nonfinite one)."""
    if not all(_finite(t) for t in (*a, *b)):
        raise Rejection("nonfinite", "output has NaN or Inf")
    if not deterministic:
        raise Rejection("nondeterministic", "same inputs gave different outputs")
    if all(_equal(x, y) for x, y in zip(a, b, strict=True)):
        raise Rejection("constant", "different inputs gave identical outputs")
    for out in (a, b):  # (near-zero outputs would also read as indistinguishable: say why)
        if all(_near_zero(x, cfg.atol) for x in out):
            raise Rejection("degenerate", "output is indistinguishable from zeros")
    if all(_allclose(x, y, cfg.rtol, cfg.atol) for x, y in zip(a, b, strict=True)):
        raise Rejection("indistinguishable", "outputs for different inputs agree within tolerance")


def _paired(x: torch.Tensor, y: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    return zip(tensor_pieces(x, _CHUNK), tensor_pieces(y, _CHUNK), strict=True)


def _allclose(x: torch.Tensor, y: torch.Tensor, rtol: float, atol: float) -> bool:
    """Same shape and `torch.allclose(x.double(), y.double(), rtol, atol)`: |x - y| <= atol +
    rtol * |y| everywhere, NaN never close."""
    return x.shape == y.shape and all(
        torch.allclose(p.double(), q.double(), rtol, atol) for p, q in _paired(x, y)
    )


def _near_zero(t: torch.Tensor, atol: float) -> bool:
    """`torch.allclose` to zeros of its shape: |t| <= atol everywhere (the rtol term vanishes)."""
    return all(bool((p.double().abs() <= atol).all()) for p in tensor_pieces(t, _CHUNK))


def _equal(x: torch.Tensor, y: torch.Tensor) -> bool:
    return x.shape == y.shape and all(torch.equal(p, q) for p, q in _paired(x, y))


def _finite(t: torch.Tensor) -> bool:
    """No NaN or Inf (an integer or bool tensor has none)."""
    return not t.dtype.is_floating_point or all(
        bool(torch.isfinite(p).all()) for p in tensor_pieces(t, _CHUNK)
    )


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
