"""Built-in scenarios: one per paper experiment, listed by `slocore scenarios`.

A scenario fixes a workload family (a function of load and seed), the loads to sweep, the
cluster and the variants (policy combinations) to compare. `slocore simulate --scenario
NAME` runs it; each variant is a dict of `slocore.sim.simulate` keyword arguments.
Paper-specific modules (scenarios_hfx.py, ...) add theirs with `register`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from slocore import _core


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    source: str  # paper file + figure/table it reproduces
    workload: Callable[[float, int], object]  # (load, seed) -> Workload
    loads: tuple[float, ...]
    load_unit: str  # what the load is: "QPS", "req/s", ...
    variants: dict[str, dict]  # label -> simulate(**kwargs)
    cluster: dict = field(default_factory=dict)  # simulate(**kwargs) shared by all variants
    headline: str = ""  # the paper's claim this scenario checks

    def available_variants(self) -> dict[str, dict]:
        """Variants whose policies and schedulers are all registered in this build."""
        known = set(_core.global_policy_names()) | set(_core.batch_scheduler_names()) | set(_core.scaler_names())

        def names(kw):
            for key in (
                "global_policy",
                "prefill_policy",
                "decode_policy",
                "batch_scheduler",
                "decode_batch_scheduler",
                "scaler",
            ):
                v = kw.get(key, self.cluster.get(key))
                if isinstance(v, str):
                    yield v
                elif isinstance(v, tuple):
                    yield v[0]

        return {k: v for k, v in self.variants.items() if all(n in known for n in names(v))}


SCENARIOS: dict[str, Scenario] = {}


def register(s: Scenario) -> Scenario:
    if s.name in SCENARIOS:
        raise ValueError(f"scenario {s.name!r} registered twice")
    SCENARIOS[s.name] = s
    return s


def get(name: str) -> Scenario:
    _load_paper_modules()
    try:
        return SCENARIOS[name]
    except KeyError:
        raise KeyError(f"unknown scenario {name!r} (known: {', '.join(sorted(SCENARIOS))})") from None


def all_scenarios() -> dict[str, Scenario]:
    _load_paper_modules()
    return dict(SCENARIOS)


def _load_paper_modules() -> None:
    import importlib

    for mod in ("scenarios_hfx", "scenarios_slice_proserve", "scenarios_sibyl"):
        try:
            importlib.import_module(f"slocore.sim.{mod}")
        except ModuleNotFoundError as e:
            if e.name != f"slocore.sim.{mod}":
                raise


def _strong_baselines() -> dict:
    """The strong baseline stacks (slocore.sim.stacks presets) as variants."""
    from slocore.sim.stacks import preset

    return {name: preset(name) for name in ("rr+edf", "least_outstanding+sarathi_priority", "vllm_priority")}


def _slocore_stack() -> dict:
    """The `slocore` presets as variants, when this build registers them: the whole stack, and
    its router alone over the scenario's FCFS engines (`slocore-router`)."""
    from slocore.sim.stacks import preset, presets

    return {name: preset(name) for name in ("slocore", "slocore-router") if name in presets()}


def _hfx_4task(load: float, seed: int):
    from slocore.sim import workloads

    return workloads.hfx_4task(rate=load, n_per_task=300, seed=seed)


# The embedded default: HFX's 4-task multi-SLO set (Table 1) on two Ascend 910B Qwen-7B
# instances at three loads, the simple global baselines against the SLO-aware ones.
register(
    Scenario(
        name="default",
        description="HFX 4-task multi-SLO set on 2 colocated instances, 3 loads: baselines vs SLO-aware policies",
        source="HFX Table 1 / Fig. 3 (4-task, 2 instances)",
        workload=_hfx_4task,
        loads=(30.0, 60.0, 90.0),
        load_unit="req/s",
        cluster=dict(profile="ascend910b-qwen7b", instances=2, batch_scheduler="sarathi_fcfs"),
        variants={
            "round_robin": dict(global_policy="round_robin"),
            "least_outstanding": dict(global_policy="least_outstanding"),
            "least_tokens": dict(global_policy="least_tokens"),
            "hfx": dict(global_policy="hfx"),
            "goroute+slide_batching": dict(
                global_policy=("goroute", {"mode": "colocated"}), batch_scheduler="slide_batching"
            ),
            **_strong_baselines(),
            **_slocore_stack(),
        },
        headline="SLO-aware dispatch keeps attainment up as load grows; RR degrades first",
    )
)
