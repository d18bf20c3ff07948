"""Markdown tables over seeds from `slocore simulate --json` output: per load and variant,
attainment mean ± standard deviation with the per-seed values, and P99 TTFT/TPOT and cost
means. Used for the paper pages (docs/hfx.md, docs/slice_proserve.md, docs/sibyl.md).

    slocore simulate --scenario hfx_fig3_4task --seeds 0,1,2 --variants rr,hfx,rr+edf --json > run.json
    python -m slocore.sim.seed_table run.json [--metric attainment|tpot_p99|ttft_p99|tdg_ratio]
"""

from __future__ import annotations

import json
import statistics
import sys

METRICS = {
    "attainment": (lambda s: 100 * s["attainment"], "attain %", "{:.1f}"),
    "tdg_ratio": (lambda s: 100 * s["tdg_ratio"], "TDG %", "{:.1f}"),
    "ttft_p99": (lambda s: s["ttft"]["p99"], "TTFT p99 s", "{:.3g}"),
    "tpot_p99": (lambda s: 1e3 * s["tpot"]["p99"], "TPOT p99 ms", "{:.4g}"),
    "tpot_p999": (lambda s: 1e3 * s["tpot"].get("p99.9", s["tpot"]["p99"]), "TPOT p99.9 ms", "{:.4g}"),
}


def table(data: dict, metric: str = "attainment", extra=("ttft_p99", "tpot_p99")) -> str:
    f, label, fmt = METRICS[metric]
    groups: dict = {}
    for r in data["rows"]:
        groups.setdefault((r["load"], r["variant"]), []).append(r)
    head = (
        ["load", "variant", f"{label} mean ± sd", "per seed"]
        + [METRICS[e][1] + " (mean)" for e in extra]
        + ["cost inst-s"]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    order = list(dict.fromkeys(r["variant"] for r in data["rows"]))
    for load in sorted({k[0] for k in groups}):
        for v in order:
            rs = sorted(groups.get((load, v), []), key=lambda r: r["seed"])
            if not rs:
                continue
            xs = [f(r["summary"]) for r in rs]
            sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
            cells = [
                f"{load:g}",
                v,
                f"{fmt.format(statistics.fmean(xs))} ± {fmt.format(sd)}",
                " / ".join(fmt.format(x) for x in xs),
            ]
            for e in extra:
                cells.append(fmt_e(METRICS[e], rs))
            cells.append(f"{statistics.fmean(r['summary']['instance_seconds'] for r in rs):.3g}")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fmt_e(m, rs) -> str:
    f, _, fmt = m
    return fmt.format(statistics.fmean(f(r["summary"]) for r in rs))


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m slocore.sim.seed_table")
    p.add_argument("json")
    p.add_argument("--metric", default="attainment", choices=list(METRICS))
    p.add_argument("--extra", default="ttft_p99,tpot_p99", help="comma-separated metrics shown as means")
    a = p.parse_args(argv)
    with open(a.json) as fh:
        data = json.load(fh)
    print(table(data, a.metric, tuple(x for x in a.extra.split(",") if x)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
