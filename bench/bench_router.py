"""Router overhead, side by side in one run: the same streaming requests (16-token prompt, 8
output tokens, as a chat client would send them) sent directly to an emulated engine,
through `slocore serve`, and through `vllm-router` (Rust, PyPI) when it is installed.

    python -m pytest bench/bench_router.py -s --benchmark-disable
    SLOCORE_VLLM_ROUTER=/path/to/vllm-router python -m pytest bench/bench_router.py -s
    SLOCORE_BENCH_BASE=/other/checkout/python ...   # also that checkout's router ("slocore-base")
    SLOCORE_BENCH_AIOHTTP=1 ...   # also this router with upstream_client aiohttp ("slocore-aiohttp")
    SLOCORE_BENCH_FLOOR=0 ...   # without "aiohttp-floor"
    SLOCORE_BENCH_WORKERS=2 ...   # also this router with `--workers 2` ("slocore-w2": 2 data-path processes)
    SLOCORE_BENCH_PROMPT=2000 ...   # a longer prompt (token ids; default 16)

"aiohttp-floor" is the least an aiohttp proxy on uvloop can do (this file run as a script:
read the body, POST it on a pooled connection, copy the engine's bytes back as they come, no
checks, no policy): the part of slocore's cost that is aiohttp's and the event loop's.

Each target runs in its own subprocess on localhost; the engine is `slocore engine
--time-scale 0.01` (an 8-token answer in ~1 ms). Per round and target: concurrency 1
(sequential requests in blocks interleaved over the targets: p50 latency; the overhead is p50
minus direct's p50 of the same round) and concurrency 32 (a closed loop for a few seconds per
target: requests/s and p99 latency). Rounds repeat this so that the shared machine's load
drifts over all targets alike;
the report gives every round and the median, and says which targets (below) are met:

  p50 overhead at concurrency 1 <= vllm-router's + 0.3 ms;
  at concurrency 32: throughput >= 95 % of direct, p99 <= 1.2 x direct.
"""

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

import slocore
from slocore.ports import free_port

# Where this process imported slocore from (the checkout's python/ with a dev build, or the
# installed package): the subprocesses import the same one.
SLOCORE_PATH = str(Path(slocore.__file__).resolve().parents[1])

aiohttp = pytest.importorskip("aiohttp")

N_SEQ = int(os.environ.get("SLOCORE_BENCH_SEQ_N", "300"))
THR_S = float(os.environ.get("SLOCORE_BENCH_THR_S", "4"))
CONC = int(os.environ.get("SLOCORE_BENCH_CONC", "32"))
ROUNDS = int(os.environ.get("SLOCORE_BENCH_ROUNDS", "3"))
PROMPT = int(os.environ.get("SLOCORE_BENCH_PROMPT", "16"))  # prompt length in token ids
PIDS: dict = {}  # target -> the process whose CPU time is its cost (the engine for "direct")
BODY = {
    "model": "slocore-emulated",
    "prompt": list(range(1, PROMPT + 1)),
    "max_tokens": 8,
    "ignore_eos": True,
    "stream": True,
}


def wait_http(url, proc, timeout=60):
    import urllib.request

    t = time.time()
    while time.time() - t < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} not up in {timeout} s")


def start(cmd, health, env=None):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or os.environ.copy())
    wait_http(health, p)
    return p


