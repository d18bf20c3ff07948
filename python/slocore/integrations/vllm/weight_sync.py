"""vLLM worker extension for fast scaling (HFX Sec. 6): every
worker keeps a WeightManager of its checkpoint-format weights and can send them to, or
receive them from, a peer with the TLManager, pushing received weights into the running
engine with vLLM's own ``model_runner.reload_weights`` (the hook vLLM's RLHF examples use
through ``collective_rpc``; on CPU plain ``model.load_weights`` breaks on repacked linears).

Start the engine with
    --worker-extension-cls slocore.integrations.vllm.weight_sync.SlocoreWeightSync
(and ``VLLM_SERVER_DEV_MODE=1`` to reach ``POST /collective_rpc`` over HTTP), then call
    {"method": "slocore_load_from_disk", "args": [path]}
    {"method": "slocore_send",    "args": [target_host, port, timeout_s]}     # source
    {"method": "slocore_receive", "args": [host, port, fallback_path, timeout_s]}  # target
    {"method": "slocore_pin_host_cache", "args": [path]}   # at warm start: lock a host copy
    {"method": "slocore_load_from_host_cache", "args": [path]}
    {"method": "slocore_manifest"} / {"method": "slocore_param_checksums"}
Arguments arrive as strings over HTTP; results are JSON-able dicts, and a failure comes
back as {"error": ...} (an exception in a worker RPC would stop the engine). With tensor
parallelism each worker uses ``port + rank``. The WeightManager holds checkpoint-format
tensors in host memory (a second copy next to the engine's packed parameters): the price of
a format every target can reload, whatever kernel layout it uses.
"""

from __future__ import annotations

import functools
import time
import traceback


def _never_raise(fn):
    """A worker RPC that raises takes the whole vLLM engine down with it: report instead."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except Exception as e:
            return {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=5)}

    return wrapper


class SlocoreWeightSync:
    """Mixed into vLLM's worker class (``--worker-extension-cls``); `self` is the worker."""

    def _slocore_wm(self):
        from slocore.scaling.weights import WeightManager

        wm = getattr(self, "_slocore_weights", None)
        if wm is None:
            wm = self._slocore_weights = WeightManager()
        return wm

    def _slocore_rank(self) -> int:
        return int(getattr(self, "rank", 0) or 0)

    def _slocore_push(self, tensors, keep=None) -> float:
        """Push `tensors` into the engine and keep them to act as a source later, or keep
        `keep` instead (a WeightManager of the same weights held elsewhere)."""
        from slocore.scaling.weights import WeightManager

        t0 = time.perf_counter()
        self.model_runner.reload_weights(weights_iterator=iter(sorted(tensors.items())))
        # a new manager, never the old one cleared: that may be the locked copy's, kept for later
        self._slocore_weights = keep if keep is not None else WeightManager(tensors)
        return time.perf_counter() - t0

    @_never_raise
    def slocore_load_from_disk(self, path: str) -> dict:
        from slocore.scaling import disk

        t0 = time.perf_counter()
        tensors = disk.load_checkpoint(path, expected=disk.checkpoint_manifest(path))
        tensors = {k: v.clone() for k, v in tensors.items()}  # own memory, not the file's map
        push = self._slocore_push(tensors)
        self._slocore_wm().manifest()  # checksums now, so a later send starts at once
        return {"source": "disk", "seconds": time.perf_counter() - t0, "push_seconds": push, "tensors": len(tensors)}

    @_never_raise
    def slocore_pin_host_cache(self, path: str) -> dict:
        """Lock the pages of a host copy of the checkpoint (`scaling.disk.HostCache`) for this
        worker's GPU, so that `slocore_load_from_host_cache` is one copy per tensor at the
        link's speed (docs/scaling.md, "On a GPU"). On a worker without CUDA there is nothing
        to lock: {"pinned": false, "reason": ...}, and the load reads the copy."""
        import torch

        from slocore.scaling.pinned import PinnedCheckpoint
        from slocore.scaling.weights import WeightManager

        if not torch.cuda.is_available():
            return {"pinned": False, "reason": "this worker has no CUDA device"}
        old = getattr(self, "_slocore_pinned", None)
        if old is not None:
            old.close()
            self._slocore_pinned = None
        pinned = PinnedCheckpoint(path, device=f"cuda:{torch.cuda.current_device()}")
        t0 = time.perf_counter()
        # the copy's own pages as the source weights, checksummed now: not on the scale-out path
        source = WeightManager(pinned.host_views())
        source.manifest()
        self._slocore_pinned, self._slocore_pinned_path, self._slocore_pinned_source = pinned, path, source
        return {"pinned": True, "pin_seconds": pinned.pin_seconds, "checksum_seconds": time.perf_counter() - t0}

    @_never_raise
    def slocore_load_from_host_cache(self, path: str) -> dict:
        """The weights from a host copy: through the locked pages when
        `slocore_pin_host_cache(path)` ran on this worker, else by reading the copy."""
        from slocore.scaling import disk

        t0 = time.perf_counter()
        expected = disk.checkpoint_manifest(path)
        pinned = getattr(self, "_slocore_pinned", None)
        if pinned is not None and getattr(self, "_slocore_pinned_path", None) == path:
            push = self._slocore_push(pinned.load(expected=expected), keep=self._slocore_pinned_source)
        else:
            pinned = None
            tensors = {k: v.clone() for k, v in disk.load_checkpoint(path, expected=expected).items()}
            push = self._slocore_push(tensors)
            self._slocore_wm().manifest()  # checksums now, so a later send starts at once
        return {
            "source": "host",
            "pinned": pinned is not None,
            "seconds": time.perf_counter() - t0,
            "push_seconds": push,
            "tensors": len(expected),
        }

    @_never_raise
    def slocore_manifest(self) -> dict:
        return {"tensors": [m.to_json() for m in self._slocore_wm().manifest()]}

    @_never_raise
    def slocore_send(self, host: str, port, timeout_s="60") -> dict:
        from slocore.scaling.transfer import TLManager

        wm = self._slocore_wm()
        if len(wm) == 0:
            raise RuntimeError("slocore_send: this instance holds no weights (load them first)")
        t0 = time.perf_counter()
        TLManager("gloo", timeout_s=float(timeout_s)).send(wm, host, int(port) + self._slocore_rank())
        return {"seconds": time.perf_counter() - t0, "bytes": wm.nbytes()}

    @_never_raise
    def slocore_receive(self, host: str, port, fallback_path: str, timeout_s="60") -> dict:
        from slocore.scaling.transfer import TLManager

        r = TLManager("gloo", timeout_s=float(timeout_s)).receive(
            host, int(port) + self._slocore_rank(), fallback=fallback_path
        )
        push = self._slocore_push(r.tensors)
        return {
            "source": r.source,
            "seconds": r.seconds + push,
            "transfer_seconds": r.seconds,
            "push_seconds": push,
            "bytes": r.nbytes,
            "reason": r.reason,
        }

    @_never_raise
    def slocore_param_checksums(self) -> dict:
        """Checksums of the engine's own parameters (kernel format): equal on two instances
        iff they hold the same weights in the same layout."""
        from slocore.scaling.weights import checksum

        return {n: checksum(p.data) for n, p in self.model_runner.get_model().named_parameters()}
