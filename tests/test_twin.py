"""slocore profile / bench twin against the emulated engine (`slocore engine`, a subprocess):
the fit recovers a known latency model, the profile file round-trips through `slocore
profiles` and simulate(), the simulator tracks the engine, and bad endpoints fail clearly."""

import asyncio
import contextlib
import json
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

from slocore.childenv import child_env  # noqa: E402
from slocore.ports import free_port as _free_port
from slocore.twin import compare, fitmodel, profiler  # noqa: E402
from slocore.twin.client import EngineClient, EngineError, labels_of, parse_metrics, total  # noqa: E402
from slocore.twin.fitmodel import Point  # noqa: E402

TRUTH = {"t_c": 0.004, "a_p": 2e-8, "b_p": 0.0, "c_p": 3e-5, "a_d": 1e-7, "b_d": 2e-4, "ttft_overhead_s": 0.003}


def _points(noise=0.0, seed=0):
    import random

    rng = random.Random(seed)
    pts = [Point("prefill", 0, [(L, 0)], [], first=1) for L in (16, 64, 256, 512, 900)]
    pts += [Point("decode", 0, [], [c] * b) for b in (1, 4, 16, 32) for c in (20, 500)]
    pts += [Point("mixed", 0, [(L, 0)], [30] * b) for b in (4, 16) for L in (128, 512)]
    for p in pts:
        p.seconds = fitmodel.predict(TRUTH, p) * (1 + rng.gauss(0, noise))
    return pts


def test_fit_recovers_the_model_exactly_without_noise():
    res = fitmodel.fit(_points(), fixed_zero=("b_p",))
    for k, v in TRUTH.items():
        assert res["coeffs"][k] == pytest.approx(v, rel=1e-6, abs=1e-12), k
    assert res["rms_rel_error"] < 1e-9 and res["dropped"] == ["b_p"]


def test_fit_is_non_negative_and_reports_residuals():
    pts = _points(noise=0.05, seed=1)
    pts += [Point("decode", 0.0001, [], [10] * 64)]  # an outlier pulling b_d/a_d below zero
    res = fitmodel.fit(pts, fixed_zero=("b_p",))
    assert all(v >= 0 for v in res["coeffs"].values())
    assert len(res["residuals"]) == len(pts) and res["max_rel_error"] > 0.5
    with pytest.raises(ValueError, match="seconds"):
        fitmodel.fit([Point("decode", 0.0, [], [1])])
    with pytest.raises(ValueError, match="nothing measured"):
        fitmodel.fit([])


def test_metrics_parsing_of_vllm_text():
    text = (
        "# TYPE vllm:cache_config_info gauge\n"
        'vllm:cache_config_info{block_size="128",engine="0",kv_cache_memory_bytes="1073741824",'
        'num_gpu_blocks="8192"} 1.0\n'
        "# TYPE vllm:iteration_tokens_total histogram\n"
        'vllm:iteration_tokens_total_bucket{engine="0",le="1.0",model_name="t"} 3.0\n'
        'vllm:iteration_tokens_total_bucket{engine="0",le="+Inf",model_name="t"} 5.0\n'
        'vllm:iteration_tokens_total_count{engine="0",model_name="t"} 5.0\n'
        'vllm:iteration_tokens_total_sum{engine="0",model_name="t"} 70.0\n'
    )
    m = parse_metrics(text)
    assert total(m, "vllm:iteration_tokens_total_count") == 5.0 and total(m, "vllm:iteration_tokens_total_sum") == 70
    info = labels_of(m, "vllm:cache_config_info")
    assert info["num_gpu_blocks"] == "8192" and info["block_size"] == "128"
    kv = profiler._kv(m, 1024, 32)
    assert kv == {"block_size": 128, "num_blocks": 8192, "bytes_per_token": 1024.0, "source": "vllm:cache_config_info"}


def _engine(*extra):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "slocore.cli", "engine", "--port", str(port), *extra],
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return proc, url
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stderr.read().decode()[-2000:]) from None
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("emulated engine did not start")


@pytest.fixture(scope="module")
def emulated():
    proc, url = _engine("--profile", "h100-llama2-7b", "--max-num-seqs", "16")
    yield url
    proc.terminate()
    proc.wait(10)
    proc.stderr.close()


