"""Reference for csrc/slocore/core/metrics.h: the one definition of each metric.

A record is (request, token_times, outcome) with request a dict holding arrival, ttft,
tpot, deadline (None or seconds), priority, priority_weight, task, output_len (or None)
and outcome one of "finished", "rejected", "pending".
"""

from __future__ import annotations

import math


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    if not sorted_values:
        return math.nan
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def request_metrics(req: dict, t: list[float], outcome: str, w_prefill=1.0, w_decode=1.0) -> dict:
    finished = outcome == "finished"
    ttft = t[0] - req["arrival"] if t else math.inf
    tpot = (t[-1] - t[0]) / (len(t) - 1) if len(t) >= 2 else 0.0
    e2e = t[-1] - req["arrival"] if finished else math.inf
    ttft_met = bool(t) and ttft < req["ttft"]
    tpot_met = finished and (len(t) < 2 or tpot < req["tpot"])
    deadline_met = req.get("deadline") is None or (finished and e2e <= req["deadline"])
    w = req.get("priority_weight", 1.0)
    tdg = 0.0
    for i, ti in enumerate(t):  # ProServe Eq. 3
        if ti < req["arrival"] + req["ttft"] + i * req["tpot"]:
            tdg += (w_prefill if i == 0 else w_decode) * w
    n = req.get("output_len") or len(t)
    n = max(n, len(t), 1)
    return dict(
        ttft=ttft,
        tpot=tpot,
        e2e=e2e,
        tokens=len(t),
        ttft_met=ttft_met,
        tpot_met=tpot_met,
        deadline_met=deadline_met,
        slo_met=finished and ttft_met and tpot_met and deadline_met,
        tdg=tdg,
        tdg_ideal=w * (w_prefill + w_decode * (n - 1)),
    )


def distribution(values: list[float], quantiles=(0.5, 0.9, 0.99, 0.999)) -> dict:
    v = sorted(values)
    out = {"count": len(v), "mean": sum(v) / len(v) if v else math.nan, "max": v[-1] if v else math.nan}
    for q in quantiles:
        out[f"p{q * 100:g}"] = quantile(v, q)
    return out


def summarize(records, instance_seconds=0.0, w_prefill=1.0, w_decode=1.0, cost_unit_s=0.05, warmup_s=0.0) -> dict:
    records = [(req, t, o) for req, t, o in records if req["arrival"] >= warmup_s]  # warm-up excluded
    ms = [(req, t, o, request_metrics(req, t, o, w_prefill, w_decode)) for req, t, o in records]
    n = len(ms)
    ttft = [m["ttft"] for _, t, _, m in ms if t]
    tpot = [m["tpot"] for _, t, _, m in ms if len(t) >= 2]
    tbt = [b - a for _, t, _, _ in ms for a, b in zip(t, t[1:])]
    e2e = [m["e2e"] for _, _, o, m in ms if o == "finished"]
    tokens = sum(m["tokens"] for *_, m in ms)
    tdg = sum(m["tdg"] for *_, m in ms)
    ideal = sum(m["tdg_ideal"] for *_, m in ms)
    first = min((r["arrival"] for r, *_ in ms), default=0.0)
    last = max((t[-1] for _, t, *_ in ms if t), default=first)
    duration = last - first if tokens else 0.0
    by_task, by_prio = {}, {}
    for req, _, _, m in ms:
        by_task.setdefault(req.get("task", ""), []).append(m["slo_met"])
        by_prio.setdefault(req.get("priority", 0), []).append(m["slo_met"])
    return {
        "requests": n,
        "finished": sum(o == "finished" for _, _, o, _ in ms),
        "rejected": sum(o == "rejected" for _, _, o, _ in ms),
        "attainment": sum(m["slo_met"] for *_, m in ms) / n if n else 0.0,
        "ttft_attainment": sum(m["ttft_met"] for *_, m in ms) / n if n else 0.0,
        "tpot_attainment": sum(m["tpot_met"] for *_, m in ms) / n if n else 0.0,
        "ttft": distribution(ttft),
        "tpot": distribution(tpot),
        "tbt": distribution(tbt),
        "e2e": distribution(e2e),
        "output_tokens": tokens,
        "duration_s": duration,
        "throughput_tok_s": tokens / duration if duration > 0 else 0.0,
        "tdg": tdg,
        "tdg_ideal": ideal,
        "tdg_ratio": tdg / ideal if ideal > 0 else 0.0,
        "miss_tdg_ratio": (ideal - tdg) / ideal if ideal > 0 else 0.0,
        "instance_seconds": instance_seconds,
        "cost_units": instance_seconds / cost_unit_s,
        "attainment_by_task": {k: sum(v) / len(v) for k, v in by_task.items()},
        "attainment_by_priority": {k: sum(v) / len(v) for k, v in by_prio.items()},
    }
