"""Live equals simulated: the same small workload through the simulator and through
`slocore serve` over in-process emulated engines, with a recording policy wrapped around
every registered global policy (the registered C++ ``recording`` one, and the Python
``slocore.recording.RecordingPolicy`` named by import path in the serve config). Per
request, each policy must see the same calls (kinds, token indices, order) with one id for
the whole request, as the event contract of ``csrc/slocore/policy/global_policy.h`` says.
Instance ids and times are not compared (the live engines run on a real clock)."""

import asyncio
import contextlib
import math

import pytest

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")


import slocore  # noqa: E402
from slocore.profiles import hardware_profile  # noqa: E402
from slocore.recording import RecordingPolicy  # noqa: E402
from slocore.serve import config as cfgmod  # noqa: E402
from slocore.serve.router import Router  # noqa: E402
from test_serve_router import serving as serving_one  # noqa: E402

PROFILE = "h100-llama2-7b"
EMU = {"profile": PROFILE, "time_scale": 0.05}
# (prompt tokens, output tokens); outputs >= 2 so that P/D hands every request off.
WORKLOAD = [(40, 3), (300, 2), (120, 5), (64, 4), (200, 2), (90, 3)]
GAP_S = 0.03  # between live arrivals (real seconds)
POLICIES = [n for n in slocore.global_policy_names() if n != "recording"]
PY_RECORDING = "slocore.recording:RecordingPolicy"


def sim_requests():
    return [slocore.Request(i, 0.2 * i, p, output_len=o, ttft=2.0, tpot=0.1) for i, (p, o) in enumerate(WORKLOAD)]


def recording(name, python, inner=None):
    inner = {f"inner.{k}": v for k, v in (inner or {}).items()}
    return (
        RecordingPolicy(policy=name) if python else slocore.make_global_policy("recording", {"policy": name, **inner})
    )


def simulate(name, pd, python=False, inner=None):
    """The recording policies' events after a simulation (colocated: [policy]; P/D:
    [prefill policy, decode policy])."""
    cfg = slocore.SimConfig()
    cfg.profile = hardware_profile(PROFILE)[0]
    cfg.batch_scheduler = lambda: slocore.make_batch_scheduler("sarathi_fcfs")
    if pd:
        cfg.disaggregated = True
        cfg.prefill_instances, cfg.decode_instances = 1, 2
        pols = [recording(name, python, inner), recording(name, python, inner)]
        cfg.prefill_policy, cfg.decode_policy = pols
    else:
        cfg.instances = 2
        pols = [recording(name, python, inner)]
        cfg.global_policy = pols[0]
    res = slocore._core.simulate(sim_requests(), cfg)
    assert all(r.outcome == slocore.Outcome.FINISHED for r in res.recorder.records()), name
    return [p.events() for p in pols]


@contextlib.asynccontextmanager
async def serving(d: dict):
    workers = d.get("workers", 1)
    if workers > 1:  # the data path in worker processes, the policy in this one (serve.policy_host)
        from test_serve_workers import serving_workers

        async with serving_workers({k: v for k, v in d.items() if k != "workers"}, workers) as (host, url, _, s):
            yield host.router, url, s
        return
    async with serving_one(d) as served:
        yield served


async def settled(router, timeout=60.0):
    """Every request's handling has ended (its record released): with workers, the events a
    worker sent after the client's last byte have reached the policy process too."""
    t = asyncio.get_running_loop().time()
    while router.handler.records.live:
        assert asyncio.get_running_loop().time() - t < timeout, "requests still open"
        await asyncio.sleep(0.02)


def serve(name, pd, python=False, workers=1, inner=None):
    """The recording policies' events after serving WORKLOAD live."""
    inner = {f"inner.{k}": v for k, v in (inner or {}).items()}
    pol = (
        {"name": PY_RECORDING, "params": {"policy": name}}
        if python
        else {"name": "recording", "params": {"policy": name, **inner}}
    )
    if pd:
        backends = [
            {"name": "p0", "role": "prefill", "emulated": dict(EMU)},
            {"name": "d0", "role": "decode", "emulated": dict(EMU)},
            {"name": "d1", "role": "decode", "emulated": dict(EMU)},
        ]
        d = {"backends": backends, "prefill_policy": pol, "decode_policy": dict(pol)}
    else:
        backends = [{"name": f"e{i}", "emulated": dict(EMU)} for i in range(2)]
        d = {"backends": backends, "policy": pol}
    d.update(poll_interval_s=0.2, slo={"default": {"ttft_ms": 2000, "tpot_ms": 100}}, retries=0, workers=workers)

    async def one(url, s, k, prompt, out):
        await asyncio.sleep(GAP_S * k)
        body = {"prompt": list(range(1, prompt + 1)), "max_tokens": out, "stream": True}
        async with s.post(url + "/v1/completions", json=body) as r:
            text = await r.text()
            assert r.status == 200 and text.rstrip().endswith("data: [DONE]"), text[:300]

    async def go():
        async with serving(d) as (router, url, s):
            await asyncio.gather(*(one(url, s, k, p, o) for k, (p, o) in enumerate(WORKLOAD)))
            await settled(router)
            return [disp.policy.events() for disp in router.dispatchers]

    return asyncio.run(asyncio.wait_for(go(), 120 if workers > 1 else 60))


