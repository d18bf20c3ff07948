"""Markdown tables of a ``slocore bench live`` result: per engine setting and trace, each
stack's mean attainment +- its standard deviation over repetitions (overall and per class),
and its paired difference against the best baseline with the 95% confidence interval; its
TTFT p99 likewise against the baseline with the lowest mean p99."""

from __future__ import annotations


def _pct(d: dict) -> str:
    if d.get("mean") is None:
        return "-"
    return f"{100 * d['mean']:.1f} ± {100 * (d['std'] or 0):.1f}"


def _diff(d: dict | None, scale: float = 100.0, digits: int = 1) -> str:
    """A paired difference [95% CI] in points (default) or, with scale 1000 and no digits, ms."""
    if not d or d.get("mean") is None:
        return "-"

    def f(x: float) -> str:
        return f"{scale * x:+.{digits}f}"

    if d.get("ci_low") is None:
        return f"{f(d['mean'])} (n={d['n']}, no CI)"
    return f"{f(d['mean'])} [{f(d['ci_low'])}, {f(d['ci_high'])}]"


def trace_table(t: dict, classes: list[str]) -> list[str]:
    """Attainment per stack (overall, per class) against the best baseline, then the overall
    TTFT p99 against the baseline whose mean p99 is lowest (a candidate must match both)."""
    c = t["comparison"]
    keys = ["overall", *classes]
    best = c["best_baseline"]
    p99 = c.get("ttft_p99") or {"summary": {}, "vs_best_baseline": {}, "best_baseline": None}
    lines = [
        "| stack | "
        + " | ".join([f"{k} attainment %" for k in keys] + [f"{k} vs best" for k in keys])
        + " | TTFT p99 ms | TTFT p99 vs lowest baseline's, ms |",
        "|---|" + "---|" * (2 * len(keys) + 2),
    ]
    for name, summ in c["summary"].items():
        tag = f"{name} (best baseline)" if name == best else name
        diffs = c["vs_best_baseline"].get(name)
        ms = _diff(p99["vs_best_baseline"].get(name), 1000.0, 0)
        lowest = "lowest baseline" if name == p99["best_baseline"] else ms
        lines.append(
            f"| {tag} | "
            + " | ".join(_pct(summ[k]) for k in keys)
            + " | "
            + " | ".join(_diff(diffs[k]) if diffs else "-" for k in keys)
            + f" | {_ms(p99['summary'].get(name) or {})} | {lowest} |"
        )
    failed = [r for r in t["runs"] if r.get("error") or r.get("failed")]
    for r in failed[:5]:
        lines.append(f"\nrun {r['stack']} rep {r['rep']}: {r.get('error') or r.get('first_errors')}")
    return lines


def _ms(d: dict) -> str:
    if d.get("mean") is None:
        return "-"
    return f"{1000 * d['mean']:.0f} ± {1000 * (d['std'] or 0):.0f}"


