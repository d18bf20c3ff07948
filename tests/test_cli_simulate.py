"""The main job: `slocore simulate` on its embedded default prints a readable table or
JSON, is deterministic, and shows load mattering (attainment falls past saturation)."""

import json

import pytest

from slocore import cli
from slocore.sim import scenarios


def run(capsys, *args):
    assert cli.main(["simulate", "--quiet", *args]) == 0
    return capsys.readouterr().out


def test_default_table_names_scenario_seed_and_policies(capsys):
    out = run(capsys, "--loads", "30", "--variants", "round_robin")
    assert "scenario: default" in out and "seeds: [0]" in out and "attain %" in out
    assert "round_robin: {'global_policy': {'name': 'round_robin'" in out


def test_json_is_deterministic_and_load_matters(capsys):
    args = ["--json", "--loads", "20,90", "--variants", "round_robin,least_outstanding"]
    a = json.loads(run(capsys, *args))
    b = json.loads(run(capsys, *args))
    assert [r["summary"] for r in a["rows"]] == [r["summary"] for r in b["rows"]]
    att = {(r["variant"], r["load"]): r["summary"]["attainment"] for r in a["rows"]}
    for v in ("round_robin", "least_outstanding"):
        assert att[(v, 20.0)] > 0.95 and att[(v, 90.0)] < 0.8
    for r in a["rows"]:
        assert r["summary"]["finished"] == r["summary"]["requests"] == 1200
        assert r["stats"]["plan_violations"] == 0


def test_scenarios_listing_and_overrides(capsys):
    assert cli.main(["scenarios"]) == 0
    assert "default" in capsys.readouterr().out
    out = json.loads(
        run(
            capsys,
            "--json",
            "--loads",
            "30",
            "--variants",
            "round_robin",
            "--belief-scale",
            "1.2",
            "--profile",
            "h100-llama2-7b",
        )
    )
    assert out["rows"][0]["config"]["belief_scale"] == 1.2 and out["rows"][0]["config"]["profile"] == "h100-llama2-7b"
    assert scenarios.get("default").available_variants()


def test_pd_first_token_override_dates_the_first_token_at_the_decode(capsys):
    def ttft_p50(where):
        args = ["--json", "--scenario", "hfx_fig4_pd", "--loads", "60", "--variants", "rr_pd"]
        row = json.loads(run(capsys, *args, "--pd-first-token", where))["rows"][0]
        assert row["config"]["pd_first_token"] == where
        return row["summary"]["ttft"]["p50"]

    assert ttft_p50("decode") > ttft_p50("prefill")  # the KV transfer and a decode step later
    with pytest.raises(SystemExit) as e:
        cli.main(["simulate", "--quiet", "--pd-first-token", "client"])
    assert e.value.code == 2 and "invalid choice: 'client'" in capsys.readouterr().err


def test_bad_arguments_exit_2(capsys):
    assert cli.main(["simulate", "--quiet", "--variants", "nope"]) == 2
    assert "variant 'nope'" in capsys.readouterr().err
    assert cli.main(["simulate", "--quiet", "--profile", "nope", "--loads", "1", "--variants", "round_robin"]) == 2
    assert "unknown profile" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["simulate", "--seeds", "0,-1"], "integer seeds >= 0"),
        (["simulate", "--seeds", "a"], "integer seeds"),
        (["simulate", "--loads", "1,0"], "a finite number > 0"),
        (["simulate", "--loads", "nan"], "a finite number > 0"),
        (["bench", "matrix", "--seeds", "-1"], "integer seeds >= 0"),
        (["bench", "matrix", "--loads", "inf"], "a finite number > 0"),
        (["bench", "matrix", "--presets", ","], "comma-separated list"),
        (["bench", "goodput", "--seeds", "-3"], "integer seeds >= 0"),
        (["serve", "--port", "70000"], "a port number, 0-65535"),
        (["engine", "--port", "-5"], "a port number, 0-65535"),
        (["serve", "--policy", "hfx", "--policy-params", "[1]"], "expected a JSON object"),
        (["engine", "--scheduler-params", "{"], "not valid JSON"),
        (["bench", "serve", "-n", "0"], "an integer >= 1"),
        (["bench", "serve", "--url", "notaurl"], "an http(s) URL"),
        (["bench", "serve", "--rate-scale", "-1"], "a finite number > 0"),
        (["bench", "live", "--engines", "emulated", "-n", "0"], "an integer >= 1"),
        (["serve", "--workers", "1000"], "an integer 1-256"),  # started 1,000 processes
        (["bench", "matrix", "--probe-requests", "0"], "an integer >= 1"),  # ran each workload's default
        (["bench", "goodput", "--processes", "0"], "an integer >= 1"),
    ],
)
def test_lists_are_checked_before_anything_runs(argv, message, capsys):
    """Bad seeds, loads, ports and JSON parameters stop the command as argparse errors (exit
    2), before a simulation, a capacity probe or a server starts (a negative seed used to fail
    inside numpy minutes in; port 70000 or `--policy-params [1]` raised a traceback)."""
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "%" not in err  # no progress bar: nothing ran


def test_version(capsys):
    import slocore

    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"slocore {slocore.__version__}"
