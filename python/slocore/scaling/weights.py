"""WeightManager: the tensors of a running instance by name (HFX Sec. 6,
"Fast scaling"; HFX-v2 Sec. 3.4).

Every running instance keeps one. It answers the *manifest* (names, shapes, dtypes, byte
sizes and checksums, in the fixed transfer order) that a target compares against what it
expects before it accepts weights from a peer, and it loads and saves safetensors
checkpoints (the disk path every transfer falls back to).

Checksums: ``sum64`` (default) is the wrapping sum of the tensor's bytes read as int64
words (tail bytes as int8), about 2 GB/s on this machine's CPU, and catches any corrupted
word; ``crc32`` (zlib, ~0.8 GB/s) also catches reordered words. A source computes its
checksums once, when its weights are registered, so a transfer only pays the target side.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import torch

CHECKSUM_ALGOS = ("sum64", "crc32")


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    """A flat uint8 view of a contiguous CPU or device tensor (no copy)."""
    t = t.detach()
    if not t.is_contiguous():
        t = t.contiguous()
    return t.reshape(-1).view(torch.uint8)


def checksum(t: torch.Tensor, algo: str = "sum64") -> str:
    """Checksum of a tensor's bytes, as a hex string (device tensors are summed on device)."""
    b = _as_bytes(t)
    if algo == "sum64":
        n8 = (b.numel() // 8) * 8
        s = int(b[:n8].view(torch.int64).sum().item()) if n8 else 0
        tail = int(b[n8:].to(torch.int64).sum().item()) if n8 < b.numel() else 0
        return f"{(s + tail) & 0xFFFFFFFFFFFFFFFF:016x}:{b.numel()}"
    if algo == "crc32":
        return f"{zlib.crc32(memoryview(b.cpu().numpy())):08x}:{b.numel()}"
    raise ValueError(f"checksum: unknown algo {algo!r} (known: {', '.join(CHECKSUM_ALGOS)})")


def dtype_name(dt: torch.dtype) -> str:
    return str(dt).removeprefix("torch.")


def holds(t: torch.Tensor, m: TensorMeta) -> bool:
    """Whether `t` can take `m`'s bytes in place: same shape and dtype, contiguous."""
    return tuple(t.shape) == m.shape and dtype_name(t.dtype) == m.dtype and t.is_contiguous()


def dtype_from_name(name: str) -> torch.dtype:
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dt


@dataclass(frozen=True)
class TensorMeta:
    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    checksum: str | None = None

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "nbytes": self.nbytes,
            "checksum": self.checksum,
        }

    @staticmethod
    def from_json(d: Mapping) -> TensorMeta:
        return TensorMeta(
            str(d["name"]), tuple(int(x) for x in d["shape"]), str(d["dtype"]), int(d["nbytes"]), d.get("checksum")
        )


def manifest_mismatch(expected: Iterable[TensorMeta], got: Iterable[TensorMeta]) -> str | None:
    """Why `got` cannot stand in for `expected` (names, order, shapes, dtypes), or None."""
    exp, g = list(expected), list(got)
    en, gn = [m.name for m in exp], [m.name for m in g]
    if en != gn:
        missing = sorted(set(en) - set(gn))[:3]
        extra = sorted(set(gn) - set(en))[:3]
        return f"tensor names differ (missing {missing}, unexpected {extra}, or order differs)"
    for a, b in zip(exp, g):
        if a.shape != b.shape:
            return f"{a.name}: shape {list(b.shape)} != expected {list(a.shape)}"
        if a.dtype != b.dtype:
            return f"{a.name}: dtype {b.dtype} != expected {a.dtype}"
    return None


