"""The one request path to an engine: POST, map every failure to ``BackendError`` (retried
elsewhere) or ``ClientError`` (the engine rejected the request: passed to the client), and,
whatever happens, take the attempt off the backend's in-flight list and tell the policy
``on_finished``. The colocated, P/D and pass-through flows all go through ``Upstream.post``.

Pooled connections live shorter than the engine's keep-alive (``KEEPALIVE_S`` < vLLM's 5 s),
and a request that fails on a pooled connection the engine had already closed
(``ServerDisconnectedError``, "Can not write request body") is sent once more on a fresh
connection and does not count against the engine.

Two HTTP clients do this: ``upstream_client: lean`` (the default where ``httptools`` is
installed: ``serve.upstream_lean``, about half of aiohttp's CPU per streamed request) and
``upstream_client: aiohttp`` (aiohttp's ``ClientSession``). Both give the same response
surface and the same failure kinds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

import aiohttp

import slocore as _s
from slocore.serve import fastjson
from slocore.serve.backends import Backend
from slocore.serve.config import ENGINE_KEEPALIVE_S, Timeouts
from slocore.serve.metrics import RouterMetrics
from slocore.serve.pool import BackendPool
from slocore.serve.prefix_index import record_sent, release_sent

try:
    from slocore.serve import upstream_lean as _lean
except ImportError:  # httptools absent: aiohttp's client only
    _lean = None

log = logging.getLogger("slocore.serve")


KEEPALIVE_S = ENGINE_KEEPALIVE_S
CLIENTS = ("lean", "aiohttp")


def default_client() -> str:
    """``SLOCORE_UPSTREAM_CLIENT`` if set (the tests run both), else lean where httptools is."""
    name = os.environ.get("SLOCORE_UPSTREAM_CLIENT") or ("lean" if _lean is not None else "aiohttp")
    if name not in CLIENTS:
        raise ValueError(f"SLOCORE_UPSTREAM_CLIENT: must be one of {CLIENTS}, got {name!r}")
    return name


def lean_client(on_stale=None):
    """The lean client (serve.upstream_lean); ValueError naming httptools if it is absent."""
    if _lean is None:
        raise ValueError("upstream_client: lean needs httptools (pip install httptools, or slocore[serve])")
    return _lean.LeanClient(KEEPALIVE_S, on_stale)


def connector(force_close: bool = False) -> aiohttp.TCPConnector:
    """The router's connection pool to its engines (unbounded; idle connections kept KEEPALIVE_S)."""
    if force_close:
        return aiohttp.TCPConnector(limit=0, force_close=True)
    return aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_S)


def stale_connection(e: BaseException) -> bool:
    """The engine closed a pooled connection before our request got through (not a refusal)."""
    return isinstance(e, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)) and not isinstance(
        e, aiohttp.ClientConnectorError
    )


class BackendError(Exception):
    """The engine failed (refused, dropped, 5xx, silent, garbled): retry elsewhere if possible."""

    def __init__(self, backend: Backend, kind: str, message: str, status: int = 502):
        super().__init__(f"backend {backend.name} ({backend.url}): {message}")
        self.backend, self.kind, self.status = backend, kind, status
        self.detail = message  # without the engine's name and URL (serve.limits.public_message)


_JSON = {"Content-Type": "application/json"}
# The failures of an exchange, by kind, from either client (a garbled or oversized answer is
# "http"; aiohttp's ClientResponseError is a ClientError, so "http" is tested first).
_HTTP_ERRORS = (aiohttp.ClientResponseError,) + ((_lean.UpstreamProtocolError,) if _lean is not None else ())
_CONNECTION_ERRORS = (aiohttp.ClientError,) + ((_lean.UpstreamConnectionError,) if _lean is not None else ())


class ClientError(Exception):
    """The engine rejected the request itself (4xx): passed to the client, not retried."""

    def __init__(self, status: int, body: bytes, content_type: str, backend: str | None = None):
        super().__init__(f"HTTP {status}")
        self.status, self.body, self.content_type = status, body, content_type
        self.backend = backend  # the engine's name


def endpoint(backend: Backend, chat: bool) -> str:
    return backend.url + ("/v1/chat/completions" if chat else "/v1/completions")


