#!/usr/bin/env bash
# CI's sanitized checks, in one chain: the build with -fsanitize=address,undefined, the C++
# tests, the Python API fuzz and the simulator's tests on that build. .ci/run starts it in the
# background at nice 19 before the installs and the main suite (one process: it leaves a core
# free), and waits for it before the real-vLLM tests, whose timings it would disturb.
#   bash scripts/ci_sanitized.sh    # alone: ~13 min on 2 cores (build 4.6 min, checks ~8)
# JOBS: the build's parallel jobs (default: every core; .ci/run gives 1).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { echo "== sanitized: $* [$(($(date +%s) - start)) s in]"; }

step "build (-O1 -g1: line tables, file:line in every report; -O2 -g took twice as long)"
cmake -S . -B build-asan -G Ninja -DSLOCORE_BUILD_PYTHON=ON -DSLOCORE_BUILD_TESTS=ON \
  -DSLOCORE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >/dev/null
cmake --build build-asan -j "${JOBS:-$(nproc)}"

# .ci/run starts this before the test dependencies are installed: the checks wait for them.
if [ -n "${SANITIZED_AFTER:-}" ]; then
  step "waiting for $SANITIZED_AFTER (the test dependencies installed)"
  while [ ! -e "$SANITIZED_AFTER" ]; do sleep 2; done
fi

step "C++ tests"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan --output-on-failure

# The sanitized extension in a copy of the package (the installed one stays as it is); the
# interpreter is not instrumented, so the ASan runtime (and libstdc++, for its __cxa_throw
# interceptor) is preloaded.
rm -rf build-asan/pkg && mkdir -p build-asan/pkg && cp -r python/slocore build-asan/pkg/
rm -f build-asan/pkg/slocore/_core*.so && cp build-asan/_core*.so build-asan/pkg/slocore/
sanitized() {
  LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)" ASAN_OPTIONS=detect_leaks=0 \
    UBSAN_OPTIONS=print_stacktrace=1 PYTHONPATH=build-asan/pkg python3 -m pytest -q -p no:cacheprovider "$@"
}

step "the Python API fuzz"
SLOCORE_FUZZ_EXAMPLES=${SLOCORE_FUZZ_EXAMPLES:-100} sanitized -s tests/test_fuzz_api.py

# The simulator's C++ (engine, prefix cache, kept orders, every scheduler and router) through
# its property, invariant and differential tests (~7 min alone on one core under ASan). Left
# out: the two tests that check only a hypothesis strategy's reach, in the pure-Python
# reference (the C++ in them is the bound data types, which every other test builds too): 5 and
# 2.7 min under the ASan preload.
step "the simulator's tests"
sanitized -m "not vllm" \
  tests/test_sim_invariants.py tests/test_sim_heterogeneous.py tests/test_sim_stall.py tests/test_sim_experiments.py \
  tests/test_prefix_cache.py tests/test_workloads_prefix.py tests/test_kept_order.py tests/test_batch_baselines.py \
  tests/test_strong_baselines.py tests/test_cache_routers.py tests/test_belief_error.py tests/test_slo_triage.py \
  tests/test_slo_predict.py tests/test_slo_predict_memo.py tests/test_hfx.py tests/test_sibyl.py tests/test_slice.py \
  tests/test_proserve.py --deselect tests/test_slo_triage.py::test_crowded_views_reach_the_demotion \
  --deselect tests/test_slo_triage.py::test_crowded_views_reach_the_late_slack
step "done"
