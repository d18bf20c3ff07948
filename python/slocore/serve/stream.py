"""One client request as it moves through the router (``RequestContext``), and reading an
engine's SSE stream: every token goes to the policy (``on_token`` with the request's token
count; in P/D the decode engine's first token repeats the prefill's token 1 and is not
reported) and, when the client streams, straight on to the client. A watchdog
ends a stream that stays silent past the first-token or between-token timeout.
"""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

from slocore.serve import fastjson
from slocore.serve.backends import Backend
from slocore.serve.config import Timeouts
from slocore.serve.upstream import BackendError


class ClientGone(Exception):
    """The client closed its connection: stop, free the engine request, blame nobody."""


class RequestContext:
    def __init__(self, request, chat, rid, template, cls, client_stream, want_usage):
        self.request, self.chat, self.rid, self.template, self.cls = request, chat, rid, template, cls
        self.client_stream, self.want_usage = client_stream, want_usage
        self.resp: web.StreamResponse | None = None
        self.whole: web.Response | None = None  # a non-streaming client's answer (the engine's body)
        self.sent = False
        self.dispatched = False
        self.queue_time = 0.0
        self.on_first_token = None  # the scaler's event (serve/scaler.py): called with the token time
        self.reset()

    def reset(self):
        """Forget what a failed attempt produced (a retry starts clean)."""
        self.finish = self.usage = None
        self.finishing = False
        self.times: list = []
        self.handoff = None  # P/D: (prefill instance, early decode assignment future or None)

    async def write(self, data: bytes, last: bool = False):
        """`data` to the streaming client; `last`: then end the response (one write for both)."""
        if self.resp is None:
            self.resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
            # the headers leave with the first data (aiohttp >= 3.11 buffers them on request;
            # older versions ignore the attribute and send them at prepare)
            self.resp._send_headers_immediately = False
            await self.resp.prepare(self.request)
        self.sent = True
        try:
            if last:
                await self.resp.write_eof(data)
            else:
                await self.resp.write(data)
        except (ConnectionError, RuntimeError, aiohttp.ClientConnectionError) as e:
            raise ClientGone(str(e)) from None

    def absorb(self, obj: dict) -> int:
        """Count the tokens in one streamed chunk (a choice's token ids, else one per piece of
        text); keep the engine's usage and the finish reason (``finishing``: this chunk's)."""
        usage = obj.get("usage")
        if usage:
            self.usage = usage
        self.finishing = False
        choices = obj.get("choices")
        if not choices or not isinstance(choices, list):
            return 0
        n = 0
        chat = self.chat
        for ch in choices:
            if not isinstance(ch, dict):
                continue
            ids = ch.get("token_ids")
            if ids:
                n += len(ids)
            elif (ch.get("delta") or {}).get("content") if chat else ch.get("text"):
                n += 1
            fin = ch.get("finish_reason")
            if fin:
                self.finish = fin
                self.finishing = True
        return n


MAX_SSE_LINE = 16 << 20  # an engine line longer than this is a protocol error, not a buffer


def _tokens(ctx: RequestContext, st, att, backend: Backend, policy, ntok: int, tnow: float, skip_first: bool) -> None:
    """`ntok` tokens of attempt `att` arrived at `tnow`: the request state, the policy's
    ``on_token`` (not for a P/D decode's first token, which the prefill policy reported),
    the scaler's first-token event and the token times."""
    if ntok <= 0:
        return
    gen, rid, bid, plen = st.generated, att.id, backend.id, att.prompt_len
    for _ in range(ntok):
        gen += 1
        st.generated = gen
        st.computed = plen + gen - 1
        if not (skip_first and gen == 1):
            policy.on_token(rid, bid, gen, tnow)
            if gen == 1 and ctx.on_first_token is not None:
                ctx.on_first_token(tnow)
    ctx.times.extend([(tnow, bid)] * ntok)


