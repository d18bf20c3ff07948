"""The OpenAI endpoints' request flow: parse and validate (4xx with a message on bad input)
-> SLO and priority (``slo.SloResolver``) -> a ``slocore.Request`` -> the mode's flow
(``colocated.ColocatedFlow`` or ``pd.PDFlow``) picks the engine(s) -> the answer is streamed
from the final engine (the router always streams from the engine, so it sees every token
time; a non-streaming client gets the assembled response) -> token times to the router's
``slocore.Recorder`` and metrics.

Retries: a ``BackendError`` before anything reached the client re-sends the request to
another engine (``retries``); otherwise the client gets a clear error (HTTP 502/504, or an
SSE ``error`` event then ``[DONE]`` mid-stream). The policies see one id per client request
(the recorder's), across retries: on_finished for the failed engine, then submit again.
"""
from __future__ import annotations

import asyncio
import itertools
import logging

from aiohttp import web

import slocore as _s
from slocore.serve.dispatch import NoBackend
from slocore.serve.openai import BadRequest, common_fields, error_body, parse_json, prompt_tokens, sse
from slocore.serve.slo import ROUTER_FIELDS
from slocore.serve.stream import ClientGone, RequestContext, relay
from slocore.serve.upstream import BackendError, ClientError, check_status

log = logging.getLogger("slocore.serve")


