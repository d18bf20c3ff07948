"""The policy process of ``workers: N`` (N > 1): one ``serve.router.Router`` that owns the
global policy (its ``Dispatcher``), the recorder, health polling, the backends, the admin
API and ``/metrics``, on ``policy_port``; N worker processes (``serve.worker``) serve the
OpenAI endpoints on ``port`` (shared with ``SO_REUSEPORT``) and send it the policy's events
over a Unix socket (``serve.ipc``).

The event contract holds as in one process: one id per client request (the ids come in
blocks from here), and per request the same calls in the same order with the same
parameters (``submit`` + ``poll`` per ``sub``; ``on_token`` with the time the worker saw;
``on_finished`` or ``on_cancelled`` exactly once per attempt). A worker that dies has its
requests ended here (``on_cancelled`` if unassigned, else ``on_finished``; the record is
rejected as failed) and is started again; when this process ends, its workers end (SIGTERM,
and a worker whose socket closes exits).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import multiprocessing
import os
import socket
import tempfile
import time

from aiohttp import web
from prometheus_client import Counter

import slocore as _s
from slocore import _core
from slocore.serve.config import ServeConfig
from slocore.serve.dispatch import NoBackend
from slocore.serve.ipc import Link
from slocore.serve.prefix_index import record_sent, release_sent
from slocore.serve.router import Router

log = logging.getLogger("slocore.serve")

ID_BLOCK = 1 << 16  # request ids handed to a worker at a time
RESTART_LIMIT = 5  # restarts of one worker slot within RESTART_WINDOW_S before giving up
RESTART_WINDOW_S = 60.0


def check_config(cfg: ServeConfig) -> None:
    """ValueError naming the field for what the workers do not do (yet)."""
    if cfg.workers < 2:
        return
    if cfg.disaggregated:
        raise ValueError("workers: P/D mode (prefill/decode backends) runs in one process only; set workers: 1")
    if cfg.scaler is not None:
        raise ValueError("workers: the scaler runs in one process only; set workers: 1")
    if cfg.mapper is not None:
        raise ValueError("workers: slo.mapper runs in one process only; set workers: 1")
    if cfg.admission.max_queue is not None:  # it counts the waiting requests of one process
        raise ValueError("workers: admission.max_queue sheds on one process's queue; set workers: 1")
    tenants = [cfg.tenants.anonymous, *cfg.tenants.list]
    if any(t.requests_per_min is not None or t.tokens_per_min is not None for t in tenants):
        raise ValueError("workers: tenant rate limits are counted in one process; set workers: 1")


def request_from(fields: list) -> _s.Request:
    rid, arrival, plen, prefix, ttft, tpot, prio, task, deadline, max_out = fields
    inf = float("inf")  # JSON has no infinity: orjson writes it as null
    kw = dict(ttft=inf if ttft is None else ttft, tpot=inf if tpot is None else tpot, priority=prio, task=task)
    if deadline is not None:
        kw["deadline"] = deadline
    if max_out:
        kw["max_output_len"] = max_out
    return _s.Request(rid, arrival, plen, prefix=[tuple(s) for s in prefix], **kw)


class WorkerConn:
    """One worker's connection and what it has open here."""

    def __init__(self, link: Link):
        self.link = link
        self.index = -1
        self.pid = 0
        self.owned: set[int] = set()  # request ids with a record here (until ``rel``)
        self.open: set[int] = set()  # ... of which neither finished nor rejected yet
        self.tasks: dict[int, asyncio.Task] = {}  # rid -> waiting for its assignment
        self.assigned: dict[int, tuple] = {}  # rid -> (backend, RequestState, attempt)


