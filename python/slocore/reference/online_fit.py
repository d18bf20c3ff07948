"""Reference for csrc/slocore/core/online_fit.h: the latency coefficients refitted online.

Each iteration is one observation of ProServe Eq. 7, in units of the prior p (c_k = p_k u_k,
z_k = x_k p_k / y): minimise sum_i w_i (z_i.u - 1)^2 + ridge |u - beta* 1|^2 over u >= 0,
where beta* is the best single factor (ProServe Sec. 4.1's correction on the same data).
"""

from __future__ import annotations

import math

from slocore.reference.latency import Coeffs

K = 6  # t_c, a_p, b_p, c_p, a_d, b_d


def features(items: list[tuple[int, int, bool]]) -> list[float]:
    """(1, sum lq^2, sum lq*lkv, sum lq | prefills, sum lkv, n | decodes)."""
    x = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    for lq, lkv, prefill in items:
        if prefill:
            x[1] += lq * lq
            x[2] += lq * lkv
            x[3] += lq
        else:
            x[4] += lkv
            x[5] += 1.0
    return x


def _solve_spd(M: list[list[float]], r: list[float], free: list[int]) -> dict[int, float]:
    """M[free, free] u = r[free] by Gaussian elimination (M is SPD there)."""
    n = len(free)
    a = [[M[i][j] for j in free] + [r[i]] for i in free]
    for c in range(n):
        for row in range(c + 1, n):
            f = a[row][c] / a[c][c]
            a[row] = [v - f * w for v, w in zip(a[row], a[c])]
    u = [0.0] * n
    for i in range(n - 1, -1, -1):
        u[i] = (a[i][n] - sum(a[i][k] * u[k] for k in range(i + 1, n))) / a[i][i]
    return dict(zip(free, u))


class OnlineFit:
    def __init__(self, prior: Coeffs, forget: float = 0.997, ridge: float = 0.1):
        if not (0 < forget <= 1):
            raise ValueError("forget: must be in (0, 1]")
        if not (ridge > 0 and math.isfinite(ridge)):
            raise ValueError("ridge: must be finite and > 0")
        self.p = [prior.t_c, prior.a_p, prior.b_p, prior.c_p, prior.a_d, prior.b_d]
        self.forget, self.ridge = forget, ridge
        self.A = [[0.0] * K for _ in range(K)]
        self.b = [0.0] * K
        self.observations = 0.0

    def observe(self, x: list[float], real_s: float) -> None:
        if not (real_s > 0 and math.isfinite(real_s)):
            raise ValueError("real_s: must be finite and > 0")
        z = [xk * pk / real_s for xk, pk in zip(x, self.p)]
        if not (sum(z) > 0 and math.isfinite(sum(z))):
            return
        f = self.forget
        self.A = [[f * a + z[i] * z[j] for j, a in enumerate(row)] for i, row in enumerate(self.A)]
        self.b = [f * v + zi for v, zi in zip(self.b, z)]
        self.observations = self.observations * f + 1.0

    def solve(self) -> Coeffs:
        den = sum(map(sum, self.A))
        beta = sum(self.b) / den if den > 0 else 1.0
        M = [[a + (self.ridge if i == j else 0.0) for j, a in enumerate(row)] for i, row in enumerate(self.A)]
        r = [v + self.ridge * beta for v in self.b]
        free = [k for k in range(K) if self.p[k] > 0]
        u: dict[int, float] = {}
        for _ in range(K + 1):
            if not free:
                break
            u = _solve_spd(M, r, free)
            keep = [k for k in free if u[k] > 0]
            if keep == free:
                break
            free = keep
        if not free:
            s = beta if beta > 0 else 1.0
            return Coeffs(*[pk * s for pk in self.p])
        return Coeffs(*[self.p[k] * u[k] if k in free else 0.0 for k in range(K)])