def cache_table(t: dict, classes: tuple[str, ...] = ()) -> list[str]:
    """Per stack, mean ± std over repetitions: the prefix-cache hit rate from the engines' own
    counters (vLLM's prefix_cache_hits / prefix_cache_queries, the run's difference), TTFT
    p50/p99 overall and p99 per class, and overall attainment; the KV-event batches its router
    received (precise mode)."""
    from slocore.live_bench.stats import describe

    by: dict[str, list[dict]] = {}
    for r in t["runs"]:
        if not r.get("error"):
            by.setdefault(r["stack"], []).append(r)
    if not any(r.get("prefix_cache") for rs in by.values() for r in rs):
        return []
    per_class = [c for c in classes if any(c in (r.get("ttft_by_class") or {}) for rs in by.values() for r in rs)]
    lines = [
        "| stack | prefix-cache hit % (vLLM) | TTFT p50 ms | TTFT p99 ms | "
        + "".join(f"{c} TTFT p99 ms | " for c in per_class)
        + "attainment % | KV-event batches |",
        "|---|---|---|---|" + "---|" * len(per_class) + "---|---|",
    ]
    for name, rs in by.items():
        hit = describe(
            [
                100 * (r.get("prefix_cache") or {}).get("rate")
                for r in rs
                if (r.get("prefix_cache") or {}).get("rate") is not None
            ]
        )
        p50 = describe([r["ttft"]["p50"] for r in rs if r.get("ttft")])
        p99 = describe([r["ttft"]["p99"] for r in rs if r.get("ttft")])
        att = describe([(r.get("attainment") or {}).get("overall") for r in rs])
        ev = [sum(b["batches"] for b in (r.get("kv_events") or {}).values()) for r in rs]
        evs = f"{sum(ev) / len(ev):.0f}" if any(r.get("kv_events") for r in rs) else "-"
        hs = "-" if hit["mean"] is None else f"{hit['mean']:.1f} ± {hit['std']:.1f}"
        cls = "".join(
            _ms(describe([((r.get("ttft_by_class") or {}).get(c) or {}).get("p99") for r in rs])) + " | "
            for c in per_class
        )
        lines.append(f"| {name} | {hs} | {_ms(p50)} | {_ms(p99)} | {cls}{_pct(att)} | {evs} |")
    return lines


def capacity_source(t: dict) -> str:
    """Where a trace's capacity came from, with the measured probes (rate: attainment)."""
    src = t.get("capacity_from", "profile")
    if src != "measured":
        return {"given": "given", "profile": "the profiles' saturation estimate"}.get(src, src)

    from slocore.sim.matrix import CAPACITY_ATTAINMENT as EDGE

    def pct(att):
        return "-" if att is None else f"{att:.0%}"

    probed = t.get("capacity_probes", [])
    probes = ", ".join(f"{q['rate_req_s']:.1f}: {pct(q['attainment'])}" for q in probed)
    edge = "edge" if any((q["attainment"] or 0) < EDGE for q in probed) else "edge not reached (at least)"
    return f"measured: least_outstanding's {edge} at {EDGE:.0%} attainment; probes, req/s: attainment: {probes}"


def markdown(res: dict, classes: list[str], title: str = "") -> str:
    out = [f"## {title}" if title else "## slocore bench live", ""]
    for note in res.get("notes", []):
        out.append(f"- {note}")
    for s in res["settings"].values():
        for trace, t in s["traces"].items():
            la = [x for r in t["runs"] for x in (r.get("loadavg_start"), r.get("loadavg_end")) if x is not None]
            n = max((c["n"] for summ in t["comparison"]["summary"].values() for c in summ.values()), default=0)
            out += [
                "",
                f"### {trace}, engine scheduler: {s['engine_scheduler']}",
                "",
                f"{t['requests']} requests at {t['rate_req_s']:.2f} req/s (capacity {t['capacity_req_s']:.2f} req/s, "
                f"{capacity_source(t)}), "
                f"{n} paired repetitions; load average {min(la, default=0):.1f}-{max(la, default=0):.1f}. "
                "Attainment: mean ± std over repetitions; vs best: paired difference in points "
                "[95% CI]; TTFT p99: the same against the baseline with the lowest mean p99.",
                "",
                *trace_table(t, classes),
            ]
            extra = cache_table(t, tuple(classes))
            if extra:
                out += ["", *extra]
    for trace, c in (res.get("across_settings") or {}).items():
        n = max((x["n"] for summ in c["summary"].values() for x in summ.values()), default=0)
        out += [
            "",
            f"### {trace}, across engine schedulers (runs interleaved)",
            "",
            "Every (stack, engine scheduler) pair, against the best baseline router over the engine's own "
            f"scheduler, paired by repetition; {n} repetitions.",
            "",
            *trace_table({"comparison": c, "runs": []}, classes),
        ]
    return "\n".join(out) + "\n"
