"""The overload triage alone: one matrix workload (30 s of arrivals at each rate, each seed),
least-outstanding dispatch over `vllm_priority`, `slo_triage` without and with Moore-Hodgson's
demotion (`count_optimal` 0: the greedy split; 1) and with it but without the TPOT guard;
attainment, TTFT attainment and TPOT p99 per seed, then the mean attainment over seeds:

    PYTHONPATH=python python bench/slo_triage_compare.py sharegpt_prio 75.4,90.4,113.1 0,1,2
"""

import sys

import numpy as np

from slocore.sim import matrix, simulate

ENGINES = {
    "vllm_priority": "vllm_priority",
    "slo_triage(count_optimal=0)": ("slo_triage", {"count_optimal": False}),
    "slo_triage(count_optimal=1)": ("slo_triage", {"count_optimal": True}),
    "slo_triage(count_optimal=1,tpot_guard=0)": ("slo_triage", {"count_optimal": True, "tpot_guard": False}),
}


def main():
    name, rates = sys.argv[1], [float(x) for x in sys.argv[2].split(",")]
    seeds = [int(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else [0]
    wl = matrix.WORKLOADS[name]
    per = matrix.rate_arg_per_req_s(wl, wl.probe_n)
    for rate in rates:
        att = {label: [] for label in ENGINES}
        for seed in seeds:
            w = wl.make(rate * per, seed, int(rate * 30))
            row = []
            for label, engine in ENGINES.items():
                kw = {
                    **wl.cluster,
                    **matrix.stack_kwargs("least_outstanding+vllm_priority", wl),
                    "batch_scheduler": engine,
                }
                s = simulate(w, seed=seed, **kw).summary
                att[label].append(100 * s["attainment"])
                row.append(
                    f"{label} {100 * s['attainment']:.1f}% (TTFT {100 * s['ttft_attainment']:.0f}%, "
                    f"TPOT p99 {1e3 * s['tpot']['p99']:.0f} ms)"
                )
            print(f"{name} {rate:g} req/s seed {seed}: " + " | ".join(row), flush=True)
        means = " | ".join(f"{label} {np.mean(v):.1f}%" for label, v in att.items())
        print(f"{name} {rate:g} req/s mean over seeds {seeds}: {means}", flush=True)


if __name__ == "__main__":
    main()
