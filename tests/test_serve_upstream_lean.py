"""The lean upstream client (serve.upstream_lean) against a raw asyncio server that sends
exactly the bytes a test scripts: chunked and content-length bodies, answers split across
reads, a connection closed mid-body, garbage, huge headers, a stale keep-alive connection,
silence, and the pool's keep-alive rules. No timing asserts: waits are generous bounds."""

import asyncio

import pytest

pytest.importorskip("httptools", reason="the serve extra (httptools) is not installed")

from slocore.serve import upstream_lean as lean  # noqa: E402

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


class Script:
    """A TCP server: each accepted connection runs `handler(reader, writer, state)`."""

    def __init__(self, handler):
        self.handler, self.connections, self.requests = handler, 0, []

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._conn, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1/completions"
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def _conn(self, reader, writer):
        self.connections += 1
        try:
            await self.handler(self, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        n = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")).split(b":")[1])
        body = await reader.readexactly(n)
        self.requests.append((head, body))
        return body


def with_client(handler, check):
    """`await check(s, c)` against a `Script(handler)` server `s` with a new client `c`."""

    async def go():
        async with Script(handler) as s:
            c = lean.LeanClient()
            try:
                await check(s, c)
            finally:
                c.close()

    run(go())


async def keepalive_server(s, reader, writer):
    """Answers every request on the connection with a content-length body echoing it."""
    while True:
        body = await s.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
        writer.write(body)
        await writer.drain()


def test_content_length_body_and_request_bytes():
    async def check(s, c):
        r = await c.post(s.url, b'{"a": 1}', 30, 10)
        assert r.status == 200 and r.content_type == "application/json"
        assert await r.read() == b'{"a": 1}'
        r.release()
        head, body = s.requests[0]
        assert head.startswith(b"POST /v1/completions HTTP/1.1\r\n") and b"Content-Type: application/json" in head
        assert body == b'{"a": 1}'

    with_client(keepalive_server, check)


def test_chunked_stream_split_across_reads():
    async def handler(s, reader, writer):
        await s.read_request(reader)
        writer.write(HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
        await writer.drain()
        raw = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (b"data: 1\n\n", b"data: 2\n\n", b"data: [DONE]\n\n"))
        raw += b"0\r\n\r\n"
        for i in range(0, len(raw), 3):  # three bytes at a time: chunk sizes and CRLFs split too
            writer.write(raw[i : i + 3])
            await writer.drain()
            await asyncio.sleep(0)
        await reader.read()

    async def check(s, c):
        r = await c.post(s.url, b"{}", 30, 10)
        assert r.status == 200 and r.content_type == "text/event-stream"
        got = b""
        while chunk := await r.content.readany():
            got += chunk
        assert got == b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n"
        r.release()

    with_client(handler, check)


def test_keep_alive_reuses_one_connection_and_connection_close_does_not():
    async def close_server(s, reader, writer):
        await s.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()

    async def go():
        async with Script(keepalive_server) as s:
            c = lean.LeanClient()
            for i in range(3):
                r = await c.post(s.url, b"%d" % i, 30, 10)
                assert await r.read() == b"%d" % i
                r.release()
            assert s.connections == 1
            c.close()
        async with Script(close_server) as s:
            c = lean.LeanClient()
            for _ in range(2):
                r = await c.post(s.url, b"{}", 30, 10)
                assert await r.read() == b"ok"
                r.release()
            assert s.connections == 2
            c.close()

    run(go())


def test_body_until_close_when_neither_length_nor_chunked():
    async def handler(s, reader, writer):
        await s.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npart one, ")
        await writer.drain()
        writer.write(b"part two")
        await writer.drain()

    async def check(s, c):
        r = await c.post(s.url, b"{}", 30, 10)
        assert await r.read() == b"part one, part two"
        r.release()

    with_client(handler, check)


def test_connection_closed_mid_body_fails_the_read():
    async def handler(s, reader, writer):
        await s.read_request(reader)
        writer.write(HEAD + b"Content-Length: 100\r\n\r\ndata: 1\n\n")
        await writer.drain()

    async def check(s, c):
        r = await c.post(s.url, b"{}", 30, 10)
        assert await r.content.readany() == b"data: 1\n\n"
        with pytest.raises(lean.UpstreamConnectionError):
            await r.content.readany()
        with pytest.raises(lean.UpstreamConnectionError):
            await r.read()
        r.release()

    with_client(handler, check)


@pytest.mark.parametrize(
    "answer",
    [
        b"this is not HTTP at all\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot hex\r\n",
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (lean.MAX_HEADER_BYTES + 10) + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"b" * 100) for i in range(1000)) + b"\r\n",
        b"HTTP/1.1 200 OK\r\nX-Endless: " + b"c" * (4 * lean.MAX_HEADER_BYTES),  # never ends
    ],
    ids=["garbage", "bad-chunk", "huge-header", "many-headers", "endless-header"],
)
def test_garbled_or_oversized_answers_are_protocol_errors(answer):
    async def handler(s, reader, writer):
        await s.read_request(reader)
        writer.write(answer)
        await writer.drain()
        await reader.read()

    async def check(s, c):
        with pytest.raises(lean.UpstreamProtocolError):
            r = await c.post(s.url, b"{}", 30, 10)
            await r.read()

    with_client(handler, check)


def test_a_body_read_whole_is_bounded(monkeypatch):
    monkeypatch.setattr(lean, "MAX_BODY_BYTES", 1000)

    async def handler(s, reader, writer):
        await s.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000)
        await writer.drain()
        await reader.read()

    async def check(s, c):
        r = await c.post(s.url, b"{}", 30, 10)
        with pytest.raises(lean.UpstreamProtocolError, match="larger than 1000"):
            await r.read()

    with_client(handler, check)


