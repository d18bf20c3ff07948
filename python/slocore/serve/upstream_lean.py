"""A lean HTTP/1.1 client for the router's requests to its engines: an asyncio ``Protocol``
over ``httptools`` (the llhttp parser uvicorn uses), with a small keep-alive pool per engine.
aiohttp's client costs about twice the CPU per streamed request (bench/upstream_client_cost.py); this
one does only what ``serve.upstream`` needs, with the same response surface the router reads
(``status``, ``content_type``, ``read()``, ``content.readany()``, ``close()``, ``release()``).

- bodies: content-length, chunked, or (no length, not chunked) until the engine closes;
- keep-alive: a connection goes back to its engine's pool only after a complete answer the
  engine did not mark ``Connection: close``; it is never reused after ``keepalive_s`` idle
  (below vLLM's 5 s) and idle ones are closed soon after that;
- a reused connection that the engine closed before any byte of the answer
  (``StaleConnection``) is retried once on a new connection and reported to ``on_stale``;
- timeouts: connect (``connect_s``) and the whole exchange (``total_s``, to the end of the
  body: a read past it raises ``asyncio.TimeoutError``); the read timeouts (first token,
  between tokens) are the stream's watchdog's (``serve.stream.relay``), which ``close()``s;
- ``close()`` (a client that left, a watchdog) drops the connection: a half-read answer never
  returns to the pool, and a pending read fails with ``UpstreamConnectionError``;
- the engine is not trusted: headers over ``MAX_HEADER_BYTES``, a body read whole over
  ``MAX_BODY_BYTES`` or bytes that are not HTTP raise ``UpstreamProtocolError``.
"""

from __future__ import annotations

import asyncio
import ssl as _ssl
import urllib.parse

import httptools

from slocore.serve.config import ENGINE_KEEPALIVE_S

KEEPALIVE_S = ENGINE_KEEPALIVE_S
MAX_HEADER_BYTES = 64 << 10  # status line + headers of one answer
MAX_BODY_BYTES = 64 << 20  # a body read whole (read()); a stream is read piecewise
HIGH_WATER = 1 << 20  # buffered, unread body bytes before reading from the engine pauses


class UpstreamConnectionError(ConnectionError):
    """Could not connect, or the connection ended before the answer did."""


class StaleConnection(UpstreamConnectionError):
    """The engine had closed a pooled connection before answering our request."""


class UpstreamProtocolError(Exception):
    """The engine's bytes are not an acceptable HTTP answer (garbled, too large)."""


class _Target:
    """One engine endpoint: where to connect and the request head up to Content-Length."""

    __slots__ = ("pool", "head")

    def __init__(self, pool: _Pool, path: str):
        self.pool = pool
        self.head = (
            f"POST {path} HTTP/1.1\r\nHost: {pool.host_header}\r\nContent-Type: application/json\r\n"
            "Accept: */*\r\nContent-Length: "
        ).encode("latin-1")


class _Conn(asyncio.Protocol):
    """One TCP connection to an engine; feeds the answer in progress (``resp``)."""

    __slots__ = ("transport", "resp", "closed", "idle_since", "paused")

    def __init__(self):
        self.transport = None
        self.resp: LeanResponse | None = None
        self.closed = False
        self.idle_since = 0.0
        self.paused = False

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data: bytes):
        r = self.resp
        if r is None:  # bytes while idle: not HTTP we asked for; never reuse this connection
            self.abort()
            return
        r._got_bytes = True
        if not r._headers_done:
            r._head_fed += len(data)
        try:
            r._parser.feed_data(data)
        except httptools.HttpParserCallbackError as e:
            ours = e.__context__  # raised by a callback below (a size bound)
            r._fail(ours if isinstance(ours, UpstreamProtocolError) else UpstreamProtocolError(str(e)))
            self.abort()
            return
        except httptools.HttpParserError as e:
            r._fail(UpstreamProtocolError(f"bad HTTP answer: {e}"))
            self.abort()
            return
        if not r._headers_done and r._head_fed > MAX_HEADER_BYTES:  # the parser keeps an unfinished header
            r._fail(UpstreamProtocolError(f"answer headers larger than {MAX_HEADER_BYTES} bytes"))
            self.abort()

    def eof_received(self):
        return False  # close the transport: connection_lost follows

    def connection_lost(self, exc):
        self.closed = True
        r = self.resp
        if r is not None:
            r._lost(exc)

    def pause_writing(self):
        pass

    def resume_writing(self):
        pass

    def abort(self):
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def resume(self):
        """Read from the engine again (after pausing at HIGH_WATER unread bytes)."""
        if self.paused and not self.closed:
            self.paused = False
            self.transport.resume_reading()


