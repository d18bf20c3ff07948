"""The router's vLLM block hashes equal vLLM's own (``hash_block_tokens`` chained from
``init_none_hash``, vLLM 0.32) for sha256 and sha256_cbor, and decode vLLM's own encoded
KVEventBatch; run under the vLLM interpreter (SLOCORE_VLLM_PYTHON, CI's vLLM step)."""

import json
import os
import random
import subprocess

import pytest

pytestmark = pytest.mark.vllm
pytest.importorskip("cbor2")
pytest.importorskip("msgspec")

from slocore.serve.kv_events import KvBlockSet, VllmBlockHasher  # noqa: E402
from vllmkit import vllm_python  # noqa: E402

VLLM_PY, WHY = vllm_python("docs/serving.md")
if VLLM_PY is None:
    pytest.skip(WHY, allow_module_level=True)

SCRIPT = r"""
import json, sys
from vllm.utils.hashing import sha256, sha256_cbor
from vllm.v1.core import kv_cache_utils as k
from vllm.distributed.kv_events import KVEventBatch, BlockStored
import msgspec
ids, bs, algo = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
fn = {"sha256": sha256, "sha256_cbor": sha256_cbor}[algo]
k.init_none_hash(fn)
parent, out = None, []
for b in range(len(ids) // bs):
    parent = k.hash_block_tokens(fn, parent, ids[b * bs:(b + 1) * bs], None)
    out.append(bytes(parent))
ev = BlockStored(block_hashes=out, parent_block_hash=None, token_ids=ids, block_size=bs, lora_id=None,
                 medium="GPU", lora_name=None)
payload = msgspec.msgpack.Encoder().encode(KVEventBatch(ts=1.0, events=[ev]))
print(json.dumps({"hashes": [h.hex() for h in out], "payload": payload.hex()}))
"""


@pytest.mark.parametrize("algo", ["sha256", "sha256_cbor"])
def test_router_hashes_equal_vllms(algo):
    rng = random.Random(7)
    ids = [rng.randrange(0, 150000) for _ in range(16 * 9 + 5)]

    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    out = subprocess.run(
        [VLLM_PY, "-c", SCRIPT, json.dumps(ids), "16", algo], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    mine = VllmBlockHasher(16, algo).chain(ids)
    assert [h.hex() for h in mine] == got["hashes"] and len(mine) == 9
    s = KvBlockSet("vllm")
    s.apply((0).to_bytes(8, "big"), bytes.fromhex(got["payload"]))  # vLLM's own encoding
    assert s.match_blocks(mine) == 9
