"""Simulator speed: simulated requests per wall second (one core, the event loop is C++).

Cases (sizes are the full mode; the quick mode divides them by 50):
  steady_1m            1M ShareGPT-like requests, Poisson at ~70% of the cluster's capacity
                       (64 x h100-llama2-7b, least_outstanding + sarathi_fcfs).
  burst/<policy>       100k ShareGPT-like requests arriving within 1 s, colocated on 16
                       instances: every global policy with sarathi_fcfs and edf, and every
                       batch scheduler under least_outstanding.
  burst_pd/<pair>      the same burst in P/D (8 prefill + 8 decode): every prefill/decode pair.
  prefix/<wl>/<stack>  a default-matrix run whose requests share prefixes (chat: 10.3k requests,
                       agentic: 1.2k) at 1.2x capacity, seed 0, on the matrix's cluster: the
                       engines' prefix-cache KV accounting, and EDF's preemption loop on it.

    python bench/bench_sim.py                 # quick (2k burst, 20k steady), a markdown table
    python bench/bench_sim.py --full          # the sizes above (minutes; see docs/simulator.md)
    python bench/bench_sim.py --full -k sibyl # cases whose name contains "sibyl"
    python bench/bench_sim.py --list          # case names, for one process per case:
    python bench/bench_sim.py --full --case burst/hfx+sarathi_fcfs
    python -m pytest bench/bench_sim.py --benchmark-disable   # quick mode as a smoke test
    SLOCORE_BENCH_SIM=full python -m pytest bench/bench_sim.py   # full mode under pytest-benchmark
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import pytest

from slocore.sim import matrix, preset, simulate, workloads

PROFILE = "h100-llama2-7b"
STEADY_N, BURST_N = 1_000_000, 100_000
STEADY_INSTANCES, BURST_INSTANCES = 64, 16
# ~70% of 64 instances: one h100-llama2-7b instance finishes ~22 ShareGPT-like req/s at
# saturation under sarathi_fcfs (an 8k burst on 4 instances: n / simulated end time / 4).
STEADY_RATE = 0.7 * 22.0 * STEADY_INSTANCES

COLOCATED = {  # global policy -> its simulate() spec
    "round_robin": "round_robin",
    "random": "random",
    "least_outstanding": "least_outstanding",
    "least_tokens": "least_tokens",
    "hfx": "hfx",
    "hfx_pm": "hfx_pm",
    "scorpio": "scorpio",
    "goroute": ("goroute", {"mode": "colocated"}),
    "power_of_two": "power_of_two",
    "llmd_scorer": "llmd_scorer",
    "kv_router": "kv_router",
    "slo_predict": "slo_predict",
    "slo_predict_hold": ("slo_predict", {"order": "fifo", "hold": True}),  # the slocore-router preset
}
SCHEDULERS = [
    "vllm_fcfs",
    "orca",
    "sarathi_priority",
    "vllm_priority",
    "weighted_vtc",
    "mlfq",
    "slide_batching",
    "slice",
    "slo_triage",
]
# The default matrix's capacities (req/s; docs/benchmark-tables.md, "Capacity") and a few of its
# stacks: the strongest baselines, EDF, HFX (prefix lookups per poll) and slocore.
PREFIX_CAPACITY = {"chat": 247.44, "agentic": 31.11}
PREFIX_STACKS = ["rr+edf", "least_outstanding+vllm_priority", "llmd_scorer+sarathi_fcfs", "hfx", "slocore"]
PREFIX_LOAD = 1.2
PD_PAIRS = {  # prefill policy / decode policy
    "round_robin/round_robin": ("round_robin", "round_robin"),
    "random/random": ("random", "random"),
    "least_outstanding/least_outstanding": ("least_outstanding", "least_outstanding"),
    "least_tokens/least_tokens": ("least_tokens", "least_tokens"),
    "least_outstanding/early_ils": ("least_outstanding", ("early_assign", {"policy": "least_outstanding"})),
    "least_outstanding/sibyl": ("least_outstanding", "sibyl"),
    "least_outstanding/sibyl_reqlevel": ("least_outstanding", ("sibyl", {"reqlevel": 1})),
    "hfx_prefill/hfx_migrator": ("hfx_prefill", "hfx_migrator"),
    "goroute/goroute": (("goroute", {"mode": "pd"}), ("goroute", {"mode": "decode"})),
    "goroute/sibyl": (("goroute", {"mode": "pd"}), "sibyl"),
    "power_of_two/power_of_two": ("power_of_two", "power_of_two"),
    "llmd_scorer/llmd_scorer": ("llmd_scorer", "llmd_scorer"),
    "kv_router/kv_router": ("kv_router", "kv_router"),
    "slo_predict/slo_predict": ("slo_predict", "slo_predict"),
}


def cases() -> dict[str, dict]:
    """Case name -> (kind, simulate() keyword arguments)."""
    out = {
        "steady_1m": dict(
            kind="steady", instances=STEADY_INSTANCES, global_policy="least_outstanding", batch_scheduler="sarathi_fcfs"
        )
    }
    for name, g in COLOCATED.items():
        for sched in ("sarathi_fcfs", "edf"):
            out[f"burst/{name}+{sched}"] = dict(
                kind="burst", instances=BURST_INSTANCES, global_policy=g, batch_scheduler=sched
            )
    for sched in SCHEDULERS:
        out[f"burst/least_outstanding+{sched}"] = dict(
            kind="burst", instances=BURST_INSTANCES, global_policy="least_outstanding", batch_scheduler=sched
        )
    for name, (p, d) in PD_PAIRS.items():
        out[f"burst_pd/{name}"] = dict(
            kind="burst",
            mode="pd",
            prefill_instances=BURST_INSTANCES // 2,
            decode_instances=BURST_INSTANCES // 2,
            prefill_policy=p,
            decode_policy=d,
            batch_scheduler="sarathi_fcfs",
        )
    half = BURST_INSTANCES // 2
    for name, mode, size in (  # the slocore stack as its preset runs it
        ("burst/slocore", "colocated", dict(instances=BURST_INSTANCES)),
        ("burst_pd/slocore", "pd", dict(prefill_instances=half, decode_instances=half)),
    ):
        out[name] = dict(kind="burst", **size, **preset("slocore", mode=mode))
    for wl in PREFIX_CAPACITY:
        for stack in PREFIX_STACKS:
            out[f"prefix/{wl}/{stack}"] = dict(kind=f"matrix:{wl}", stack=stack)
    return out


def workload(kind: str, scale: float):
    if kind == "steady":
        n = int(STEADY_N * scale)
        return workloads.sharegpt_like(rate=STEADY_RATE, n=n, seed=0)
    n = int(BURST_N * scale)
    return workloads.sharegpt_like(rate=float(n), n=n, seed=0)  # arrivals within ~1 s


def matrix_run(wl_name: str, stack: str, scale: float):
    """The default matrix's run of `stack` on `wl_name` at PREFIX_LOAD x capacity, seed 0
    (`scale` x its requests, at the same rate): its workload and simulate() keywords."""
    wl = matrix.WORKLOADS[wl_name]
    cap = {"req_s": PREFIX_CAPACITY[wl_name], "rate_arg_per_req_s": matrix.rate_arg_per_req_s(wl, wl.probe_n)}
    rate, n = matrix.run_size(cap, PREFIX_LOAD, 30.0)
    return wl.make(rate, 0, max(10, int(n * scale))), {**wl.cluster, **matrix.stack_kwargs(stack, wl)}


def run_case(name: str, scale: float) -> dict:
    kw = dict(cases()[name])
    kind = kw.pop("kind")
    if kind.startswith("matrix:"):
        w, kw = matrix_run(kind.split(":", 1)[1], kw["stack"], scale)
        kw["seed"] = 0
    else:
        w = workload(kind, scale)
        kw["profile"] = PROFILE
    t = time.process_time()  # CPU time of this process: the machine is shared
    wall0 = time.perf_counter()
    res = simulate(w, **kw)
    cpu, wall = time.process_time() - t, time.perf_counter() - wall0
    s = res.summary
    assert s["finished"] == len(w.arrival), (name, s["finished"], len(w.arrival))
    return dict(
        case=name,
        n=len(w.arrival),
        cpu_s=cpu,
        wall_s=wall,
        req_per_s=len(w.arrival) / cpu,
        sim_s=res.stats["end_time"],
        events=res.stats["events"],
        iterations=res.stats["iterations"],
        attainment=s["attainment"],
    )


def _scale() -> float:
    return 1.0 if os.environ.get("SLOCORE_BENCH_SIM") == "full" else 0.02


RESULTS: list[dict] = []


@pytest.mark.benchmark(group="simulator")
@pytest.mark.parametrize("name", list(cases()))
def test_simulated_requests_per_second(benchmark, name):
    r = benchmark.pedantic(run_case, args=(name, _scale()), rounds=1, iterations=1)
    RESULTS.append(r)


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if RESULTS:
        print("\n" + table(RESULTS))


def table(rows: list[dict]) -> str:
    lines = [
        "| case | requests | CPU s | wall s | simulated req/s | simulated s | iterations |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['n']:,} | {r['cpu_s']:.1f} | {r['wall_s']:.1f} | {r['req_per_s']:,.0f} "
            f"| {r['sim_s']:,.0f} | {r['iterations']:,} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="1M steady, 100k bursts (default: 1/50 of that)")
    ap.add_argument("--scale", type=float, default=None, help="size factor (overrides --full)")
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("--skip", default="", help="leave out cases whose name contains this")
    ap.add_argument("--case", action="append", default=[], help="exactly this case (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    a = ap.parse_args(argv)
    if a.list:
        print("\n".join(cases()))
        return 0
    unknown = sorted(set(a.case) - set(cases()))
    if unknown:
        ap.error(f"--case: unknown {', '.join(unknown)}")
    scale = a.scale if a.scale is not None else (1.0 if a.full else 0.02)
    rows = []
    for name in cases():
        if (a.k and a.k not in name) or (a.skip and a.skip in name) or (a.case and name not in a.case):
            continue
        r = run_case(name, scale)
        rows.append(r)
        print(
            f"{name:50s} {r['n']:>9,} req  {r['cpu_s']:8.2f} s CPU  {r['wall_s']:8.2f} s wall  "
            f"{r['req_per_s']:>10,.0f} req/s  ({r['sim_s']:,.0f} simulated s, {r['iterations']:,} iterations)",
            flush=True,
        )
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
