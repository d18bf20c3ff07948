"""SIBYL scenarios, one per paper experiment.

Decode model: processor sharing with the paper's H20 fit TPS(N) = -0.423 N^2 + 44.766 N - 7.753
(appendix I, Alg. 3), plateauing past its vertex N ~ 53. Baselines are the paper's: RR and
ILS (least running requests) deciding at prefill start like SIBYL (`early_assign`), plus ILS
deciding at handoff (`ils@handoff`, slocore's default P/D flow, which has no load discrepancy).
The large-scale runs (Fig. 9/15, Table 1/6) follow the paper's simulator, which has no KV
capacity limit: the profile's KV blocks are multiplied by `KV_UNBOUNDED`.
"""

from __future__ import annotations

import copy

from slocore import _core
from slocore.sim import workloads
from slocore.sim.scenarios import Scenario, register

PAPER = "SIBYL"
KV_UNBOUNDED = 50


def profile(unbounded_kv: bool = False) -> dict:
    from slocore.profiles import load_profile

    p = copy.deepcopy(load_profile("h20-qwen3-32b"))
    if unbounded_kv:
        p["kv"]["num_blocks"] = int(p["kv"]["num_blocks"]) * KV_UNBOUNDED
    return p


RR = ("early_assign", {"policy": "round_robin"})
ILS = ("early_assign", {"policy": "least_outstanding"})
BASE_VARIANTS = {
    "rr": dict(decode_policy=RR),
    "ils": dict(decode_policy=ILS),
    "ils@handoff": dict(decode_policy="least_outstanding"),
    "sibyl": dict(decode_policy="sibyl"),
    "sibyl_reqlevel": dict(decode_policy=("sibyl", {"reqlevel": 1})),
}
ABLATIONS = {  # Fig. 8, appendix J
    "sibyl": dict(decode_policy="sibyl"),
    "prob@1": dict(decode_policy=("sibyl", {"prob": 0})),
    "w/o_type1": dict(decode_policy=("sibyl", {"type1": 0})),
    "w/o_type2": dict(decode_policy=("sibyl", {"type2": 0})),
    "w/o_type3": dict(decode_policy=("sibyl", {"type3": 0})),
    "reqlevel": dict(decode_policy=("sibyl", {"reqlevel": 1})),
}


def cluster(p: int, d: int, unbounded_kv: bool = False) -> dict:
    return dict(
        profile=profile(unbounded_kv),
        mode="pd",
        prefill_instances=p,
        decode_instances=d,
        prefill_policy="least_outstanding",
        decode_model="processor_sharing",
        batch_scheduler="sarathi_fcfs",
        max_batch_tokens=32768,
        max_num_seqs=256,
    )


def _wl(name: str, n_per_decode: int, decode: int, scale: float = 1.0):
    fn = workloads.WORKLOADS[name]
    return lambda load, seed: fn(rate=load, n=n_per_decode * decode, seed=seed, scale=scale)


# Fig. 6: 2P4D on random, 4P4D on ShareGPT and Zeta (real KV capacity).
for _name, _p, _loads in (
    ("random", 2, (0.9, 1.1, 1.3)),
    ("sharegpt", 4, (0.6, 0.75, 0.9)),
    ("zeta", 4, (0.6, 0.75, 0.9)),
):
    register(
        Scenario(
            name=f"sibyl_e2e_{_name}",
            description=f"{_p}P4D, {_name} reasoning workload, processor-sharing H20 decode: RR/ILS vs SIBYL",
            source=f"{PAPER} Fig. 6, Sec. 5.1",
            workload=_wl(f"sibyl_{_name}", 250, 4),
            loads=_loads,
            load_unit="req/s",
            cluster=cluster(_p, 4),
            variants=dict(BASE_VARIANTS),
            headline="SIBYL lowers P99/P99.9 TPOT vs ILS and RR (e.g. ShareGPT P99 -34.3% vs ILS, -36.3% vs RR)",
        )
    )

