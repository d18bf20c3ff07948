"""slocore in Ray Serve: a request router that places requests with a slocore global policy
(``SloRequestRouter``), the replica side that reports routing and autoscaling stats
(``SloReplicaStats``; ``EmulatedEngineReplica`` serves the emulated engine), a handle that
reports streamed tokens to the router (``SloHandle``) and the HFX scaler as a Ray Serve
custom autoscaling policy (``SloAutoscalingPolicy``). Needs ``ray[serve]`` (the ``ray``
extra). Setup: docs/ray_serve.md.

    from slocore.integrations.ray_serve import slo_autoscaling_config, slo_router_config
    app = MyLLM.options(request_router_config=slo_router_config(),
                        autoscaling_config=slo_autoscaling_config(1, 8)).bind()
"""

from __future__ import annotations

_LAZY = {
    "SloRequestRouter": "router",
    "DEFAULT_POLICY": "router",
    "SloReplicaStats": "replica",
    "EmulatedEngineReplica": "replica",
    "SloHandle": "handle",
    "SloAutoscalingPolicy": "autoscaling",
    "parse_request": "request",
}


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)


def slo_router_config(
    policy: str | None = None,
    policy_params: dict | None = None,
    stats_period_s: float = 0.2,
    initial_backoff_s: float = 0.01,
    max_backoff_s: float = 0.1,
    **router_kwargs,
):
    """``RequestRouterConfig`` for ``SloRequestRouter`` (kwargs: see its module docstring).
    Short backoffs: a pull policy (HFX) answers at its next poll, which is Ray's next try."""
    from ray.serve.config import RequestRouterConfig

    from slocore.integrations.ray_serve.router import DEFAULT_POLICY, SloRequestRouter

    kw = {"policy": policy or DEFAULT_POLICY, "policy_params": dict(policy_params or {}), **router_kwargs}
    return RequestRouterConfig(
        request_router_class=SloRequestRouter,
        request_router_kwargs=kw,
        request_routing_stats_period_s=stats_period_s,
        initial_backoff_s=initial_backoff_s,
        max_backoff_s=max_backoff_s,
    )


def slo_autoscaling_config(
    min_replicas: int,
    max_replicas: int,
    scaler: str = "hfx",
    params: dict | None = None,
    pool: str = "colocated",
    metrics_interval_s: float = 0.5,
    **policy_kwargs,
):
    """``AutoscalingConfig`` whose policy is ``SloAutoscalingPolicy``; Ray's own up/down
    delays are off (the HFX scaler has its own patience and cooldown, HFX Alg. 3)."""
    from ray.serve.config import AutoscalingConfig, AutoscalingPolicy

    from slocore.integrations.ray_serve.autoscaling import SloAutoscalingPolicy

    pk = {"scaler": scaler, "params": dict(params or {}), "pool": pool, **policy_kwargs}
    return AutoscalingConfig(
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        initial_replicas=min_replicas,
        upscale_delay_s=0.0,
        downscale_delay_s=0.0,
        metrics_interval_s=metrics_interval_s,  # deprecated in Ray 2.60 for env vars it does not read yet
        look_back_period_s=max(1.0, 2 * metrics_interval_s),
        policy=AutoscalingPolicy(policy_function=SloAutoscalingPolicy, policy_kwargs=pk),
    )
