"""Router overhead: added latency (p50/p99) and the most requests/s through
`slocore serve` to one emulated engine, side by side with a direct connection to the
engine and, when `vllm-router` (Rust, PyPI) is installed, through it, all in the same run.

    python -m pytest bench/bench_router.py -s [--benchmark-disable]
    SLOCORE_VLLM_ROUTER=/path/to/vllm-router python -m pytest bench/bench_router.py -s

Each target gets its own subprocess (engine, router) on localhost. Latency: sequential
non-streaming requests with max_tokens=1 (the engine answers in one step of ~0.1 ms at
--time-scale 0.01), so the difference to "direct" is the proxy's own cost. Throughput: a
closed loop with 64 clients for a few seconds. This machine is shared: compare the ratios.
"""

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

aiohttp = pytest.importorskip("aiohttp")

RESULTS: dict = {}
N_LAT = int(os.environ.get("SLOCORE_BENCH_LAT_N", "400"))
THR_S = float(os.environ.get("SLOCORE_BENCH_THR_S", "4"))
CONC = int(os.environ.get("SLOCORE_BENCH_CONC", "64"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    if b is None and Path("/tmp/vrouter-venv/bin/vllm-router").exists():
        b = "/tmp/vrouter-venv/bin/vllm-router"
    return b


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    procs = []
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            filter(None, [str(Path(__file__).parents[1] / "python"), os.environ.get("PYTHONPATH")])
        ),
    )
    try:
        ep = free_port()
        eng = f"http://127.0.0.1:{ep}"
        procs.append(
            start(
                [
                    sys.executable,
                    "-m",
                    "slocore.cli",
                    "engine",
                    "--port",
                    str(ep),
                    "--time-scale",
                    "0.01",
                    "--max-num-seqs",
                    "1024",
                ],
                eng + "/health",
                env,
            )
        )
        cfg = tmp_path_factory.mktemp("cfg") / "r.yaml"
        cfg.write_text(f"backends:\n  - {{name: e0, url: '{eng}'}}\npolicy: least_outstanding\npoll_interval_s: 0.5\n")
        rp = free_port()
        procs.append(
            start(
                [sys.executable, "-m", "slocore.cli", "serve", "--config", str(cfg), "--port", str(rp)],
                f"http://127.0.0.1:{rp}/health",
                env,
            )
        )
        out = {"direct": eng, "slocore": f"http://127.0.0.1:{rp}"}
        vb = vllm_router_bin()
        if vb:
            vp = free_port()
            try:
                procs.append(
                    start(
                        [
                            vb,
                            "--host",
                            "127.0.0.1",
                            "--port",
                            str(vp),
                            "--worker-urls",
                            eng,
                            "--policy",
                            "round_robin",
                            "--log-level",
                            "error",
                        ],
                        f"http://127.0.0.1:{vp}/health",
                    )
                )
                out["vllm-router"] = f"http://127.0.0.1:{vp}"
            except RuntimeError as e:
                print(f"vllm-router did not start: {e}")
        yield out
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


async def _latency(url, n):
    body = {"model": "slocore-emulated", "prompt": "hi", "max_tokens": 1}
    lat = []
    async with aiohttp.ClientSession() as s:
        for i in range(n + 20):
            t = time.perf_counter()
            async with s.post(url + "/v1/completions", json=body) as r:
                await r.read()
                assert r.status == 200
            if i >= 20:  # warm-up
                lat.append(time.perf_counter() - t)
    lat.sort()
    return lat


async def _throughput(url, seconds, conc):
    body = {"model": "slocore-emulated", "prompt": "hi", "max_tokens": 1}
    done = 0
    errors = 0
    stop = time.perf_counter() + seconds

    async def worker(s):
        nonlocal done, errors
        while time.perf_counter() < stop:
            async with s.post(url + "/v1/completions", json=body) as r:
                await r.read()
                if r.status == 200:
                    done += 1
                else:
                    errors += 1

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        t = time.perf_counter()
        await asyncio.gather(*(worker(s) for _ in range(conc)))
        wall = time.perf_counter() - t
    return done / wall, errors


def q(xs, p):
    return xs[min(len(xs) - 1, int(p * len(xs)))]


@pytest.mark.benchmark(group="router")
@pytest.mark.parametrize("target", ["direct", "slocore", "vllm-router"])
def test_router_overhead(benchmark, targets, target):
    if target not in targets:
        pytest.skip("vllm-router is not installed (pip install vllm-router, or set SLOCORE_VLLM_ROUTER)")
    url = targets[target]

    def measure():
        lat = asyncio.run(_latency(url, N_LAT))
        rps, errors = asyncio.run(_throughput(url, THR_S, CONC))
        return lat, rps, errors

    lat, rps, errors = benchmark.pedantic(measure, rounds=1, iterations=1)
    assert errors == 0
    RESULTS[target] = {"p50": q(lat, 0.5), "p99": q(lat, 0.99), "rps": rps}
    benchmark.extra_info.update(RESULTS[target])


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if "direct" not in RESULTS:
        return
    d = RESULTS["direct"]
    print(
        f"\nrouter overhead, emulated engine (max_tokens=1), {N_LAT} sequential requests, "
        f"{CONC} clients x {THR_S:g} s for req/s"
    )
    print(f"{'target':12s} {'p50 ms':>8s} {'p99 ms':>8s} {'added p50 ms':>13s} {'added p99 ms':>13s} {'req/s':>8s}")
    for k, r in RESULTS.items():
        print(
            f"{k:12s} {r['p50'] * 1e3:8.2f} {r['p99'] * 1e3:8.2f} {(r['p50'] - d['p50']) * 1e3:13.2f} "
            f"{(r['p99'] - d['p99']) * 1e3:13.2f} {r['rps']:8.0f}"
        )
