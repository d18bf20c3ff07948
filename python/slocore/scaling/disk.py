"""Loading weights without a peer: from disk (safetensors, the fallback of every transfer)
and from a host-memory copy (HFX Table 2's "CPU offloading" row:
the checkpoint kept in shared memory, /dev/shm, so a new instance copies instead of reading
the disk)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping, Sequence

import torch

from slocore.scaling.weights import (
    TensorMeta,
    checkpoint_files,
    load_safetensors,
    manifest_mismatch,
    safetensors_manifest,
)


class CheckpointError(RuntimeError):
    pass


def checkpoint_manifest(path: str) -> list[TensorMeta]:
    return safetensors_manifest(path)


def load_checkpoint(
    path: str,
    device: str = "cpu",
    expected: Sequence[TensorMeta] | None = None,
    into: Mapping[str, torch.Tensor] | None = None,
) -> dict[str, torch.Tensor]:
    """Every tensor of the checkpoint at `path` (file or folder), checked against `expected`.
    safetensors maps the file lazily; with ``into`` (the instance's own, already allocated
    tensors, e.g. a warm instance's dummy weights) every byte is copied in, so the weights
    are really read, as an engine needs them."""
    tensors = load_safetensors(path, device)
    if expected is not None:
        got = [
            TensorMeta(n, tuple(t.shape), str(t.dtype).removeprefix("torch."), t.numel() * t.element_size())
            for n, t in sorted(tensors.items())
        ]
        why = manifest_mismatch(expected, got)
        if why:
            raise CheckpointError(f"checkpoint {path} does not match the expected weights: {why}")
    if into is not None:
        return copy_into(tensors, into)
    return tensors


def copy_into(tensors: Mapping[str, torch.Tensor], into: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Copy `tensors` into the matching tensors of `into` (same shape and dtype); tensors
    with no match are materialised as fresh copies. Returns the resulting name -> tensor."""
    out = {}
    for n, t in tensors.items():
        d = into.get(n)
        if d is not None and d.shape == t.shape and d.dtype == t.dtype:
            d.copy_(t)
            out[n] = d
        else:
            out[n] = t.clone()
    return out


def drop_page_cache(path: str) -> None:
    """Evict one checkpoint's pages from the OS page cache (POSIX_FADV_DONTNEED), so the next
    read comes from the disk. Only these files; the rest of the machine is untouched."""
    for f in checkpoint_files(path):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class HostCache:
    """A host-memory copy of a checkpoint in shared memory (tmpfs): loading it is a memory
    copy, not a disk read. ``root`` defaults to /dev/shm."""

    def __init__(self, path: str, root: str = "/dev/shm", name: str | None = None):
        if not os.path.isdir(root):
            raise FileNotFoundError(f"HostCache: {root} is not a folder")
        self.src = path
        self.dir = os.path.join(root, name or f"slocore-hostcache-{os.getpid()}-{int(time.time() * 1e6)}")
        os.makedirs(self.dir, exist_ok=False)
        for f in checkpoint_files(path):
            shutil.copyfile(f, os.path.join(self.dir, os.path.basename(f)))

    def load(
        self,
        device: str = "cpu",
        expected: Sequence[TensorMeta] | None = None,
        into: Mapping[str, torch.Tensor] | None = None,
    ) -> dict[str, torch.Tensor]:
        return load_checkpoint(self.dir, device, expected, into)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
