"""`workers: N`: N data-path processes with the policy in one (``serve.policy_host``,
``serve.worker``). Requests complete through two workers and both serve some; the
attainment on the policy process's /metrics is the load generator's (one definition); a
client that leaves gets ``on_cancelled`` / ``on_finished`` exactly once; a killed worker
leaks nothing in the policy and is started again; SIGTERM (and the policy process's death)
leaves no process behind. Event order per request is checked in ``test_conformance``."""

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

from aiohttp import web  # noqa: E402

import slocore  # noqa: E402
from slocore.childenv import child_env  # noqa: E402
from slocore.ports import free_port as _free_port  # noqa: E402
from slocore.serve import config as cfgmod  # noqa: E402
from slocore.serve import loadgen  # noqa: E402
from slocore.serve.policy_host import PolicyHost  # noqa: E402

EMU = {"profile": "h100-llama2-7b", "time_scale": 0.2}
SLOW = {"profile": "h100-llama2-7b", "time_scale": 1.0}


@contextlib.asynccontextmanager
async def serving_workers(d: dict, workers: int = 2):
    """The policy process in this event loop, `workers` worker processes on a free port:
    (host, data-path URL, policy-port URL, a session that opens a connection per request)."""
    cfg = cfgmod.from_dict({**d, "workers": workers, "listen": {"host": "127.0.0.1", "port": 0}})
    host = PolicyHost(cfg)
    runner = web.AppRunner(host.app(), access_log=None)
    await runner.setup()  # starts the workers and waits until they listen
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        pport = site._server.sockets[0].getsockname()[1]
        conn = aiohttp.TCPConnector(force_close=True)  # a new connection per request: the kernel spreads them
        async with aiohttp.ClientSession(connector=conn) as s:
            yield host, f"http://127.0.0.1:{host.port}", f"http://127.0.0.1:{pport}", s
    finally:
        await runner.cleanup()


def recording(policy="round_robin") -> dict:
    return {"name": "recording", "params": {"policy": policy}}


def by_request(events) -> dict:
    out: dict = {}
    for kind, rid, *_ in events:
        if not kind.startswith("instance_"):
            out.setdefault(rid, []).append(kind)
    return out


async def wait_until(cond, timeout=60.0, what="condition"):
    t = time.monotonic()
    while not cond():
        if time.monotonic() - t > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def no_leaks(host) -> None:
    assert not host.disp.futures
    for b in host.router.pool:
        assert not b.inflight, (b.name, list(b.inflight))
    for c in host.conns:
        assert not c.tasks and not c.assigned


async def post(s, url, body):
    async with s.post(url + "/v1/completions", json=body) as r:
        return r.status, await r.text()


def test_requests_complete_through_two_workers_and_both_serve():
    d = {"backends": [{"name": f"e{i}", "emulated": dict(EMU)} for i in range(2)], "policy": recording()}

    async def go():
        async with serving_workers(d) as (host, url, purl, s):
            bodies = [{"prompt": [1, 2, 3, k + 1], "max_tokens": 3, "stream": k % 2 == 0} for k in range(40)]
            res = await asyncio.gather(*(post(s, url, b) for b in bodies))
            await wait_until(lambda: not host.router.handler.records.live, what="records released")
            async with s.get(url + "/metrics") as r:  # served by a worker, answered by the policy process
                page = await r.text()
            async with s.get(purl + "/metrics") as r:
                assert r.status == 200
            async with s.get(url + "/health") as r:
                health = await r.json()
            no_leaks(host)
            return res, page, health, host.disp.policy.events(), host.router.recorder

    res, page, health, events, rec = asyncio.run(asyncio.wait_for(go(), 120))
    for status, text in res:
        assert status == 200, text[:300]
    per_worker = {}
    for line in page.splitlines():
        if line.startswith("slocore_worker_requests_total{"):
            per_worker[line.split('"')[1]] = float(line.rsplit(" ", 1)[1])
    assert set(per_worker) == {"0", "1"} and all(v > 0 for v in per_worker.values()), per_worker
    assert sum(per_worker.values()) == 40
    assert health["status"] == "ok" and health["healthy_backends"] == 2
    seqs = by_request(events)
    assert len(seqs) == 40  # one id per client request, unique across the workers
    for kinds in seqs.values():
        assert kinds[:2] == ["submit", "assign"] and kinds[-1] == "finished" and kinds.count("token") == 3
    assert len(rec) == 40 and all(r.outcome == slocore.Outcome.FINISHED for r in rec.records())


