"""A transfer source in its own process, with fault injection for the scaling tests:
`--corrupt NAME` flips one byte of a tensor after its checksum was taken (a corrupted
tensor on the wire), `--kill-after K` SIGKILLs this process after K tensors were sent."""

import argparse
import os
import signal
import sys

from slocore.scaling.transfer import TLManager  # noqa: E402
from slocore.scaling.weights import WeightManager  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--checkpoint", required=True)
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--corrupt")
ap.add_argument("--kill-after", type=int)
ap.add_argument("--chunk-bytes", type=int, default=1 << 16)
ap.add_argument("--streams", type=int, default=1)
ap.add_argument("--backend", default="gloo")
ap.add_argument("--device", default="cpu")
a = ap.parse_args()

wm = WeightManager.from_safetensors(a.checkpoint, device=a.device)
wm.manifest()  # checksums of the good weights
if a.corrupt:
    wm[a.corrupt].view(-1).view(__import__("torch").uint8)[0] ^= 0xFF


def hook(i, name):
    if a.kill_after is not None and i + 1 >= a.kill_after:
        os.kill(os.getpid(), signal.SIGKILL)


try:
    TLManager(a.backend, device=a.device, timeout_s=10, chunk_bytes=a.chunk_bytes, streams=a.streams).send(
        wm, "127.0.0.1", a.port, on_tensor_sent=hook
    )
except Exception as e:  # the target aborted or died: report, exit non-zero
    print(f"send failed: {type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(3)
