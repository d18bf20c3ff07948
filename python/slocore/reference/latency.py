"""Reference for csrc/slocore/core/latency_model.h.

ProServe (003) Eq. 4-7 per-request batch latency with momentum correction; HFX (000)
Eq. 1-2 as the same coefficients; SLICE l(b) curve; SIBYL TPS(N).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass
class Coeffs:
    t_c: float = 0.0
    a_p: float = 0.0
    b_p: float = 0.0
    c_p: float = 0.0
    a_d: float = 0.0
    b_d: float = 0.0


@dataclass
class LatencyModel:
    c: Coeffs
    theta: float = 0.9
    beta: float = 1.0
    _sum: float = 0.0
    _n: int = 0

    def prefill_cost(self, lq: int, lkv: int = 0) -> float:  # Eq. 5
        c = self.c
        return self.beta * (c.a_p * lq * lq + c.b_p * lq * lkv + c.c_p * lq)

    def decode_cost(self, lkv: int) -> float:  # Eq. 6
        return self.beta * (self.c.a_d * lkv + self.c.b_d)

    def batch_time(self, items: list[tuple[int, int, bool]]) -> float:  # Eq. 7
        c = self.c
        t = c.t_c
        for lq, lkv, prefill in items:
            t += (c.a_p * lq * lq + c.b_p * lq * lkv + c.c_p * lq) if prefill else (c.a_d * lkv + c.b_d)
        return self.beta * t

    def stage_prefill(self, sum_len: float, sum_len_sq: float) -> float:  # HFX Eq. 1
        return self.beta * (self.c.t_c + self.c.c_p * sum_len + self.c.a_p * sum_len_sq)

    def stage_decode(self, sum_cur_len: float, batch: float) -> float:  # HFX Eq. 2
        return self.beta * (self.c.t_c + self.c.a_d * sum_cur_len + self.c.b_d * batch)

    def observe(self, real_s: float, predicted_s: float) -> None:
        self._sum += real_s / predicted_s
        self._n += 1

    def update(self) -> None:
        """beta <- theta*beta + (1-theta)*beta*mean(real/pred): the ratio is measured against
        the corrected estimate, so beta converges to real/base (ProServe section 4.1)."""
        if self._n == 0:
            return
        self.beta = self.theta * self.beta + (1 - self.theta) * (self._sum / self._n) * self.beta
        self._sum, self._n = 0.0, 0


@dataclass
class BatchLatencyCurve:
    """SLICE l(b): piecewise linear through (b_i, l_i), linear past the ends."""

    b: list[float] = field(default_factory=list)
    l: list[float] = field(default_factory=list)

    def __call__(self, x: float) -> float:
        if x <= 0:
            return 0.0
        if len(self.b) == 1:
            return self.l[0] * x / self.b[0]
        if x <= self.b[0]:
            return self.l[0]
        hi = min(bisect.bisect_left(self.b, x), len(self.b) - 1)
        lo = hi - 1
        slope = (self.l[hi] - self.l[lo]) / (self.b[hi] - self.b[lo])
        return max(self.l[lo] + slope * (x - self.b[lo]), 1e-12)


def tps_total(a: float, b: float, c: float, n: float, floor: float = 1.0) -> float:
    """SIBYL appendix I: TPS(N) = aN^2 + bN + c, flat past the vertex of a concave fit
    (the paper's "plateauing"), never below `floor`."""
    if n <= 0:
        return 0.0
    if a < 0:
        n = min(n, -b / (2 * a))
    return max(a * n * n + b * n + c, floor)
