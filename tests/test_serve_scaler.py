"""The scaler in the live loop (serve/scaler.py): config, the scaler's event contract live
vs simulated, and a load ramp on emulated engines that the HFX scaler follows from 2 to 4
instances (new ones started as subprocesses by the LocalLauncher) and back to 2, with every
request answered exactly once."""

import asyncio
import re
import sys

import pytest

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")


import slocore  # noqa: E402
from scaler_recording import RecordingScaler  # noqa: E402
from slocore.childenv import child_env  # noqa: E402
from slocore.profiles import hardware_profile  # noqa: E402
from slocore.serve import config as cfgmod  # noqa: E402
from slocore.serve.router import Router  # noqa: E402
from test_serve_router import serving  # noqa: E402

PROFILE = "h100-llama2-7b"
ENGINE = [sys.executable, "-m", "slocore.cli", "engine", "--host", "{host}", "--port", "{port}"]


def scaler_section(name="hfx", params=None, **kw):
    d = {"name": name, "params": params or {}, "launcher": {"command": list(ENGINE)}}
    d.update(kw)
    return d


# --- config ---------------------------------------------------------------------------------
def test_config_scaler_section():
    cfg = cfgmod.from_dict({"scaler": scaler_section(params={"interval": 0.5}, min_instances=2, max_instances=5)})
    assert cfg.scaler.name == "hfx" and cfg.scaler.params == {"interval": 0.5}
    assert (cfg.scaler.min_instances, cfg.scaler.max_instances) == (2, 5)
    assert cfg.scaler.launcher.kind == "local" and cfg.scaler.launcher.command == ENGINE
    assert cfgmod.from_dict({}).scaler is None


@pytest.mark.parametrize(
    "bad,msg",
    [
        ({"name": "hfx"}, r"scaler\.launcher: Field required"),
        (scaler_section(min_instances=3, max_instances=2), "max_instances must be >= min_instances"),
        (scaler_section(min_instances=0), r"scaler\.min_instances"),
        (scaler_section(bogus=1), r"scaler\.bogus: unknown key"),
        ({**scaler_section(), "launcher": {"command": []}}, r"scaler\.launcher\.command"),
        ({**scaler_section(), "launcher": {"command": ["x"], "kind": "k8s"}}, r"scaler\.launcher\.kind"),
        (
            {**scaler_section(), "launcher": {"command": ["x"], "profile": "no-such-profile"}},
            r"scaler\.launcher\.profile",
        ),
    ],
)
def test_config_scaler_errors_name_the_field(bad, msg):
    with pytest.raises(ValueError, match=msg):
        cfgmod.from_dict({"scaler": bad})


def test_router_rejects_unknown_scaler_and_params():
    with pytest.raises(ValueError, match="scaler"):
        Router(cfgmod.from_dict({"scaler": scaler_section(name="no_such_scaler")}))
    with pytest.raises(ValueError, match="hfx"):
        Router(cfgmod.from_dict({"scaler": scaler_section(params={"no_such_param": 1})}))
    with pytest.raises(ValueError, match="scaler.name: .*not a slocore.Scaler subclass"):
        Router(cfgmod.from_dict({"scaler": scaler_section(name="slocore:Request")}))
    try:
        import ray  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="scaler.launcher.kind: ray needs the ray extra"):
            Router(cfgmod.from_dict({"scaler": {**scaler_section(), "launcher": {"command": ["x"], "kind": "ray"}}}))


# --- the event contract: live = simulated ---------------------------------------------------
WORKLOAD = [(40, 3), (300, 2), (120, 5), (64, 4)]
EMU = {"profile": PROFILE, "time_scale": 0.05}


def simulated_events(pd):
    cfg = slocore.SimConfig()
    cfg.profile = hardware_profile(PROFILE)[0]
    cfg.batch_scheduler = lambda: slocore.make_batch_scheduler("sarathi_fcfs")
    if pd:
        cfg.disaggregated = True
        cfg.prefill_instances = cfg.decode_instances = 1
        cfg.prefill_policy = slocore.make_global_policy("least_outstanding")
        cfg.decode_policy = slocore.make_global_policy("least_outstanding")
    else:
        cfg.instances = 2
        cfg.global_policy = slocore.make_global_policy("least_outstanding")
    sc = RecordingScaler()
    cfg.scaler = sc
    reqs = [slocore.Request(i, 0.2 * i, p, output_len=o, ttft=2.0, tpot=0.1) for i, (p, o) in enumerate(WORKLOAD)]
    slocore._core.simulate(reqs, cfg)
    return sc.per_request(), sc.decides


