"""`slocore bench live`: the paired statistics on synthetic input, the traces' prefix sharing,
and a short end-to-end run on emulated engines (`slocore engine` processes)."""

import json
import math

import numpy as np
import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

from slocore.live_bench import stats, traces  # noqa: E402
from slocore.live_bench.stacks import LiveStack, resolve  # noqa: E402


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
    argv += ["--profile", "h100-llama2-7b", "-o", str(out), "--quiet"]
    assert cli.main(argv) == 0
    res = json.loads((out / "live.json").read_text())
    t = res["settings"]["default"]["traces"]["two_class"]
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
