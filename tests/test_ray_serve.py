"""slocore in a real local Ray Serve (one Ray instance for the module): the router follows
its policy, its event sequence equals the simulator's (the conformance check of
test_conformance.py with a Ray Serve router), and the HFX scaler as Ray Serve autoscaling
adds replicas under a load ramp and removes them after, losing no request. Unit checks of
the request parser and of the autoscaling policy on fabricated contexts run without Ray
workers."""

import asyncio
import collections
import os
import sys
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("ray.serve.request_router", reason="needs ray[serve] >= 2.60 (pip install '.[ray]')")
pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

import ray  # noqa: E402
from ray import serve  # noqa: E402

from slocore.integrations.ray_serve import (  # noqa: E402
    EmulatedEngineReplica,
    SloAutoscalingPolicy,
    SloHandle,
    parse_request,
    slo_autoscaling_config,
    slo_router_config,
    state,
)
from slocore.integrations.ray_serve.bench import CLASSES, replay, two_class_workload  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raykit import init_local_ray  # noqa: E402
from test_conformance import GAP_S, WORKLOAD, per_request, simulate  # noqa: E402

pytestmark = [
    pytest.mark.ray,
    # Ray 2.60 deprecates AutoscalingConfig.metrics_interval_s for env vars it does not read yet
    pytest.mark.filterwarnings("ignore:.*metrics_interval_s.*:DeprecationWarning"),
]

SLO_CLASSES = {k: {"ttft_ms": c["ttft_ms"], "tpot_ms": c["tpot_ms"]} for k, c in CLASSES.items()}


# --- no Ray workers ------------------------------------------------------------------------
def test_parse_request_fields_and_errors():
    p = parse_request({"prompt": [1, 2, 3], "max_tokens": 5, "slo": {"ttft_ms": 200, "tpot_ms": 50}})
    assert (p.prompt_len, p.output_len, p.ttft, p.tpot) == (3, 5, 0.2, 0.05)
    p = parse_request({"prompt": "x" * 40, "slo_class": "tight"}, SLO_CLASSES)
    assert p.prompt_len == 10 and p.ttft == 1.0 and p.task == "tight"
    chat = SimpleNamespace(messages=[{"role": "user", "content": "abcdefgh"}], max_tokens=3, prompt=None)
    assert parse_request(chat).prompt_len == 2
    with pytest.raises(ValueError, match="max_tokens"):
        parse_request({"prompt": [1], "max_tokens": 0})
    with pytest.raises(ValueError, match="slo.ttft_ms"):
        parse_request({"prompt": [1], "slo": {"ttft_ms": -1}})
    with pytest.raises(KeyError, match="slo_class"):
        parse_request({"prompt": [1], "slo_class": "gold"}, SLO_CLASSES)
    with pytest.raises(ValueError, match="prompt"):
        parse_request({"max_tokens": 3})
    with pytest.raises(TypeError, match="slo"):
        parse_request({"prompt": [1], "slo": 5})


def fake_ctx(stats: dict, target: int, lo: int = 1, hi: int = 3):
    return SimpleNamespace(
        raw_metrics={},
        aggregated_metrics={k: {r: v for r, s in stats.items() for kk, v in s.items() if kk == k} for k in KEYS},
        running_replicas=list(stats),
        target_num_replicas=target,
        capacity_adjusted_min_replicas=lo,
        capacity_adjusted_max_replicas=hi,
        deployment_name="d",
    )


KEYS = ("running", "waiting", "kv_usage", "kv_blocks", "block_size", "arrivals", "first_tokens", "finished", "ttft_sum")


def test_autoscaling_policy_scales_on_hfx_signals_within_bounds():
    """Counter increments become HFX events; a backlog of requests past their TTFT makes it
    scale out (capped at max), an idle pool scales in (floored at min)."""
    pol = SloAutoscalingPolicy(params={"warmup": 0.0, "cooldown": 0.0})
    clock = [0.0]
    pol.now = lambda: clock[0]
    base = {"running": 4, "waiting": 20, "kv_usage": 0.5, "kv_blocks": 1000, "block_size": 16}
    counts = {"arrivals": 0, "first_tokens": 0, "finished": 0, "ttft_sum": 0.0}
    target, peak = 1, 1
    for _ in range(40):  # 40 s of arrivals at 20/s, first tokens at 2/s: queues grow
        clock[0] += 1.0
        counts = {
            "arrivals": counts["arrivals"] + 20,
            "first_tokens": counts["first_tokens"] + 2,
            "finished": counts["finished"] + 2,
            "ttft_sum": counts["ttft_sum"] + 20 * 0.5,
        }
        target, _ = pol(fake_ctx({"r0": {**base, **counts}}, target))
        peak = max(peak, target)
    assert peak == 3 and pol.ignored["cap"] > 0
    assert pol.last["indicators"]["norm_wait"] > 1.0
    idle = {**base, "running": 0, "waiting": 0, "kv_usage": 0.0}
    counts["first_tokens"] = counts["finished"] = counts["arrivals"]
    for _ in range(200):  # nothing arrives; everything drained (Ray runs `target` replicas)
        clock[0] += 1.0
        reps = {"r0": {**idle, **counts}, **{f"r{k}": dict(idle) for k in range(1, target)}}
        target, _ = pol(fake_ctx(reps, target))
    assert target == 1
    with pytest.raises(ValueError, match="pool"):
        SloAutoscalingPolicy(pool="gpu")


