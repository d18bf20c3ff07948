"""Reference for csrc/slocore/sim/belief_noise.h: the per-instance belief factor."""

from __future__ import annotations

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def belief_factor(noise: float, seed: int, instance: int) -> float:
    if not 0 <= noise < 1:
        raise ValueError("belief_noise: must be in [0, 1)")
    if noise == 0:
        return 1.0
    z = (seed * GOLDEN + instance + GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    u = (z >> 11) * 2.0**-53
    return 1.0 + noise * (2.0 * u - 1.0)
