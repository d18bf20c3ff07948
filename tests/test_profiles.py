"""Hardware profiles: every bundled file validates, equals what roofline.py derives from its
specs (no drift), and agrees with the numbers the papers quote (recomputed here from the
coefficients, never read back from the stored `derived_value`)."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from slocore.profiles import list_profiles, load_profile, load_profile_file, roofline
from slocore.profiles.roofline import SPECS, build, derive, iteration_time, kv_bytes_per_token, render

REQUIRED = {"ascend910b-qwen7b", "ascend910b-qwen32b", "h20-qwen3-32b", "rtx4060ti-chatglm2-6b-int4", "h100-llama2-7b"}
DATA = Path(roofline.__file__).with_name("data")


def step(pr: dict, batch: int, ctx: int) -> float:
    """ProServe Eq. 6-7 for a pure decode batch, written out independently of roofline.py."""
    return pr["t_c"] + batch * (pr["a_d"] * ctx + pr["b_d"])


def recompute(p: dict, c: dict) -> float:
    if c["kind"] == "decode_step":
        return step(p["per_request"], c["batch"], c["ctx"])
    if c["kind"] == "tps":
        return c["batch"] / step(p["per_request"], c["batch"], c["ctx"])
    if c["kind"] == "transfer":
        return p["kv_transfer"]["fixed_s"] + c["bytes"] / p["kv_transfer"]["bandwidth_bytes_per_s"]
    raise AssertionError(c["kind"])


# --- loading and validation ---------------------------------------------------------------


def test_bundled_profiles_exist_and_validate():
    names = list_profiles()
    assert REQUIRED <= set(names) and set(names) == set(SPECS)
    for n in names:
        p = load_profile(n)
        assert p["name"] == n and p["version"] >= 1 and p["checks"] and p["sources"]
        assert all(math.isfinite(v) and v >= 0 for v in p["per_request"].values())
        assert p["kv"]["num_blocks"] > 0


def test_bundled_profiles_load_into_the_simulator():
    from slocore.profiles import hardware_profile

    for n in list_profiles():
        hw, data = hardware_profile(n)
        assert hw.kv_blocks == data["kv"]["num_blocks"] and hw.coeffs.t_c == data["per_request"]["t_c"]
        t = data["kv_transfer"]
        assert hw.kv_transfer_time(1000) == pytest.approx(
            t["fixed_s"] + 1000 * data["kv"]["bytes_per_token"] / t["bandwidth_bytes_per_s"]
        )


def test_unknown_name_lists_known_profiles(tmp_path):
    with pytest.raises(KeyError, match="nope.*known: .*h100-llama2-7b.*rtx4060ti"):
        load_profile("nope")
    with pytest.raises(ValueError, match="absent.json: cannot read"):  # a path says so, not "unknown"
        load_profile(str(tmp_path / "absent.json"))
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="bin.json: not a UTF-8 text"):
        load_profile(str(tmp_path / "bin.json"))


@pytest.mark.parametrize(
    "field, value",
    [
        ("per_request.a_d", -1.0),
        ("per_request.t_c", float("nan")),
        ("per_request.b_p", "1e-9"),
        ("per_request.c_p", None),
        ("kv.num_blocks", 0),
        ("kv.block_size", 16.5),
        ("kv.bytes_per_token", 0),
        ("kv_transfer.bandwidth_bytes_per_s", float("inf")),
        ("kv_transfer.fixed_s", -0.001),
        ("tps_quadratic.b", -1.0),
        ("tps_quadratic.a", float("nan")),
        ("hardware.mem_gib", -80),
        ("checks[0].paper_value", "x"),
        ("version", 0),
    ],
)
def test_corrupted_file_names_field_and_file(tmp_path, field, value):
    data = load_profile("h20-qwen3-32b")
    *path, last = field.replace("[0]", ".0").split(".")
    node = data
    for k in path:
        node = node[int(k)] if k.isdigit() else node[k]
    if value is None:
        del node[last]
    else:
        node[last] = value
    f = tmp_path / "corrupt.json"
    f.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"corrupt\.json: " + re.escape(field)):
        load_profile_file(f, full=True)


@pytest.mark.parametrize("key", ["checks", "sources", "efficiency", "per_request", "kv_transfer"])
def test_missing_section_names_it(tmp_path, key):
    data = load_profile("h100-llama2-7b")
    del data[key]
    f = tmp_path / "cut.json"
    f.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=rf"cut\.json: {key}"):
        load_profile_file(f, full=True)


def test_bad_json_and_missing_file(tmp_path):
    f = tmp_path / "broken.json"
    f.write_text("{not json")
    with pytest.raises(ValueError, match="broken.json: not valid JSON"):
        load_profile_file(f)
    with pytest.raises(ValueError, match="absent.json: cannot read"):
        load_profile_file(tmp_path / "absent.json")


def test_user_file_needs_only_what_the_simulator_reads(tmp_path):
    mine = {
        "name": "my-gpu",
        "per_request": dict(t_c=0.01, a_p=0, b_p=0, c_p=1e-4, a_d=1e-7, b_d=1e-4),
        "kv": dict(block_size=16, num_blocks=1000, bytes_per_token=131072),
        "kv_transfer": dict(bandwidth_bytes_per_s=1e10, fixed_s=0.0),
    }
    f = tmp_path / "mine.json"
    f.write_text(json.dumps(mine))
    assert load_profile_file(f) == mine
    assert load_profile(str(f)) == mine  # a path works wherever a name does
    with pytest.raises(ValueError, match="mine.json: version: missing"):
        load_profile_file(f, full=True)


def test_package_is_pure_python_without_the_extension():
    """Loadable with slocore (and so slocore._core) made unimportable."""
    pkg = Path(roofline.__file__).parent
    code = (
        "import importlib.util, sys\n"
        "sys.modules['slocore'] = None\n"
        f"spec = importlib.util.spec_from_file_location('alone', {str(pkg / '__init__.py')!r}, "
        f"submodule_search_locations=[{str(pkg)!r}])\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['alone'] = m; spec.loader.exec_module(m)\n"
        "import alone.roofline as r\n"
        "print(len(m.list_profiles()), m.load_profile('h100-llama2-7b')['name'], r.stale())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(len(SPECS)), "h100-llama2-7b", "[]"]


# --- no drift between SPECS, the derivation and the files -----------------------------------


@pytest.mark.parametrize("name", sorted(SPECS))
def test_files_are_exactly_the_derivation(name):
    assert (DATA / f"{name}.json").read_text() == render(name)
    assert load_profile(name) == build(name)


def test_regen_reproduces_the_data_dir(tmp_path):
    written = roofline.regen(tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in DATA.glob("*.json"))
    for p in written:
        assert p.read_text() == (DATA / p.name).read_text()
    assert roofline.stale() == [] and roofline.main(["--check"]) == 0


def test_derivation_is_the_documented_roofline():
    hw = dict(peak_tflops_bf16=100.0, mem_bandwidth_gbps=1000.0, mem_gib=10, interconnect_gbps=50.0, num_devices=2)
    model = dict(
        params_b=1.0, bytes_per_param=2, kv_bytes=2, layers=10, hidden=1024, attn_heads=8, kv_heads=2, head_dim=128
    )
    eff = dict(
        mfu_prefill=0.5, mbu_decode=0.5, step_overhead_s=0.001, decode_compute_exposed=0.5, per_seq_overhead_s=0.002
    )
    d = derive(
        hw,
        model,
        eff,
        dict(gpu_mem_util=0.9, activation_reserve_gib=1.0),
        dict(link_efficiency=0.5, fixed_s=0.003, notes=""),
    )
    pr, flops, stream = d["per_request"], 2 * 100e12 * 0.5, 2 * 1000e9 * 0.5
    assert pr["t_c"] == pytest.approx(2e9 / stream + 0.001, rel=1e-5)
    assert pr["c_p"] == pytest.approx(2e9 / flops, rel=1e-5)
    assert pr["a_p"] == pytest.approx(2 * 10 * 1024 / flops, rel=1e-5)
    assert pr["b_p"] == pytest.approx(2 * pr["a_p"], rel=1e-5)  # causal: lq^2/2 pairs vs lq*lkv
    assert pr["a_d"] == pytest.approx(10240 / stream, rel=1e-5)
    assert pr["b_d"] == pytest.approx(0.5 * 2e9 / flops + 0.002, rel=1e-5)
    assert d["kv"]["bytes_per_token"] == 2 * 10 * 2 * 128 * 2
    assert d["kv"]["num_blocks"] == int((20 * 0.9 - 2) * 2**30 - 2e9) // (10240 * 16)
    assert d["kv_transfer"]["bandwidth_bytes_per_s"] == 2 * 50e9 * 0.5


def test_kv_bytes_per_token_of_known_models():
    bpt = {n: kv_bytes_per_token(s["model"]) for n, s in SPECS.items()}
    assert bpt["h100-llama2-7b"] == 512 * 1024  # Llama-2-7B: 0.5 MiB per token (MHA)
    assert bpt["ascend910b-qwen7b"] == 56 * 1024  # Qwen2.5-7B: GQA, 4 KV heads
    assert bpt["h20-qwen3-32b"] == bpt["ascend910b-qwen32b"] == 256 * 1024
    assert bpt["rtx4060ti-chatglm2-6b-int4"] == 28 * 1024  # ChatGLM2: 2 KV groups


def test_iteration_time_is_proserve_eq7():
    pr = load_profile("h100-llama2-7b")["per_request"]
    got = iteration_time(pr, prefills=[(256, 1024), (512, 0)], decodes=[100, 2000])
    want = (
        pr["t_c"]
        + pr["a_p"] * 256**2
        + pr["b_p"] * 256 * 1024
        + pr["c_p"] * 256
        + pr["a_p"] * 512**2
        + pr["c_p"] * 512
        + pr["a_d"] * 2100
        + 2 * pr["b_d"]
    )
    assert got == pytest.approx(want, rel=1e-12)


# --- checks against the papers ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SPECS))
def test_checks_agree_with_papers(name):
    p = load_profile(name)
    for c in p["checks"]:
        got = recompute(p, c)
        assert got == pytest.approx(c["derived_value"], rel=1e-5), c["what"]  # stored number is honest
        assert got == pytest.approx(c["paper_value"], rel=c["tolerance_rel"]), c["what"]


@pytest.mark.parametrize("ctx", [100, 200, 300])
def test_slice_table2_orca_nine_decodes(ctx):
    pr = load_profile("rtx4060ti-chatglm2-6b-int4")["per_request"]
    assert step(pr, 9, ctx) == pytest.approx(0.12859, rel=0.15)  # Orca
    assert step(pr, 9, ctx) == pytest.approx(0.12956, rel=0.15)  # FastServe


def test_slice_fig1_near_linear_growth():
    pr = load_profile("rtx4060ti-chatglm2-6b-int4")["per_request"]
    steps = [step(pr, b, 300) for b in range(1, 11)]
    incs = [b - a for a, b in zip(steps, steps[1:])]
    assert all(i > 0 for i in incs) and max(incs) == pytest.approx(min(incs))
    assert steps[0] < steps[8] / 3  # the step grows ~linearly, so throughput gains < 3x from 1 to 9
    assert steps[9] > 0.120  # "above 120 ms" beyond batch 9


@pytest.mark.parametrize("ctx", [1000, 1500, 2000])
@pytest.mark.parametrize("n", [8, 16, 32])
def test_sibyl_h20_tps_curve(n, ctx):
    p = load_profile("h20-qwen3-32b")
    assert p["tps_quadratic"] == {"a": -0.423, "b": 44.766, "c": -7.753}
    paper = -0.423 * n * n + 44.766 * n - 7.753
    assert n / step(p["per_request"], n, ctx) == pytest.approx(paper, rel=0.25)


def test_plausibility_without_paper_numbers():
    assert 0.015 <= step(load_profile("ascend910b-qwen7b")["per_request"], 1, 512) <= 0.030
    assert 0.035 <= step(load_profile("ascend910b-qwen32b")["per_request"], 1, 512) <= 0.060
    assert 0.007 <= step(load_profile("h100-llama2-7b")["per_request"], 1, 512) <= 0.010
    # Bigger model on the same device is slower; bigger batch is slower; TP=2 holds more KV.
    q7, q32 = load_profile("ascend910b-qwen7b"), load_profile("ascend910b-qwen32b")
    assert step(q32["per_request"], 8, 512) > step(q7["per_request"], 8, 512)
    assert q32["kv"]["num_blocks"] * q32["kv"]["block_size"] > 100_000
