"""The goodput search (sim/goodput.py): the bisection finds a known threshold on synthetic
monotone attainment curves (a fake runner), the pruning is exact, the premise that a
baseline's runs do not depend on the predictor error holds, and `slocore bench goodput` runs a
tiny configuration end to end. No timing is asserted."""

import json
import math
from pathlib import Path

import pytest

from slocore import cli
from slocore.sim import goodput, matrix, stacks


@pytest.mark.parametrize("threshold", [0.07, 0.3, 0.999, 1.0, 1.013, 1.37, 2.0, 2.9, 3.99])
def test_search_brackets_a_known_threshold(threshold):
    probed = []

    def ok(x):
        probed.append(x)
        return x <= threshold

    r = goodput.search(ok)
    assert not r["capped"] and not r["pruned"]
    assert r["load"] <= threshold < r["upper"]
    assert r["upper"] / r["load"] <= goodput.GOODPUT_RESOLUTION * (1 + 1e-12)
    assert probed[0] == goodput.GOODPUT_START and len(probed) == len(set(probed))


def test_search_ends():
    assert goodput.search(lambda x: True) == {
        "load": goodput.GOODPUT_MAX,
        "upper": None,
        "capped": True,
        "pruned": False,
    }
    r = goodput.search(lambda x: False)
    assert r["load"] is None and r["upper"] == goodput.GOODPUT_MIN and not r["pruned"]
    assert goodput.search(lambda x: x < 1.5, start=2.0, prune_below_start=True) == {
        "load": None,
        "upper": 2.0,
        "capped": False,
        "pruned": True,
    }
    probed = []
    r = goodput.search(lambda x: probed.append(x) or x <= 1.5, start=1.47, upper_hint=1.5)
    assert probed[:2] == [1.47, 1.5] and r["load"] == 1.5  # the hint is probed first
    with pytest.raises(ValueError, match="lo_min"):
        goodput.search(lambda x: True, start=5.0)


def test_decide_is_exact_on_partial_seeds():
    assert goodput.decide([0.69], 3) is False  # 0.69 + 2 < 2.7
    assert goodput.decide([0.7], 3) is None
    assert goodput.decide([0.95, 0.75], 3) is None
    assert goodput.decide([0.95, 0.74], 3) is False
    assert goodput.decide([0.9, 0.9, 0.9], 3) is True
    assert goodput.decide([0.9, 0.9, 0.89], 3) is False
    assert goodput.decide([1.0, 1.0], 2) is True
    assert goodput.decide([], 3) is None


# A fake world: each preset's mean attainment falls linearly past its own knee (x capacity),
# seeds spread it a little. Monotone in load by construction.
KNEES = {
    "slocore": 1.62,
    "least_outstanding+vllm_priority": 1.07,
    "vllm_priority": 1.21,
    "rr+sarathi_fcfs": 0.55,
    "rr+edf": 1.15,
    "scorpio": 1.3,  # uses a latency model: runs under every error; the strongest in the fake world
}


def _fake_att(preset, load, seed):
    return max(0.0, min(1.0, 0.93 - 0.8 * (load - KNEES[preset]) + 0.01 * (seed - 1)))


def _true_goodput(preset, seeds=(0, 1, 2)):
    # Mean over seeds >= 0.9 <=> 0.93 - 0.8 (load - knee) >= 0.9 (the seed terms cancel).
    return KNEES[preset] + 0.03 / 0.8


@pytest.fixture
def fake_runs(monkeypatch):
    calls = []

    def run_job(job):
        calls.append(job)
        return job, {
            "attainment": _fake_att(job.preset, job.load, job.seed),
            "ttft_p99": 0.0,
            "tpot_p99": 0.0,
            "cost": 0.0,
            "finished": job.n,
            "requests": job.n,
            "wall_s": 0.0,
        }

    monkeypatch.setattr(matrix, "run_job", run_job)
    return calls


CAPS = {"hfx_4task": {"req_s": 50.0, "rate_arg_per_req_s": 1.0, "stack": "fake"}}


def _fake_cfg(**kw):
    return goodput.GoodputConfig(stacks=tuple(KNEES), workloads=("hfx_4task",), processes=1, capacities=CAPS, **kw)