def test_attainment_on_metrics_is_the_load_generators():
    from test_serve_metrics_match import CLASSES, by, config, samples, workload

    reqs, expected = workload()

    async def go():
        async with serving_workers(config()) as (host, url, purl, s):
            out = await loadgen.run(url, reqs, progress=False)
            await wait_until(lambda: not host.router.handler.records.live, what="records released")
            async with s.get(purl + "/metrics") as r:
                return out, samples(await r.text())

    out, m = asyncio.run(asyncio.wait_for(go(), 120))
    summ = out["summary"]
    n_invalid = sum(1 for r in reqs if r.prompt_len == 510)
    assert len(out["invalid"]) == n_invalid and not out["errors"], (out["invalid"], out["errors"])
    for cls in CLASSES:
        assert summ["attainment_by_task"][cls] == pytest.approx(expected[cls]), cls
        assert m[("slocore_slo_attainment", (("slo_class", cls),))] == pytest.approx(expected[cls])
        assert m[("slocore_slo_attainment_window", (("slo_class", cls),))] == pytest.approx(expected[cls])
    outcomes = by(m, "slocore_requests_total")
    assert sum(v for lab, v in outcomes.items() if ("outcome", "engine_rejected") in lab) == n_invalid
    per_backend = by(m, "slocore_backend_requests_total")
    assert sum(per_backend.values()) == len(reqs)


def test_client_leaving_mid_stream_finishes_once():
    d = {"backends": [{"name": "e0", "emulated": dict(SLOW)}], "policy": recording()}

    async def go():
        async with serving_workers(d) as (host, url, purl, s):
            body = {"prompt": [1, 2, 3], "max_tokens": 500, "stream": True}
            async with s.post(url + "/v1/completions", json=body) as r:
                assert r.status == 200
                await r.content.readline()  # a first event arrived; then leave
            await wait_until(lambda: "finished" in sum(by_request(host.disp.policy.events()).values(), []))
            await wait_until(lambda: not host.router.handler.records.live, what="records released")
            no_leaks(host)
            rid = next(iter(by_request(host.disp.policy.events())))
            return by_request(host.disp.policy.events()), host.router.recorder.get(rid)

    seqs, rec = asyncio.run(asyncio.wait_for(go(), 120))
    (kinds,) = seqs.values()
    assert kinds[:2] == ["submit", "assign"] and kinds.count("finished") == 1 and kinds[-1] == "finished"
    assert "cancelled" not in kinds and 1 <= kinds.count("token") < 500
    assert rec.outcome != slocore.Outcome.FINISHED and "client disconnected" in rec.reason


def holding() -> dict:
    """One engine behind a pull policy that never places a request (queued requests stay)."""
    return {
        "backends": [{"name": "e0", "emulated": dict(EMU)}],
        "policy": {"name": "test_conformance:Hold"},
        "timeouts": {"first_token_s": 120},
    }


def test_client_leaving_while_queued_is_cancelled_once():
    d = holding()

    async def go():
        async with serving_workers(d) as (host, url, purl, s):
            pol = host.disp.policy
            task = asyncio.ensure_future(post(s, url, {"prompt": "z", "max_tokens": 2}))
            await wait_until(lambda: pol.pending() == 1, what="the request queued")
            task.cancel()  # the client leaves
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await wait_until(lambda: pol.cancelled, what="on_cancelled")
            await wait_until(lambda: not host.router.handler.records.live, what="records released")
            await asyncio.sleep(0.3)  # nothing more arrives
            no_leaks(host)
            return list(pol.cancelled), pol.pending()

    cancelled, pending = asyncio.run(asyncio.wait_for(go(), 120))
    assert len(cancelled) == 1 and pending == 0


