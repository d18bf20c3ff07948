"""Router + emulated engine, all in one event loop (fast: engines run at time_scale 0.2)."""

import asyncio
import contextlib
import json

import pytest

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

from aiohttp import web  # noqa: E402

import slocore  # noqa: E402
from slocore.ports import free_port  # noqa: E402
from slocore.serve import config as cfgmod  # noqa: E402
from slocore.serve.eventloop import serve_app  # noqa: E402
from slocore.serve.router import Router  # noqa: E402

EMU = {"profile": "h100-llama2-7b", "time_scale": 0.2}


@contextlib.asynccontextmanager
async def serving(d: dict):
    cfg = cfgmod.from_dict(d)
    router = Router(cfg)
    runner, url = await serve_app(router.app())
    async with aiohttp.ClientSession() as s:
        try:
            yield router, url, s
        finally:
            await runner.cleanup()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def two_engines(policy="round_robin", **extra):
    d = {
        "backends": [{"name": "e0", "emulated": dict(EMU)}, {"name": "e1", "emulated": dict(EMU)}],
        "policy": {"name": policy},
        "poll_interval_s": 0.2,
    }
    d.update(extra)
    return d


async def sse_events(resp):
    out = []
    async for line in resp.content:
        if line.startswith(b"data:"):
            data = line[5:].strip()
            out.append(data.decode() if data == b"[DONE]" else json.loads(data))
    return out


def test_completions_chat_stream_health_models():
    async def go():
        async with serving({"policy": "least_outstanding"}) as (router, url, s):  # embedded default engine
            async with s.get(url + "/health") as r:
                assert r.status == 200 and (await r.json())["healthy_backends"] == 1
            async with s.get(url + "/v1/models") as r:
                assert (await r.json())["data"][0]["id"] == "slocore-emulated"
            async with s.post(url + "/v1/completions", json={"prompt": "hello world", "max_tokens": 5}) as r:
                body = await r.json()
                assert r.status == 200, body
                assert body["usage"]["completion_tokens"] == 5 and body["choices"][0]["finish_reason"] == "length"
                assert len(body["choices"][0]["text"].split()) == 5
            async with s.post(
                url + "/v1/completions", json={"prompt": [1, 2, 3], "max_tokens": 4, "stream": True}
            ) as r:
                ev = await sse_events(r)
                assert ev[-1] == "[DONE]" and sum(1 for e in ev[:-1] if e["choices"]) == 4
                assert "usage" not in ev[-2]  # the client did not ask for usage
            async with s.post(
                url + "/v1/chat/completions",
                json={
                    "messages": [{"role": "user", "content": "hi"}],
                    "max_tokens": 3,
                    "stream": True,
                    "stream_options": {"include_usage": True},
                },
            ) as r:
                ev = await sse_events(r)
                assert ev[0]["choices"][0]["delta"]["role"] == "assistant"
                assert ev[-2]["usage"]["completion_tokens"] == 3
            async with s.post(
                url + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
            ) as r:
                body = await r.json()
                assert body["object"] == "chat.completion" and body["choices"][0]["message"]["content"]
            assert router.recorder.get(1).token_times.size == 5

    run(go())


def test_metrics_endpoint_has_attainment_histograms_queues_decisions():
    async def go():
        async with serving(two_engines(limits={"slo_classes": ["chat"]})) as (router, url, s):  # a known class
            for _i in range(4):
                async with s.post(
                    url + "/v1/completions", json={"prompt": "x " * 20, "max_tokens": 3, "slo_class": "chat"}
                ) as r:
                    assert r.status == 200
            async with s.get(url + "/metrics") as r:
                text = await r.text()
            for needle in (
                'slocore_slo_attainment{slo_class="chat"} 1.0',
                "slocore_ttft_seconds_bucket",
                "slocore_tpot_seconds_bucket",
                'slocore_queue_size{backend="",queue="policy"}',
                'slocore_queue_size{backend="e0",queue="backend_running"}',
                "slocore_decisions_total",
                "slocore_decisions_per_second",
                "slocore_decision_latency_seconds_bucket",
                'slocore_backend_healthy{backend="e1"} 1.0',
            ):
                assert needle in text, needle

    run(go())


