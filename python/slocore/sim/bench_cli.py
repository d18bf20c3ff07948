"""`slocore presets` and `slocore bench matrix` (wired into slocore.cli)."""

from __future__ import annotations

import json
import shlex
import sys

from slocore.cli_args import names, positive_floats, positive_int, seeds


def presets_main(a) -> int:
    from slocore.sim import stacks

    ps = stacks.presets(kind=a.kind)
    if a.json:
        print(
            json.dumps(
                {
                    n: {
                        "kind": p.kind,
                        "description": p.description,
                        "source": p.source,
                        "colocated": p.colocated,
                        "pd": p.pd,
                        "tags": list(p.tags),
                    }
                    for n, p in ps.items()
                },
                indent=1,
                default=str,
            )
        )
        return 0
    for n, p in ps.items():
        print(f"{n:36s} [{p.kind}] {p.description}")
        print(f"{'':36s}   source: {p.source}")
        print(f"{'':36s}   {stacks.describe(n)}")
    missing = sorted(set(stacks.presets(kind=a.kind, include_unavailable=True)) - set(ps))
    if missing:
        print(f"(not in this build: {', '.join(missing)})")
    return 0


def add_presets_parser(sub) -> None:
    pr = sub.add_parser("presets", help="list named stacks (global policy / P-D pair, engine scheduler, parameters)")
    pr.add_argument("--kind", choices=["baseline", "paper", "slocore"], help="only this kind")
    pr.add_argument("--json", action="store_true")
    pr.set_defaults(func=presets_main)


def add_matrix_arguments(p) -> None:
    from slocore.sim import matrix

    p.add_argument("--presets", type=names, help="comma-separated presets (default: baselines + paper stacks)")
    p.add_argument("--workloads", type=names, help=f"comma-separated (known: {', '.join(matrix.WORKLOADS)})")
    p.add_argument(
        "--loads",
        type=positive_floats,
        default=list(matrix.LOADS),
        help="fractions of each workload's capacity (default 0.5,0.8,1,1.2)",
    )
    p.add_argument("--seeds", type=seeds, default=list(matrix.SEEDS))
    p.add_argument("--errors", type=names, default=list(matrix.ERRORS), help="predictor errors: exact,pm20,shape")
    p.add_argument(
        "--duration",
        type=float,
        default=30.0,
        help="seconds of arrivals per run (requests = rate x duration; default 30)",
    )
    p.add_argument(
        "--probe-requests", dest="probe_n", type=positive_int, help="capacity probe size (default: per workload)"
    )
    p.add_argument("--processes", type=positive_int, default=2, help="parallel worker processes (default 2)")
    p.add_argument(
        "--pd-first-token",
        dest="pd_first_token",
        choices=matrix.PD_FIRST_TOKEN,
        default="prefill",
        help="P/D runs date the first token at the prefill's end (default; DistServe's, SIBYL's) or at the "
        "decode's first step (where a client behind vLLM's P/D proxy sees it); capacities are found the same way",
    )
    p.add_argument("--full", action="store_true", help="every preset and workload, 5 seeds, 60 s of arrivals")
    p.add_argument("--out", default="matrix-out", help="directory for matrix.json, matrix.md, matrix.png")
    p.add_argument("--no-plot", dest="plot", action="store_false", help="skip the heatmap")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--merge",
        nargs="+",
        metavar="MATRIX_JSON",
        help="run nothing: merge these matrix.json outputs (parts of one matrix) into --out",
    )
    p.add_argument(
        "--rerun-baselines-per-error",
        dest="reuse_model_free",
        action="store_false",
        help="run the model-free baselines under every error (default: their runs under the first error stand "
        "for the others; they use no latency model)",
    )
    p.add_argument(
        "--copy-exact-baselines",
        action="store_true",
        help="with --merge: a baseline cell of the exact predictor stands for every error (no latency model)",
    )
    p.set_defaults(func=matrix_main)


def matrix_main(a) -> int:
    from slocore.sim import matrix

    command = "slocore " + " ".join(shlex.quote(x) for x in sys.argv[1:]) if sys.argv[1:] else "slocore bench matrix"
    if a.merge:
        from slocore.sim.matrix_merge import merge

        m = merge(a.merge, copy_exact_baselines=a.copy_exact_baselines)
    elif a.copy_exact_baselines:
        raise ValueError("--copy-exact-baselines: only with --merge")
    else:
        m = _run(a)
    paths = matrix.write(m, a.out, command=command, plot=a.plot)
    for s in sorted(m["summary"], key=lambda s: -s["mean_vs_strongest"]):
        print(
            f"{s['preset']:36s} vs strongest baseline: mean {100 * s['mean_vs_strongest']:+.1f} pp "
            f"(min {100 * s['min_vs_strongest']:+.1f}, max {100 * s['max_vs_strongest']:+.1f}; "
            f"won {s['won']}, lost {s['lost']} of {s['cells']} cells)"
            + (
                f"; TTFT p99 {s['ttft_p99_ratio_median']:.2f}x the strongest's (median; "
                f"max {s['ttft_p99_ratio_max']:.2f}x, worse in {s['ttft_p99_worse']} cells)"
                if s.get("ttft_p99_ratio_median") is not None
                else ""
            )
        )
    print(f"{m['runs']} runs in {m['wall_s']:.0f} s; wrote {', '.join(paths.values())}", file=sys.stderr)
    return 0


def _run(a) -> dict:
    from slocore.sim import matrix

    seeds, duration = a.seeds, a.duration
    if a.full:
        seeds = seeds if seeds != list(matrix.SEEDS) else [0, 1, 2, 3, 4]
        duration = duration if duration != 30.0 else 60.0
    cfg = matrix.MatrixConfig(
        presets=tuple(a.presets or ()),
        workloads=tuple(a.workloads or ()),
        loads=tuple(a.loads),
        seeds=tuple(seeds),
        errors=tuple(a.errors),
        duration_s=duration,
        probe_n=a.probe_n,
        processes=a.processes,
        full=a.full,
        reuse_model_free=a.reuse_model_free,
        pd_first_token=a.pd_first_token,
    )
    return matrix.run_matrix(cfg, progress=not a.quiet)