def test_killed_worker_leaks_nothing_and_is_started_again():
    """Streaming requests (assigned) on a slow engine; the worker holding most of them is
    killed: each of its requests gets on_finished once, its records are failed, the engine's
    in-flight list empties, the worker comes back and serves again."""
    d = {"backends": [{"name": "e0", "emulated": dict(SLOW)}], "policy": recording()}

    async def go():
        async with serving_workers(d) as (host, url, purl, s):
            body = {"prompt": [1, 2, 3], "max_tokens": 300, "stream": True}
            tasks = [asyncio.ensure_future(post(s, url, body)) for _ in range(8)]
            await wait_until(lambda: sum(len(c.assigned) for c in host.conns) == 8, what="8 assigned")
            victim = max(host.conns, key=lambda c: len(c.assigned))
            lost = set(victim.assigned)
            old = {k: p.pid for k, p in host.procs.items()}
            os.kill(victim.pid, signal.SIGKILL)
            await wait_until(lambda: victim not in host.conns, what="the link closed")
            await wait_until(
                lambda: host.procs[victim.index].pid != old[victim.index] and host.ready[victim.index].is_set(),
                what="the worker restarted",
            )
            for rid in lost:  # ended here at once, not when the engine would have finished
                rec = host.router.recorder.get(rid)
                assert rec.outcome != slocore.Outcome.FINISHED and "exited" in rec.reason, rec.reason
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await wait_until(lambda: not host.router.handler.records.live, what="records released")
            await wait_until(lambda: not any(b.inflight for b in host.router.pool), what="engine in-flight empty")
            no_leaks(host)
            # the restarted worker serves: new connections reach both workers
            res = await asyncio.gather(*(post(s, url, {"prompt": "hi", "max_tokens": 2}) for _ in range(16)))
            # A worker's on_finished reaches the policy host over its link, which may be after
            # the client has its response: wait for it (it never came, the test fails here).
            pol = host.disp.policy
            await wait_until(
                lambda: all(k.count("finished") >= k.count("assign") for k in by_request(pol.events()).values()),
                what="on_finished for every placement",
            )
            restarts = host.worker_restarts._value.get()
            return lost, by_request(host.disp.policy.events()), res, restarts

    lost, seqs, res, restarts = asyncio.run(asyncio.wait_for(go(), 180))
    assert lost and restarts == 1
    assert all(status == 200 for status, _ in res)
    for rid, kinds in seqs.items():
        assert kinds.count("assign") == kinds.count("finished") == 1, (rid, kinds)
        assert kinds[-1] == "finished" and "cancelled" not in kinds


def test_killed_worker_cancels_its_queued_requests():
    d = holding()

    async def go():
        async with serving_workers(d) as (host, url, purl, s):
            pol = host.disp.policy
            tasks = [asyncio.ensure_future(post(s, url, {"prompt": "z", "max_tokens": 2})) for _ in range(6)]
            await wait_until(lambda: pol.pending() == 6, what="6 queued")
            victim = max(host.conns, key=lambda c: len(c.tasks))
            lost = set(victim.tasks)
            os.kill(victim.pid, signal.SIGKILL)
            await wait_until(lambda: lost <= set(pol.cancelled), what="on_cancelled for the lost")
            cancelled_then = sorted(pol.cancelled)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await wait_until(lambda: pol.pending() == 0, what="all cancelled")
            await wait_until(lambda: not host.router.handler.records.live, what="records released")
            no_leaks(host)
            return lost, cancelled_then, list(pol.cancelled)

    lost, then, cancelled = asyncio.run(asyncio.wait_for(go(), 180))
    assert lost and sorted(lost) == [r for r in then if r in lost]
    assert len(cancelled) == len(set(cancelled)) == 6  # once each


