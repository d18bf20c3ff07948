"""`slocore serve`: an asyncio (aiohttp) OpenAI-compatible router in front of engines.

This module only wires the parts together (the layout follows vllm-project/router: core
pieces beside per-mode request flows):

- ``pool``      the backends, add/remove, selection by role, quarantine
- ``health``    ``/metrics`` polling, up/down with hysteresis
- ``dispatch``  one global policy per role as an awaitable assignment
- ``upstream``  the one request path to an engine (errors, in-flight, ``on_finished``)
- ``stream``    a client request's context; relaying an engine's token stream
- ``colocated`` / ``pd``  the two modes' flows (P/D: prefill, then decode)
- ``handler``   the OpenAI endpoints: validation, SLO, retries, pass-through
- ``slo``       SLO/priority from body, headers, HFX's mapper or the config table
- ``admin``     the admin API; ``metrics`` the Prometheus page

Faults: an engine that refuses, drops the connection, answers 5xx or stays silent past a
timeout has the request re-sent to another engine (``retries``) when nothing has reached
the client yet; otherwise the client gets a clear error. Such an engine is quarantined for
``quarantine_s`` and comes back once it answers ``/health`` after that. A stale pooled
connection is retried on a fresh one and blames nobody (``upstream``).
"""

from __future__ import annotations

import asyncio
import logging
import time

import aiohttp
from aiohttp import web

import slocore as _s
from slocore.serve import engine as _engine
from slocore.serve.admin import AdminApi
from slocore.serve.colocated import ColocatedFlow
from slocore.serve.config import BackendConfig, ServeConfig
from slocore.serve.dispatch import priority_mapper_class
from slocore.serve.eventloop import new_event_loop
from slocore.serve.handler import RequestHandler
from slocore.serve.health import HealthChecker, poll_timeout
from slocore.serve.limits import on_response_prepare
from slocore.serve.metrics import RouterMetrics
from slocore.serve.pd import PDFlow
from slocore.serve.pool import BackendPool
from slocore.serve.prefix_index import PrefixConfig, PromptIdentity
from slocore.serve.slo import SloResolver
from slocore.serve.upstream import Upstream, open_upstream

log = logging.getLogger("slocore.serve")


