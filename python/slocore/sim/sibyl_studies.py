"""SIBYL analyses beyond the latency table:

* `optimal_assignment_ratio` (Table 1, Table 6): the share of decode placements whose
  instance is still the least-loaded one at the actual handoff moment. Load = requests
  decoding on the instance (what TPOT depends on in the processor-sharing model); the
  handoff moment is the request's first token (end of its prefill); ties count as optimal.
* `calibration_error` (Fig. 7): train the survival estimator online on one trace's output
  lengths, then compare P(L > l_to | L > l_from) (Eq. 3) with the empirical conditional
  survival of a test trace over a grid of (l_from, l_to).
"""

from __future__ import annotations

import numpy as np

from slocore import _core


def optimal_assignment_ratio(recorder, decode_instances) -> float:
    recs = [r for r in recorder.records() if len(r.token_times) >= 2 and r.instance >= 0]
    if not recs:
        return float("nan")
    ids = {int(i): k for k, i in enumerate(sorted(set(decode_instances)))}
    start = np.array([r.token_times[1] for r in recs])  # first decode token: joins the batch
    end = np.array([r.end_time for r in recs])
    inst = np.array([ids.get(int(r.instance), -1) for r in recs])
    hand = np.array([r.token_times[0] for r in recs])  # prefill done = handoff
    # Sweep: +1 at start, -1 at end, queries at each handoff (before that request starts).
    times = np.concatenate([start, end, hand])
    kind = np.concatenate([np.full(len(recs), 1), np.full(len(recs), -1), np.full(len(recs), 0)])
    who = np.concatenate([np.arange(len(recs))] * 3)
    order = np.lexsort((np.where(kind == 0, 2, np.where(kind == -1, 0, 1)), times))
    counts = np.zeros(len(ids), dtype=np.int64)
    hit = total = 0
    for e in order:
        k, r = kind[e], who[e]
        if inst[r] < 0:
            continue
        if k == 0:
            total += 1
            hit += counts[inst[r]] <= counts.min()
        else:
            counts[inst[r]] += k
    return hit / total if total else float("nan")


def empirical_survival(lengths: np.ndarray, grid: np.ndarray) -> np.ndarray:
    s = np.sort(np.asarray(lengths))
    return 1.0 - np.searchsorted(s, grid, side="right") / len(s)  # P(L > x)


def calibration_error(
    train: np.ndarray, test: np.ndarray, bucket: int = 64, alpha: float = 0.99, step: int = 256, max_len: int = 8192
) -> dict:
    """Mean and max |P_hat - P_true| of Eq. 3 over l_from < l_to on a `step` grid."""
    est = _core.SurvivalEstimator(bucket, alpha, max(max_len, bucket))
    for L in np.asarray(train, dtype=np.int64):
        est.observe(int(L))
    grid = np.arange(0, max_len, step, dtype=float)  # below the cap: S(cap) = 0 by definition
    s_true = empirical_survival(test, grid)
    s_hat = np.array([est.survival(x) for x in grid])
    errs = []
    for i in range(len(grid)):
        if s_true[i] <= 0:
            continue
        for j in range(i + 1, len(grid)):
            p_true = s_true[j] / s_true[i]
            p_hat = min(1.0, s_hat[j] / max(s_hat[i], 1e-9))
            errs.append(abs(p_hat - p_true))
    e = np.array(errs)
    return {
        "mae": float(e.mean()),
        "max": float(e.max()),
        "share_below_5pct": float((e < 0.05).mean()),
        "points": int(e.size),
    }
