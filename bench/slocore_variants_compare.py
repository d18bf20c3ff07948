"""The slocore stack against its own variants on the benchmark matrix (simulated): which
engine behind `slo_predict`, the prediction margin, and the router alone (least-outstanding
over the same engines). Same capacity, loads, seeds and predictor errors as
`slocore bench matrix`; every variant is compared with the strongest baseline of its cell.

    PYTHONPATH=python python bench/slocore_variants_compare.py --workloads rag,sharegpt_prio \\
        --loads 1,1.2 --errors exact,pm20

    PYTHONPATH=python python bench/slocore_variants_compare.py --workloads chat,agentic \\
        --loads 1.2 --errors exact --triage '{"late_kv_room": 0}'

Prints one line per (workload, error, load, variant): attainment mean ± 95% CI and per seed,
TTFT/TPOT p99 (and its ratio to the strongest baseline's), and the difference to the
strongest baseline. Each `--triage` adds the whole `slocore` preset with those `slo_triage`
parameters as one more variant."""

import argparse
import json

from slocore import make_batch_scheduler
from slocore.sim import matrix, presets_slocore
from slocore.sim.stacks import Preset, register

DECODE = ("sibyl", {"reqlevel": True})
ENGINES = {
    "slide_batching": "slide_batching",
    "slide_density": ("slide_batching", {"order": "density"}),
    "edf": "edf",
}
VARIANTS = {f"slo_predict+{k}": ("slo_predict", e) for k, e in ENGINES.items()}
VARIANTS["slo_predict(margin=0)+vllm_priority"] = (("slo_predict", {"margin": 0.0}), "vllm_priority")
BASELINES = ("rr+sarathi_fcfs", "rr+edf", "least_outstanding+edf", "least_outstanding+sarathi_priority", "p2c+edf")
BASELINES += ("vllm_priority", "llmd_scorer+sarathi_fcfs", "kv_router+sarathi_fcfs")


def _triage_params(text: str) -> dict:
    """--triage: a JSON object of slo_triage parameters, checked by building the scheduler."""
    try:
        params = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(params, dict) or not params:
        raise argparse.ArgumentTypeError(f"expected a non-empty JSON object of parameters, got {text!r}")
    try:
        make_batch_scheduler("slo_triage", params)
    except (ValueError, TypeError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return params


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="rag,sharegpt_prio")
    ap.add_argument("--loads", default="1,1.2")
    ap.add_argument("--errors", default="exact,pm20")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument(
        "--triage",
        type=_triage_params,
        action="append",
        default=[],
        help="slo_triage parameters of a slocore variant (JSON); repeat for more variants",
    )
    ap.add_argument("--no-engine-variants", action="store_true", help="leave out slo_predict over other engines")
    a = ap.parse_args()
    stacks = {
        name: (
            dict(global_policy=router, batch_scheduler=engine),
            dict(prefill_policy=router, decode_policy=DECODE, batch_scheduler=engine),
        )
        for name, (router, engine) in VARIANTS.items()
        if not a.no_engine_variants
    }
    for triage in a.triage:  # the whole slocore preset, its engine scheduler's parameters changed
        engine = ("slo_triage", triage)
        name = "slocore(" + ",".join(f"{k}={v}" for k, v in triage.items()) + ")"
        stacks[name] = (
            dict(presets_slocore.COLOCATED, batch_scheduler=engine),
            dict(presets_slocore.PD, batch_scheduler=engine),
        )
    for name, (colocated, pd) in stacks.items():
        register(Preset(name, "slocore", name, "variant", colocated=colocated, pd=pd))
    names = BASELINES + ("least_outstanding+vllm_priority", "slocore") + tuple(stacks)
    cfg = matrix.MatrixConfig(
        presets=names,
        workloads=tuple(a.workloads.split(",")),
        loads=tuple(float(x) for x in a.loads.split(",")),
        seeds=tuple(int(x) for x in a.seeds.split(",")),
        errors=tuple(a.errors.split(",")),
        processes=a.processes,
    )
    out = matrix.run_matrix(cfg, progress=False)
    show = ("least_outstanding+vllm_priority", "slocore") + tuple(stacks)
    for c in sorted(out["cells"], key=lambda c: (c["workload"], c["error"], c["load"], c["preset"])):
        if c["preset"] not in show:
            continue
        print(
            f"{c['workload']:14s} {c['error']:5s} {c['load']:.1f} {c['preset']:38s} "
            f"{100 * c['attainment_mean']:5.1f} ± {100 * c['attainment_ci95']:4.1f} "
            f"{[round(100 * x, 1) for x in c['attainment']]} TTFT p99 {c['ttft_p99']:.2f} s "
            f"({c['ttft_p99_vs_strongest']:.2f}x) TPOT p99 {1000 * c['tpot_p99']:.0f} ms "
            f"vs {c['strongest_baseline']} {100 * c['vs_strongest']:+.1f} pp"
        )


if __name__ == "__main__":
    main()
