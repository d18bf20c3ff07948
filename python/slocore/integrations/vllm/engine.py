"""Launch specs for real vLLM servers under slocore's launchers, with the fast-scaling
weight path: warm instances start with ``--load-format dummy`` and the
``SlocoreWeightSync`` worker extension; on scale-out the launcher pushes weights into them
from a running instance (peer transfer via ``collective_rpc``) or from disk.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Callable, Optional

from slocore.childenv import child_env
from slocore.ports import free_port
from slocore.scaling.launcher import EngineSpec, Instance, InstanceState

log = logging.getLogger(__name__)
EXTENSION = "slocore.integrations.vllm.weight_sync.SlocoreWeightSync"


def collective_rpc(url: str, method: str, args: Sequence = (), timeout: float = 300.0):
    """POST /collective_rpc (vLLM with VLLM_SERVER_DEV_MODE=1); returns the workers' results."""
    body = json.dumps({"method": method, "args": [str(a) for a in args], "timeout": timeout}).encode()
    req = urllib.request.Request(url + "/collective_rpc", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout + 10) as r:
        data = r.read()
    return json.loads(data)["results"] if data else None


@dataclass
class VllmEngine:
    """How to run the model at `model_dir` with weights at `checkpoint` (a safetensors file
    or folder). ``python`` is the interpreter with vLLM installed (it may differ from this
    one: the launcher side needs neither torch nor vLLM)."""

    model_dir: str
    checkpoint: str
    python: str = sys.executable
    args: Sequence[str] = ("--dtype", "bfloat16", "--max-model-len", "1024", "--max-num-seqs", "32", "--enforce-eager")
    env: dict = field(default_factory=dict)
    transfer_timeout_s: float = 60.0
    peers: Optional[Callable[[], list[Instance]]] = None  # running instances that can be sources
    log_dir: Optional[str] = None
    # A host copy of the checkpoint (`scaling.disk.HostCache(checkpoint).dir`): warm instances
    # lock its pages for their GPU when they start, and scale-outs load from it first.
    host_cache: Optional[str] = None

    def command(self, port: int, role: str, warm: bool) -> list[str]:
        argv = [
            self.python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.model_dir,
            "--host",
            "{host}",
            "--port",
            str(port),
            "--worker-extension-cls",
            EXTENSION,
            *self.args,
        ]
        # warm: runtime up without weights; cold: dummy too, weights then come from disk in
        # load_weights, so every instance holds a WeightManager that can act as a source
        return argv + ["--load-format", "dummy"]

    def prepare_warm(self, inst: Instance) -> None:
        """At warm start, off the scale-out path: lock the host copy's pages (a no-op on CPU)."""
        if self.host_cache is not None:
            (r,) = collective_rpc(inst.url, "slocore_pin_host_cache", [self.host_cache])
            inst.host_pin = r  # type: ignore[attr-defined]
            if "error" in r:
                raise RuntimeError(f"instance {inst.id}: locking the host copy failed: {r['error']}")

    def load_weights(self, inst: Instance) -> str:
        """The host copy when there is one, else peer transfer from a running instance when
        there is one, else disk."""
        if self.host_cache is not None:
            (r,) = collective_rpc(inst.url, "slocore_load_from_host_cache", [self.host_cache])
            inst.host_load = r  # type: ignore[attr-defined]
            if "error" not in r:
                return "host"
            log.warning("instance %s: the host copy failed (%s); trying a peer, then disk", inst.id, r["error"])
        sources = [
            p for p in (self.peers() if self.peers else []) if p.state == InstanceState.READY and p.id != inst.id
        ]
        if not sources:
            (r,) = collective_rpc(inst.url, "slocore_load_from_disk", [self.checkpoint])
            if "error" in r:
                raise RuntimeError(f"instance {inst.id}: loading weights from disk failed: {r['error']}")
            return "disk"
        src = sources[0]
        port = free_port(inst.host)
        res: dict = {}

        def send():
            try:
                res["send"] = collective_rpc(src.url, "slocore_send", [inst.host, port, self.transfer_timeout_s])
            except Exception as e:  # the target falls back to disk on its own
                res["send_error"] = repr(e)

        t = threading.Thread(target=send, daemon=True)
        t.start()
        (r,) = collective_rpc(inst.url, "slocore_receive", [inst.host, port, self.checkpoint, self.transfer_timeout_s])
        t.join(self.transfer_timeout_s + 10)
        inst.transfer = r  # type: ignore[attr-defined]
        if "error" in r:
            raise RuntimeError(f"instance {inst.id}: receiving weights failed: {r['error']}")
        return "peer" if r["source"] == "peer" else "disk"

    def spec(self, **kw) -> EngineSpec:
        env = {
            "VLLM_SERVER_DEV_MODE": "1",
            "HF_HUB_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "PYTHONPATH": child_env()["PYTHONPATH"],
            **self.env,
        }
        base = dict(
            command=self.command,
            env=env,
            load_weights=self.load_weights,
            prepare_warm=self.prepare_warm if self.host_cache is not None else None,
            cold_loads_weights=False,
            switch_role=lambda inst, role: True,  # colocated vLLM: the router's role only
            log_dir=self.log_dir,
        )
        base.update(kw)
        return EngineSpec(**base)
