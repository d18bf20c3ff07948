"""Scale-out weight loading by method, on this machine (HFX
Table 2: Qwen7B 0.89 s device-to-device vs 2.73 s host memory vs 4.14 s disk).

For each checkpoint size a safetensors checkpoint is written under --tmp (deleted after),
then a fresh *target* process (torch already imported: a warm instance) gets the weights by
  disk-cold   safetensors read after evicting the file from the page cache (fadvise)
  disk-warm   safetensors read with the file in the page cache
  host        safetensors read from a copy in shared memory (/dev/shm)
  peer        TLManager over gloo from a running source process that holds the weights,
              with the manifest check and every tensor's checksum verified
and reports seconds from "start loading" to "all tensors in memory (and verified)".
Ratios are against disk-cold measured in the same run. Methods run one after another and
free their memory; a size is skipped when MemAvailable is below ~2.3x the checkpoint.

    nice python bench/scaleout_compare.py --sizes-gb 0.5,2 [--repeat 2] [--json out.json]
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
sys.path.insert(0, os.path.join(ROOT, "python"))

TARGET = r"""
import json, sys, time
sys.path.insert(0, {py!r})
import torch
from slocore.scaling import disk
from slocore.scaling.transfer import TLManager
method, path, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
expected = disk.checkpoint_manifest(path)
from slocore.scaling.weights import dtype_from_name
# a warm instance: its parameter memory is allocated and touched (dummy weights) already
into = {{m.name: torch.zeros(m.shape, dtype=dtype_from_name(m.dtype)) for m in expected}}
if method == "disk-cold":
    disk.drop_page_cache(path)
t0 = time.perf_counter()
extra = {{}}
if method in ("disk-cold", "disk-warm", "host"):
    tensors = disk.load_checkpoint(path, expected=expected, into=into)
    src = "host" if method == "host" else "disk"
else:
    mgr = TLManager("gloo", timeout_s=120, chunk_bytes={chunk})
    r = mgr.receive("127.0.0.1", port, expected=expected, fallback=path, into=into)
    if r.source != "peer":
        print("peer transfer fell back to disk:", r.reason, file=sys.stderr)
    tensors, src, extra = r.tensors, r.source, dict(r.timings, reason=r.reason)
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


def run_target(method: str, path: str, chunk: int) -> dict:
    code = TARGET.format(py=os.path.join(ROOT, "python"), chunk=chunk)
    tgt = subprocess.Popen([sys.executable, "-c", code, method, path, "0"], stdout=subprocess.PIPE)
    out, _ = tgt.communicate(timeout=900)
    if tgt.returncode != 0:
        raise RuntimeError(f"{method}: target exited with {tgt.returncode}")
    return json.loads(out.decode().strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes-gb", default="0.5,2", help="comma-separated checkpoint sizes in GB (e.g. 0.5,2,8)")
    ap.add_argument("--methods", default="disk-cold,disk-warm,host,peer")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--chunk-mb", type=int, default=64)
    ap.add_argument("--streams", type=int, default=1, help="peer: parallel gloo connections")
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    sizes = [float(x) for x in a.sizes_gb.split(",") if x]
    methods = [m for m in a.methods.split(",") if m]
    rows = []
    for gb in sizes:
        nbytes = int(gb * (1 << 30))
        if mem_available() < 2.3 * nbytes:
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
                    if m == "host":
                        from slocore.scaling.disk import HostCache

                        hc = HostCache(path)
                        try:
                            r = run_target("host", hc.dir, a.chunk_mb << 20)
                        finally:
                            hc.close()
                    elif m == "peer":
                        r = _peer(path, a.chunk_mb << 20, os.path.join(d, "ready"), a.streams)
                    else:
                        r = run_target(m, path, a.chunk_mb << 20)
                    r.update(size_gb=gb, file_bytes=size, rep=rep)
                    rows.append(r)
                    print(json.dumps(r), file=sys.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    report(rows)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def _peer(path: str, chunk: int, ready: str, streams: int = 1) -> dict:
    """The source holds the weights first; the target (a warm instance) opens the
    rendezvous, and the source is told the port once the target listens, as the launcher
    does (it asks the source to send only after the target is waiting)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    code = TARGET.format(py=os.path.join(ROOT, "python"), chunk=chunk)
    src = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "slocore.scaling.transfer",
            "send",
            "--checkpoint",
            path,
            "--timeout",
            "300",
            "--ready-file",
            ready,
            "--streams",
            str(streams),
            "--chunk-mb",
            str(chunk >> 20),
        ],
        env=env,
        stdin=subprocess.PIPE,
    )
    while not os.path.exists(ready):  # the source holds the weights and their checksums
        if src.poll() is not None:
            raise RuntimeError("peer source died before it was ready")
        time.sleep(0.1)
    tgt = subprocess.Popen([sys.executable, "-c", code, "peer", path, str(port)], stdout=subprocess.PIPE)
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
    out, _ = tgt.communicate(timeout=900)
    src.wait(120)
    os.unlink(ready)
    return json.loads(out.decode().strip().splitlines()[-1])


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
        base = by.get((gb, "disk-cold"))
        b = min(x["seconds"] for x in base) if base else None
        for m in ("disk-cold", "disk-warm", "host", "peer"):
            if (gb, m) not in by:
                continue
            rs = by[(gb, m)]
            ts = sorted(x["seconds"] for x in rs)
            s, med = ts[0], ts[len(ts) // 2]
            gbs = rs[0]["nbytes"] / s / 1e9
            ratio = f"{b / s:.2f}x" if b else "-"
            srcs = ",".join(sorted({x["source"] for x in rs}))
            print(f"| {gb:g} | {m} | {len(rs)} | {s:.2f} | {med:.2f} | {gbs:.2f} | {ratio} | {srcs} |")


if __name__ == "__main__":
    raise SystemExit(main())
