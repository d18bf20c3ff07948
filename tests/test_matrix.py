"""The benchmark matrix in a tiny configuration: every cell filled, the summary computed
against the strongest baseline, the outputs written; presets resolve and are validated.
No timing is asserted."""

import json
import math
import signal
import statistics
from pathlib import Path

import pytest

from slocore import cli
from slocore.sim import matrix, preset, presets, stacks

TINY = dict(
    presets=("rr+sarathi_fcfs", "rr+edf", "hfx", "sibyl"),
    workloads=("hfx_4task", "hfx_4task_pd"),
    loads=(0.5, 1.2),
    seeds=(0, 1, 2),
    errors=matrix.ERRORS,
    duration_s=1.5,
    probe_n=200,
)


@pytest.fixture(scope="module")
def tiny():
    return matrix.run_matrix(matrix.MatrixConfig(**TINY, processes=2), progress=False)


def test_every_cell_is_filled(tiny):
    want = set()
    for w in TINY["workloads"]:
        mode = matrix.WORKLOADS[w].mode
        for p in TINY["presets"]:
            if presets()[p].kwargs_for(mode) is None:
                continue
            want |= {(w, e, l, p) for e in TINY["errors"] for l in TINY["loads"]}
    got = {(c["workload"], c["error"], c["load"], c["preset"]) for c in tiny["cells"]}
    assert got == want and len(tiny["cells"]) == len(want)
    assert ("hfx_4task", "exact", 0.5, "sibyl") not in got  # sibyl is P/D only
    for c in tiny["cells"]:
        assert c["seeds"] == [0, 1, 2] and len(c["attainment"]) == 3
        assert all(0 <= a <= 1 for a in c["attainment"])
        assert c["attainment_mean"] == pytest.approx(sum(c["attainment"]) / 3)
        assert c["attainment_ci95"] >= 0 and all(math.isfinite(c[k]) for k in ("ttft_p99", "tpot_p99", "cost"))
        assert c["finished"] == c["requests"]  # every request of every run finished
        assert c["rate"] == pytest.approx(c["load"] * tiny["capacity"][c["workload"]]["req_s"])
    reused = {k for k in want if k[1] != TINY["errors"][0] and matrix.model_free(k[3])}
    assert reused and tiny["runs"] == 3 * len(want - reused) and tiny["reused_runs"] == 3 * len(reused)
    for c in tiny["cells"]:
        key = (c["workload"], c["error"], c["load"], c["preset"])
        assert c["ran_with_error"] == (TINY["errors"][0] if key in reused else c["error"])


def test_model_free_baselines_run_under_every_error_give_the_reused_cells(tiny):
    """The premise of running a model-free baseline under the first error only: run under
    every error (--rerun-baselines-per-error), its cells are the reused ones to the digit."""
    cfg = matrix.MatrixConfig(**{**TINY, "presets": ("rr+sarathi_fcfs", "rr+edf")}, reuse_model_free=False)
    again = matrix.run_matrix(cfg, progress=False)
    assert again.get("reused_runs", 0) == 0 and again["runs"] == 3 * len(again["cells"])
    reused = {(c["workload"], c["error"], c["load"], c["preset"]): c for c in tiny["cells"]}
    for c in again["cells"]:
        assert c["ran_with_error"] == c["error"]
        r = reused[(c["workload"], c["error"], c["load"], c["preset"])]
        assert (c["attainment"], c["ttft_p99"], c["cost"]) == (r["attainment"], r["ttft_p99"], r["cost"])


def test_capacity_is_the_reference_stacks_edge(tiny):
    """Capacity: the reference stack kept >= 90% there (seed 0, the runs' window) and fell
    below at a probed rate at most one bisection step (2^(1/16)) above it."""
    step = 2 ** (1 / 2**matrix.CAPACITY_STEPS)
    for w, c in tiny["capacity"].items():
        assert c["stack"] == matrix.CAPACITY_PRESET[matrix.WORKLOADS[w].mode]
        att = {p["req_s"]: p["attainment"] for p in c["probes"]}
        assert att[c["req_s"]] >= matrix.CAPACITY_ATTAINMENT
        above = [r for r, a in att.items() if a < matrix.CAPACITY_ATTAINMENT and r > c["req_s"]]
        assert above and min(above) <= c["req_s"] * step * (1 + 1e-9), c["probes"]
        assert c["burst_req_s"] > 0 and len(c["probes"]) >= 2 + matrix.CAPACITY_STEPS