def live_events(pd):
    if pd:
        backends = [
            {"name": "p0", "role": "prefill", "emulated": dict(EMU)},
            {"name": "d0", "role": "decode", "emulated": dict(EMU)},
        ]
    else:
        backends = [{"name": f"e{i}", "emulated": dict(EMU)} for i in range(2)]
    d = {
        "backends": backends,
        "retries": 0,
        "poll_interval_s": 0.2,
        "scaler": scaler_section("scaler_recording:RecordingScaler", {"interval": 0.05}),
    }

    async def one(url, s, k, prompt, out, stream):
        await asyncio.sleep(0.03 * k)
        body = {"prompt": list(range(1, prompt + 1)), "max_tokens": out, "stream": stream}
        async with s.post(url + "/v1/completions", json=body) as r:
            assert r.status == 200, await r.text()
            await r.read()

    async def go():
        async with serving(d) as (router, url, s):
            await asyncio.gather(*(one(url, s, k, p, o, k % 2 == 0) for k, (p, o) in enumerate(WORKLOAD)))
            await asyncio.sleep(0.2)
            return router.scaler.scaler.per_request(), router.scaler.scaler.decides

    return asyncio.run(asyncio.wait_for(go(), 60))


@pytest.mark.parametrize("pd", [False, True], ids=["colocated", "pd"])
def test_scaler_events_live_equal_simulated(pd):
    sim, sim_decides = simulated_events(pd)
    live, live_decides = live_events(pd)
    contract = ["arrival", "first_token", "finished"]
    assert sim == {k: contract for k in range(len(WORKLOAD))}
    assert live == sim
    assert sim_decides > 0 and live_decides > 0  # decide runs on its interval in both


# --- the load ramp ----------------------------------------------------------------------------
SLOW = 4.0  # engine time scale: a request of 24 tokens takes ~1 s, so 2 seqs per engine queue up
HFX = {
    "interval": 0.5,
    "window": 3.0,
    "min_samples": 6,
    "warmup": 1.0,
    "in_patience": 2,
    "out_patience": 2,
    "cooldown": 1.0,
}


