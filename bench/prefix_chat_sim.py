"""The live `prefix_chat` trace in the simulator: prefix-cache hit rate (engine-side hit tokens
/ prompt tokens looked up), SLO attainment and TTFT p99 per preset, seeds 0-2, 2 colocated
h100-llama2-7b instances (`--profile`: another profile, by name or a JSON file such as
`slocore profile` writes for a live engine), 1,200 requests; `--by-class` adds the TTFT p99 of each SLO class
(interactive: TTFT 0.3 s, batch: 5 s), summarised by core/metrics.h over that class's records.

    PYTHONPATH=python python bench/prefix_chat_sim.py --rates 60,90,110 --presets slocore,llmd_scorer+sarathi_fcfs
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from slocore import _core
from slocore.live_bench import traces
from slocore.sim import preset, simulate


def ttft_p99_by_class(recorder) -> dict:
    """TTFT p99 of each TTFT SLO class, one Recorder per class through core's summarize."""
    by = {}
    for rec in recorder.records():
        sub = by.setdefault(rec.request.slo.ttft, _core.Recorder())
        sub.add(rec.request)
        for t in rec.token_times:
            sub.token(rec.request.id, float(t), rec.instance)
        if rec.outcome == _core.Outcome.FINISHED:
            sub.finish(rec.request.id, rec.end_time)
        elif rec.outcome == _core.Outcome.REJECTED:
            sub.reject(rec.request.id, rec.end_time, rec.reason)
    return {ttft: _core.summarize(sub, _core.MetricsOptions())["ttft"]["p99"] for ttft, sub in sorted(by.items())}


def run(
    name: str,
    rate: float,
    seed: int,
    n: int,
    override: dict | None = None,
    profile: str = "h100-llama2-7b",
    engine: dict | None = None,
    one_class: bool = False,
) -> dict:
    w = traces.at_rate(traces.make("prefix_chat", n, seed), rate)
    if one_class:  # every request the interactive class's SLOs and priority
        ttft, tpot = traces.CLASSES["interactive"][4:]
        m = len(w)
        w = w._with(
            ttft=np.full(m, ttft), tpot=np.full(m, tpot), priority=np.zeros(m), task=np.zeros(m, dtype=np.int64)
        )
    kw = dict(preset(name, "colocated"))
    kw.update(override or {})
    res = simulate(w, **kw, **(engine or {}), profile=profile, instances=2, seed=seed)
    st = res.stats
    return dict(
        hit=st["prefix_hit_tokens"] / max(1, st["prefix_query_tokens"]),
        attainment=res.summary["attainment"],
        ttft_p99=res.summary["ttft"]["p99"],
        ttft_p99_by_class=ttft_p99_by_class(res.recorder),
    )


def _mean_and_seeds(xs: list[float], fmt: str) -> str:
    return f"**{fmt.format(float(np.mean(xs)))}** ({' / '.join(fmt.format(x) for x in xs)})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="60,90,110", help="comma-separated req/s")
    ap.add_argument("--presets", default="slocore,llmd_scorer+sarathi_fcfs")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("-n", type=int, default=1200, help="requests per run")
    ap.add_argument("--json", help="also write every run here")
    ap.add_argument("--by-class", action="store_true", help="also the TTFT p99 of each TTFT SLO class")
    ap.add_argument(
        "--override",
        help="JSON merged into every preset's simulate() arguments (an ablation), e.g. "
        '\'{"batch_scheduler": ["slo_triage", {"tpot_guard": false}]}\'',
    )
    ap.add_argument(
        "--profile", default="h100-llama2-7b", help="hardware profile: a bundled name or a profile .json file"
    )
    ap.add_argument("--max-num-seqs", type=int, help="the engines' max_num_seqs (default: the simulator's)")
    ap.add_argument(
        "--one-class", action="store_true", help="every request the interactive class's SLOs (TTFT 0.3 s, TPOT 30 ms)"
    )
    a = ap.parse_args(argv)
    engine = {"max_num_seqs": a.max_num_seqs} if a.max_num_seqs else {}
    override = {k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(a.override or "{}").items()}
    rows = []
    extra = " TTFT p99 s by TTFT SLO class (seeds) |" if a.by_class else ""
    print("| preset | req/s | hit rate %: mean (seeds) | attainment % | TTFT p99 s |" + extra)
    print("|---|---:|---|---|---|" + ("---|" if a.by_class else ""))
    for rate in (float(x) for x in a.rates.split(",")):
        for name in a.presets.split(","):
            runs = [run(name, rate, int(s), a.n, override, a.profile, engine, a.one_class) for s in a.seeds.split(",")]
            rows.append(dict(preset=name, rate=rate, runs=runs))
            hit = _mean_and_seeds([100 * r["hit"] for r in runs], "{:.1f}")
            att = _mean_and_seeds([100 * r["attainment"] for r in runs], "{:.1f}")
            p99 = _mean_and_seeds([r["ttft_p99"] for r in runs], "{:.3f}")
            cls = ""
            if a.by_class:
                slos = sorted({k for r in runs for k in r["ttft_p99_by_class"]})
                cls = " " + "; ".join(
                    f"{k:g} s: " + " / ".join(f"{r['ttft_p99_by_class'].get(k, float('nan')):.3f}" for r in runs)
                    for k in slos
                )
                cls += " |"
            print(f"| {name} | {rate:g} | {hit} | {att} | {p99} |{cls}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
