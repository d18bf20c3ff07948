"""Per-class summaries and paired differences of ``slocore bench live``.

Repetition r of every stack replays the same trace (same arrivals, lengths, SLOs) back to
back on the same engines, so stack A's and stack B's attainments of repetition r form a
pair. The paired difference d_r = a_r - b_r has mean d and sample standard deviation s;
its 95% confidence interval is d +- t(0.975, n-1) s / sqrt(n) (Student's t; none for n < 2).
"""

from __future__ import annotations

import math

import numpy as np


def describe(xs) -> dict:
    """Mean, sample standard deviation, min, max, n of a list of numbers (NaN dropped)."""
    v = np.asarray([x for x in xs if x is not None and math.isfinite(x)], dtype=float)
    if len(v) == 0:
        return {"mean": None, "std": None, "min": None, "max": None, "n": 0}
    return {
        "mean": float(v.mean()),
        "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
        "min": float(v.min()),
        "max": float(v.max()),
        "n": int(len(v)),
    }


def paired_diff(a: list[float], b: list[float]) -> dict:
    """Mean of a_r - b_r over the repetitions where both ran, with its 95% t confidence
    interval (the matrix's one definition, slocore.sim.matrix.ci95)."""
    if len(a) != len(b):
        raise ValueError(f"paired_diff: {len(a)} vs {len(b)} repetitions")
    d = np.asarray(
        [x - y for x, y in zip(a, b) if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)],
        dtype=float,
    )
    n = len(d)
    if n == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "std": None, "n": 0}
    mean = float(d.mean())
    if n < 2:
        return {"mean": mean, "ci_low": None, "ci_high": None, "std": None, "n": 1}
    from slocore.sim.matrix import ci95

    sd = float(d.std(ddof=1))
    half = ci95([float(x) for x in d])
    return {"mean": mean, "ci_low": mean - half, "ci_high": mean + half, "std": sd, "n": n}


def attainments(run: dict) -> dict:
    """{"overall": x, class: x, ...} of one run's loadgen summary (slocore.summarize)."""
    s = run["summary"]
    out = {"overall": s.get("attainment")}
    out.update({str(k): v for k, v in (s.get("attainment_by_task") or {}).items()})
    return out


def compare(runs: list[dict], stacks: list, classes: list[str]) -> dict:
    """Per stack and class: the attainments per repetition, their summary, and the paired
    difference against the best baseline (highest mean overall attainment); and the same for
    the overall TTFT p99 (`ttft_p99`, seconds) against the baseline with the lowest mean.
    `runs`: dicts with "stack", "rep", "attainment" ({"overall", class: x}) and, when measured,
    "ttft" ({"p99": s})."""
    reps = sorted({r["rep"] for r in runs})
    keys = ["overall", *classes]
    per, p99 = {}, {}
    for st in stacks:
        mine = {r["rep"]: r for r in runs if r["stack"] == st.name}
        per[st.name] = {k: [((mine.get(rep) or {}).get("attainment") or {}).get(k) for rep in reps] for k in keys}
        p99[st.name] = [((mine.get(rep) or {}).get("ttft") or {}).get("p99") for rep in reps]
    summary = {n: {k: describe(v) for k, v in cols.items()} for n, cols in per.items()}
    base = [s.name for s in stacks if s.baseline and summary[s.name]["overall"]["mean"] is not None]
    best = max(base, key=lambda n: summary[n]["overall"]["mean"]) if base else None
    diffs = {}
    if best is not None:
        for st in stacks:
            if st.name != best:
                diffs[st.name] = {k: paired_diff(per[st.name][k], per[best][k]) for k in keys}
    return {
        "reps": reps,
        "per_rep": per,
        "summary": summary,
        "best_baseline": best,
        "vs_best_baseline": diffs,
        "ttft_p99": _lowest_baseline(p99, stacks),
    }


def _lowest_baseline(per_rep: dict, stacks: list) -> dict:
    """A lower-is-better measure per stack and repetition (`per_rep`: name -> list): its summary,
    the baseline with the lowest mean, and every other stack's paired difference against it."""
    summary = {n: describe(v) for n, v in per_rep.items()}
    base = [s.name for s in stacks if s.baseline and summary[s.name]["mean"] is not None]
    best = min(base, key=lambda n: summary[n]["mean"]) if base else None
    diffs = {n: paired_diff(v, per_rep[best]) for n, v in per_rep.items() if best is not None and n != best}
    return {"per_rep": per_rep, "summary": summary, "best_baseline": best, "vs_best_baseline": diffs}


def ttft_by_class(rec) -> dict:
    """Per class (the requests' task), TTFT p50/p99 of one run: each class's records replayed
    into a Recorder of its own and summarised by slocore.summarize (the one definition)."""
    import slocore as _s

    subs: dict[str, object] = {}
    for r in rec.records():
        sub = subs.setdefault(str(r.request.task), _s.Recorder())
        sub.add(r.request)
        for t in r.token_times:
            sub.token(r.request.id, float(t))
        if r.outcome == _s.Outcome.FINISHED:
            sub.finish(r.request.id, r.end_time)
        elif r.outcome == _s.Outcome.REJECTED:
            sub.reject(r.request.id, r.end_time, r.reason)
    out = {}
    for task, sub in subs.items():
        d = _s.summarize(sub).get("ttft") or {}
        out[task] = {"p50": d.get("p50"), "p99": d.get("p99")}
    return out
