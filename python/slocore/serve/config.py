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
    metrics_window_s: 60                 # the windowed attainment gauge's window
    scaler:                              # the scaler in the live loop (serve/scaler.py)
      name: hfx                          # or module:Class (a slocore.Scaler subclass)
      params: {interval: 1.0}
      min_instances: 1                   # floor per pool
      max_instances: 4                   # cap on ready + starting instances
      launcher:                          # how new engines start
        kind: local                      # local (subprocesses), ray (Ray actors) or external
                                         # (starts nothing: an HPA/KEDA scales to the desired gauge)
        command: [slocore, engine, --host, "{host}", --port, "{port}"]
        role_args: {}                    # extra argv per role
        profile: h100-llama2-7b          # the policies' latency model of a new engine
    prefix: {tokenizer: /models/llama/tokenizer.json, block_size: 16}   # serve/prefix_index.py
    upstream_client: lean                # or aiohttp; default lean where httptools is installed
                                         # (env SLOCORE_UPSTREAM_CLIENT overrides the default)

No backends at all means one embedded emulated engine (profile ``h100-llama2-7b``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Annotated, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, field_validator, model_validator

from slocore.roles import COLOCATED, PD_ROLES, ROLES
from slocore.serve.admission import AdmissionConfig
from slocore.serve.limits import LimitsConfig
from slocore.serve.retry import RetryBudgetConfig
from slocore.serve.tenants import TenantsConfig

DEFAULT_PROFILE = "h100-llama2-7b"
# Idle pooled connections to an engine are dropped before uvicorn's (vLLM's) default keep-alive
# of 5 s, so a request never goes out on one the engine is closing.
ENGINE_KEEPALIVE_S = 3.0
# A client's sends of one request on pooled connections the engine closed as it sent (a late
# event loop can still reuse one) before the request counts as failed (load generator, twin).
STALE_RETRIES = 2


@dataclass
class BackendConfig:
    name: str
    url: str | None = None
    role: str = COLOCATED
    profile: str = DEFAULT_PROFILE  # the policies' latency model: a bundled name or a `slocore profile` JSON
    emulated: dict | None = None  # EmulatedEngine kwargs: started in-process by the router
    kv_events: str | None = None  # vLLM's KV-event ZMQ endpoint (precise prefix mode), e.g. tcp://host:5557
    default_profile: bool = False  # no profile given for a real engine: the pool warns once


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
    metrics_window_s: float = 60.0  # slocore_slo_attainment_window's window (serve.metrics)
    admin_token: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    model: str | None = None  # name reported by /v1/models when no backend says
    limits: LimitsConfig = field(default_factory=LimitsConfig)  # serve.limits: body, JSON, state bounds
    retry_budget: RetryBudgetConfig = field(default_factory=RetryBudgetConfig)  # serve.retry
    tenants: TenantsConfig = field(default_factory=TenantsConfig)  # serve.tenants: keys, SLO caps, rates
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)  # serve.admission: shedding
    scaler: ScalerConfig | None = None  # the scaler in the live loop (serve/scaler.py)
    prefix: dict = field(default_factory=dict)  # serve.prefix_index.PrefixConfig keyword arguments
    upstream_client: str | None = None  # "lean" | "aiohttp"; None: serve.upstream.default_client()
    workers: int = 1  # data-path processes (serve.worker); > 1: the policy in serve.policy_host
    policy_port: int | None = None  # workers > 1: the policy process's port (None: port + 1)

    @property
    def disaggregated(self) -> bool:
        return any(b.role in PD_ROLES for b in self.backends)

    def slo_for(self, priority: int) -> SloClass:
        return self.priorities.get(priority, self.default_slo)


