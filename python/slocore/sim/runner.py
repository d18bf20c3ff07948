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
from slocore.roles import COLOCATED, PD_FIRST_TOKEN

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


ProfileSpec = Union[str, dict, "_core.HardwareProfile"]


def profile_list(spec, n: int, what: str, cold_start) -> list:
    """One HardwareProfile per instance from a single spec or a list of n specs; each list
    entry carries its own cold start (`cold_start` applied to that profile's model class)."""
    if not isinstance(spec, (list, tuple)):
        return []
    if len(spec) != n:
        raise ValueError(f"{what}: expected {n} profiles (one per instance), got {len(spec)}")
    out = []
    for p in spec:
        hw, data = hardware_profile(p)
        if hw.cold_start_s < 0 and "per_request" in data:
            hw.cold_start_s = cold_start_seconds(data, cold_start)
        out.append(hw)
    return out


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


def describe_scheduler(spec: SchedulerSpec):
    """A registry spec as {name, params} with every effective parameter (fed back, it builds the same scheduler)."""
    if isinstance(spec, (str, tuple, list)):
        return describe(_core.make_batch_scheduler(*_split(spec, "batch_scheduler")))
    return repr(spec)


def requests_of(workload) -> list:
    """C++ Requests from a Workload (numpy columns) or a list of slocore.Request."""
    if isinstance(workload, (list, tuple)):
        return list(workload)
    if not hasattr(workload, "arrival"):
        got = repr(workload)[:80]
        raise TypeError(f"workload: expected a Workload (slocore.sim.workloads) or a list of Requests, got {got}")
    n = len(workload.arrival)
    prefix = {}
    if getattr(workload, "prefix", None) is not None:
        segs = [seg or () for seg in workload.prefix]
        offsets = np.zeros(n + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(x) for x in segs])
        prefix = dict(
            prefix_offsets=offsets,
            prefix_groups=np.array([g for x in segs for g, _ in x], dtype=np.uint64),
            prefix_lens=np.array([ln for x in segs for _, ln in x], dtype=np.int64),
        )
    return _core.requests_from_columns(
        np.arange(n, dtype=np.int64),
        workload.arrival,
        workload.prompt_len,
        workload.output_len,
        workload.ttft,
        workload.tpot,
        workload.deadline,
        workload.priority,
        workload.priority_weight,
        workload.utility,
        workload.task,
        list(workload.task_names),
        **prefix,
    )


def tdg_weights(requests) -> tuple[float, float]:
    """ProServe 5.1: first-token vs decode-token weight from the mean input/output ratio
    (of a list of Requests, or of a Workload's columns without making Requests)."""
    if hasattr(requests, "prompt_len") and hasattr(requests, "output_len"):  # a Workload
        n = len(requests.prompt_len)
        if n == 0:
            return 1.0, 1.0
        out = np.where(requests.output_len > 0, requests.output_len, 1)  # `or 1` of the list form
        return (int(np.sum(requests.prompt_len, dtype=np.int64)) / n) / (int(np.sum(out, dtype=np.int64)) / n), 1.0
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


def _check_ints(**fields) -> None:
    """name=(value, lowest, highest or None): each an int (None: not given) in range, before the
    binding sees it (its own error names no field)."""
    for name, (v, lo, hi) in fields.items():
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}: must be an integer, got {v!r}")
        if v < lo or (hi is not None and v > hi):
            raise ValueError(f"{name}: must be in [{lo}, {hi if hi is not None else 'inf'}], got {v}")


