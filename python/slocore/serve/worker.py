"""A data-path worker (``workers: N`` > 1): one of N processes that serve the OpenAI
endpoints on the shared port (``SO_REUSEPORT``) and relay the engines' streams on their own
pooled connections, with the request handling of ``serve.handler`` unchanged. What a
single-process router does with its global policy, recorder and metrics goes to the policy
process (``serve.policy_host``) over ``serve.ipc``:

- ``add`` (the request's fields and prefix segments; its id comes from a block of ids the
  policy process gave this worker), ``sub`` then wait for ``asg`` (or ``err``), ``can``
  when the request leaves before using its assignment;
- ``tok`` / ``fin``: ``on_token`` / ``on_finished`` with the times this worker saw, one
  frame per event-loop turn;
- ``done`` / ``rej`` / ``rel``: the recorder's view of the request; ``mf``, ``mer``,
  ``retry``, ``stale``, ``fail``: counters and engine failures (quarantine lives there);
- ``get``: ``/metrics``, ``/health`` and ``/v1/models`` are the policy process's answers.

The worker exits when the policy process goes away (its socket closes) or on SIGTERM.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import os
import signal
import time

from aiohttp import web

from slocore.serve.backends import Backend
from slocore.serve.config import ServeConfig
from slocore.serve.dispatch import NoBackend
from slocore.serve.eventloop import new_event_loop
from slocore.serve.handler import RequestHandler
from slocore.serve.ipc import Link
from slocore.serve.limits import on_response_prepare
from slocore.serve.metrics import RouterMetrics
from slocore.serve.prefix_index import PrefixConfig, PromptIdentity
from slocore.serve.slo import SloResolver
from slocore.serve.upstream import Upstream, open_upstream

log = logging.getLogger("slocore.serve.worker")


def request_fields(req) -> list:
    """What the policy process needs to rebuild a ``slocore.Request`` (``request_from``):
    the fields ``serve.handler`` sets."""
    slo = req.slo
    dl = slo.deadline
    return [
        req.id,
        req.arrival,
        req.prompt_len,
        [list(s) for s in req.prefix],
        slo.ttft,
        slo.tpot,
        req.priority,
        req.task,
        dl if dl is not None and math.isfinite(dl) else None,
        req.max_output_len or None,
    ]


class RemotePolicy:
    """The policy as the data path calls it (``stream._tokens``, ``Upstream.post``)."""

    def __init__(self, link: Link):
        self.link = link

    def on_token(self, rid, bid, gen, now):
        self.link.send(["tok", rid, bid, gen, now])

    def on_finished(self, rid, bid, now):
        self.link.send(["fin", rid, bid, now])


class RemoteFlow:
    """The colocated flow with the dispatcher in the policy process."""

    def __init__(self, link: Link, pool: WorkerPool):
        self.link, self.pool = link, pool
        self.dispatchers: list = []
        self.final = self  # handler reads .final.policy
        self.policy = RemotePolicy(link)
        self.waiting: dict[int, asyncio.Future] = {}

    async def prepare(self, ctx, fwd: dict) -> dict:
        return fwd

    def nudge(self) -> None:
        """The policy process polls on the token and end events it receives."""

    async def assign(self, ctx, req, timeout: float) -> Backend:
        rid = req.id
        fut = asyncio.get_running_loop().create_future()
        self.waiting[rid] = fut
        self.link.send(["sub", rid, timeout])
        try:
            bid, name, url = await fut
        except asyncio.CancelledError:
            self.link.send(["can", rid])  # the policy process ends it (on_cancelled or on_finished)
            raise
        finally:
            self.waiting.pop(rid, None)
        return self.pool.get(bid, name, url)

    def answer(self, ev: list) -> None:
        fut = self.waiting.get(ev[1])
        if fut is None or fut.done():
            return
        if ev[0] == "asg":
            fut.set_result(ev[2:5])
        else:
            fut.set_exception(NoBackend(ev[2]))

    def fail_all(self, why: str) -> None:
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(NoBackend(why))


class WorkerPool:
    """The engines this worker has been sent to (made from the assignments); a failure goes
    to the policy process, which quarantines the engine for every worker."""

    def __init__(self, link: Link):
        self.link = link
        self.backends: dict[int, Backend] = {}

    def get(self, bid: int, name: str, url: str) -> Backend:
        b = self.backends.get(bid)
        if b is None or b.url != url:
            b = self.backends[bid] = Backend(bid, name, url, "colocated", None, 0, 16)
        return b

    def __iter__(self):
        return iter(self.backends.values())

    def __len__(self):
        return len(self.backends)

    def healthy(self):
        return list(self.backends.values())

    def fail(self, b: Backend, kind: str, message: str) -> None:
        self.link.send(["fail", b.id, kind, message])


class RemoteRecorder:
    """The recorder lives in the policy process: a request's record is made there."""

    def __init__(self, link: Link):
        self.link = link

    def __len__(self):
        return 0

    def add(self, req) -> None:
        self.link.send(["add", *request_fields(req)])

    def reject(self, rid, now, why) -> None:
        self.link.send(["rej", rid, now, why])