@pytest.mark.parametrize("policy", slocore.global_policy_names())
def test_every_registered_policy_serves(policy):
    async def go():
        async with serving(two_engines(policy)) as (router, url, s):

            async def one(i):
                async with s.post(url + "/v1/completions", json={"prompt": "y " * (10 + i), "max_tokens": 4}) as r:
                    return r.status

            assert await asyncio.gather(*(one(i) for i in range(8))) == [200] * 8
            served = [b.served for b in router.backends.values()]
            assert sum(served) == 8
            if policy == "round_robin":
                assert served == [4, 4]
            assert all(not b.inflight for b in router.backends.values())

    run(go())


def test_slo_from_fields_headers_and_priority_map():
    async def go():
        d = two_engines(
            slo={"default": {"ttft_ms": 1000, "tpot_ms": 80}, "priorities": {1: {"ttft_ms": 5000, "tpot_ms": 300}}}
        )
        async with serving(d) as (router, url, s):
            await (await s.post(url + "/v1/completions", json={"prompt": "a", "max_tokens": 2})).read()
            await (
                await s.post(
                    url + "/v1/completions", json={"prompt": "a", "max_tokens": 2}, headers={"x-priority": "1"}
                )
            ).read()
            await (
                await s.post(
                    url + "/v1/completions",
                    json={"prompt": "a", "max_tokens": 2, "slo_ttft_ms": 250},
                    headers={"x-slo-tpot-ms": "40"},
                )
            ).read()
            r1, r2, r3 = (router.recorder.get(i).request for i in (1, 2, 3))
            assert (r1.slo.ttft, r1.slo.tpot, r1.priority) == (1.0, 0.08, 0)
            assert (r2.slo.ttft, r2.slo.tpot, r2.priority, r2.task) == (5.0, 0.3, 1, "priority1")
            assert (r3.slo.ttft, r3.slo.tpot) == (0.25, 0.04)

    run(go())


def test_malformed_requests_get_4xx_with_message():
    async def go():
        async with serving(two_engines()) as (router, url, s):
            cases = [
                (b"{not json", {}, "not valid JSON"),
                (json.dumps([1, 2]).encode(), {}, "JSON object"),
                (json.dumps({"max_tokens": 3}).encode(), {}, "prompt: missing"),
                (json.dumps({"prompt": "a", "max_tokens": 0}).encode(), {}, "max_tokens"),
                (json.dumps({"prompt": "a", "stream": "yes"}).encode(), {}, "stream"),
                (json.dumps({"prompt": {"a": 1}}).encode(), {}, "prompt: must be"),
                (json.dumps({"prompt": "a"}).encode(), {"x-slo-ttft-ms": "soon"}, "x-slo-ttft-ms"),
                (json.dumps({"prompt": "a", "slo_tpot_ms": -5}).encode(), {}, "slo_tpot_ms"),
                (json.dumps({"prompt": "a", "priority": "high"}).encode(), {}, "priority"),
            ]
            for raw, hdr, needle in cases:
                async with s.post(url + "/v1/completions", data=raw, headers=hdr) as r:
                    body = await r.json()
                    assert r.status == 400, (raw, body)
                    assert needle in body["error"]["message"], (needle, body)
            async with s.post(url + "/v1/chat/completions", json={"messages": []}) as r:
                assert r.status == 400 and "messages" in (await r.json())["error"]["message"]
            async with s.get(url + "/v1/completions") as r:
                assert r.status == 405
            # the router still serves after all that
            async with s.post(url + "/v1/completions", json={"prompt": "ok", "max_tokens": 2}) as r:
                assert r.status == 200

    run(go())


