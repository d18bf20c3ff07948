"""``stream.relay`` reads whatever the engine sent at once: events split across reads or
packed into one read reach the client byte for byte as the engine's lines, every token is
counted and reported in order, and what came before an engine error still reaches the client."""

import asyncio
from types import SimpleNamespace

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

import slocore  # noqa: E402
from slocore.serve.config import Timeouts  # noqa: E402
from slocore.serve.stream import RequestContext, relay  # noqa: E402
from slocore.serve.upstream import BackendError  # noqa: E402

A = b'data: {"id":"c1","choices":[{"index":0,"text":"a"}]}'
B = b'data: {"id":"c1","choices":[{"index":0,"text":"b","finish_reason":"length"}]}'
USAGE = b'data: {"id":"c1","choices":[],"usage":{"completion_tokens":2}}'


class Engine:
    """An aiohttp response as relay reads it: ``content.readany`` returns scripted chunks."""

    def __init__(self, chunks):
        self.chunks = list(chunks)
        self.content = self

    async def readany(self):
        return self.chunks.pop(0) if self.chunks else b""

    def close(self):
        pass


def run_relay(chunks, want_usage=False):
    ctx = RequestContext(None, False, 7, None, "c", True, want_usage)
    sent, tokens = [], []

    async def write(data, last=False):
        sent.append(data + (b"<eof>" if last else b""))

    ctx.write = write
    policy = SimpleNamespace(on_token=lambda rid, bid, n, t: tokens.append((rid, bid, n)))
    att = slocore.Request(7, 0.0, 3)
    st = slocore.RequestState(att)
    backend = SimpleNamespace(id=1, name="e0", url="http://e0")
    clock = iter(range(100))

    async def go():
        await relay(ctx, Engine(chunks), st, att, backend, policy, Timeouts(), lambda: float(next(clock)))

    try:
        asyncio.run(go())
        err = None
    except BackendError as e:
        err = e
    return b"".join(sent), tokens, ctx, err


@pytest.mark.parametrize(
    "chunks",
    [
        [A + b"\n\n", B + b"\n\n", USAGE + b"\n\n", b"data: [DONE]\n\n"],  # one event per read
        [A + b"\n\n" + B[:20], B[20:] + b"\n\n" + USAGE + b"\n", b"\ndata: [DO", b"NE]\n\n"],  # split anywhere
        [A + b"\n\n" + B + b"\n\n" + USAGE + b"\n\ndata: [DONE]\n\n"],  # all in one read
    ],
)
@pytest.mark.parametrize("want_usage", [False, True])
def test_events_reach_the_client_as_the_engine_sent_them(chunks, want_usage):
    out, tokens, ctx, err = run_relay(chunks, want_usage)
    assert err is None
    want = A + b"\n\n" + B + b"\n\n" + (USAGE + b"\n\n" if want_usage else b"") + b"data: [DONE]\n\n<eof>"
    assert out == want
    assert tokens == [(7, 1, 1), (7, 1, 2)]
    assert len(ctx.times) == 2 and ctx.usage == {"completion_tokens": 2} and ctx.finish == "length"


def test_output_before_an_engine_error_still_reaches_the_client():
    out, tokens, ctx, err = run_relay([A + b'\n\ndata: {"error": {"message": "boom"}}\n\n'])
    assert isinstance(err, BackendError) and err.kind == "engine_error"
    assert out == A + b"\n\n" and tokens == [(7, 1, 1)]


def test_stream_that_ends_without_done_or_with_garbage_is_an_engine_failure():
    _, _, _, err = run_relay([A + b"\n\n"])
    assert err.kind == "connection"
    _, _, _, err = run_relay([b"data: {not json\n\n"])
    assert err.kind == "protocol"
    _, _, _, err = run_relay([b"data: [1, 2]\n\n"])
    assert err.kind == "protocol"


FIN = b'data: {"id":"c1","choices":[{"index":0,"text":"b","finish_reason":"length"}],"system_fingerprint":null}'
FP_USAGE = b'data: {"id":"c1","choices":[],"usage":{"completion_tokens":2},"system_fingerprint":"fp-1"}'


def test_fingerprint_goes_where_the_engine_puts_it_without_usage():
    """vLLM puts system_fingerprint on the usage chunk when usage is asked for (the router
    always asks), on the finishing chunks otherwise: a client that did not ask gets it there."""
    chunks = [A + b"\n\n" + FIN + b"\n\n", FP_USAGE + b"\n\n", b"data: [DONE]\n\n"]
    out, tokens, _, err = run_relay(chunks, want_usage=False)
    assert err is None and len(tokens) == 2
    fin = FIN.replace(b'"system_fingerprint":null', b'"system_fingerprint":"fp-1"')
    assert out == A + b"\n\n" + fin + b"\n\ndata: [DONE]\n\n<eof>"
    out, _, _, _ = run_relay(chunks, want_usage=True)  # asked for usage: as the engine sent it
    assert out == A + b"\n\n" + FIN + b"\n\n" + FP_USAGE + b"\n\ndata: [DONE]\n\n<eof>"


def test_held_finishing_chunk_still_reaches_the_client_when_the_stream_breaks():
    out, _, _, err = run_relay([A + b"\n\n" + FIN + b"\n\n"])
    assert err.kind == "connection" and out == A + b"\n\n" + FIN + b"\n\n"
