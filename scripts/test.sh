#!/usr/bin/env bash
# CI (docs/testing.md): builds attn with -Werror and runs every test in a release build; then the
# C suites and the socket tests again under AddressSanitizer + UndefinedBehaviorSanitizer (-O1);
# then runs each libFuzzer harness of fuzz/ for a bounded time (ATTN_FUZZ_SECONDS, default 20:
# 9 harnesses side by side, one per core: 5 rounds on 2 cores, about 100 s). Prints each
# stage's time.
# Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
jobs=$(nproc)
start=$SECONDS
stage_start=$SECONDS
stage_done() { # NAME: the stage's wall time, and the total so far
  echo "-- $1: $((SECONDS - stage_start)) s (total $((SECONDS - start)) s)"
  stage_start=$SECONDS
}

echo "== release build + tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DATTN_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
stage_done "release build"
(cd build && ctest --output-on-failure -j "$jobs")
stage_done "release tests"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build + tests"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DATTN_WERROR=ON -DATTN_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
stage_done "sanitizer build"
# Left out here, run in the release stage: the live PyTorch cross-checks and the browser test
# (they test numbers and pages, not memory), "slow" (minutes under the sanitizers) and "nosan"
# (CLI runs whose library code other tests run under the sanitizers: tests/*/extra.cmake names
# them; docs/testing.md). Two tests per core: the socket and CLI tests spend part of their time
# waiting on servers and child processes. Its CPU time (docs/testing.md, "Times") is what bounds
# it on 2 cores: keep new tests small under ATTN_TEST_SMALL.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$((jobs * 2))" -LE 'slow|torch|browser|nosan')
stage_done "sanitizer tests"

echo "== fuzz smoke: each libFuzzer harness for ${ATTN_FUZZ_SECONDS:-20} s (scripts/fuzz.sh)"
bash scripts/fuzz.sh "${ATTN_FUZZ_SECONDS:-20}"
stage_done "fuzz smoke"
