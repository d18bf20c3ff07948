"""Hardware profiles: every bundled file validates, equals what roofline.py derives from
its specs (no drift), and agrees with the numbers the papers quote."""
import json

import pytest

from slocore.profiles import list_profiles, load_profile, load_profile_file
from slocore.profiles.roofline import SPECS, build, check_value, decode_step
from slocore.sim.runner import hardware_profile


def test_required_profiles_exist_and_load_into_cpp():
    names = set(list_profiles())
    assert {"ascend910b-qwen7b", "ascend910b-qwen32b", "h20-qwen3-32b", "rtx4060ti-chatglm2-6b-int4",
            "h100-llama2-7b"} <= names
    for n in names:
        hw, _ = hardware_profile(n)
        assert hw.kv_blocks > 0 and hw.coeffs.t_c > 0


@pytest.mark.parametrize("name", sorted(SPECS))
def test_json_equals_derivation(name):
    assert load_profile(name) == json.loads(json.dumps(build(name)))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_checks_against_papers(name):
    p = load_profile(name)
    assert p["checks"], "every profile is checked against a quoted number"
    for c in p["checks"]:
        got = check_value(p["per_request"], c)  # recomputed, not the stored number
        assert got == pytest.approx(c["paper_value"], rel=c["tolerance_rel"]), c["what"]


def test_slice_table2_and_sibyl_curve_explicitly():
    rtx = load_profile("rtx4060ti-chatglm2-6b-int4")["per_request"]
    assert decode_step(rtx, 9, 300) == pytest.approx(0.1286, rel=0.15)  # SLICE Table II, Orca
    assert decode_step(rtx, 1, 300) < decode_step(rtx, 9, 300) / 2  # near-linear growth (Fig. 1)
    h20 = load_profile("h20-qwen3-32b")
    for n in (8, 16, 32):
        paper = -0.423 * n * n + 44.766 * n - 7.753
        assert n / decode_step(h20["per_request"], n, 1500) == pytest.approx(paper, rel=0.25)


def test_bad_profiles(tmp_path):
    with pytest.raises(KeyError, match="known: .*h100"):
        load_profile("nope")
    bad = load_profile("h100-llama2-7b")
    bad["per_request"]["a_d"] = -1
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"per_request\.a_d"):
        load_profile_file(f)
    f.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        load_profile_file(f)