def per_request(logs):
    """{request rank: [(policy index, kind, generated, has expected_handoff), ...]} with
    requests ranked by their first submit; also the instance_added counts per policy."""
    rank = {}
    for kind, rid, *_ in logs[0]:
        if kind == "submit" and rid not in rank:
            rank[rid] = len(rank)
    out: dict = {}
    added = []
    placed = [{} for _ in logs]  # request -> instance, per policy
    for k, log in enumerate(logs):
        added.append(sum(1 for e in log if e[0] == "instance_added"))
        for kind, rid, inst, gen, _now, eh in log:
            if kind.startswith("instance_"):
                continue
            assert rid in rank, f"policy {k} saw request {rid}, which policy 0 never got (ids differ)"
            out.setdefault(rank[rid], []).append((k, kind, gen, math.isfinite(eh)))
            if kind == "assign":
                placed[k][rid] = inst
            elif kind in ("token", "finished"):  # on the instance the policy placed it on
                assert placed[k].get(rid) == inst, (k, kind, rid, inst, placed[k].get(rid))
            elif kind == "prefill_done":  # names the prefill instance, for both policies
                assert placed[0].get(rid) == inst, (k, kind, rid, inst, placed[0].get(rid))
    return out, added


def check(name, pd, python=False, workers=1, inner=None):
    sim, sim_added = per_request(simulate(name, pd, python, inner))
    live, live_added = per_request(serve(name, pd, python, workers, inner))
    assert len(sim) == len(WORKLOAD)
    assert sim_added == live_added
    for r in sorted(sim):
        assert live.get(r) == sim[r], f"{name} request #{r}:\n  sim  {sim[r]}\n  live {live.get(r)}"


@pytest.mark.parametrize("name", POLICIES)
def test_colocated_live_calls_equal_simulated(name):
    check(name, pd=False)


@pytest.mark.parametrize("name", POLICIES)
def test_pd_live_calls_equal_simulated(name):
    check(name, pd=True)


@pytest.mark.parametrize("pd", [False, True], ids=["colocated", "pd"])
def test_router_held_queue_live_calls_equal_simulated(pd):
    """slo_predict with `hold` (the slocore-router preset): requests wait in the router's queue
    and leave it on later polls, live as simulated."""
    check("slo_predict", pd, inner={"hold": True, "order": "fifo"})


@pytest.mark.parametrize("pd", [False, True], ids=["colocated", "pd"])
def test_python_policy_by_import_path_live_equals_simulated(pd):
    check("least_outstanding", pd, python=True)


@pytest.mark.parametrize("name", POLICIES)
def test_colocated_through_two_workers_live_calls_equal_simulated(name):
    """The same through `workers: 2` (serve.worker, serve.policy_host): the events reach the
    policy process per request in the same order, with one id per request across workers."""
    check(name, pd=False, workers=2)


def test_python_policy_through_two_workers_live_equals_simulated():
    check("least_outstanding", pd=False, python=True, workers=2)


def test_sequences_follow_the_contract():
    """What the contract says, spelled out once (so an agreeing-but-wrong pair fails)."""
    (colo,) = simulate("round_robin", pd=False)
    (p_log, d_log) = simulate("round_robin", pd=True)
    rid = colo[[e[0] for e in colo].index("submit")][1]
    n = dict(enumerate(WORKLOAD))[rid][1]
    kinds = [(e[0], e[3]) for e in colo if e[1] == rid]
    assert kinds == [("submit", 0), ("assign", 0)] + [("token", k) for k in range(1, n + 1)] + [("finished", 0)]
    assert [(e[0], e[3]) for e in p_log if e[1] == rid] == [
        ("submit", 0),
        ("assign", 0),
        ("token", 1),
        ("prefill_done", 0),
        ("finished", 0),
    ]
    assert [(e[0], e[3]) for e in d_log if e[1] == rid] == [("submit", 0), ("prefill_done", 0), ("assign", 0)] + [
        ("token", k) for k in range(2, n + 1)
    ] + [("finished", 0)]
    # early assignment: the decode policy gets the request at prefill placement, with tau
    (_, d_early) = simulate("early_assign", pd=True)
    first = [e for e in d_early if e[1] == rid]
    assert first[0][0] == "submit" and math.isfinite(first[0][5]) and first[0][5] >= first[0][4]
    assert [e[0] for e in first[:3]] == ["submit", "assign", "prefill_done"]