def test_config_errors_name_the_field():
    bad = [
        ({"backends": [{"name": "a", "url": "ftp://x"}]}, "url"),
        ({"backends": [{"name": "a"}]}, "exactly one of url or emulated"),
        ({"backends": [{"name": "a", "url": "http://x", "role": "boss"}]}, "role"),
        ({"backends": [{"name": "a", "url": "http://x", "role": "prefill"}]}, "P/D"),
        ({"policy": {"params": {}}}, "policy"),
        ({"retries": -1}, "retries"),
        ({"slo": {"priorities": {"high": {"ttft_ms": 1, "tpot_ms": 1}}}}, "priorities"),
        ({"colour": 1}, "unknown key"),
    ]
    for d, needle in bad:
        with pytest.raises(ValueError, match=needle):
            cfgmod.from_dict(d)
    with pytest.raises(ValueError, match="no_such_policy"):
        Router(cfgmod.from_dict({"policy": "no_such_policy"}))


def test_yaml_config_file(tmp_path):
    p = tmp_path / "serve.yaml"
    p.write_text(
        "backends:\n  - {name: e0, emulated: {time_scale: 0.5}}\n  - {name: v0, url: 'http://127.0.0.1:1'}\n"
        "policy: {name: least_tokens, params: {}}\nslo:\n  default: {ttft_ms: 500, tpot_ms: 50}\n"
        "admin_token: t0k\n"
    )
    c = cfgmod.load(p)
    assert [b.name for b in c.backends] == ["e0", "v0"] and c.policy.name == "least_tokens"
    assert c.default_slo.ttft_ms == 500 and c.admin_token == "t0k"


def test_dead_engine_requests_retried_elsewhere():
    async def go():
        d = two_engines()
        d["backends"][0] = {"name": "dead", "url": f"http://127.0.0.1:{free_port()}"}
        async with serving(d) as (router, url, s):

            async def one(i, stream):
                async with s.post(
                    url + "/v1/completions", json={"prompt": "z", "max_tokens": 3, "stream": stream}
                ) as r:
                    return r.status, (await sse_events(r) if stream else await r.json())

            res = await asyncio.gather(*(one(i, i % 2 == 0) for i in range(6)))
            assert all(st == 200 for st, _ in res), res
            assert router.backends["e1"].served == 6 and router.backends["dead"].healthy is False
            async with s.get(url + "/metrics") as r:
                text = await r.text()
            assert 'slocore_backend_healthy{backend="dead"} 0.0' in text

    run(go())


def test_engine_dying_mid_request():
    async def go():
        d = two_engines(retries=1)
        d["backends"][0]["emulated"]["fault"] = "die_after:2"
        async with serving(d) as (router, url, s):
            # non-streaming: nothing reached the client yet -> retried on e1, succeeds
            async with s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 6}) as r:
                body = await r.json()
                assert r.status == 200 and body["usage"]["completion_tokens"] == 6, body
            assert router.metrics.retries._value.get() == 1
            assert router.recorder.get(1).token_times.size == 6  # the failed attempt's tokens are not counted

    run(go())

    async def go_stream():
        d = {"backends": [{"name": "e0", "emulated": dict(EMU, fault="die_after:2")}], "retries": 2}
        async with serving(d) as (router, url, s):
            async with s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 6, "stream": True}) as r:
                ev = await sse_events(r)
            assert ev[-1] == "[DONE]" and "error" in ev[-2], ev
            assert "after output reached the client" in ev[-2]["error"]["message"]
            assert len(router.recorder.records()) == 1 and router.recorder.get(1).reason
            # the only engine is dead now: a new request fails fast with 503, it does not hang
            async with s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 2}) as r:
                assert r.status == 503 and "no healthy" in (await r.json())["error"]["message"]

    run(go_stream())