def test_a_stale_pooled_connection_is_retried_once_on_a_new_one():
    async def handler(s, reader, writer):
        # the first connection answers once and then closes when the next request arrives
        # (an engine whose keep-alive ended as the request was sent); later ones answer
        first = s.connections == 1
        await keepalive_server_once(s, reader, writer)
        if first:
            await reader.read(1)
            return
        await keepalive_server(s, reader, writer)

    async def keepalive_server_once(s, reader, writer):
        body = await s.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()

    async def go():
        stale = []
        async with Script(handler) as s:
            c = lean.LeanClient(on_stale=lambda: stale.append(1))
            r = await c.post(s.url, b"1", 30, 10)
            assert await r.read() == b"1"
            r.release()
            r = await c.post(s.url, b"2", 30, 10)  # the pooled connection dies: a new one answers
            assert await r.read() == b"2"
            r.release()
            assert stale == [1] and s.connections == 2
            c.close()

    run(go())


def test_a_fresh_connection_that_dies_before_answering_is_not_retried():
    async def handler(s, reader, writer):
        await s.read_request(reader)  # and close without a word

    async def go():
        stale = []
        async with Script(handler) as s:
            c = lean.LeanClient(on_stale=lambda: stale.append(1))
            with pytest.raises(lean.UpstreamConnectionError) as e:
                await c.post(s.url, b"{}", 30, 10)
            assert not isinstance(e.value, lean.StaleConnection) and stale == [] and s.connections == 1
            c.close()

    run(go())


def test_refused_connection_and_total_timeout():
    async def silent(s, reader, writer):
        await s.read_request(reader)
        writer.write(HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
        await writer.drain()
        await reader.read()  # never another byte

    async def go():
        srv = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = srv.sockets[0].getsockname()[1]
        srv.close()
        await srv.wait_closed()
        c = lean.LeanClient()
        with pytest.raises(lean.UpstreamConnectionError, match="cannot connect"):
            await c.post(f"http://127.0.0.1:{port}/v1/completions", b"{}", 30, 10)
        async with Script(silent) as s:
            with pytest.raises(asyncio.TimeoutError):  # the headers come (on a loaded machine
                r = await c.post(s.url, b"{}", 0.5, 10)  # perhaps too late); the body never does
                try:
                    await r.content.readany()
                finally:
                    r.release()
        c.close()

    run(go())


def test_close_mid_body_drops_the_connection_and_fails_a_pending_read():
    async def handler(s, reader, writer):
        await s.read_request(reader)
        writer.write(HEAD + b"Transfer-Encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n")
        await writer.drain()
        s.lost = await reader.read() == b""  # the router hung up: EOF here

    async def check(s, c):
        r = await c.post(s.url, b"{}", 30, 10)
        assert await r.content.readany() == b"data: 1\n\n"
        pending = asyncio.ensure_future(r.content.readany())
        await asyncio.sleep(0)
        r.close()  # a watchdog or a client that left
        with pytest.raises(lean.UpstreamConnectionError):
            await pending
        r.release()
        for _ in range(600):
            if getattr(s, "lost", False):
                break
            await asyncio.sleep(0.05)
        assert s.lost and not any(p.idle for p in c._pools.values())  # not back in the pool

    with_client(handler, check)


def test_cancelled_while_waiting_for_headers_closes_the_connection():
    async def handler(s, reader, writer):
        await s.read_request(reader)
        s.lost = await reader.read() == b""

    async def check(s, c):
        t = asyncio.ensure_future(c.post(s.url, b"{}", 30, 10))
        for _ in range(600):
            if s.requests:
                break
            await asyncio.sleep(0.05)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        for _ in range(600):
            if getattr(s, "lost", False):
                break
            await asyncio.sleep(0.05)
        assert s.lost and not any(p.idle for p in c._pools.values())

    with_client(handler, check)


def test_an_idle_connection_is_never_reused_past_keepalive():
    async def go():
        async with Script(keepalive_server) as s:
            c = lean.LeanClient(keepalive_s=0.2)
            r = await c.post(s.url, b"1", 30, 10)
            await r.read()
            r.release()
            await asyncio.sleep(0.5)  # past keep-alive: the sweep closed it, take() would refuse it
            assert not any(p.idle for p in c._pools.values())
            r = await c.post(s.url, b"2", 30, 10)
            assert await r.read() == b"2"
            r.release()
            assert s.connections == 2
            c.close()

    run(go())


def test_an_unread_answer_is_not_pooled_and_a_large_stream_flows():
    big = b"data: " + b"y" * 100_000 + b"\n\n"

    async def handler(s, reader, writer):
        await s.read_request(reader)
        writer.write(HEAD + b"Content-Length: %d\r\n\r\n" % (len(big) * 40))
        for _ in range(40):  # 4 MB: more than the client buffers before pausing the socket
            writer.write(big)
            await writer.drain()
        await reader.read()

    async def check(s, c):
        r = await c.post(s.url, b"{}", 30, 10)
        n = len(await r.content.readany())
        r.release()  # half read: dropped
        assert n > 0 and not any(p.idle for p in c._pools.values())
        r = await c.post(s.url, b"{}", 30, 10)
        got = 0
        while chunk := await r.content.readany():
            got += len(chunk)
        assert got == len(big) * 40
        r.release()

    with_client(handler, check)


def test_an_engine_that_hangs_up_at_once_fails_the_request_not_hangs():
    async def handler(s, reader, writer):
        pass  # accept and close at once

    async def check(s, c):
        for _ in range(3):
            with pytest.raises(lean.UpstreamConnectionError):
                r = await c.post(s.url, b"{}", 30, 10)
                await r.read()

    with_client(handler, check)