class RequestHandler:
    def __init__(self, router):
        self.r = router  # cfg, recorder, metrics, slo, flow, upstream, now, model_name
        self.ids = itertools.count(1)  # client requests: the recorder's and every policy's id

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
        r = self.r
        try:
            body = parse_json(await request.read())
            f = common_fields(body)
            plen = prompt_tokens(body, chat)
            ttft, tpot, deadline, prio, cls = r.slo.resolve(body, request.headers)
            if f["n"] != 1 and f["stream"]:
                raise BadRequest("n: the router streams n=1 only")
        except BadRequest as e:
            return web.json_response(error_body(str(e), e.status), status=e.status)
        rid = next(self.ids)
        arrival = r.now()
        kw = dict(ttft=ttft, tpot=tpot, priority=prio, task=cls)
        if deadline:
            kw["deadline"] = deadline
        if f["max_tokens"]:
            kw["max_output_len"] = f["max_tokens"]
        try:
            segs = r.prefix.segments(body, chat, rid)  # prefix identity (serve.prefix_index)
            template = _s.Request(rid, arrival, max(plen, sum(n for _, n in segs)), prefix=segs, **kw)
            template.validate()
        except (ValueError, TypeError) as e:
            return web.json_response(error_body(str(e), 400), status=400)
        r.recorder.add(template)
        fwd = {k: v for k, v in body.items() if k not in ROUTER_FIELDS}
        xargs = dict(fwd.get("vllm_xargs") or {})
        xargs.update(slo_ttft_ms=ttft * 1e3, slo_tpot_ms=tpot * 1e3, priority=prio)
        fwd["vllm_xargs"] = xargs
        want_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        simple = f["n"] == 1 and not body.get("logprobs") and not body.get("echo") and not body.get("top_logprobs")
        client_stream = f["stream"]
        ctx = RequestContext(request, chat, rid, template, cls, client_stream, want_usage)
        if not client_stream and not simple:
            return await self._passthrough(ctx, fwd)
        fwd["stream"] = True
        fwd["stream_options"] = {"include_usage": True}
        r.slo.queued(ctx)
        try:
            return await self._run_attempts(ctx, fwd)
        finally:
            r.slo.unqueued(ctx)

    def new_attempt(self, ctx) -> "_s.Request":
        """The policy-side request for one attempt of client request ctx: the client
        request's id (one id per request, across retries and P/D stages)."""
        t = ctx.template
        kw = dict(ttft=t.slo.ttft, tpot=t.slo.tpot, priority=t.priority, priority_weight=t.priority_weight,
                  task=t.task)
        if t.slo.deadline is not None:
            kw["deadline"] = t.slo.deadline
        if t.max_output_len:
            kw["max_output_len"] = t.max_output_len
        att = _s.Request(ctx.rid, t.arrival, t.prompt_len, **kw)
        att.prefix = t.prefix
        return att

    async def _run_attempts(self, ctx: RequestContext, fwd: dict):
        r = self.r
        attempts = 0
        last: BackendError | None = None
        while True:
            try:
                body = await r.flow.prepare(ctx, fwd)
                disp = r.flow.final
                att = self.new_attempt(ctx)
                backend = await r.flow.assign(ctx, att, r.cfg.timeouts.first_token_s)
                r.slo.dispatched(ctx)
                await self._stream(ctx, backend, disp, att, body)
                return ctx.resp or ctx.assembled(r.model_name)
            except NoBackend as e:
                msg = str(e) + (f"; last failure: {last}" if last else "")
                return await self._give_up(ctx, 503, msg, "service_unavailable")
            except ClientError as e:
                r.recorder.reject(ctx.rid, r.now(), f"engine rejected: HTTP {e.status}")
                r.metrics.failed(ctx.cls, "rejected")
                return web.Response(status=e.status, body=e.body, content_type=e.content_type)
            except BackendError as e:
                r.upstream.fail(e)
                last = e
                if ctx.sent or attempts >= r.cfg.retries:
                    why = "after output reached the client" if ctx.sent else f"after {attempts + 1} attempt(s)"
                    return await self._give_up(ctx, e.status, f"{e} ({why})", "backend_error")
                attempts += 1
                r.metrics.retries.inc()
                ctx.reset()
            except ClientGone:
                r.recorder.reject(ctx.rid, r.now(), "client disconnected")
                r.metrics.failed(ctx.cls, "failed")
                return ctx.resp
            except (ConnectionResetError, asyncio.CancelledError):
                r.recorder.reject(ctx.rid, r.now(), "client disconnected")
                r.metrics.failed(ctx.cls, "failed")
                raise

    async def _give_up(self, ctx, status: int, msg: str, type_: str):
        self.r.recorder.reject(ctx.rid, self.r.now(), msg)
        self.r.metrics.failed(ctx.cls, "failed")
        if ctx.resp is not None:  # mid-stream: an SSE error event, then [DONE]
            try:
                await ctx.resp.write(sse(error_body(msg, status, type_)))
                await ctx.resp.write(sse("[DONE]"))
                await ctx.resp.write_eof()
            except (ConnectionResetError, RuntimeError):
                pass
            return ctx.resp
        return web.json_response(error_body(msg, status, type_), status=status)

    async def _stream(self, ctx, backend, disp, att, body: dict):
        r = self.r
        t = r.cfg.timeouts
        async with r.upstream.post(backend, disp.policy, att, body, ctx.chat, t.total_s) as (resp, st):
            await check_status(backend, resp)
            await relay(ctx, resp, st, att, backend, disp.policy, t, r.now, skip_first=r.cfg.disaggregated)
        backend.served += 1
        # a chunk may carry several tokens (or none, for a partial UTF-8 character): the
        # engine's usage count is the truth; the missing ones are dated at the end
        extra = int((ctx.usage or {}).get("completion_tokens") or 0) - len(ctx.times)
        ctx.times.extend([(r.now(), backend.id)] * max(0, extra))
        for tt, bid in ctx.times:  # only the attempt that succeeded counts
            r.recorder.token(ctx.rid, tt, bid)
        r.recorder.finish(ctx.rid, r.now())
        m = _s.request_metrics(r.recorder.get(ctx.rid))
        r.metrics.finished(ctx.cls, m)
        r.slo.finished(ctx, m)

    async def _passthrough(self, ctx, fwd: dict):
        """Non-streaming requests the router cannot assemble (n > 1, logprobs, echo): sent as they
        are, timed only at the end."""
        r = self.r
        attempts = 0
        while True:
            try:
                att = self.new_attempt(ctx)
                disp = r.flow.final
                backend = await disp.assign(att, r.cfg.timeouts.first_token_s)
            except NoBackend as e:
                return await self._give_up(ctx, 503, str(e), "service_unavailable")
            try:
                total_s = r.cfg.timeouts.total_s
                async with r.upstream.post(backend, disp.policy, att, fwd, ctx.chat, total_s) as (resp, _):
                    raw = await resp.read()
                    if resp.status >= 500:
                        raise BackendError(backend, "http", f"HTTP {resp.status}")
            except BackendError as e:
                r.upstream.fail(e)
                if attempts >= r.cfg.retries:
                    return await self._give_up(ctx, e.status, f"{e} (after {attempts + 1} attempt(s))",
                                               "backend_error")
                attempts += 1
                r.metrics.retries.inc()
                continue
            now = r.now()
            if resp.status == 200:
                r.recorder.token(ctx.rid, now, backend.id)
                r.recorder.finish(ctx.rid, now)
                r.metrics.finished(ctx.cls, _s.request_metrics(r.recorder.get(ctx.rid)))
            else:
                r.recorder.reject(ctx.rid, now, f"engine rejected: HTTP {resp.status}")
                r.metrics.failed(ctx.cls, "rejected")
            return web.Response(status=resp.status, body=raw, content_type=resp.content_type)
