"""Reports a person reads: a table with units in the header, JSON, and a plot of
attainment and latency vs load like the papers' figures."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict

from slocore.sim.experiment import Row
from slocore.sim.scenarios import Scenario

COLUMNS = [
    ("attain %", lambda s: 100 * s["attainment"]),
    ("TTFT p50 s", lambda s: s["ttft"]["p50"]),
    ("TTFT p99 s", lambda s: s["ttft"]["p99"]),
    ("TPOT p50 ms", lambda s: 1e3 * s["tpot"]["p50"]),
    ("TPOT p99 ms", lambda s: 1e3 * s["tpot"]["p99"]),
    ("E2E mean s", lambda s: s["e2e"]["mean"]),
    ("TDG %", lambda s: 100 * s["tdg_ratio"]),
    ("tok/s", lambda s: s["throughput_tok_s"]),
    ("cost inst-s", lambda s: s["instance_seconds"]),
]


def aggregate(rows: list[Row]) -> dict[tuple[str, float], dict[str, float]]:
    """Mean over seeds of each column, per (variant, load)."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r.variant, r.load)].append(r.summary)
    return {k: {name: statistics.fmean(f(s) for s in v) for name, f in COLUMNS} for k, v in groups.items()}


def table(sc: Scenario, rows: list[Row]) -> str:
    agg = aggregate(rows)
    seeds = sorted({r.seed for r in rows})
    head = [f"load {sc.load_unit}", "variant"] + [c for c, _ in COLUMNS]
    lines = [head]
    for (variant, load), vals in sorted(agg.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        lines.append(
            [f"{load:g}", variant] + [f"{vals[c]:.3g}" if abs(vals[c]) < 1e4 else f"{vals[c]:.0f}" for c, _ in COLUMNS]
        )
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    out = [f"scenario: {sc.name} — {sc.description}", f"source: {sc.source}", f"seeds: {seeds}"]
    cfg = rows[0].config if rows else {}
    out.append(
        "cluster: "
        + ", ".join(
            f"{k}={cfg[k]}"
            for k in (
                "profile",
                "mode",
                "instances",
                "max_instances",
                "decode_model",
                "pd_first_token",
                "noise_sigma",
                "belief_scale",
            )
            if k in cfg and (k != "pd_first_token" or cfg.get("mode") == "pd")
        )
    )
    out.append("")
    for i, l in enumerate(lines):
        out.append("  ".join(x.rjust(w) for x, w in zip(l, widths)))
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    out.append("")
    out.append("policies and parameters:")
    seen = set()
    for r in rows:
        if r.variant in seen:
            continue
        seen.add(r.variant)
        pol = {k: v for k, v in r.config.items() if (k.endswith(("policy", "scheduler")) or k == "scaler") and v}
        if r.config.get("correction", "factor") != "factor":  # ProServe's correction factor is the default
            pol["correction"] = r.config["correction"]
        out.append(f"  {r.variant}: {pol}")
    if sc.headline:
        out.append(f"paper headline: {sc.headline}")
    return "\n".join(out)


def to_json(sc: Scenario, rows: list[Row]) -> str:
    return json.dumps(
        {
            "scenario": sc.name,
            "source": sc.source,
            "rows": [
                dict(
                    variant=r.variant,
                    load=r.load,
                    seed=r.seed,
                    summary=r.summary,
                    stats=r.stats,
                    config=r.config,
                    wall_s=r.wall_s,
                )
                for r in rows
            ],
        },
        indent=1,
        default=str,
    )


def plot(sc: Scenario, rows: list[Row], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise SystemExit("--plot needs matplotlib: pip install 'slocore[plot]'") from e
    agg = aggregate(rows)
    variants = sorted({v for v, _ in agg})
    panels = [
        ("attain %", "SLO attainment (%)"),
        ("E2E mean s", "mean E2E (s)"),
        ("TTFT p99 s", "P99 TTFT (s)"),
        ("cost inst-s", "cost (instance-s)"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4))
    for ax, (col, label) in zip(axes, panels):
        for v in variants:
            pts = sorted((l, vals[col]) for (vv, l), vals in agg.items() if vv == v)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=v)
        ax.set_xlabel(f"load ({sc.load_unit})")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{sc.name}: {sc.source}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
