#!/usr/bin/env bash
# Regenerates python/slocore/_core.pyi from the built extension (needs pybind11-stubgen).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
PYTHONPATH=python python3 -m pybind11_stubgen slocore._core -o "$out" >/dev/null
cp "$out/slocore/_core.pyi" python/slocore/_core.pyi
echo "wrote python/slocore/_core.pyi"
