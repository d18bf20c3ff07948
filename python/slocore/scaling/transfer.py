"""TLManager: peer-to-peer weight transfer between a running instance and a new one
(HFX Sec. 6, "Fast scaling"; HFX-v2 Sec. 3.4).

The *target* (the new, warm instance) opens a temporary two-rank process group: it hosts a
TCPStore at ``host:port``, the *source* (a running instance, rank 0) connects and posts its
manifest (names, shapes, dtypes, sizes, checksums in the fixed order of sorted names). The
target compares the manifest with what it expects (the checkpoint headers), answers
``go`` or ``abort``, and on ``go`` both build a process group of their own (gloo on CPU,
nccl on NVIDIA, hccl on Ascend via torch_npu) that never touches the engine's default
group. The source sends every tensor in order, in chunks, a few in flight; the target
verifies each tensor's checksum as soon as its last chunk lands (while later chunks are
still arriving). Any mismatch, error, dead peer or timeout makes the target load the
checkpoint from disk instead (``disk.load_checkpoint``), so the instance always comes up.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable

import torch
import torch.distributed as dist

from slocore.scaling.weights import TensorMeta, WeightManager, checksum, dtype_from_name, holds, manifest_mismatch

BACKENDS = ("gloo", "nccl", "hccl")


class TransferError(RuntimeError):
    """A peer transfer failed; the reason says why (the caller falls back to disk)."""


def default_backend(device: str | torch.device = "cpu") -> str:
    kind = torch.device(device).type
    return {"cpu": "gloo", "cuda": "nccl", "npu": "hccl"}.get(kind, "gloo")


def _host_copy(b: torch.Tensor) -> torch.Tensor:
    """A host buffer for one chunk of a device tensor (pinned on CUDA: the copy runs at the
    link's speed and the caching host allocator reuses the buffer)."""
    return torch.empty(b.numel(), dtype=torch.uint8, pin_memory=b.device.type == "cuda")


@contextlib.contextmanager
def _env(**values: str):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _make_group(backend: str, store, rank: int, host: str, timeout: timedelta, streams: int = 1):
    """A two-rank process group on `store`, independent of torch.distributed's default group.
    gloo: ``streams`` connections (one context each; chunk k goes over connection k % streams)."""
    if backend == "gloo":
        opts = dist.ProcessGroupGloo._Options()
        opts._timeout = timeout
        opts._devices = [dist.ProcessGroupGloo.create_device(hostname=host)] * max(1, streams)
        opts._threads = max(2, streams)
        return dist.ProcessGroupGloo(store, rank, 2, opts)
    if backend == "nccl":
        opts = dist.ProcessGroupNCCL.Options()
        opts._timeout = timeout
        # A failed or stuck transfer must fall back to disk, not end the engine: by default
        # NCCL's watchdog tears the whole process down on an error. The group reads this at
        # construction, so the engine's own groups keep their setting.
        with _env(TORCH_NCCL_ASYNC_ERROR_HANDLING="0"):
            return dist.ProcessGroupNCCL(store, rank, 2, opts)
    if backend == "hccl":  # not exercised here: needs torch_npu on Ascend
        import torch_npu  # noqa: F401
        from torch_npu._C._distributed_c10d import ProcessGroupHCCL

        opts = ProcessGroupHCCL.Options()
        return ProcessGroupHCCL(store, rank, 2, opts)
    raise ValueError(f"TLManager: unknown backend {backend!r} (known: {', '.join(BACKENDS)})")


@dataclass
class TransferResult:
    """What a target ended up with. ``source`` is "peer" or "disk"; ``reason`` says why the
    peer transfer was not used (None when it was)."""

    tensors: dict[str, torch.Tensor]
    source: str
    seconds: float
    nbytes: int
    reason: str | None = None
    peer_seconds: float | None = None  # time spent on the peer attempt (also when it failed)
    timings: dict[str, float] = field(default_factory=dict)


def _chunks(nbytes: int, chunk: int) -> list[tuple[int, int]]:
    return [(o, min(o + chunk, nbytes)) for o in range(0, nbytes, chunk)] or [(0, 0)]


class TLManager:
    """Transfer-layer manager. One object per instance; `send` runs on the source,
    `receive` on the target. ``timeout_s`` bounds every wait (connect, manifest, each chunk);
    ``deadline_s`` bounds a whole receive."""

    def __init__(
        self,
        backend: str | None = None,
        *,
        device: str = "cpu",
        timeout_s: float = 30.0,
        deadline_s: float | None = None,
        chunk_bytes: int = 64 << 20,
        window: int = 4,
        streams: int = 1,
    ):
        self.device = device
        self.backend = backend or default_backend(device)
        if self.backend not in BACKENDS:
            raise ValueError(f"TLManager: unknown backend {self.backend!r} (known: {', '.join(BACKENDS)})")
        if timeout_s <= 0 or chunk_bytes <= 0 or window <= 0:
            raise ValueError("TLManager: timeout_s, chunk_bytes and window must be > 0")
        self.timeout = timedelta(seconds=timeout_s)
        self.deadline_s = deadline_s
        self.chunk_bytes = int(chunk_bytes)
        self.window = int(window)
        self.streams = max(1, int(streams))

    # ---------------------------------------------------------------- source side
    def send(
        self, weights: WeightManager, host: str, port: int, *, on_tensor_sent: Callable[[int, str], None] | None = None
    ) -> None:
        """Connect to the target waiting at host:port and send every tensor in order.
        Raises TransferError when the target refuses the manifest or the transfer fails."""
        store = dist.TCPStore(host, port, 2, False, timeout=self.timeout, wait_for_workers=False)
        manifest = weights.manifest()
        store.set(
            "manifest",
            json.dumps(
                {
                    "backend": self.backend,
                    "chunk_bytes": self.chunk_bytes,
                    "streams": self.streams,
                    "tensors": [m.to_json() for m in manifest],
                }
            ),
        )
        verdict = store.get("verdict").decode()
        if verdict != "go":
            raise TransferError(f"target refused the transfer: {verdict}")
        pg = _make_group(self.backend, dist.PrefixStore("tl", store), 0, host, self.timeout, self.streams)
        try:
            pending: list = []  # (work, the buffer it reads, kept alive until it is done)
            tag = 0
            for i, (name, t) in enumerate(weights.items()):
                if self.backend != "gloo" and torch.device(self.device).type != "cpu" and t.device.type == "cpu":
                    t = t.to(self.device)
                b = t.detach().contiguous().reshape(-1).view(torch.uint8)
                for lo, hi in _chunks(b.numel(), self.chunk_bytes):
                    if hi > lo:
                        buf = b[lo:hi]
                        if self.backend == "gloo" and buf.device.type != "cpu":  # gloo moves host memory only
                            buf = _host_copy(buf).copy_(buf)
                        pending.append((pg.send([buf], 1, tag), buf))
                        tag += 1
                    while len(pending) >= self.window:
                        pending.pop(0)[0].wait(self.timeout)
                if on_tensor_sent is not None:
                    on_tensor_sent(i, name)
            for w, _ in pending:
                w.wait(self.timeout)
            store.get("done")  # the target has verified what it received
            store.set("ack", "1")
        finally:
            _shutdown(pg)

    # ---------------------------------------------------------------- target side
    def receive(
        self,
        host: str,
        port: int,
        *,
        expected: Sequence[TensorMeta] | None = None,
        fallback: str | Callable[[], Mapping[str, torch.Tensor]] | None = None,
        into: Mapping[str, torch.Tensor] | None = None,
    ) -> TransferResult:
        """Wait at host:port for a source, receive and verify its tensors; on any failure
        load from `fallback` (a safetensors path or a callable). ``expected`` is what the
        target needs (by default the fallback checkpoint's headers). ``into`` lets the
        target receive straight into tensors it already holds (a warm instance's dummy
        weights); otherwise new tensors are allocated on ``device``."""
        from slocore.scaling import disk

        t0 = time.perf_counter()
        if expected is None and isinstance(fallback, str):
            expected = disk.checkpoint_manifest(fallback)
        try:
            tensors, timings = self._receive_peer(host, port, expected, into)
            nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
            dt = time.perf_counter() - t0
            return TransferResult(tensors, "peer", dt, nbytes, None, dt, timings)
        except Exception as e:  # any failure: dead peer, timeout, mismatch, bad checksum
            reason = f"{type(e).__name__}: {e}"
        peer_s = time.perf_counter() - t0
        if fallback is None:
            raise TransferError(f"peer transfer failed and no fallback given: {reason}")
        if callable(fallback):
            tensors = dict(fallback())
            if into is not None:
                tensors = disk.copy_into(tensors, into)
        else:
            tensors = disk.load_checkpoint(fallback, device=self.device, expected=expected, into=into)
        nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
        return TransferResult(tensors, "disk", time.perf_counter() - t0, nbytes, reason, peer_s)

    def _receive_peer(self, host, port, expected, into):
        timings = {}
        t0 = time.perf_counter()
        store = dist.TCPStore(host, port, 2, True, timeout=self.timeout, wait_for_workers=False)
        try:
            head = json.loads(store.get("manifest"))  # blocks until a source shows up
            got = [TensorMeta.from_json(d) for d in head["tensors"]]
            why = None
            if head.get("backend") != self.backend:
                why = f"backend {head.get('backend')} != {self.backend}"
            elif expected is not None:
                why = manifest_mismatch(expected, got)
            if why is None and any(m.checksum is None for m in got):
                why = "source sent no checksums"
            store.set("verdict", "go" if why is None else f"abort: {why}")
            if why is not None:
                raise TransferError(f"manifest check failed: {why}")
            timings["connect_s"] = time.perf_counter() - t0
            chunk = int(head["chunk_bytes"])
            pg = _make_group(
                self.backend, dist.PrefixStore("tl", store), 1, host, self.timeout, int(head.get("streams", 1))
            )
            try:
                out = self._recv_all(pg, got, chunk, into)
            finally:
                _shutdown(pg)
            timings["transfer_s"] = time.perf_counter() - t0 - timings["connect_s"]
            store.set("done", "ok")
            try:  # keep the store up until the source has read "done"
                store.wait(["ack"], timedelta(seconds=5))
            except Exception:
                pass
            return out, timings
        finally:
            del store

    def _recv_all(self, pg, metas: list[TensorMeta], chunk: int, into):
        deadline = None if self.deadline_s is None else time.perf_counter() + self.deadline_s
        out: dict[str, torch.Tensor] = {}
        pending: list = []  # (work, tensor index or -1, (host buffer, device span) when staged)
        checked = 0

        def verify(i: int):
            m = metas[i]
            c = checksum(out[m.name], _algo_of(m.checksum))
            if c != m.checksum:
                raise TransferError(f"{m.name}: checksum {c} != source's {m.checksum}")

        def drain_one():
            nonlocal checked
            w, last_of, staged = pending.pop(0)
            if deadline is not None and time.perf_counter() > deadline:
                raise TransferError("transfer deadline exceeded")
            w.wait(self.timeout)
            if staged is not None:  # gloo received into host memory: on to the device
                staged[1].copy_(staged[0])
            if last_of >= 0:  # tensor last_of is complete: verify it while later chunks fly
                verify(last_of)
                checked += 1

        tag = 0
        for i, m in enumerate(metas):
            dst = None if into is None else into.get(m.name)
            if dst is None or not holds(dst, m):
                dst = torch.empty(m.shape, dtype=dtype_from_name(m.dtype), device=self.device)
            out[m.name] = dst
            b = dst.reshape(-1).view(torch.uint8)
            spans = _chunks(b.numel(), chunk)
            for k, (lo, hi) in enumerate(spans):
                last = i if k == len(spans) - 1 else -1
                if hi > lo:
                    span, staged = b[lo:hi], None
                    if self.backend == "gloo" and span.device.type != "cpu":  # gloo moves host memory only
                        staged = (_host_copy(span), span)
                    pending.append((pg.recv([span if staged is None else staged[0]], 0, tag), last, staged))
                    tag += 1
                elif last >= 0:  # empty tensor: nothing to receive
                    pending.append((_Done(), last, None))
                while len(pending) > self.window:
                    drain_one()
        while pending:
            drain_one()
        assert checked == len(metas)
        return out


def _algo_of(c: str) -> str:
    return "crc32" if len(c.split(":")[0]) == 8 else "sum64"


class _Done:
    def wait(self, *_):
        return True


def _shutdown(pg) -> None:
    for m in ("shutdown", "abort"):
        f = getattr(pg, m, None)
        if f is not None:
            try:
                f()
                return
            except Exception:
                pass


def _main(argv=None) -> int:
    """`python -m slocore.scaling.transfer send|receive ...`: push a checkpoint held in this
    process's memory to a target, or wait for one (fallback to disk)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m slocore.scaling.transfer")
    ap.add_argument("mode", choices=["send", "receive"])
    ap.add_argument("--checkpoint", required=True, help="safetensors file or folder")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, help="the target's rendezvous port (send: or read it from stdin)")
    ap.add_argument("--backend", default="gloo", choices=BACKENDS)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--streams", type=int, default=1, help="send: parallel gloo connections")
    ap.add_argument("--chunk-mb", type=int, default=64)
    ap.add_argument("--ready-file", help="send: touch this file once the weights are in memory")
    ap.add_argument("--device", default="cpu", help="where the weights live (cpu, cuda, cuda:1, npu)")
    a = ap.parse_args(argv)
    tl = TLManager(
        a.backend,
        device=a.device,
        timeout_s=a.timeout,
        streams=a.streams,
        chunk_bytes=a.chunk_mb << 20,
        window=max(4, 2 * a.streams),
    )
    if a.mode == "send":
        wm = WeightManager.from_safetensors(a.checkpoint, device=a.device)
        wm.manifest()  # checksums once, before any target waits
        if a.ready_file:
            open(a.ready_file, "w").close()
        port = a.port if a.port is not None else int(sys.stdin.readline())
        tl.send(wm, a.host, port)
        return 0
    if a.port is None:
        ap.error("receive needs --port")
    r = tl.receive(a.host, a.port, fallback=a.checkpoint)
    print(json.dumps({"source": r.source, "seconds": r.seconds, "nbytes": r.nbytes, "reason": r.reason}))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