def test_hung_engine_times_out_with_clear_error():
    async def go():
        d = {
            "backends": [{"name": "e0", "emulated": dict(EMU, fault="hang_after:2")}],
            "retries": 0,
            "timeouts": {"idle_s": 0.5, "first_token_s": 0.5},
        }
        async with serving(d) as (router, url, s):
            async with s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 8, "stream": True}) as r:
                ev = await sse_events(r)
            assert "no output for 0.5 s" in ev[-2]["error"]["message"], ev
            assert not router.backends["e0"].inflight
            router.pool._quarantine_until.clear()
            router.backends["e0"].healthy = True
            # non-streaming: the engine's whole answer must come within first_token_s + idle_s
            async with s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 8}) as r:
                body = await r.json()
            assert r.status == 504 and "no answer within 1 s" in body["error"]["message"], body
            assert not router.backends["e0"].inflight

    run(go())


def test_silent_engine_times_out_on_the_first_token():
    """An engine that answers 200 and then sends nothing: the first-token timeout ends it."""

    async def health(request):
        return web.Response(text="ok")

    async def metrics(request):
        return web.Response(text="")

    done = asyncio.Event()  # set when the test is over: the engine stays silent until then

    async def completions(request):
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await asyncio.wait_for(done.wait(), 30)
        return resp

    async def go():
        app = web.Application()
        app.router.add_get("/health", health)
        app.router.add_get("/metrics", metrics)
        app.router.add_post("/v1/completions", completions)
        runner, eng = await serve_app(app)
        d = {
            "backends": [{"name": "e0", "url": eng}],
            "retries": 0,
            "timeouts": {"idle_s": 0.5, "first_token_s": 0.5},
        }
        try:
            async with serving(d) as (router, url, s):
                async with s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 8, "stream": True}) as r:
                    body = await r.json()
                assert r.status == 504 and "no output for 0.5 s (first token)" in body["error"]["message"], body
                assert not router.backends["e0"].inflight
        finally:
            done.set()
            await runner.cleanup()

    run(go())


def test_a_stream_longer_than_the_timeouts_is_not_cut():
    """The watchdog (one timer per stream) re-arms while tokens keep coming: 40 tokens
    ~0.1 s apart outlast first_token_s and idle_s twice over."""

    async def go():
        slow = dict(EMU, time_scale=10)
        d = {"backends": [{"name": "e0", "emulated": slow}], "timeouts": {"idle_s": 2.0, "first_token_s": 2.0}}
        async with serving(d) as (router, url, s):
            req = {"prompt": "z", "max_tokens": 40, "ignore_eos": True, "stream": True}
            async with s.post(url + "/v1/completions", json=req) as r:
                ev = await sse_events(r)
            assert ev[-1] == "[DONE]" and not any("error" in e for e in ev[:-1] if isinstance(e, dict)), ev[-3:]
            assert sum(len(e["choices"]) for e in ev[:-1] if isinstance(e, dict)) == 40

    run(go())


def test_admin_endpoints_need_token():
    async def go():
        async with serving(two_engines()) as (router, url, s):
            async with s.get(url + "/admin/state") as r:
                assert r.status == 403 and "disabled" in (await r.json())["error"]["message"]
        async with serving(two_engines(admin_token="s3cret")) as (router, url, s):
            async with s.get(url + "/admin/state") as r:
                assert r.status == 401
            async with s.get(url + "/admin/state", headers={"Authorization": "Bearer nope"}) as r:
                assert r.status == 401
            ok = {"Authorization": "Bearer s3cret"}
            async with s.get(url + "/admin/state", headers=ok) as r:
                st = await r.json()
                assert r.status == 200 and {b["name"] for b in st["backends"]} == {"e0", "e1"}
                assert st["policies"]["colocated"]["name"] == "round_robin"
            async with s.post(url + "/admin/backends", headers=ok, json={"name": "e2", "url": "notaurl"}) as r:
                assert r.status == 400 and "url" in (await r.json())["error"]["message"]
            e1url = router.backends["e1"].url
            async with s.post(url + "/admin/backends", headers=ok, json={"name": "e2", "url": e1url}) as r:
                assert r.status == 201
            async with s.delete(url + "/admin/backends/e0", headers=ok) as r:
                assert r.status == 200
            async with s.delete(url + "/admin/backends/e0", headers=ok) as r:
                assert r.status == 404
            assert set(router.backends) == {"e1", "e2"}
            for _ in range(4):
                async with s.post(url + "/v1/completions", json={"prompt": "q", "max_tokens": 2}) as r:
                    assert r.status == 200
            assert router.backends["e2"].served == 2

    run(go())


