"""Cache-aware vs cache-blind routing on prefix-sharing traffic (simulated), seeds 0-2.

    PYTHONPATH=python python bench/cache_routing_compare.py [--workload multi_turn_chat] [--rate 1.5]

Prints, per router, the prefix-cache hit rate (prompt tokens served from the cache / prompt
tokens admitted), TTFT p50/p99 and SLO attainment as mean +- std over the seeds. One
colocated cluster of `--instances` h100-llama2-7b engines, sarathi_fcfs, caching on."""

from __future__ import annotations

import argparse
import statistics as st

from slocore.sim import simulate, workloads

ROUTERS = ["round_robin", "least_outstanding", "llmd_scorer", "kv_router"]


def run(workload: str, rate: float, instances: int, seeds, size: int) -> list[str]:
    count = {"multi_turn_chat": "sessions", "agentic": "tasks"}.get(workload, "n")
    rows = ["| router | hit rate | TTFT p50 (s) | TTFT p99 (s) | attainment |", "|---|---|---|---|---|"]
    for router in ROUTERS:
        hit, p50, p99, att = [], [], [], []
        for seed in seeds:
            w = workloads.make_workload(workload, rate=rate, seed=seed, **{count: size})
            res = simulate(w, instances=instances, global_policy=router, profile="h100-llama2-7b")
            q = res.stats["prefix_query_tokens"]
            hit.append(res.stats["prefix_hit_tokens"] / q if q else 0.0)
            p50.append(res.summary["ttft"]["p50"])
            p99.append(res.summary["ttft"]["p99"])
            att.append(res.summary["attainment"])

        def f(xs, pct=False):
            k = 100.0 if pct else 1.0
            return f"{st.mean(xs) * k:.{1 if pct else 3}f} +- {st.pstdev(xs) * k:.{1 if pct else 3}f}"

        rows.append(f"| {router} | {f(hit, True)}% | {f(p50)} | {f(p99)} | {f(att, True)}% |")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="multi_turn_chat")
    ap.add_argument("--rate", type=float, default=1.5)
    ap.add_argument("--instances", type=int, default=4)
    ap.add_argument("--size", type=int, default=200)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    a = ap.parse_args()
    print(f"{a.workload} rate={a.rate} size={a.size} instances={a.instances} seeds={a.seeds}")
    print("\n".join(run(a.workload, a.rate, a.instances, a.seeds, a.size)))


if __name__ == "__main__":
    main()
