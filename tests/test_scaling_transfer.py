"""Peer weight transfer (TLManager over gloo between two processes) with checks and the
disk fallback: a good transfer, a corrupted tensor, a killed source, a wrong manifest."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the scaling tests need torch (pip install '.[scaling]')")
pytest.importorskip("safetensors", reason="the scaling tests need safetensors (pip install '.[scaling]')")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available in this torch build", allow_module_level=True)

from slocore.childenv import child_env  # noqa: E402
from slocore.ports import free_port  # noqa: E402
from slocore.scaling import disk  # noqa: E402
from slocore.scaling.pinned import PinnedCheckpoint, layout_views, map_file  # noqa: E402
from slocore.scaling.transfer import TLManager, TransferError  # noqa: E402
from slocore.scaling.weights import (  # noqa: E402
    WeightManager,
    checksum,
    manifest_mismatch,
    safetensors_layout,
    safetensors_manifest,
)

HERE = os.path.dirname(__file__)


def make_checkpoint(path, seed=0, layers=3, hidden=64):
    """A small Llama-shaped safetensors checkpoint, mixed dtypes, one odd-sized tensor."""
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed)
    t = {
        "model.embed_tokens.weight": torch.randn(256, hidden, generator=g).to(torch.bfloat16),
        "lm_head.weight": torch.randn(256, hidden, generator=g).to(torch.bfloat16),
        "model.norm.weight": torch.ones(hidden, dtype=torch.float32),
        "odd.bytes": torch.randint(0, 255, (13,), generator=g, dtype=torch.uint8),
    }
    for i in range(layers):
        t[f"model.layers.{i}.self_attn.qkv.weight"] = torch.randn(3 * hidden, hidden, generator=g).to(torch.bfloat16)
        t[f"model.layers.{i}.mlp.up.weight"] = torch.randn(2 * hidden, hidden, generator=g)
    save_file(t, str(path))
    return str(path)


@pytest.fixture
def ckpt(tmp_path):
    return make_checkpoint(tmp_path / "model.safetensors")


_sources: list[subprocess.Popen] = []


def start_source(ckpt, port, *extra):
    p = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "scaling_source.py"), "--checkpoint", ckpt, "--port", str(port), *extra],
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    _sources.append(p)
    return p


@pytest.fixture(autouse=True)
def _reap_sources():
    """Every source process ends with its test, and its stderr pipe is closed."""
    yield
    while _sources:
        p = _sources.pop()
        if p.poll() is None:
            p.kill()
            p.wait(10)
        p.stderr.close()


def test_weight_manager_manifest_and_checksums(ckpt):
    wm = WeightManager.from_safetensors(ckpt)
    man = wm.manifest()
    assert [m.name for m in man] == sorted(m.name for m in man)
    assert manifest_mismatch(safetensors_manifest(ckpt), man) is None
    assert sum(m.nbytes for m in man) == wm.nbytes()
    t = wm["odd.bytes"].clone()
    t[5] ^= 1
    assert checksum(t) != wm.checksum("odd.bytes")
    assert checksum(t, "crc32") != checksum(wm["odd.bytes"], "crc32")
    bad = [m for m in man]
    bad[0] = type(bad[0])(bad[0].name, (1,), bad[0].dtype, 2)
    assert "shape" in manifest_mismatch(man, bad)


def test_peer_transfer_equals_source(ckpt):
    port = free_port()
    src = start_source(ckpt, port)
    r = TLManager("gloo", timeout_s=20, chunk_bytes=1 << 12).receive("127.0.0.1", port, fallback=ckpt)
    assert src.wait(30) == 0, src.stderr.read().decode()
    assert r.source == "peer", r.reason
    assert WeightManager(r.tensors).equals(WeightManager.from_safetensors(ckpt))
    assert r.nbytes == WeightManager.from_safetensors(ckpt).nbytes()


def test_parallel_streams(ckpt):
    port = free_port()
    src = start_source(ckpt, port, "--streams", "3", "--chunk-bytes", str(1 << 11))
    r = TLManager("gloo", timeout_s=20).receive("127.0.0.1", port, fallback=ckpt)
    assert src.wait(30) == 0
    assert r.source == "peer", r.reason
    assert WeightManager(r.tensors).equals(WeightManager.from_safetensors(ckpt))


def test_receive_into_existing_tensors(ckpt):
    """A warm instance receives into the (dummy) tensors it already holds."""
    dummy = {k: torch.zeros_like(v) for k, v in disk.load_checkpoint(ckpt).items()}
    ptrs = {k: v.data_ptr() for k, v in dummy.items()}
    port = free_port()
    src = start_source(ckpt, port)
    r = TLManager("gloo", timeout_s=20).receive("127.0.0.1", port, fallback=ckpt, into=dummy)
    assert src.wait(30) == 0
    assert r.source == "peer"
    assert all(r.tensors[k].data_ptr() == ptrs[k] for k in dummy)
    assert WeightManager(dummy).equals(WeightManager.from_safetensors(ckpt))


def test_corrupted_tensor_falls_back_to_disk(ckpt):
    port = free_port()
    src = start_source(ckpt, port, "--corrupt", "model.layers.1.mlp.up.weight")
    r = TLManager("gloo", timeout_s=10, chunk_bytes=1 << 12).receive("127.0.0.1", port, fallback=ckpt)
    src.wait(30)
    assert r.source == "disk"
    assert "checksum" in r.reason and "model.layers.1.mlp.up.weight" in r.reason
    assert WeightManager(r.tensors).equals(WeightManager.from_safetensors(ckpt))


def test_killed_source_falls_back_to_disk(ckpt):
    port = free_port()
    src = start_source(ckpt, port, "--kill-after", "2", "--chunk-bytes", str(1 << 10))
    t0 = time.monotonic()
    # the source dies after 2 tensors; a generous receive timeout: on a loaded machine a 5 s one
    # expired while the source was still starting, and the source then left on its own (exit 3)
    r = TLManager("gloo", timeout_s=15, chunk_bytes=1 << 10).receive("127.0.0.1", port, fallback=ckpt)
    assert src.wait(30) == -9
    assert r.source == "disk", "the source was killed mid-transfer"
    assert r.reason
    assert time.monotonic() - t0 < 40
    assert WeightManager(r.tensors).equals(WeightManager.from_safetensors(ckpt))


def test_no_source_times_out_to_disk(ckpt):
    r = TLManager("gloo", timeout_s=1).receive("127.0.0.1", free_port(), fallback=ckpt)
    assert r.source == "disk" and r.peer_seconds < 10
    assert WeightManager(r.tensors).equals(WeightManager.from_safetensors(ckpt))


def test_wrong_model_is_refused(ckpt, tmp_path):
    other = make_checkpoint(tmp_path / "other.safetensors", layers=2)
    port = free_port()
    src = start_source(other, port)
    r = TLManager("gloo", timeout_s=10).receive("127.0.0.1", port, fallback=ckpt)
    assert src.wait(30) == 3  # the source learns it was refused
    assert r.source == "disk" and "manifest" in r.reason
    assert WeightManager(r.tensors).equals(WeightManager.from_safetensors(ckpt))


def test_no_fallback_raises(ckpt):
    with pytest.raises(TransferError):
        TLManager("gloo", timeout_s=1).receive("127.0.0.1", free_port(), expected=safetensors_manifest(ckpt))


def test_host_cache_roundtrip(ckpt):
    with disk.HostCache(ckpt) as hc:
        got = hc.load(expected=safetensors_manifest(ckpt))
    assert not os.path.exists(hc.dir)
    assert WeightManager(got).equals(WeightManager.from_safetensors(ckpt))


def test_safetensors_layout_points_at_each_tensors_bytes(ckpt):
    data = Path(ckpt).read_bytes()
    tensors = disk.load_checkpoint(ckpt)
    for m, off in safetensors_layout(ckpt):
        want = tensors[m.name].contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        assert data[off : off + m.nbytes] == want, m.name


def test_mapped_views_are_the_checkpoints_tensors(ckpt):
    """What an instance keeps as a transfer source after a load from a locked host copy."""
    views = layout_views(map_file(ckpt), safetensors_layout(ckpt))
    assert WeightManager(views).equals(WeightManager.from_safetensors(ckpt))


def test_pinned_checkpoint_needs_a_cuda_device(ckpt):
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        PinnedCheckpoint(ckpt, device="cpu")


def test_bad_arguments():
    with pytest.raises(ValueError):
        TLManager("mpi")
    with pytest.raises(ValueError):
        TLManager("gloo", timeout_s=0)
    with pytest.raises(ValueError):
        WeightManager(algo="md5")


# -- on a GPU (skipped without one; run on the device machine as docs/scaling.md says) --------
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@needs_cuda
def test_device_checksums_equal_the_host_ones(ckpt):
    """sum64 runs on the device for device tensors: it must give the host's figure, or a
    source on a GPU and a target on the CPU (or the reverse) would refuse every transfer."""
    g = torch.Generator().manual_seed(1)
    tensors = dict(disk.load_checkpoint(ckpt), wide=torch.randint(-(2**62), 2**62, (1001,), generator=g))
    for name, t in tensors.items():
        for algo in ("sum64", "crc32"):
            assert checksum(t.cuda(), algo) == checksum(t, algo), (name, algo)


@needs_cuda
def test_gloo_transfer_between_device_tensors(ckpt):
    """Source and target hold their weights on the GPU; gloo moves them through pinned host
    chunks, straight into the target's own device tensors, every checksum verified."""
    dummy = {k: torch.zeros_like(v, device="cuda") for k, v in disk.load_checkpoint(ckpt).items()}
    ptrs = {k: v.data_ptr() for k, v in dummy.items()}
    port = free_port()
    src = start_source(ckpt, port, "--device", "cuda", "--chunk-bytes", str(1 << 10))
    r = TLManager("gloo", device="cuda", timeout_s=30, chunk_bytes=1 << 10).receive(
        "127.0.0.1", port, fallback=ckpt, into=dummy
    )
    assert src.wait(30) == 0, src.stderr.read().decode()
    assert r.source == "peer", r.reason
    assert all(r.tensors[k].data_ptr() == ptrs[k] and r.tensors[k].is_cuda for k in dummy)
    assert WeightManager(dummy).equals(WeightManager.from_safetensors(ckpt))


