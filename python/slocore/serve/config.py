"""Router configuration (YAML): backends with roles, policies by name with parameters,
SLO defaults and the priority-to-SLO table, timeouts, retries, the admin token.

    listen: {host: 127.0.0.1, port: 8000}
    admin_token: s3cret                  # or env SLOCORE_ADMIN_TOKEN; none = admin disabled
    backends:
      - {name: v0, url: http://127.0.0.1:8100, role: colocated, profile: h100-llama2-7b}
      - {name: e0, emulated: {profile: h100-llama2-7b, time_scale: 1.0}}   # in-process engine
    policy: {name: least_outstanding, params: {}}    # colocated
    prefill_policy: {name: round_robin}               # P/D (backends with role prefill/decode)
    decode_policy: {name: least_tokens}
    slo:
      default: {ttft_ms: 2000, tpot_ms: 100}
      priorities: {0: {ttft_ms: 500, tpot_ms: 50}, 1: {ttft_ms: 5000, tpot_ms: 200}}
      # or HFX's adaptive priority-to-SLO mapper (slocore.PriorityMapper, Alg. 2 / Eq. 6):
      # mapper: {window: 200, ttft_base: [0.7, 1.0], tpot_base: [0.5, 0.7], spread: 0.25}
    timeouts: {connect_s: 5, first_token_s: 60, idle_s: 30, total_s: 600}
    retries: 2
    poll_interval_s: 0.5

No backends at all means one embedded emulated engine (profile ``h100-llama2-7b``).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

ROLES = ("colocated", "prefill", "decode")
DEFAULT_PROFILE = "h100-llama2-7b"


@dataclass
class BackendConfig:
    name: str
    url: str | None = None
    role: str = "colocated"
    profile: str = DEFAULT_PROFILE  # the policies' latency model of this engine
    emulated: dict | None = None  # EmulatedEngine kwargs: started in-process by the router


@dataclass
class PolicyConfig:
    name: str
    params: dict = field(default_factory=dict)


@dataclass
class SloClass:
    ttft_ms: float
    tpot_ms: float
    deadline_ms: float | None = None


@dataclass
class Timeouts:
    connect_s: float = 5.0
    first_token_s: float = 120.0
    idle_s: float = 60.0
    total_s: float = 1800.0


@dataclass
class ServeConfig:
    backends: list[BackendConfig] = field(default_factory=list)
    policy: PolicyConfig = field(default_factory=lambda: PolicyConfig("least_outstanding"))
    prefill_policy: PolicyConfig = field(default_factory=lambda: PolicyConfig("least_outstanding"))
    decode_policy: PolicyConfig = field(default_factory=lambda: PolicyConfig("least_outstanding"))
    default_slo: SloClass = field(default_factory=lambda: SloClass(2000.0, 100.0))
    priorities: dict[int, SloClass] = field(default_factory=dict)
    mapper: dict | None = None  # slocore.PriorityMapper keyword arguments (seconds)
    timeouts: Timeouts = field(default_factory=Timeouts)
    retries: int = 2
    poll_interval_s: float = 0.5
    admin_token: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    model: str | None = None  # name reported by /v1/models when no backend says

    @property
    def disaggregated(self) -> bool:
        return any(b.role in ("prefill", "decode") for b in self.backends)

    def slo_for(self, priority: int) -> SloClass:
        return self.priorities.get(priority, self.default_slo)


def _num(where: str, v, positive=True) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (positive and v <= 0):
        raise ValueError(f"{where}: must be a finite number{' > 0' if positive else ''}, got {v!r}")
    return float(v)


def _policy(where: str, v, default: str) -> PolicyConfig:
    if v is None:
        return PolicyConfig(default)
    if isinstance(v, str):
        return PolicyConfig(v)
    if isinstance(v, dict) and isinstance(v.get("name"), str):
        params = v.get("params") or {}
        if not isinstance(params, dict):
            raise ValueError(f"{where}.params: must be a mapping")
        return PolicyConfig(v["name"], dict(params))
    raise ValueError(f"{where}: expected a name or {{name, params}}, got {v!r}")


def _slo(where: str, v) -> SloClass:
    if not isinstance(v, dict) or "ttft_ms" not in v or "tpot_ms" not in v:
        raise ValueError(f"{where}: expected {{ttft_ms, tpot_ms[, deadline_ms]}}, got {v!r}")
    d = v.get("deadline_ms")
    return SloClass(_num(f"{where}.ttft_ms", v["ttft_ms"]), _num(f"{where}.tpot_ms", v["tpot_ms"]),
                    None if d is None else _num(f"{where}.deadline_ms", d))


def from_dict(d: dict | None, where: str = "config") -> ServeConfig:
    d = d or {}
    if not isinstance(d, dict):
        raise ValueError(f"{where}: top level must be a mapping")
    known = {"listen", "admin_token", "backends", "policy", "prefill_policy", "decode_policy", "slo", "timeouts",
             "retries", "poll_interval_s", "model"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown} (known: {sorted(known)})")
    cfg = ServeConfig()
    listen = d.get("listen") or {}
    cfg.host = str(listen.get("host", cfg.host))
    cfg.port = int(listen.get("port", cfg.port))
    cfg.admin_token = d.get("admin_token") or os.environ.get("SLOCORE_ADMIN_TOKEN") or None
    cfg.model = d.get("model")
    names = set()
    for i, b in enumerate(d.get("backends") or []):
        w = f"{where}.backends[{i}]"
        if not isinstance(b, dict):
            raise ValueError(f"{w}: must be a mapping")
        name = str(b.get("name") or f"b{i}")
        if name in names:
            raise ValueError(f"{w}.name: duplicate {name!r}")
        names.add(name)
        role = b.get("role", "colocated")
        if role not in ROLES:
            raise ValueError(f"{w}.role: must be one of {ROLES}, got {role!r}")
        url, emu = b.get("url"), b.get("emulated")
        if (url is None) == (emu is None):
            raise ValueError(f"{w}: give exactly one of url or emulated")
        if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
            raise ValueError(f"{w}.url: must be an http(s) URL, got {url!r}")
        if emu is not None and emu is not True and not isinstance(emu, dict):
            raise ValueError(f"{w}.emulated: must be true or a mapping of engine options")
        emu = {} if emu is True else emu
        profile = b.get("profile") or (emu or {}).get("profile") or DEFAULT_PROFILE
        cfg.backends.append(BackendConfig(name, url.rstrip("/") if url else None, role, profile, emu))
    roles = {b.role for b in cfg.backends}
    if "colocated" in roles and roles - {"colocated"}:
        raise ValueError(f"{where}.backends: mix of colocated and prefill/decode roles; use one mode")
    if roles and roles != {"colocated"} and roles != {"prefill", "decode"}:
        raise ValueError(f"{where}.backends: P/D mode needs at least one prefill and one decode backend")
    cfg.policy = _policy(f"{where}.policy", d.get("policy"), "least_outstanding")
    cfg.prefill_policy = _policy(f"{where}.prefill_policy", d.get("prefill_policy"), "least_outstanding")
    cfg.decode_policy = _policy(f"{where}.decode_policy", d.get("decode_policy"), "least_outstanding")
    slo = d.get("slo") or {}
    if "default" in slo:
        cfg.default_slo = _slo(f"{where}.slo.default", slo["default"])
    for k, v in (slo.get("priorities") or {}).items():
        try:
            p = int(k)
        except (TypeError, ValueError):
            raise ValueError(f"{where}.slo.priorities: key {k!r} is not an integer priority") from None
        cfg.priorities[p] = _slo(f"{where}.slo.priorities[{p}]", v)
    m = slo.get("mapper")
    if m is not None and m is not False:
        if m is True:
            m = {}
        if not isinstance(m, dict):
            raise ValueError(f"{where}.slo.mapper: expected true or a mapping of PriorityMapper parameters")
        cfg.mapper = dict(m)
    unknown_slo = sorted(set(slo) - {"default", "priorities", "mapper"})
    if unknown_slo:
        raise ValueError(f"{where}.slo: unknown key(s) {unknown_slo} (known: default, priorities, mapper)")
    t = d.get("timeouts") or {}
    for k in ("connect_s", "first_token_s", "idle_s", "total_s"):
        if k in t:
            setattr(cfg.timeouts, k, _num(f"{where}.timeouts.{k}", t[k]))
    if set(t) - {"connect_s", "first_token_s", "idle_s", "total_s"}:
        raise ValueError(f"{where}.timeouts: unknown key(s) {sorted(set(t) - set(vars(cfg.timeouts)))}")
    r = d.get("retries", cfg.retries)
    if isinstance(r, bool) or not isinstance(r, int) or r < 0:
        raise ValueError(f"{where}.retries: must be an integer >= 0, got {r!r}")
    cfg.retries = r
    cfg.poll_interval_s = _num(f"{where}.poll_interval_s", d.get("poll_interval_s", cfg.poll_interval_s))
    return cfg


def load(path) -> ServeConfig:
    import yaml

    with open(path) as f:
        try:
            data = yaml.safe_load(f)
        except yaml.YAMLError as e:
            raise ValueError(f"{path}: not valid YAML ({e})") from None
    return from_dict(data, str(path))