def vllm_router_bin():
    b = os.environ.get("SLOCORE_VLLM_ROUTER") or shutil.which("vllm-router")
    for cand in ("/tmp/vrouter-venv/bin/vllm-router", "/tmp/serve17-vrouter-venv/bin/vllm-router"):
        if b is None and Path(cand).exists():
            b = cand
    return b


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    procs = []
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [SLOCORE_PATH, os.environ.get("PYTHONPATH")])),
    )
    py = [sys.executable, "-m", "slocore.cli"]
    try:
        ep = free_port()
        eng = f"http://127.0.0.1:{ep}"
        engine = [*py, "engine", "--port", str(ep), "--time-scale", "0.01", "--max-num-seqs", "1024"]
        procs.append(start(engine, eng + "/health", env))
        cfg = tmp_path_factory.mktemp("cfg") / "r.yaml"
        cfg.write_text(
            f"backends:\n  - {{name: e0, url: '{eng}', profile: h100-llama2-7b}}\n"
            "policy: least_outstanding\npoll_interval_s: 0.5\n"
        )
        rp = free_port()
        router = [*py, "serve", "--config", str(cfg), "--port", str(rp)]
        procs.append(start(router, f"http://127.0.0.1:{rp}/health", env))
        out = {"direct": eng, "slocore": f"http://127.0.0.1:{rp}"}
        PIDS.update(direct=procs[0].pid, slocore=procs[1].pid)
        base = os.environ.get("SLOCORE_BENCH_BASE")  # another checkout's python/: "slocore-base" beside
        if base:
            bp = free_port()
            cmd = [*py, "serve", "--config", str(cfg), "--port", str(bp)]
            procs.append(start(cmd, f"http://127.0.0.1:{bp}/health", dict(env, PYTHONPATH=base)))
            out["slocore-base"] = f"http://127.0.0.1:{bp}"
            PIDS["slocore-base"] = procs[-1].pid
        if os.environ.get("SLOCORE_BENCH_AIOHTTP") == "1":  # this router on aiohttp's upstream client
            ap = free_port()
            cmd = [*py, "serve", "--config", str(cfg), "--port", str(ap)]
            procs.append(start(cmd, f"http://127.0.0.1:{ap}/health", dict(env, SLOCORE_UPSTREAM_CLIENT="aiohttp")))
            out["slocore-aiohttp"] = f"http://127.0.0.1:{ap}"
            PIDS["slocore-aiohttp"] = procs[-1].pid
        nw = int(os.environ.get("SLOCORE_BENCH_WORKERS", "1"))
        if nw > 1:  # this router with the data path in nw worker processes (serve.policy_host)
            wp = free_port()
            cmd = [*py, "serve", "--config", str(cfg), "--port", str(wp), "--workers", str(nw)]
            procs.append(start(cmd, f"http://127.0.0.1:{wp}/health", env))
            out[f"slocore-w{nw}"] = f"http://127.0.0.1:{wp}"
            PIDS[f"slocore-w{nw}"] = procs[-1].pid  # its CPU: this process and its workers
        if os.environ.get("SLOCORE_BENCH_FLOOR", "1") != "0":
            fp = free_port()
            cmd = [sys.executable, __file__, "--floor-proxy", str(fp), eng]
            procs.append(start(cmd, f"http://127.0.0.1:{fp}/health", env))
            out["aiohttp-floor"] = f"http://127.0.0.1:{fp}"
            PIDS["aiohttp-floor"] = procs[-1].pid
        vb = vllm_router_bin()
        if vb:
            vp = free_port()
            cmd = [vb, "--host", "127.0.0.1", "--port", str(vp), "--worker-urls", eng]
            cmd += ["--policy", "round_robin", "--log-level", "error"]
            try:
                procs.append(start(cmd, f"http://127.0.0.1:{vp}/health"))
                out["vllm-router"] = f"http://127.0.0.1:{vp}"
                PIDS["vllm-router"] = procs[-1].pid
            except RuntimeError as e:
                print(f"vllm-router did not start: {e}")
        yield out
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


async def _one(s, url) -> float:
    """One streamed request read to [DONE]; its latency in seconds."""
    t = time.perf_counter()
    async with s.post(url + "/v1/completions", json=BODY) as r:
        assert r.status == 200, await r.text()
        n = 0
        async for line in r.content:
            n += line.startswith(b"data:")
    assert n == 9, n  # 8 token chunks + [DONE]
    return time.perf_counter() - t


