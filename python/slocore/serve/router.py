"""`slocore serve`: an asyncio (aiohttp) OpenAI-compatible router in front of engines.

Flow of one request: parse and validate (4xx with a message on bad input) -> SLO and
priority from body fields (``slo_ttft_ms``, ``slo_tpot_ms``, ``slo_deadline_ms``,
``priority``, ``slo_class``) or headers (``x-slo-ttft-ms``, ``x-slo-tpot-ms``,
``x-slo-deadline-ms``, ``x-priority``, ``x-slo-class``) or the config's priority-to-SLO
table -> a ``slocore.Request`` submitted to the global policy chosen by name -> the policy's
assignment (push policies answer at once; pull policies when ``poll`` releases it, the
router waking at ``next_wakeup``) -> the request is streamed from that engine (the router
always streams from the engine, so it sees every token time; a non-streaming client gets
the assembled response) -> ``on_prefill_done`` / ``on_token`` / ``on_finished`` go back
to the policy and the token times to the router's ``slocore.Recorder``.

P/D mode (backends with roles prefill and decode): the prompt goes to the prefill instance
the prefill policy picks with ``max_tokens=1`` and ``kv_transfer_params.do_remote_decode``;
the ``kv_transfer_params`` it answers with go with the request to the decode instance the
decode policy picks (vLLM's disaggregated proxy protocol).

Faults: an engine that refuses, drops the connection, answers 5xx or stays silent past a
timeout has the request re-sent to another engine (``retries``) when nothing has reached
the client yet; otherwise the client gets a clear error (HTTP 502/504, or an SSE ``error``
event then ``[DONE]`` mid-stream). Such an engine is quarantined until it answers
``/metrics`` again after ``quarantine_s``.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import time

import aiohttp
from aiohttp import web

import slocore as _s
from slocore.serve.backends import Backend, poll_forever
from slocore.serve.config import BackendConfig, ServeConfig
from slocore.serve.dispatch import Dispatcher, NoBackend, priority_mapper_class
from slocore.serve.metrics import RouterMetrics
from slocore.serve.openai import BadRequest, common_fields, error_body, full_response, parse_json, prompt_tokens, sse

log = logging.getLogger("slocore.serve")
ROUTER_FIELDS = ("slo_ttft_ms", "slo_tpot_ms", "slo_deadline_ms", "priority", "slo_class")
PREFILL_KV_PARAMS = {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
                     "remote_block_ids": None, "remote_host": None, "remote_port": None}


class BackendError(Exception):
    def __init__(self, backend: Backend, kind: str, message: str, status: int = 502):
        super().__init__(f"backend {backend.name} ({backend.url}): {message}")
        self.backend, self.kind, self.status = backend, kind, status


class ClientError(Exception):
    """The engine rejected the request itself (4xx): passed to the client, not retried."""

    def __init__(self, status: int, body: bytes, content_type: str):
        super().__init__(f"HTTP {status}")
        self.status, self.body, self.content_type = status, body, content_type


class ClientGone(Exception):
    """The client closed its connection: stop, free the engine request, blame nobody."""


class Router:
    def __init__(self, cfg: ServeConfig):
        self.cfg = cfg
        self.t0 = time.monotonic()
        self.metrics = RouterMetrics()
        self.recorder = _s.Recorder()
        self.ids = itertools.count(1)  # client requests (recorder ids)
        self.attempt_ids = itertools.count(1)  # what the policies see: one per attempt
        self.backends: dict[str, Backend] = {}
        self._bid = itertools.count()
        self.session: aiohttp.ClientSession | None = None
        self._engines = []  # in-process emulated engines (runner, engine)
        self._poller = None
        self.quarantine_s = max(2.0, 4 * cfg.poll_interval_s)
        self._quarantined: dict[str, float] = {}
        self.classes: dict[int, str] = {}
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
        self._pending_prio: dict[int, int] = {}  # priority -> requests without a first token yet
        now = self.now
        if cfg.disaggregated:
            self.prefill = Dispatcher("prefill", cfg.prefill_policy.name, cfg.prefill_policy.params,
                                      lambda: self._role("prefill"), self.metrics, now)
            self.decode = Dispatcher("decode", cfg.decode_policy.name, cfg.decode_policy.params,
                                     lambda: self._role("decode"), self.metrics, now)
            self.dispatchers = [self.prefill, self.decode]
        else:
            self.colocated = Dispatcher("colocated", cfg.policy.name, cfg.policy.params,
                                        lambda: self._role("colocated"), self.metrics, now)
            self.dispatchers = [self.colocated]

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _role(self, role: str):
        return [b for b in self.backends.values() if b.role == role]

    # --- lifecycle ---------------------------------------------------------------------
    def add_backend(self, bc: BackendConfig) -> Backend:
        from slocore.sim.runner import hardware_profile

        if bc.name in self.backends:
            raise ValueError(f"backend {bc.name!r} exists")
        if self.cfg.disaggregated and bc.role == "colocated" or not self.cfg.disaggregated and bc.role != "colocated":
            raise ValueError(f"role: {bc.role!r} does not fit this router's mode "
                             f"({'P/D' if self.cfg.disaggregated else 'colocated'})")
        hw, _ = hardware_profile(bc.profile)
        b = Backend(next(self._bid), bc.name, bc.url, bc.role, _s.LatencyModel(hw.coeffs), int(hw.kv_blocks),
                    int(hw.block_size))
        self.backends[b.name] = b
        for d in self.dispatchers:
            d.sync_instances()
        return b

    def remove_backend(self, name: str) -> None:
        if name not in self.backends:
            raise KeyError(name)
        self.backends[name].healthy = False
        del self.backends[name]
        for d in self.dispatchers:
            d.sync_instances()

    async def start(self):
        from slocore.serve import engine as _engine

        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=False))
        backends = list(self.cfg.backends)
        if not backends:
            backends = [BackendConfig("emulated-0", emulated={})]
        for bc in backends:
            if bc.emulated is not None:
                kw = dict(bc.emulated)
                kw.setdefault("profile", bc.profile)
                eng = _engine.EmulatedEngine(**kw)
                runner, url = await _engine.start(eng)
                self._engines.append((runner, eng))
                bc = BackendConfig(bc.name, url, bc.role, bc.profile, None)
                self.model_name = self.model_name or eng.model_name
            self.add_backend(bc)
        await asyncio.gather(*(b.poll(self.session, 2.0) for b in self.backends.values()))
        self._poller = asyncio.get_running_loop().create_task(
            poll_forever(lambda: self.backends.values(), self.session, self.cfg.poll_interval_s))
        self._poller.add_done_callback(lambda t: None)
        # quarantine wrapper: a failed engine stays out until quarantine_s passes
        for b in self.backends.values():
            self._wrap_poll(b)

    def _wrap_poll(self, b: Backend):
        orig = b.poll

        async def poll(session, timeout):
            await orig(session, timeout)
            until = self._quarantined.get(b.name, 0.0)
            if time.monotonic() < until:
                b.healthy = False
        b.poll = poll

    async def close(self):
        if self._poller:
            self._poller.cancel()
        for d in self.dispatchers:
            d.close()
        if self.session:
            await self.session.close()
        for runner, _ in self._engines:
            await runner.cleanup()

    # --- app ---------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/health", self.health)
        app.router.add_get("/metrics", self.metrics_endpoint)
        app.router.add_get("/admin/state", self.admin(self.admin_state))
        app.router.add_post("/admin/backends", self.admin(self.admin_add))
        app.router.add_delete("/admin/backends/{name}", self.admin(self.admin_remove))

        async def on_startup(app):
            await self.start()

        async def on_cleanup(app):
            await self.close()
        app.on_startup.append(on_startup)
        app.on_cleanup.append(on_cleanup)
        return app

    async def health(self, request):
        n = sum(1 for b in self.backends.values() if b.healthy)
        if n == 0:
            return web.json_response({"status": "unhealthy", "healthy_backends": 0}, status=503)
        return web.json_response({"status": "ok", "healthy_backends": n, "backends": len(self.backends)})

    async def models(self, request):
        for b in self.backends.values():  # the engines' own list (model names must match theirs)
            if not b.healthy:
                continue
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
        body = self.metrics.render(pending, list(self.backends.values()))
        return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    # --- admin -------------------------------------------------------------------------
    def admin(self, fn):
        async def guarded(request: web.Request):
            tok = self.cfg.admin_token
            if not tok:
                return web.json_response(error_body("admin endpoints are disabled: set admin_token in the config "
                                                    "or SLOCORE_ADMIN_TOKEN", 403, "forbidden"), status=403)
            auth = request.headers.get("Authorization", "")
            if auth != f"Bearer {tok}":
                return web.json_response(error_body("admin endpoints need 'Authorization: Bearer <admin_token>'",
                                                    401, "unauthorized"), status=401)
            return await fn(request)
        return guarded

    async def admin_state(self, request):
        return web.json_response({"backends": [b.describe() for b in self.backends.values()],
                                  "policies": {d.label: d.describe() for d in self.dispatchers},
                                  "summary": _jsonable(_s.summarize(self.recorder)) if len(self.recorder) else {}})

    async def admin_add(self, request):
        try:
            d = parse_json(await request.read())
            from slocore.serve.config import from_dict
            bc = from_dict({"backends": [d]}, "body").backends[0]
            if bc.url is None:
                raise BadRequest("url: required (emulated engines are added at start only)")
            b = self.add_backend(bc)
        except (BadRequest, ValueError) as e:
            return web.json_response(error_body(str(e), 400), status=400)
        self._wrap_poll(b)
        await b.poll(self.session, 2.0)
        return web.json_response(b.describe(), status=201)

    async def admin_remove(self, request):
        name = request.match_info["name"]
        try:
            self.remove_backend(name)
        except KeyError:
            return web.json_response(error_body(f"backend {name!r} not found", 404, "not_found"), status=404)
        return web.json_response({"removed": name})

    # --- requests ----------------------------------------------------------------------
    def _slo(self, body: dict, headers) -> tuple[float, float, float | None, int, str]:
        def get(field, header, conv):
            v = body.get(field)
            src = field
            if v is None and header in headers:
                v, src = headers[header], header
            if v is None:
                return None
            try:
                if isinstance(v, bool):
                    raise ValueError
                x = conv(v)
            except (TypeError, ValueError):
                raise BadRequest(f"{src}: expected a number, got {v!r}") from None
            if conv is float and not (math.isfinite(x) and x > 0):
                raise BadRequest(f"{src}: must be a finite number > 0, got {v!r}")
            return x

        prio = get("priority", "x-priority", int)
        prio = 0 if prio is None else prio
        slo = self.cfg.slo_for(prio)
        ttft = get("slo_ttft_ms", "x-slo-ttft-ms", float)
        tpot = get("slo_tpot_ms", "x-slo-tpot-ms", float)
        if self.mapper is not None and (ttft is None or tpot is None):
            higher = any(n > 0 for q, n in self._pending_prio.items() if q < prio)
            try:
                mt, mp = self.mapper.map(prio, higher)
            except (ValueError, KeyError, IndexError) as e:
                raise BadRequest(f"priority: {e}") from None
            ttft, tpot = ttft or mt * 1e3, tpot or mp * 1e3
        ttft = ttft or slo.ttft_ms
        tpot = tpot or slo.tpot_ms
        dl = get("slo_deadline_ms", "x-slo-deadline-ms", float) or slo.deadline_ms
        cls = body.get("slo_class", headers.get("x-slo-class"))
        if cls is not None and not isinstance(cls, str):
            raise BadRequest(f"slo_class: must be a string, got {cls!r}")
        return ttft / 1e3, tpot / 1e3, (dl / 1e3 if dl else None), prio, cls or f"priority{prio}"

    async def completions(self, request):
        return await self.handle(request, chat=False)

    async def chat_completions(self, request):
        return await self.handle(request, chat=True)

    async def handle(self, request: web.Request, chat: bool):
        try:
            return await self._handle(request, chat)
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception as e:  # noqa: BLE001 - a bug must still answer, with its cause
            log.exception("internal error")
            return web.json_response(error_body(f"router internal error: {type(e).__name__}: {e}", 500,
                                                "internal_error"), status=500)

    async def _handle(self, request: web.Request, chat: bool):
        try:
            body = parse_json(await request.read())
            f = common_fields(body)
            plen = prompt_tokens(body, chat)
            ttft, tpot, deadline, prio, cls = self._slo(body, request.headers)
            if f["n"] != 1 and f["stream"]:
                raise BadRequest("n: the router streams n=1 only")
        except BadRequest as e:
            return web.json_response(error_body(str(e), e.status), status=e.status)
        rid = next(self.ids)
        arrival = self.now()
        kw = dict(ttft=ttft, tpot=tpot, priority=prio, task=cls)
        if deadline:
            kw["deadline"] = deadline
        if f["max_tokens"]:
            kw["max_output_len"] = f["max_tokens"]
        try:
            template = _s.Request(rid, arrival, plen, **kw)
            template.validate()
        except (ValueError, TypeError) as e:
            return web.json_response(error_body(str(e), 400), status=400)
        self.recorder.add(template)
        fwd = {k: v for k, v in body.items() if k not in ROUTER_FIELDS}
        xargs = dict(fwd.get("vllm_xargs") or {})
        xargs.update(slo_ttft_ms=ttft * 1e3, slo_tpot_ms=tpot * 1e3, priority=prio)
        fwd["vllm_xargs"] = xargs
        want_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        simple = f["n"] == 1 and not body.get("logprobs") and not body.get("echo") and not body.get("top_logprobs")
        client_stream = f["stream"]
        ctx = _Ctx(request, chat, rid, template, cls, client_stream, want_usage)
        if not client_stream and not simple:
            return await self._passthrough(ctx, fwd)
        fwd["stream"] = True
        fwd["stream_options"] = {"include_usage": True}
        return await self._run(ctx, fwd)

    def _new_attempt(self, ctx) -> "_s.Request":
        r = ctx.template
        aid = next(self.attempt_ids)
        kw = dict(ttft=r.slo.ttft, tpot=r.slo.tpot, priority=r.priority, priority_weight=r.priority_weight,
                  task=r.task)
        if r.slo.deadline is not None:
            kw["deadline"] = r.slo.deadline
        if r.max_output_len:
            kw["max_output_len"] = r.max_output_len
        return _s.Request(aid, r.arrival, r.prompt_len, **kw)

    def _fail_backend(self, e: BackendError):
        b = e.backend
        b.failures += 1
        b.healthy = False
        b.last_error = str(e)
        self._quarantined[b.name] = time.monotonic() + self.quarantine_s
        self.metrics.backend_errors.labels(b.name, e.kind).inc()
        log.warning("%s", e)

    async def _run(self, ctx: "_Ctx", fwd: dict):
        p = ctx.template.priority
        self._pending_prio[p] = self._pending_prio.get(p, 0) + 1
        try:
            return await self._run_attempts(ctx, fwd)
        finally:
            if not ctx.dispatched:
                self._pending_prio[p] -= 1

    def _dispatched(self, ctx):
        if ctx.dispatched:
            return
        ctx.dispatched = True
        p = ctx.template.priority
        self._pending_prio[p] = self._pending_prio.get(p, 1) - 1
        ctx.queue_time = self.now() - ctx.template.arrival
        if self.mapper is not None:
            self.mapper.on_dispatch(p, ctx.queue_time)

    async def _run_attempts(self, ctx: "_Ctx", fwd: dict):
        attempts = 0
        last: BackendError | None = None
        timeout = self.cfg.timeouts
        while True:
            try:
                if self.cfg.disaggregated:
                    body = await self._prefill(ctx, fwd)
                    disp = self.decode
                else:
                    body, disp = fwd, self.colocated
                att = self._new_attempt(ctx)
                backend = await disp.assign(att, timeout.first_token_s)
                self._dispatched(ctx)
                await self._stream(ctx, backend, disp, att, body)
                return ctx.resp or self._assembled(ctx)
            except NoBackend as e:
                msg = str(e) + (f"; last failure: {last}" if last else "")
                return await self._give_up(ctx, 503, msg, "service_unavailable")
            except ClientError as e:
                self.recorder.reject(ctx.rid, self.now(), f"engine rejected: HTTP {e.status}")
                self.metrics.failed(ctx.cls, "rejected")
                return web.Response(status=e.status, body=e.body, content_type=e.content_type)
            except BackendError as e:
                self._fail_backend(e)
                last = e
                if ctx.sent or attempts >= self.cfg.retries:
                    why = "after output reached the client" if ctx.sent else f"after {attempts + 1} attempt(s)"
                    return await self._give_up(ctx, e.status, f"{e} ({why})", "backend_error")
                attempts += 1
                self.metrics.retries.inc()
                ctx.reset()
            except ClientGone:
                self.recorder.reject(ctx.rid, self.now(), "client disconnected")
                self.metrics.failed(ctx.cls, "failed")
                return ctx.resp
            except (ConnectionResetError, asyncio.CancelledError):
                self.recorder.reject(ctx.rid, self.now(), "client disconnected")
                self.metrics.failed(ctx.cls, "failed")
                raise

    async def _give_up(self, ctx, status: int, msg: str, type_: str):
        self.recorder.reject(ctx.rid, self.now(), msg)
        self.metrics.failed(ctx.cls, "failed")
        if ctx.resp is not None:  # mid-stream: an SSE error event, then [DONE]
            try:
                await ctx.resp.write(sse(error_body(msg, status, type_)))
                await ctx.resp.write(sse("[DONE]"))
                await ctx.resp.write_eof()
            except (ConnectionResetError, RuntimeError):
                pass
            return ctx.resp
        return web.json_response(error_body(msg, status, type_), status=status)

    async def _prefill(self, ctx, fwd: dict) -> dict:
        """P/D: run the prompt on a prefill instance; returns the decode request body."""
        att = self._new_attempt(ctx)
        backend = await self.prefill.assign(att, self.cfg.timeouts.first_token_s)
        self._dispatched(ctx)
        pbody = {k: v for k, v in fwd.items() if k not in ("stream_options", "min_tokens")}
        pbody.update(stream=False, max_tokens=1, kv_transfer_params=dict(PREFILL_KV_PARAMS))
        pbody.pop("max_completion_tokens", None)
        url = backend.url + ("/v1/chat/completions" if ctx.chat else "/v1/completions")
        st = _s.RequestState(att)
        backend.inflight[att.id] = st
        t = self.cfg.timeouts
        try:
            async with self.session.post(url, json=pbody, timeout=aiohttp.ClientTimeout(
                    total=t.first_token_s, sock_connect=t.connect_s)) as r:
                raw = await r.read()
                if 400 <= r.status < 500:
                    raise ClientError(r.status, raw, r.content_type)
                if r.status != 200:
                    raise BackendError(backend, "http", f"HTTP {r.status}: {raw[:200]!r}")
                out = json.loads(raw)
        except asyncio.TimeoutError:
            raise BackendError(backend, "timeout", f"prefill gave no answer within {t.first_token_s:g} s", 504) from None
        except (aiohttp.ClientError, ValueError) as e:
            raise BackendError(backend, "connection", f"prefill failed: {type(e).__name__}: {e}") from None
        finally:
            backend.inflight.pop(att.id, None)
            self.prefill.policy.on_finished(att.id, backend.id, self.now())
        backend.served += 1
        dbody = dict(fwd)
        kvp = out.get("kv_transfer_params")
        if kvp:
            dbody["kv_transfer_params"] = kvp
        return dbody

    async def _stream(self, ctx, backend: Backend, disp: Dispatcher, att, body: dict):
        url = backend.url + ("/v1/chat/completions" if ctx.chat else "/v1/completions")
        t = self.cfg.timeouts
        st = _s.RequestState(att)
        backend.inflight[att.id] = st
        pol = disp.policy
        try:
            async with self.session.post(url, json=body, timeout=aiohttp.ClientTimeout(
                    total=t.total_s, sock_connect=t.connect_s)) as r:
                if 400 <= r.status < 500:
                    raise ClientError(r.status, await r.read(), r.content_type)
                if r.status != 200:
                    raise BackendError(backend, "http", f"HTTP {r.status}: {(await r.read())[:200]!r}")
                done = False
                loop = asyncio.get_running_loop()
                fired = []

                def expire(wait=0.0, first=True):
                    fired.append((wait, first))
                    r.close()  # the pending readline fails; reported as a timeout below
                # A watchdog timer armed per line: cheaper than a wait_for task per token.
                while not done:
                    if st.generated == 0:
                        dog = loop.call_later(t.first_token_s, expire, t.first_token_s, True)
                    else:
                        dog = loop.call_later(t.idle_s, expire, t.idle_s, False)
                    try:
                        line = await r.content.readline()
                    except (aiohttp.ClientError, ConnectionError):
                        if not fired:
                            raise
                        line = b""
                    finally:
                        dog.cancel()
                    if fired:
                        wait, first = fired[0]
                        raise BackendError(backend, "timeout", f"no output for {wait:g} s "
                                           f"({'first token' if first else 'between tokens'})", 504)
                    if not line:
                        raise BackendError(backend, "connection", "stream ended without [DONE]")
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        done = True
                        break
                    try:
                        obj = json.loads(data)
                    except ValueError:
                        raise BackendError(backend, "protocol", f"bad SSE data {data[:100]!r}") from None
                    if "error" in obj and not obj.get("choices"):
                        raise BackendError(backend, "engine_error", f"engine error: {obj['error']}")
                    ntok = self._absorb(ctx, obj)
                    now = self.now()
                    for _ in range(ntok):
                        st.generated = st.generated + 1
                        st.computed = att.prompt_len + st.generated - 1
                        if st.generated == 1:
                            pol.on_prefill_done(att.id, backend.id, now)
                        pol.on_token(att.id, backend.id, int(st.generated), now)
                        ctx.times.append((now, backend.id))
                    if ctx.client_stream and (obj.get("choices") or ctx.want_usage or not obj.get("usage")):
                        await ctx.write(line + b"\n")
            if ctx.client_stream:
                await ctx.write(b"data: [DONE]\n\n")
                await ctx.resp.write_eof()
        except asyncio.TimeoutError:
            raise BackendError(backend, "timeout", f"no answer within {t.total_s:g} s", 504) from None
        except aiohttp.ClientResponseError as e:
            raise BackendError(backend, "http", f"{type(e).__name__}: {e}") from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as e:
            raise BackendError(backend, "connection", f"{type(e).__name__}: {e or 'connection lost'}") from None
        finally:
            backend.inflight.pop(att.id, None)
            pol.on_finished(att.id, backend.id, self.now())
        backend.served += 1
        # a chunk may carry several tokens (or none, for a partial UTF-8 character): the
        # engine's usage count is the truth; the missing ones are dated at the end
        extra = int((ctx.usage or {}).get("completion_tokens") or 0) - len(ctx.times)
        ctx.times.extend([(self.now(), backend.id)] * max(0, extra))
        for tt, bid in ctx.times:  # only the attempt that succeeded counts
            self.recorder.token(ctx.rid, tt, bid)
        self.recorder.finish(ctx.rid, self.now())
        m = _s.request_metrics(self.recorder.get(ctx.rid))
        self.metrics.finished(ctx.cls, m)
        if self.mapper is not None and m.ttft == m.ttft:  # feed HFX's sliding windows
            self.mapper.record(ctx.template.priority, m.ttft, ctx.queue_time, m.tpot if m.tpot == m.tpot else 0.0)

    def _absorb(self, ctx, obj: dict) -> int:
        """Count the tokens in one streamed chunk and keep what the assembled answer needs."""
        ctx.id = ctx.id or obj.get("id")
        ctx.model = ctx.model or obj.get("model")
        if obj.get("usage"):
            ctx.usage = obj["usage"]
        if obj.get("kv_transfer_params"):
            ctx.extra["kv_transfer_params"] = obj["kv_transfer_params"]
        n = 0
        for ch in obj.get("choices") or []:
            text = (ch.get("delta") or {}).get("content") if ctx.chat else ch.get("text")
            if text:
                ctx.text.append(text)
            n += len(ch.get("token_ids") or ()) or (1 if text else 0)
            if ch.get("finish_reason"):
                ctx.finish = ch["finish_reason"]
        return n

    def _assembled(self, ctx) -> web.Response:
        out = full_response(ctx.id or "", ctx.model or (self.model_name or ""), ctx.chat, ["".join(ctx.text)],
                            [ctx.finish], ctx.usage, ctx.extra or None)
        return web.json_response(out)

    async def _passthrough(self, ctx, fwd: dict):
        """Non-streaming requests the router cannot assemble (n > 1, logprobs, echo): sent as they
        are, timed only at the end."""
        attempts = 0
        while True:
            try:
                att = self._new_attempt(ctx)
                disp = self.decode if self.cfg.disaggregated else self.colocated
                backend = await disp.assign(att, self.cfg.timeouts.first_token_s)
            except NoBackend as e:
                return await self._give_up(ctx, 503, str(e), "service_unavailable")
            url = backend.url + ("/v1/chat/completions" if ctx.chat else "/v1/completions")
            t = self.cfg.timeouts
            backend.inflight[att.id] = _s.RequestState(att)
            try:
                async with self.session.post(url, json=fwd, timeout=aiohttp.ClientTimeout(
                        total=t.total_s, sock_connect=t.connect_s)) as r:
                    raw = await r.read()
                    if r.status >= 500:
                        raise BackendError(backend, "http", f"HTTP {r.status}")
                    now = self.now()
                    if r.status == 200:
                        self.recorder.token(ctx.rid, now, backend.id)
                        self.recorder.finish(ctx.rid, now)
                        self.metrics.finished(ctx.cls, _s.request_metrics(self.recorder.get(ctx.rid)))
                    else:
                        self.recorder.reject(ctx.rid, now, f"engine rejected: HTTP {r.status}")
                        self.metrics.failed(ctx.cls, "rejected")
                    return web.Response(status=r.status, body=raw, content_type=r.content_type)
            except asyncio.TimeoutError:
                e = BackendError(backend, "timeout", f"no answer within {t.total_s:g} s", 504)
            except aiohttp.ClientError as ex:
                e = BackendError(backend, "connection", f"{type(ex).__name__}: {ex}")
            except BackendError as ex:
                e = ex
            finally:
                backend.inflight.pop(att.id, None)
                disp.policy.on_finished(att.id, backend.id, self.now())
            self._fail_backend(e)
            if attempts >= self.cfg.retries:
                return await self._give_up(ctx, e.status, f"{e} (after {attempts + 1} attempt(s))", "backend_error")
            attempts += 1
            self.metrics.retries.inc()


class _Ctx:
    def __init__(self, request, chat, rid, template, cls, client_stream, want_usage):
        self.request, self.chat, self.rid, self.template, self.cls = request, chat, rid, template, cls
        self.client_stream, self.want_usage = client_stream, want_usage
        self.resp: web.StreamResponse | None = None
        self.sent = False
        self.dispatched = False
        self.queue_time = 0.0
        self.reset()

    def reset(self):
        self.id = self.model = self.finish = self.usage = None
        self.text: list[str] = []
        self.times: list = []
        self.extra: dict = {}

    async def write(self, data: bytes):
        if self.resp is None:
            self.resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
            await self.resp.prepare(self.request)
        self.sent = True
        try:
            await self.resp.write(data)
        except (ConnectionError, RuntimeError, aiohttp.ClientConnectionError) as e:
            raise ClientGone(str(e)) from None


def new_event_loop():
    """uvloop's event loop when installed (the serve extra lists it on Linux), else asyncio's."""
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def main(args) -> int:
    from slocore.serve import config as _config

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = _config.load(args.config) if args.config else _config.ServeConfig()
    if args.host:
        cfg.host = args.host
    if args.port is not None:
        cfg.port = args.port
    if args.policy:
        cfg.policy = _config.PolicyConfig(args.policy, json.loads(args.policy_params or "{}"))
    router = Router(cfg)
    mode = "P/D" if cfg.disaggregated else "colocated"
    names = ", ".join(b.name for b in cfg.backends) or "one embedded emulated engine"
    print(f"slocore serve: {mode}, backends: {names}; listening on http://{cfg.host}:{cfg.port}", flush=True)
    web.run_app(router.app(), host=cfg.host, port=cfg.port, access_log=None, print=None, loop=new_event_loop())
    return 0