def test_summary_against_the_strongest_baseline(tiny):
    by_cell = {}
    for c in tiny["cells"]:
        by_cell.setdefault((c["workload"], c["error"], c["load"]), []).append(c)
    for cs in by_cell.values():
        base = [c for c in cs if c["kind"] == "baseline"]
        best = max(c["attainment_mean"] for c in base)
        strongest = next(c for c in base if c["preset"] == cs[0]["strongest_baseline"])
        for c in cs:
            assert presets()[c["strongest_baseline"]].kind == "baseline"
            assert c["vs_strongest"] == pytest.approx(c["attainment_mean"] - best)
            if c["kind"] == "baseline":
                assert c["vs_strongest"] <= 1e-12
            assert c["ttft_p99_vs_strongest"] == pytest.approx(c["ttft_p99"] / strongest["ttft_p99"])
    assert {s["preset"] for s in tiny["summary"]} == set(TINY["presets"])
    for s in tiny["summary"]:
        ds = [c["vs_strongest"] for c in tiny["cells"] if c["preset"] == s["preset"]]
        assert s["cells"] == len(ds) and s["mean_vs_strongest"] == pytest.approx(sum(ds) / len(ds))
        rs = sorted(c["ttft_p99_vs_strongest"] for c in tiny["cells"] if c["preset"] == s["preset"])
        assert s["ttft_p99_ratio_median"] == pytest.approx(statistics.median(rs))
        assert s["ttft_p99_ratio_max"] == rs[-1]
        assert s["ttft_p99_worse"] == sum(r > matrix.TTFT_P99_WORSE for r in rs)
    assert len(tiny["goodput"]) == len({(c["workload"], c["error"], c["preset"]) for c in tiny["cells"]})
    for g in tiny["goodput"]:
        ok = [
            c["load"]
            for c in tiny["cells"]
            if (c["workload"], c["error"], c["preset"]) == (g["workload"], g["error"], g["preset"])
            and c["attainment_mean"] >= matrix.GOODPUT_ATTAINMENT
        ]
        assert g["load"] == (max(ok) if ok else None)


def test_outputs_written(tiny, tmp_path):
    paths = matrix.write(tiny, str(tmp_path), command="slocore bench matrix (test)", plot=False)
    data = json.loads(Path(paths["json"]).read_text())
    assert len(data["cells"]) == len(tiny["cells"]) and data["command"]
    md = Path(paths["md"]).read_text()
    for p in TINY["presets"]:
        assert f"| {p} |" in md
    assert "strongest baseline" in md and "TTFT p99 ratio median" in md


def _sigterm_is_default(_):
    return signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_pool_workers_take_sigterm_default_action():
    # A handler the parent set (a CLI's clean-up) would keep a worker blocked on the task
    # queue's lock alive; the workers reset it, and the pool is joined, not terminated.
    previous = signal.signal(signal.SIGTERM, lambda *a: None)
    try:
        assert matrix._map(_sigterm_is_default, list(range(4)), 2, False, "t") == [True] * 4
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_ci95_uses_student_t():
    assert matrix.ci95([1.0]) == 0.0
    assert matrix.ci95([0.0, 1.0, 2.0]) == pytest.approx(4.303 * 1.0 / math.sqrt(3))


def test_cli_matrix_and_presets(tmp_path, capsys):
    rc = cli.main(
        [
            "bench",
            "matrix",
            "--presets",
            "rr+sarathi_fcfs,rr+edf",
            "--workloads",
            "hfx_4task",
            "--loads",
            "1",
            "--seeds",
            "0,1,2",
            "--errors",
            "exact",
            "--duration",
            "1",
            "--probe-requests",
            "100",
            "--processes",
            "1",
            "--quiet",
            "--no-plot",
            "--out",
            str(tmp_path),
        ]
    )
    assert rc == 0 and (tmp_path / "matrix.json").exists() and (tmp_path / "matrix.md").exists()
    assert "vs strongest baseline" in capsys.readouterr().out
    assert cli.main(["presets"]) == 0
    out = capsys.readouterr().out
    for name in (
        "least_outstanding+edf",
        "least_outstanding+sarathi_priority",
        "p2c+edf",
        "vllm_priority",
        "hfx",
        "sibyl",
    ):
        assert name in out
    assert cli.main(["bench", "matrix", "--presets", "nope", "--quiet", "--out", str(tmp_path)]) == 2
    assert cli.main(["bench", "matrix", "--errors", "wrong", "--quiet", "--out", str(tmp_path)]) == 2