def test_pd_mode_prefill_then_decode_with_kv_params():
    async def go():
        d = {
            "backends": [
                {"name": "p0", "role": "prefill", "emulated": dict(EMU)},
                {"name": "d0", "role": "decode", "emulated": dict(EMU)},
                {"name": "d1", "role": "decode", "emulated": dict(EMU)},
            ],
            "prefill_policy": "round_robin",
            "decode_policy": {"name": "least_outstanding"},
        }
        async with serving(d) as (router, url, s):
            seen = []
            for _eng_runner, eng in router._engines:
                orig = eng.submit

                def spy(plen, olen, prefill_only=False, prefilled=False, _o=orig, _n=eng.engine_id, **kw):
                    seen.append((_n, prefill_only, prefilled))
                    return _o(plen, olen, prefill_only, prefilled, **kw)

                eng.submit = spy
            for stream in (False, True):
                async with s.post(
                    url + "/v1/completions", json={"prompt": "w " * 200, "max_tokens": 5, "stream": stream}
                ) as r:
                    assert r.status == 200
                    if stream:
                        ev = await sse_events(r)
                        assert sum(1 for e in ev[:-1] if e.get("choices")) == 5
                    else:
                        assert (await r.json())["usage"]["completion_tokens"] == 5
            assert router.backends["p0"].served == 2
            assert router.backends["d0"].served + router.backends["d1"].served == 2
            assert [x[1:] for x in seen] == [(True, False), (False, True)] * 2

    run(go())


def test_loadgen_reports_simulator_metrics():
    from slocore.serve import loadgen
    from slocore.sim.workloads import make_workload

    async def go():
        async with serving(two_engines("least_tokens")) as (router, url, s):
            w = make_workload("sharegpt_like", rate=40.0, n=30, seed=1)
            out = await loadgen.run(url, w, progress=False, max_output=24, max_prompt=256)
            return out, router

    out, router = run(go())
    s = out["summary"]
    assert s["requests"] == 30 and s["finished"] == 30 and not out["errors"]
    for k in ("attainment", "ttft", "tpot", "tbt", "e2e", "throughput_tok_s", "tdg_ratio", "attainment_by_task"):
        assert k in s
    assert s["ttft"]["p50"] > 0 and s["output_tokens"] == sum(
        min(int(x), 24) for x in make_workload("sharegpt_like", rate=40.0, n=30, seed=1).output_len
    )
    assert "SLO attainment" in loadgen.table(out, "t")


def test_client_disconnect_mid_stream_frees_the_request():
    async def go():
        async with serving(two_engines()) as (router, url, s):
            r = await s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 400, "stream": True})
            await r.content.readline()
            r.close()  # the client goes away mid-stream
            for _ in range(100):
                if not any(b.inflight for b in router.backends.values()):
                    break
                await asyncio.sleep(0.05)
            assert not any(b.inflight for b in router.backends.values())
            assert router.recorder.get(1).reason == "client disconnected"
            async with s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 2}) as r2:
                assert r2.status == 200

    run(go())


