"""Scale-out weight loading by method, on this machine (HFX
Table 2: Qwen7B 0.89 s device-to-device vs 2.73 s host memory vs 4.14 s disk).

For each checkpoint size a safetensors checkpoint is written under --tmp (deleted after),
then a fresh *target* process (torch already imported: a warm instance) gets the weights by
  disk-cold   safetensors read after evicting the file from the page cache (fadvise)
  disk-warm   safetensors read with the file in the page cache
  host        safetensors read from a copy in shared memory (/dev/shm; disk.HostCache)
  host-pinned (--device cuda) the /dev/shm copy's own pages, locked for the GPU
              (scaling.pinned.PinnedCheckpoint) before the clock starts, as a warm instance
              does when it starts; the locking time is reported as pin_s
  pinned      (--device cuda) from a pinned host copy held by the target itself: the bound
              on any host-memory cache on this machine
  peer        TLManager over gloo from a running source process that holds the weights,
              with the manifest check and every tensor's checksum verified (device tensors
              go through pinned host chunks: gloo moves host memory only)
  peer-nccl   (--device cuda) the same over NCCL, device to device
and reports seconds from "start loading" to "all tensors in memory (and verified)" (on a
device: in the target's own device tensors, synchronised). Ratios are against disk-cold
measured in the same run. Methods run one after another and free their memory; a size is
skipped when MemAvailable is below ~2.3x the checkpoint (--no-mem-check: a machine whose
memory grows on use). A method that fails is reported as such and the run goes on.

    nice python bench/scaleout_compare.py --sizes-gb 0.5,2 [--repeat 2] [--json out.json]
    python bench/scaleout_compare.py --device cuda --sizes-gb 1,15 \
        --methods disk-cold,disk-warm,host,pinned,peer,peer-nccl   (bench/gpu_scaleout.sh runs this)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY_ROOT = os.path.join(ROOT, "python")  # where the child processes import slocore from
sys.path.insert(0, PY_ROOT)
METHODS = ("disk-cold", "disk-warm", "host", "host-pinned", "pinned", "peer", "peer-nccl")

TARGET = r"""
import json, sys, time
sys.path.insert(0, {py!r})
import torch
from slocore.scaling import disk
from slocore.scaling.transfer import TLManager
method, path, port, device = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
expected = disk.checkpoint_manifest(path)
from slocore.scaling.weights import dtype_from_name
sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
# a warm instance: its parameter memory is allocated and touched (dummy weights) already
into = {{m.name: torch.zeros(m.shape, dtype=dtype_from_name(m.dtype), device=device) for m in expected}}
extra = {{}}
if method == "pinned":  # the host copy is there before the clock starts, as a cache would be
    held = {{n: t.pin_memory() for n, t in disk.load_checkpoint(path, expected=expected).items()}}
if method == "host-pinned":  # a warm instance locks the node's host copy when it starts
    from slocore.scaling.pinned import PinnedCheckpoint
    locked = PinnedCheckpoint(path, device)
    extra["pin_s"] = locked.pin_seconds
if method == "disk-cold":
    disk.drop_page_cache(path)
sync()
t0 = time.perf_counter()
if method in ("disk-cold", "disk-warm", "host"):
    tensors = disk.load_checkpoint(path, expected=expected, into=into)
    src = "host" if method == "host" else "disk"
elif method == "pinned":
    tensors, src = disk.copy_into(held, into), "host"
elif method == "host-pinned":
    tensors, src = locked.load(expected=expected, into=into), "host"
else:
    backend = "nccl" if method == "peer-nccl" else "gloo"
    mgr = TLManager(backend, device=device, timeout_s=60, chunk_bytes={chunk})
    r = mgr.receive("127.0.0.1", port, expected=expected, fallback=path, into=into)
    if r.source != "peer":
        print("peer transfer fell back to disk:", r.reason, file=sys.stderr)
    tensors, src, extra = r.tensors, r.source, dict(r.timings, reason=r.reason)
