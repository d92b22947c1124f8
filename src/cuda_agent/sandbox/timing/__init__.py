"""Timing: one timed call, the GPU's span of it, interleaved sides, cross-checks, the GPU lock."""