def metric(text, metric_name, **labels):
    for line in text.splitlines():
        if line.startswith(metric_name + "{") or line.startswith(metric_name + " "):
            got = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
            if all(got.get(k) == v for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    return None


def test_load_ramp_scales_2_to_4_and_back_every_request_answered_once():
    emu = {"profile": PROFILE, "time_scale": SLOW, "max_num_seqs": 2}
    cmd = ENGINE + ["--time-scale", str(SLOW), "--max-num-seqs", "2"]
    d = {
        "backends": [{"name": f"e{i}", "emulated": dict(emu)} for i in range(2)],
        "policy": "least_outstanding",
        "retries": 2,
        "poll_interval_s": 0.25,
        "slo": {"default": {"ttft_ms": 300, "tpot_ms": 500}},
        "scaler": {
            "name": "hfx",
            "params": HFX,
            "min_instances": 2,
            "max_instances": 4,
            "launcher": {
                "command": cmd,
                "env": {"PYTHONPATH": child_env()["PYTHONPATH"]},
                "startup_timeout_s": 40,
                "drain_timeout_s": 40,
            },
        },
    }
    answers: list = []

    async def client(url, s, stop):
        while not stop.is_set():
            body = {"prompt": list(range(1, 33)), "max_tokens": 24, "stream": True}
            async with s.post(url + "/v1/completions", json=body) as r:
                text = await r.text()
            toks = sum(1 for line in text.splitlines() if line.startswith("data: {") and '"text"' in line)
            answers.append((r.status, text.rstrip().endswith("data: [DONE]"), toks))

    async def until(cond, timeout):
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while not cond():
            assert loop.time() < end, "timed out"
            await asyncio.sleep(0.2)

    async def go():
        async with serving(d) as (router, url, s):
            sc = router.scaler
            seen_max = [0]

            def ready():
                n = sc.counts("colocated")["ready"]
                seen_max[0] = max(seen_max[0], n)
                return n

            stop = asyncio.Event()
            clients = [asyncio.create_task(client(url, s, stop)) for _ in range(16)]
            await until(lambda: ready() >= 4, 45)
            served_before = {b.name: b.served for b in router.pool}

            def served_new():
                return sum(b.served - served_before.get(b.name, 0) for b in router.pool if b.name.startswith("scaled-"))

            # the new engines take work (a request there must finish first: seconds on a loaded machine)
            await until(lambda: served_new() > 0, 45)
            stop.set()
            await asyncio.gather(*clients)
            await until(lambda: ready() == 2 and not sc.counts("colocated")["draining"] and not sc._jobs, 45)
            async with s.get(url + "/metrics") as r:
                text = await r.text()
            return router, text, seen_max[0], served_new()

    router, text, seen_max, served_new = asyncio.run(asyncio.wait_for(go(), 160))
    assert seen_max == 4 and served_new > 0
    # every request answered exactly once, completely
    assert answers and all(a == (200, True, 24) for a in answers), [a for a in answers if a != (200, True, 24)][:5]
    recs = router.recorder.records()
    assert len(recs) == len(answers) and {r.outcome for r in recs} == {slocore.Outcome.FINISHED}
    assert not router.scaler._open  # the scaler heard every request finish
    # the scaler's decisions and state on /metrics
    assert metric(text, "slocore_scaler_decisions_total", pool="colocated", action="scale_out") >= 2
    assert metric(text, "slocore_scaler_decisions_total", pool="colocated", action="scale_in") >= 2
    assert metric(text, "slocore_scaler_desired_instances", pool="colocated") == 2
    assert metric(text, "slocore_scaler_instances", pool="colocated", state="draining") == 0
    assert metric(text, "slocore_scaler_indicator", pool="colocated", name="rate_ratio") is not None
    # the launched engines were stopped
    assert all(i.state.value in ("stopped", "failed") for i in router.scaler.launcher.instances())


def test_drain_gives_no_new_work_and_removes_after_inflight_finish():
    """A scale-in decision on a backend with a request in flight: the request completes, the
    backend gets nothing new while draining, and leaves the router once idle; a decision
    that would pass the floor or names an unknown instance is ignored."""
    slow = {"profile": PROFILE, "time_scale": 2.0}
    d = {
        "backends": [{"name": f"e{i}", "emulated": dict(slow)} for i in range(3)],
        "policy": "least_outstanding",
        "retries": 0,
        "scaler": {**scaler_section("scaler_recording:RecordingScaler"), "min_instances": 2},
    }

    async def ask(url, s, n):
        body = {"prompt": list(range(1, 17)), "max_tokens": n, "stream": True}
        async with s.post(url + "/v1/completions", json=body) as r:
            return r.status, (await r.text()).rstrip().endswith("data: [DONE]")

    async def go():
        async with serving(d) as (router, url, s):
            sc = router.scaler
            long = asyncio.create_task(ask(url, s, 40))
            while not any(b.inflight for b in router.pool):
                await asyncio.sleep(0.02)
            (busy,) = [b for b in router.pool if b.inflight]
            sc.apply(slocore.ScaleDecision(slocore.ScaleAction.SCALE_IN, slocore.Role.COLOCATED, busy.id))
            assert busy.draining and not busy.view().accepting
            served = {b.name: b.served for b in router.pool}
            short = await asyncio.gather(*(ask(url, s, 2) for _ in range(6)))
            assert busy.name in {b.name for b in router.pool}  # still there: its request runs
            assert busy.served == served[busy.name]  # and it got nothing new
            assert await long == (200, True) and short == [(200, True)] * 6
            while busy.name in {b.name for b in router.pool}:
                await asyncio.sleep(0.05)
            (left,) = [b for b in router.pool][:1]
            sc.apply(slocore.ScaleDecision(slocore.ScaleAction.SCALE_IN, slocore.Role.COLOCATED, left.id))  # floor
            sc.apply(slocore.ScaleDecision(slocore.ScaleAction.SCALE_IN, slocore.Role.COLOCATED, 999))  # stale
            assert not left.draining and len(router.pool) == 2
            async with s.get(url + "/metrics") as r:
                return await r.text()

    text = asyncio.run(asyncio.wait_for(go(), 60))
    assert (
        metric(text, "slocore_scaler_ignored_decisions_total", pool="colocated", action="scale_in", reason="floor") == 1
    )
    assert (
        metric(text, "slocore_scaler_ignored_decisions_total", pool="unknown", action="scale_in", reason="stale") == 1
    )
    assert metric(text, "slocore_scaler_instances", pool="colocated", state="ready") == 2


def test_pd_role_switch_drains_then_starts_the_other_role():
    """P/D: a switch of a decode instance to prefill drains it, removes it, and a new prefill
    engine (a subprocess through the LocalLauncher) joins once healthy and takes prefills."""
    d = {
        "backends": [
            {"name": "p0", "role": "prefill", "emulated": dict(EMU)},
            {"name": "d0", "role": "decode", "emulated": dict(EMU)},
            {"name": "d1", "role": "decode", "emulated": dict(EMU)},
        ],
        "prefill_policy": "round_robin",
        "retries": 0,
        "scaler": {
            **scaler_section("scaler_recording:RecordingScaler"),
            "min_instances": 1,
            "launcher": {
                "command": ENGINE + ["--time-scale", "0.05"],
                "startup_timeout_s": 40,
                "env": {"PYTHONPATH": child_env()["PYTHONPATH"]},
            },
        },
    }

    async def go():
        async with serving(d) as (router, url, s):
            sc = router.scaler
            d0 = router.pool.backends["d0"]
            sc.apply(slocore.ScaleDecision(slocore.ScaleAction.SWITCH_ROLE, slocore.Role.PREFILL, d0.id))
            assert sc.counts("prefill")["starting"] == 1 and sc.counts("decode")["draining"] == 1
            loop = asyncio.get_running_loop()
            end = loop.time() + 45
            while sc._jobs:
                assert loop.time() < end, "timed out"
                await asyncio.sleep(0.1)
            roles = {b.name: b.role for b in router.pool}
            assert "d0" not in roles and roles == {"p0": "prefill", "d1": "decode", "scaled-0": "prefill"}
            for _ in range(4):
                body = {"prompt": list(range(1, 20)), "max_tokens": 3}
                async with s.post(url + "/v1/completions", json=body) as r:
                    assert r.status == 200, await r.text()
            assert router.pool.backends["scaled-0"].served == 2  # round robin over two prefill engines

    asyncio.run(asyncio.wait_for(go(), 90))