sync()
dt = time.perf_counter() - t0
nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
print(json.dumps(dict(method=method, seconds=dt, nbytes=nbytes, source=src, **extra)))
"""


def mem_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def write_checkpoint(path: str, nbytes: int, tensor_mb: int = 128) -> int:
    """bf16 tensors of `tensor_mb` MB (like a 7B model's big matrices) plus a few small ones."""
    import torch
    from safetensors.torch import save_file

    n_big = max(1, nbytes // (tensor_mb << 20))
    cols = 4096
    rows = (tensor_mb << 20) // (2 * cols)
    t = {}
    for i in range(n_big):
        x = torch.empty(rows, cols, dtype=torch.bfloat16)
        x.view(torch.int16).fill_(i * 7 + 1)  # cheap, distinct per tensor
        x.view(torch.int16)[::97, ::31] = torch.arange(rows, dtype=torch.int16)[::97, None]
        t[f"model.layers.{i}.w"] = x
    for i in range(8):
        t[f"model.norm.{i}"] = torch.ones(cols, dtype=torch.float32)
    save_file(t, path)
    del t
    return os.path.getsize(path)


def run_target(method: str, path: str, chunk: int, device: str, port: int = 0) -> subprocess.Popen:
    code = TARGET.format(py=PY_ROOT, chunk=chunk)
    return subprocess.Popen([sys.executable, "-c", code, method, path, str(port), device], stdout=subprocess.PIPE)


def target_result(tgt: subprocess.Popen, method: str) -> dict:
    out, _ = tgt.communicate(timeout=600)
    if tgt.returncode != 0:
        raise RuntimeError(f"{method}: target exited with {tgt.returncode}")
    return json.loads(out.decode().strip().splitlines()[-1])


def main(argv=None) -> int:
    global PY_ROOT
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes-gb", default="0.5,2", help="comma-separated checkpoint sizes in GB (e.g. 0.5,2,8)")
    ap.add_argument("--methods", default="disk-cold,disk-warm,host,peer", help=f"of {','.join(METHODS)}")
    ap.add_argument("--device", default="cpu", help="where the target (and the peer source) hold the weights")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--chunk-mb", type=int, default=64)
    ap.add_argument("--streams", type=int, default=1, help="peer: parallel gloo connections")
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    ap.add_argument("--no-mem-check", action="store_true", help="run every size whatever MemAvailable says")
    ap.add_argument("--package-root", default=PY_ROOT, help="the folder the child processes import slocore from")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    PY_ROOT = a.package_root
    sys.path.insert(0, PY_ROOT)  # this process imports slocore.scaling from there too (HostCache)
    sizes = [float(x) for x in a.sizes_gb.split(",") if x]
    methods = [m for m in a.methods.split(",") if m]
    bad = [m for m in methods if m not in METHODS]
    if bad:
        ap.error(f"unknown method(s) {bad}; known: {', '.join(METHODS)}")
    if a.device == "cpu" and any(m in ("host-pinned", "pinned", "peer-nccl") for m in methods):
        ap.error("host-pinned, pinned and peer-nccl need --device cuda")
    rows = []
    for gb in sizes:
        nbytes = int(gb * (1 << 30))
        if not a.no_mem_check and mem_available() < 2.3 * nbytes:
            print(
                f"# {gb:g} GB skipped: MemAvailable {mem_available() / 2**30:.1f} GiB < 2.3x the checkpoint",
                file=sys.stderr,
            )
            continue
        d = tempfile.mkdtemp(prefix="slocore-scaleout-", dir=a.tmp)
        path = os.path.join(d, "model.safetensors")
        try:
            size = write_checkpoint(path, nbytes)
            for rep in range(a.repeat):
                for m in methods:
                    try:
                        r = run_method(m, path, d, a)
                    except Exception as e:  # one method's failure is a result, not the end of the run
                        r = dict(method=m, error=f"{type(e).__name__}: {e}")
                    r.update(size_gb=gb, file_bytes=size, rep=rep)
                    rows.append(r)
                    print(json.dumps(r), file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    report(rows)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def run_method(m: str, path: str, d: str, a) -> dict:
    chunk = a.chunk_mb << 20
    if m in ("host", "host-pinned"):
        from slocore.scaling.disk import HostCache

        with HostCache(path) as hc:
            return target_result(run_target(m, hc.dir, chunk, a.device), m)
    if m in ("peer", "peer-nccl"):
        return _peer(m, path, chunk, os.path.join(d, "ready"), a.streams, a.device)
    return target_result(run_target(m, path, chunk, a.device), m)


def _peer(method: str, path: str, chunk: int, ready: str, streams: int, device: str) -> dict:
    """The source holds the weights first; the target (a warm instance) opens the
    rendezvous, and the source is told the port once the target listens, as the launcher
    does (it asks the source to send only after the target is waiting)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": PY_ROOT}
    backend = "nccl" if method == "peer-nccl" else "gloo"
    src = subprocess.Popen(
        [sys.executable, "-m", "slocore.scaling.transfer", "send", "--checkpoint", path, "--timeout", "120"]
        + ["--ready-file", ready, "--streams", str(streams), "--chunk-mb", str(chunk >> 20)]
        + ["--backend", backend, "--device", device],
        env=env,
        stdin=subprocess.PIPE,
    )
    try:
        while not os.path.exists(ready):  # the source holds the weights and their checksums
            if src.poll() is not None:
                raise RuntimeError("peer source died before it was ready")
            time.sleep(0.1)
        tgt = run_target(method, path, chunk, device, port)
        while True:  # wait until the target's rendezvous accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if tgt.poll() is not None:
                    raise RuntimeError("peer target died") from None
                time.sleep(0.01)
        src.stdin.write(f"{port}\n".encode())
        src.stdin.close()
        r = target_result(tgt, method)
        try:
            src.wait(60)
        except subprocess.TimeoutExpired:  # a source stuck after its target gave up on it
            r["source_killed"] = True
        return r
    finally:
        if src.poll() is None:
            src.kill()
            src.wait()
        if os.path.exists(ready):
            os.unlink(ready)


def report(rows: list[dict]) -> None:
    print(
        "| size (GB) | method | runs | best (s) | median (s) | GB/s (best) "
        "| speed-up vs disk-cold (best) | weights from |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    by = {}
    for r in rows:
        by.setdefault((r["size_gb"], r["method"]), []).append(r)
    for gb in sorted({k[0] for k in by}):
        base = [x for x in by.get((gb, "disk-cold"), []) if "error" not in x]
        b = min(x["seconds"] for x in base) if base else None
        for m in METHODS:
            if (gb, m) not in by:
                continue
            errors = [x["error"] for x in by[(gb, m)] if "error" in x]
            rs = [x for x in by[(gb, m)] if "error" not in x]
            if not rs:
                print(f"| {gb:g} | {m} | 0 | - | - | - | - | failed: {errors[0]} |")
                continue
            ts = sorted(x["seconds"] for x in rs)
            s, med = ts[0], ts[len(ts) // 2]
            gbs = rs[0]["nbytes"] / s / 1e9
            ratio = f"{b / s:.2f}x" if b else "-"
            srcs = ",".join(sorted({x["source"] for x in rs}))
            print(f"| {gb:g} | {m} | {len(rs)} | {s:.2f} | {med:.2f} | {gbs:.2f} | {ratio} | {srcs} |")


if __name__ == "__main__":
    raise SystemExit(main())