# Fig. 9 (64 decode instances), Fig. 15 (128, 256): the paper's simulator (no KV limit).
HEADLINES = {
    ("sharegpt", 64): "SIBYL P99 TPOT -47.7% vs ILS, -24.5% vs RR (Fig. 9)",
    ("zeta", 64): "SIBYL P99 TPOT -78.0% vs ILS, -14.4% vs RR (Fig. 9)",
    ("sharegpt", 128): "SIBYL P99 TPOT -53.9% vs ILS, -44.1% vs RR (Fig. 15)",
    ("zeta", 128): "SIBYL P99 TPOT -71.5% vs ILS (Fig. 15)",
    ("sharegpt", 256): "SIBYL P99 TPOT -62.5% vs ILS, -31.6% vs RR (Fig. 15)",
    ("zeta", 256): "SIBYL P99 TPOT -82.9% vs ILS (Fig. 15)",
}
# Outputs scaled by 1/8 at 128/256 to keep the runs small (see workloads.SIBYL_SETS); the
# arrival rate grows by the same factor so the batch sizes N stay those of the full lengths.
for _name in ("sharegpt", "zeta"):
    for _d, _scale in ((64, 1.0), (128, 8.0), (256, 8.0)):
        _p = _d // 4
        register(
            Scenario(
                name=f"sibyl_scale_{_name}_{_d}",
                description=f"{_p}P{_d}D, {_name}, processor sharing, no KV limit (paper's simulator), "
                f"outputs /{_scale:g}",
                source=f"{PAPER} Fig. {9 if _d == 64 else 15}, Table {1 if _d == 64 else 6}, appendix I",
                workload=_wl(f"sibyl_{_name}", 60, _d, _scale),
                loads=tuple(round(_d * x * _scale * 0.25, 3) for x in (0.9, 1.0, 1.1)),
                load_unit="req/s",
                cluster=cluster(_p, _d, True),
                variants=dict(BASE_VARIANTS),
                headline=HEADLINES[(_name, _d)],
            )
        )

register(
    Scenario(
        name="sibyl_ablation",
        description="16P64D ShareGPT, processor sharing: SIBYL vs PROB@1, w/o Type 1/2/3, REQLEVEL",
        source=f"{PAPER} Fig. 8, Sec. 5.3, appendix J",
        workload=_wl("sibyl_sharegpt", 60, 64),
        loads=(16.0,),
        load_unit="req/s",
        cluster=cluster(16, 64, True),
        variants=ABLATIONS,
        headline="PROB@1 P99/P99.9 x1.53/x1.45, w/o Type 1 P99 x1.99, REQLEVEL P99.9 x1.83",
    )
)


def _combine_variants() -> dict:
    """SIBYL as the decode policy under each registered prefill policy, with the handoff time
    from the prefill queue (our default, docs/sibyl.md) or from the prefill alone (the paper's Alg. 1 line 2)."""
    names = set(_core.global_policy_names())
    prefill = {"lo": "least_outstanding", "rr": "round_robin"}
    if "hfx_prefill" in names:
        prefill["hfx"] = "hfx_prefill"
    if "goroute" in names:
        prefill["goroute"] = ("goroute", {"mode": "pd"})
    out = {}
    for tag, pp in prefill.items():
        out[f"{tag}+ils"] = dict(prefill_policy=pp, decode_policy=ILS)
        out[f"{tag}+sibyl(paper)"] = dict(prefill_policy=pp, decode_policy=("sibyl", {"handoff": "prefill"}))
        out[f"{tag}+sibyl(queue)"] = dict(prefill_policy=pp, decode_policy="sibyl")
        out[f"{tag}+sibyl_reqlevel(queue)"] = dict(prefill_policy=pp, decode_policy=("sibyl", {"reqlevel": 1}))
    return out


register(
    Scenario(
        name="sibyl_combine",
        description="2P8D Zeta (long prompts, prefill queueing): SIBYL under each prefill policy, "
        "handoff with/without queue",
        source=f"{PAPER} Alg. 1 line 2 + our handoff time including prefill queueing",
        workload=_wl("sibyl_zeta", 120, 8),
        loads=(1.6, 2.0),
        load_unit="req/s",
        cluster=cluster(2, 8),
        variants=_combine_variants(),
        headline="(ours) the queue-aware handoff time should place at least as well as the paper's prefill-only one",
    )
)

register(
    Scenario(
        name="sibyl_discrepancy",
        description="4P16D Zeta (outputs /8), prefill saturated: seconds between assignment and handoff (Fig. 1)",
        source=f"{PAPER} Fig. 1, Fig. 3(b), Sec. 2.3 (ILS herding), Fig. 8 (ablations)",
        workload=_wl("sibyl_zeta", 94, 16, 8.0),
        loads=(20.0, 25.0),
        load_unit="req/s",
        cluster=cluster(4, 16, True),
        variants={
            **BASE_VARIANTS,
            **{k: v for k, v in ABLATIONS.items() if k != "sibyl"},
            "sibyl(paper tau)": dict(decode_policy=("sibyl", {"handoff": "prefill"})),
        },
        headline="ILS at prefill start herds onto the seemingly idle instance; SIBYL's shadow terms prevent it",
    )
)
