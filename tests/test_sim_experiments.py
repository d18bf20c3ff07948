"""Experiment drivers: progress goes through tqdm (stderr) and results go where the user
says, never into the package's tree or the repository's docs/."""

import json

import pytest

from slocore.sim import experiment, scenarios, sibyl_experiments


def test_run_scenario_progress_bar_on_stderr(capsys):
    sc = scenarios.get("default")
    rows = experiment.run_scenario(sc, loads=[1.0], variants=["round_robin"], seeds=(0,), progress=True)
    assert [(r.variant, r.load, r.seed) for r in rows] == [("round_robin", 1.0, 0)]
    err = capsys.readouterr().err
    assert "default" in err and "1/1" in err  # tqdm's description and counter


def test_run_scenario_quiet_prints_nothing(capsys):
    sc = scenarios.get("default")
    experiment.run_scenario(sc, loads=[1.0], variants=["round_robin"], progress=False)
    assert capsys.readouterr().err == ""


def test_sibyl_experiments_needs_an_output_folder(capsys):
    with pytest.raises(SystemExit) as e:
        sibyl_experiments.main(["--only", "calibration"])
    assert e.value.code == 2
    assert "-o/--out" in capsys.readouterr().err


def test_sibyl_experiments_rejects_unknown_parts(tmp_path, capsys):
    with pytest.raises(SystemExit):
        sibyl_experiments.main(["-o", str(tmp_path), "--only", "calibration,nope"])
    assert "nope" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_sibyl_experiments_writes_where_told(tmp_path):
    out = tmp_path / "new" / "folder"
    sibyl_experiments.main(["-o", str(out), "--only", "calibration"])
    rows = json.loads((out / "results.json").read_text())["calibration"]
    assert {r["workload"] for r in rows} == {"sibyl_random", "sibyl_sharegpt", "sibyl_zeta"}
    assert all(0 <= r["mae"] <= r["max"] <= 1 for r in rows)