class PolicyHost:
    def __init__(self, cfg: ServeConfig):
        check_config(cfg)
        self.cfg = cfg
        self.router = Router(cfg)
        self.disp = self.router.flow.colocated
        self.next_id = itertools.count(1, ID_BLOCK)
        self.conns: set[WorkerConn] = set()
        self.procs: dict[int, multiprocessing.Process] = {}
        self.starts: dict[int, list[float]] = {}
        self.ready: dict[int, asyncio.Event] = {}
        self.closing = False
        self.port = cfg.port
        self._reserve: socket.socket | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="slocore-ipc-")
        self.ipc_path = os.path.join(self._tmp.name, "policy.sock")
        reg = self.router.metrics.registry
        self.worker_requests = Counter(
            "slocore_worker_requests", "Client requests by data-path worker", ["worker"], registry=reg
        )
        self.worker_restarts = Counter("slocore_worker_restarts", "Data-path workers started again", registry=reg)
        self._ctx = multiprocessing.get_context("spawn")

    # --- lifecycle ---------------------------------------------------------------------
    def _reserve_port(self) -> None:
        """Bind (not listen) the data port with SO_REUSEPORT: port 0 gets a free one, and a
        port another program holds fails here, before the workers start."""
        s = socket.socket(socket.AF_INET6 if ":" in self.cfg.host else socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.bind((self.cfg.host, self.cfg.port))
        self.port = s.getsockname()[1]
        self._reserve = s

    async def start(self) -> None:
        self._reserve_port()
        self._server = await asyncio.start_unix_server(self._serve_worker, path=self.ipc_path)
        await self.router.start()
        for k in range(self.cfg.workers):
            self._spawn(k)
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in self.ready.values())), 120)

    def _spawn(self, k: int) -> None:
        from slocore.serve.worker import worker_main

        self.ready[k] = asyncio.Event()
        p = self._ctx.Process(
            target=worker_main,
            args=(self.cfg, self.ipc_path, k, self.router.t0, self.cfg.host, self.port),
            name=f"slocore-worker-{k}",
            daemon=True,
        )
        p.start()
        self.procs[k] = p
        self.starts.setdefault(k, []).append(time.monotonic())
        loop = asyncio.get_running_loop()
        loop.add_reader(p.sentinel, self._exited, k, p)

    def _exited(self, k: int, p) -> None:
        asyncio.get_running_loop().remove_reader(p.sentinel)
        p.join(0)
        if self.closing or self.procs.get(k) is not p:
            return
        now = time.monotonic()
        recent = [t for t in self.starts[k] if now - t < RESTART_WINDOW_S]
        self.starts[k] = recent
        if len(recent) >= RESTART_LIMIT:
            log.error("worker %d exited (code %s) %d times in %g s: not restarted", k, p.exitcode, len(recent), 60)
            return
        log.warning("worker %d exited (code %s): starting it again", k, p.exitcode)
        self.worker_restarts.inc()
        self._spawn(k)

    async def close(self) -> None:
        self.closing = True
        loop = asyncio.get_running_loop()
        for p in self.procs.values():
            with contextlib.suppress(ValueError, OSError):
                loop.remove_reader(p.sentinel)
            if p.is_alive():
                p.terminate()
        for p in self.procs.values():
            await loop.run_in_executor(None, p.join, 10)
            if p.is_alive():
                p.kill()
                await loop.run_in_executor(None, p.join, 5)
        self._server.close()
        for c in list(self.conns):
            c.link.close()
        await self.router.close()
        if self._reserve is not None:
            self._reserve.close()
        self._tmp.cleanup()

    def app(self) -> web.Application:
        """The policy port: /health, /metrics, /v1/models and the admin API (no client requests)."""
        return self.router.app(serve_clients=False, lifecycle=self)

    # --- one worker ----------------------------------------------------------------------
    async def _serve_worker(self, reader, writer) -> None:
        c = WorkerConn(Link(reader, writer))
        self.conns.add(c)
        try:
            async for frame in c.link.frames():
                for ev in frame:
                    try:
                        self._event(c, ev)
                    except Exception:  # noqa: BLE001 - a bug (or a policy's exception) fails one request, not the link
                        log.exception("worker %d: event %r", c.index, ev[:2])
                        if ev[0] == "sub":
                            c.link.send(["err", ev[1], "router internal error in the policy process"])
        finally:
            self.conns.discard(c)
            self._worker_gone(c)
            c.link.close()

    def _event(self, c: WorkerConn, ev: list) -> None:
        r = self.router
        kind = ev[0]
        if kind == "tok":
            _, rid, bid, gen, t = ev
            a = c.assigned.get(rid)
            if a is not None:  # (none: already ended here; nothing after on_finished)
                st = a[1]
                st.generated = gen
                st.computed = a[2].prompt_len + gen - 1
                self.disp.policy.on_token(rid, bid, gen, t)
                if gen == 1:
                    self.disp.nudge()
        elif kind == "fin":
            self._finish(c, ev[1], ev[3])
        elif kind == "add":
            req = request_from(ev[1:])
            r.handler.records.add(req)
            c.owned.add(req.id)
            c.open.add(req.id)
            r.metrics.child(self.worker_requests, str(c.index)).inc()
        elif kind == "sub":
            self._submit(c, ev[1], ev[2])
        elif kind == "can":
            task = c.tasks.pop(ev[1], None)
            if task is not None and not task.done():
                task.cancel()  # Dispatcher.wait: on_cancelled (or on_finished if just assigned)
            elif ev[1] in c.assigned:
                self._finish(c, ev[1], r.now())  # assigned, but the worker never used it
        elif kind == "done":
            _, rid, cls, bname, times, t_end = ev
            token = r.recorder.token
            for t, bid in times:
                token(rid, t, bid)
            r.recorder.finish(rid, t_end)
            c.open.discard(rid)
            r.metrics.finished(cls, _s.request_metrics(r.recorder.get(rid)), bname)
            b = r.pool.backends.get(bname)
            if b is not None:
                b.served += 1
        elif kind == "rej":
            r.recorder.reject(ev[1], ev[2], ev[3])
            c.open.discard(ev[1])
        elif kind == "rel":
            r.handler.records.done(ev[1])
            c.owned.discard(ev[1])
        elif kind == "mf":
            r.metrics.failed(ev[1], ev[2])
        elif kind == "mer":
            r.metrics.engine_rejected(ev[1], ev[2])
        elif kind == "retry":
            r.metrics.retries.inc()
        elif kind == "stale":
            r.metrics.stale_retries.inc()
        elif kind == "fail":
            _, bid, fkind, msg = ev
            b = self._backend(bid)
            if b is not None:
                r.metrics.backend_errors.labels(b.name, fkind).inc()
                r.pool.fail(b, fkind, msg)
        elif kind == "ids":
            c.link.send(["ids", next(self.next_id), ID_BLOCK])
        elif kind == "get":
            asyncio.get_running_loop().create_task(self._page(c, ev[1], ev[2]))
        elif kind == "hello":
            c.index, c.pid = ev[1], ev[2]
            c.link.send(["ids", next(self.next_id), ID_BLOCK])
        elif kind == "ready":
            e = self.ready.get(ev[1])
            if e is not None:
                e.set()
        else:
            log.warning("worker %d: unknown event %r", c.index, kind)

    def _backend(self, bid: int):
        for b in self.router.pool:
            if b.id == bid:
                return b
        return None

    def _submit(self, c: WorkerConn, rid: int, timeout: float) -> None:
        """What ``Dispatcher.assign`` does, with the answer sent to the worker."""
        tpl = self.router.handler.records.live.get(rid)
        if tpl is None:
            c.link.send(["err", rid, f"request {rid} unknown to the policy process"])
            return
        att = _core.copy_request(tpl)
        try:
            fut = self.disp.submit(att)
        except NoBackend as e:
            c.link.send(["err", rid, str(e)])
            return
        self.disp.poll_now()
        c.tasks[rid] = asyncio.get_running_loop().create_task(self._await(c, att, fut, timeout))

    async def _await(self, c: WorkerConn, att, fut, timeout: float) -> None:
        rid = att.id
        try:
            b = await self.disp.wait(att, fut, timeout)
        except NoBackend as e:
            c.link.send(["err", rid, str(e)])
            return
        finally:
            c.tasks.pop(rid, None)
        st = _s.RequestState(att)
        b.inflight[rid] = st  # as Upstream.post does in one process
        record_sent(b, att, self.router.prefix)
        c.assigned[rid] = (b, st, att)
        c.link.send(["asg", rid, b.id, b.name, b.url])

    def _finish(self, c: WorkerConn, rid: int, t: float) -> None:
        a = c.assigned.pop(rid, None)
        if a is None:
            return
        b, _, att = a
        b.inflight.pop(rid, None)
        release_sent(b, att)
        self.disp.policy.on_finished(rid, b.id, t)
        self.disp.nudge()

    async def _page(self, c: WorkerConn, token: int, path: str) -> None:
        r = self.router
        fn = {"/metrics": r.metrics_endpoint, "/health": r.health_endpoint, "/v1/models": r.models}.get(path)
        resp = await fn(None) if fn is not None else web.Response(status=404, text="not found")
        body = resp.body.decode() if isinstance(resp.body, bytes) else str(resp.body or "")
        ctype = resp.headers.get("Content-Type") or resp.content_type
        c.link.send(["page", token, resp.status, ctype, body])

    def _worker_gone(self, c: WorkerConn) -> None:
        """A worker's socket closed: end what it had open so nothing leaks in the policy."""
        r = self.router
        now = r.now()
        for task in list(c.tasks.values()):
            task.cancel()  # Dispatcher.wait -> on_cancelled
        for rid in list(c.assigned):
            self._finish(c, rid, now)
        live = r.handler.records.live
        for rid in sorted(c.open):  # its client got no answer from it: failed, as in one process
            r.recorder.reject(rid, now, f"data-path worker {c.index} exited")
            tpl = live.get(rid)
            r.metrics.failed(tpl.task if tpl is not None else "priority0", "failed")
        for rid in c.owned:
            r.handler.records.done(rid)
        c.open.clear()
        c.owned.clear()


def main(cfg: ServeConfig) -> int:
    """``slocore serve`` with ``workers`` > 1."""
    from slocore.serve.eventloop import new_event_loop

    host = PolicyHost(cfg)
    pport = cfg.policy_port if cfg.policy_port is not None else (cfg.port + 1 if cfg.port else 0)
    print(
        f"slocore serve: {cfg.workers} data-path workers on http://{cfg.host}:{cfg.port}; "
        f"policy process (admin, /metrics) on http://{cfg.host}:{pport}",
        flush=True,
    )
    web.run_app(host.app(), host=cfg.host, port=pport, access_log=None, print=None, loop=new_event_loop())
    return 0
