"""Named stacks: a global policy (or a prefill/decode pair), an engine scheduler, an optional
scaler and their parameters, as `slocore.sim.simulate()` keyword arguments.

    from slocore.sim import preset, presets, simulate   # this module is slocore.sim.stacks
    simulate(workload, profile="ascend910b-qwen7b", instances=4, **preset("least_outstanding+edf"))
    simulate(workload, mode="pd", **preset("hfx", mode="pd"))

Baselines are what production engines and routers ship (docs/baselines.md); paper stacks are
the systems slocore reproduces. A stack whose policies this build does not register is left
out of `presets()` (e.g. the cache-aware routers before they land). The `slocore` stack (a
later issue) registers itself here: `register(Preset("slocore", ...))` in a module named in
`PRESET_MODULES`, which is imported on first use when it exists.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from slocore import _core

MODES = ("colocated", "pd")
# Modules that register more presets when they exist (the hook for the `slocore` stack).
PRESET_MODULES = ("slocore.sim.presets_slocore",)
POLICY_KEYS = ("global_policy", "prefill_policy", "decode_policy")
SCHEDULER_KEYS = ("batch_scheduler", "decode_batch_scheduler")


@dataclass(frozen=True)
class Preset:
    name: str
    kind: str  # "baseline" | "paper" | "slocore"
    description: str
    source: str  # paper section or system the stack follows
    colocated: dict | None = None  # simulate() kwargs in colocated mode; None: not defined
    pd: dict | None = None  # simulate() kwargs in P/D mode (mode="pd" is added)
    tags: tuple = field(default_factory=tuple)  # e.g. "scaling": adds instances (compare its cost)

    def modes(self) -> tuple[str, ...]:
        return tuple(m for m in MODES if self.kwargs_for(m) is not None)

    def kwargs_for(self, mode: str) -> dict | None:
        return self.colocated if mode == "colocated" else self.pd


_PRESETS: dict[str, Preset] = {}


def register(p: Preset) -> Preset:
    if p.kind not in ("baseline", "paper", "slocore"):
        raise ValueError(f"preset {p.name!r}: kind must be baseline, paper or slocore, got {p.kind!r}")
    if p.name in _PRESETS:
        raise ValueError(f"preset {p.name!r} registered twice")
    if p.colocated is None and p.pd is None:
        raise ValueError(f"preset {p.name!r}: needs colocated or pd kwargs")
    _PRESETS[p.name] = p
    return p


def _names(kw: dict):
    for key in POLICY_KEYS + SCHEDULER_KEYS + ("scaler",):
        v = kw.get(key)
        if isinstance(v, str):
            yield v
        elif isinstance(v, tuple):
            yield v[0]


def _available(p: Preset) -> bool:
    known = set(_core.global_policy_names()) | set(_core.batch_scheduler_names()) | set(_core.scaler_names())
    return all(n in known for m in p.modes() for n in _names(p.kwargs_for(m)))


def _load_modules() -> None:
    import importlib

    for mod in PRESET_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


def presets(kind: str | None = None, mode: str | None = None, include_unavailable: bool = False) -> dict[str, Preset]:
    """The named stacks, by name: those whose policies this build registers, optionally only
    of one kind ("baseline", "paper", "slocore") and defined for one mode."""
    _load_modules()
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode: must be one of {', '.join(MODES)}, got {mode!r}")
    return {
        n: p
        for n, p in _PRESETS.items()
        if (include_unavailable or _available(p))
        and (kind is None or p.kind == kind)
        and (mode is None or p.kwargs_for(mode) is not None)
    }


def default_engine_scheduler() -> tuple[str, dict]:
    """(name, params) of the `slocore` preset's engine scheduler (colocated): the default of
    the vLLM scheduler plugin and of `slocore bench live`'s plugin setting, so that a real
    engine runs what the simulated stack runs. `sarathi_fcfs` where this build has no
    `slocore` preset."""
    p = presets(mode="colocated").get("slocore")
    if p is None:
        return "sarathi_fcfs", {}
    bs = p.colocated["batch_scheduler"]
    return (bs[0], dict(bs[1])) if isinstance(bs, tuple) else (bs, {})


def preset(name: str, mode: str = "colocated") -> dict:
    """`simulate()` keyword arguments of the named stack in `mode` (a fresh copy)."""
    _load_modules()
    if mode not in MODES:
        raise ValueError(f"mode: must be one of {', '.join(MODES)}, got {mode!r}")
    if not isinstance(name, str) or name not in _PRESETS:
        raise KeyError(f"unknown preset {name!r} (known: {', '.join(sorted(presets()))})")
    p = _PRESETS[name]
    kw = p.kwargs_for(mode)
    if kw is None:
        raise ValueError(f"preset {name!r} has no {mode} stack (it has: {', '.join(p.modes())})")
    if not _available(p):
        raise ValueError(f"preset {name!r} needs a policy this build does not register: {sorted(set(_names(kw)))}")
    out = copy.deepcopy(kw)
    if mode == "pd":
        out["mode"] = "pd"
    return out


def _stack(router, scheduler, pd_router=None, pd_decode=None, **extra) -> tuple[dict, dict]:
    """Colocated and P/D kwargs of "router + engine scheduler": in P/D the router places on
    both pools (or `pd_router`/`pd_decode` when given)."""
    col = dict(global_policy=router, batch_scheduler=scheduler, **extra)
    pd = dict(
        prefill_policy=pd_router or router,
        decode_policy=pd_decode or pd_router or router,
        batch_scheduler=scheduler,
        **extra,
    )
    return col, pd


def _baseline(name, router, scheduler, description, source, **kw):
    col, pd = _stack(router, scheduler)
    register(Preset(name, "baseline", description, source, colocated=col, pd=pd, **kw))


# Baselines (docs/baselines.md). One set of defaults for every workload.
_baseline(
    "rr+sarathi_fcfs",
    "round_robin",
    "sarathi_fcfs",
    "round robin over Sarathi-Serve FCFS engines (the HFX/SIBYL 'RR' baseline)",
    "Llumnix RR; Sarathi-Serve (OSDI'24)",
)
_baseline(
    "rr+edf",
    "round_robin",
    "edf",
    "round robin over earliest-token-deadline-first engines",
    "FairBatching-style EDF (ProServe Eq. 3 deadlines)",
)
_baseline(
    "least_outstanding+sarathi_fcfs",
    "least_outstanding",
    "sarathi_fcfs",
    "fewest outstanding requests over Sarathi-Serve FCFS engines (ProServe Min-Load)",
    "ProServe Sec. 6",
)
_baseline(
    "least_outstanding+edf",
    "least_outstanding",
    "edf",
    "fewest outstanding requests over EDF engines",
    "SIBYL ILS router; FairBatching-style EDF",
)
_baseline(
    "least_outstanding+sarathi_priority",
    "least_outstanding",
    "sarathi_priority",
    "fewest outstanding requests over Sarathi-Serve engines with (priority, arrival) prefill order",
    "ProServe Sec. 6 'Sarathi-Priority'",
)
_baseline(
    "p2c+edf",
    "power_of_two",
    "edf",
    "power of two choices over EDF engines",
    "Mitzenmacher, IEEE TPDS 2001; Envoy/Finagle p2c",
)
_baseline(
    "vllm_priority",
    "round_robin",
    "vllm_priority",
    "vLLM V1 --scheduling-policy priority engines behind a round-robin router (vLLM router default)",
    "vllm/v1/core/sched/scheduler.py; vLLM production-stack router",
)
_baseline(
    "least_outstanding+vllm_priority",
    "least_outstanding",
    "vllm_priority",
    "vLLM V1 priority engines behind a least-outstanding router",
    "vllm/v1/core/sched/scheduler.py",
)
_baseline(
    "scorpio",
    "scorpio",
    "sarathi_fcfs",
    "SCORPIO-style SLO-aware router over Sarathi FCFS engines",
    "HFX Sec. 8 baseline (SCORPIO)",
)
# Cache-aware routers (llm-d scorer, Dynamo KV router) are registered by their module when
# they land; see CACHE_AWARE below.

# Paper stacks.
register(
    Preset(
        "hfx",
        "paper",
        "HFX dispatcher (colocated) / P-stage dispatcher + D-stage migrator (P/D)",
        "HFX Alg. 1, Sec. 5-6",
        colocated=dict(global_policy="hfx", batch_scheduler="sarathi_fcfs"),
        pd=dict(prefill_policy="hfx_prefill", decode_policy="hfx_migrator", batch_scheduler="sarathi_fcfs"),
    )
)
register(
    Preset(
        "hfx_pm",
        "paper",
        "HFX with priority mapping (SLOs from priority, Table 1 medians +-25%)",
        "HFX Sec. 8.2",
        colocated=dict(global_policy="hfx_pm", batch_scheduler="sarathi_fcfs"),
    )
)
register(
    Preset(
        "hfx_scaling",
        "paper",
        "HFX with its scaler (Fast Scaling cold start, up to 2x the instances)",
        "HFX Sec. 7, Table 2",
        colocated=dict(global_policy="hfx", batch_scheduler="sarathi_fcfs", scaler="hfx", cold_start="d2d"),
        pd=dict(
            prefill_policy="hfx_prefill",
            decode_policy="hfx_migrator",
            batch_scheduler="sarathi_fcfs",
            scaler="hfx",
            cold_start="d2d",
        ),
        tags=("scaling",),
    )
)
register(
    Preset(
        "goroute+slide_batching",
        "paper",
        "ProServe: GoRouting over SlideBatching engines",
        "ProServe Sec. 4-5 (Alg. 1, Eq. 3)",
        colocated=dict(global_policy=("goroute", {"mode": "colocated"}), batch_scheduler="slide_batching"),
        pd=dict(
            prefill_policy=("goroute", {"mode": "pd"}),
            decode_policy=("goroute", {"mode": "decode"}),
            batch_scheduler=("slide_batching", {"phi": "p"}),
        ),
    )
)
register(
    Preset(
        "least_outstanding+slide_batching",
        "paper",
        "ProServe's SlideBatching engines behind Min-Load",
        "ProServe Sec. 5",
        colocated=dict(global_policy="least_outstanding", batch_scheduler="slide_batching"),
    )
)
register(
    Preset(
        "slice",
        "paper",
        "SLICE engines (online cycle bound 0.9 s) behind round robin",
        "SLICE Alg. 4",
        colocated=dict(global_policy="round_robin", batch_scheduler=("slice", {"max_cycle": 0.9})),
    )
)
register(
    Preset(
        "sibyl",
        "paper",
        "SIBYL decode placement behind least-outstanding prefill placement",
        "SIBYL Alg. 1-3",
        pd=dict(prefill_policy="least_outstanding", decode_policy="sibyl", batch_scheduler="sarathi_fcfs"),
    )
)
register(
    Preset(
        "rr+orca",
        "baseline",
        "round robin over Orca engines (SLICE's baseline)",
        "Orca (OSDI'22)",
        colocated=dict(global_policy="round_robin", batch_scheduler="orca"),
    )
)
register(
    Preset(
        "rr+mlfq",
        "baseline",
        "round robin over FastServe MLFQ engines (SLICE's baseline)",
        "FastServe (arXiv'23)",
        colocated=dict(global_policy="round_robin", batch_scheduler="mlfq"),
    )
)

# Cache-aware routers, registered here as soon as the build has them (names as registered).
CACHE_AWARE = {
    "llmd_scorer+sarathi_fcfs": ("llmd_scorer", "llm-d-style weighted scorer (prefix cache + queue + KV)", "llm-d"),
    "kv_router+sarathi_fcfs": (
        "kv_router",
        "Dynamo-style KV router (uncached prefill + active decode blocks)",
        "Dynamo",
    ),
}
for _name, (_router, _desc, _src) in CACHE_AWARE.items():
    _baseline(_name, _router, "sarathi_fcfs", _desc, _src)


def scaling_kwargs(kw: dict, instances: int) -> dict:
    """A scaling preset's kwargs on a cluster of `instances`: it may grow to twice that."""
    if kw.get("scaler") is not None and "max_instances" not in kw:
        kw = {**kw, "max_instances": 2 * instances}
    return kw


def describe(name: str) -> str:
    """One line per mode: the stack's policies and parameters."""
    p = _PRESETS[name]
    return "; ".join(f"{m}: " + ", ".join(f"{k}={v}" for k, v in p.kwargs_for(m).items()) for m in p.modes())
