#!/usr/bin/env bash
# summary.sh -- runs the benchmarks that need no PyTorch (threads, pinned vs native kernels, the
# server with wrk) and writes their output, verbatim, with the machine and the kernels, into one
# Markdown file. The README links that file instead of typing figures.
# Usage: bash bench/summary.sh [OUT.md]   (default build/bench/summary.md; run on a quiet machine)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/bench/summary.md}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target attn bench_threads bench_kernels bench_serve >/dev/null
tmp=$(mktemp "${out}.XXXXXX")
trap 'rm -f "$tmp"' EXIT
run() { # title, command...
    local title=$1
    shift
    printf '\n## %s\n\n`%s`\n\n```\n' "$title" "$*"
    "$@" 2>&1
    printf '```\n'
}
{
    printf '# Benchmarks: this machine, one run\n\n'
    printf -- '- date: %s\n' "$(date -u +%Y-%m-%dT%H:%MZ)"
    printf -- '- CPU: %s, %s cores\n' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(nproc)"
    printf -- '- commit: %s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    run "One run on 1 and 2 threads (bytes checked identical)" build/bench/threads
    run "Pinned against native OpenBLAS kernels" build/bench/kernels
    run "attn serve under load (its own clients and wrk)" build/bench/serve --attn build/attn
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "bench/summary.sh: wrote $out"
