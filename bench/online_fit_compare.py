"""The `slocore` preset with its engines' online fit off and on, on chosen matrix cells:

    PYTHONPATH=python python bench/online_fit_compare.py hfx_4task,rag 1.2,1.5 exact,shape

Seeds 0-2, the matrix's capacities (found once per workload, as `slocore bench matrix` does)
and run sizes; prints attainment (%) per cell, each seed, and the difference of the means.
`online_fit=False` falls back to ProServe's single correction factor (docs/design.md 4.6)."""

import argparse
import statistics
import time
from multiprocessing import Pool

from slocore.sim import matrix
from slocore.sim.runner import simulate

SEEDS = (0, 1, 2)


def run(job):
    wl_name, load, err, seed, fit, cap = job
    wl = matrix.WORKLOADS[wl_name]
    kw = {**wl.cluster, **matrix.stack_kwargs("slocore", wl), **matrix.error_kwargs(err, wl), "online_fit": fit}
    rate_arg, n = matrix.run_size(cap, load, matrix.MatrixConfig.duration_s)  # the matrix's default window
    return job[:5], 100 * simulate(wl.make(rate_arg, seed, n), seed=seed, **kw).summary["attainment"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads")
    ap.add_argument("loads")
    ap.add_argument("errors")
    ap.add_argument("--processes", type=int, default=2)
    a = ap.parse_args()
    wls, loads, errs = a.workloads.split(","), [float(x) for x in a.loads.split(",")], a.errors.split(",")
    t = time.perf_counter()
    caps = {w: matrix.capacity(w) for w in wls}
    jobs = [(w, l, e, s, f, caps[w]) for w in wls for l in loads for e in errs for f in (False, True) for s in SEEDS]
    with Pool(a.processes) as p:
        out = dict(p.map(run, jobs))
    print("| workload | load | error | one factor: mean (seeds) | online fit: mean (seeds) | difference |")
    print("|---|---|---|---|---|---|")
    for w in wls:
        for l in loads:
            for e in errs:
                off = [out[(w, l, e, s, False)] for s in SEEDS]
                on = [out[(w, l, e, s, True)] for s in SEEDS]
                fmt = lambda xs: f"{statistics.fmean(xs):.1f} ({' / '.join(f'{x:.1f}' for x in xs)})"  # noqa: E731
                d = statistics.fmean(on) - statistics.fmean(off)
                print(f"| {w} | {l:g}x | {e} | {fmt(off)} | {fmt(on)} | {d:+.1f} |")
    print(f"\n{len(jobs)} runs in {time.perf_counter() - t:.0f} s")


if __name__ == "__main__":
    main()