class RecordsForwarder:
    """``limits.RecordWindow``'s part: the policy process keeps the window."""

    def __init__(self, link: Link, recorder: RemoteRecorder):
        self.link, self.recorder = link, recorder

    def add(self, template) -> None:
        self.recorder.add(template)

    def done(self, rid: int) -> None:
        self.link.send(["rel", rid])


class _Count:
    def __init__(self, link: Link, name: str):
        self.link, self.name = link, name

    def inc(self, *_):
        self.link.send([self.name])


class WorkerMetrics(RouterMetrics):
    """Outcomes go to the policy process's metrics (its ``/metrics`` is the one served)."""

    def __init__(self, link: Link, window_s: float):
        super().__init__(window_s)
        self.link = link
        self.retries = _Count(link, "retry")
        self.stale_retries = _Count(link, "stale")

    def failed(self, cls: str, outcome: str = "failed") -> None:
        self.link.send(["mf", cls, outcome])

    def engine_rejected(self, cls: str, backend: str | None = None) -> None:
        self.link.send(["mer", cls, backend])


class IdBlocks:
    """Request ids from blocks the policy process hands out (one id per client request,
    unique across workers and restarts); asks for the next block at half the current one."""

    def __init__(self, link: Link):
        self.link = link
        self.blocks: list[range] = []
        self.it = iter(())
        self.left = 0
        self.asked = False

    def give(self, start: int, n: int) -> None:
        self.blocks.append(range(start, start + n))
        self.asked = False

    def __iter__(self):
        return self

    def __next__(self) -> int:
        if self.left <= 0:
            if not self.blocks:
                raise RuntimeError("no request ids left (the policy process is late)")
            blk = self.blocks.pop(0)
            self.it, self.left, self.half = iter(blk), len(blk), len(blk) // 2
        self.left -= 1
        if self.left < self.half and not self.blocks and not self.asked:
            self.asked = True
            self.link.send(["ids"])
        return next(self.it)


class WorkerHandler(RequestHandler):
    def __init__(self, router):
        super().__init__(router)
        self.ids = router.ids
        self.records = RecordsForwarder(router.link, router.recorder)

    def record_finished(self, ctx, backend) -> None:
        r = self.r
        extra = int((ctx.usage or {}).get("completion_tokens") or 0) - len(ctx.times)
        ctx.times.extend([(r.now(), backend.id)] * max(0, extra))
        r.link.send(["done", ctx.rid, ctx.cls, backend.name, ctx.times, r.now()])


