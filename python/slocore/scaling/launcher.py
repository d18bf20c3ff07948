"""Launchers: apply the scaler's decisions (csrc/slocore/scale/scaler.h,
``ScaleDecision``) to real engine processes.

- ``LocalLauncher`` starts engines as subprocesses on this machine; ``RayLauncher``
  (``slocore.scaling.ray_launcher``) runs each engine under a Ray actor in a placement
  group, across machines.
- A new instance is linked into the router (``InstanceRegistry.on_instance_ready``) only
  after it answers its health check and, for a warm instance, after its weights are in.
- Scale-in *drains*: the router is told first (``on_instance_draining``: no new requests),
  the instance finishes its in-flight requests (polled from the router or the engine's
  ``/load`` endpoint), then it is stopped (SIGTERM, then SIGKILL after a grace period).
- Role switches go through ``EngineSpec.switch_role`` when the engine can switch in place
  (a colocated vLLM only changes the role the router gives it); otherwise the instance is
  drained and restarted with the new role.
- CPU cores: a launched process gets the cores of ``EngineSpec.cpus`` (default: every core
  this serving process was allowed when this module was loaded), not the mask of whichever
  thread happens to launch it, nor this process's OpenMP binding variables
  (``OPENMP_BINDING_ENV``, unless ``EngineSpec.env`` sets them); vLLM's CPU workers then pin
  themselves inside it (``VLLM_CPU_OMP_THREADS_BIND``). Leave out cores where other engines'
  workers are pinned: ``import torch`` (MKL's core count) pins the importing thread to each
  allowed core in turn and waits there behind a busy pinned worker.
- Warm pool (HFX Sec. 6): instances started without weights
  (vLLM ``--load-format dummy``); scale-out takes one, pushes weights into it
  (``EngineSpec.load_weights``: a peer transfer with disk fallback) and links it.

This module needs no torch; weights move through the callbacks.
"""

from __future__ import annotations

import enum
import functools
import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, runtime_checkable

from slocore.ports import free_port
from slocore.roles import COLOCATED, ROLES, role_name  # noqa: F401 - ROLES, role_name re-exported
from slocore.scaling import blocking_http

log = logging.getLogger("slocore.scaling")


@runtime_checkable
class InstanceRegistry(Protocol):
    """What the router implements so the launcher can link and unlink instances."""

    def on_instance_ready(self, url: str, role: str) -> None:
        """`url` is healthy and has its weights: start sending `role` traffic to it."""

    def on_instance_draining(self, url: str) -> None:
        """Stop sending new requests to `url`; its in-flight requests still complete."""

    def on_instance_stopped(self, url: str) -> None:
        """`url` is gone; forget it."""


class NullRegistry:
    def on_instance_ready(self, url: str, role: str) -> None: ...
    def on_instance_draining(self, url: str) -> None: ...
    def on_instance_stopped(self, url: str) -> None: ...


class InstanceState(str, enum.Enum):
    STARTING = "starting"
    WARM = "warm"  # runtime up, no weights, not linked
    READY = "ready"  # linked into the router
    DRAINING = "draining"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass
