"""Bit-identity check of the simulator across builds: record, then compare.

Runs a fixed set of seeded scenarios (colocated and P/D, seeds 0-2, several engine
schedulers, presets and workloads, bursts that leave long engine queues) and writes, per
scenario, every summary metric, the run's stats, a SHA-256 of every request's record
(instance, outcome, end time, token times) and one of the timeline, floats exactly (JSON
keeps repr round-trips).
A speed change that must not change behaviour records before and after and compares:

    PYTHONPATH=/path/to/parent/build python bench/sim_identity.py record /tmp/before.json
    PYTHONPATH=python python bench/sim_identity.py record /tmp/after.json
    python bench/sim_identity.py compare /tmp/before.json /tmp/after.json   # exit 1 on any difference

`-k NAME` records only scenarios whose name contains NAME.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import struct
import sys
import time

import numpy as np

from slocore.sim import simulate, stacks, workloads

SEEDS = (0, 1, 2)
H100, ASCEND = "h100-llama2-7b", "ascend910b-qwen7b"
PD_SMALL = dict(mode="pd", prefill_instances=2, decode_instances=2)


def _burst(n, seed):  # all arrivals within ~1 s: long engine queues
    return workloads.sharegpt_like(rate=float(n), n=n, seed=seed)


def _prio(seed):
    return workloads.with_priorities(
        workloads.sharegpt_like(rate=30.0, n=600, seed=seed, ttft=1.5, tpot=0.1), seed=seed
    )


def _chat(seed):
    return workloads.multi_turn_chat(rate=20.0, sessions=200, seed=seed)


def _rounded(w, step):  # arrivals on a grid: many requests share one arrival time
    return dataclasses.replace(w, arrival=np.round(w.arrival / step) * step)


def _hfx(seed):
    return workloads.hfx_4task(rate=40.0, n_per_task=150, seed=seed)


def scenarios() -> dict:
    """name -> (workload factory(seed), simulate() kwargs)."""
    out = {}
    col = dict(profile=H100, instances=4)

    def burst_and_prio(name, sched):  # a 3k burst and two priorities behind least-outstanding
        out[f"burst3k/least_outstanding+{name}"] = (
            lambda s: _burst(3000, s),
            dict(col, global_policy="least_outstanding", batch_scheduler=sched),
        )
        out[f"prio/least_outstanding+{name}"] = (
            _prio,
            dict(profile=ASCEND, instances=4, global_policy="least_outstanding", batch_scheduler=sched),
        )

    for sched in (
        "sarathi_fcfs",
        "edf",
        "vllm_priority",
        "slide_batching",
        "slice",
        "sarathi_priority",
        "vllm_fcfs",
        "mlfq",
    ):
        burst_and_prio(sched, sched)
    # SLICE's dynamic mix (real-time and best-effort tasks: several utilities and TPOTs, so the
    # utility-rate order has ties and non-ties) with every utility adaptor and the spread mask.
    rtx = dict(profile="rtx4060ti-chatglm2-6b-int4", instances=1, global_policy="round_robin")
    for tag, params in (
        ("online", {"max_cycle": 0.9}),
        ("demote_late", {"max_cycle": 0.9, "demote_late": True}),
        ("sjf", {"max_cycle": 0.9, "adaptor": "sjf"}),
        ("spread", {"spread": True}),
    ):
        out[f"slice_mix/slice_{tag}"] = (
            lambda s: workloads.slice_mix(rate=3.0, realtime_share=0.7, n=200, seed=s),
            dict(rtx, batch_scheduler=("slice", params)),
        )
    # SlideBatching's load judgments and the Fig. 15 ablations, on a burst and on two priorities.
    for tag, params in (
        ("phi_c", {"phi": "c"}),
        ("phi_p", {"phi": "p"}),
        ("deadline", {"order": "deadline"}),
        ("density", {"order": "density"}),
        ("tokens", {"latency_aware": False}),
    ):
        burst_and_prio(f"slide_batching_{tag}", ("slide_batching", params))
    # GoRouting's non-default forms on two TTFT classes (queues out of deadline order).
    for tag, params in (
        ("phi_c", {"mode": "colocated", "gain_phi": "c"}),
        ("random", {"mode": "colocated", "fallback": "random"}),
        ("no_compensate", {"mode": "colocated", "compensate": False}),
    ):
        out[f"prio/goroute_{tag}"] = (
            _prio,
            dict(profile=ASCEND, instances=4, global_policy=("goroute", params), batch_scheduler="sarathi_fcfs"),
        )
    out["prio/goroute_pd_no_compensate"] = (
        _prio,
        dict(
            profile=ASCEND,
            **PD_SMALL,
            prefill_policy=("goroute", {"mode": "pd", "compensate": False}),
            decode_policy=("goroute", {"mode": "decode"}),
            batch_scheduler="sarathi_fcfs",
        ),
    )
    goroute_col = ("goroute", {"mode": "colocated"})
    for gp, sched in ((goroute_col, "sarathi_fcfs"), (goroute_col, "edf"), ("round_robin", "edf"), ("hfx", "edf")):
        out[f"burst3k/{gp if isinstance(gp, str) else gp[0]}+{sched}"] = (
            lambda s: _burst(3000, s),
            dict(col, global_policy=gp, batch_scheduler=sched),
        )
    for mode, cluster in (("colocated", dict(instances=4)), ("pd", PD_SMALL)):  # two TTFT classes: unsorted queues
        pol = ("goroute", {"mode": mode})
        kw = dict(profile=ASCEND, **cluster, batch_scheduler="sarathi_fcfs")
        if mode == "colocated":
            kw["global_policy"] = pol
        else:
            kw.update(prefill_policy=pol, decode_policy=("goroute", {"mode": "decode"}))
        out[f"prio/goroute/{mode}"] = (_prio, kw)
    for p, d in (
        (("goroute", {"mode": "pd"}), ("goroute", {"mode": "decode"})),
        ("least_outstanding", "least_outstanding"),
        ("least_tokens", "least_tokens"),
        ("least_outstanding", "sibyl"),
        ("kv_router", "kv_router"),
        ("power_of_two", "power_of_two"),
        ("llmd_scorer", "llmd_scorer"),
        ("hfx_prefill", "hfx_migrator"),
        ("slo_predict", "slo_predict"),
    ):
        for sched in ("sarathi_fcfs", "edf"):
            pname, dname = (x if isinstance(x, str) else x[0] for x in (p, d))
            out[f"burst3k_pd/{pname}/{dname}+{sched}"] = (
                lambda s: _burst(3000, s),
                dict(profile=H100, **PD_SMALL, prefill_policy=p, decode_policy=d, batch_scheduler=sched),
            )
    for name in ("slocore", "hfx", "sibyl", "least_outstanding+edf", "vllm_priority", "kv_router+sarathi_fcfs"):
        for mode in ("colocated", "pd"):
            try:
                kw = stacks.preset(name, mode)
            except (KeyError, ValueError):
                continue
            cluster = dict(profile=H100, **(PD_SMALL if mode == "pd" else dict(instances=4)))
            kw = {**cluster, **kw}
            out[f"preset/{name}/{mode}/prefix_chat"] = (_chat, kw)
            out[f"preset/{name}/{mode}/sharegpt_prio"] = (_prio, kw)
            if name in ("hfx", "slocore"):
                out[f"preset/{name}/{mode}/hfx_4task"] = (_hfx, {**kw, "profile": ASCEND})
    # SIBYL's decode policies in P/D with busy decode instances: bursts and steady loads
    # (the decode instances are the bottleneck at 2 prefill + 2 decode), ablations, handoffs.
    sibyl_decoders = {
        "least_outstanding/sibyl": ("least_outstanding", "sibyl"),
        "least_outstanding/sibyl_reqlevel": ("least_outstanding", ("sibyl", {"reqlevel": 1})),
        "least_outstanding/sibyl_prefill": ("least_outstanding", ("sibyl", {"handoff": "prefill"})),
        "least_outstanding/sibyl_prob1": ("least_outstanding", ("sibyl", {"prob": 0})),
        "least_outstanding/sibyl_no_type3": ("least_outstanding", ("sibyl", {"type3": 0})),
        "least_outstanding/early_ils": ("least_outstanding", ("early_assign", {"policy": "least_outstanding"})),
        "goroute/sibyl": (("goroute", {"mode": "pd"}), "sibyl"),
    }
    for name, (p, d) in sibyl_decoders.items():
        pd = dict(profile=H100, **PD_SMALL, prefill_policy=p, decode_policy=d, batch_scheduler="sarathi_fcfs")
        out[f"sibyl/burst2k_pd/{name}"] = (lambda s: _burst(2000, s), pd)
        for rate in (15.0, 40.0):
            out[f"sibyl/rate{rate:g}_pd/{name}"] = (
                lambda s, rate=rate: workloads.sharegpt_like(rate=rate, n=800, seed=s),
                pd,
            )
    # Engine schedulers that keep an order across calls (mlfq, slide_batching): P/D (handoffs
    # arrive with their KV), prefix caching (waiting requests with computed tokens), a fast
    # starvation guard, and arrivals rounded to 50 ms (ties: their order is their position).
    for name, sched in (
        ("mlfq", "mlfq"),
        ("mlfq_guard", ("mlfq", {"promote_after_s": 0.3, "levels": 4})),
        ("slide_batching", "slide_batching"),
    ):
        out[f"burst3k_pd/least_outstanding/least_outstanding+{name}"] = (
            lambda s: _burst(3000, s),
            dict(
                profile=H100,
                **PD_SMALL,
                prefill_policy="least_outstanding",
                decode_policy="least_outstanding",
                batch_scheduler=sched,
            ),
        )
        out[f"burst3k_ties/least_outstanding+{name}"] = (
            lambda s: _rounded(_burst(3000, s), 0.05),
            dict(col, global_policy="least_outstanding", batch_scheduler=sched),
        )
        out[f"chat/least_outstanding+{name}"] = (
            _chat,
            dict(col, global_policy="least_outstanding", batch_scheduler=sched),
        )
    out["burst3k/least_outstanding+mlfq_guard"] = (
        lambda s: _burst(3000, s),
        dict(col, global_policy="least_outstanding", batch_scheduler=("mlfq", {"promote_after_s": 0.3, "levels": 4})),
    )
    out["burst3k/least_outstanding+sarathi_fcfs/noise"] = (
        lambda s: _burst(3000, s),
        dict(col, global_policy="least_outstanding", batch_scheduler="sarathi_fcfs", noise_sigma=0.2, belief_noise=0.2),
    )
    return out


def _f(x: float) -> bytes:
    return struct.pack("<d", x)


def fingerprint(res) -> dict:
    h = hashlib.sha256()
    for r in res.recorder.records():
        h.update(struct.pack("<qq", int(r.request.id), int(r.instance)))
        h.update(str(r.outcome).encode())
        h.update(_f(r.end_time))
        h.update(r.token_times.tobytes())
    # steps_ahead says how the run was computed (engines stepped ahead of the event loop), not
    # what it did: a build that runs ahead differently must give the same run.
    stats = {k: v for k, v in res.stats.items() if isinstance(v, (int, float, str, bool)) and k != "steps_ahead"}
    t = hashlib.sha256()
    for p in res.timeline:
        t.update(
            _f(p.t) + struct.pack("<4i3q", p.colocated, p.prefill, p.decode, p.starting, p.queued, p.waiting, p.running)
        )
    return {"summary": res.summary, "stats": stats, "records_sha256": h.hexdigest(), "timeline_sha256": t.hexdigest()}


def record(path: str, k: str = "") -> int:
    out = {}
    t0 = time.process_time()
    for name, (make, kw) in scenarios().items():
        if k and k not in name:
            continue
        for seed in SEEDS:
            res = simulate(make(seed), seed=seed, **kw)
            out[f"{name}/seed{seed}"] = fingerprint(res)
    with open(path, "w") as f:
        json.dump(out, f, sort_keys=True, default=str)
    print(f"{len(out)} runs -> {path} ({time.process_time() - t0:.1f} s CPU)")
    return 0


def _diff(a, b, where: str, out: list) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                out.append(f"{where}.{key}: only in {'after' if key not in a else 'before'}")
            else:
                _diff(a[key], b[key], f"{where}.{key}", out)
    elif isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return
    elif a != b:
        out.append(f"{where}: {a!r} != {b!r}")


def compare(before: str, after: str) -> int:
    with open(before) as f:
        a = json.load(f)
    with open(after) as f:
        b = json.load(f)
    diffs: list[str] = []
    _diff(a, b, "", diffs)
    for d in diffs[:50]:
        print(d)
    print(f"{len(a)} runs before, {len(b)} after: {'IDENTICAL' if not diffs else f'{len(diffs)} differences'}")
    return 1 if diffs else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("path")
    r.add_argument("-k", default="")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    a = ap.parse_args(argv)
    return record(a.path, a.k) if a.cmd == "record" else compare(a.before, a.after)


if __name__ == "__main__":
    sys.exit(main())