def test_python_policy_import_errors_name_the_field():
    for name, msg in [
        ("no_such_module_xyz:Policy", "cannot import"),
        ("slocore.recording:NoSuchClass", "cannot import"),
        ("slocore.recording:math.isfinite", "is not a slocore.GlobalPolicy subclass"),
        ("slocore:Request", "is not a slocore.GlobalPolicy subclass"),
    ]:
        with pytest.raises(ValueError, match=f"policy.name: .*{msg}"):
            Router(cfgmod.from_dict({"policy": {"name": name}}))
    d = {
        "backends": [{"name": "p", "role": "prefill", "emulated": {}}, {"name": "d", "role": "decode", "emulated": {}}],
        "decode_policy": {"name": PY_RECORDING, "params": {"bogus": 1}},
    }
    with pytest.raises(ValueError, match="decode_policy.params: "):
        Router(cfgmod.from_dict(d))


def live_events(d, bodies):
    """Serve `d`, send `bodies` one after the other; (statuses, each dispatcher's events)."""

    async def go():
        async with serving(d) as (router, url, s):
            statuses = []
            for body in bodies:
                async with s.post(url + "/v1/completions", json=body) as r:
                    await r.read()
                    statuses.append(r.status)
            return statuses, [disp.policy.events() for disp in router.dispatchers]

    return asyncio.run(asyncio.wait_for(go(), 60))


def test_retry_keeps_the_id_finishes_the_failed_attempt_and_starts_over():
    backends = [{"name": "e0", "emulated": dict(EMU, fault="die_after:2")}, {"name": "e1", "emulated": dict(EMU)}]
    d = {"backends": backends, "policy": {"name": "recording", "params": {"policy": "round_robin"}}, "retries": 1}
    statuses, (log,) = live_events(d, [{"prompt": "z", "max_tokens": 6}])  # not streamed: retried
    assert statuses == [200]
    ev = [(k, r, i, g) for k, r, i, g, *_ in log if not k.startswith("instance_")]
    assert len({r for _, r, _, _ in ev}) == 1  # one id for both attempts
    kinds = [(k, g) for k, _, _, g in ev]
    # not streamed: the engine's whole answer comes at once, so the failed attempt shows no tokens
    assert kinds == [("submit", 0), ("assign", 0), ("finished", 0), ("submit", 0), ("assign", 0)] + [
        ("token", k) for k in range(1, 7)
    ] + [("finished", 0)]
    first, second = ev[1][2], ev[4][2]
    assert ev[2][2] == first != second and ev[-1][2] == second  # on_finished names the failed engine


class Hold(slocore.GlobalPolicy):
    """A pull policy that never releases a request (to see on_cancelled live)."""

    def __init__(self):
        super().__init__()
        self.queue, self.cancelled = set(), []

    def name(self):
        return "hold"

    def submit(self, request, now, expected_handoff=math.nan):
        self.queue.add(request.id)

    def poll(self, now, views):
        return []

    def pending(self):
        return len(self.queue)

    def on_cancelled(self, request, now):
        self.queue.discard(request)
        self.cancelled.append(request)


def test_request_leaving_while_queued_is_cancelled():
    d = {
        "backends": [{"name": "e0", "emulated": dict(EMU)}],
        "policy": {"name": "test_conformance:Hold"},
        "timeouts": {"first_token_s": 0.3},
    }

    async def go():
        async with serving(d) as (router, url, s):
            async with s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 2}) as r:
                assert r.status == 503 and "assigned no instance" in (await r.json())["error"]["message"]
            pol = router.dispatchers[0].policy
            return pol.cancelled, pol.pending(), router.recorder.get(1).reason

    cancelled, pending, reason = asyncio.run(asyncio.wait_for(go(), 30))
    assert cancelled == [1] and pending == 0 and "assigned no instance" in reason


class HoldEarly(Hold):
    """An early-assignment decode policy that never places (the simulator's cancel path)."""

    def early_assignment(self):
        return True


def test_simulated_one_token_pd_request_releases_the_early_decode_submit():
    """A P/D request that ends at prefill: the decode policy's early placement ends with
    on_finished, an early submit not yet placed with on_cancelled."""

    def run(decode):
        cfg = slocore.SimConfig()
        cfg.profile = hardware_profile(PROFILE)[0]
        cfg.batch_scheduler = lambda: slocore.make_batch_scheduler("sarathi_fcfs")
        cfg.disaggregated = True
        pre = slocore.make_global_policy("recording", {"policy": "round_robin"})
        cfg.prefill_policy, cfg.decode_policy = pre, decode
        res = slocore._core.simulate([slocore.Request(0, 0.0, 50, output_len=1)], cfg)
        assert res.recorder.get(0).outcome == slocore.Outcome.FINISHED
        return [e[0] for e in pre.events() if e[1] == 0]

    dec = slocore.make_global_policy("recording", {"policy": "early_assign"})
    assert run(dec) == ["submit", "assign", "token", "prefill_done", "finished"]
    assert [e[0] for e in dec.events() if e[1] == 0] == ["submit", "assign", "finished"]
    hold = HoldEarly()
    run(hold)
    assert hold.cancelled == [0] and hold.pending() == 0
