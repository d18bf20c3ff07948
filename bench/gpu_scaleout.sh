#!/usr/bin/env bash
# The scale-out checks that need a GPU (docs/scaling.md, "On a GPU"): the GPU tests of
# tests/test_scaling_transfer.py, then bench/scaleout_compare.py with the weights on the device.
# Run from the repository root on a CUDA machine with torch and safetensors; logs go to $OUT.
# slocore's C++ extension is not needed: the scaling package is imported from a shim folder.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-scaleout}
mkdir -p "$OUT"
SHIM=$(mktemp -d)
mkdir -p "$SHIM/slocore"
cp -r python/slocore/scaling python/slocore/roles.py python/slocore/childenv.py "$SHIM/slocore/"
touch "$SHIM/slocore/__init__.py"
export PYTHONPATH="$SHIM" PYTHONUNBUFFERED=1

{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
  echo "cpus $(nproc)"; free -g; df -h /tmp /dev/shm
} 2>&1 | tee "$OUT/env.txt"

echo "== GPU tests"
[ -n "${SKIP_TESTS:-}" ] || timeout 180 python3 -m pytest -s -p no:cacheprovider -W default ${PYTEST_K:+-k "$PYTEST_K"} tests/test_scaling_transfer.py 2>&1 | tee "$OUT/tests.txt"

echo "== scale-out by method, weights on the GPU"
for spec in ${SCALEOUT_RUNS:-1:2 15:1}; do  # size_gb:repeats
  timeout "${SCALEOUT_TIMEOUT:-300}" python3 bench/scaleout_compare.py --device cuda --no-mem-check \
    --package-root "$SHIM" --sizes-gb "${spec%%:*}" --repeat "${spec##*:}" \
    --methods "${METHODS:-disk-cold,disk-warm,host,pinned,peer,peer-nccl}" --streams "${STREAMS:-1}" --json "$OUT/scaleout-${spec%%:*}gb.json" \
    2>&1 | tee "$OUT/scaleout-${spec%%:*}gb.txt"
done
