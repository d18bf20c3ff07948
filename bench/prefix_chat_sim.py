"""The live `prefix_chat` trace in the simulator: prefix-cache hit rate (engine-side hit tokens
/ prompt tokens looked up), SLO attainment and TTFT p99 per preset, seeds 0-2, 2 colocated
h100-llama2-7b instances, 1,200 requests.

    PYTHONPATH=python python bench/prefix_chat_sim.py --rates 60,90,110 --presets slocore,llmd_scorer+sarathi_fcfs
"""

from __future__ import annotations

import argparse
import json

from slocore.live_bench import traces
from slocore.sim import preset, simulate


def run(name: str, rate: float, seed: int, n: int) -> dict:
    w = traces.at_rate(traces.make("prefix_chat", n, seed), rate)
    res = simulate(w, **dict(preset(name, "colocated")), profile="h100-llama2-7b", instances=2, seed=seed)
    st = res.stats
    return dict(
        hit=st["prefix_hit_tokens"] / max(1, st["prefix_query_tokens"]),
        attainment=res.summary["attainment"],
        ttft_p99=res.summary["ttft"]["p99"],
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="60,90,110", help="comma-separated req/s")
    ap.add_argument("--presets", default="slocore,llmd_scorer+sarathi_fcfs")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("-n", type=int, default=1200, help="requests per run")
    ap.add_argument("--json", help="also write every run here")
    a = ap.parse_args(argv)
    rows = []
    print("| preset | req/s | hit rate % (seeds) | attainment % (seeds) | TTFT p99 s (seeds) |")
    print("|---|---:|---|---|---|")
    for rate in (float(x) for x in a.rates.split(",")):
        for name in a.presets.split(","):
            runs = [run(name, rate, int(s), a.n) for s in a.seeds.split(",")]
            rows.append(dict(preset=name, rate=rate, runs=runs))
            hit = " / ".join(f"{100 * r['hit']:.1f}" for r in runs)
            att = " / ".join(f"{100 * r['attainment']:.1f}" for r in runs)
            p99 = " / ".join(f"{r['ttft_p99']:.3f}" for r in runs)
            print(f"| {name} | {rate:g} | {hit} | {att} | {p99} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
