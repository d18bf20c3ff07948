"""Why a goodput target is missed: at the load the target needs (1.3x the strongest
baseline's goodput), how many requests could a stack still have served on time?

For each workload where `slocore`'s goodput ratio is under 1.3 in a `slocore bench goodput`
report, runs `slocore` and that workload's strongest baseline at 1.3x the baseline's goodput
(seeds of the report, exact predictor) and prints, means over seeds:
- attainment, and its TTFT and TPOT parts (sim/metrics: one definition);
- started: the share of requests whose first token came before the last arrival plus their
  own TTFT SLO. A request started later missed its TTFT whatever the order, so where the
  attainment is close to `started`, the stack lost only requests its throughput could not
  reach in the window: more attainment there needs more throughput (or an order that starts
  more requests), not better choices among those it served.

    PYTHONPATH=python python bench/goodput_headroom.py /tmp/s33/gp/goodput.json [--processes 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
from concurrent.futures import ProcessPoolExecutor

from slocore.sim import matrix
from slocore.sim.runner import simulate

TARGET = 1.3


def run(job) -> tuple[float, float, float, float]:
    wl_name, cap, load, seed, stack, duration_s = job
    wl = matrix.WORKLOADS[wl_name]
    rate, n = matrix.run_size(cap, load, duration_s)
    res = simulate(wl.make(rate, seed, n), seed=seed, **wl.cluster, **matrix.stack_kwargs(stack, wl))
    recs = res.recorder.records()
    last = max(r.request.arrival for r in recs)
    started = sum(1 for r in recs if len(r.token_times) and r.token_times[0] < last + r.request.slo.ttft)
    s = res.summary
    return s["attainment"], s["ttft_attainment"], s["tpot_attainment"], started / len(recs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("goodput_json", help="a `slocore bench goodput` report (goodput.json)")
    ap.add_argument("--processes", type=int, default=2)
    a = ap.parse_args(argv)
    try:
        with open(a.goodput_json) as f:
            g = json.load(f)
        seeds, caps, rows, dur = g["config"]["seeds"], g["capacity"], g["vs_strongest"], g["config"]["duration_s"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        ap.error(f"{a.goodput_json}: not a readable `slocore bench goodput` report ({type(e).__name__}: {e})")
    missed = [v for v in rows if v["preset"] == "slocore" and v["error"] == "exact" and v["ratio"] < TARGET]
    cells = [
        (v["workload"], TARGET * v["strongest_load"], st) for v in missed for st in ("slocore", v["strongest_baseline"])
    ]
    jobs = [(w, caps[w], load, seed, st, dur) for w, load, st in cells for seed in seeds]
    with ProcessPoolExecutor(a.processes) as ex:
        out = list(ex.map(run, jobs))
    print("| workload | load x cap | stack | attainment % | TTFT met % | TPOT met % | started in time % |")
    print("|---|---|---|---|---|---|---|")
    for i, (w, load, st) in enumerate(cells):
        per_seed = out[i * len(seeds) : (i + 1) * len(seeds)]
        m = [100 * statistics.mean(x[k] for x in per_seed) for k in range(4)]
        print(f"| {w} | {load:.3f} | {st} | {m[0]:.1f} | {m[1]:.1f} | {m[2]:.1f} | {m[3]:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
