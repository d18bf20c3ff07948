#!/usr/bin/env bash
# Developer build: compiles slocore._core into python/slocore so that `PYTHONPATH=python pytest`
# works without reinstalling. Incremental; each git worktree has its own build-dev/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-dev -G Ninja -DSLOCORE_INPLACE=ON -DSLOCORE_BUILD_TESTS=ON \
  -DCMAKE_BUILD_TYPE=Release -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >/dev/null
cmake --build build-dev -j "${JOBS:-2}"
