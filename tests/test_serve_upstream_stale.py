"""Through the router, on both upstream clients: an engine that drops a kept-alive connection
when the next request arrives on it (its keep-alive ended as the router sent) costs one
re-send on a new connection, counted as a stale retry, and never an engine failure."""

import asyncio
import json

import pytest

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

from test_serve_router import serving  # noqa: E402

ANSWER = json.dumps(
    {
        "id": "cmpl-1",
        "object": "text_completion",
        "model": "m",
        "choices": [{"index": 0, "text": "ab", "finish_reason": "length"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }
).encode()


async def one_post_per_connection(state, reader, writer):
    """GETs answered with Connection: close; one POST answered (kept alive), then the
    connection is dropped unanswered when the next request arrives on it."""
    try:
        posts = 0
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            n = 0
            for h in head.split(b"\r\n"):
                if h.lower().startswith(b"content-length:"):
                    n = int(h.split(b":")[1])
            await reader.readexactly(n)
            if head.startswith(b"GET"):
                body = b"ok" if head.startswith(b"GET /health") else b""
                writer.write(
                    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
                return
            if posts:
                state["dropped"] += 1
                return
            posts += 1
            state["answered"] += 1
            hdr = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(ANSWER)
            writer.write(hdr + ANSWER)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


def metric(text: str, name: str) -> float:
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))


@pytest.mark.parametrize("client", ["lean", "aiohttp"])
def test_a_stale_keepalive_connection_is_resent_and_blames_nobody(client):
    if client == "lean":
        pytest.importorskip("httptools")

    async def go():
        state = {"answered": 0, "dropped": 0}
        srv = await asyncio.start_server(lambda r, w: one_post_per_connection(state, r, w), "127.0.0.1", 0)
        eng = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
        d = {"backends": [{"name": "e0", "url": eng}], "poll_interval_s": 30, "upstream_client": client, "retries": 0}
        try:
            async with serving(d) as (router, url, s):
                for _ in range(3):
                    async with s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 2}) as r:
                        assert r.status == 200 and (await r.json())["usage"]["completion_tokens"] == 2
                async with s.get(url + "/metrics") as r:
                    text = await r.text()
                b = router.backends["e0"]
                assert b.healthy and b.failures == 0
                # every dropped connection was a pooled one, re-sent once (aiohttp's client
                # does not pool the re-sent request's connection, the lean client does)
                assert state["answered"] == 3 and state["dropped"] >= 1
                assert metric(text, "slocore_stale_connection_retries_total") == state["dropped"]
                assert metric(text, "slocore_retries_total") == 0
                assert "slocore_backend_errors_total{" not in text
        finally:
            srv.close()

    asyncio.run(asyncio.wait_for(go(), 60))


def test_upstream_client_option_is_validated():
    from slocore.serve import config as cfgmod
    from slocore.serve.upstream import default_client

    assert cfgmod.from_dict({"upstream_client": "aiohttp"}).upstream_client == "aiohttp"
    assert cfgmod.from_dict({}).upstream_client is None  # the default: serve.upstream.default_client()
    with pytest.raises(ValueError, match="upstream_client"):
        cfgmod.from_dict({"upstream_client": "curl"})
    assert default_client() in ("lean", "aiohttp")
