"""A host-memory checkpoint whose pages are locked for the GPU ahead of a scale-out.

Measured on an H200 (docs/scaling.md, "On a GPU"): 15 GB reach the device in 0.29 s from
page-locked memory, but in 3.8 s through a plain read of a `/dev/shm` copy, and locking the
pages when the load starts (`cudaHostRegister`) costs what it saves. So a warm instance
locks the node's host copy (`disk.HostCache`) when it starts, off the scale-out path, and
the scale-out is then one copy per tensor at the link's speed. The pages are the shared
copy's own (a shared mapping of the file): locking them takes no second copy of the weights.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence

import torch

from slocore.scaling.weights import (
    TensorMeta,
    checkpoint_files,
    dtype_from_name,
    holds,
    manifest_mismatch,
    safetensors_layout,
)


class PinnedCheckpoint:
    """Every safetensors file of `path` mapped and registered with the CUDA driver.
    ``pin_seconds`` is what locking took; `load` copies into device tensors; `close`
    unregisters (also on exit of a ``with`` block)."""

    def __init__(self, path: str, device: str = "cuda"):
        if torch.device(device).type != "cuda" or not torch.cuda.is_available():
            raise RuntimeError(f"PinnedCheckpoint: locking pages needs a CUDA device, not {device!r}")
        self.device = device
        self._cudart = torch.cuda.cudart()
        self._files: list[tuple[torch.Tensor, list[tuple[TensorMeta, int]]]] = []
        t0 = time.perf_counter()
        try:
            for f in checkpoint_files(path):
                host = map_file(f)
                size = host.numel()
                if int(self._cudart.cudaHostRegister(host.data_ptr(), size, 0)) != 0:
                    raise RuntimeError(f"PinnedCheckpoint: the driver refused to lock {f} ({size} bytes)")
                self._files.append((host, safetensors_layout(f)))
        except Exception:
            self.close()
            raise
        self.pin_seconds = time.perf_counter() - t0

    def host_views(self) -> dict[str, torch.Tensor]:
        """Every tensor as a CPU view into the mapped copy: what an instance keeps to act as
        a transfer source afterwards, with no second copy of the weights."""
        return {n: t for host, layout in self._files for n, t in layout_views(host, layout).items()}

    def manifest(self) -> list[TensorMeta]:
        return sorted((m for _, layout in self._files for m, _ in layout), key=lambda m: m.name)

    def load(
        self, expected: Sequence[TensorMeta] | None = None, into: Mapping[str, torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        """Every tensor on the device, in the instance's own tensors where they fit (``into``),
        checked against ``expected`` first; returns when all copies have landed."""
        if not self._files:
            raise RuntimeError("PinnedCheckpoint: closed")
        if expected is not None:
            why = manifest_mismatch(expected, self.manifest())
            if why:
                raise ValueError(f"PinnedCheckpoint: not the expected weights: {why}")
        out: dict[str, torch.Tensor] = {}
        for host, layout in self._files:
            for m, off in layout:
                d = None if into is None else into.get(m.name)
                if d is None or not d.is_cuda or not holds(d, m):  # else the bytes go in place
                    d = torch.empty(m.shape, dtype=dtype_from_name(m.dtype), device=self.device)
                if m.nbytes:
                    d.reshape(-1).view(torch.uint8).copy_(host[off : off + m.nbytes], non_blocking=True)
                out[m.name] = d
        torch.cuda.synchronize(self.device)
        return out

    def close(self) -> None:
        for host, _ in self._files:
            self._cudart.cudaHostUnregister(host.data_ptr())
        self._files = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def map_file(file: str) -> torch.Tensor:
    """A file as a uint8 CPU tensor over a shared mapping of it (no read, no copy; the file is
    opened for writing, as a HostCache copy is this process's to open)."""
    return torch.from_file(file, shared=True, size=os.path.getsize(file), dtype=torch.uint8)


def layout_views(host: torch.Tensor, layout: list[tuple[TensorMeta, int]]) -> dict[str, torch.Tensor]:
    """Each tensor of a mapped safetensors file (`host`, its `safetensors_layout`) as a view
    with its dtype and shape; a tensor whose offset does not suit its dtype is copied."""
    out = {}
    for m, off in layout:
        raw = host[off : off + m.nbytes]
        try:
            out[m.name] = raw.view(dtype_from_name(m.dtype)).view(m.shape)
        except RuntimeError:  # misaligned for the dtype
            out[m.name] = raw.clone().view(dtype_from_name(m.dtype)).view(m.shape)
    return out