@needs_cuda
def test_corrupted_device_tensor_falls_back_to_disk_on_the_device(ckpt):
    port = free_port()
    src = start_source(ckpt, port, "--device", "cuda", "--corrupt", "model.layers.0.mlp.up.weight")
    r = TLManager("gloo", device="cuda", timeout_s=30, chunk_bytes=1 << 12).receive("127.0.0.1", port, fallback=ckpt)
    src.wait(30)
    assert r.source == "disk" and "model.layers.0.mlp.up.weight" in r.reason
    assert all(t.is_cuda for t in r.tensors.values())
    assert WeightManager(r.tensors).equals(WeightManager.from_safetensors(ckpt))


@needs_cuda
def test_nccl_transfer(ckpt):
    """Device to device over NCCL. With two GPUs the source sits on the second and the
    transfer must be a peer one. NCCL runs one rank per GPU, so on a single GPU it refuses
    the pair: then the target must fall back to disk within its timeout, with the reason."""
    two = torch.cuda.device_count() >= 2
    port = free_port()
    src = start_source(ckpt, port, "--device", "cuda:1" if two else "cuda", "--backend", "nccl")
    t0 = time.monotonic()
    r = TLManager("nccl", device="cuda", timeout_s=20, chunk_bytes=1 << 12).receive("127.0.0.1", port, fallback=ckpt)
    src.wait(60)
    assert WeightManager(r.tensors).equals(WeightManager.from_safetensors(ckpt))
    assert all(t.is_cuda for t in r.tensors.values())
    if two:
        assert r.source == "peer", r.reason
    else:
        print(f"NCCL on one GPU: source={r.source} reason={r.reason}")
        assert r.source == "peer" or r.reason
        assert time.monotonic() - t0 < 60


