"""bench/goodput_binding.py: the decode-only step at the peak by hand, and its refusals."""

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "goodput_binding.py"


@pytest.fixture(scope="module")
def binding():
    spec = importlib.util.spec_from_file_location("goodput_binding", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rec(instance, prompt_len, token_times):
    return SimpleNamespace(instance=instance, request=SimpleNamespace(prompt_len=prompt_len), token_times=token_times)


def test_peak_decode_step_by_hand(binding):
    """A request decodes at whole second t when first <= t < last token, over its prompt plus
    the tokens it has by t but the last sampled (its KV); the step is t_c plus the instances'
    mean decode cost at the worst second."""
    c = {"t_c": 0.01, "a_d": 1e-6, "b_d": 1e-3}
    recs = [
        _rec(0, 1000, [0.5, 1.5, 2.5]),  # decodes at t = 1 (1 token by then) and t = 2 (2)
        _rec(1, 3000, [1.2, 1.9, 2.1]),  # decodes at t = 2 (2 tokens by then; 2.1 is its last)
        _rec(1, 500, [0.2]),  # one token: never decodes
    ]
    # t = 1: instance 0 costs a_d * 1000 + b_d, instance 1 nothing; t = 2: 1001 and 3001.
    at1 = (1e-6 * 1000 + 1e-3) / 2
    at2 = ((1e-6 * 1001 + 1e-3) + (1e-6 * 3001 + 1e-3)) / 2
    assert binding.peak_decode_step(recs, c, 2) == pytest.approx(0.01 + max(at1, at2))
    assert binding.peak_decode_step([recs[2]], c, 2) == 0.01  # nothing decodes: the fixed cost


@pytest.mark.parametrize(
    "args, says",
    [
        (["--cells", "agentic"], "--cells/--seeds"),
        (["--cells", "agentic:x"], "--cells/--seeds"),
        (["--cells", "nope:1.2"], "unknown workload 'nope'"),
        (["--cells", "hfx_4task_pd:1.2"], "is a P/D workload"),
        (["--seeds", "a"], "--cells/--seeds"),
        (["--processes", "0"], "--processes: must be >= 1"),
    ],
)
def test_refuses_bad_arguments_before_running(args, says):
    r = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr
