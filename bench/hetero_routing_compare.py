"""Routing on a mixed cluster (simulated), seeds 0-2: 2 x h100-llama2-7b + 2 x
rtx4060ti-chatglm2-6b-int4, sharegpt_like at 12 req/s (1,500 requests), sarathi_fcfs.

    PYTHONPATH=python python bench/hetero_routing_compare.py

Prints the share of requests served by the two fast instances and the SLO attainment,
mean +- std over the seeds."""

import statistics as st

from slocore.sim import simulate, workloads

PROFILES = ["h100-llama2-7b"] * 2 + ["rtx4060ti-chatglm2-6b-int4"] * 2


def main():
    print("| router | share on the fast instances | attainment |\n|---|---|---|")
    for pol in ["round_robin", "least_outstanding", "goroute", "kv_router", "llmd_scorer"]:
        att, fast = [], []
        for seed in (0, 1, 2):
            r = simulate(workloads.sharegpt_like(rate=12.0, n=1500, seed=seed), profile=PROFILES, global_policy=pol)
            inst = [rec.instance for rec in r.recorder.records()]
            fast.append(sum(i in (0, 1) for i in inst) / len(inst))
            att.append(r.summary["attainment"])
        print(
            f"| {pol} | {100 * st.mean(fast):.1f} ± {100 * st.pstdev(fast):.1f}% "
            f"| {100 * st.mean(att):.1f} ± {100 * st.pstdev(att):.1f}% |"
        )


if __name__ == "__main__":
    main()
