"""Markdown tables of a ``slocore bench live`` result: per engine setting and trace, each
stack's mean attainment +- its standard deviation over repetitions (overall and per class),
and its paired difference against the best baseline with the 95% confidence interval."""

from __future__ import annotations


def _pct(d: dict) -> str:
    if d.get("mean") is None:
        return "-"
    return f"{100 * d['mean']:.1f} ± {100 * (d['std'] or 0):.1f}"


def _diff(d: dict | None) -> str:
    if not d or d.get("mean") is None:
        return "-"
    if d.get("ci_low") is None:
        return f"{100 * d['mean']:+.1f} (n={d['n']}, no CI)"
    return f"{100 * d['mean']:+.1f} [{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}]"


def trace_table(t: dict, classes: list[str]) -> list[str]:
    c = t["comparison"]
    keys = ["overall", *classes]
    best = c["best_baseline"]
    lines = [
        "| stack | " + " | ".join([f"{k} attainment %" for k in keys] + [f"{k} vs best" for k in keys]) + " |",
        "|---|" + "---|" * (2 * len(keys)),
    ]
    for name, summ in c["summary"].items():
        tag = f"{name} (best baseline)" if name == best else name
        diffs = c["vs_best_baseline"].get(name)
        lines.append(
            f"| {tag} | "
            + " | ".join(_pct(summ[k]) for k in keys)
            + " | "
            + " | ".join(_diff(diffs[k]) if diffs else "-" for k in keys)
            + " |"
        )
    failed = [r for r in t["runs"] if r.get("error") or r.get("failed")]
    for r in failed[:5]:
        lines.append(f"\nrun {r['stack']} rep {r['rep']}: {r.get('error') or r.get('first_errors')}")
    return lines


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
                f"{t['requests']} requests at {t['rate_req_s']:.2f} req/s (capacity {t['capacity_req_s']:.2f} req/s), "
                f"{n} paired repetitions; load average {min(la, default=0):.1f}-{max(la, default=0):.1f}. "
                "Attainment: mean ± std over repetitions; vs best: paired difference in points "
                "[95% CI].",
                "",
                *trace_table(t, classes),
            ]
    return "\n".join(out) + "\n"