# --- a local Ray Serve -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_serve():
    if ray.is_initialized():
        pytest.skip("ray already initialised in this process")
    init_local_ray(num_cpus=2)
    serve.start(proxy_location="Disabled")
    yield
    serve.shutdown()
    ray.shutdown()


def engine(replicas: int, router=None, **opts):
    o = {"num_replicas": replicas, "max_ongoing_requests": 1000, "ray_actor_options": {"num_cpus": 0}}
    if router is not None:
        o["request_router_config"] = router
    o.update(opts)
    if "autoscaling_config" in o:
        o.pop("num_replicas")
    return serve.deployment(EmulatedEngineReplica, name="engine").options(**o)


def router_of(app: str):
    rs = [r for r in state.ROUTERS if getattr(r, "_deployment_id", None) and r._deployment_id.app_name == app]
    assert rs, f"no slocore router for app {app}"
    return rs[-1]


def wait_for(cond, timeout: float, what: str):
    t = time.monotonic()
    while not cond():
        assert time.monotonic() - t < timeout, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_overloaded_replica_gets_no_tight_request(local_serve):
    """Rank 0 carries outside load (40 long requests that never reached the router); the
    slocore router sees it in the routing stats and sends it nothing, tight class
    included. Ray's power-of-two router only counts the requests Ray sent, so it does."""
    ts = 0.2
    bg = {0: {"n": 40, "prompt": 2000, "output": 100000}}
    reqs = two_class_workload(24, 10.0, seed=1)
    placed = {}
    for name, router in (("slocore", slo_router_config(classes=SLO_CLASSES, clock_scale=1 / ts)), ("pow2", None)):
        app = f"overload-{name}"
        handle = serve.run(engine(3, router).bind(time_scale=ts, background=bg), name=app, route_prefix=None)
        if router is not None:
            stream = SloHandle(handle).stream
            asyncio.run(replay(stream, two_class_workload(1, 10.0, seed=0), ts))  # the router exists now
            r = router_of(app)

            def loaded(r=r):
                with r.lock:
                    return any(len(v.waiting) + len(v.running) >= 40 for v in r.views(list(r.curr_replicas.values())))

            wait_for(loaded, 20, "the outside load in the routing stats")
        else:
            h = handle.options(stream=True)

            def stream(body, h=h):
                return h.generate.remote(body)

            time.sleep(1.0)
        res = asyncio.run(replay(stream, reqs, ts))
        assert not res["errors"], res["errors"][:3]
        placed[name] = collections.Counter((reqs[i]["slo_class"], rank) for i, rank in res["replicas"].items())
        serve.delete(app)
    slo, p2 = placed["slocore"], placed["pow2"]
    assert sum(slo.values()) == sum(p2.values()) == len(reqs)
    assert slo[("tight", 0)] == 0 and slo[("loose", 0)] == 0, slo
    assert p2[("tight", 0)] + p2[("loose", 0)] > 0, p2  # the contrast: P(none of 24 on rank 0) ~ 1e-11


@pytest.mark.parametrize("policy", ["least_outstanding", "hfx"])
def test_ray_serve_events_equal_simulated(local_serve, policy):
    """The conformance check (test_conformance.py) with the Ray Serve router: per request the
    policy sees the same calls, in the same order, as in the simulator."""
    sim, sim_added = per_request(simulate(policy, pd=False, python=True))
    app = f"conformance-{policy}"
    cfg = slo_router_config(
        "slocore.recording:RecordingPolicy", {"policy": policy}, default_slo={"ttft_ms": 2000, "tpot_ms": 100}
    )
    handle = serve.run(engine(2, cfg).bind(time_scale=0.05), name=app, route_prefix=None)
    h = SloHandle(handle)

    async def one(k, prompt, out):
        await asyncio.sleep(GAP_S * k)
        chunks = [c async for c in h.stream({"prompt_len": prompt, "max_tokens": out})]
        assert chunks[-1]["generated"] == out and chunks[-1]["done"]

    async def go():
        await asyncio.gather(*(one(k, p, o) for k, (p, o) in enumerate(WORKLOAD)))

    asyncio.run(asyncio.wait_for(go(), 60))
    r = router_of(app)
    wait_for(lambda: not r.entries, 10, "every request finished in the router")
    live, live_added = per_request([r.policy.events()])
    serve.delete(app)
    assert sim_added == live_added
    for k in sorted(sim):
        assert live.get(k) == sim[k], f"{policy} request #{k}:\n  sim  {sim[k]}\n  live {live.get(k)}"


