"""One parameter table per registered policy, scheduler and scaler: params() feeds back into
the registry unchanged, the documented table lists exactly what params() prints, bad values
raise ValueError naming `name.field`, and a simulation's printed parameters reproduce it."""

import math
import re
from pathlib import Path

import pytest

from slocore import _core, cli, registry
from slocore.sim import report, workloads
from slocore.sim.experiment import Row
from slocore.sim.runner import simulate
from slocore.sim.scenarios import Scenario

KINDS = {
    "global_policy": (_core.global_policy_names, _core.make_global_policy),
    "batch_scheduler": (_core.batch_scheduler_names, _core.make_batch_scheduler),
    "scaler": (_core.scaler_names, _core.make_scaler),
}
ENTRIES = [(kind, name) for kind, (names, _) in KINDS.items() for name in names()]


def make(kind, name, params=None):
    return KINDS[kind][1](name, params or {})


def field_error(name, field):
    return re.escape(f"{name}.{field}") + r"\b"


@pytest.mark.parametrize("kind,name", ENTRIES)
def test_params_round_trip(kind, name):
    p = make(kind, name).params()
    again = make(kind, name, p)
    assert again.params() == p
    assert again.name() == name


@pytest.mark.parametrize("kind,name", ENTRIES)
def test_documented_table_is_what_params_prints(kind, name):
    info = _core.policy_info(kind, name)
    assert info["name"] == name and info["summary"]
    p = make(kind, name).params()
    documented = {d["name"]: d for d in info["params"]}
    plain = {k for k in documented if not k.endswith(".*")}
    prefixes = tuple(k[:-1] for k in documented if k.endswith(".*"))
    assert plain == {k for k in p if not k.startswith(prefixes or ("\0",))}
    for k in plain:
        assert documented[k]["default"] == p[k], k
        assert documented[k]["help"], k


def _outside(rng: str):
    """Values a parameter with documented range `rng` must reject."""
    if "|" in rng:  # names of an enum, or 0 | 1 for a bool
        return [2.0] if rng == "0 | 1" else ["no_such_choice"]
    bad = [math.inf]
    m = re.fullmatch(r"([\[(])(\S+), (\S+)([\])])", rng)
    lo = hi = None
    if m:
        lo, hi = (float(m[2]), m[1] == "("), (float(m[3]), m[4] == ")")
    elif m := re.fullmatch(r"(>=?) (\S+)", rng):
        lo = (float(m[2]), m[1] == ">")
    if lo:
        bad.append(lo[0] if lo[1] else lo[0] - 1)
    if hi:
        bad.append(hi[0] if hi[1] else hi[0] + 1)
    return bad


@pytest.mark.parametrize("kind,name", ENTRIES)
def test_unknown_and_out_of_range_values_name_the_field(kind, name):
    with pytest.raises(ValueError, match=field_error(name, "zz_no_such_param") + ": unknown parameter"):
        make(kind, name, {"zz_no_such_param": 1.0})
    for d in _core.policy_info(kind, name)["params"]:
        if d["type"] in ("str", "map") and "|" not in d["range"]:
            continue
        if d["type"] == "list":
            bad = ["0.5,x"]
        else:
            bad = _outside(d["range"])
            assert d["type"] == "str" or math.inf in bad or bad == [2.0], d
        for v in bad:
            with pytest.raises(ValueError, match=field_error(name, d["name"])):
                make(kind, name, {d["name"]: v})
        if d["type"] == "int":
            with pytest.raises(ValueError, match=field_error(name, d["name"]) + ": must be an integer"):
                make(kind, name, {d["name"]: float(d["default"]) + 0.5})


def test_stage_is_the_name_not_a_parameter():
    for name in ("hfx", "hfx_prefill", "hfx_migrator", "hfx_pm"):
        assert "stage" not in make("global_policy", name).params()
        with pytest.raises(ValueError, match=field_error(name, "stage") + ": unknown parameter"):
            make("global_policy", name, {"stage": "colocated"})


def test_early_assign_passes_inner_parameters():
    p = make("global_policy", "early_assign", {"policy": "random", "inner.seed": 3})
    assert p.params() == {"policy": "random", "inner.seed": 3.0}
    d = make("global_policy", "early_assign", {"policy": "least_tokens"}).params()
    assert d == {"policy": "least_tokens", "inner.default_output": 128.0}
    with pytest.raises(ValueError, match=field_error("early_assign", "inner.zz") + ": unknown parameter"):
        make("global_policy", "early_assign", {"policy": "random", "inner.zz": 1})
    with pytest.raises(ValueError, match=field_error("early_assign", "inner.seed")):
        make("global_policy", "early_assign", {"policy": "random", "inner.seed": -1})
    with pytest.raises(ValueError, match=field_error("early_assign", "policy")):
        make("global_policy", "early_assign", {"policy": "sibyl"})


def test_list_parameters_print_exactly():
    p = make("global_policy", "hfx_pm", {"ttft_base": "0.123456789, 2", "tpot_base": "0.1,0.3"}).params()
    assert p["ttft_base"] == "0.123456789,2" and p["tpot_base"] == "0.1,0.3"


def test_policy_info_rejects_unknown_kind_and_name():
    with pytest.raises(ValueError, match="kind"):
        _core.policy_info("router", "hfx")
    with pytest.raises(ValueError, match="known: .*round_robin"):
        _core.policy_info("global_policy", "nope")


def test_cli_policies_prints_every_parameter(capsys):
    assert cli.main(["policies", "goroute"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("global_policy goroute:")
    for d in _core.policy_info("global_policy", "goroute")["params"]:
        shown = int(d["default"]) if d["type"] in ("int", "bool") else d["default"]
        assert f"    {d['name']} = {shown!r}  in {d['range']}  {d['help']}\n" in out
    assert cli.main(["policies", "--kind", "scaler"]) == 0
    assert capsys.readouterr().out.count("scaler hfx:") == 1
    assert cli.main(["policies", "nope"]) == 2


def test_docs_list_every_parameter_table():
    doc = Path(__file__).resolve().parents[1] / "docs" / "policies.md"
    assert doc.read_text() == registry.markdown(registry.entries()), (
        "docs/policies.md is stale: slocore policies --markdown > docs/policies.md"
    )


def _run(**kw):
    w = workloads.sharegpt_like(rate=6.0, n=60, seed=1)
    return simulate(w, instances=2, **kw)


def test_report_prints_parameters_that_reproduce_the_run():
    kw = dict(
        global_policy=("goroute", {"alpha": 0.8, "gain_phi": "c"}),
        batch_scheduler=("slide_batching", {"gamma": 0.5}),
        scaler=("hfx", {"cooldown": 3.0}),
        max_instances=3,
    )
    first = _run(**kw)
    cfg = first.config
    assert cfg["global_policy"]["params"]["alpha"] == 0.8 and cfg["batch_scheduler"]["params"]["gamma"] == 0.5
    sc = Scenario(
        name="tiny", description="", source="", workload=None, loads=(6.0,), load_unit="req/s", variants={"v": {}}
    )
    text = report.table(sc, [Row("v", 6.0, 0, first.summary, first.stats, cfg, 0.0)])
    for key in ("global_policy", "batch_scheduler", "scaler"):
        assert repr(cfg[key]) in text
    again = _run(
        **{k: (cfg[k]["name"], cfg[k]["params"]) for k in ("global_policy", "batch_scheduler", "scaler")},
        max_instances=3,
    )
    assert again.summary == first.summary
    assert again.config == cfg
