"""Reference for csrc/slocore/slice/{decode_mask,slice_scheduler}.h.

SLICE: rate v_i = ceil(1/TPOT_i), utility rate (Eq. 6), the
decode mask (Alg. 3, front-loaded or spread), the cycle estimate (Eq. 7) and greedy task
selection (Alg. 2). `l` is any callable batch size -> seconds (e.g. latency.BatchLatencyCurve).
"""

from __future__ import annotations

import bisect
import math


def rate_of(tpot: float) -> int:
    if not tpot > 0:
        raise ValueError("tpot: must be > 0")
    return 1 if math.isinf(tpot) else max(1, math.ceil(1.0 / tpot - 1e-9))


def utility_rate(utility: float, tpot: float) -> float:  # Eq. 6
    return utility * tpot


def mask(rates, spread=False):
    """(row order as input positions, 0/1 rows): rows sorted by rate descending (stable)."""
    order = sorted(range(len(rates)), key=lambda i: -rates[i])
    cols = rates[order[0]] if order else 0
    rows = []
    for i in order:
        v = rates[i]
        rows.append([int(c < v) if not spread else int((c + 1) * v // cols > c * v // cols) for c in range(cols)])
    return order, rows


def columns(rates, spread=False):
    order, rows = mask(rates, spread)
    ncol = len(rows[0]) if rows else 0
    return [[order[r] for r in range(len(rows)) if rows[r][c]] for c in range(ncol)]


def period(rates, l, spread=False) -> float:
    return sum(l(len(c)) for c in columns(rates, spread))


def period_eq7(v_desc, l) -> float:  # Eq. 7
    if not v_desc:
        return 0.0
    b = len(v_desc) - 1
    return v_desc[b] * l(b + 1) + sum((v_desc[j] - v_desc[j + 1]) * l(j + 1) for j in range(b))


def select_tasks(tpots, utilities, l, max_cycle=1.0, spread=False, max_tasks=1 << 30):
    """Alg. 2: positions of the selected tasks in utility-rate order."""
    ur = [utility_rate(u, t if math.isfinite(t) else 1.0) for t, u in zip(tpots, utilities)]
    chosen, rates = [], []  # rates kept descending
    for i in sorted(range(len(tpots)), key=lambda i: -ur[i]):
        if len(chosen) >= max_tasks:
            break
        v = rate_of(tpots[i])
        trial = list(rates)
        # insert after equal rates (std::upper_bound with greater<>)
        pos = bisect.bisect_right([-x for x in trial], -v)
        trial.insert(pos, v)
        p = period(trial, l, True) if spread else period_eq7(trial, l)
        if p >= max_cycle:
            break
        rates = trial
        chosen.append(i)
    return chosen
