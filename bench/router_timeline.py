"""Where a request's time goes inside `slocore serve` at concurrency 1: timestamps (wall and
the router thread's CPU) at each step of the request path, median over sequential streamed
requests (the bench_router request: 16-token prompt, 8 tokens, emulated engine
``--time-scale 0.01``).

    python bench/router_timeline.py [-n 500]
    python bench/router_timeline.py --calls   # instead: Python calls per request and the
                                              # functions with the most own time (cProfile)

Steps (from the handler's start): ``body`` read and parsed; ``assigned`` (validation, SLO,
policy submit + poll); ``send`` (the POST to the engine starts); ``engine_headers`` (the
engine's response headers are in); ``first_write`` / ``first_written`` (the first data to the
client, with the response headers); ``last_write`` ([DONE] and the end of the response);
``end`` (token times recorded, metrics). A step's CPU much below its wall time is waiting:
for the engine, or for a core on a loaded machine.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

from bench_router import BODY, free_port, wait_http  # noqa: E402


def patched_router(cfg_path: str, port: int, calls: bool = False) -> None:
    """Run the router with timestamps around its steps; print the medians at exit. `calls`:
    count the Python calls per request under cProfile instead (timings then mean nothing)."""
    from aiohttp import web

    from slocore.serve import config as _config
    from slocore.serve import handler as H
    from slocore.serve import stream as S
    from slocore.serve import upstream as U
    from slocore.serve.eventloop import new_event_loop
    from slocore.serve.router import Router

    wall, cpu = time.perf_counter, time.thread_time
    steps: dict = collections.defaultdict(list)
    cur: dict = {}

    def mark(k):
        cur.setdefault(k, (wall(), cpu()))

    def wrap(cls, name, before=None, after=None):
        orig = getattr(cls, name)

        async def f(*a, **kw):
            if before:
                mark(before)
            r = await orig(*a, **kw)
            if after:
                mark(after)
            return r

        setattr(cls, name, f)

    orig_handle = H.RequestHandler._handle

    async def handle(self, request, chat):
        cur.clear()
        mark("start")
        try:
            return await orig_handle(self, request, chat)
        finally:
            mark("end")
            w0, c0 = cur["start"]
            for k, (w, c) in cur.items():
                steps[k].append(((w - w0) * 1e3, (c - c0) * 1e3))

    H.RequestHandler._handle = handle
    orig_read = H._lim.read_body

    async def read_body(*a):
        r = await orig_read(*a)
        mark("body")
        return r

    H._lim.read_body = read_body
    wrap(H.RequestHandler, "_stream", before="assigned")
    wrap(U.Upstream, "_send", before="send", after="engine_headers")
    orig_write = S.RequestContext.write

    async def write(self, data, last=False):
        mark("first_write")
        if last:
            mark("last_write")
        await orig_write(self, data, last)
        mark("first_written")

    S.RequestContext.write = write

    def report():
        print(f"{'step':16s}{'wall ms':>9s}{'CPU ms':>9s}   (median from the handler's start, n={len(steps['end'])})")
        for k, v in sorted(steps.items(), key=lambda kv: sorted(x[0] for x in kv[1])[len(kv[1]) // 2]):
            w = sorted(x[0] for x in v)[len(v) // 2]
            c = sorted(x[1] for x in v)[len(v) // 2]
            print(f"{k:16s}{w:9.3f}{c:9.3f}", flush=True)

    if calls:
        import cProfile
        import pstats

        prof = cProfile.Profile()

        def report():  # noqa: F811 - the call count replaces the timeline
            prof.disable()
            n = len(steps["end"])
            stats = pstats.Stats(prof)
            if os.environ.get("SLOCORE_TIMELINE_PSTATS"):  # the whole profile, for pstats
                stats.dump_stats(os.environ["SLOCORE_TIMELINE_PSTATS"])
            total = sum(v[1] for v in stats.stats.values())
            print(f"{total / max(n, 1):.0f} Python calls per request (cProfile, n={n})", flush=True)
            top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:25]  # by own time
            print("own time per request (us, under cProfile)  calls/request  function")
            for (file, line, fn), (_cc, nc, tt, _ct, _callers) in top:
                where = f"{Path(file).name}:{line}" if line else file
                print(f"{tt / max(n, 1) * 1e6:10.1f}  {nc / max(n, 1):8.1f}  {fn} ({where})", flush=True)

        prof.enable()
    atexit.register(report)
    cfg = _config.load(cfg_path)
    web.run_app(Router(cfg).app(), host="127.0.0.1", port=port, access_log=None, print=None, loop=new_event_loop())


async def sequential(url: str, n: int) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as s:
        for _ in range(n):
            async with s.post(url + "/v1/completions", json=BODY) as r:
                async for _line in r.content:
                    pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=500)
    ap.add_argument("--calls", action="store_true", help="count Python calls per request instead")
    ap.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)  # internal: CONFIG PORT
    a = ap.parse_args()
    if a.serve:
        patched_router(a.serve[0], int(a.serve[1]), a.calls)
        return
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(HERE.parent / "python"), os.environ.get("PYTHONPATH")])),
    )
    procs, cfg = [], None
    try:
        ep, rp = free_port(), free_port()
        eng = f"http://127.0.0.1:{ep}"
        cmd = [sys.executable, "-m", "slocore.cli", "engine", "--port", str(ep), "--time-scale", "0.01"]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_http(eng + "/health", procs[-1])
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            cfg = f.name
            f.write(f"backends:\n  - {{name: e0, url: '{eng}', profile: h100-llama2-7b}}\npolicy: least_outstanding\n")
        cmd = [sys.executable, __file__, "--serve", cfg, str(rp), *(["--calls"] if a.calls else [])]
        router = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
        procs.append(router)
        wait_http(f"http://127.0.0.1:{rp}/health", router)
        asyncio.run(sequential(f"http://127.0.0.1:{rp}", a.n))
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(10)
        if cfg is not None:
            os.unlink(cfg)


if __name__ == "__main__":
    main()