@needs_cuda
def test_pinned_host_cache_loads_into_the_instances_device_tensors(ckpt):
    """A warm instance locks the host copy's pages first; the load then copies each tensor
    into the tensors it already holds, and refuses a checkpoint of another model."""
    into = {k: torch.zeros_like(v, device="cuda") for k, v in disk.load_checkpoint(ckpt).items()}
    ptrs = {k: v.data_ptr() for k, v in into.items()}
    with disk.HostCache(ckpt) as hc, PinnedCheckpoint(hc.dir) as pinned:
        assert pinned.pin_seconds >= 0
        got = pinned.load(expected=safetensors_manifest(ckpt), into=into)
        wrong = safetensors_manifest(ckpt)[1:]
        with pytest.raises(ValueError, match="not the expected weights"):
            pinned.load(expected=wrong)
    assert all(got[k].data_ptr() == ptrs[k] for k in into)
    assert WeightManager(got).equals(WeightManager.from_safetensors(ckpt))
    with pytest.raises(RuntimeError, match="closed"):
        pinned.load()


def test_vllm_worker_loads_a_locked_host_copy_without_work_on_the_scale_out_path(ckpt, monkeypatch):
    """The worker extension's control flow around a locked host copy, with the GPU parts
    stood in for (the locked path itself is tested on a GPU above): the pin checksums the
    copy at warm start; the load pushes the copied tensors into the engine and keeps the
    copy's views as the source weights; a load of another path reads it."""
    from slocore.integrations.vllm import weight_sync
    from slocore.scaling import pinned

    class FakeLocked:  # PinnedCheckpoint without a GPU: views of the file, copies as "device" tensors
        def __init__(self, path, device):
            self.path, self.pin_seconds, self.closed = path, 0.0, False
            self.views = layout_views(map_file(path), safetensors_layout(path))

        def host_views(self):
            return self.views

        def load(self, expected=None):
            assert manifest_mismatch(expected, safetensors_manifest(self.path)) is None
            return {k: v.clone() for k, v in self.views.items()}

        def close(self):
            self.closed = True

    class Runner:
        pushed = []

        def reload_weights(self, weights_iterator):
            self.pushed.append(dict(weights_iterator))

    class Worker(weight_sync.SlocoreWeightSync):
        model_runner = Runner()

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(pinned, "PinnedCheckpoint", FakeLocked)
    w = Worker()
    r = w.slocore_pin_host_cache(ckpt)
    assert r["pinned"] is True, r
    source = w._slocore_pinned_source
    assert len(source._checksums) == len(source)  # checksummed at warm start
    r = w.slocore_load_from_host_cache(ckpt)
    assert r["source"] == "host" and r["pinned"] is True, r
    assert w._slocore_wm() is source  # no second copy kept, no checksums on the way
    assert WeightManager(Runner.pushed[-1]).equals(WeightManager.from_safetensors(ckpt))
    other = ckpt + ".other.safetensors"
    os.link(ckpt, other)
    r = w.slocore_load_from_host_cache(other)
    assert r["pinned"] is False and w._slocore_wm() is not source
    assert w._slocore_wm().equals(WeightManager.from_safetensors(ckpt))
    assert w.slocore_pin_host_cache(ckpt)["pinned"] and source is not w._slocore_pinned_source
