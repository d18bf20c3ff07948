"""Why the matrix's old burst probe underestimated capacity: for each default matrix workload,
the old probe's rate (completions between the 10th and 70th percentile of finish times when
the whole probe arrives at once) against what the cluster sustains under Poisson/real arrivals.
Per offered rate (multiples of the probe) it runs a reference stack for `--duration` s of
arrivals (seed 0) and prints attainment, the completion rate over the arrival window, and the
TTFT p50 of the first and last fifth of arrivals (a queue that grows shows a rising TTFT):

    PYTHONPATH=python python bench/capacity_diagnosis.py [--stack least_outstanding+vllm_priority] [--mult 1,1.5,2,3,4]
"""

import argparse
import statistics

from slocore.sim import matrix
from slocore.sim.runner import simulate


def probe_rate(wl):
    """The old definition (matrix.py before the bisection): saturated completion rate of a burst."""
    burst = wl.make(1e6, 0, wl.probe_n)
    res = simulate(burst, seed=0, **{**wl.cluster, **matrix.stack_kwargs("least_outstanding+sarathi_fcfs", wl)})
    done = sorted(r.token_times[-1] for r in res.recorder.records() if len(r.token_times))
    lo, hi = int(0.1 * len(done)), int(0.7 * len(done))
    return (hi - 1 - lo) / (done[hi - 1] - done[lo])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default=",".join(n for n, w in matrix.WORKLOADS.items() if not w.full_only))
    ap.add_argument("--stack", default="least_outstanding+vllm_priority")
    ap.add_argument("--mult", default="1,1.5,2,3,4")
    ap.add_argument("--duration", type=float, default=30.0)
    a = ap.parse_args()
    print(
        "| workload | probe req/s | x probe | offered req/s | attainment % | done/s in arrival window "
        "| TTFT p50 first/last fifth s |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in a.workloads.split(","):
        wl = matrix.WORKLOADS[name]
        c0 = probe_rate(wl)
        unit = wl.make(1.0, 0, wl.probe_n)
        per = float(unit.arrival[-1] - unit.arrival[0]) / (len(unit) - 1)
        for m in (float(x) for x in a.mult.split(",")):
            rate = m * c0
            w = wl.make(rate * per, 0, max(10, int(rate * a.duration)))
            res = simulate(w, seed=0, **{**wl.cluster, **matrix.stack_kwargs(a.stack, wl)})
            recs = sorted(res.recorder.records(), key=lambda r: r.request.arrival)
            t0, t1 = recs[0].request.arrival, recs[-1].request.arrival
            done = sum(1 for r in recs if len(r.token_times) and r.token_times[-1] <= t1)
            k = max(1, len(recs) // 5)

            def p50(rs):
                return statistics.median(r.token_times[0] - r.request.arrival for r in rs if len(r.token_times))

            print(
                f"| {name} | {c0:.1f} | {m:g} | {len(recs) / (t1 - t0):.1f} | {100 * res.summary['attainment']:.1f} "
                f"| {done / (t1 - t0):.1f} | {p50(recs[:k]):.2f} / {p50(recs[-k:]):.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