def simulate(
    workload,
    *,
    profile: ProfileSpec | list = "h100-llama2-7b",
    mode: str = "colocated",
    instances: int | None = None,
    prefill_instances: int | None = None,
    decode_instances: int | None = None,
    prefill_profile: ProfileSpec | list | None = None,
    decode_profile: ProfileSpec | list | None = None,
    scale_profiles: list | None = None,
    prefix_caching: bool = True,
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
    pd_first_token: str = "prefill",
    noise_sigma: float = 0.0,
    belief_scale: float = 1.0,
    belief_noise: float = 0.0,
    belief_profile: str | dict | None = None,
    correction_window: int = 32,
    online_fit: bool = False,
    tdg_weights_: tuple[float, float] | None = None,
    max_time: float = math.inf,
    seed: int = 0,
    warmup_s: float | None = None,
) -> SimResult:
    """Simulate `workload` on a cluster and return its summary (see module docstring).

    Heterogeneous clusters: `profile` may be a list with one profile (name, dict or
    HardwareProfile) per colocated instance; in P/D, `prefill_profile` / `decode_profile`
    give one per prefill / decode instance (a single spec: every instance of that pool; None:
    `profile`). A scale-out adds the pool's first profile unless the scaler's decision names
    another (any profile given here or in `scale_profiles`); each listed profile cold-starts
    by its own model class. `prefix_caching` (on, as in vLLM) only matters for workloads with
    prefix identity. `warmup_s` leaves requests arriving before it out of the summary (None:
    the workload's params["warmup_s"], e.g. from `workloads.steady`, else 0). `online_fit`:
    every `correction_window` iterations each engine refits its belief's six coefficients to
    the iterations it ran (core/online_fit.h) instead of ProServe's single correction factor.
    `pd_first_token` (P/D): where the metrics date a handed-off request's first token:
    "prefill", when the prefill instance samples it (DistServe's and SIBYL's TTFT), or "decode",
    at the decode instance's first step, where a client behind vLLM's P/D proxy protocol
    (`slocore serve`'s) first sees it; the policies see it at the prefill's end either way."""
    if warmup_s is None:
        warmup_s = float(getattr(workload, "params", {}).get("warmup_s", 0.0))
    _check_ints(
        seed=(seed, 0, 2**64 - 1),
        instances=(instances, 1, None),
        prefill_instances=(prefill_instances, 1, None),
        decode_instances=(decode_instances, 1, None),
        max_instances=(max_instances, 0, None),
        min_instances=(min_instances, 0, None),
        max_batch_tokens=(max_batch_tokens, 1, None),
        max_num_seqs=(max_num_seqs, 1, None),
        correction_window=(correction_window, 0, None),
    )
    if not isinstance(prefix_caching, bool):
        raise TypeError(f"prefix_caching: must be True or False, got {prefix_caching!r}")
    if mode not in (COLOCATED, "pd"):
        raise ValueError(f"mode: must be 'colocated' or 'pd', got {mode!r}")
    if decode_model not in ("iteration", "processor_sharing"):
        raise ValueError(f"decode_model: must be 'iteration' or 'processor_sharing', got {decode_model!r}")
    if pd_first_token not in PD_FIRST_TOKEN:
        raise ValueError(f"pd_first_token: must be 'prefill' or 'decode', got {pd_first_token!r}")

    def count(given, spec, default):
        return given if given is not None else len(spec) if isinstance(spec, (list, tuple)) else default

    pd = mode == "pd"
    instances = count(instances, None if pd else profile, 2)
    p_spec = prefill_profile if prefill_profile is not None else profile
    d_spec = decode_profile if decode_profile is not None else profile
    prefill_instances = count(prefill_instances, p_spec if pd else None, 1)
    decode_instances = count(decode_instances, d_spec if pd else None, 1)
    first = profile[0] if isinstance(profile, (list, tuple)) and profile else profile
    hw, data = hardware_profile(first)
    cfg = _core.SimConfig()
    cfg.profile = hw
    cfg.disaggregated = pd
    cfg.instances, cfg.prefill_instances, cfg.decode_instances = instances, prefill_instances, decode_instances
    if pd:
        single = lambda s, n: [s] * n if s is not None and not isinstance(s, (list, tuple)) else s  # noqa: E731
        cfg.prefill_profiles = profile_list(
            single(prefill_profile, prefill_instances) if prefill_profile is not None else profile,
            prefill_instances,
            "prefill_profile",
            cold_start,
        )
        cfg.decode_profiles = profile_list(
            single(decode_profile, decode_instances) if decode_profile is not None else profile,
            decode_instances,
            "decode_profile",
            cold_start,
        )
    else:
        cfg.instance_profiles = profile_list(profile, instances, "profile", cold_start)
    if scale_profiles:
        cfg.scale_profiles = profile_list(list(scale_profiles), len(scale_profiles), "scale_profiles", cold_start)
    cfg.prefix_caching = bool(prefix_caching)
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
    cfg.pd_first_token_at_decode = pd_first_token == "decode"
    cfg.noise_sigma, cfg.belief_scale, cfg.correction_window = noise_sigma, belief_scale, correction_window
    if not isinstance(online_fit, bool):
        raise TypeError(f"online_fit: must be True or False, got {online_fit!r}")
    cfg.online_fit = online_fit
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
    w_p, w_d = tdg_weights_ or tdg_weights(reqs if isinstance(workload, (list, tuple)) else workload)
    summary = _core.summarize(raw.recorder, _core.MetricsOptions(w_prefill=w_p, w_decode=w_d, warmup_s=warmup_s))
    config = {
        "profile": hw.name,
        "mode": mode,
        "prefix_caching": bool(prefix_caching),
        "warmup_s": warmup_s,
        "instance_profiles": [
            p.name for p in (list(cfg.instance_profiles) or list(cfg.prefill_profiles) + list(cfg.decode_profiles))
        ],
        "instances": instances,
        "prefill_instances": prefill_instances,
        "decode_instances": decode_instances,
        "max_instances": max_instances,
        "cold_start_s": cfg.cold_start_s,
        "decode_model": decode_model,
        "pd_first_token": pd_first_token,
        "noise_sigma": noise_sigma,
        "belief_scale": belief_scale,
        "belief_noise": belief_noise,
        "belief_profile": belief_profile if isinstance(belief_profile, (str, type(None))) else "custom",
        "correction": "online_fit" if online_fit else "factor" if correction_window else "off",
        "seed": seed,
        "tdg_weights": (w_p, w_d),
        "max_batch_tokens": max_batch_tokens,
        "max_num_seqs": max_num_seqs,
        **{k: describe(v) for k, v in policies.items()},
        "batch_scheduler": describe_scheduler(batch_scheduler),
        "decode_batch_scheduler": None
        if decode_batch_scheduler is None
        else describe_scheduler(decode_batch_scheduler),
        "scaler": describe(cfg.scaler) if cfg.scaler is not None else None,
    }
    return SimResult(summary=summary, recorder=raw.recorder, stats=raw.stats, timeline=raw.timeline, config=config)
