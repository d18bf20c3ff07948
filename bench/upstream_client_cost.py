"""CPU per streamed request of the router's upstream side alone: aiohttp's client (as
``serve.upstream`` uses it with ``upstream_client: aiohttp``: a pooled session, ``readany``
to the end), the lean client (``serve.upstream_lean``, the default: httptools, its own
keep-alive pool, ``readany`` to the end) and a bare asyncio protocol on one kept-alive
connection (send the request bytes, wait for the chunked terminator: the floor), all on
uvloop, alternately, against the emulated engine (the bench_router request).

    python bench/upstream_client_cost.py [-n 600]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

import orjson  # noqa: E402

from bench_router import BODY, free_port, wait_http  # noqa: E402
from slocore.serve.eventloop import new_event_loop  # noqa: E402


async def _cpu_us_per_call(one, n: int) -> float:
    """This thread's CPU time per `await one()`, in us, after 20 warm-up calls."""
    for _ in range(20):
        await one()
    c0 = time.thread_time()
    for _ in range(n):
        await one()
    return (time.thread_time() - c0) / n * 1e6


async def aiohttp_cost(url: str, n: int) -> float:
    import aiohttp

    data, hdrs = orjson.dumps(BODY), {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:

        async def one():
            timeout = aiohttp.ClientTimeout(total=60, sock_connect=5)
            async with s.post(url + "/v1/completions", data=data, headers=hdrs, timeout=timeout) as r:
                while await r.content.readany():
                    pass

        return await _cpu_us_per_call(one, n)


async def lean_cost(url: str, n: int) -> float:
    from slocore.serve.upstream_lean import LeanClient

    data, c = orjson.dumps(BODY), LeanClient()

    async def one():
        r = await c.post(url + "/v1/completions", data, 60, 5)
        try:
            while await r.content.readany():
                pass
        except BaseException:
            r.close()
            raise
        r.release()

    try:
        return await _cpu_us_per_call(one, n)
    finally:
        c.close()


class _Raw(asyncio.Protocol):
    def __init__(self):
        self.buf, self.done = bytearray(), None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buf += data
        if self.buf.endswith(b"0\r\n\r\n") and self.done is not None and not self.done.done():
            self.done.set_result(None)


async def raw_cost(host: str, port: int, n: int) -> float:
    loop = asyncio.get_running_loop()
    body = orjson.dumps(BODY)
    head = f"POST /v1/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
    req = head.encode() + b"Content-Length: %d\r\n\r\n" % len(body) + body
    tr, p = await loop.create_connection(_Raw, host, port)

    async def one():
        p.buf.clear()
        p.done = loop.create_future()
        tr.write(req)
        await p.done

    try:
        return await _cpu_us_per_call(one, n)
    finally:
        tr.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=600)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    path = [str(HERE.parent / "python"), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)))
    ep = free_port()
    cmd = [sys.executable, "-m", "slocore.cli", "engine", "--port", str(ep), "--time-scale", "0.01"]
    eng = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{ep}/health", eng)
        loop = new_event_loop()
        for _ in range(a.reps):
            ah = loop.run_until_complete(aiohttp_cost(f"http://127.0.0.1:{ep}", a.n))
            ln = loop.run_until_complete(lean_cost(f"http://127.0.0.1:{ep}", a.n))
            raw = loop.run_until_complete(raw_cost("127.0.0.1", ep, a.n))
            print(
                f"CPU us per streamed request: aiohttp client {ah:.0f}, lean client {ln:.0f}, bare protocol {raw:.0f}",
                flush=True,
            )
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        eng.terminate()
        eng.wait(10)


if __name__ == "__main__":
    main()
