"""The `slocore` stack: `slo_predict` dispatch (a per-request TTFT/TPOT prediction on every
candidate instance, csrc/slocore/stack/slo_predict.h) over `slo_triage` engines
(csrc/slocore/stack/slo_triage.h: vLLM's priority order, the workloads numbering priorities
from the tightest SLO class, for the requests that can still meet their first-token
deadline; those past it or predicted past it run after them from the budget left, so in
overload a late request does not push feasible ones past theirs), which refit their latency
model's coefficients online to the iterations they run (core/online_fit.h); in P/D the same prediction places
prefills and SIBYL's projected load at the handoff, counted in requests (SIBYL Alg. 1, the
REQLEVEL unit, with the prefill queue in tau; docs/sibyl.md), places decodes, and the HFX
scaler rebalances the two pools on the cluster's own instance budget (role switches only). One set of
defaults for every workload. The engine's order below overload is vLLM priority, the one
the benchmark matrix measured best behind this dispatch (docs/benchmark.md "The slocore
stack": SlideBatching collapses on the 4k-16k-token rag prompts, its density ablation loses a
seed there, EDF collapses past capacity).
`slocore+scale` adds the HFX scaler (HFX Alg. 3, role switching in P/D); it is tagged
"scaling" because it adds instances (compare its cost).
`slocore+strict_tpot` runs slo_triage's strict TPOT guard (running prefills chunked to the
on-time decodes' pace), for classes with short outputs and tight TPOT SLOs.
`slocore-router` is the router alone, for a team that keeps its engines' own scheduler
(vLLM's default serves in arrival order: `sarathi_fcfs` here): `slo_predict` with `hold`, so
the router keeps the queue the engines would keep in arrival order and releases it by
first-token deadline, hopeless requests last, to instances with under one iteration of prefill
backlog (on an instance holding the request's prefix, the prefill time it saves counts as room)."""

from __future__ import annotations

from slocore.sim.stacks import Preset, register

DISPATCH = "slo_predict"
ENGINE = "slo_triage"
# The engines refit their belief's coefficients to the iterations they run (core/online_fit.h):
# a belief of the wrong shape (another GPU's profile) converges to the truth's.
COLOCATED = dict(global_policy=DISPATCH, batch_scheduler=ENGINE, online_fit=True)
# P/D: the HFX scaler on the cluster's own instance budget (`max_instances=0`: never more
# than it started with), so it only rebalances the pools: a pool that wants to grow takes a
# spare instance of the other (`borrow_spare`, csrc/slocore/hfx/scaler.h). A switch drains
# the instance and then takes ROLE_SWITCH_S, a new engine's start from local disk (HFX
# Table 2: 4.14 s for Qwen-7B), since a live switch restarts the engine in its new role.
ROLE_SWITCH_S = 5.0
REBALANCE = dict(scaler=("hfx", {"borrow_spare": True}), role_switch_s=ROLE_SWITCH_S)
PD = dict(
    prefill_policy=DISPATCH,
    decode_policy=("sibyl", {"reqlevel": True}),
    batch_scheduler=ENGINE,
    online_fit=True,
    **REBALANCE,
    max_instances=0,
)

register(
    Preset(
        "slocore",
        "slocore",
        "slo_predict dispatch (predicted TTFT/TPOT per instance: queue, decodes, hardware, cached prefix) over "
        "slo_triage engines (vLLM priority order for requests that can still meet their first-token deadline, "
        "late ones after them) whose latency model is refitted online to the iterations run; "
        "P/D decodes by SIBYL's request-count projection at the handoff, and the pools "
        "rebalanced by role switches on the cluster's own instance budget",
        "ProServe Eq. 3-7; HFX appendix A (relative least squares, online); HFX Alg. 2, Alg. 3 (role "
        "switching); SIBYL Alg. 1 (REQLEVEL); vLLM V1 priority scheduler",
        colocated=dict(COLOCATED),
        pd=dict(PD),
    )
)
# The router alone, over engines that serve in arrival order (vLLM's default scheduler).
ROUTER_ONLY = dict(global_policy=(DISPATCH, {"order": "fifo", "hold": True}), batch_scheduler="sarathi_fcfs")

register(
    Preset(
        "slocore-router",
        "slocore",
        "slocore's router alone in front of engines that keep their own first-come-first-served scheduler "
        "(vLLM's default): slo_predict holds the queue in the router and releases it by first-token deadline, "
        "hopeless requests last, to instances with under one iteration of prefill backlog (a cached prefix there "
        "counts as room)",
        "ProServe Eq. 3-7 (prediction); HFX Sec. 4 (the router-held queue), generalised: no per-poll token cap",
        colocated=dict(ROUTER_ONLY),
    )
)
register(
    Preset(
        "slocore+scale",
        "slocore",
        "the slocore stack with the HFX scaler (Fast Scaling cold start, role switching in P/D, up to 2x instances)",
        "as slocore; HFX Alg. 3, Sec. 7",
        colocated=dict(COLOCATED, scaler="hfx", cold_start="d2d"),
        pd={**{k: v for k, v in PD.items() if k != "max_instances"}, "cold_start": "d2d"},
        tags=("scaling",),
    )
)
# For TPOT-critical classes (short real-time outputs): the TPOT guard caps running prefills
# too and lets a step run to the on-time decodes' pace (slo_triage's `strict_tpot`). Not the
# default: on the matrix it costs sharegpt_prio 1-2 points of first tokens (docs/benchmark.md,
# "Decode pacing on SLICE's mix").
STRICT_ENGINE = (ENGINE, {"strict_tpot": True})
register(
    Preset(
        "slocore+strict_tpot",
        "slocore",
        "the slocore stack with slo_triage's strict TPOT guard: running prefills are chunked to what the tightest "
        "on-time decodes' pace allows, for classes with short outputs and tight TPOT SLOs (real-time, voice), at "
        "some first-token speed",
        "as slocore; SLICE Alg. 3 (per-request decode rates)",
        colocated=dict(COLOCATED, batch_scheduler=STRICT_ENGINE),
        pd=dict(PD, batch_scheduler=STRICT_ENGINE),
    )
)