async def _sequential(targets: dict, n: int, blocks: int = 20) -> dict:
    """n sequential requests per target, in `blocks` interleaved blocks (the machine's load
    drifts over every target alike); target -> sorted latencies."""
    lat = {k: [] for k in targets}
    sessions = {k: aiohttp.ClientSession() for k in targets}
    try:
        for k, url in targets.items():
            for _ in range(20):  # warm-up
                await _one(sessions[k], url)
        for _ in range(blocks):
            for k, url in targets.items():
                lat[k] += [await _one(sessions[k], url) for _ in range(max(1, n // blocks))]
    finally:
        for s in sessions.values():
            await s.close()
    return {k: sorted(v) for k, v in lat.items()}


async def _closed_loop(url, seconds, conc):
    lat = []
    stop = 0.0

    async def worker(s):
        while time.perf_counter() < stop:
            lat.append(await _one(s, url))

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        await asyncio.gather(*(_one(s, url) for _ in range(conc)))  # warm-up: connections open
        t = time.perf_counter()
        stop = t + seconds
        await asyncio.gather(*(worker(s) for _ in range(conc)))
        wall = time.perf_counter() - t
    return len(lat) / wall, sorted(lat)


def q(xs, p):
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def measure(targets: dict) -> dict:
    seq = asyncio.run(_sequential(targets, N_SEQ))
    out = {}
    for k, url in targets.items():
        cpu0, own0 = cpu_seconds(PIDS.get(k)), cpu_seconds(PIDS.get(k), tree=False)
        rps, lat = asyncio.run(_closed_loop(url, THR_S, CONC))
        cpu, own = cpu_seconds(PIDS.get(k)) - cpu0, cpu_seconds(PIDS.get(k), tree=False) - own0
        n = len(lat) + CONC  # + the warm-up
        out[k] = {"p50_c1": q(seq[k], 0.5), "rps": rps, "p99_c32": q(lat, 0.99), "cpu_us": cpu / n * 1e6}
        if k.startswith("slocore-w"):  # the policy process's share (the rest is the workers')
            out[k]["policy_cpu_us"] = own / n * 1e6
    return out


def _stat(pid) -> list:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _descendants(pid) -> list:
    """Live descendants of `pid` (a router's worker processes)."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                parent[int(name)] = int(_stat(name)[1])
            except (OSError, ValueError, IndexError):
                continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def cpu_seconds(pid, tree: bool = True) -> float:
    """User + system CPU time of process `pid` and its live descendants (Linux /proc), nan
    elsewhere: the cost per request that the machine's load does not inflate as it inflates
    wall-clock latency."""
    try:
        f = _stat(pid)
        total = int(f[11]) + int(f[12])
    except (OSError, ValueError, IndexError, TypeError):
        return float("nan")
    for p in _descendants(pid) if tree else ():
        try:
            f = _stat(p)
        except (OSError, ValueError, IndexError):
            continue  # it ended meanwhile
        total += int(f[11]) + int(f[12])
    return total / os.sysconf("SC_CLK_TCK")


def test_router_side_by_side(targets):
    rounds = [measure(targets) for _ in range(ROUNDS)]
    report(rounds, list(targets))


def report(rounds, names):
    print(
        f"\nrouter overhead: emulated engine --time-scale 0.01, streaming, {PROMPT}-token prompt, 8 tokens; "
        f"{N_SEQ} sequential requests, then {CONC} clients x {THR_S:g} s; {len(rounds)} rounds"
    )
    print(
        f"{'round':6s}{'target':16s}{'p50 c=1 ms':>11s}{'added ms':>10s}{'req/s c=32':>12s}{'p99 c=32 ms':>12s}"
        f"{'CPU us/req':>11s}"
    )
    for i, r in enumerate(rounds):
        d = r["direct"]
        for k in names:
            x = r[k]
            print(
                f"{i:<6d}{k:16s}{x['p50_c1'] * 1e3:11.2f}{(x['p50_c1'] - d['p50_c1']) * 1e3:10.2f}"
                f"{x['rps']:12.0f}{x['p99_c32'] * 1e3:12.2f}{x['cpu_us']:11.0f}"
            )

    def median(k, m, added=False):
        return statistics.median(r[k][m] - (r["direct"][m] if added else 0) for r in rounds)

    med = {k: {m: median(k, m) for m in rounds[0][k]} for k in names}
    for k in names:
        x, add = med[k], median(k, "p50_c1", added=True)
        print(
            f"median {k:15s} p50 c=1 {x['p50_c1'] * 1e3:.2f} ms (added {add * 1e3:.2f}), "
            f"{x['rps']:.0f} req/s, p99 c=32 {x['p99_c32'] * 1e3:.2f} ms, {x['cpu_us']:.0f} CPU us/req"
        )
        x["added"] = add
    s, d = med["slocore"], med["direct"]
    if "vllm-router" in med:
        v = med["vllm-router"]["added"]
        ok = s["added"] <= v + 3e-4
        print(f"target p50 overhead <= vllm-router's + 0.3 ms: {s['added'] * 1e3:.2f} vs {v * 1e3 + 0.3:.2f}: {ok}")
    else:
        print("target p50 overhead vs vllm-router: not measured (vllm-router not installed)")
    print(f"target throughput >= 95% of direct: {s['rps'] / d['rps'] * 100:.0f}%: {s['rps'] >= 0.95 * d['rps']}")
    print(f"target p99 <= 1.2 x direct: {s['p99_c32'] / d['p99_c32']:.2f}x: {s['p99_c32'] <= 1.2 * d['p99_c32']}")
    for k in names:  # the same targets for the router with several data-path workers
        if k.startswith("slocore-w"):
            w = med[k]
            print(
                f"{k}: throughput {w['rps'] / d['rps'] * 100:.0f}% of direct ({s['rps'] / d['rps'] * 100:.0f}% "
                f"for one process), p99 {w['p99_c32'] / d['p99_c32']:.2f}x direct, {w['cpu_us']:.0f} CPU us/req "
                f"(of which the policy process {w['policy_cpu_us']:.0f}) against {s['cpu_us']:.0f} in one process"
            )


def floor_proxy(port: int, engine: str) -> None:
    """The bare aiohttp proxy ("aiohttp-floor"): no validation, SLO, policy or metrics."""
    from aiohttp import web

    from slocore.serve.eventloop import new_event_loop

    async def proxy(request):
        body = await request.read()
        s = request.app["session"]
        hdrs = {"Content-Type": "application/json"}
        async with s.post(engine + request.path, data=body, headers=hdrs) as r:
            resp = web.StreamResponse(status=r.status, headers={"Content-Type": r.content_type})
            await resp.prepare(request)
            while chunk := await r.content.readany():
                await resp.write(chunk)
            await resp.write_eof()
            return resp

    async def health(request):
        return web.Response(text="ok")

    async def session(app):
        app["session"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=3))
        yield
        await app["session"].close()

    app = web.Application()
    app.cleanup_ctx.append(session)
    app.router.add_post("/v1/completions", proxy)
    app.router.add_post("/v1/chat/completions", proxy)
    app.router.add_get("/health", health)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None, loop=new_event_loop())


if __name__ == "__main__" and sys.argv[1:2] == ["--floor-proxy"]:
    floor_proxy(int(sys.argv[2]), sys.argv[3])


ECHO = """
import asyncio, sys
from slocore.serve.ipc import Link
async def main(path):
    async def serve(r, w):
        link = Link(r, w)
        async for frame in link.frames():
            for ev in frame:
                link.send(ev)
    srv = await asyncio.start_unix_server(serve, path=path)
    print("ready", flush=True)
    await asyncio.sleep(3600)
asyncio.run(main(sys.argv[1]))
"""


def test_ipc_round_trip(tmp_path):
    """The workers' link (serve.ipc: Unix socket, length-prefixed orjson frames): one event
    there and back between two processes, and 32 token events sent in one turn."""
    from slocore.serve.ipc import Link

    path = str(tmp_path / "echo.sock")
    env = dict(os.environ, PYTHONPATH=SLOCORE_PATH)
    p = subprocess.Popen([sys.executable, "-c", ECHO, path], stdout=subprocess.PIPE, env=env)
    try:
        assert p.stdout.readline().strip() == b"ready"

        async def go():
            link = Link(*await asyncio.open_unix_connection(path))
            frames = link.frames()
            one, batch = [], []
            for i in range(2000):
                t = time.perf_counter()
                link.send(["sub", i, 30.0])
                await frames.__anext__()
                one.append(time.perf_counter() - t)
            for i in range(500):
                t = time.perf_counter()
                for k in range(32):
                    link.send(["tok", i, 0, k + 1, 12.345678])
                await frames.__anext__()
                batch.append(time.perf_counter() - t)
            link.close()
            return sorted(one), sorted(batch)

        cpu0 = time.process_time()
        one, batch = asyncio.run(go())
        cpu = time.process_time() - cpu0
        print(
            f"\nipc round trip: one event p50 {q(one, 0.5) * 1e6:.0f} us (p99 {q(one, 0.99) * 1e6:.0f}); "
            f"32 token events in one frame p50 {q(batch, 0.5) * 1e6:.0f} us; "
            f"this side's CPU {cpu / (len(one) + len(batch)) * 1e6:.0f} us per round trip"
        )
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
