"""Run the SIBYL experiments and write OUT/results.json (+ --plot PNGs) into the folder given
with -o (the repository keeps its copy in docs/sibyl/):

    python -m slocore.sim.sibyl_experiments -o OUT [--plot] [--only e2e,scale,...]

Each row: scenario, load, variant, TPOT mean/P99/P99.9 (ms), throughput (tok/s), optimal-
assignment ratio. Seed 0. Policies and parameters are those of scenarios_sibyl.py.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

from slocore.sim import scenarios as S
from slocore.sim import workloads
from slocore.sim.runner import simulate
from slocore.sim.sibyl_studies import calibration_error, optimal_assignment_ratio

PLAN = {
    "e2e": [("sibyl_e2e_random", (0.9, 1.1)), ("sibyl_e2e_sharegpt", (0.6, 0.75)), ("sibyl_e2e_zeta", (0.6, 0.75))],
    "scale": [
        ("sibyl_scale_sharegpt_64", (16.0,)),
        ("sibyl_scale_zeta_64", (16.0,)),
        ("sibyl_scale_sharegpt_128", (256.0,)),
        ("sibyl_scale_zeta_128", (256.0,)),
        ("sibyl_scale_sharegpt_256", (512.0,)),
        ("sibyl_scale_zeta_256", (512.0,)),
    ],
    "ablation": [("sibyl_ablation", (16.0,))],
    "combine": [("sibyl_combine", (1.6, 2.0))],
    "discrepancy": [("sibyl_discrepancy", (20.0, 25.0))],
}


def run_one(sc, load, variant, seed=0):
    kw = {**sc.cluster, **sc.variants[variant]}
    t = time.perf_counter()
    res = simulate(sc.workload(load, seed), seed=seed, **kw)
    p, d = kw["prefill_instances"], kw["decode_instances"]
    tp = res.summary["tpot"]
    return dict(
        scenario=sc.name,
        load=load,
        variant=variant,
        tpot_mean_ms=tp["mean"] * 1e3,
        tpot_p99_ms=tp["p99"] * 1e3,
        tpot_p999_ms=tp["p99.9"] * 1e3,
        throughput_tok_s=res.summary["throughput_tok_s"],
        ttft_p99_s=res.summary["ttft"]["p99"],
        optimal_ratio=optimal_assignment_ratio(res.recorder, range(p, p + d)),
        preemptions=res.stats["preemptions"],
        wall_s=time.perf_counter() - t,
        decode_policy=res.config["decode_policy"],
    )


def calibration_rows():
    rows = []
    for name in ("sibyl_random", "sibyl_sharegpt", "sibyl_zeta"):
        fn = workloads.WORKLOADS[name]
        train, test = fn(n=5000, seed=1).output_len, fn(n=5000, seed=2).output_len
        for alpha in (0.99, 0.999):
            rows.append(dict(workload=name, alpha=alpha, **calibration_error(train, test, alpha=alpha)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m slocore.sim.sibyl_experiments")
    ap.add_argument("-o", "--out", required=True, help="folder for results.json and the plots (created if needed)")
    ap.add_argument(
        "--only",
        default=",".join(PLAN) + ",calibration",
        help=f"comma-separated parts (default all: {', '.join(PLAN)}, calibration)",
    )
    ap.add_argument("--plot", action="store_true", help="also write one PNG per part (needs matplotlib)")
    a = ap.parse_args(argv)
    unknown = [p for p in a.only.split(",") if p not in PLAN and p != "calibration"]
    if unknown:
        ap.error(f"--only: unknown part(s) {', '.join(unknown)} (known: {', '.join(PLAN)}, calibration)")
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for part in a.only.split(","):
        if part == "calibration":
            results["calibration"] = calibration_rows()
        else:
            rows = []
            for name, loads in PLAN[part]:
                sc = S.get(name)
                for load in loads:
                    for v in sc.available_variants():
                        r = run_one(sc, load, v)
                        rows.append(r)
                        print(
                            f"{name:26s} {load:6g} {v:28s} mean {r['tpot_mean_ms']:8.1f} p99 {r['tpot_p99_ms']:9.1f} "
                            f"p99.9 {r['tpot_p999_ms']:9.1f} thr {r['throughput_tok_s']:8.0f} "
                            f"opt {r['optimal_ratio']:.3f} ({r['wall_s']:.0f}s)",
                            flush=True,
                        )
            results[part] = rows
        path.write_text(json.dumps(results, indent=1, default=str))
    if a.plot:
        plot(results, out)


def plot(results, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for part in ("e2e", "scale", "ablation", "combine", "discrepancy"):
        rows = results.get(part)
        if not rows:
            continue
        groups = sorted({(r["scenario"], r["load"]) for r in rows})
        fig, axes = plt.subplots(1, len(groups), figsize=(3.2 * len(groups), 3.4), squeeze=False)
        for ax, (sc, load) in zip(axes[0], groups):
            rs = [r for r in rows if r["scenario"] == sc and r["load"] == load]
            x = range(len(rs))
            ax.bar([i - 0.2 for i in x], [r["tpot_p99_ms"] for r in rs], 0.4, label="P99")
            ax.bar([i + 0.2 for i in x], [r["tpot_p999_ms"] for r in rs], 0.4, label="P99.9")
            ax.set_xticks(list(x), [r["variant"] for r in rs], rotation=60, ha="right", fontsize=7)
            ax.set_yscale("log")
            ax.set_title(f"{sc.replace('sibyl_', '')} @ {load:g} req/s", fontsize=8)
            ax.set_ylabel("TPOT (ms)")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"{part}.png", dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    main()
