"""The scaler in the live loop: a ``scaler:`` section in the serve config makes the router
call the scaler's ``decide`` every ``interval()`` with the views of its backends, and apply
the decisions through a launcher (``slocore.scaling.launcher.LocalLauncher`` for subprocess
engines, ``RayLauncher`` for Ray actors), as the simulator does with cold starts
(``csrc/slocore/sim/simulator.cc``).

Events (``csrc/slocore/scale/scaler.h``): ``on_arrival`` when a request arrives (before any
policy sees it), ``on_first_token`` when its first output token is produced (P/D: at the
prefill handoff), ``on_finished`` once at its last token; all with the router's one request
id and clock. Live only: a request that leaves without finishing (rejected, failed, client
gone) also gets ``on_finished`` when it leaves, so it does not count as queued for ever.

Decisions:

- scale-out: a new engine starts through the launcher and joins the pool (and the policies)
  only once it answers its health check; capped at ``max_instances`` ready + starting.
- scale-in: the instance drains at once (its view says ``accepting = False``: the policies
  give it no new work), leaves the pool when its in-flight requests are done, and is then
  stopped (only engines the launcher started are stopped; a configured backend is only
  removed from the router). A pool is never drained below ``min_instances``.
- role switch (P/D): drain, then a new engine with the other role.
A decision naming an unknown or draining instance is ignored (stale), as in the simulator.

Prometheus names (on the router's ``/metrics``; ``pool`` is colocated, prefill or decode;
``unknown`` for a decision naming an instance the router does not have):

- ``slocore_scaler_desired_instances{pool}``: ready (not draining) + starting instances
  after the last decision: what an HPA/KEDA should hold; with launcher kind ``external``
  (nothing is started here: an HPA/KEDA scales the engines, which join through the admin
  API) the count the decisions set, from the pool's ready backends, within min/max_instances;
- ``slocore_scaler_instances{pool,state}``: state ready, starting or draining;
- ``slocore_scaler_indicator{pool,name}``: the HFX indicators (rate_ratio, rate_valid,
  norm_wait, max_wait, kv_mean) as of the last tick (other scalers export none);
- ``slocore_scaler_decisions_total{pool,action}``: decisions the scaler made (action
  scale_out, scale_in, switch_role; a switch counts on the pool it leaves);
- ``slocore_scaler_ignored_decisions_total{pool,action,reason}``: reason cap, floor,
  stale or role;
- ``slocore_scaler_launch_failures_total{pool,action}``: the launcher failed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import math
import time

from prometheus_client import Counter, Gauge

import slocore as _s
from slocore.roles import COLOCATED, DECODE, PD_ROLES, PREFILL, role_name
from slocore.serve.config import BackendConfig, LauncherConfig, ScalerConfig
from slocore.serve.dispatch import make_python_object

log = logging.getLogger("slocore.serve")

ACTIONS = {"SCALE_OUT": "scale_out", "SCALE_IN": "scale_in", "SWITCH_ROLE": "switch_role"}
STAGE_OF = {COLOCATED: 0, PREFILL: 1, DECODE: 2}  # the HFX scaler's pool index
HFX_INDICATORS = ("rate_ratio", "rate_valid", "norm_wait", "max_wait", "kv_mean")
SETTLE_S = 0.5  # a drained backend counts as busy this long (a request assigned just before may be on its way)


def make_scaler(name: str, params: dict):
    """A registered scaler by name, or a ``slocore.Scaler`` subclass by import path
    ``module:Class`` built with ``Class(**params)``; ValueError naming the config field."""
    if ":" not in name:
        try:
            return _s.make_scaler(name, dict(params))
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"scaler: {e}") from None
    return make_python_object(name, params, _s.Scaler, "scaler")


def make_launcher(lc: LauncherConfig, registry):
    """The launcher of the config (local subprocesses or Ray actors) linked to `registry`."""
    from slocore.scaling.launcher import CommandTemplate, EngineSpec, LocalLauncher

    spec = EngineSpec(
        command=CommandTemplate(list(lc.command), role_args=dict(lc.role_args)),
        env=dict(lc.env),
        startup_timeout_s=lc.startup_timeout_s,
        drain_timeout_s=lc.drain_timeout_s,
        load_path=None,
        log_dir=lc.log_dir,
        poll_s=0.2,
        cpus=lc.cpus,
    )
    if lc.kind == "local":
        return LocalLauncher(spec, registry)
    from slocore.scaling.ray_launcher import RayLauncher, ray

    if ray is None:
        raise ValueError("scaler.launcher.kind: ray needs the ray extra (pip install 'slocore[ray]')")
    if not ray.is_initialized():
        ray.init(address=lc.ray_address) if lc.ray_address else ray.init()
    return RayLauncher(spec, registry, bundle=dict(lc.ray_bundle))


def scaler_indicators(scaler, pools, now: float, views) -> dict:
    """{pool: {indicator: value}}: the HFX scaler's indicators (HFX Alg. 3: rate_ratio,
    rate_valid, norm_wait, max_wait, kv_mean) of each pool at `now` (an infinite value as
    1e9, which Prometheus and HPA handle); {} for other scalers. Shared by `slocore serve`
    and the Ray Serve autoscaling policy."""
    from slocore import _core

    if scaler.name() != "hfx" or not hasattr(_core, "hfx_scaler_indicators"):
        return {}
    out = {}
    for pool in pools:
        try:
            ind = _core.hfx_scaler_indicators(scaler, STAGE_OF[pool], now, views)
        except ValueError:  # a Python scaler that calls itself hfx
            return {}
        out[pool] = {k: (float(ind[k]) if math.isfinite(float(ind[k])) else 1e9) for k in HFX_INDICATORS}
    return out


class ScalerMetrics:
    def __init__(self, registry):
        r = registry
        self.desired = Gauge(
            "slocore_scaler_desired_instances",
            "Ready (not draining) plus starting instances of the pool after the scaler's last decision",
            ["pool"],
            registry=r,
        )
        self.instances = Gauge(
            "slocore_scaler_instances",
            "Instances of the pool by state (ready, starting, draining)",
            ["pool", "state"],
            registry=r,
        )
        self.indicator = Gauge(
            "slocore_scaler_indicator",
            "The scaler's indicators of the pool at its last tick "
            "(HFX: rate_ratio, rate_valid, norm_wait, max_wait, kv_mean)",
            ["pool", "name"],
            registry=r,
        )
        self.decisions = Counter(
            "slocore_scaler_decisions",
            "Scaling decisions made (scale_out, scale_in, switch_role; a switch counts on the pool it leaves)",
            ["pool", "action"],
            registry=r,
        )
        self.ignored = Counter(
            "slocore_scaler_ignored_decisions",
            "Decisions not applied (reason: cap, floor, stale, role)",
            ["pool", "action", "reason"],
            registry=r,
        )
        self.failures = Counter(
            "slocore_scaler_launch_failures",
            "Launcher failures while applying a decision",
            ["pool", "action"],
            registry=r,
        )


class RouterRegistry:
    """The launcher's ``InstanceRegistry`` inside the router: the launcher runs on worker
    threads, so every call hops onto the router's event loop."""

    def __init__(self, loop_owner: ScalerLoop):
        self.s = loop_owner

    def _run(self, coro, timeout: float = 60.0):
        return asyncio.run_coroutine_threadsafe(coro, self.s.loop).result(timeout)

    def on_instance_ready(self, url: str, role: str) -> None:
        self._run(self.s.join_backend(url, role))

    def on_instance_draining(self, url: str) -> None:
        self._run(self.s.mark_draining_url(url))

    def on_instance_stopped(self, url: str) -> None:
        self._run(self.s.remove_url(url))

    def inflight(self, url: str):
        b = self.s.backend_at(url)
        if b is None:
            return None
        if b.inflight or time.monotonic() - self.s.draining_since.get(b.name, 0.0) < SETTLE_S:
            return max(1, len(b.inflight))
        return 0


