"""The emulated engine of `slocore serve` runs the simulator's C++ engine (slocore.EngineModel):
given the same arrivals, an emulated engine (real-time paced) and a simulated one run the same
sequence of batches (sanitised plans, preemptions) with the same predicted and truth times."""

import asyncio

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

import slocore  # noqa: E402
from slocore.profiles import hardware_profile  # noqa: E402
from slocore.serve.engine import EmulatedEngine  # noqa: E402

PROFILE = "h100-llama2-7b"
KV_BLOCKS = 90  # tight: forces waiting and, for vllm_fcfs, preemptions
MAX_BATCH_TOKENS = 512
WORKLOAD = [(300, 12), (120, 30), (400, 8), (64, 25), (250, 18), (90, 40), (180, 10), (330, 22), (40, 35), (210, 15)]


class RecordingScheduler(slocore.BatchScheduler):
    """Forwards to a registered scheduler; logs each iteration's sanitised plan and times."""

    def __init__(self, name):
        super().__init__()
        self.inner = slocore.make_batch_scheduler(name)
        self.log = []

    def name(self):
        return "recording_" + self.inner.name()

    def schedule(self, engine, now):
        return self.inner.schedule(engine, now)

    def on_batch_done(self, engine, plan, predicted_s, actual_s, now):
        self.log.append(([(i.request, i.tokens) for i in plan.items], sorted(plan.preempt), predicted_s, actual_s))
        self.inner.on_batch_done(engine, plan, predicted_s, actual_s, now)

    def on_finished(self, request, now):
        self.inner.on_finished(request, now)


def simulated(sched_name):
    rec = RecordingScheduler(sched_name)
    cfg = slocore.SimConfig()
    prof = hardware_profile(PROFILE)[0]
    prof.kv_blocks = KV_BLOCKS
    cfg.profile = prof
    cfg.instances = 1
    cfg.max_batch_tokens = MAX_BATCH_TOKENS
    cfg.global_policy = slocore.make_global_policy("round_robin")
    cfg.batch_scheduler = lambda: rec
    reqs = [slocore.Request(i, 0.0, p, output_len=o) for i, (p, o) in enumerate(WORKLOAD)]
    res = slocore._core.simulate(reqs, cfg)
    assert res.stats["plan_violations"] == 0
    return rec.log, res.stats["preemptions"]


def emulated(sched_name):
    rec = RecordingScheduler(sched_name)

    async def go():
        eng = EmulatedEngine(
            PROFILE, scheduler=rec, time_scale=0.2, kv_blocks=KV_BLOCKS, max_batch_tokens=MAX_BATCH_TOKENS
        )
        (p0, o0), rest = WORKLOAD[0], WORKLOAD[1:]
        queues = [eng.submit(p0, o0)[1]]
        while not eng.core.busy:  # the simulator starts the first arrival's iteration alone
            await asyncio.sleep(0)
        queues += [eng.submit(p, o)[1] for p, o in rest]
        for q in queues:
            while not (await q.get())[2]:
                pass
        eng._task.cancel()
        return eng

    eng = asyncio.run(asyncio.wait_for(go(), 60))
    assert [h[:2] for h in rec.log] == list(eng.stats.history)
    return rec.log, eng.stats.preemptions


@pytest.mark.parametrize("sched", ["sarathi_fcfs", "vllm_fcfs"])
def test_emulated_engine_runs_the_simulated_batches(sched):
    sim_log, sim_pre = simulated(sched)
    emu_log, emu_pre = emulated(sched)
    assert len(sim_log) > len(WORKLOAD)
    assert [b[:2] for b in emu_log] == [b[:2] for b in sim_log]
    assert [b[2:] for b in emu_log] == pytest.approx([b[2:] for b in sim_log], rel=1e-9)
    assert emu_pre == sim_pre
    if sched == "vllm_fcfs":
        assert sim_pre > 0  # the workload exercises preemption and re-queueing


def test_engine_model_steps_and_cancels():
    hw = hardware_profile(PROFILE)[0]
    m = slocore.EngineModel(hw, slocore.make_batch_scheduler("sarathi_fcfs"), kv_blocks=50)
    for i, (p, o) in enumerate([(100, 3), (60, 2)]):
        m.add(slocore.RequestState(slocore.Request(i, 0.0, p, output_len=o)))
    dt = m.start(0.0)
    assert dt > 0 and m.busy and {i.request for i in m.plan.items} == {0, 1}
    assert m.view.kv_blocks_free == 50 - 7 - 4
    assert m.cancel(1, 0.0) and m.view.kv_blocks_free == 50 - 7
    tokens, finished, handed = m.finish(dt)
    assert tokens == [(0, 1)] and finished == [] and handed == []
    assert not m.cancel(7, dt)
    while m.has_work:
        t = m.start(dt)
        tokens, finished, _ = m.finish(dt + t)
        dt += t
    assert finished == [0] and m.view.kv_blocks_free == 50 and m.iterations == 3


def test_engine_model_cancel_in_flight_keeps_the_others_tokens():
    # The engine finds a plan's running requests by position; cancelling the first one while
    # an iteration is in flight moves the others down, and they still get their tokens.
    hw = hardware_profile(PROFILE)[0]
    m = slocore.EngineModel(hw, slocore.make_batch_scheduler("sarathi_fcfs"), kv_blocks=100)
    for i in range(3):
        m.add(slocore.RequestState(slocore.Request(i, 0.0, 16, output_len=3)))
    dt = m.start(0.0)
    tokens, _, _ = m.finish(dt)
    assert tokens == [(0, 1), (1, 1), (2, 1)]
    t = m.start(dt)
    assert m.cancel(0, dt)
    tokens, finished, _ = m.finish(dt + t)
    assert tokens == [(1, 2), (2, 2)] and finished == []
    assert [(s.request.id, s.generated) for s in m.view.running] == [(1, 2), (2, 2)]


def test_emulated_engine_refuses_a_request_that_can_never_fit():
    import aiohttp

    from slocore.serve import engine as _engine

    async def go():
        eng = EmulatedEngine(PROFILE, kv_blocks=4, time_scale=0.1)  # 64 tokens of KV
        runner, url = await _engine.start(eng)
        try:
            async with aiohttp.ClientSession() as s:
                async with s.post(url + "/v1/completions", json={"prompt": list(range(60)), "max_tokens": 8}) as r:
                    assert r.status == 400 and "KV cache" in (await r.json())["error"]["message"]
                async with s.post(url + "/v1/completions", json={"prompt": list(range(40)), "max_tokens": 8}) as r:
                    assert r.status == 200 and (await r.json())["usage"]["completion_tokens"] == 8
        finally:
            await runner.cleanup()

    asyncio.run(asyncio.wait_for(go(), 30))