@pytest.fixture(scope="module")
def measured(emulated, tmp_path_factory):
    # Two repeats: the fit takes the faster of each pair (the engine's sleeps only overshoot).
    prof = asyncio.run(
        profiler.measure(emulated, name="emu", token_budget=512, repeats=2, decode_tokens=32, progress=False)
    )
    path = tmp_path_factory.mktemp("prof") / "emu.json"
    path.write_text(json.dumps(prof))
    return prof, path


def test_profile_of_the_emulated_engine_recovers_its_model(measured):
    from slocore.profiles import load_profile

    prof, _ = measured
    truth = load_profile("h100-llama2-7b")["per_request"]
    co = prof["per_request"]
    # The fixed step cost dominates every step of this profile. Loose bounds: the engine's
    # asyncio.sleep only overshoots, by milliseconds on a shared, loaded machine, and how the
    # time of a lone prefill splits between the slope and the front end moves with that noise;
    # so check the step cost and the whole lone prefill of the longest prompt. The twin test
    # below checks the profile as a whole.
    assert truth["t_c"] * 0.8 < co["t_c"] < truth["t_c"] * 2.0
    L = max(q["prefill"][0][0] for q in prof["measured"]["points"] if q["kind"] == "prefill")
    lone = Point("prefill", 1.0, [(L, 0)], [], first=1)
    want = fitmodel.predict(truth, lone)
    assert 0.8 * want < fitmodel.predict({**co, **prof["frontend"]}, lone) < 2.0 * want
    assert prof["engine"]["kind"] == "slocore-emulated" and prof["engine"]["max_num_seqs"] == 16
    assert prof["kv"]["source"] == "slocore_engine_kv_blocks"
    m = prof["measured"]
    assert m["date"] and len(m["points"]) == m["fit"]["points"] >= 15
    assert {q["kind"] for q in m["points"]} == {"prefill", "decode", "mixed"}
    assert all(q["timing"] == "client" for q in m["points"])  # no vLLM histograms here
    assert m["fit"]["rms_rel_error"] < 0.4