def test_presets_resolve_and_validate():
    assert preset("least_outstanding+edf") == {"global_policy": "least_outstanding", "batch_scheduler": "edf"}
    assert preset("hfx", "pd")["mode"] == "pd" and preset("hfx", "pd")["decode_policy"] == "hfx_migrator"
    kw = preset("rr+edf")
    kw["batch_scheduler"] = "x"
    assert preset("rr+edf")["batch_scheduler"] == "edf"  # a fresh copy each time
    with pytest.raises(KeyError, match="unknown preset"):
        preset("nope")
    with pytest.raises(ValueError, match="no pd stack"):
        preset("hfx_pm", "pd")
    with pytest.raises(ValueError, match="mode"):
        preset("hfx", "both")
    for name, p in presets().items():  # every listed preset builds and names registered policies
        for m in p.modes():
            assert preset(name, m)
    assert {"baseline", "paper"} <= {p.kind for p in presets().values()}
    assert "slocore.sim.presets_slocore" in stacks.PRESET_MODULES  # the hook for the `slocore` stack


def test_preset_as_scenario_variant():
    from slocore.sim import experiment, scenarios

    sc = scenarios.get("hfx_fig4_pd")
    rows = experiment.run_scenario(sc, loads=[20.0], variants=["rr_pd", "least_outstanding+edf"], progress=False)
    assert [r.variant for r in rows] == ["rr_pd", "least_outstanding+edf"]
    assert rows[1].config["decode_policy"]["name"] == "least_outstanding" and rows[1].config["mode"] == "pd"
    with pytest.raises(ValueError, match="not a preset"):
        experiment.run_scenario(sc, loads=[20.0], variants=["nope"], progress=False)


def _part(m: dict, keep) -> dict:
    """`m` as written by `matrix.write`, with only the cells `keep` accepts."""
    return {**json.loads(json.dumps(m)), "cells": [c for c in m["cells"] if keep(c)], "command": "part"}


def test_merge_of_parts_equals_the_whole(tiny, tmp_path):
    from slocore.sim.matrix_merge import merge

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_part(tiny, lambda c: c["kind"] == "baseline")))
    b.write_text(json.dumps(_part(tiny, lambda c: c["kind"] != "baseline")))
    m = merge([str(a), str(b)])
    key = lambda c: (c["workload"], c["error"], c["load"], c["preset"])  # noqa: E731
    whole = {key(c): c for c in tiny["cells"]}
    assert {key(c) for c in m["cells"]} == set(whole)
    for c in m["cells"]:
        w = whole[key(c)]
        assert c["attainment"] == w["attainment"] and c["strongest_baseline"] == w["strongest_baseline"]
        assert c["vs_strongest"] == pytest.approx(w["vs_strongest"])
        assert c["ttft_p99_vs_strongest"] == pytest.approx(w["ttft_p99_vs_strongest"])
        assert c["ttft_p99"] == pytest.approx(w["ttft_p99"]) and c["cost"] == pytest.approx(w["cost"])
    assert sorted((s["preset"], s["won"], s["lost"]) for s in m["summary"]) == sorted(
        (s["preset"], s["won"], s["lost"]) for s in tiny["summary"]
    )
    assert sorted((g["workload"], g["error"], g["preset"], g["load"]) for g in m["goodput"]) == sorted(
        (g["workload"], g["error"], g["preset"], g["load"]) for g in tiny["goodput"]
    )
    assert "Merged from 2 runs" in matrix.markdown(m)