async def check_status(backend: Backend, r: aiohttp.ClientResponse) -> None:
    """4xx -> ClientError, any other non-200 -> BackendError."""
    if 400 <= r.status < 500:
        raise ClientError(r.status, await r.read(), r.content_type, backend.name)
    if r.status != 200:
        raise BackendError(backend, "http", f"HTTP {r.status}: {(await r.read())[:200]!r}")


def open_upstream(cfg, pool, metrics, now, prefix):
    """A router process's engine side: a pooled session, a session that never reuses a
    connection, the lean client when configured (the default) and the Upstream over them.
    Returns (session, fresh_session, lean, upstream); the caller closes the three clients."""
    session = aiohttp.ClientSession(connector=connector())
    fresh = aiohttp.ClientSession(connector=connector(force_close=True))
    client = cfg.upstream_client or default_client()
    lean = lean_client(metrics.stale_retries.inc) if client == "lean" else None
    upstream = Upstream(session, pool, cfg.timeouts, metrics, now, fresh, lean)
    upstream.prefix = prefix
    return session, fresh, lean, upstream


class Upstream:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        pool: BackendPool,
        timeouts: Timeouts,
        metrics: RouterMetrics,
        now,
        fresh: aiohttp.ClientSession | None = None,
        lean=None,
    ):
        self.session, self.pool, self.timeouts, self.metrics, self.now = session, pool, timeouts, metrics, now
        self.prefix = None  # serve.prefix_index.PromptIdentity (set by the router)
        self.fresh = fresh or session  # a session whose connections are never reused (the retry)
        self.lean = lean  # a serve.upstream_lean.LeanClient: used instead of the sessions

    async def _send(self, url: str, body: dict, timeout: aiohttp.ClientTimeout) -> aiohttp.ClientResponse:
        data = fastjson.dumps(body)
        try:
            return await self.session.post(url, data=data, headers=_JSON, timeout=timeout)
        except aiohttp.ClientError as e:
            if not stale_connection(e):
                raise
            self.metrics.stale_retries.inc()
            return await self.fresh.post(url, data=data, headers=_JSON, timeout=timeout)

    @contextlib.asynccontextmanager
    async def post(self, backend: Backend, policy, att, body: dict, chat: bool, total_s: float, what: str = ""):
        """``async with upstream.post(...) as (response, state)``: the attempt `att` is in
        `backend`'s in-flight list (``state``: its ``slocore.RequestState``) while inside;
        transport failures and timeouts leave as ``BackendError``; ``policy.on_finished``
        fires on the way out, success or not. `what` names the step in failure messages."""
        st = _s.RequestState(att)
        backend.inflight[att.id] = st
        record_sent(backend, att, self.prefix)
        try:
            if self.lean is not None:
                data = fastjson.dumps(body)
                r = await self.lean.post(endpoint(backend, chat), data, total_s, self.timeouts.connect_s)
            else:
                r = await self._send(
                    endpoint(backend, chat),
                    body,
                    aiohttp.ClientTimeout(total=total_s, sock_connect=self.timeouts.connect_s),
                )
            try:
                yield r, st
            except BaseException:
                r.close()  # a half-read answer: drop the connection (the engine stops the request)
                raise
            r.release()
        except asyncio.TimeoutError:
            msg = f"{what} gave no answer" if what else "no answer"
            raise BackendError(backend, "timeout", f"{msg} within {total_s:g} s", 504) from None
        except _HTTP_ERRORS as e:
            msg = f"{type(e).__name__}: {e}"
            raise BackendError(backend, "http", f"{what} failed: {msg}" if what else msg) from None
        except _CONNECTION_ERRORS as e:
            msg = f"{type(e).__name__}: {e or 'connection lost'}"
            raise BackendError(backend, "connection", f"{what} failed: {msg}" if what else msg) from None
        finally:
            backend.inflight.pop(att.id, None)
            release_sent(backend, att)
            policy.on_finished(att.id, backend.id, self.now())

    def fail(self, e: BackendError) -> None:
        """Count the failure and quarantine the engine."""
        self.metrics.backend_errors.labels(e.backend.name, e.kind).inc()
        self.pool.fail(e.backend, e.kind, str(e))