def test_measured_profile_is_accepted_like_a_bundled_one(measured, capsys):
    from slocore import cli
    from slocore.sim import simulate, workloads

    prof, path = measured
    assert cli.main(["profiles", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "emu"
    res = simulate(workloads.sharegpt_like(rate=4, n=20, seed=0), profile=str(path), instances=1)
    assert res.summary["finished"] == 20
    assert profiler.points_of(prof)[0].seconds == prof["measured"]["points"][0]["seconds"]


def test_twin_tracks_the_emulated_engine(emulated, measured):
    prof, _ = measured
    a = type(
        "A",
        (),
        dict(
            trace=None,
            workload="sharegpt_like",
            param=["seed=1"],
            n=80,
            max_prompt=512,
            max_output=64,
            ttft_slo_ms=None,
            tpot_slo_ms=None,
        ),
    )
    w, _, _ = compare.prepare(a, prof)
    out = asyncio.run(compare.run_loads(emulated, prof, w, [0.5], progress=False))
    row = out["rows"][0]
    assert row["failed"] == 0 and row["real"]["finished"] == 80
    e = row["errors"]
    # Loose: the engine and the simulator share the model, so only timer noise separates them,
    # except for TTFT, which the twin under-predicts by 11-38 % here (docs/fidelity.md).
    assert abs(e["ttft_p50"]) < 0.5, (e, row)
    for k in ("tpot_p50", "tpot_p90", "e2e_p50"):
        assert abs(e[k]) < 0.35, (k, e, row)
    assert abs(e["attainment_pts"]) < 20, row


@contextlib.asynccontextmanager
async def serving(app):
    """An aiohttp app on a free local port: yields its URL, cleans up after."""
    from aiohttp import web

    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    finally:
        await runner.cleanup()


def test_not_an_engine_and_too_slow_fail_clearly(tmp_path):
    from aiohttp import web

    async def not_engine():
        app = web.Application()

        async def page(request):
            return web.Response(text="<html>hello</html>")

        app.router.add_get("/v1/models", page)
        async with serving(app) as url:
            with pytest.raises(EngineError, match="not an OpenAI-compatible engine"):
                await profiler.measure(url, progress=False)

    asyncio.run(not_engine())
    with pytest.raises(EngineError, match="cannot connect"):
        asyncio.run(profiler.measure(f"http://127.0.0.1:{_free_port()}", progress=False))
    with pytest.raises(EngineError, match="url"):
        EngineClient("localhost:80")
    proc, url = _engine("--profile", "h100-llama2-7b", "--time-scale", "30")  # ~0.25 s per step
    try:
        with pytest.raises(EngineError, match="too slow"):
            asyncio.run(profiler.measure(url, timeout=0.3, progress=False))
        for _ in range(100):  # the abandoned request leaves the engine once it notices
            with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
                if not total(parse_metrics(r.read().decode()), "vllm:num_requests_running"):
                    break
            time.sleep(0.1)
        with pytest.raises(EngineError, match="answers too slowly"):
            asyncio.run(profiler.measure(url, timeout=30.0, max_first_token_s=0.05, progress=False))
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stderr.close()
    from slocore import cli

    assert (
        cli.main(["profile", "--url", f"http://127.0.0.1:{_free_port()}", "-o", str(tmp_path / "x.json"), "--quiet"])
        == 2
    )
    assert not (tmp_path / "x.json").exists()
    # bench twin checks the endpoint before its loads (it sent every request of every load to it)
    dead = f"http://127.0.0.1:{_free_port()}"
    assert cli.main(["bench", "twin", "--url", dead, "--profile", "h100-llama2-7b", "--quiet"]) == 2


def test_frontend_term_shifts_ttft_and_e2e_only():
    from slocore.profiles import load_profile
    from slocore.sim import workloads

    base = dict(load_profile("h100-llama2-7b"), engine={"max_num_seqs": 32, "max_num_batched_tokens": 2048})
    w = workloads.sharegpt_like(rate=3, n=60, seed=4, ttft=0.5, tpot=0.05)
    s0 = compare.simulate(w, dict(base, frontend={"ttft_overhead_s": 0.0}))
    s1 = compare.simulate(w, dict(base, frontend={"ttft_overhead_s": 0.05}))
    # Every arrival shifts by the same 50 ms, so the engine's schedule is the same, shifted.
    for q in ("p50", "p90", "p99"):
        assert s1["ttft"][q] == pytest.approx(s0["ttft"][q] + 0.05, abs=1e-9)
        assert s1["e2e"][q] == pytest.approx(s0["e2e"][q] + 0.05, abs=1e-9)
        assert s1["tpot"][q] == pytest.approx(s0["tpot"][q], abs=1e-12)
    assert s1["ttft_attainment"] <= s0["ttft_attainment"]
    assert compare.engine_kwargs(base)["batch_scheduler"] == ("sarathi_fcfs", {"token_budget": 2048})
    ttft, tpot = compare.default_slos(base, w)
    assert 0 < tpot < ttft and compare.saturation_rate(base, w, 2) == pytest.approx(
        2 * compare.saturation_rate(base, w, 1)
    )


def test_delivery_lag_grows_with_the_instances_stream_rate():
    """The profile's lag term: per token the client gets it k x (the instance's tokens in the
    last RATE_WINDOW_S) after the engine made it, in order. The engine's schedule is unchanged."""
    from slocore.profiles import load_profile
    from slocore.sim import workloads

    base = dict(load_profile("h100-llama2-7b"), engine={"max_num_seqs": 32, "max_num_batched_tokens": 2048})
    w = workloads.sharegpt_like(rate=8, n=80, seed=2, ttft=0.5, tpot=0.05)
    s0 = compare.simulate(w, dict(base, frontend={"ttft_overhead_s": 0.01}))
    k = 2e-6  # 2 ms per 1,000 tokens/s
    s1 = compare.simulate(w, dict(base, frontend={"ttft_overhead_s": 0.01, "ttft_lag_per_token_rate": k}))
    assert s0["delivery_lag_first_mean"] == 0.0 and s1["iterations"] == s0["iterations"]
    # A first token's lag is k x the instance's stream rate then, at most k x its whole rate.
    peak = s0["throughput_tok_s"] * 5  # a generous bound on the 0.25-s rate
    assert 0 < s1["delivery_lag_first_mean"] < k * peak
    assert s1["ttft"]["mean"] == pytest.approx(s0["ttft"]["mean"] + s1["delivery_lag_first_mean"], rel=1e-6)
    assert s1["ttft"]["p50"] > s0["ttft"]["p50"] and s1["e2e"]["mean"] > s0["e2e"]["mean"]
    assert s1["tpot"]["p50"] == pytest.approx(s0["tpot"]["p50"], rel=0.2)  # tokens keep their order and spacing
    assert s1["finished"] == s0["finished"] == len(w)
    # The profiler's estimate: the median of the mixed points' extra front end per token/s.
    pts = [
        Point("mixed", 0.01, [(128, 0)], [24] * 4, detail={"loaded_frontend_s": f, "stream_tok_s": r})
        for f, r in ((0.005, 1000.0), (0.007, 2000.0), (0.050, 2000.0))  # 1, 2 and (a stall) 23.5 ms per 1k tok/s
    ]
    lag = profiler._delivery_lag(pts, idle_s=0.003)
    assert lag["ttft_lag_per_token_rate"] == pytest.approx(2e-6)
    assert profiler._delivery_lag(pts, idle_s=0.1)["ttft_lag_per_token_rate"] == 0.0  # never below 0
    assert profiler._delivery_lag([Point("mixed", 0.01, [(128, 0)], [24])], idle_s=0.003) is None


def test_fit_is_unbiased_under_relative_noise():
    # Relative error taken against the measurement settles low under noise (a slow point costs
    # less than a fast one); against the prediction the fitted times sum to the measured ones.
    import random

    from slocore import _core

    rng = random.Random(3)
    pts = [p for _ in range(6) for p in _points()]
    for p in pts:
        p.seconds = fitmodel.predict(TRUTH, p) * rng.lognormvariate(0, 0.4)
    res = fitmodel.fit(pts, fixed_zero=("b_p",))
    assert res["predicted_over_measured"] == pytest.approx(1.0, abs=0.03)
    feats = [[f for j, f in enumerate(p.features()) if j != 2] for p in pts]  # without b_p's zero column
    start = _core.fit_relative_least_squares(feats, [p.seconds for p in pts])
    old = sum(sum(c * f for c, f in zip(start.coeffs, x)) for x in feats) / sum(p.seconds for p in pts)
    assert old < 0.9  # what the profile used to get: ~exp(-1.5 * 0.4^2) of the time
    truth_mean = sum(fitmodel.predict(TRUTH, p) for p in pts) * 1.08329  # E[lognormal(0, 0.4)]
    assert res["predicted_over_measured"] * sum(p.seconds for p in pts) == pytest.approx(truth_mean, rel=0.1)


def test_decode_experiments_fit_one_step_of_prefill():
    from slocore.twin import design

    plan = design.plan(1024, 32, 2048, repeats=1)
    dec = [e for e in plan if e.kind == "decode"]
    assert {e.batch for e in dec} == {1, 2, 4, 8, 16, 32}
    assert all(e.batch * e.prompt_len <= 2048 for e in dec)  # every prompt prefilled in one step
    assert max(e.prompt_len for e in dec) == 512 and min(e.prompt_len for e in dec if e.batch == 32) == 16


def test_loadgen_counts_a_token_with_empty_text_when_it_arrives():
    # vLLM streams a token whose text is still empty (incomplete UTF-8) as text "": counted by
    # text it is seen only at the end; with return_token_ids (what bench twin asks vLLM for) at once.
    from aiohttp import web

    from slocore.serve import loadgen
    from slocore.sim import workloads

    async def completions(request):
        body = await request.json()
        ids = body.get("return_token_ids")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i, text in enumerate(["", "", "a"]):
            ch = {"index": 0, "text": text, **({"token_ids": [7 + i]} if ids else {})}
            await resp.write(b"data: " + json.dumps({"choices": [ch]}).encode() + b"\n\n")
            await asyncio.sleep(0.3 if i == 1 else 0.0)
        usage = {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}
        await resp.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        return resp

    async def run(extra):
        app = web.Application()
        app.router.add_post("/v1/completions", completions)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        w = workloads.sharegpt_like(rate=1, n=1, seed=0)
        w = w._with(prompt_len=w.prompt_len * 0 + 4, output_len=w.output_len * 0 + 3)
        try:
            out = await loadgen.run(url, w, model="m", progress=False, extra_body=extra)
        finally:
            await runner.cleanup()
        return out["summary"]["ttft"]["p50"]

    assert asyncio.run(run(None)) > 0.25  # counted by text: the first token is seen 0.3 s late
    assert asyncio.run(run(compare.count_by_token_ids({"engine": {"kind": "vllm"}}))) < 0.2
    assert compare.count_by_token_ids({"engine": {"kind": "slocore-emulated"}}) is None


def test_engine_view_and_delivery():
    m0 = {"queue": (1.0, 10.0), "prefill": (0.5, 10.0), "tpot": (0.05, 10.0), "api_ttft": (1.0, 10.0)}
    m1 = {"queue": (1.1, 20.0), "prefill": (0.6, 20.0), "tpot": (0.10, 20.0), "api_ttft": (1.5, 20.0)}  # 20, 5, 50 ms
    real = {"ttft": {"mean": 0.1}}
    sim = {"ttft": {"mean": 0.026}, "tpot": {"mean": 0.004}}
    ev = compare.engine_view(m0, m1, real, sim, frontend=0.006)
    assert ev["real_ttft_mean"] == pytest.approx(0.02) and ev["ttft_mean_err"] == pytest.approx(0.0)
    assert ev["tpot_mean_err"] == pytest.approx(-0.2) and ev["delivery_lag_s"] == pytest.approx(0.074)
    assert ev["api_ttft_mean"] == pytest.approx(0.05)
    assert compare.engine_view(None, m1, real, sim, 0.0) is None
    assert "real_steps" not in ev  # no step counts, no wall time: no batch view
    m0 |= {"inference": (10.0, 10.0), "steps": (900.0, 100.0)}
    m1 |= {"inference": (14.0, 20.0), "steps": (1900.0, 300.0)}
    sim |= {"iterations": 150, "e2e": {"mean": 0.206, "count": 10}, "duration_s": 2.0}
    ev = compare.engine_view(m0, m1, real, sim, frontend=0.006, wall_s=2.0)
    assert ev["real_steps"] == 200 and ev["sim_steps"] == 150
    assert ev["real_running_mean"] == pytest.approx(2.0) and ev["real_waiting_mean"] == pytest.approx(0.05)
    assert ev["sim_in_system_mean"] == pytest.approx(1.0)  # 10 requests x 0.2 s over 2 s
    eng = {"timing": "engine"}
    pts = [Point("decode", 0.01, [], [1], detail=dict(eng, client_s=c)) for c in (0.0101, 0.0, 0.001, 0.0099)]
    d = profiler._delivery(pts)
    assert d["decode_points"] == 4 and d["burst_fraction"] == 0.5
    assert profiler._delivery([Point("prefill", 0.01, [(16, 0)], [])]) is None


def test_saturation_uses_the_measured_full_batch_step():
    from slocore.sim import workloads

    co = {"t_c": 0.003, "a_p": 0.0, "b_p": 0.0, "c_p": 1e-5, "a_d": 0.0, "b_d": 1e-4}
    base = {"per_request": co, "engine": {"max_num_seqs": 32}}
    w = workloads.sharegpt_like(rate=3, n=60, seed=4, ttft=0.5, tpot=0.05)
    fitted = compare.saturation_rate(base, w)
    assert compare.full_batch_step(base, 100.0) == pytest.approx(0.003 + 32 * 1e-4)  # no points: the fit
    pts = [{"kind": "decode", "decode_batch": 32, "decode_context": 48.0, "seconds": s} for s in (0.008, 0.007, 0.02)]
    pts += [{"kind": "decode", "decode_batch": 16, "decode_context": 48.0, "seconds": 0.001}]  # not the full batch
    measured = dict(base, measured={"points": pts})
    assert compare.full_batch_step(measured, 100.0) == pytest.approx(0.008)  # the median at B = 32
    assert compare.saturation_rate(measured, w) < fitted  # 8 ms against the fitted 6.2 ms
    co_ctx = dict(co, a_d=1e-6)  # moved to the asked context by the fitted a_d
    assert compare.full_batch_step(dict(measured, per_request=co_ctx), 148.0) == pytest.approx(0.008 + 32 * 1e-4)


def test_a_stream_is_sent_again_when_the_engine_drops_the_connection_first():
    """A pooled connection the engine closed as the request went out (its keep-alive ran
    out) costs a resend, not the profile; an engine that keeps dropping still fails clearly."""
    from aiohttp import web

    from slocore.serve.config import STALE_RETRIES

    chunk = b'data: {"choices": [{"token_ids": [7]}]}\n\n'

    async def run(drops: int):
        calls = []
        app = web.Application()

        async def complete(request):
            await request.read()
            calls.append(1)
            if len(calls) <= drops:
                request.transport.close()  # the client sees ServerDisconnectedError
                return web.Response()
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for _ in range(3):
                await resp.write(chunk)
            await resp.write(b'data: {"choices": [], "usage": {"completion_tokens": 3}}\n\ndata: [DONE]\n\n')
            return resp

        app.router.add_post("/v1/completions", complete)
        async with serving(app) as url, EngineClient(url, model="m") as c:
            return await c.stream(8, 3), len(calls)

    st, calls = asyncio.run(run(drops=STALE_RETRIES))
    assert len(st.tokens) == 3 and calls == STALE_RETRIES + 1
    with pytest.raises(EngineError, match="ServerDisconnectedError"):
        asyncio.run(run(drops=STALE_RETRIES + 1))


def one_request_per_connection(served: dict):
    """An app whose /v1/completions streams one token for a connection's first request (after
    0.1 s, so that concurrent first requests open a connection each) and closes a reused
    connection unanswered: an engine that closed every idle connection at once. `served`
    counts the requests each connection carried."""
    from aiohttp import web

    async def complete(request):
        await request.read()
        conn = id(request.transport)
        served[conn] = served.get(conn, 0) + 1
        if served[conn] > 1:
            request.transport.close()
            return web.Response()
        await asyncio.sleep(0.1)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b'data: {"choices": [{"text": "x", "token_ids": [7]}]}\n\ndata: [DONE]\n\n')
        return resp

    app = web.Application()
    app.router.add_post("/v1/completions", complete)
    return app


def test_a_resend_goes_out_on_a_new_connection():
    """An engine that closed every idle connection at once: a resend on the pool would meet
    another closed one; it goes out on a new connection instead and is answered."""
    from slocore.serve.config import STALE_RETRIES

    served = {}  # connection -> requests it carried

    async def run():
        async with serving(one_request_per_connection(served)) as url, EngineClient(url, model="m") as c:
            await asyncio.gather(*(c.stream(8, 1) for _ in range(STALE_RETRIES + 1)))
            return await c.stream(8, 1)

    st = asyncio.run(asyncio.wait_for(run(), 30))
    assert len(st.tokens) == 1
    assert sorted(served.values()) == [1] * (STALE_RETRIES + 1) + [2]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CPU affinity through /proc (Linux)")
def test_cpu_pin_gives_the_engine_processes_their_own_cpu():
    """A stand-in server: a process whose child calls itself VLLM::Worker (as vLLM's worker
    does). The child goes to the engine's CPU, the parent to the others; a tree without an
    engine process is refused before anything moves."""
    import os

    from slocore.twin import cpu_pin, cpu_wait

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    engine, other = cpu_pin.split()
    child = "open('/proc/self/comm', 'w').write('VLLM::Worker'); import time; time.sleep(60)"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {child!r}]); time.sleep(60)",
        ]
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            kids = cpu_wait.process_tree(parent.pid)[1:]
            if kids and cpu_pin._comm(kids[0]) == "VLLM::Worker":
                break
            time.sleep(0.05)
        else:
            pytest.fail("the stand-in worker did not start")
        lone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            with pytest.raises(RuntimeError, match="no vLLM engine process"):
                cpu_pin.pin_engine(lone.pid, engine, other)
            assert os.sched_getaffinity(lone.pid) == os.sched_getaffinity(0)  # not moved
        finally:
            lone.kill()
            lone.wait()
        for bad in ((set(), other), (engine, {os.cpu_count() + 7})):  # refused, nothing moved
            with pytest.raises(ValueError, match="cpus: expected CPUs among"):
                cpu_pin.pin_engine(parent.pid, *bad)
        assert os.sched_getaffinity(kids[0]) == os.sched_getaffinity(0)
        assert cpu_pin.main([str(parent.pid), "3-1", "1"]) == 2
        where = cpu_pin.pin_engine(parent.pid, engine, other)
        assert where == {parent.pid: "other", kids[0]: "engine"}
        assert os.sched_getaffinity(kids[0]) == engine and os.sched_getaffinity(parent.pid) == other
        assert cpu_pin.main([str(parent.pid), "0", "1"]) == 0 and cpu_pin.main([str(lone.pid)]) == 2
    finally:
        for pid in cpu_wait.process_tree(parent.pid)[::-1]:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        parent.wait()