def test_plain_handle_and_request_objects(local_serve):
    """Without SloHandle (as a ray.serve.llm ingress calls its LLMServer): a request object
    with attributes (prompt / max_tokens, like ray.serve.llm's CompletionRequest) is placed
    by the policy, which sees submit, its assignment and on_finished from Ray's completion
    callback (no token events), once per request."""
    app = "plain"
    cfg = slo_router_config("slocore.recording:RecordingPolicy", {"policy": "least_outstanding"})
    handle = serve.run(engine(2, cfg).bind(time_scale=0.05), name=app, route_prefix=None)
    bodies = [SimpleNamespace(prompt=list(range(1, 50 + k)), max_tokens=3) for k in range(6)]

    async def go():
        return await asyncio.gather(*(handle.remote(b) for b in bodies))

    out = asyncio.run(asyncio.wait_for(go(), 60))
    assert [o["generated"] for o in out] == [3] * 6
    r = router_of(app)
    wait_for(lambda: not r.entries, 10, "Ray's completion callbacks")
    per = collections.defaultdict(list)
    for kind, rid, *_ in r.policy.events():
        if not kind.startswith("instance_"):
            per[rid].append(kind)
    serve.delete(app)
    assert len(per) == 6 and all(v == ["submit", "assign", "finished"] for v in per.values()), dict(per)


def test_hfx_autoscaling_ramp_adds_then_removes_replicas(local_serve):
    """A load ramp on one replica: the HFX scaler (Ray custom autoscaling policy) adds
    replicas, and removes them once the load is gone; every request completes. The engine
    runs at real speed (time_scale 1): ~40 requests/s of 1500-token prompts is then above
    one replica's prefill capacity (~24/s) on any machine; at time_scale 0.1 one replica
    kept up on a quiet machine and the test depended on the machine being slow."""
    ts = 1.0
    dep = engine(
        1,
        slo_router_config(clock_scale=1 / ts),
        autoscaling_config=slo_autoscaling_config(1, 3, clock_scale=1 / ts, metrics_interval_s=0.1),
        graceful_shutdown_timeout_s=30,
    )
    app = "ramp"
    handle = serve.run(dep.bind(time_scale=ts), name=app, route_prefix=None)
    h = SloHandle(handle)

    def running() -> int:
        return serve.status().applications[app].deployments["engine"].replica_states.get("RUNNING", 0)

    seen = []

    async def one(body):
        got = 0
        async for c in h.stream(body):
            got = c["generated"]
        return got

    async def go():
        # ~40 requests/s for 6 s, ~10 s of one replica's prefill work; the replica count is
        # polled beside the sender until every request is done (a `serve.status()` awaited
        # between sends took seconds on a busy machine and thinned the load below a replica).
        tasks, done = [], asyncio.Event()
        body = {"prompt_len": 1500, "max_tokens": 100, "slo": {"ttft_ms": 1000, "tpot_ms": 100}}

        async def poll():
            while not done.is_set():
                seen.append(await asyncio.to_thread(running))
                await asyncio.sleep(0.2)

        poller = asyncio.ensure_future(poll())
        t0 = time.monotonic()
        while time.monotonic() - t0 < 6.0:
            tasks.append(asyncio.ensure_future(one(body)))
            await asyncio.sleep(0.025)
        out = await asyncio.gather(*tasks, return_exceptions=True)
        done.set()
        await poller
        return out

    out = asyncio.run(go())
    lost = [x for x in out if x != 100]
    assert not lost, lost[:3]
    seen.append(running())
    t = time.monotonic()
    while running() > 1 or serve.status().applications[app].deployments["engine"].replica_states.get("STOPPING", 0):
        assert time.monotonic() - t < 60, f"replicas did not come back to 1: {running()}"
        seen.append(running())
        time.sleep(0.5)
    assert max(seen) >= 2, seen
    assert running() == 1
    serve.delete(app)
