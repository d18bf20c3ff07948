"""Run one simulation from Python: build the C++ config from names and parameters, run it
with the GIL released, and summarise with the one metrics definition (core/metrics.h).

    from slocore.sim import simulate, workloads
    res = simulate(workloads.hfx_4task(rate=8, seed=0), profile="ascend910b-qwen7b",
                   global_policy="least_outstanding", batch_scheduler="sarathi_fcfs")
    res.summary["attainment"]
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Union

import numpy as np

from slocore import _core
from slocore.profiles import hardware_profile
from slocore.roles import COLOCATED

PolicySpec = Union[str, tuple, "_core.GlobalPolicy", None]
SchedulerSpec = Union[str, tuple, Callable[[], "_core.BatchScheduler"], None]

# HFX Table 2: seconds to bring up an instance, by weight source.
# "d2d" = Fast Scaling (device-to-device from a running instance), "host" = CPU offloading,
# "disk" = loading from disk. The simulator uses the row of the profile's model size class.
# One definition: csrc/slocore/hfx/cold_start.h, read through the binding.
COLD_START_S = _core.hfx_cold_start_table()
COEFF_NAMES = ("t_c", "a_p", "b_p", "c_p", "a_d", "b_d")


def cold_start_seconds(profile: dict, source: str | float) -> float:
    """Cold start for `source` ('disk'|'host'|'d2d' or seconds) on `profile`'s model class."""
    if isinstance(source, (int, float)):
        if not (source >= 0 and math.isfinite(source)):
            raise ValueError(f"cold_start: must be a finite number >= 0 or one of disk/host/d2d, got {source!r}")
        return float(source)
    params_b = float(profile.get("model", {}).get("params_b", 7.0))
    row = "qwen7b" if params_b < 20 else "qwen32b" if params_b < 50 else "llama70b"
    if source not in COLD_START_S[row]:
        raise ValueError(f"cold_start: unknown source {source!r} (known: {', '.join(COLD_START_S[row])})")
    return COLD_START_S[row][source]


def _split(spec, what: str) -> tuple[str, dict]:
    if isinstance(spec, str):
        return spec, {}
    if isinstance(spec, (tuple, list)) and len(spec) == 2 and isinstance(spec[0], str) and isinstance(spec[1], dict):
        return spec[0], dict(spec[1])
    raise ValueError(f"{what}: expected a name, (name, params) or an object, got {spec!r}")


def make_policy(spec: PolicySpec, what: str = "global_policy") -> _core.GlobalPolicy:
    if isinstance(spec, _core.GlobalPolicy):
        return spec
    name, params = _split(spec, what)
    return _core.make_global_policy(name, params)


def scheduler_factory(spec: SchedulerSpec, what: str = "batch_scheduler") -> Callable[[], _core.BatchScheduler]:
    """One scheduler per engine: a name/(name, params) goes through the registry (checked now,
    so a typo fails before the run); a class or zero-argument callable is called per engine."""
    if callable(spec) and not isinstance(spec, (str, tuple)):
        return spec
    name, params = _split(spec, what)
    _core.make_batch_scheduler(name, params)  # validate early
    return lambda: _core.make_batch_scheduler(name, params)


def _make_scaler(spec) -> _core.Scaler | None:
    if spec is None or isinstance(spec, _core.Scaler):
        return spec
    name, params = _split(spec, "scaler")
    return _core.make_scaler(name, params)


def describe(obj) -> dict:
    try:
        return {"name": obj.name(), "params": dict(obj.params())}
    except Exception:  # a user object without params()
        return {"name": type(obj).__name__, "params": {}}


def requests_of(workload) -> list:
    """C++ Requests from a Workload (numpy columns) or a list of slocore.Request."""
    if isinstance(workload, (list, tuple)):
        return list(workload)
    n = len(workload.arrival)
    return _core.requests_from_columns(
        np.arange(n, dtype=np.int64), workload.arrival, workload.prompt_len, workload.output_len,
        workload.ttft, workload.tpot, workload.deadline, workload.priority, workload.priority_weight,
        workload.utility, workload.task, list(workload.task_names))


def tdg_weights(requests) -> tuple[float, float]:
    """ProServe 5.1: first-token vs decode-token weight from the mean input/output ratio."""
    if not requests:
        return 1.0, 1.0
    mean_in = sum(r.prompt_len for r in requests) / len(requests)
    mean_out = sum(r.output_len or 1 for r in requests) / len(requests)
    return mean_in / mean_out, 1.0


@dataclass
class SimResult:
    summary: dict
    recorder: Any
    stats: dict
    timeline: list
    config: dict = field(default_factory=dict)


