"""What a scale-out's weight-loading time is worth in SLO attainment: HFX's scaler on the
sustained 4-task set (`hfx_scaling_sustained`: HFX dispatch, Sarathi engines, 2 Ascend
910B + Qwen-7B instances scaling to 4) with each cold start, HFX Table 2's sources by name
or measured seconds (docs/scaling.md, "On a GPU").

    PYTHONPATH=python python bench/coldstart_whatif.py --loads 200,300 \\
        --cold-starts d2d,host,disk,0.294,3.93,9.44
"""

from __future__ import annotations

import argparse
import statistics
from concurrent.futures import ProcessPoolExecutor

from slocore.sim import simulate, workloads
from slocore.sim.scenarios_hfx import CLUSTER, SCALING


def run(job) -> float:
    cold, seed, load = job
    w = workloads.hfx_4task(rate=load, n_per_task=1500, seed=seed)
    return simulate(w, seed=seed, global_policy="hfx", **{**SCALING, "cold_start": cold}, **CLUSTER).summary[
        "attainment"
    ]


def _cold(text: str):
    """Seconds (finite, >= 0) or one of HFX Table 2's sources."""
    from slocore.sim.runner import COLD_START_S

    known = sorted({src for row in COLD_START_S.values() for src in row})
    try:
        x = float(text)
    except ValueError:
        if text not in known:
            raise argparse.ArgumentTypeError(f"{text!r} is neither seconds nor one of {', '.join(known)}") from None
        return text
    if not (x >= 0 and x != float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r}: seconds must be finite and >= 0")
    return x


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loads", default="200,300", help="QPS, comma-separated")
    ap.add_argument("--cold-starts", default="d2d,host,disk,0.294,3.93,9.44")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--processes", type=int, default=2)
    a = ap.parse_args(argv)
    loads = [float(x) for x in a.loads.split(",") if x]
    try:
        colds = [_cold(x) for x in a.cold_starts.split(",") if x]
    except argparse.ArgumentTypeError as e:
        ap.error(f"--cold-starts: {e}")
    seeds = [int(x) for x in a.seeds.split(",") if x]
    jobs = [(c, s, load) for load in loads for c in colds for s in seeds]
    with ProcessPoolExecutor(a.processes) as ex:
        out = iter(list(ex.map(run, jobs)))
    print("| QPS | cold start | attainment % (mean) | per seed |")
    print("|---:|---|---:|---|")
    for load in loads:
        for c in colds:
            v = [100 * next(out) for _ in seeds]
            name = f"{c:g} s" if isinstance(c, float) else f"{c} (Table 2)"
            print(f"| {load:g} | {name} | {statistics.mean(v):.1f} | {' / '.join(f'{x:.1f}' for x in v)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