class Instance:
    id: int
    host: str
    port: int
    role: str
    warm_start: bool  # started without weights (warm pool)
    state: InstanceState = InstanceState.STARTING
    proc: Optional[subprocess.Popen] = None
    handle: object = None  # launcher-specific (a Ray actor)
    started_at: float = field(default_factory=time.monotonic)
    ready_at: Optional[float] = None
    weights_source: Optional[str] = None  # what load_weights reported ("peer", "disk", ...)
    log_path: Optional[str] = None
    cpus: Optional[tuple[int, ...]] = None  # the affinity mask it was started with (LocalLauncher)
    prepared: bool = False  # EngineSpec.prepare_warm has run on it

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@dataclass
class EngineSpec:
    """How to run one engine. ``command(port, role, warm)`` returns the argv (``warm``: start
    without weights); the launcher replaces ``{host}`` in it with the address to listen on.
    ``load_weights(instance)`` fills a warm instance and returns a label
    of where the weights came from; ``switch_role(instance, role)`` returns True when the
    engine switched in place."""

    command: Callable[[int, str, bool], Sequence[str]]
    env: Mapping[str, str] = field(default_factory=dict)
    health_path: str = "/health"
    load_path: Optional[str] = "/load"  # JSON {"server_load": n}; None: ask the registry only
    metrics_path: Optional[str] = "/metrics"  # else Prometheus vllm:num_requests_running + waiting
    startup_timeout_s: float = 180.0
    drain_timeout_s: float = 120.0
    stop_grace_s: float = 15.0
    poll_s: float = 0.2
    load_weights: Optional[Callable[[Instance], Optional[str]]] = None
    # Run once on a warm instance when it is healthy, before any scale-out takes it (e.g. lock
    # a host copy of the weights for its GPU). A failure is logged; the instance stays usable.
    prepare_warm: Optional[Callable[[Instance], None]] = None
    cold_loads_weights: bool = True  # False: a cold start also gets its weights via load_weights
    switch_role: Optional[Callable[[Instance, str], bool]] = None
    log_dir: Optional[str] = None
    # LocalLauncher: the CPU cores a launched process starts on (its affinity mask, which its
    # own children inherit). None: every core this serving process was allowed when this
    # module was loaded. Without it a child inherits the mask of the launching thread.
    cpus: Optional[Sequence[int]] = None
    progress_log_s: float = 30.0  # while waiting for health: log pid, cores and the last log line


@dataclass
class CommandTemplate:
    """An engine command as data (picklable, e.g. for Ray): ``{port}`` and ``{role}`` in
    ``argv`` are filled in (``{host}``, the address to listen on, by the launcher); ``warm_args``
    are appended for a warm (weightless) start,
    ``role_args[role]`` for a role."""

    argv: Sequence[str]
    warm_args: Sequence[str] = ()
    role_args: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def __call__(self, port: int, role: str, warm: bool) -> list[str]:
        out = [a.replace("{port}", str(port)).replace("{role}", role) for a in self.argv]
        out += list(self.role_args.get(role, ()))
        return out + (list(self.warm_args) if warm else [])