@pytest.mark.skipif(
    __import__("slocore.serve.dispatch").serve.dispatch.priority_mapper_class() is None,
    reason="this build has no PriorityMapper (HFX)",
)
def test_priority_to_slo_mapper():
    async def go():
        d = two_engines(slo={"mapper": {"ttft_base": [0.5, 5.0], "tpot_base": [0.05, 0.5], "window": 50}})
        async with serving(d) as (router, url, s):
            for _i in range(6):
                for prio in (0, 1):
                    async with s.post(
                        url + "/v1/completions",
                        json={"prompt": "m", "max_tokens": 3},
                        headers={"x-priority": str(prio)},
                    ) as r:
                        assert r.status == 200
            async with s.post(
                url + "/v1/completions", json={"prompt": "m", "max_tokens": 3, "priority": 1, "slo_ttft_ms": 123}
            ) as r:
                assert r.status == 200
            async with s.post(url + "/v1/completions", json={"prompt": "m", "max_tokens": 3, "priority": 7}) as r:
                assert r.status == 400 and "priority" in (await r.json())["error"]["message"]
            m = router.mapper
            assert len(m) == 13  # every finished request fed the window
            for rid in range(1, 13):
                req = router.recorder.get(rid).request
                lo, hi = m.bounds_ttft(req.priority)
                assert req.slo.ttft <= hi + 1e-9 and req.slo.ttft > 0
                lo, hi = m.bounds_tpot(req.priority)
                assert req.slo.tpot <= hi + 1e-9 and req.slo.tpot > 0
            assert router.recorder.get(13).request.slo.ttft == 0.123  # an explicit SLO wins

    run(go())


def test_mapper_config_without_priority_mapper_is_a_clear_error(monkeypatch):
    import slocore.serve.router as rt

    monkeypatch.setattr(rt, "priority_mapper_class", lambda: None)
    with pytest.raises(ValueError, match="no PriorityMapper"):
        Router(cfgmod.from_dict({"slo": {"mapper": True}}))


def test_pd_forwards_the_clients_body_priority_to_both_engines():
    """vLLM's own --scheduling-policy priority reads the body's `priority`: in P/D it reaches
    the prefill and the decode engine as the client sent it. A priority sent only as the
    x-priority header stays the router's (in vllm_xargs, for the slocore plugin): vLLM's
    field is left unset, as a server without priority scheduling needs."""
    bodies = {"prefill": [], "decode": []}

    def engine(role):
        async def health(request):
            return web.Response(text="ok")

        async def metrics(request):
            return web.Response(text="")

        async def completions(request):
            body = await request.json()
            bodies[role].append(body)
            if role == "prefill":
                return web.json_response(
                    {"choices": [{"text": "x", "index": 0, "finish_reason": "length"}], "kv_transfer_params": {"k": 1}}
                )
            text = {"choices": [{"text": "y", "index": 0, "finish_reason": "length"}]}
            return web.json_response({**text, "usage": {"prompt_tokens": 1, "completion_tokens": 2}})

        app = web.Application()
        app.router.add_get("/health", health)
        app.router.add_get("/metrics", metrics)
        app.router.add_post("/v1/completions", completions)
        return app

    async def go():
        (pr, purl), (dr, durl) = [await serve_app(engine(role)) for role in ("prefill", "decode")]
        d = {
            "backends": [
                {"name": "p", "url": purl, "role": "prefill"},
                {"name": "d", "url": durl, "role": "decode"},
            ],
            "prefill_policy": "round_robin",
            "decode_policy": "round_robin",
            "retries": 0,
        }
        try:
            async with serving(d) as (router, url, s):
                async with s.post(url + "/v1/completions", json={"prompt": "a", "max_tokens": 2, "priority": 1}) as r:
                    assert r.status == 200, await r.text()
                headers = {"x-priority": "1"}
                async with s.post(url + "/v1/completions", json={"prompt": "a", "max_tokens": 2}, headers=headers) as r:
                    assert r.status == 200, await r.text()
        finally:
            await pr.cleanup()
            await dr.cleanup()
        for role in ("prefill", "decode"):
            in_body, in_header = bodies[role]
            assert in_body["priority"] == 1 and in_body["vllm_xargs"]["priority"] == 1, (role, in_body)
            assert "priority" not in in_header and in_header["vllm_xargs"]["priority"] == 1, (role, in_header)

    run(go())