def test_fake_world_goodput_and_pruning_exact(fake_runs):
    pruned = goodput.run_goodput(_fake_cfg(), progress=False)
    n_pruned = len(fake_runs)
    full = goodput.run_goodput(_fake_cfg(prune=False), progress=False)
    assert n_pruned < len(fake_runs) - n_pruned  # pruning saved runs
    for g in (pruned, full):
        rows = {(r["error"], r["preset"]): r for r in g["results"]}
        assert set(rows) == {(e, p) for e in ("exact", "pm20") for p in KNEES}
        for (e, p), r in rows.items():
            assert r["probes"] and all(0 <= a <= 1 for pr in r["probes"] for a in pr["attainment"])
            if r["pruned"]:
                assert g is pruned and r["goodput_load"] is None and r["upper_load"] <= _true_goodput("scorpio")
                assert r["upper_load"] > _true_goodput(p)  # pruned only when really below
                continue
            t = _true_goodput(p)
            assert r["goodput_load"] <= t < r["upper_load"], (p, r)
            assert r["goodput_req_s"] == pytest.approx(50.0 * r["goodput_load"])
            assert r["ran_with_error"] == ("exact" if matrix.model_free(p) else e)
        for v in g["vs_strongest"]:
            assert v["preset"] == "slocore" and v["strongest_baseline"] == "scorpio"
            assert v["ratio"] == pytest.approx(v["goodput_load"] / v["strongest_load"])
            assert v["ratio_low"] <= v["ratio"] <= v["ratio_high"]
            assert v["ratio_low"] < _true_goodput("slocore") / _true_goodput("scorpio") < v["ratio_high"]
            assert v["meets_1_3"] == (v["ratio"] >= 1.3)
        assert [s["error"] for s in g["summary"]] == ["exact", "pm20"]
        assert all(
            s["line"].endswith(f"on {s['meets_1_3']} of 1 workloads (predictor error {s['error']})")
            for s in g["summary"]
        )
    # The strongest baseline's goodput is the same with and without pruning (exact pruning).
    # (Probe points may differ; both brackets hold the true threshold, checked above.)
    for a, b in zip(pruned["vs_strongest"], full["vs_strongest"]):
        assert a["strongest_baseline"] == b["strongest_baseline"]
        assert a["strongest_load"] == pytest.approx(b["strongest_load"], rel=goodput.GOODPUT_RESOLUTION - 1)
    # Baselines ran once (exact predictor), slocore under both errors.
    assert {j.error for j in fake_runs if matrix.model_free(j.preset)} == {"exact"}
    assert {j.error for j in fake_runs if j.preset in ("slocore", "scorpio")} == {"exact", "pm20"}
    # No run is repeated within one search (the runs of one workload are cached).
    assert len({(j.preset, j.load, j.seed, j.error) for j in fake_runs[:n_pruned]}) == n_pruned
    md = goodput.markdown(pruned)
    assert "(pruned)" in md and "goodput >= 1.3x the strongest baseline on" in md


def test_seeds_stop_early_only_when_decided(fake_runs):
    g = goodput.run_goodput(_fake_cfg(errors=("exact",)), progress=False)
    for r in g["results"]:
        for p in r["probes"]:
            full = [_fake_att(r["preset"], p["load"], s) for s in (0, 1, 2)]
            assert p["ok"] == (sum(full) / 3 >= matrix.GOODPUT_ATTAINMENT)
            assert p["stopped_early"] == (len(p["seeds"]) < 3)
            assert p["attainment"] == full[: len(p["seeds"])]


def test_bad_arguments_are_named():
    with pytest.raises(KeyError, match="nope"):
        goodput.GoodputConfig(stacks=("nope",)).resolve()
    with pytest.raises(KeyError, match="workload 'nowhere'"):
        goodput.GoodputConfig(workloads=("nowhere",)).resolve()
    with pytest.raises(ValueError, match="error 'pm30'"):
        goodput.GoodputConfig(errors=("pm30",)).resolve()
    with pytest.raises(ValueError, match="errors"):
        goodput.GoodputConfig(errors=()).resolve()
    with pytest.raises(ValueError, match="seeds"):
        goodput.GoodputConfig(seeds=(0, 0)).resolve()
    with pytest.raises(ValueError, match="processes"):
        goodput.GoodputConfig(processes=0).resolve()
    with pytest.raises(ValueError, match="duration_s"):
        goodput.GoodputConfig(duration_s=-1).resolve()
    with pytest.raises(ValueError, match=r"capacities\['chat'\]"):
        goodput.GoodputConfig(capacities={"chat": {"req_s": 1}}).resolve()


def test_cli_bad_arguments(tmp_path, capsys):
    assert cli.main(["bench", "goodput", "--stacks", "nope", "--out", str(tmp_path)]) == 2
    assert "nope" in capsys.readouterr().err
    assert cli.main(["bench", "goodput", "--errors", "pm30", "--out", str(tmp_path)]) == 2
    assert "pm30" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    assert cli.main(["bench", "goodput", "--capacities", str(bad), "--out", str(tmp_path)]) == 2
    assert "--capacities" in capsys.readouterr().err
    other = tmp_path / "m.json"
    other.write_text(json.dumps({"config": {"duration_s": 60.0}, "capacity": CAPS}))
    assert cli.main(["bench", "goodput", "--capacities", str(other), "--out", str(tmp_path)]) == 2
    assert "--duration" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["bench", "goodput", "--seeds", "a,b"])
    with pytest.raises(SystemExit):
        cli.main(["bench", "goodput", "--processes", "x"])


