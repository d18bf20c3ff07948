"""What binds the `slocore` preset on a workload past its capacity: the KV, or the GPU time
the running decodes take?

For each (workload, load x capacity) it runs `slocore` (seeds given, exact predictor) on the
matrix's cluster with the profile's KV blocks x1, x2 and x4 and prints, means over seeds:
attainment, its TTFT and TPOT parts (sim/metrics), the prompt tokens found in the prefix
cache, and preemptions. More KV keeps more prefixes cached and preempts less, so where
attainment does not move with it the KV is not what binds.

With x1 it also prints the decode-only step at the peak: per instance and whole second, the
fixed cost plus one decode step of every request decoding then (t_c + sum(a_d x context +
b_d), ProServe Eq. 6-7 with the profile's coefficients; the context is the prompt and the
tokens sampled before the last, read off the run's token times), averaged over the
instances, at the second where it is largest, and that step as a share of the TPOT guard's
step ((1 - margin) x the tightest TPOT SLO; slo_triage.h). Near 1, the
decodes leave an iteration almost no time for prefill: the queue's first tokens wait for
decode work, which no order or cache removes.

    PYTHONPATH=python python bench/goodput_binding.py --cells agentic:1.4,chat:1.36 --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import copy
import statistics
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from slocore import make_batch_scheduler
from slocore.profiles import load_profile
from slocore.sim import matrix
from slocore.sim.runner import simulate

KV_SCALES = (1, 2, 4)


def _profile(name: str, kv_scale: int) -> dict:
    p = copy.deepcopy(load_profile(name))
    p["kv"]["num_blocks"] *= kv_scale
    return p


def peak_decode_step(recs, coeffs: dict, instances: int) -> float:
    """The largest, over whole seconds, of the instances' mean decode-only step (s)."""
    per_second: dict[int, list[float]] = {}
    for r in recs:
        tt = np.asarray(r.token_times)
        if len(tt) < 2:
            continue
        for t in range(int(np.ceil(tt[0])), int(np.ceil(tt[-1]))):  # decoding at t: first <= t < last token
            # its KV then: the prompt and every token but the last sampled (RequestState::context_len)
            ctx = r.request.prompt_len + int(np.searchsorted(tt, t, side="right")) - 1
            step = per_second.setdefault(t, [0.0] * instances)
            step[r.instance] += coeffs["a_d"] * ctx + coeffs["b_d"]
    if not per_second:
        return coeffs["t_c"]
    return coeffs["t_c"] + max(statistics.mean(v) for v in per_second.values())


def run(job) -> dict:
    wl_name, cap, load, seed, kv_scale = job
    wl = matrix.WORKLOADS[wl_name]
    rate, n = matrix.run_size(cap, load, 30.0)
    cluster = dict(wl.cluster)
    profile = _profile(cluster.pop("profile"), kv_scale)
    res = simulate(wl.make(rate, seed, n), seed=seed, profile=profile, **cluster, **matrix.stack_kwargs("slocore", wl))
    s, st = res.summary, res.stats
    out = {
        "attainment": s["attainment"],
        "ttft": s["ttft_attainment"],
        "tpot": s["tpot_attainment"],
        "hit": st["prefix_hit_tokens"] / max(1, st["prefix_query_tokens"]),
        "preemptions": st["preemptions"],
    }
    if kv_scale == 1:
        recs = res.recorder.records()
        step = peak_decode_step(recs, profile["per_request"], cluster.get("instances", 1))
        tpot_min = min(r.request.slo.tpot for r in recs)
        margin = make_batch_scheduler("slo_triage").params()["margin"]  # the guard's, by default
        out["decode_step"], out["guard_share"] = step, step / ((1 - margin) * tpot_min)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="agentic:1.4,chat:1.36", help="workload:load (x capacity), comma-separated")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--processes", type=int, default=2)
    a = ap.parse_args(argv)
    try:
        cells = [(w, float(x)) for w, x in (c.split(":") for c in a.cells.split(","))]
        seeds = [int(x) for x in a.seeds.split(",")]
    except ValueError as e:
        ap.error(f"--cells/--seeds: {e}")
    if a.processes < 1:
        ap.error(f"--processes: must be >= 1, got {a.processes}")
    for w, _ in cells:
        if w not in matrix.WORKLOADS:
            ap.error(f"--cells: unknown workload {w!r} (known: {', '.join(matrix.WORKLOADS)})")
        if matrix.WORKLOADS[w].mode != "colocated":
            ap.error(f"--cells: {w} is a P/D workload; this reads colocated instances only")
    caps = {w: matrix.capacity(w) for w in {w for w, _ in cells}}
    jobs = [(w, caps[w], load, seed, k) for w, load in cells for k in KV_SCALES for seed in seeds]
    with ProcessPoolExecutor(a.processes) as ex:
        out = list(ex.map(run, jobs))
    print(
        "| workload | load x cap | KV | attainment % | TTFT met % | TPOT met % | prompt tokens cached % | preempted |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    i = 0
    peaks = []
    for w, load in cells:
        for k in KV_SCALES:
            rs = out[i : i + len(seeds)]
            i += len(seeds)

            def m(key, rs=rs):
                return statistics.mean(r[key] for r in rs)

            print(
                f"| {w} | {load:.2f} | x{k} | {100 * m('attainment'):.1f} | {100 * m('ttft'):.1f} | "
                f"{100 * m('tpot'):.1f} | {100 * m('hit'):.1f} | {m('preemptions'):.0f} |"
            )
            if k == 1:
                peaks.append((w, load, m("decode_step"), m("guard_share")))
    print()
    print("| workload | load x cap | decode-only step at the peak (ms) | share of the TPOT guard's step |")
    print("|---|---:|---:|---:|")
    for w, load, step, share in peaks:
        print(f"| {w} | {load:.2f} | {1000 * step:.1f} | {share:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
