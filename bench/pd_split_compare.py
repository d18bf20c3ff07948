"""A P/D split sized in advance against the slocore preset's run-time rebalancing.

    PYTHONPATH=python python bench/pd_split_compare.py [--workload hfx_4task_pd] [--loads 1.2,1.5]

Runs the matrix's workload at fractions of its capacity (found as `slocore bench matrix`
finds it) on its own prefill/decode split and on every other split of the same instance
count, for the strongest baselines and `slocore`, seeds 0-2; prints mean attainment and
its spread (standard deviation over seeds). docs/benchmark.md, "P/D rebalancing".
"""

from __future__ import annotations

import argparse

import numpy as np

from slocore.sim import matrix as M
from slocore.sim.runner import simulate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="hfx_4task_pd")
    ap.add_argument("--loads", default="1.2,1.5")
    ap.add_argument("--presets", default="vllm_priority,least_outstanding+vllm_priority,slocore")
    ap.add_argument("--seeds", default="0,1,2")
    a = ap.parse_args()
    pd_names = [n for n, w in M.WORKLOADS.items() if w.mode == "pd"]
    if a.workload not in pd_names:
        raise SystemExit(f"--workload: {a.workload!r} is not a P/D matrix workload (known: {', '.join(pd_names)})")
    try:
        loads = [float(x) for x in a.loads.split(",")]
        seeds = [int(x) for x in a.seeds.split(",")]
    except ValueError as e:
        raise SystemExit(f"--loads/--seeds: comma-separated numbers ({e})") from None
    wl = M.WORKLOADS[a.workload]
    cap = M.capacity(a.workload)
    per, total = cap["rate_arg_per_req_s"], M._instances(wl)
    print(f"{a.workload}: capacity {cap['req_s']:.1f} req/s, {total} instances")
    for load in loads:
        rate = cap["req_s"] * load
        n = max(10, int(round(rate * 30.0)))
        for p in a.presets.split(","):
            for prefill in range(1, total):
                split = dict(prefill_instances=prefill, decode_instances=total - prefill)
                att = []
                for seed in seeds:
                    kw = {**wl.cluster, **M.stack_kwargs(p, wl), **split}
                    att.append(simulate(wl.make(rate * per, seed, n), seed=seed, **kw).summary["attainment"])
                m, sd = 100 * np.mean(att), 100 * np.std(att)
                print(f"{load}x {p:34s} {prefill}P+{total - prefill}D  {m:5.1f} ± {sd:.1f}")


if __name__ == "__main__":
    main()
