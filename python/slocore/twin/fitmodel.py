"""The latency model a profile is fitted to, and the fit.

The simulator's model is ProServe's per-request model (Eq. 4-7, csrc/slocore/core/latency_model.h):

    T(B) = t_c + sum_prefill (a_p*lq^2 + b_p*lq*lkv + c_p*lq) + sum_decode (a_d*lkv + b_d)

Seen from a client, an engine adds one more term: a request's first token also pays the
front end once (HTTP parsing, input processing, the hand-over to the engine loop and the
first streamed chunk back), a fixed ``ttft_overhead_s`` that overlaps later steps and so
does not appear in the time between tokens. On vLLM-CPU with a tiny model it is several
milliseconds, as large as a step, so the model is extended by that one term: feature
``first`` is 1 for a measured time to first token of a request that found the engine idle.

Fit: HFX appendix A's least squares on relative error (C++ core/fit.h) as the start, then
the error taken relative to the model's prediction instead of the measurement, by iteratively
reweighted least squares (``refit_unbiased``). Relative to the measurement, a noisy point
measured slow costs less than one measured fast, so the fit settles low: under relative noise
sigma it predicts about exp(-1.5 sigma^2) of the mean (-20 % at sigma 0.4, the noise of a busy
2-core machine), and on vLLM-CPU profiles its predictions summed to 51-85 % of the measured
time of the very points it was fitted to. Relative to the prediction (a gamma regression with
identity link) the fitted times are unbiased on average (their sum equals the measured sum),
which is what a simulator of throughput and queues needs. Both are made non-negative by
dropping the most negative coefficient and refitting until none is (an active-set loop; the
simulator rejects negative coefficients).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

COEFFS = ("t_c", "a_p", "b_p", "c_p", "a_d", "b_d", "ttft_overhead_s")


@dataclass
class Point:
    """One measured time and the batch it was measured on."""

    kind: str  # "prefill" (lone request's TTFT), "decode" (steady inter-token time), "mixed" (decodes + a prefill)
    seconds: float
    prefill: list  # [(lq, lkv), ...] prefill chunks in the step
    decode: list  # [lkv, ...] context of each decoding request
    first: int = 0  # 1 when `seconds` is a time to first token (pays the front end)
    detail: dict | None = None  # what was sent, engine counters

    def features(self) -> list[float]:
        return [
            1.0,
            float(sum(lq * lq for lq, _ in self.prefill)),
            float(sum(lq * lkv for lq, lkv in self.prefill)),
            float(sum(lq for lq, _ in self.prefill)),
            float(sum(self.decode)),
            float(len(self.decode)),
            float(self.first),
        ]


def predict(coeffs: dict, p: Point) -> float:
    return sum(coeffs.get(n, 0.0) * f for n, f in zip(COEFFS, p.features()))


def medians(points: list[Point]) -> list[Point]:
    """One point per experiment (``detail["experiment"]``, else kind and batch): the repeat
    with the median time (the lower one of an even count), so a repeat hit by a stall of the
    machine does not pull the fit."""
    groups: dict = {}
    for p in points:
        key = (p.detail or {}).get("experiment") or (p.kind, tuple(p.prefill), len(p.decode))
        groups.setdefault(key, []).append(p)
    return [sorted(g, key=lambda p: p.seconds)[(len(g) - 1) // 2] for g in groups.values()]


def fit(points: list[Point], fixed_zero: tuple[str, ...] = ()) -> dict:
    """Non-negative relative-error least squares over `points`.

    Returns {"coeffs": {name: value}, "dropped": [names forced to 0], "rms_rel_error",
    "max_rel_error", "residuals": [(pred - real)/real per point]}."""
    from slocore import _core

    if not points:
        raise ValueError("points: nothing measured")
    X = [p.features() for p in points]
    y = [p.seconds for p in points]
    for i, v in enumerate(y):
        if not (v > 0):
            raise ValueError(f"points[{i}].seconds: must be > 0, got {v!r}")
    active = [j for j, n in enumerate(COEFFS) if n not in fixed_zero and any(row[j] != 0 for row in X)]
    dropped = [n for j, n in enumerate(COEFFS) if j not in active]
    while True:
        if len(active) > len(points):
            raise ValueError(f"points: {len(points)} measurements cannot fit {len(active)} coefficients")
        Xa = [[row[j] for j in active] for row in X]
        start = _core.fit_relative_least_squares(Xa, y)
        sol = refit_unbiased(Xa, y, list(start.coeffs))
        neg = [(c, j) for c, j in zip(sol, active) if c < 0]
        if not neg:
            break
        worst = min(neg)[1]
        active.remove(worst)
        dropped.append(COEFFS[worst])
    coeffs = {n: 0.0 for n in COEFFS}
    for c, j in zip(sol, active):
        coeffs[COEFFS[j]] = float(c)
    pred = [predict(coeffs, p) for p in points]
    resid = [(q - p.seconds) / p.seconds for q, p in zip(pred, points)]
    return {
        "coeffs": coeffs,
        "dropped": dropped,
        "rms_rel_error": math.sqrt(sum(r * r for r in resid) / len(resid)),
        "max_rel_error": max(abs(r) for r in resid),
        "predicted_over_measured": sum(pred) / sum(y),
        "residuals": resid,
    }


def refit_unbiased(X: list, y: list, start: list, iters: int = 50) -> list:
    """Least squares on (pred - y) / pred, from `start`: iteratively reweighted (weights
    1/pred of the previous iterate, floored at a thousandth of the smallest y), until the
    coefficients move less than 1e-9 relative. Exact data stay exact (residual 0 is a fixed
    point); the solution satisfies sum((y - pred) * x / pred^2) = 0, so with a constant term
    the predictions are unbiased relative to the model."""
    import numpy as np

    A, b = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    c = np.asarray(start, dtype=float)
    floor = 1e-3 * float(b.min())
    for _ in range(iters):
        w = 1.0 / np.maximum(A @ c, floor)
        new = np.linalg.lstsq(A * w[:, None], b * w, rcond=None)[0]
        done = np.allclose(new, c, rtol=1e-9, atol=1e-15)
        c = new
        if done:
            break
    return [float(v) for v in c]