class ScalerLoop:
    def __init__(self, router, cfg: ScalerConfig):
        self.r = router  # pool, health, metrics, now, cfg
        self.cfg = cfg
        self.scaler = make_scaler(cfg.name, cfg.params)
        if cfg.launcher.kind == "ray" and importlib.util.find_spec("ray") is None:
            raise ValueError("scaler.launcher.kind: ray needs the ray extra (pip install 'slocore[ray]')")
        self.metrics = ScalerMetrics(router.metrics.registry)
        self.launcher = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.starting = {role: 0 for role in STAGE_OF}
        self.draining_since: dict[str, float] = {}  # backend name -> monotonic time
        self.launched: dict[str, int] = {}  # backend name -> launcher instance id
        self._first: set[int] = set()
        self._open: set[int] = set()
        self._task: asyncio.Task | None = None
        self._jobs: set[asyncio.Task] = set()
        # launcher kind external: decisions move only this desired count per pool (exported
        # for an HPA/KEDA that scales the engines); backends join through the admin API
        self.external: dict[str, int] | None = {} if cfg.launcher.kind == "external" else None

    # --- events (csrc/slocore/scale/scaler.h) ------------------------------------------
    def arrival(self, req) -> None:
        self._open.add(req.id)
        self.scaler.on_arrival(req, self.r.now())

    def first_token(self, rid: int, now: float) -> None:
        if rid in self._open and rid not in self._first:
            self._first.add(rid)
            self.scaler.on_first_token(rid, now)

    def finished(self, rid: int, now: float | None = None) -> None:
        """Once per request (a second call is a no-op): the last token, or leaving unfinished."""
        if rid in self._open:
            self._open.discard(rid)
            self._first.discard(rid)
            self.scaler.on_finished(rid, self.r.now() if now is None else now)

    # --- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        if self.external is None:
            self.launcher = make_launcher(self.cfg.launcher, RouterRegistry(self))
        self._update_gauges()
        self._task = self.loop.create_task(self._forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        for j in list(self._jobs):
            j.cancel()
        if self.launcher is not None:  # stops every engine it started (router told first)
            await asyncio.to_thread(self.launcher.close)

    async def _forever(self) -> None:
        interval = float(self.scaler.interval())
        t_next = self.r.now() + interval
        while True:
            await asyncio.sleep(max(0.0, t_next - self.r.now()))
            t_next += interval
            try:
                self.tick(self.r.now())
            except Exception:  # noqa: BLE001 - a scaler bug must not stop serving
                log.exception("scaler tick failed")

    # --- decisions -----------------------------------------------------------------------
    def views(self) -> list:
        """Healthy backends' views (draining ones listed with accepting = False, as in the simulator)."""
        return [b.view() for b in self.r.pool if b.healthy]

    def tick(self, now: float) -> list:
        views = self.views()
        decisions = self.scaler.decide(now, views)
        self._indicators(now, views)
        for d in decisions:
            self.apply(d)
        self._update_gauges()
        return decisions

    def _indicators(self, now: float, views) -> None:
        for pool, ind in scaler_indicators(self.scaler, self._pools(), now, views).items():
            for k, v in ind.items():
                self.metrics.indicator.labels(pool, k).set(v)

    def _pools(self) -> tuple:
        return PD_ROLES if self.r.pool.disaggregated else (COLOCATED,)

    def _accepting(self, role: str) -> list:
        return [b for b in self.r.pool.role(role) if b.name not in self.draining_since]

    def apply(self, d) -> None:
        action = ACTIONS[d.action.name]
        if self.external is not None:
            return self._apply_external(d, action)
        if action == "scale_out":
            role = role_name(d.role)
            self.metrics.decisions.labels(role, action).inc()
            if role not in self._pools():
                return self._ignore(role, action, "role")
            live = sum(len(self._accepting(p)) + self.starting[p] for p in self._pools())
            if live >= self.cfg.max_instances:
                return self._ignore(role, action, "cap")
            self.starting[role] += 1
            self._spawn(self._scale_out(role))
            return
        b = next((b for b in self.r.pool if b.id == d.instance), None)
        pool = b.role if b is not None else "unknown"
        self.metrics.decisions.labels(pool, action).inc()
        if b is None or b.name in self.draining_since:
            return self._ignore(pool, action, "stale")
        new_role = role_name(d.role) if action == "switch_role" else None
        if new_role is not None and (new_role == b.role or new_role not in self._pools()):
            return self._ignore(pool, action, "role")
        if len([x for x in self._accepting(b.role) if x.healthy]) <= self.cfg.min_instances:
            return self._ignore(pool, action, "floor")
        self._drain_now(b)
        if new_role is not None:
            self.starting[new_role] += 1
        self._spawn(self._retire(b, new_role))

    def _apply_external(self, d, action: str) -> None:
        """Launcher kind external: scale-out +1, scale-in -1 on the pool's desired count
        (within min/max_instances); nothing starts or drains here."""
        if action == "scale_out":
            pool = role_name(d.role)
        else:
            b = next((b for b in self.r.pool if b.id == d.instance), None)
            pool = b.role if b is not None else "unknown"
        self.metrics.decisions.labels(pool, action).inc()
        if pool not in self._pools() or action == "switch_role":
            return self._ignore(pool, action, "role" if pool != "unknown" else "stale")
        n = self.desired_external(pool)
        if action == "scale_out":
            if sum(self.desired_external(p) for p in self._pools()) >= self.cfg.max_instances:
                return self._ignore(pool, action, "cap")
            self.external[pool] = n + 1
        elif n <= self.cfg.min_instances:
            return self._ignore(pool, action, "floor")
        else:
            self.external[pool] = n - 1

    def desired_external(self, pool: str) -> int:
        """The pool's desired count (external launcher); starts at its healthy backends."""
        if pool not in self.external:
            ready = sum(1 for b in self._accepting(pool) if b.healthy)
            self.external[pool] = min(self.cfg.max_instances, max(self.cfg.min_instances, ready))
        return self.external[pool]

    def _ignore(self, pool: str, action: str, reason: str) -> None:
        self.metrics.ignored.labels(pool, action, reason).inc()

    def _spawn(self, coro) -> None:
        t = self.loop.create_task(coro)
        self._jobs.add(t)
        t.add_done_callback(self._jobs.discard)

    async def _scale_out(self, role: str) -> None:
        try:
            await asyncio.to_thread(self.launcher.start, role)
        except Exception as e:  # noqa: BLE001 - a failed start is counted and logged, serving goes on
            self.metrics.failures.labels(role, "scale_out").inc()
            log.warning("scaler: starting a %s instance failed: %s", role, e)
        finally:
            self.starting[role] -= 1
            self._update_gauges()

    async def _retire(self, b, new_role: str | None) -> None:
        """Drain `b` (already not accepting), remove it, stop it if the launcher started it;
        for a role switch start an instance of the new role."""
        action = "switch_role" if new_role else "scale_in"
        try:
            iid = self.launched.get(b.name)
            if iid is not None:  # the launcher drains (asking our registry) and stops it
                await asyncio.to_thread(self.launcher.drain, iid)
            else:
                while RouterRegistry(self).inflight(b.url):
                    await asyncio.sleep(0.1)
                await self.remove_url(b.url)
            if new_role is not None:
                await asyncio.to_thread(self.launcher.start, new_role)
        except Exception as e:  # noqa: BLE001
            self.metrics.failures.labels(b.role, action).inc()
            log.warning("scaler: %s of %s failed: %s", action, b.name, e)
        finally:
            if new_role is not None:
                self.starting[new_role] -= 1
            self._update_gauges()

    # --- the launcher's registry, on the event loop ---------------------------------------
    def backend_at(self, url: str):
        return next((b for b in self.r.pool if b.url == url), None)

    async def join_backend(self, url: str, role: str) -> None:
        inst = next((i for i in self.launcher.instances() if i.url == url), None)
        name = f"scaled-{inst.id}" if inst is not None else f"scaled-{url.rsplit(':', 1)[-1]}"
        b = self.r.pool.add(BackendConfig(name, url, role, self.cfg.launcher.profile))
        if inst is not None:
            self.launched[name] = inst.id
        await self.r.health.poll(b, 5.0)  # its engine metrics before the policies pick it
        log.info("scaler: %s (%s, %s) joined", name, role, url)
        self._update_gauges()

    def _drain_now(self, b) -> None:
        b.draining = True
        self.draining_since.setdefault(b.name, time.monotonic())
        log.info("scaler: draining %s", b.name)

    async def mark_draining_url(self, url: str) -> None:
        b = self.backend_at(url)
        if b is not None:
            self._drain_now(b)

    async def remove_url(self, url: str) -> None:
        b = self.backend_at(url)
        if b is None:
            return
        self.r.pool.remove(b.name)
        self.draining_since.pop(b.name, None)
        self.launched.pop(b.name, None)
        log.info("scaler: %s removed", b.name)

    # --- metrics ---------------------------------------------------------------------------
    def counts(self, pool: str) -> dict:
        bs = self.r.pool.role(pool)
        draining = sum(1 for b in bs if b.name in self.draining_since)
        return {"ready": len(bs) - draining, "starting": self.starting[pool], "draining": draining}

    def _update_gauges(self) -> None:
        for pool in self._pools():
            c = self.counts(pool)
            for state, n in c.items():
                self.metrics.instances.labels(pool, state).set(n)
            desired = self.desired_external(pool) if self.external is not None else c["ready"] + c["starting"]
            self.metrics.desired.labels(pool).set(desired)

    def describe(self) -> dict:
        return {
            "name": self.scaler.name(),
            "params": dict(self.scaler.params()),
            "pools": {p: self.counts(p) for p in self._pools()},
            **({"desired": {p: self.desired_external(p) for p in self._pools()}} if self.external is not None else {}),
        }
