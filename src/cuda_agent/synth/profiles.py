"""Device profiles: realistic sizes, a cost model to aim the eager runtime, the runtime window.

The cost model is deliberately simple (bytes moved over bandwidth plus FLOPs over peak plus a
launch cost per op, all counted on meta tensors): it only aims the batch size at a runtime inside
the window; the measured eager runtime decides.
"""

from __future__ import annotations

from dataclasses import dataclass

# Shapes without the batch dimension, by the kind of data they model.
_CUDA_FAMILIES = {
    "matrix": ((512, 1024, 2048, 4096, 8192),),
    "sequence": ((128, 256, 512, 1024), (256, 512, 768, 1024, 2048)),
    "image": ((3, 16, 32, 64, 128), (32, 56, 64, 112, 128, 224)),
    "heads": ((8, 16), (128, 256, 512, 1024), (64, 128)),
    "volume": ((3, 8, 16, 32), (8, 16), (16, 32, 64)),
    "signal": ((8, 16, 32, 64), (256, 1024, 4096)),
}
_CPU_FAMILIES = {
    "matrix": ((64, 128, 256, 512),),
    "sequence": ((16, 32, 64), (32, 64, 128)),
    "image": ((3, 8, 16), (8, 16, 32)),
    "heads": ((2, 4), (16, 32), (16, 32)),
    "volume": ((3, 4, 8), (4, 8), (8, 16)),
    "signal": ((4, 8, 16), (64, 256)),
}


@dataclass(frozen=True)
class Profile:
    name: str  # "cuda" | "cpu": also selects the rule sizes in catalog.rules
    families: dict[str, tuple[tuple[int, ...], ...]]
    bandwidth: float  # bytes/s
    flops: float  # FLOP/s
    launch_s: float  # per aten op
    target_ms: tuple[float, float]  # the composer aims log-uniformly inside this
    window_ms: tuple[float, float]  # the eager filter's default window
    memory_bytes: int  # largest live-tensor estimate a program may need
    max_batch: int = 4096

    def family_shape(self, family: str, rng) -> tuple[int, ...]:
        """A shape without its batch dimension: image (C, H, W) with H == W, and so on."""
        choices = self.families[family]
        dims = [rng.choice(c) for c in choices]
        if family in ("image", "volume"):
            dims.append(dims[-1])  # square spatial dims
        return tuple(dims)


PROFILES = {
    "cuda": Profile(
        name="cuda",
        families=_CUDA_FAMILIES,
        bandwidth=3.0e12,
        flops=4.0e13,
        launch_s=6e-6,
        target_ms=(2.0, 30.0),
        window_ms=(1.0, 100.0),
        memory_bytes=3 << 30,
        max_batch=1 << 16,
    ),
    "cpu": Profile(
        name="cpu",
        families=_CPU_FAMILIES,
        bandwidth=4.0e9,
        flops=1.5e10,
        launch_s=8e-6,
        target_ms=(0.2, 5.0),
        window_ms=(0.05, 50.0),
        memory_bytes=64 << 20,
        max_batch=256,
    ),
}


def profile_for(device: str) -> Profile:
    return PROFILES["cuda" if device.startswith("cuda") else "cpu"]


@dataclass(frozen=True)
class Cost:
    ms: float
    peak_bytes: int  # parameters plus the two largest tensors alive at once, roughly


def estimate(model, inputs, profile: Profile) -> Cost:
    """Run `model(*inputs)` on meta tensors and price what it moves and computes."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    from cuda_agent.synth.program import tensors_of

    moved, ops, largest = [0], [0], [0]

    class Bytes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not getattr(func, "is_view", False):
                sizes = [t.numel() * t.element_size() for t in tensors_of([*args, out])]
                moved[0] += sum(sizes)
                largest[0] = max([largest[0], *sizes])
                ops[0] += 1
            return out

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter, Bytes():
        model(*inputs)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    inputs_bytes = sum(t.numel() * t.element_size() for t in tensors_of(inputs))
    seconds = (moved[0] / profile.bandwidth + counter.get_total_flops() / profile.flops
               + ops[0] * profile.launch_s)  # fmt: skip
    return Cost(ms=seconds * 1e3, peak_bytes=params + inputs_bytes + 2 * largest[0])
