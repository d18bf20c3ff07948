"""A P/D handoff as a decode instance's scheduler sees it, the same in the simulator and
behind `slocore serve` (emulated engines): the decode role, the prompt computed, token 1
generated, the first token dated at the handoff and the client's arrival the prefill's TTFT
before it, and behind the router the view saying that the client sees token 1 from the decode
(`first_token_at_decode`, as the simulator's with pd_first_token="decode"). slo_triage's decode rules
(freshest handoff first, by TTFT deadline while it is ahead; banked TPOT first out) read
exactly these. The vLLM plugin's side: tests/vllm_scheduler_checks.py."""

import asyncio
import math

import pytest

import slocore
from slocore.profiles import hardware_profile

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

from test_serve_router import EMU, serving  # noqa: E402


def handoff_fields(view, s, now):
    """What a decode instance's scheduler reads of a waiting handoff."""
    return dict(
        role=view.role,
        seen_at_decode=view.first_token_at_decode,
        computed=s.computed - s.request.prompt_len,
        generated=s.generated,
        ttft_taken=s.first_token - s.request.arrival,
        dated=s.request.arrival < s.first_token <= now,
    )


class FirstSight(slocore.BatchScheduler):
    """slo_triage, recording each waiting request the first time it is seen."""

    def __init__(self):
        super().__init__()
        self.inner = slocore.make_batch_scheduler("slo_triage")
        self.seen = {}

    def name(self):
        return "first_sight"

    def schedule(self, view, now):
        for s in view.waiting:
            self.seen.setdefault(s.request.id, handoff_fields(view, s, now))
        return self.inner.schedule(view, now)

    def on_finished(self, request, now):
        self.inner.on_finished(request, now)


def test_simulated_decode_instance_sees_handoffs_with_their_first_tokens():
    spy = FirstSight()
    cfg = slocore.SimConfig()
    cfg.profile = hardware_profile("h100-llama2-7b")[0]
    cfg.disaggregated, cfg.prefill_instances, cfg.decode_instances = True, 1, 1
    cfg.prefill_policy = slocore.make_global_policy("round_robin")
    cfg.decode_policy = slocore.make_global_policy("round_robin")
    cfg.batch_scheduler = lambda: slocore.make_batch_scheduler("slo_triage")
    cfg.decode_batch_scheduler = lambda: spy
    reqs = [slocore.Request(i, 0.01 * i, 300 + 20 * i, output_len=6, ttft=1.0, tpot=0.1) for i in range(8)]
    res = slocore._core.simulate(reqs, cfg)
    ttft = {m.request.id: m.token_times[0] - m.request.arrival for m in res.recorder.records()}
    assert sorted(spy.seen) == list(range(8))
    for rid, f in spy.seen.items():
        assert f["role"] == slocore.Role.DECODE and f["computed"] == 0 and f["generated"] == 1 and f["dated"], f
        assert not f["seen_at_decode"], f  # the default dating (pd_first_token="decode": tests/test_pd_first_token.py)
        assert f["ttft_taken"] == pytest.approx(ttft[rid]), (f, ttft[rid])


