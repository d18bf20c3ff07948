"""The overload triage alone: one matrix workload (seed 0, 30 s of arrivals at each rate),
least-outstanding dispatch over `vllm_priority`, `slo_triage` and `slo_triage` without its
TPOT guard; attainment, TTFT attainment and TPOT p99:

    PYTHONPATH=python python bench/slo_triage_compare.py sharegpt_prio 50,70,90,120
"""

import sys

from slocore.sim import matrix, simulate

ENGINES = {
    "vllm_priority": "vllm_priority",
    "slo_triage": "slo_triage",
    "slo_triage(tpot_guard=0)": ("slo_triage", {"tpot_guard": False}),
}


def main():
    name, rates = sys.argv[1], [float(x) for x in sys.argv[2].split(",")]
    wl = matrix.WORKLOADS[name]
    per = matrix.rate_arg_per_req_s(wl, wl.probe_n)
    for rate in rates:
        w = wl.make(rate * per, 0, int(rate * 30))
        row = []
        for label, engine in ENGINES.items():
            kw = {**wl.cluster, **matrix.stack_kwargs("least_outstanding+vllm_priority", wl), "batch_scheduler": engine}
            s = simulate(w, seed=0, **kw).summary
            row.append(
                f"{label} {100 * s['attainment']:.1f}% (TTFT {100 * s['ttft_attainment']:.0f}%, "
                f"TPOT p99 {1e3 * s['tpot']['p99']:.0f} ms)"
            )
        print(f"{name} {rate:g} req/s: " + " | ".join(row), flush=True)


if __name__ == "__main__":
    main()
