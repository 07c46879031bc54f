#!/usr/bin/env bash
# Builds attn with -Werror and runs every test in a release build, then the C suites and the
# socket tests again under AddressSanitizer + UndefinedBehaviorSanitizer; then runs each
# libFuzzer harness of fuzz/ for a bounded time (ATTN_FUZZ_SECONDS, default 30).
# Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
jobs=$(nproc)

echo "== release build + tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DATTN_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build + tests"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DATTN_WERROR=ON -DATTN_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
# (the live PyTorch cross-checks, the browser test and the slow ones ran in the release stage:
# they test numbers and pages, not memory; the C suites and the socket tests run here)
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs" -LE 'slow|torch|browser')

echo "== fuzz smoke: each libFuzzer harness for ${ATTN_FUZZ_SECONDS:-30} s (scripts/fuzz.sh)"
bash scripts/fuzz.sh "${ATTN_FUZZ_SECONDS:-30}"