class Router:
    def __init__(self, cfg: ServeConfig):
        self.cfg = cfg
        self.t0 = time.monotonic()
        self.metrics = RouterMetrics(cfg.metrics_window_s)
        self.recorder = _s.Recorder()
        self.session: aiohttp.ClientSession | None = None
        self.lean = None  # serve.upstream_lean.LeanClient when upstream_client is lean
        self.upstream: Upstream | None = None
        self.health: HealthChecker | None = None
        self._engines = []  # in-process emulated engines (runner, engine)
        self.model_name = cfg.model
        self.mapper = None
        if cfg.mapper is not None:
            cls = priority_mapper_class()
            if cls is None:
                raise ValueError("slo.mapper: this slocore build has no PriorityMapper (HFX); use slo.priorities")
            try:
                self.mapper = cls(**cfg.mapper)
            except TypeError as e:
                raise ValueError(f"slo.mapper: {e}") from None
        self.slo = SloResolver(cfg, self.mapper, self.now)
        self.prefix = PromptIdentity(PrefixConfig(**cfg.prefix))
        self.pool = BackendPool(
            cfg.disaggregated, max(2.0, 4 * cfg.poll_interval_s), self._sync_policies, self.prefix.new_index
        )
        self.handler = RequestHandler(self)
        if cfg.disaggregated:
            self.flow = PDFlow(
                cfg,
                self.pool,
                self.metrics,
                self.now,
                lambda: self.upstream,
                self.handler.new_attempt,
                self.slo.dispatched,
            )
        else:
            self.flow = ColocatedFlow(cfg, self.pool, self.metrics, self.now)
        self.dispatchers = self.flow.dispatchers
        self.admin = AdminApi(self)
        self.scaler = None
        if cfg.scaler is not None:  # the scaler in the live loop (serve/scaler.py)
            from slocore.serve.scaler import ScalerLoop

            self.scaler = ScalerLoop(self, cfg.scaler)

    @property
    def backends(self):
        return self.pool.backends

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _sync_policies(self):
        for d in getattr(self, "dispatchers", ()):
            d.sync_instances()

    def add_backend(self, bc: BackendConfig):
        return self.pool.add(bc)

    def remove_backend(self, name: str) -> None:
        self.pool.remove(name)

    # --- lifecycle ---------------------------------------------------------------------
    async def start(self):
        self.session, self.fresh_session, self.lean, self.upstream = open_upstream(
            self.cfg, self.pool, self.metrics, self.now, self.prefix
        )
        self.health = HealthChecker(self.pool, self.session, self.cfg.poll_interval_s)
        backends = list(self.cfg.backends)
        if not backends:
            backends = [BackendConfig("emulated-0", emulated={})]
        for bc in backends:
            eng = None
            if bc.emulated is not None:
                kw = dict(bc.emulated)
                kw.setdefault("profile", bc.profile)
                kw.setdefault("role", bc.role)  # a decode backend's scheduler sees a decode instance
                eng = _engine.EmulatedEngine(**kw)
                runner, url = await _engine.start(eng)
                self._engines.append((runner, eng))
                bc = BackendConfig(bc.name, url, bc.role, bc.profile, None, bc.kv_events)
                self.model_name = self.model_name or eng.model_name
            b = self.pool.add(bc)
            if eng is not None:  # the policies plan with the emulated engine's own token budget
                b.max_batch_tokens = int(eng.max_batch_tokens)
        await self.health.poll_all(poll_timeout(self.cfg.poll_interval_s))
        self.health.start()
        if self.scaler is not None:
            self.scaler.start()

    async def close(self):
        if self.scaler is not None:
            await self.scaler.stop()
        if self.health:
            self.health.stop()
        for d in self.dispatchers:
            d.close()
        if self.session:
            await self.session.close()
            await self.fresh_session.close()
        if self.lean is not None:
            self.lean.close()
        for runner, _ in self._engines:
            await runner.cleanup()

    # --- app ---------------------------------------------------------------------------
    def app(self, serve_clients: bool = True, lifecycle=None) -> web.Application:
        """The router's endpoints; without `serve_clients` only /health, /metrics, /v1/models
        and the admin API (the policy process behind workers). `lifecycle`: what starts and
        closes with the app (its start() and close(); default the router)."""
        life = lifecycle or self
        app = web.Application(client_max_size=self.cfg.limits.max_body_bytes)
        app.on_response_prepare.append(on_response_prepare)  # x-request-id on every answer
        if serve_clients:
            app.router.add_post("/v1/completions", self.handler.completions)
            app.router.add_post("/v1/chat/completions", self.handler.chat_completions)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/health", self.health_endpoint)
        app.router.add_get("/metrics", self.metrics_endpoint)
        self.admin.routes(app)

        async def on_startup(app):
            await life.start()

        async def on_cleanup(app):
            await life.close()

        app.on_startup.append(on_startup)
        app.on_cleanup.append(on_cleanup)
        return app

    async def health_endpoint(self, request):
        n = len(self.pool.healthy())
        if n == 0:
            return web.json_response({"status": "unhealthy", "healthy_backends": 0}, status=503)
        return web.json_response({"status": "ok", "healthy_backends": n, "backends": len(self.pool)})

    async def models(self, request):
        for b in self.pool.healthy():  # the engines' own list (model names must match theirs)
            try:
                async with self.session.get(b.url + "/v1/models", timeout=aiohttp.ClientTimeout(total=5)) as r:
                    if r.status == 200:
                        return web.json_response(await r.json())
            except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
                continue
        name = self.model_name or "slocore"
        return web.json_response({"object": "list", "data": [{"id": name, "object": "model", "owned_by": "slocore"}]})

    async def metrics_endpoint(self, request):
        pending = sum(len(d.futures) for d in self.dispatchers)
        body = self.metrics.render(pending, list(self.pool))
        return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


def main(args) -> int:
    """`slocore serve` in one process (``workers`` > 1: ``cli.cmd_serve`` runs serve.policy_host)."""
    return run(config_from_args(args))


def config_from_args(args) -> ServeConfig:
    """The config file with the command line's overrides (and the command's logging)."""
    from slocore.serve import config as _config

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = _config.load(args.config) if args.config else _config.ServeConfig()
    if args.host:
        cfg.host = args.host
    if args.port is not None:
        cfg.port = args.port
    if args.policy:
        cfg.policy = _config.PolicyConfig(args.policy, dict(args.policy_params or {}))
    if getattr(args, "workers", None) is not None:
        if args.workers < 1:
            raise ValueError(f"--workers: must be at least 1, got {args.workers}")
        cfg.workers = args.workers
    return cfg


def run(cfg: ServeConfig) -> int:
    router = Router(cfg)
    mode = "P/D" if cfg.disaggregated else "colocated"
    names = ", ".join(b.name for b in cfg.backends) or "one embedded emulated engine"
    print(f"slocore serve: {mode}, backends: {names}; listening on http://{cfg.host}:{cfg.port}", flush=True)
    web.run_app(
        router.app(),
        host=cfg.host,
        port=cfg.port,
        access_log=None,
        print=None,
        loop=new_event_loop(),
        handler_cancellation=True,
    )  # a client that leaves cancels its request upstream
    return 0