class WeightManager:
    """Tensor name -> tensor for one instance; the transfer order is the sorted names."""

    def __init__(self, tensors: Mapping[str, torch.Tensor] | None = None, *, algo: str = "sum64"):
        if algo not in CHECKSUM_ALGOS:
            raise ValueError(f"WeightManager: unknown checksum algo {algo!r}")
        self.algo = algo
        self._tensors: dict[str, torch.Tensor] = {}
        self._checksums: dict[str, str] = {}
        if tensors:
            self.register_many(tensors)

    # -- contents --------------------------------------------------------------------
    def register(self, name: str, tensor: torch.Tensor) -> None:
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"WeightManager.register: {name!r} is not a tensor")
        self._tensors[name] = tensor.detach()
        self._checksums.pop(name, None)

    def register_many(self, tensors: Mapping[str, torch.Tensor]) -> None:
        for k, v in tensors.items():
            self.register(k, v)

    def clear(self) -> None:
        self._tensors.clear()
        self._checksums.clear()

    def names(self) -> list[str]:
        return sorted(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def __contains__(self, name: str) -> bool:
        return name in self._tensors

    def __getitem__(self, name: str) -> torch.Tensor:
        return self._tensors[name]

    def items(self) -> Iterator[tuple[str, torch.Tensor]]:
        """(name, tensor) in the fixed transfer order."""
        for n in self.names():
            yield n, self._tensors[n]

    def state_dict(self) -> dict[str, torch.Tensor]:
        return dict(self.items())

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self._tensors.values())

    # -- checks ----------------------------------------------------------------------
    def checksum(self, name: str) -> str:
        c = self._checksums.get(name)
        if c is None:
            c = self._checksums[name] = checksum(self._tensors[name], self.algo)
        return c

    def manifest(self, with_checksums: bool = True) -> list[TensorMeta]:
        return [
            TensorMeta(
                n,
                tuple(t.shape),
                dtype_name(t.dtype),
                t.numel() * t.element_size(),
                self.checksum(n) if with_checksums else None,
            )
            for n, t in self.items()
        ]

    def equals(self, other: WeightManager | Mapping[str, torch.Tensor]) -> bool:
        o = other.state_dict() if isinstance(other, WeightManager) else dict(other)
        if sorted(o) != self.names():
            return False
        return all(
            o[n].dtype == t.dtype and o[n].shape == t.shape and torch.equal(o[n].cpu(), t.cpu())
            for n, t in self.items()
        )

    # -- disk --------------------------------------------------------------------------
    @classmethod
    def from_safetensors(cls, path: str, device: str = "cpu", algo: str = "sum64") -> WeightManager:
        return cls(load_safetensors(path, device), algo=algo)

    def save_safetensors(self, path: str) -> None:
        from safetensors.torch import save_file

        save_file({n: t.contiguous().cpu() for n, t in self.items()}, path)


def checkpoint_files(path: str) -> list[str]:
    """The safetensors files of a checkpoint: one file, or every *.safetensors in a folder."""
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".safetensors"))
        if not files:
            raise FileNotFoundError(f"no *.safetensors in {path}")
        return files
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    return [path]


def load_safetensors(path: str, device: str = "cpu") -> dict[str, torch.Tensor]:
    """Load every tensor of a checkpoint (file or folder of shards)."""
    from safetensors.torch import load_file

    out: dict[str, torch.Tensor] = {}
    for f in checkpoint_files(path):
        out.update(load_file(f, device=device))
    return out


_ST_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
}


def safetensors_layout(file: str) -> list[tuple[TensorMeta, int]]:
    """One safetensors file's tensors, each with the file offset of its first byte, from the
    header alone (no tensor read)."""
    with open(file, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(n))
    out = []
    for name, d in header.items():
        if name == "__metadata__":
            continue
        b0, b1 = d["data_offsets"]
        meta = TensorMeta(name, tuple(d["shape"]), _ST_DTYPES.get(d["dtype"], d["dtype"].lower()), b1 - b0)
        out.append((meta, 8 + n + b0))
    return out


def safetensors_manifest(path: str) -> list[TensorMeta]:
    """Names, shapes, dtypes and sizes from the checkpoint headers alone (no tensor read):
    what a warm target expects before any weights arrive."""
    metas = [m for f in checkpoint_files(path) for m, _ in safetensors_layout(f)]
    return sorted(metas, key=lambda m: m.name)
