"""What `slo_triage` loses when its views carry no first-token times (as the vLLM plugin's did
before 2026-11-28): the `slocore` preset on the default matrix's runs, side by side with the
same stack whose engine scheduler sees every view with its first-token times cleared (NaN),
per seed: attainment, TTFT and TPOT attainment (%).

    PYTHONPATH=python python bench/undated_first_tokens.py --workloads slice_mix,sharegpt_prio --loads 1,1.2

The capacities are probed as `slocore bench matrix` probes them (`matrix.capacity`)."""

from __future__ import annotations

import argparse
import math

import slocore
from slocore.sim import matrix
from slocore.sim.runner import simulate

METRICS = ("attainment", "ttft_attainment", "tpot_attainment")


class UndatedFirstTokens(slocore.BatchScheduler):
    """slo_triage over a copy of each view whose requests have no first-token time."""

    def __init__(self):
        super().__init__()
        self.inner = slocore.make_batch_scheduler("slo_triage")

    def name(self):
        return "slo_triage_undated"

    def schedule(self, v, now):
        w = slocore.InstanceView(v.id, v.role)
        for k in ("model", "block_size", "kv_blocks_total", "kv_blocks_free", "max_num_seqs", "max_batch_tokens"):
            setattr(w, k, getattr(v, k))
        run, wait = list(v.running), list(v.waiting)
        for st in run + wait:
            st.first_token = math.nan
        w.running, w.waiting = run, wait
        return self.inner.schedule(w, now)

    def on_finished(self, request, now):
        self.inner.on_finished(request, now)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="slice_mix,sharegpt_prio,hfx_4task,rag,bursty")
    ap.add_argument("--loads", default="1,1.2")
    ap.add_argument("--seeds", default="0,1,2")
    a = ap.parse_args(argv)
    names = a.workloads.split(",")
    for name in names:
        if name not in matrix.WORKLOADS:
            ap.error(f"--workloads: unknown {name!r} (known: {', '.join(matrix.WORKLOADS)})")
        if matrix.WORKLOADS[name].cluster.get("mode") == "pd":
            ap.error(f"--workloads: {name} is a P/D workload (the plugin's views are colocated)")
    try:
        loads = [float(x) for x in a.loads.split(",")]
        seeds = [int(x) for x in a.seeds.split(",")]
    except ValueError as e:
        ap.error(f"--loads / --seeds: comma-separated numbers ({e})")
    if not all(x > 0 for x in loads):
        ap.error(f"--loads: must be > 0, got {a.loads}")
    for name in names:
        wl = matrix.WORKLOADS[name]
        cap = matrix.capacity(name)
        for load in loads:
            rate, n = matrix.run_size(cap, load, 30.0)
            for seed in seeds:
                kw = {**wl.cluster, **matrix.stack_kwargs("slocore", wl)}
                row = []
                for undated in (False, True):
                    k = {**kw, "batch_scheduler": UndatedFirstTokens} if undated else kw
                    s = simulate(wl.make(rate, seed, n), seed=seed, **k).summary
                    row.append(" / ".join(f"{100 * s[m]:.1f}" for m in METRICS))
                print(f"{name} {load:g}x seed {seed}: dated {row[0]}  undated {row[1]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