class WorkerRouter:
    """What ``serve.handler`` needs of a router, with the policy side remote."""

    def __init__(self, cfg: ServeConfig, link: Link, t0: float):
        self.cfg, self.link, self.t0 = cfg, link, t0
        self.model_name = cfg.model
        self.scaler = None
        self.metrics = WorkerMetrics(link, cfg.metrics_window_s)
        self.recorder = RemoteRecorder(link)
        self.ids = IdBlocks(link)
        self.slo = SloResolver(cfg, None, self.now)
        self.prefix = PromptIdentity(PrefixConfig(**cfg.prefix))
        self.pool = WorkerPool(link)
        self.flow = RemoteFlow(link, self.pool)
        self.dispatchers = []
        self.handler = WorkerHandler(self)
        self.upstream: Upstream | None = None
        self._pages: dict[int, asyncio.Future] = {}
        self._page_ids = itertools.count()

    def now(self) -> float:
        return time.monotonic() - self.t0

    async def start(self):
        self.session, self.fresh_session, self.lean, self.upstream = open_upstream(
            self.cfg, self.pool, self.metrics, self.now, self.prefix
        )

    async def close(self):
        if self.upstream is None:  # stopped before it started
            return
        await self.session.close()
        await self.fresh_session.close()
        if self.lean is not None:
            self.lean.close()

    def on_event(self, ev: list) -> None:
        kind = ev[0]
        if kind in ("asg", "err"):
            self.flow.answer(ev)
        elif kind == "ids":
            self.ids.give(ev[1], ev[2])
        elif kind == "page":
            fut = self._pages.pop(ev[1], None)
            if fut is not None and not fut.done():
                fut.set_result(ev[2:])

    async def from_policy(self, request: web.Request) -> web.Response:
        """``/metrics``, ``/health``, ``/v1/models``: the policy process answers."""
        token = next(self._page_ids)
        fut = asyncio.get_running_loop().create_future()
        self._pages[token] = fut
        self.link.send(["get", token, request.path])
        try:
            status, ctype, body = await asyncio.wait_for(fut, 30)
        finally:
            self._pages.pop(token, None)
        return web.Response(status=status, body=body.encode(), headers={"Content-Type": ctype})

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.cfg.limits.max_body_bytes)
        app.on_response_prepare.append(on_response_prepare)
        app.router.add_post("/v1/completions", self.handler.completions)
        app.router.add_post("/v1/chat/completions", self.handler.chat_completions)
        for path in ("/v1/models", "/health", "/metrics"):
            app.router.add_get(path, self.from_policy)
        return app


async def _run(cfg: ServeConfig, ipc_path: str, index: int, t0: float, host: str, port: int) -> None:
    reader, writer = await asyncio.open_unix_connection(ipc_path)
    link = Link(reader, writer)
    router = WorkerRouter(cfg, link, t0)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    link.send(["hello", index, os.getpid()])
    got_ids = asyncio.Event()

    async def read():
        async for frame in link.frames():
            for ev in frame:
                router.on_event(ev)
                if ev[0] == "ids":
                    got_ids.set()
        router.flow.fail_all("the policy process went away")
        stop.set()  # the policy process is gone: so is this worker

    reading = loop.create_task(read())
    runner: web.AppRunner | None = None

    async def start_serving() -> None:
        nonlocal runner
        await asyncio.wait_for(got_ids.wait(), 60)
        await router.start()
        runner = web.AppRunner(router.app(), access_log=None, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_port=True, backlog=1024, shutdown_timeout=5)
        await site.start()
        link.send(["ready", index])

    # The policy process may go away (or SIGTERM come) while this worker is still starting: a
    # stop then ends the start too, or the worker outlives the process that started it.
    starting, stopping = loop.create_task(start_serving()), loop.create_task(stop.wait())
    await asyncio.wait((starting, stopping), return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        starting.cancel()
    try:
        await starting
        await stopping
    except asyncio.CancelledError:
        pass
    finally:
        stopping.cancel()
        if runner is not None:
            await runner.cleanup()
        await router.close()
        link.close()
        reading.cancel()


def worker_main(cfg: ServeConfig, ipc_path: str, index: int, t0: float, host: str, port: int) -> None:
    """Entry point of a worker process (started by ``serve.policy_host``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the policy process stops the workers
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s worker{index}: %(message)s")
    loop = new_event_loop()
    try:
        loop.run_until_complete(_run(cfg, ipc_path, index, t0, host, port))
    finally:
        loop.close()