def test_workers_config_is_checked():
    with pytest.raises(ValueError, match="workers"):
        cfgmod.from_dict({"workers": 0})
    pd = {
        "workers": 2,
        "backends": [{"name": "p", "role": "prefill", "emulated": {}}, {"name": "d", "role": "decode", "emulated": {}}],
    }
    with pytest.raises(ValueError, match="workers: P/D"):
        PolicyHost(cfgmod.from_dict(pd))
    with pytest.raises(ValueError, match="workers: slo.mapper"):
        PolicyHost(cfgmod.from_dict({"workers": 2, "slo": {"mapper": True}}))
    with pytest.raises(ValueError, match="workers: admission"):
        PolicyHost(cfgmod.from_dict({"workers": 2, "admission": {"max_queue": 4}}))
    with pytest.raises(ValueError, match="workers: tenant rate limits"):
        PolicyHost(cfgmod.from_dict({"workers": 2, "tenants": {"anonymous": {"requests_per_min": 60}}}))
    assert cfgmod.from_dict({}).workers == 1


# --- the command: SIGTERM and the policy process's death leave no process behind ------------
def _children(pid: int) -> set[int]:
    """Every live descendant of `pid` (from /proc)."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                parent[int(name)] = int(fields[1])
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out.update(kids)
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_worker_stops_when_the_policy_process_goes_away_while_it_starts(tmp_path):
    """The policy process can die before a worker has started (the kernel gives clients to
    the workers already listening, so `slocore serve` answers while the last one starts): the
    worker must stop then too, not wait out its start (it outlived a SIGKILLed `slocore
    serve` under load). Here a policy side takes the worker's hello, never sends it ids, and
    closes: the worker's run ends well before its 60-s wait for ids."""
    from slocore.serve import worker
    from slocore.serve.ipc import Link

    cfg = cfgmod.from_dict({"workers": 1, "listen": {"host": "127.0.0.1", "port": 0}})
    path = str(tmp_path / "policy.sock")

    async def main():
        hello = asyncio.get_running_loop().create_future()

        async def policy_side(reader, writer):
            async for frame in Link(reader, writer).frames():
                if not hello.done():
                    hello.set_result(frame)
                    writer.close()  # the policy process goes away

        server = await asyncio.start_unix_server(policy_side, path=path)
        try:
            await asyncio.wait_for(worker._run(cfg, path, 0, 0.0, "127.0.0.1", 0), 20)
            assert (await hello)[0][0] == "hello"
        finally:
            server.close()

    asyncio.run(main())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "policy_killed"])
def test_serve_command_stops_all_processes(tmp_path, sig):
    import urllib.request

    port = _free_port()
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(
        f"listen: {{host: 127.0.0.1, port: {port}}}\npolicy_port: 0\nbackends:\n"
        "  - {name: e0, emulated: {time_scale: 0.2}}\n"
    )
    env = child_env()  # this very slocore build (in-tree or installed)
    proc = subprocess.Popen(
        [sys.executable, "-m", "slocore.cli", "serve", "--config", str(cfg), "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kids: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, "slocore serve exited"
            assert time.monotonic() < deadline, "slocore serve did not come up"
            time.sleep(0.2)
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/completions",
            data=b'{"prompt": "hi", "max_tokens": 2}',
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200
        kids = _children(proc.pid)
        assert len(kids) >= 2  # the two workers (and multiprocessing's resource tracker)
        proc.send_signal(sig)
        proc.wait(60)
        deadline = time.monotonic() + 60
        while any(_alive(k) for k in kids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [k for k in kids if _alive(k)], "processes left behind"
        if sig == signal.SIGTERM:
            assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for k in kids:  # only what this test saw it start
            if _alive(k):
                with contextlib.suppress(OSError):
                    os.kill(k, signal.SIGKILL)
