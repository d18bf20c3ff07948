"""slo_triage's decode rules behind `slocore serve` in P/D: the router in this process, emulated
engines (the simulator's own engine, paced in real time), SIBYL's Zeta-like set (outputs /8)
replayed by `slocore bench serve`'s load generator. Each variant runs the same seeds; the
decode engines' scheduler parameters differ. The router's policies are model-free (round
robin to prefill, least-outstanding to decode), so `--time-scale` (engines k times slower, the
arrival rate / k and the SLOs x k) changes nothing they decide and keeps the router's loop
inside real time on 2 cores.

    PYTHONPATH=python python bench/pd_handoff_live.py --variants on,off --seeds 0,1,2
    PYTHONPATH=python python bench/pd_handoff_live.py --variants on,off --seeds 0,1,2 --simulate

Variants: `on` (slo_triage's defaults: freshest handoff first, banked TPOT first out), `off`
(both rules off). Run it with another build's `python/` on PYTHONPATH for a before/after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics

from slocore import cli_args
from slocore.roles import PD_FIRST_TOKEN
from slocore.serve import config as cfgmod
from slocore.serve import loadgen
from slocore.serve.eventloop import serve_app
from slocore.serve.router import Router
from slocore.sim import workloads

VARIANTS = {"on": {}, "off": {"fresh_handoffs": False, "slack_victims": False}}


def config(decode_params: dict, time_scale: float, prefill: int, decode: int) -> dict:
    emu = {"profile": "h100-llama2-7b", "time_scale": time_scale, "scheduler": "slo_triage"}
    backends = [{"name": f"p{i}", "role": "prefill", "emulated": dict(emu)} for i in range(prefill)]
    backends += [
        {"name": f"d{i}", "role": "decode", "emulated": dict(emu, scheduler_params=decode_params)}
        for i in range(decode)
    ]
    # no router timeout may cut a request the overloaded engines still serve: the SLOs judge them
    timeouts = {"first_token_s": 3600, "idle_s": 3600, "total_s": 7200}
    return {
        "backends": backends,
        "prefill_policy": "round_robin",
        "decode_policy": "least_outstanding",
        "timeouts": timeouts,
    }


async def one_run(cfg: dict, wl) -> dict:
    router = Router(cfgmod.from_dict(cfg))
    runner, url = await serve_app(router.app())
    try:
        out = await loadgen.run(url, wl, progress=False)
    finally:
        await runner.cleanup()
    s = out["summary"]
    return {
        "attainment": s["attainment"],
        "ttft_attainment": s["ttft_attainment"],
        "tpot_attainment": s["tpot_attainment"],
        "tpot_p99": s["tpot"]["p99"],
        "ttft_p99": s["ttft"]["p99"],
        "finished": s["finished"],
        "errors": len(out["errors"]),
    }


def simulated(decode_params: dict, wl, seed: int, prefill: int, decode: int, first_token: str) -> dict:
    """The same cluster, stack and requests in the simulator (engines' time, no scaling);
    `first_token`: simulate()'s pd_first_token ("decode" dates it as the live client sees it)."""
    from slocore.sim.runner import simulate

    res = simulate(
        wl,
        seed=seed,
        profile="h100-llama2-7b",
        mode="pd",
        prefill_instances=prefill,
        decode_instances=decode,
        prefill_policy="round_robin",
        decode_policy="least_outstanding",
        batch_scheduler="slo_triage",
        decode_batch_scheduler=("slo_triage", decode_params),
        pd_first_token=first_token,
    )
    s = res.summary
    keys = ("attainment", "ttft_attainment", "tpot_attainment", "finished")
    return {**{k: s[k] for k in keys}, "tpot_p99": s["tpot"]["p99"], "ttft_p99": s["ttft"]["p99"], "errors": 0}


def table(runs: list[dict], variants: list[str], time_scale: float = 1.0) -> str:
    """The runs per variant as a markdown table; latencies divided by `time_scale`."""
    out = [
        "| variant | attainment % (per seed) | mean | TTFT met % | TPOT met % | TPOT p99 s | TTFT p99 s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for v in variants:
        rs = [r for r in runs if r["variant"] == v]
        att = [100 * r["attainment"] for r in rs]
        tp = statistics.fmean(r["tpot_p99"] for r in rs) / time_scale
        tt = statistics.fmean(r["ttft_p99"] for r in rs) / time_scale
        met = [statistics.fmean(100 * r.get(f"{m}_attainment", math.nan) for r in rs) for m in ("ttft", "tpot")]
        per_seed = " / ".join(f"{x:.1f}" for x in att)
        out.append(
            f"| {v} | {per_seed} | {statistics.fmean(att):.1f} | {met[0]:.1f} | {met[1]:.1f} | {tp:.3f} | {tt:.2f} |"
        )
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variants", default="on,off", help=f"comma list of {', '.join(VARIANTS)}")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--rate", type=cli_args.positive_float, default=36.0, help="req/s in the engines' time")
    p.add_argument("--duration", type=cli_args.positive_float, default=10.0, help="s of arrivals, engines' time")
    p.add_argument("--time-scale", dest="time_scale", type=cli_args.positive_float, default=4.0)
    p.add_argument("--prefill", type=cli_args.positive_int, default=1)
    p.add_argument("--decode", type=cli_args.positive_int, default=2)
    p.add_argument("--out", help="write every run as JSON here")
    p.add_argument("--simulate", action="store_true", help="run the same in the simulator instead (seconds)")
    p.add_argument(
        "--pd-first-token",
        dest="first_token",
        choices=PD_FIRST_TOKEN,
        default="prefill",
        help="--simulate: date the first token at the prefill's end or, as the live client sees it, at the decode",
    )
    a = p.parse_args()
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        p.error(f"--variants: unknown {bad} (known: {', '.join(VARIANTS)})")
    try:
        seeds = [int(x) for x in a.seeds.split(",")]
    except ValueError:
        p.error(f"--seeds: expected integers, got {a.seeds!r}")
    k, runs = a.time_scale, []
    n = max(1, round(a.rate * a.duration))
    for seed in seeds:  # variants interleaved per seed: the machine's drift falls on both
        if a.simulate:  # engines' time: no scaling
            k = 1.0
        wl = workloads.sibyl_zeta(rate=a.rate / k, n=n, seed=seed, scale=8.0, ttft=10.0 * k, tpot=0.1 * k)
        for v in variants:
            if a.simulate:
                r = simulated(VARIANTS[v], wl, seed, a.prefill, a.decode, a.first_token)
            else:
                r = asyncio.run(one_run(config(VARIANTS[v], k, a.prefill, a.decode), wl))
            r.update(variant=v, seed=seed)
            runs.append(r)
            print(json.dumps(r), flush=True)
    where = f"simulated, first token at the {a.first_token}" if a.simulate else f"live, time scale {k}"
    print(f"\n{a.prefill}P{a.decode}D, {a.rate} req/s x {a.duration} s (engines' time), {where}, seeds {seeds}")
    print(table(runs, variants, k))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