class _Pool:
    """Idle keep-alive connections to one engine (host, port), most recent last."""

    def __init__(self, scheme: str, host: str, port: int, keepalive_s: float):
        self.host, self.port, self.keepalive_s = host, port, keepalive_s
        default = 443 if scheme == "https" else 80
        self.host_header = host if port == default else f"{host}:{port}"
        if ":" in host and not host.startswith("["):  # IPv6 literal
            self.host_header = f"[{host}]" if port == default else f"[{host}]:{port}"
        self.ssl = _ssl.create_default_context() if scheme == "https" else None
        self.idle: list[_Conn] = []
        self.sweep = None  # the TimerHandle that closes expired idle connections

    def take(self, now: float) -> _Conn | None:
        idle = self.idle
        while idle:
            c = idle.pop()
            if c.closed or c.transport.is_closing():
                continue
            if now - c.idle_since >= self.keepalive_s:  # the rest are older still
                c.abort()
                for o in idle:
                    o.abort()
                idle.clear()
                return None
            return c
        return None

    def put(self, c: _Conn, loop) -> None:
        c.resp = None
        c.idle_since = loop.time()
        self.idle.append(c)
        if self.sweep is None:
            self.sweep = loop.call_later(self.keepalive_s, self._sweep, loop)

    def _sweep(self, loop) -> None:
        self.sweep = None
        now = loop.time()
        keep = []
        for c in self.idle:
            if c.closed:
                continue
            if now - c.idle_since >= self.keepalive_s:
                c.abort()
            else:
                keep.append(c)
        self.idle = keep
        if keep:  # the oldest left expires first
            self.sweep = loop.call_at(keep[0].idle_since + self.keepalive_s, self._sweep, loop)

    def close(self) -> None:
        if self.sweep is not None:
            self.sweep.cancel()
            self.sweep = None
        for c in self.idle:
            c.abort()
        self.idle.clear()


class LeanResponse:
    """One engine answer; also its own ``content`` (``r.content.readany()`` as in aiohttp)."""

    __slots__ = (
        "_conn", "_pool", "_loop", "_reused", "_parser", "status", "content_type", "_has_type", "_hbytes", "_head_fed",
        "_delimited", "_headers_done", "_done", "_keep_alive", "_got_bytes", "_buf", "_nbuf", "_limit", "_body",
        "_exc", "_waiter", "_timer", "_released",
    )  # fmt: skip

    def __init__(self, conn: _Conn, pool: _Pool, loop, reused: bool):
        self._conn, self._pool, self._loop, self._reused = conn, pool, loop, reused
        self._parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.content_type = "application/octet-stream"
        self._has_type = False
        self._hbytes = 0
        self._head_fed = 0  # bytes fed before the headers were complete
        self._delimited = False  # content-length or chunked (else the body ends at EOF)
        self._headers_done = False
        self._done = False
        self._keep_alive = False
        self._got_bytes = False
        self._buf: list[bytes] = []
        self._nbuf = 0
        self._limit = HIGH_WATER
        self._body: bytes | None = None
        self._exc: BaseException | None = None
        self._waiter = None
        self._timer = None
        self._released = False

    @property
    def content(self) -> LeanResponse:
        return self

    # --- parser callbacks (httptools) ------------------------------------------------------
    def on_status(self, status: bytes):
        self._hbytes += len(status)

    def on_header(self, name: bytes, value: bytes):
        self._hbytes += len(name) + len(value) + 4
        if self._hbytes > MAX_HEADER_BYTES:
            raise UpstreamProtocolError(f"answer headers larger than {MAX_HEADER_BYTES} bytes")
        n = name.lower()
        if n == b"content-type" and not self._has_type:
            self._has_type = True
            mime = value.split(b";", 1)[0].strip().lower()
            if mime:
                self.content_type = mime.decode("latin-1")
        elif n == b"content-length" or (n == b"transfer-encoding" and b"chunked" in value.lower()):
            self._delimited = True

    def on_headers_complete(self):
        self.status = self._parser.get_status_code()
        self._headers_done = True
        self._wake()

    def on_body(self, body: bytes):
        self._buf.append(body)
        self._nbuf += len(body)
        if self._nbuf > self._limit and not self._conn.paused:
            self._conn.paused = True
            self._conn.transport.pause_reading()
        self._wake()

    def on_message_complete(self):
        self._keep_alive = self._parser.should_keep_alive()
        self._done = True
        self._wake()

    # --- events from the connection and timers ----------------------------------------------
    def _wake(self):
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _fail(self, exc: BaseException):
        if self._exc is None:
            self._exc = exc
        self._wake()

    def _lost(self, exc):
        if self._done or self._exc is not None:
            return
        if self._headers_done and not self._delimited and exc is None:
            self._done = True  # a body delimited by the end of the connection
            self._wake()
        elif self._reused and not self._got_bytes:
            self._fail(StaleConnection("the engine closed a pooled connection before answering"))
        else:
            why = f": {exc}" if exc is not None else ""
            self._fail(UpstreamConnectionError(f"connection lost before the answer ended{why}"))

    def _timed_out(self):
        self._timer = None
        self._fail(asyncio.TimeoutError())
        self._conn.abort()

    async def _wait(self):
        w = self._waiter = self._loop.create_future()
        try:
            await w
        finally:
            self._waiter = None

    # --- what the router calls ----------------------------------------------------------------
    async def readany(self) -> bytes:
        """Whatever body bytes have arrived (waiting for some); b"" at the end of the body."""
        while True:
            if self._buf:
                buf = self._buf
                data = buf[0] if len(buf) == 1 else b"".join(buf)
                buf.clear()
                self._nbuf = 0
                self._conn.resume()
                return data
            if self._done:  # whole: what the engine sends after it does not matter
                return b""
            if self._exc is not None:
                raise self._exc
            await self._wait()

    async def read(self) -> bytes:
        """The whole body (at most MAX_BODY_BYTES)."""
        if self._body is not None:
            return self._body
        self._limit = MAX_BODY_BYTES
        self._conn.resume()
        while True:
            if self._nbuf > MAX_BODY_BYTES:
                self.close()
                raise UpstreamProtocolError(f"answer body larger than {MAX_BODY_BYTES} bytes")
            if self._done:
                break
            if self._exc is not None:
                raise self._exc
            await self._wait()
        self._body = b"".join(self._buf)
        self._buf.clear()
        self._nbuf = 0
        return self._body

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        """Drop the connection (a half-read answer never goes back to the pool)."""
        self._stop_timer()
        self._released = True
        self._buf.clear()
        self._nbuf = 0
        if not self._done:
            self._fail(UpstreamConnectionError("connection closed by the router"))
        self._conn.abort()

    def release(self) -> None:
        """Done with the answer: the connection back to the pool if the answer was whole."""
        if self._released:
            return
        self._released = True
        self._stop_timer()
        c = self._conn
        if self._done and self._keep_alive and self._exc is None and not c.closed:
            c.resume()
            self._pool.put(c, self._loop)
        else:
            c.abort()


