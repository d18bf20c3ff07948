"""Tenants (API keys -> SLO class, client-SLO policy, priority cap, rate limits) and overload
shedding (serve.admission)."""

import asyncio

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

from slocore.serve import config as cfgmod  # noqa: E402
from slocore.serve.admission import Admission, AdmissionConfig, Shed  # noqa: E402
from slocore.serve.tenants import TokenBucket  # noqa: E402
from test_serve_router import EMU, run, serving, two_engines  # noqa: E402

TENANTS = {
    "require_key": True,
    "list": [
        {
            "name": "gold",
            "api_keys": ["kg"],
            "slo_class": "interactive",
            "slo": {"ttft_ms": 300, "tpot_ms": 50},
            "slo_max": {"ttft_ms": 3000, "tpot_ms": 500},
            "best_priority": 0,
        },
        {
            "name": "free",
            "api_keys": ["kf"],
            "slo_class": "batch",
            "slo": {"ttft_ms": 5000, "tpot_ms": 300},
            "client_slo": "ignore",
            "priority": 2,
            "best_priority": 2,
            "requests_per_min": 3,
        },
        {"name": "lab", "api_keys": ["kl"], "client_slo": "trust"},
    ],
}


def _slo_of(router, rid):
    r = router.recorder.get(rid).request
    return r.slo.ttft, r.slo.tpot, r.priority, r.task


def test_tenant_slo_policies_priority_caps_and_429():
    async def go():
        async with serving(two_engines(tenants=TENANTS)) as (router, url, s):

            async def post(key, **body):
                hdr = {"Authorization": f"Bearer {key}"} if key else {}
                async with s.post(
                    url + "/v1/completions", json={"prompt": "a", "max_tokens": 1, **body}, headers=hdr
                ) as r:
                    return r.status, r.headers, await r.json()

            st, _, body = await post(None)
            assert st == 401 and "API key" in body["error"]["message"]
            assert (await post("wrong"))[0] == 401
            # gold: capped -- a client asking for 1 ms gets the class's 300 ms; looser is kept, up to slo_max
            assert (await post("kg", slo_ttft_ms=1, priority=-5))[0] == 200
            assert _slo_of(router, 1) == (pytest.approx(0.3), pytest.approx(0.05), 0, "interactive")
            assert (await post("kg", slo_ttft_ms=1000, slo_tpot_ms=9999))[0] == 200
            assert _slo_of(router, 2)[:2] == (pytest.approx(1.0), pytest.approx(0.5))
            # free: client SLOs and classes ignored, priority pinned at its cap
            assert (await post("kf", slo_ttft_ms=1, slo_class="interactive", priority=0))[0] == 200
            assert _slo_of(router, 3) == (pytest.approx(5.0), pytest.approx(0.3), 2, "batch")
            # trust: what the client says
            assert (await post("kl", slo_ttft_ms=123, priority=1))[0] == 200
            assert _slo_of(router, 4)[0] == pytest.approx(0.123) and _slo_of(router, 4)[2] == 1
            # free's bucket holds 3 requests a minute: two left, then 429 with Retry-After
            assert (await post("kf"))[0] == 200 and (await post("kf"))[0] == 200
            st, hdr, body = await post("kf")
            assert st == 429 and int(hdr["Retry-After"]) >= 1 and "requests_per_min" in body["error"]["message"]
            assert (await post("kg"))[0] == 200  # other tenants are not limited by it
            async with s.get(url + "/metrics") as r:
                text = await r.text()
            assert 'slocore_requests_total{outcome="rate_limited",slo_class="batch"} 1.0' in text

    run(go())


def test_tenant_config_errors_name_the_field():
    with pytest.raises(ValueError, match=r"tenants\.list\[0\]\.client_slo"):
        cfgmod.from_dict({"tenants": {"list": [{"name": "a", "client_slo": "maybe"}]}})
    with pytest.raises(ValueError, match="two tenants"):
        cfgmod.from_dict({"tenants": {"list": [{"name": "a", "api_keys": ["k"]}, {"name": "b", "api_keys": ["k"]}]}})
    with pytest.raises(ValueError, match="slo_max"):
        cfgmod.from_dict({"tenants": {"list": [{"name": "a", "slo_max": {"ttft_ms": 1, "tpot_ms": 1}}]}})


def test_token_bucket_refills_at_its_rate():
    t = [0.0]
    b = TokenBucket(60, lambda: t[0])  # one a second, burst 60
    assert b.wait_for(60) == 0
    b.take(60)
    assert b.wait_for(1) == pytest.approx(1.0)
    t[0] = 2.5
    assert b.wait_for(2) == 0 and b.wait_for(3) == pytest.approx(0.5)


def test_admission_sheds_lowest_priority_that_cannot_meet_its_slo():
    t = [100.0]
    pending = {}
    a = Admission(AdmissionConfig(max_queue=4), lambda: pending, lambda: t[0])
    a.check(5, 0.1)  # empty queue: admitted
    pending.update({0: 2, 3: 2})
    for _ in range(10):  # 1 assignment/s over the 10 s window
        a.on_assigned()
    with pytest.raises(Shed) as e:
        a.check(3, 1.0)  # lowest priority, 4 ahead at 1/s > 1 s TTFT
    assert e.value.retry_after == 4
    a.check(3, 10.0)  # can still meet a loose SLO: admitted
    a.check(0, 0.1)  # more urgent than the lowest waiting: admitted past the bound
    pending[3] = 6  # hard bound (2 x 4) reached: everyone is shed
    with pytest.raises(Shed):
        a.check(0, 100.0)
    assert a.shed == 2


def test_overloaded_router_sheds_with_503_and_counts_per_class():
    async def go():
        d = {
            "backends": [{"name": "e0", "emulated": dict(EMU, max_num_seqs=1)}],
            "admission": {"max_queue": 2},
            "slo": {"priorities": {0: {"ttft_ms": 100, "tpot_ms": 100}, 1: {"ttft_ms": 100, "tpot_ms": 100}}},
            "policy": {"name": "least_outstanding"},
        }
        async with serving(d) as (router, url, s):

            async def one(prio):
                body = {"prompt": "a", "max_tokens": 30, "priority": prio}
                async with s.post(url + "/v1/completions", json=body) as r:
                    return r.status, r.headers.get("Retry-After")

            res = await asyncio.gather(*(one(i % 2) for i in range(40)))
            statuses = [st for st, _ in res]
            assert set(statuses) <= {200, 503}, statuses
            assert statuses.count(200) >= 1
            async with s.get(url + "/metrics") as r:
                text = await r.text()
            shed = router.handler.admission.shed
            assert all(ra is not None for st, ra in res if st == 503)
            assert statuses.count(503) == shed >= 1, statuses
            assert 'outcome="shed"' in text

    run(go())
