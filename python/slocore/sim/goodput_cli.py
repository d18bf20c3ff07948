"""`slocore bench goodput` (wired into slocore.cli): the goodput search of sim/goodput.py."""

from __future__ import annotations

import shlex
import sys

from slocore.cli_args import names, positive_int, seeds
from slocore.roles import PD_FIRST_TOKEN


def _floors(paths: list[str]) -> dict:
    from slocore.sim import goodput

    out = {}
    for path in paths:
        for key, f in goodput.floors_from(path).items():
            if key not in out or f[0] > out[key][0]:
                out[key] = f
    return out


def add_arguments(p) -> None:
    from slocore.sim import goodput, matrix

    p.add_argument(
        "--stacks",
        type=names,
        help="comma-separated presets (default: slocore + every baseline of each workload's mode)",
    )
    p.add_argument(
        "--workloads", type=names, help=f"comma-separated (default: the matrix's; known: {', '.join(matrix.WORKLOADS)})"
    )
    p.add_argument(
        "--errors",
        type=names,
        default=list(goodput.GOODPUT_ERRORS),
        help=f"predictor errors (default {','.join(goodput.GOODPUT_ERRORS)}; known: {','.join(matrix.ERRORS)})",
    )
    p.add_argument("--seeds", type=seeds, default=list(matrix.SEEDS), help="comma-separated seeds (default 0,1,2)")
    p.add_argument(
        "--duration", type=float, default=30.0, help="seconds of arrivals per run (as the matrix; default 30)"
    )
    p.add_argument("--probe-requests", dest="probe_n", type=int, help="capacity probe size (default: per workload)")
    p.add_argument("--processes", type=positive_int, default=1, help="parallel worker processes (default 1)")
    p.add_argument(
        "--capacities",
        help="reuse the capacities of this matrix.json or goodput.json (same --duration) instead of probing",
    )
    p.add_argument(
        "--prune-from",
        dest="prune_from",
        nargs="+",
        metavar="GOODPUT_JSON",
        help="parts' goodput.json: start the baseline chain from their strongest baseline (to search more baselines)",
    )
    p.add_argument(
        "--pd-first-token",
        dest="pd_first_token",
        choices=PD_FIRST_TOKEN,
        default="prefill",
        help="P/D runs date a request's first token at the prefill's end (default) or at the decode's first step, "
        "where a client behind vLLM's P/D proxy sees it (as the matrix's option)",
    )
    p.add_argument("--no-prune", dest="prune", action="store_false", help="search every baseline in full")
    p.add_argument(
        "--rerun-baselines-per-error",
        dest="copy_exact_baselines",
        action="store_false",
        help="run the baselines under every error (default: their exact runs stand for every error; no latency model)",
    )
    p.add_argument(
        "--merge",
        nargs="+",
        metavar="GOODPUT_JSON",
        help="run nothing: merge these goodput.json outputs (parts, e.g. one workload each) into --out",
    )
    p.add_argument("--out", default="goodput-out", help="directory for goodput.json and goodput.md")
    p.add_argument("--quiet", action="store_true", help="no progress bar or probe log")
    p.set_defaults(func=main)


def main(a) -> int:
    from slocore.sim import goodput

    command = "slocore " + " ".join(shlex.quote(x) for x in sys.argv[1:]) if sys.argv[1:] else "slocore bench goodput"
    if a.merge:
        g = goodput.merge(a.merge)
        paths = goodput.write(g, a.out, command=command)
        for s in g["summary"]:
            print(s["line"])
        print(f"merged {len(a.merge)} parts; wrote {', '.join(paths.values())}", file=sys.stderr)
        return 0
    caps = {}
    if a.capacities:
        c = goodput.load_capacities(a.capacities)
        if c["duration_s"] is not None and c["duration_s"] != a.duration:
            raise ValueError(
                f"--capacities {a.capacities}: found over {c['duration_s']:g} s windows, --duration is {a.duration:g}"
            )
        if c["pd_first_token"] is not None and c["pd_first_token"] != a.pd_first_token:
            raise ValueError(
                f"--capacities {a.capacities}: found with the first token dated at the {c['pd_first_token']}, "
                f"--pd-first-token is {a.pd_first_token}"
            )
        caps = c["capacity"]
    cfg = goodput.GoodputConfig(
        stacks=tuple(a.stacks or ()),
        workloads=tuple(a.workloads or ()),
        errors=tuple(a.errors),
        seeds=tuple(a.seeds),
        duration_s=a.duration,
        probe_n=a.probe_n,
        processes=a.processes,
        prune=a.prune,
        copy_exact_baselines=a.copy_exact_baselines,
        pd_first_token=a.pd_first_token,
        capacities=caps,
        floors=_floors(a.prune_from or []),
    )
    g = goodput.run_goodput(cfg, progress=not a.quiet)
    paths = goodput.write(g, a.out, command=command)
    for s in g["summary"]:
        print(s["line"])
    print(f"{g['runs']} runs in {g['wall_s']:.0f} s; wrote {', '.join(paths.values())}", file=sys.stderr)
    return 0