class LeanClient:
    """POSTs JSON to engines over pooled keep-alive connections (one pool per host:port)."""

    def __init__(self, keepalive_s: float = KEEPALIVE_S, on_stale=None):
        self.keepalive_s = keepalive_s
        self.on_stale = on_stale  # called once per stale pooled connection retried
        self._pools: dict[tuple, _Pool] = {}
        self._targets: dict[str, _Target] = {}

    def _target(self, url: str) -> _Target:
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise UpstreamConnectionError(f"not an http(s) URL: {url!r}")
        port = u.port or (443 if u.scheme == "https" else 80)
        key = (u.scheme, u.hostname, port)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pool(u.scheme, u.hostname, port, self.keepalive_s)
        path = u.path or "/"
        if u.query:
            path += "?" + u.query
        t = self._targets[url] = _Target(pool, path)
        return t

    async def _connect(self, pool: _Pool, loop, timeout: float) -> _Conn:
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(_Conn, pool.host, pool.port, ssl=pool.ssl), max(timeout, 1e-3)
            )
        except OSError as e:
            raise UpstreamConnectionError(f"cannot connect to {pool.host}:{pool.port}: {e}") from None
        return conn

    async def post(self, url: str, data: bytes, total_s: float, connect_s: float) -> LeanResponse:
        """Send `data` (JSON) to `url`; returns once the answer's headers are in."""
        loop = asyncio.get_running_loop()
        target = self._targets.get(url) or self._target(url)
        pool = target.pool
        deadline = loop.time() + total_s
        conn = pool.take(loop.time())
        if conn is None:
            conn = await self._connect(pool, loop, min(connect_s, total_s))
            return await self._exchange(conn, target, data, deadline, loop, False)
        try:
            return await self._exchange(conn, target, data, deadline, loop, True)
        except StaleConnection:
            if self.on_stale is not None:
                self.on_stale()
        conn = await self._connect(pool, loop, min(connect_s, deadline - loop.time()))
        return await self._exchange(conn, target, data, deadline, loop, False)

    async def _exchange(self, conn: _Conn, target: _Target, data: bytes, deadline: float, loop, reused: bool):
        if conn.closed:  # lost between connecting and now: nothing would ever wake us
            raise UpstreamConnectionError("the engine closed the connection before the request was sent")
        r = LeanResponse(conn, target.pool, loop, reused)
        conn.resp = r
        r._timer = loop.call_at(deadline, r._timed_out)
        conn.transport.write(target.head + str(len(data)).encode() + b"\r\n\r\n" + data)
        try:
            while not r._headers_done:
                if r._exc is not None:
                    raise r._exc
                await r._wait()
        except BaseException:
            r.close()
            raise
        return r

    def close(self) -> None:
        for p in self._pools.values():
            p.close()
        self._pools.clear()
        self._targets.clear()
