"""slo_triage's decode rules behind `slocore serve` in P/D: the router in this process, emulated
engines (the simulator's own engine, paced in real time), SIBYL's Zeta-like set (outputs /8)
replayed by `slocore bench serve`'s load generator. Each variant runs the same seeds; the
decode engines' scheduler parameters differ. The router's policies are model-free (round
robin to prefill, least-outstanding to decode), so `--time-scale` (engines k times slower, the
arrival rate / k and the SLOs x k) changes nothing they decide and keeps the router's loop
inside real time on 2 cores.

    PYTHONPATH=python python bench/pd_handoff_live.py --variants on,off --seeds 0,1,2

Variants: `on` (slo_triage's defaults: freshest handoff first, banked TPOT first out), `off`
(both rules off). Run it with another build's `python/` on PYTHONPATH for a before/after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics

from aiohttp import web

from slocore import cli_args
from slocore.serve import config as cfgmod
from slocore.serve import loadgen
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
    runner = web.AppRunner(router.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    try:
        out = await loadgen.run(url, wl, progress=False)
    finally:
        await runner.cleanup()
    s = out["summary"]
    return {
        "attainment": s["attainment"],
        "tpot_p99": s["tpot"]["p99"],
        "ttft_p99": s["ttft"]["p99"],
        "finished": s["finished"],
        "errors": len(out["errors"]),
    }


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
        wl = workloads.sibyl_zeta(rate=a.rate / k, n=n, seed=seed, scale=8.0, ttft=10.0 * k, tpot=0.1 * k)
        for v in variants:
            r = asyncio.run(one_run(config(VARIANTS[v], k, a.prefill, a.decode), wl))
            r.update(variant=v, seed=seed)
            runs.append(r)
            print(json.dumps(r), flush=True)
    print(f"\n{a.prefill}P{a.decode}D, {a.rate} req/s x {a.duration} s (engines' time), time scale {k}, seeds {seeds}")
    print("| variant | attainment % (per seed) | mean | TPOT p99 s (engines') | TTFT p99 s (engines') |")
    print("|---|---|---:|---:|---:|")
    for v in variants:
        rs = [r for r in runs if r["variant"] == v]
        att = [100 * r["attainment"] for r in rs]
        tp = statistics.fmean(r["tpot_p99"] for r in rs) / k
        tt = statistics.fmean(r["ttft_p99"] for r in rs) / k
        print(f"| {v} | {' / '.join(f'{x:.1f}' for x in att)} | {statistics.fmean(att):.1f} | {tp:.3f} | {tt:.2f} |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