def test_merge_copies_exact_baselines_and_refuses_other_experiments(tiny, tmp_path):
    from slocore.sim.matrix_merge import merge

    exact_only = tmp_path / "exact.json"
    exact_only.write_text(json.dumps(_part(tiny, lambda c: c["kind"] != "baseline" or c["error"] == "exact")))
    without = merge([str(exact_only)])
    assert not any(c["kind"] == "baseline" and c["error"] != "exact" for c in without["cells"])
    m = merge([str(exact_only)], copy_exact_baselines=True)
    copied = [c for c in m["cells"] if c["kind"] == "baseline" and c["error"] == "pm20"]
    assert copied and all(c["ran_with_error"] == "exact" for c in copied)
    for c in copied:
        ex = next(
            x
            for x in m["cells"]
            if (x["workload"], x["load"], x["preset"], x["error"])
            == (*[c[k] for k in ("workload", "load", "preset")], "exact")
        )
        assert c["attainment"] == ex["attainment"]
    other = json.loads(json.dumps(tiny))
    other["capacity"]["hfx_4task"]["req_s"] *= 1.1
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps(other))
    with pytest.raises(ValueError, match="hfx_4task"):
        merge([str(exact_only), str(bad)])
    junk = tmp_path / "junk.json"
    junk.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a matrix.json"):
        merge([str(junk)])
    out = tmp_path / "merged"
    assert cli.main(["bench", "matrix", "--merge", str(exact_only), "--no-plot", "--out", str(out)]) == 0
    assert (out / "matrix.md").exists()
    assert cli.main(["bench", "matrix", "--copy-exact-baselines", "--out", str(out)]) == 2
    assert cli.main(["bench", "matrix", "--merge", str(junk), "--out", str(out)]) == 2


@pytest.mark.parametrize(
    "bad, says",
    [
        ("5", "expected a non-empty JSON object"),
        ("{}", "expected a non-empty JSON object"),
        ("{bad", "not JSON"),
        ('{"late_kv_rom": 0}', "slo_triage.late_kv_rom: unknown parameter"),
        ('{"late_kv_room": 2}', "slo_triage.late_kv_room: must be"),
    ],
)
def test_variants_script_refuses_bad_triage_parameters_before_running(bad, says):
    """bench/slocore_variants_compare.py --triage: one argparse error naming the problem, exit 2."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "bench" / "slocore_variants_compare.py"
    r = subprocess.run([sys.executable, str(script), "--triage", bad], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr


def test_pd_first_token_dated_at_the_decode(tiny, tmp_path):
    """`--pd-first-token decode`: P/D runs and their capacity probes date the first token where
    a client behind vLLM's P/D proxy sees it; the output says so, the colocated cells are the
    same as with the default dating, and a merge refuses to mix the two."""
    from slocore.sim.matrix_merge import merge

    cfg = {**TINY, "presets": ("rr+sarathi_fcfs", "sibyl"), "errors": ("exact",)}
    m = matrix.run_matrix(matrix.MatrixConfig(**cfg, pd_first_token="decode"), progress=False)
    assert m["config"]["pd_first_token"] == "decode" and tiny["config"]["pd_first_token"] == "prefill"
    assert "dated at the decode" in matrix.markdown(m) and "dated at the decode" not in matrix.markdown(tiny)
    cells = {(c["workload"], c["load"], c["preset"]): c for c in tiny["cells"] if c["error"] == "exact"}
    pd_ttft = []
    for c in m["cells"]:
        before = cells[(c["workload"], c["load"], c["preset"])]
        if c["workload"] == "hfx_4task":  # colocated: nothing to date elsewhere
            assert c["attainment"] == before["attainment"] and c["ttft_p99"] == before["ttft_p99"]
        else:
            pd_ttft.append((c["ttft_p99"], before["ttft_p99"], c["rate"], before["rate"]))
    assert pd_ttft and m["capacity"]["hfx_4task"] == tiny["capacity"]["hfx_4task"]
    # the same P/D load runs later first tokens, or the capacity moved with the dating
    assert any(t > b or r != rb for t, b, r, rb in pd_ttft), pd_ttft
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(m))
    b.write_text(json.dumps(tiny))
    assert merge([str(a)])["config"]["pd_first_token"] == "decode"
    with pytest.raises(ValueError, match="dated at the"):
        merge([str(a), str(b)])
    with pytest.raises(ValueError, match="pd_first_token"):
        matrix.MatrixConfig(**cfg, pd_first_token="client").resolve()