def simulate(
    workload,
    *,
    profile: str | dict | _core.HardwareProfile = "h100-llama2-7b",
    mode: str = "colocated",
    instances: int = 2,
    prefill_instances: int = 1,
    decode_instances: int = 1,
    global_policy: PolicySpec = "round_robin",
    prefill_policy: PolicySpec = "round_robin",
    decode_policy: PolicySpec = "round_robin",
    batch_scheduler: SchedulerSpec = "sarathi_fcfs",
    decode_batch_scheduler: SchedulerSpec = None,
    scaler=None,
    max_instances: int = 0,
    min_instances: int = 1,
    cold_start: str | float = "disk",
    role_switch_s: float = 0.0,
    max_batch_tokens: int = 2048,
    max_num_seqs: int = 256,
    decode_model: str = "iteration",
    noise_sigma: float = 0.0,
    belief_scale: float = 1.0,
    belief_noise: float = 0.0,
    belief_profile: str | dict | None = None,
    correction_window: int = 32,
    tdg_weights_: tuple[float, float] | None = None,
    max_time: float = math.inf,
    seed: int = 0,
) -> SimResult:
    """Simulate `workload` on a cluster and return its summary (see module docstring)."""
    if mode not in (COLOCATED, "pd"):
        raise ValueError(f"mode: must be 'colocated' or 'pd', got {mode!r}")
    if decode_model not in ("iteration", "processor_sharing"):
        raise ValueError(f"decode_model: must be 'iteration' or 'processor_sharing', got {decode_model!r}")
    hw, data = hardware_profile(profile)
    cfg = _core.SimConfig()
    cfg.profile = hw
    cfg.disaggregated = mode == "pd"
    cfg.instances, cfg.prefill_instances, cfg.decode_instances = instances, prefill_instances, decode_instances
    policies = {}
    if cfg.disaggregated:
        cfg.prefill_policy = policies["prefill_policy"] = make_policy(prefill_policy, "prefill_policy")
        cfg.decode_policy = policies["decode_policy"] = make_policy(decode_policy, "decode_policy")
    else:
        cfg.global_policy = policies["global_policy"] = make_policy(global_policy)
    cfg.batch_scheduler = scheduler_factory(batch_scheduler)
    if decode_batch_scheduler is not None:
        cfg.decode_batch_scheduler = scheduler_factory(decode_batch_scheduler, "decode_batch_scheduler")
    cfg.scaler = _make_scaler(scaler)
    cfg.max_instances, cfg.min_instances = max_instances, min_instances
    cfg.cold_start_s = cold_start_seconds(data, cold_start)
    cfg.role_switch_s = role_switch_s
    cfg.max_batch_tokens, cfg.max_num_seqs = max_batch_tokens, max_num_seqs
    cfg.processor_sharing = decode_model == "processor_sharing"
    cfg.noise_sigma, cfg.belief_scale, cfg.correction_window = noise_sigma, belief_scale, correction_window
    if not (isinstance(belief_noise, (int, float)) and 0 <= belief_noise < 1):
        raise ValueError(f"belief_noise: must be a number in [0, 1), got {belief_noise!r}")
    cfg.belief_noise = float(belief_noise)  # per instance, uniform in [1 - x, 1 + x] (sim/belief_noise.h)
    if belief_profile is not None:  # a wrong-shape predictor: another profile's coefficients x belief_scale
        coeffs = hardware_profile(belief_profile)[0].coeffs
        cfg.belief = _core.LatencyCoeffs(**{k: belief_scale * getattr(coeffs, k) for k in COEFF_NAMES})
    cfg.max_time, cfg.seed = max_time, seed
    cfg.validate()

    reqs = requests_of(workload)
    raw = _core.simulate(reqs, cfg)
    w_p, w_d = tdg_weights_ or tdg_weights(reqs)
    summary = _core.summarize(raw.recorder, _core.MetricsOptions(w_prefill=w_p, w_decode=w_d))
    config = {
        "profile": hw.name, "mode": mode, "instances": instances, "prefill_instances": prefill_instances,
        "decode_instances": decode_instances, "max_instances": max_instances, "cold_start_s": cfg.cold_start_s,
        "decode_model": decode_model, "noise_sigma": noise_sigma, "belief_scale": belief_scale, "belief_noise": belief_noise,
        "belief_profile": belief_profile if isinstance(belief_profile, (str, type(None))) else "custom", "seed": seed,
        "tdg_weights": (w_p, w_d), "max_batch_tokens": max_batch_tokens, "max_num_seqs": max_num_seqs,
        **{k: describe(v) for k, v in policies.items()},
        "batch_scheduler": batch_scheduler if isinstance(batch_scheduler, (str, tuple)) else repr(batch_scheduler),
        "scaler": describe(cfg.scaler) if cfg.scaler is not None else None,
    }
    return SimResult(summary=summary, recorder=raw.recorder, stats=raw.stats, timeline=raw.timeline, config=config)
