"""Stacks of ``slocore bench live``: what runs in the router in front of the same engines.

A name is a preset of ``slocore.sim.stacks`` (its colocated global policy and parameters;
its engine scheduler is not used per stack, since every stack of a comparison runs on the
same engines: the scheduler is the run's engine setting), a bare global policy name
(``round_robin``, ``least_outstanding``: baselines), or ``vllm-router`` (vLLM's own router
with its default policy, cache_aware; the command from $SLOCORE_VLLM_ROUTER or PATH).

Baselines are presets of kind "baseline" and bare policy names; every other stack is a
candidate, compared with the best baseline (highest mean overall attainment).

With engines publishing KV events (``--kv-events``), a stack's router subscribes to them only
when its policy reads the engine's cache: a ``prefix_source`` of ``precise`` (kv_router's
default), or a policy without that parameter that reads the cached prefix (slo_predict, hfx,
goroute...: the engine's blocks when given, else the router's approximate index). Cache-blind
policies and ``prefix_source=approximate`` get no subscription (no event decoding in their
router). A ``name@approximate`` / ``name@precise`` suffix sets ``prefix_source``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace

from slocore import _core
from slocore.sim import stacks as _presets

DEFAULT_STACKS = ("round_robin", "least_outstanding", "llmd_scorer+sarathi_fcfs", "vllm-router", "slocore")


@dataclass(frozen=True)
class LiveStack:
    name: str
    baseline: bool
    policy: dict | None = None  # {"name", "params"} for slocore serve
    external: str | None = None  # "vllm-router"
    batch_scheduler: str | None = None  # the preset's own engine scheduler (informative)
    kv_events: bool = False  # its router follows the engines' KV events (when they publish)


# policies that never read a cached prefix
CACHE_BLIND = frozenset({"round_robin", "random", "least_outstanding", "least_tokens", "power_of_two"})
PREFIX_SOURCES = ("approximate", "precise")


def _policy(spec) -> dict:
    if isinstance(spec, tuple):
        return {"name": spec[0], "params": dict(spec[1])}
    return {"name": spec, "params": {}}


def reads_engine_cache(policy: dict) -> bool:
    """Whether `policy` ({"name", "params"}) uses the engine's own blocks (KV events) when given."""
    if policy["name"] in CACHE_BLIND:
        return False
    info = _core.policy_info("global_policy", policy["name"])
    default = {p["name"]: p["default"] for p in info["params"]}
    if "prefix_source" in default:
        return policy["params"].get("prefix_source", default["prefix_source"]) == "precise"
    return True


def resolve(name: str) -> LiveStack:
    if not isinstance(name, str) or not name:
        raise ValueError(f"stack: expected a name, got {name!r}")
    if name == "vllm-router":
        return LiveStack(name, True, external="vllm-router")
    base, _, source = name.partition("@")
    if source and source not in PREFIX_SOURCES:
        raise ValueError(f"stack {name!r}: the suffix after @ must be one of {', '.join(PREFIX_SOURCES)}")
    known = _presets.presets(mode="colocated")
    if base in known:
        kw = _presets.preset(base)
        bs = kw.get("batch_scheduler")
        st = LiveStack(
            name,
            known[base].kind == "baseline",
            policy=_policy(kw["global_policy"]),
            batch_scheduler=bs[0] if isinstance(bs, tuple) else bs,
        )
    elif base in _core.global_policy_names():
        st = LiveStack(name, True, policy={"name": base, "params": {}})
    else:
        st = None
    if st is not None:
        if source:
            info = _core.policy_info("global_policy", st.policy["name"])
            if "prefix_source" not in {p["name"] for p in info["params"]}:
                raise ValueError(f"stack {name!r}: policy {st.policy['name']} has no prefix_source")
            st.policy["params"]["prefix_source"] = source
        return replace(st, kv_events=reads_engine_cache(st.policy))
    raise KeyError(
        f"stack: unknown {name!r} (a colocated preset: {', '.join(sorted(known))}; a global policy: "
        f"{', '.join(_core.global_policy_names())}; or vllm-router)"
    )


def vllm_router_bin() -> str | None:
    """$SLOCORE_VLLM_ROUTER, else `vllm-router` on PATH."""
    env = os.environ.get("SLOCORE_VLLM_ROUTER")
    return env if env and os.path.exists(env) else shutil.which("vllm-router")


def available(names) -> tuple[list[LiveStack], list[str]]:
    """(stacks that can run here, notes on those left out and why)."""
    out, notes = [], []
    for n in names:
        if n == "vllm-router" and vllm_router_bin() is None:
            notes.append("vllm-router: not installed (pip install vllm-router, or $SLOCORE_VLLM_ROUTER), left out")
            continue
        if n == "slocore" and "slocore" not in _presets.presets(mode="colocated"):
            notes.append("slocore: this build has no `slocore` preset, left out")
            continue
        out.append(resolve(n))
    if len({s.name for s in out}) != len(out):
        raise ValueError(f"stacks: a name is given twice in {list(names)}")
    return out, notes


def plugin_scheduler() -> str:
    """The engine scheduler of the plugin setting: the `slocore` preset's, as the plugin's
    own default."""
    return _presets.default_engine_scheduler()[0]