@dataclass
class LauncherConfig:
    kind: str = "local"  # local | ray | external (decisions only set the exported desired count)
    command: list[str] = field(default_factory=list)  # {host} {port} {role} filled in
    role_args: dict[str, list[str]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    profile: str = DEFAULT_PROFILE
    startup_timeout_s: float = 180.0
    drain_timeout_s: float = 120.0
    log_dir: str | None = None
    ray_address: str | None = None  # ray.init(address=...) when Ray is not initialised yet
    ray_bundle: dict[str, float] = field(default_factory=lambda: {"CPU": 1.0})
    cpus: list[int] | None = None  # cores of every launched engine (local); None: the router's own


@dataclass
class ScalerConfig:
    name: str
    params: dict = field(default_factory=dict)
    min_instances: int = 1
    max_instances: int = 4
    launcher: LauncherConfig = field(default_factory=LauncherConfig)


# --- the YAML schema (pydantic): what a file may say; from_dict turns it into ServeConfig ---
Positive = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Listen(_Lenient):
    host: str = "127.0.0.1"
    port: Annotated[int, Strict(), Field(ge=0, le=65535)] = 8000


class _Backend(_Lenient):
    name: Optional[Union[str, int]] = None
    url: Optional[str] = None
    role: Literal[ROLES] = COLOCATED  # type: ignore[valid-type]
    profile: Optional[str] = None
    emulated: Union[Literal[True], dict, None] = None  # true or EmulatedEngine options
    kv_events: Optional[str] = None  # ZMQ endpoint of vLLM's KV-event publisher

    @field_validator("url")
    @classmethod
    def _http(cls, v):
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError(f"must be an http(s) URL, got {v!r}")
        return v

    @model_validator(mode="after")
    def _one_target(self):
        if (self.url is None) == (self.emulated is None):
            raise ValueError("give exactly one of url or emulated")
        return self


class _Policy(_Lenient):
    name: str
    params: Optional[dict] = None


class _Slo(_Lenient):
    ttft_ms: Positive
    tpot_ms: Positive
    deadline_ms: Optional[Positive] = None


class _SloSection(_Section):
    default: Optional[_Slo] = None
    priorities: Optional[dict[int, _Slo]] = None
    mapper: Union[bool, dict, None] = None  # true or slocore.PriorityMapper keyword arguments


class _Timeouts(_Section):
    connect_s: Positive = Timeouts.connect_s
    first_token_s: Positive = Timeouts.first_token_s
    idle_s: Positive = Timeouts.idle_s
    total_s: Positive = Timeouts.total_s


class _Launcher(_Section):
    kind: Literal["local", "ray", "external"] = "local"
    command: Annotated[list[str], Field(validate_default=True)] = []  # required unless kind is external
    role_args: dict[Literal[ROLES], list[str]] = {}  # type: ignore[valid-type]
    env: dict[str, str] = {}
    profile: str = DEFAULT_PROFILE
    startup_timeout_s: Positive = 180.0
    drain_timeout_s: Positive = 120.0
    log_dir: Optional[str] = None
    ray_address: Optional[str] = None
    ray_bundle: dict[str, Annotated[float, Field(ge=0)]] = {"CPU": 1.0}
    cpus: Optional[Annotated[list[Annotated[int, Strict(), Field(ge=0)]], Field(min_length=1)]] = None

    @field_validator("command")
    @classmethod
    def _command_unless_external(cls, v, info):
        kind = info.data.get("kind", "local")
        if kind != "external" and not v:
            raise ValueError(f"required (at least one item) for launcher kind {kind!r}; only 'external' starts nothing")
        return v


class _Scaler(_Section):
    name: str
    params: Optional[dict] = None
    min_instances: Annotated[int, Strict(), Field(ge=1)] = 1
    max_instances: Annotated[int, Strict(), Field(ge=1)] = 4
    launcher: _Launcher

    @model_validator(mode="after")
    def _bounds(self):
        if self.max_instances < self.min_instances:
            raise ValueError("max_instances must be >= min_instances")
        return self


class _File(_Section):
    listen: Optional[_Listen] = None
    admin_token: Optional[str] = None
    backends: Optional[list[_Backend]] = None
    policy: Optional[_Policy] = None
    prefill_policy: Optional[_Policy] = None
    decode_policy: Optional[_Policy] = None
    slo: Optional[_SloSection] = None
    timeouts: Optional[_Timeouts] = None
    retries: Annotated[int, Strict(), Field(ge=0)] = 2
    poll_interval_s: Positive = 0.5
    metrics_window_s: Positive = 60.0
    model: Optional[str] = None
    limits: Optional[LimitsConfig] = None
    retry_budget: Optional[RetryBudgetConfig] = None
    tenants: Optional[TenantsConfig] = None
    admission: Optional[AdmissionConfig] = None
    scaler: Optional[_Scaler] = None
    prefix: Optional[dict] = None
    upstream_client: Optional[Literal["lean", "aiohttp"]] = None
    workers: Annotated[int, Strict(), Field(ge=1, le=256)] = 1
    policy_port: Optional[Annotated[int, Strict(), Field(ge=0, le=65535)]] = None

    @field_validator("policy", "prefill_policy", "decode_policy", mode="before")
    @classmethod
    def _policy_name(cls, v):
        return {"name": v} if isinstance(v, str) else v


def _path(loc) -> str:
    """('backends', 1, 'url') -> 'backends[1].url' (dropping pydantic's union/validator tags)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            out += " (key)"
        elif "[" in part or part in ("bool", "dict", "str", "int"):  # a union member's tag
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "top level"


def _message(e: dict) -> str:
    if e["type"] == "extra_forbidden":
        return "unknown key"
    msg = e["msg"]
    return msg[len("Value error, ") :] if msg.startswith("Value error, ") else msg


def _policy(p: Optional[_Policy], default: str) -> PolicyConfig:
    return PolicyConfig(default) if p is None else PolicyConfig(p.name, dict(p.params or {}))


def _slo(s: _Slo) -> SloClass:
    return SloClass(s.ttft_ms, s.tpot_ms, s.deadline_ms)


def from_dict(d: dict | None, where: str = "config") -> ServeConfig:
    """A ServeConfig from the YAML's data; ValueError naming `where` and the field path
    (e.g. ``config: backends[1].url: must be an http(s) URL``)."""
    d = d or {}
    if not isinstance(d, dict):
        raise ValueError(f"{where}: top level must be a mapping")
    try:
        f = _File.model_validate(d)
    except ValidationError as ex:
        raise ValueError("; ".join(f"{where}: {_path(e['loc'])}: {_message(e)}" for e in ex.errors())) from None
    cfg = ServeConfig()
    if f.listen is not None:
        cfg.host, cfg.port = f.listen.host, f.listen.port
    cfg.admin_token = f.admin_token or os.environ.get("SLOCORE_ADMIN_TOKEN") or None
    cfg.model = f.model
    names = set()
    for i, b in enumerate(f.backends or []):
        name = str(b.name or f"b{i}")
        if name in names:
            raise ValueError(f"{where}: backends[{i}].name: duplicate {name!r}")
        names.add(name)
        emu = {} if b.emulated is True else b.emulated
        profile = b.profile or (emu or {}).get("profile") or DEFAULT_PROFILE
        try:  # a bundled name or a `slocore profile` JSON: an unknown one fails here
            from slocore.profiles import hardware_profile

            hardware_profile(profile)
        except (ValueError, KeyError, OSError) as e:
            raise ValueError(f"{where}: backends[{i}].profile: {e.args[0] if e.args else e}") from None
        # an emulated engine runs its own profile; a real one without a profile runs on a guess
        guessed = b.profile is None and emu is None
        cfg.backends.append(
            BackendConfig(name, b.url.rstrip("/") if b.url else None, b.role, profile, emu, b.kv_events, guessed)
        )
    roles = {b.role for b in cfg.backends}
    if COLOCATED in roles and roles - {COLOCATED}:
        raise ValueError(f"{where}: backends: mix of colocated and prefill/decode roles; use one mode")
    if roles and roles != {COLOCATED} and roles != set(PD_ROLES):
        raise ValueError(f"{where}: backends: P/D mode needs at least one prefill and one decode backend")
    cfg.policy = _policy(f.policy, "least_outstanding")
    cfg.prefill_policy = _policy(f.prefill_policy, "least_outstanding")
    cfg.decode_policy = _policy(f.decode_policy, "least_outstanding")
    if f.slo is not None:
        if f.slo.default is not None:
            cfg.default_slo = _slo(f.slo.default)
        cfg.priorities = {p: _slo(v) for p, v in (f.slo.priorities or {}).items()}
        m = f.slo.mapper
        cfg.mapper = None if m is None or m is False else ({} if m is True else dict(m))
    if f.timeouts is not None:
        cfg.timeouts = Timeouts(**f.timeouts.model_dump())
    cfg.retries = f.retries
    cfg.poll_interval_s = f.poll_interval_s
    cfg.metrics_window_s = f.metrics_window_s
    cfg.limits = f.limits or LimitsConfig()
    cfg.retry_budget = f.retry_budget or RetryBudgetConfig()
    cfg.tenants = f.tenants or TenantsConfig()
    cfg.admission = f.admission or AdmissionConfig()
    cfg.upstream_client = f.upstream_client
    cfg.workers, cfg.policy_port = f.workers, f.policy_port
    if f.scaler is not None:
        sc = f.scaler
        try:  # an unknown profile fails here, not at the first scale-out
            from slocore.profiles import hardware_profile

            hardware_profile(sc.launcher.profile)
        except (ValueError, KeyError, OSError) as e:
            raise ValueError(f"{where}: scaler.launcher.profile: {e}") from None
        cfg.scaler = ScalerConfig(
            sc.name,
            dict(sc.params or {}),
            sc.min_instances,
            sc.max_instances,
            LauncherConfig(**sc.launcher.model_dump()),
        )
    if f.prefix is not None:
        from slocore.serve.prefix_index import PrefixConfig

        try:
            PrefixConfig(**f.prefix)
        except TypeError as e:
            raise ValueError(f"{where}: prefix: {e}") from None
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        cfg.prefix = dict(f.prefix)
    return cfg


def load(path) -> ServeConfig:
    import yaml

    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise ValueError(f"{path}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a UTF-8 text (YAML) file") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML ({e})") from None
    return from_dict(data, str(path))