def _allowed_cpus() -> Optional[frozenset[int]]:
    """The cores this process may run on: the calling thread's and the main thread's masks
    together (None where the OS has no affinity calls)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return frozenset(os.sched_getaffinity(0)) | frozenset(os.sched_getaffinity(os.getpid()))


_STARTUP_CPUS = _allowed_cpus()


def _check_cpus(cpus) -> Optional[tuple[int, ...]]:
    """EngineSpec.cpus validated (sorted, unique), or the startup cores when None."""
    if cpus is None:
        return tuple(sorted(_STARTUP_CPUS)) if _STARTUP_CPUS else None
    if isinstance(cpus, (str, bytes)) or not isinstance(cpus, Sequence):
        raise TypeError(f"EngineSpec.cpus: expected a list of core numbers, got {cpus!r}")
    if not cpus or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in cpus):
        raise ValueError(f"EngineSpec.cpus: expected a non-empty list of core numbers >= 0, got {list(cpus)!r}")
    if _STARTUP_CPUS is None:
        raise ValueError("EngineSpec.cpus: this platform cannot set CPU affinity")
    missing = sorted(set(cpus) - _STARTUP_CPUS)
    if missing:
        raise ValueError(f"EngineSpec.cpus: cores {missing} are not available here (allowed: {sorted(_STARTUP_CPUS)})")
    return tuple(sorted(set(cpus)))


def _process_cpus(pid: int) -> Optional[list[int]]:
    try:
        return sorted(os.sched_getaffinity(pid))
    except (AttributeError, OSError):
        return None


def _last_line(path: Optional[str]) -> str:
    if not path:
        return "(no log_dir)"
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 4096))
            lines = f.read().decode(errors="replace").strip().splitlines()
        return lines[-1][-300:] if lines else "(empty log)"
    except OSError:
        return "(no log yet)"


# OpenMP thread placement read when an OpenMP runtime loads (libgomp binds the loading thread
# to the first place: `import torch` under GOMP_CPU_AFFINITY=0 runs on core 0 from then on).
# Set for this process, they are not the engine's: a launched engine gets them only from
# EngineSpec.env.
OPENMP_BINDING_ENV = ("GOMP_CPU_AFFINITY", "OMP_PLACES", "OMP_PROC_BIND", "KMP_AFFINITY")


def _engine_env(extra: Mapping[str, str]) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if k not in OPENMP_BINDING_ENV or k in extra}
    dropped = sorted(set(os.environ) - set(inherited))
    if dropped:
        log.info("launched engines do not inherit %s (set them in the launcher's env to pin an engine)", dropped)
    return {**inherited, **extra}


def http_get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    """(status, body); OSError when the engine cannot be reached."""
    return blocking_http.request("GET", url, timeout=timeout)


class LocalLauncher:
    """Engines as subprocesses on this machine. Thread-safe; each call blocks until its
    action is done (``apply(..., background=True)`` runs decisions on threads)."""

    def __init__(
        self,
        spec: EngineSpec,
        registry: InstanceRegistry | None = None,
        *,
        host: str = "127.0.0.1",
        warm_pool_size: int = 0,
    ):
        self.spec = spec
        self.registry = registry or NullRegistry()
        self.host = host
        self.warm_pool_size = int(warm_pool_size)
        self._lock = threading.RLock()
        self._next_id = 0
        self._instances: dict[int, Instance] = {}
        self._warm: list[Instance] = []
        self._threads: list[threading.Thread] = []
        self.cpus = _check_cpus(spec.cpus)  # the affinity mask of every launched process

    # ------------------------------------------------------------------ process control
    def _spawn(self, role: str, warm: bool) -> Instance:
        with self._lock:
            iid = self._next_id
            self._next_id += 1
        inst = self._spawn_process(iid, role, warm)
        with self._lock:
            self._instances[iid] = inst
        return inst

    def _spawn_process(self, iid: int, role: str, warm: bool) -> Instance:
        port = free_port(self.host)
        inst = Instance(iid, self.host, port, role, warm)
        argv = [a.replace("{host}", self.host) for a in self.spec.command(port, role, warm)]
        env = _engine_env(self.spec.env)
        out = subprocess.DEVNULL
        if self.spec.log_dir:
            os.makedirs(self.spec.log_dir, exist_ok=True)
            inst.log_path = os.path.join(self.spec.log_dir, f"instance-{iid}-{port}.log")
            out = open(inst.log_path, "wb")
        # The child's mask is set between fork and exec: it would otherwise inherit this
        # thread's, which a library here may have narrowed (an OpenMP runtime pins its threads).
        # preexec_fn kept trivial (one syscall, nothing imported), as subprocess's docs ask.
        pin = functools.partial(os.sched_setaffinity, 0, self.cpus) if self.cpus is not None else None
        try:
            inst.proc = subprocess.Popen(
                argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=pin
            )
        finally:
            if out is not subprocess.DEVNULL:
                out.close()
        inst.cpus = self.cpus
        log.info(
            "instance %d: started pid %d on port %d, cores %s (log: %s)",
            iid,
            inst.proc.pid,
            port,
            _process_cpus(inst.proc.pid),
            inst.log_path,
        )
        return inst

    def _alive(self, inst: Instance) -> bool:
        return inst.proc is not None and inst.proc.poll() is None

    def _describe(self, inst: Instance) -> str:
        pid = getattr(inst.proc, "pid", None)
        cores = _process_cpus(pid) if pid is not None else None
        return f"pid {pid}, cores {cores}, last log line: {_last_line(inst.log_path)}"

    def _wait_healthy(self, inst: Instance) -> None:
        t0 = time.monotonic()
        deadline = t0 + self.spec.startup_timeout_s
        next_note = t0 + self.spec.progress_log_s
        while time.monotonic() < deadline:
            if not self._alive(inst):
                inst.state = InstanceState.FAILED
                raise RuntimeError(
                    f"instance {inst.id} exited with {getattr(inst.proc, 'returncode', 'an error')} "
                    "before it was healthy" + (f" (log: {inst.log_path})" if inst.log_path else "")
                )
            try:
                if http_get(inst.url + self.spec.health_path, timeout=1.0)[0] == 200:
                    log.info("instance %d: healthy after %.1f s", inst.id, time.monotonic() - t0)
                    return
            except OSError:
                pass
            if time.monotonic() >= next_note:
                next_note += self.spec.progress_log_s
                log.info(
                    "instance %d: not healthy yet after %.0f s (%s)",
                    inst.id,
                    time.monotonic() - t0,
                    self._describe(inst),
                )
            time.sleep(self.spec.poll_s)
        what = self._describe(inst)  # before it is stopped
        self._terminate(inst)
        inst.state = InstanceState.FAILED
        raise TimeoutError(f"instance {inst.id} not healthy after {self.spec.startup_timeout_s} s ({what})")

    def _terminate(self, inst: Instance) -> None:
        p = inst.proc
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)  # its own session: the engine and its workers
        except ProcessLookupError:
            return
        try:
            p.wait(self.spec.stop_grace_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(5)

    def inflight(self, inst: Instance) -> Optional[int]:
        """In-flight requests: the registry's count when it keeps one, else the engine's."""
        f = getattr(self.registry, "inflight", None)
        if callable(f):
            n = f(inst.url)
            if n is not None:
                return int(n)
        if self.spec.load_path:
            try:
                code, body = http_get(inst.url + self.spec.load_path, timeout=1.0)
                if code == 200:
                    return int(json.loads(body).get("server_load", 0))
            except (OSError, ValueError):
                pass
        if self.spec.metrics_path:  # vLLM's Prometheus gauges (running + waiting)
            try:
                code, body = http_get(inst.url + self.spec.metrics_path, timeout=2.0)
                if code == 200:
                    return _requests_in_engine(body.decode(errors="replace"))
            except (OSError, ValueError):
                pass
        return None

    # ------------------------------------------------------------------ public actions
    def start(self, role=COLOCATED) -> Instance:
        """Scale out: a warm instance when the pool has one (weights pushed in), else a cold
        start. Returns once the instance is linked into the router."""
        role = role_name(role)
        with self._lock:
            inst = self._warm.pop(0) if self._warm else None
        if inst is not None:
            inst.role = role
            try:
                self._wait_healthy(inst)
                self._prepare(inst)  # a pool filled without waiting: not prepared yet
                if self.spec.load_weights is not None:
                    inst.weights_source = self.spec.load_weights(inst) or "loaded"
                if self.spec.switch_role is not None and role != COLOCATED:
                    self.spec.switch_role(inst, role)
            except Exception:
                self._terminate(inst)
                inst.state = InstanceState.FAILED
                raise
            finally:
                self._refill_async()
        else:
            inst = self._spawn(role, warm=False)
            try:
                self._wait_healthy(inst)
                if self.spec.cold_loads_weights or self.spec.load_weights is None:
                    inst.weights_source = "disk"
                else:
                    inst.weights_source = self.spec.load_weights(inst) or "loaded"
            except Exception:
                self._terminate(inst)
                inst.state = InstanceState.FAILED
                raise
        inst.state = InstanceState.READY
        inst.ready_at = time.monotonic()
        self.registry.on_instance_ready(inst.url, inst.role)
        return inst

    def drain(self, iid: int, timeout_s: float | None = None) -> Instance:
        """Scale in: unlink, let in-flight requests finish (up to the drain timeout), stop."""
        inst = self._get(iid)
        if inst.state == InstanceState.READY:
            inst.state = InstanceState.DRAINING
            self.registry.on_instance_draining(inst.url)
        self._wait_idle(inst, self.spec.drain_timeout_s if timeout_s is None else timeout_s)
        return self.stop(iid)

    def _wait_idle(self, inst: Instance, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self._alive(inst):
            n = self.inflight(inst)
            if n == 0:
                return True
            time.sleep(self.spec.poll_s)
        return False

    def stop(self, iid: int) -> Instance:
        inst = self._get(iid)
        was_linked = inst.state in (InstanceState.READY, InstanceState.DRAINING)
        self._terminate(inst)
        inst.state = InstanceState.STOPPED
        if was_linked:
            self.registry.on_instance_stopped(inst.url)
        return inst

    def switch_role(self, iid: int, role) -> Instance:
        """Prefill/decode/colocated switch: in place when the engine allows, else drain and
        restart with the new role (a new instance, a new id)."""
        role = role_name(role)
        inst = self._get(iid)
        if inst.role == role:
            return inst
        if self.spec.switch_role is not None:
            self.registry.on_instance_draining(inst.url)
            self._wait_idle(inst, self.spec.drain_timeout_s)
            if self.spec.switch_role(inst, role):
                inst.role = role
                self.registry.on_instance_ready(inst.url, role)
                return inst
            self.registry.on_instance_ready(inst.url, inst.role)  # could not switch: relink
        self.drain(iid)
        return self.start(role)

    def apply(self, decisions, background: bool = False) -> list:
        """Apply slocore._core.ScaleDecision objects (or dicts with action/role/instance)."""
        out = []
        for d in decisions:
            action, role, iid = _decision_fields(d)
            # bound now: a background thread may run after the loop has moved on
            fn = {
                "scale_out": lambda role=role: self.start(role),
                "scale_in": lambda iid=iid: self.drain(iid),
                "switch_role": lambda iid=iid, role=role: self.switch_role(iid, role),
            }[action]
            if background:
                t = threading.Thread(target=fn, daemon=True)
                t.start()
                self._threads.append(t)
                out.append(t)
            else:
                out.append(fn())
        return out

    # ------------------------------------------------------------------ warm pool
    def fill_warm_pool(self, wait: bool = True) -> list[Instance]:
        """Start instances without weights until the pool holds ``warm_pool_size``."""
        started = []
        with self._lock:
            need = self.warm_pool_size - len(self._warm)
        for _ in range(max(0, need)):
            inst = self._spawn(COLOCATED, warm=True)
            started.append(inst)
        for inst in started:
            if wait:
                self._wait_healthy(inst)
                self._prepare(inst)
            inst.state = InstanceState.WARM
            with self._lock:
                self._warm.append(inst)
        return started

    def _prepare(self, inst: Instance) -> None:
        if self.spec.prepare_warm is None or inst.prepared:
            return
        inst.prepared = True
        try:
            self.spec.prepare_warm(inst)
        except Exception as e:
            log.warning("instance %s: preparing the warm instance failed: %s", inst.id, e)

    def _refill_async(self) -> None:
        if self.warm_pool_size <= 0:
            return
        t = threading.Thread(target=self.fill_warm_pool, daemon=True)
        t.start()
        self._threads.append(t)

    def warm_instances(self) -> list[Instance]:
        with self._lock:
            return list(self._warm)

    # ------------------------------------------------------------------ bookkeeping
    def _get(self, iid: int) -> Instance:
        with self._lock:
            if iid not in self._instances:
                raise KeyError(f"no instance {iid}")
            return self._instances[iid]

    def instances(self, state: InstanceState | None = None) -> list[Instance]:
        with self._lock:
            return [i for i in self._instances.values() if state is None or i.state == state]

    def join(self, timeout: float | None = None) -> None:
        for t in list(self._threads):
            t.join(timeout)

    def close(self) -> None:
        """Stop everything this launcher started (router told first)."""
        self.join(30)
        with self._lock:
            insts = list(self._instances.values())
            self._warm.clear()
        for inst in insts:
            if inst.state not in (InstanceState.STOPPED,):
                if inst.state == InstanceState.READY:
                    self.registry.on_instance_draining(inst.url)
                self.stop(inst.id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _requests_in_engine(text: str) -> Optional[int]:
    """vllm:num_requests_running + vllm:num_requests_waiting from a Prometheus page (None
    when it has neither)."""
    from slocore.serve.backends import parse_vllm_metrics

    m = parse_vllm_metrics(text)
    if "running" not in m and "waiting" not in m:
        return None
    return int(m.get("running", 0) + m.get("waiting", 0))


def _decision_fields(d) -> tuple[str, str, int]:
    if isinstance(d, Mapping):
        action, role, iid = d["action"], d.get("role", COLOCATED), d.get("instance", -1)
    else:
        action, role, iid = d.action, d.role, d.instance
    a = action if isinstance(action, str) else getattr(action, "name", str(action))
    a = a.split(".")[-1].lower()
    a = {"scaleout": "scale_out", "scalein": "scale_in", "switchrole": "switch_role"}.get(a, a)
    if a not in ("scale_out", "scale_in", "switch_role"):
        raise ValueError(f"unknown scale action {action!r}")
    return a, role_name(role), int(iid)
