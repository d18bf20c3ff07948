"""Pure-Python SIBYL (Eq. 3-8, Alg. 1): the test oracle and the
benchmark baseline for csrc/slocore/sibyl/. Deliberately plain: the survival update
touches every bucket (O(B), Eq. 4 as written), the projection walks every tracked request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class SurvivalEstimator:
    """S(l) at boundaries l = b*bucket (b = 1..B), EMA over all buckets on each completion."""

    def __init__(self, bucket: int = 64, alpha: float = 0.99, max_len: int = 32768):
        if bucket < 1:
            raise ValueError(f"bucket: must be >= 1 token, got {bucket}")
        if not (0 < alpha < 1):
            raise ValueError(f"alpha: must be in (0, 1), got {alpha}")
        self.bucket, self.alpha = int(bucket), float(alpha)
        self.buckets = -(-int(max_len) // self.bucket)
        self.s = [1.0] * (self.buckets + 1)  # s[0] = S(0) = 1

    def observe(self, final_len: int) -> None:
        k = min(final_len // self.bucket, self.buckets)  # Eq. 4: indicator L >= b*bucket
        a = self.alpha
        for b in range(1, self.buckets + 1):
            self.s[b] = a * self.s[b] + (1 - a) * (1.0 if b <= k else 0.0)

    def survival(self, length: float) -> float:
        if not length >= self.bucket:
            return 1.0
        b = min(int(math.floor(length / self.bucket)), self.buckets)
        return min(max(self.s[b], 0.0), 1.0)

    def conditional(self, l_from: float, l_to: float) -> float:  # Eq. 3
        return min(1.0, self.survival(l_to) / max(self.survival(l_from), 1e-9))


@dataclass
class Tracked:
    id: int
    instance: int
    prompt_len: int
    tau: float
    active: bool = False
    g0: int = 0
    generated: int = 0
    t0: float = 0.0
    t_last: float = 0.0


class ProjectedLoad:
    """The request table and Eq. 1 (Types 1-3), same options as the C++ `sibyl` policy."""

    def __init__(
        self,
        bucket=64,
        alpha=0.99,
        max_len=32768,
        v_sys_init=30.0,
        prob=True,
        type1=True,
        type2=True,
        type3=True,
        reqlevel=False,
    ):
        self.est = SurvivalEstimator(bucket, alpha, max_len)
        self.v_sys_init, self.prob, self.reqlevel = v_sys_init, prob, reqlevel
        self.types = (type1, type2, type3)
        self.table: dict[int, Tracked] = {}

    def assign(self, request, instance, prompt_len, tau):
        if request in self.table:
            raise ValueError(f"request: id {request} already tracked")
        self.table[request] = Tracked(request, instance, prompt_len, tau)

    def set_handoff(self, request, tau):
        k = self.table[request]
        if not k.active:
            k.tau = tau

    def token(self, request, generated, now):
        k = self.table[request]
        if not k.active:
            k.active, k.g0, k.generated, k.t0, k.t_last = True, generated, generated, now, now
            return
        k.t_last = max(k.t_last, now)
        k.generated = max(k.generated, generated)

    def finish(self, request) -> int:
        k = self.table.pop(request)
        n = max(k.generated, 1)
        self.est.observe(n)
        return n

    def forget(self, request):
        del self.table[request]

    def v_sys(self) -> float:  # token-weighted mean decode rate of the active requests
        tok = sum(k.generated - k.g0 for k in self.table.values() if k.active)
        dt = sum(k.t_last - k.t0 for k in self.table.values() if k.active)
        return tok / dt if dt > 1e-9 else self.v_sys_init

    def rate(self, k: Tracked, vs: float) -> float:
        dt = k.t_last - k.t0
        return (k.generated - k.g0) / dt if (k.active and dt > 1e-9 and k.generated > k.g0) else vs

    def terms(self, instance, now, tau):
        return self._terms([k for k in self.table.values() if k.instance == instance], now, tau, self.v_sys())

    def _terms(self, tracked, now, tau, vs):
        t1 = t2 = t3 = 0.0
        for k in tracked:
            if k.active:  # Type 1, Eq. 6 (Alg. 1 lines 6-9)
                if not self.types[0]:
                    continue
                l_now = float(k.generated)
                l_tau = l_now + self.rate(k, vs) * max(0.0, tau - now)
                m = 1.0 if self.reqlevel else k.prompt_len + l_tau
                t1 += m * (self.est.conditional(l_now, l_tau) if self.prob else 1.0)
            elif k.tau <= tau:  # Type 2, Eq. 7
                if not self.types[1]:
                    continue
                g = vs * (tau - k.tau)
                m = 1.0 if self.reqlevel else k.prompt_len + g
                t2 += m * (self.est.survival(g) if self.prob else 1.0)
            else:  # Type 3, Eq. 8 (not Alg. 1 line 17's sign)
                if not self.types[2]:
                    continue
                pen = max(0.0, k.prompt_len - vs * (k.tau - tau))
                t3 += (1.0 if pen > 0 else 0.0) if self.reqlevel else pen
        return t1, t2, t3

    def load(self, instance, now, tau) -> float:
        return sum(self.terms(instance, now, tau))

    def argmin(self, instances, now, tau):
        """Alg. 1 line 20: index of the least projected load (ties: lowest index), and the loads.
        One pass over the table (O(|D| + N_total), Sec. 4.4), grouped by instance."""
        per = {i: [] for i in instances}
        for k in self.table.values():
            if k.instance in per:
                per[k.instance].append(k)
        vs = self.v_sys()
        loads = [sum(self._terms(per[i], now, tau, vs)) for i in instances]
        best = min(range(len(loads)), key=lambda i: (loads[i], i)) if loads else -1
        return best, loads