def _summary(kw, wl, preset):
    from slocore.sim.runner import simulate

    w = matrix.WORKLOADS[wl]
    s = simulate(w.make(40.0, 1, 120), seed=1, **{**w.cluster, **matrix.stack_kwargs(preset, w), **kw})
    return s.summary


@pytest.mark.parametrize("wl", [n for n, w in matrix.WORKLOADS.items() if not w.full_only])
def test_model_free_baselines_do_not_depend_on_the_predictor_error(wl):
    """The premise of reusing a model-free baseline's exact-predictor runs for every error."""
    w = matrix.WORKLOADS[wl]
    for p in stacks.presets(kind="baseline", mode=w.mode):
        if not matrix.model_free(p):
            continue
        exact = _summary({}, wl, p)
        for e in ("pm20", "shape"):
            other = _summary(matrix.error_kwargs(e, w), wl, p)
            assert json.dumps(other, sort_keys=True, default=str) == json.dumps(exact, sort_keys=True, default=str), (
                wl,
                p,
                e,
            )


def test_cli_tiny_end_to_end(tmp_path, capsys):
    out = tmp_path / "g"
    rc = cli.main(
        [
            "bench",
            "goodput",
            "--workloads",
            "hfx_4task,hfx_4task_pd",
            "--stacks",
            "slocore,least_outstanding+vllm_priority,rr+sarathi_fcfs,sibyl",
            "--errors",
            "exact,pm20",
            "--seeds",
            "0,1",
            "--duration",
            "1.5",
            "--probe-requests",
            "200",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    g = json.loads((out / "goodput.json").read_text())
    md = (out / "goodput.md").read_text()
    assert g["command"].startswith("slocore")
    want = {
        ("hfx_4task", e, p)
        for e in ("exact", "pm20")
        for p in ("slocore", "least_outstanding+vllm_priority", "rr+sarathi_fcfs")
    } | {
        ("hfx_4task_pd", e, p)
        for e in ("exact", "pm20")
        for p in ("slocore", "least_outstanding+vllm_priority", "rr+sarathi_fcfs", "sibyl")
    }
    assert {(r["workload"], r["error"], r["preset"]) for r in g["results"]} == want
    for r in g["results"]:
        assert r["probes"], r
        for p in r["probes"]:
            assert p["seeds"] and len(p["attainment"]) == len(p["seeds"]) and all(0 <= a <= 1 for a in p["attainment"])
        if r["goodput_load"] is not None:
            cap = g["capacity"][r["workload"]]["req_s"]
            assert r["goodput_req_s"] == pytest.approx(r["goodput_load"] * cap)
            held = [p for p in r["probes"] if p["load"] == r["goodput_load"]]
            assert held and held[0]["ok"]
            if r["upper_load"] is not None:
                assert r["upper_load"] / r["goodput_load"] <= goodput.GOODPUT_RESOLUTION * (1 + 1e-9)
    vs = {(v["workload"], v["error"], v["preset"]) for v in g["vs_strongest"]}
    assert vs == {(w, e, p) for (w, e, p) in want if stacks.presets()[p].kind != "baseline"}
    for v in g["vs_strongest"]:
        assert set(v) >= {"goodput_load", "goodput_req_s", "strongest_baseline", "strongest_load", "ratio", "meets_1_3"}
        if v["ratio"] is not None:
            assert math.isfinite(v["ratio"]) and v["ratio"] > 0
    assert len(g["summary"]) == 4  # slocore and sibyl, two errors each
    assert all(s["line"] in printed and s["line"] in md for s in g["summary"])
    assert g["runs"] == len(g["run_log"]) > 0 and all(0 <= r["finished"] <= r["requests"] for r in g["run_log"])


def test_merge_of_parts_equals_one_run(fake_runs, tmp_path):
    caps = {**CAPS, "sharegpt_prio": {"req_s": 20.0, "rate_arg_per_req_s": 1.0, "stack": "fake"}}
    cfg = dict(stacks=tuple(KNEES), processes=1, capacities=caps)
    whole = goodput.run_goodput(goodput.GoodputConfig(workloads=("hfx_4task", "sharegpt_prio"), **cfg), progress=False)
    paths = []
    for w in ("hfx_4task", "sharegpt_prio"):
        g = goodput.run_goodput(goodput.GoodputConfig(workloads=(w,), **cfg), progress=False)
        paths.append(goodput.write(g, str(tmp_path / w), command=f"part {w}")["json"])
    merged = goodput.merge(paths)
    for key in ("results", "vs_strongest", "summary"):
        assert merged[key] == whole[key]
    assert merged["runs"] == whole["runs"] and [p["command"] for p in merged["merged_from"]] == [
        "part hfx_4task",
        "part sharegpt_prio",
    ]
    assert "Merged from 2 parts" in goodput.markdown(merged)
    assert cli.main(["bench", "goodput", "--merge", *paths, "--out", str(tmp_path / "m")]) == 0
    assert json.loads((tmp_path / "m" / "goodput.json").read_text())["summary"] == whole["summary"]
    other = json.loads(Path(paths[1]).read_text())
    other["config"]["seeds"] = [0, 1]
    (tmp_path / "bad.json").write_text(json.dumps(other))
    with pytest.raises(ValueError, match="seeds"):
        goodput.merge([paths[0], str(tmp_path / "bad.json")])
    with pytest.raises(ValueError, match="not a readable"):
        goodput.merge([str(tmp_path / "missing.json")])


def test_prune_from_a_part_is_exact(fake_runs, tmp_path):
    """A part searching more baselines starts from the strongest of an earlier part."""
    kw = dict(workloads=("hfx_4task",), processes=1, capacities=CAPS)
    whole = goodput.run_goodput(goodput.GoodputConfig(stacks=tuple(KNEES), **kw), progress=False)
    first = goodput.run_goodput(
        goodput.GoodputConfig(stacks=("least_outstanding+vllm_priority", "vllm_priority"), **kw), progress=False
    )
    p1 = goodput.write(first, str(tmp_path / "a"))["json"]
    floors = goodput.floors_from(p1)
    assert set(floors) == {("hfx_4task", "exact"), ("hfx_4task", "pm20")}
    n = len(fake_runs)
    rest = goodput.run_goodput(
        goodput.GoodputConfig(stacks=("slocore", "rr+sarathi_fcfs", "rr+edf", "scorpio"), floors=floors, **kw),
        progress=False,
    )
    rows = {(r["error"], r["preset"]): r for r in rest["results"]}
    assert rows[("exact", "rr+sarathi_fcfs")]["pruned"] and rows[("exact", "rr+edf")]["pruned"]
    assert all(
        j.load >= floors[("hfx_4task", "exact")][0] for j in fake_runs[n:] if j.preset in ("rr+sarathi_fcfs", "rr+edf")
    )
    assert rest["config"]["floors"][0]["load"] == floors[("hfx_4task", "exact")][0]
    merged = goodput.merge([p1, goodput.write(rest, str(tmp_path / "b"))["json"]])
    for a, b in zip(merged["vs_strongest"], whole["vs_strongest"]):
        assert a["strongest_baseline"] == b["strongest_baseline"] == "scorpio"
        assert a["strongest_load"] == pytest.approx(b["strongest_load"], rel=goodput.GOODPUT_RESOLUTION - 1)
    with pytest.raises(ValueError, match="--prune-from"):
        goodput.floors_from(str(tmp_path / "nothing.json"))


def test_pd_first_token_reaches_every_run_and_capacity_probe(fake_runs, monkeypatch, tmp_path, capsys):
    """`--pd-first-token decode`: the search's runs and its capacity probes date the first token
    where a client behind vLLM's P/D proxy sees it (as the matrix's option); the report says so,
    and merges and reused capacities refuse the other dating."""
    probed = []

    def capacity(wl, probe_n=None, duration_s=30.0, pd_first_token="prefill"):
        probed.append((wl, pd_first_token))
        return CAPS["hfx_4task"]

    monkeypatch.setattr(matrix, "capacity", capacity)
    cfg = dict(stacks=tuple(KNEES), workloads=("hfx_4task",), processes=1)
    g = goodput.run_goodput(goodput.GoodputConfig(**cfg, pd_first_token="decode"), progress=False)
    assert probed == [("hfx_4task", "decode")]
    assert fake_runs and {j.pd_first_token for j in fake_runs} == {"decode"}
    assert g["config"]["pd_first_token"] == "decode"
    assert "decode's first step" in goodput.markdown(g)
    before = len(fake_runs)
    p = goodput.run_goodput(goodput.GoodputConfig(**cfg, capacities=CAPS), progress=False)
    assert {j.pd_first_token for j in fake_runs[before:]} == {"prefill"}
    assert "decode's first step" not in goodput.markdown(p)
    paths = [goodput.write(x, str(tmp_path / n))["json"] for x, n in ((g, "d"), (p, "p"))]
    assert goodput.merge(paths[:1])["config"]["pd_first_token"] == "decode"
    with pytest.raises(ValueError, match="pd_first_token"):
        goodput.merge(paths)
    with pytest.raises(ValueError, match="pd_first_token"):
        goodput.GoodputConfig(**cfg, pd_first_token="client").resolve()
    rc = cli.main(["bench", "goodput", "--capacities", paths[1], "--pd-first-token", "decode", "--out", str(tmp_path)])
    assert rc == 2 and "--pd-first-token" in capsys.readouterr().err