async def relay(
    ctx: RequestContext,
    r: aiohttp.ClientResponse,
    st,
    att,
    backend: Backend,
    policy,
    t: Timeouts,
    now,
    skip_first: bool = False,
) -> None:
    """Read the engine's SSE stream `r` to ``[DONE]`` for attempt `att` (state `st`);
    `skip_first`: P/D decode, whose first token the prefill policy already reported.

    Whatever the engine has sent is read at once (``readany``): its complete lines are
    parsed only to count tokens (all dated at that read) and the client gets the engine's
    own data lines in one write, so a busy router makes one read and one write per batch of
    chunks, not per chunk."""
    loop = asyncio.get_running_loop()
    fired = []
    last = loop.time()  # when the current read began (None: not reading, e.g. writing to the client)

    def watch():
        """One watchdog per request, not a timer per read: it ends the stream once the
        current read has waited past the first-token or between-token timeout, else re-arms."""
        nonlocal dog
        first = st.generated == 0
        wait = t.first_token_s if first else t.idle_s
        left = wait if last is None else last + wait - loop.time()
        if left > 0:
            dog = loop.call_later(left, watch)
            return
        fired.append((wait, first))
        r.close()  # the pending read fails; reported as a timeout below

    dog = loop.call_later(t.first_token_s, watch)

    tail = b""  # an incomplete line carried to the next read
    done = False
    # The router always asks for usage. vLLM then puts system_fingerprint on the usage chunk
    # instead of the finishing chunks; a client that did not ask for usage gets it where the
    # engine puts it for that client: finishing chunks (and what follows them) wait for the
    # usage chunk, [DONE] or a failure, and take its fingerprint (serve.stream.fingerprinted).
    client_stream, want_usage = ctx.client_stream, ctx.want_usage
    fix_fp = client_stream and not want_usage
    held: list[list] = []  # [event bytes, is a finishing chunk]
    try:
        while not done:
            last = loop.time()
            try:
                chunk = await r.content.readany()
            except (aiohttp.ClientError, ConnectionError):
                if not fired:
                    raise
                chunk = b""
            last = None
            if fired:
                wait, first = fired[0]
                which = "first token" if first else "between tokens"
                raise BackendError(backend, "timeout", f"no output for {wait:g} s ({which})", 504)
            if not chunk:
                if held:  # what came before the failure still reaches the client
                    await ctx.write(b"".join(h[0] for h in held))
                raise BackendError(backend, "connection", "stream ended without [DONE]")
            buf = tail + chunk if tail else chunk
            end = buf.rfind(b"\n")
            if end < 0:
                tail = buf
                if len(tail) > MAX_SSE_LINE:
                    raise BackendError(backend, "protocol", f"SSE line longer than {MAX_SSE_LINE} bytes")
                continue
            tail = buf[end + 1 :]
            out: list[bytes] = []
            err = None
            tnow = now()
            for line in buf[:end].split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    done = True
                    break
                try:
                    obj = fastjson.loads(data)
                except ValueError:
                    obj = None
                if not isinstance(obj, dict):
                    err = BackendError(backend, "protocol", f"bad SSE data {data[:100]!r}")
                    break
                if "error" in obj and not obj.get("choices"):
                    err = BackendError(backend, "engine_error", f"engine error: {obj['error']}")
                    break
                ntok = ctx.absorb(obj)
                if ntok:
                    _tokens(ctx, st, att, backend, policy, ntok, tnow, skip_first)
                if client_stream and (obj.get("choices") or want_usage or not obj.get("usage")):
                    ev = line + b"\n\n"  # the engine's own line, as one SSE event
                    if fix_fp and (held or ctx.finishing):
                        held.append([ev, ctx.finishing])
                        continue
                    out.append(ev)
                elif held and obj.get("system_fingerprint") is not None:
                    for h in held:
                        if h[1]:
                            h[0] = fingerprinted(h[0], obj["system_fingerprint"])
            if held and (done or err is not None):
                out += [h[0] for h in held]
                held.clear()
            if done and client_stream:  # the last events, [DONE] and the end in one write
                out.append(b"data: [DONE]\n\n")
                await ctx.write(b"".join(out), last=True)
            elif out:  # what came before a failure still reaches the client, as it would one by one
                await ctx.write(b"".join(out))
            if err is not None:
                raise err
    finally:
        dog.cancel()


def fingerprinted(ev: bytes, fp) -> bytes:
    """SSE event `ev` with ``system_fingerprint`` `fp` where the engine wrote null (byte for
    byte otherwise; re-encoded only if the engine wrote it some other way)."""
    needle = b'"system_fingerprint":null'
    if needle in ev:
        return ev.replace(needle, b'"system_fingerprint":' + fastjson.dumps(fp), 1)
    try:
        obj = fastjson.loads(ev[5:].strip())
    except ValueError:
        return ev
    if not isinstance(obj, dict) or obj.get("system_fingerprint") is not None:
        return ev
    obj["system_fingerprint"] = fp
    return b"data: " + fastjson.dumps(obj) + b"\n\n"


async def read_whole(
    ctx: RequestContext,
    r: aiohttp.ClientResponse,
    st,
    att,
    backend: Backend,
    policy,
    t: Timeouts,
    now,
    skip_first: bool = False,
) -> None:
    """A non-streaming answer: the engine's body kept byte for byte for the client; its
    ``usage.completion_tokens`` tokens are dated on arrival (what the client sees) and go to
    the policy then (the caller bounds the whole exchange by first_token_s + idle_s)."""
    raw = await r.read()
    try:
        obj = fastjson.loads(raw)
        ntok = int((obj.get("usage") or {}).get("completion_tokens") or 0)
    except (ValueError, AttributeError, TypeError):
        raise BackendError(backend, "protocol", f"bad JSON answer {raw[:100]!r}") from None
    ctx.usage = obj.get("usage")
    _tokens(ctx, st, att, backend, policy, ntok, now(), skip_first)
    ctx.whole = web.Response(body=raw, status=r.status, content_type=r.content_type)