def test_emulated_decode_engine_sees_handoffs_as_the_simulator_does():
    """Behind the router the decode engine (role decode) holds each handoff as the simulated
    one does, with the TTFT the router measured to the prefill's answer; the client still
    gets every token (token 1 with the first decode step's, as vLLM's decode server repeats it)."""

    async def go():
        emu = dict(EMU, scheduler="slo_triage")
        d = {
            "backends": [
                {"name": "p0", "role": "prefill", "emulated": dict(emu)},
                {"name": "d0", "role": "decode", "emulated": dict(emu)},
            ],
            "prefill_policy": "round_robin",
            "decode_policy": "round_robin",
        }
        async with serving(d) as (router, url, s):
            seen = []
            for _runner, eng in router._engines:
                orig = eng.submit

                def spy(plen, olen, prefill_only=False, prefilled=False, _o=orig, _e=eng, **kw):
                    rid, q = _o(plen, olen, prefill_only, prefilled, **kw)
                    if prefilled:
                        v = _e.core.view
                        seen.append((handoff_fields(v, v.waiting[len(v.waiting) - 1], _e.now()), kw["handoff_ttft"]))
                    return rid, q

                eng.submit = spy
            loop = asyncio.get_running_loop()
            for stream in (False, True):
                t0 = loop.time()
                body = {"prompt": "w " * 200, "max_tokens": 5, "stream": stream, "slo_ttft_ms": 3000}
                async with s.post(url + "/v1/completions", json=body) as r:
                    assert r.status == 200
                    if stream:
                        text = await r.text()
                        assert text.count('"text"') == 5, text
                    else:
                        assert (await r.json())["usage"]["completion_tokens"] == 5
                wall = loop.time() - t0
                f, taken = seen[-1]
                assert f["role"] == slocore.Role.DECODE and f["computed"] == 0 and f["generated"] == 1, f
                assert f["seen_at_decode"], f  # the router's client sees token 1 from the decode
                assert f["dated"] and 0 < taken * EMU["time_scale"] < wall, (f, taken, wall)
                assert f["ttft_taken"] == pytest.approx(taken, abs=1e-6), (f, taken)
            assert len(seen) == 2

    asyncio.run(asyncio.wait_for(go(), 60))


def test_client_cannot_forge_a_handoff():
    """The router owns slo_handoff_ttft_ms: a client's value never reaches a colocated engine."""

    async def go():
        emu = dict(EMU, scheduler="slo_triage")
        async with serving({"backends": [{"name": "e0", "emulated": emu}]}) as (router, url, s):
            (_runner, eng), got = router._engines[0], []
            orig = eng.submit
            eng.submit = lambda *a, **kw: got.append((a, kw)) or orig(*a, **kw)
            body = {"prompt": "w " * 50, "max_tokens": 3, "vllm_xargs": {"slo_handoff_ttft_ms": 5000}}
            async with s.post(url + "/v1/completions", json=body) as r:
                assert r.status == 200 and (await r.json())["usage"]["completion_tokens"] == 3
            ((args, kw),) = got
            assert kw["handoff_ttft"] == 0.0 and not args[3], got  # no handoff, nothing taken

    asyncio.run(asyncio.wait_for(go(), 60))


def test_emulated_engine_refuses_an_unknown_role():
    from slocore.serve.engine import EmulatedEngine

    with pytest.raises(ValueError, match="unknown role"):
        EmulatedEngine(role="decoder")
    assert math.isnan(slocore.RequestState(slocore.Request(0, 0.0, 8)).first_token)


def test_handoff_field_refuses_what_no_router_sends():
    """slo_handoff_ttft_ms reaches engines from the router only, but an engine may be reached
    directly: a value that is not a duration in [0, a day] is refused (logged), never used."""
    from slocore.integrations.xargs import HANDOFF_TTFT_FIELD, slo_fields

    for good, want in ((0, 0.0), ("250", 0.25), (1500.5, 1.5005)):
        f, refused = slo_fields({HANDOFF_TTFT_FIELD: good})
        assert f["handoff_ttft"] == pytest.approx(want) and not refused, (good, f, refused)
    for bad in (-1, float("nan"), float("inf"), 1e12, True, "soon", None, [1]):
        f, refused = slo_fields({HANDOFF_TTFT_FIELD: bad})
        assert "handoff_ttft" not in f and refused == [(HANDOFF_TTFT_FIELD, bad)], (bad, f, refused)


def test_emulated_prefill_engine_serves_a_whole_request():
    """A prefill instance's engine cuts only P/D requests (max_tokens 1), as vLLM's
    kv_producer: a request sent to it directly runs to its end."""
    from slocore.serve.engine import EmulatedEngine

    async def go():
        eng = EmulatedEngine(role="prefill", time_scale=0.05)
        rid, q = eng.submit(40, 4)
        got = [await asyncio.wait_for(q.get(), 10) for _ in range(4)]
        assert [g[1] for g in got] == [1, 2, 3, 4] and got[-1][2], got
        assert eng.core.view.role == slocore.Role.COLOCATED

    asyncio.run(go())
