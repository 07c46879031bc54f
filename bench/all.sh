#!/usr/bin/env bash
# all.sh -- every benchmark of bench/ in one run, side by side with PyTorch, and the summary.
#
# Runs, in this order, each as its own program (output kept verbatim):
#   train_speed --torch   training of the four classifiers (batch 32, 1 thread) vs PyTorch, and
#                         the 1-thread sgemm ceiling (2048^3) every fraction below refers to
#   infer_speed --torch   batched eval of the four classifiers (batch 256, 1 thread) vs PyTorch
#   flops --torch         the ViT-Base layer (n = 197, 4097) vs PyTorch at 1 and 2 threads
#   seq2seq --torch       seq2seq-transformer training and batch-1 generation vs PyTorch
#   threads               1 vs 2 threads, bytes checked identical
#   kernels               pinned (Haswell) vs native OpenBLAS kernels
#   serve                 attn serve under load (its own clients and wrk)
#   base                  bench/base.py: section 6's base seq2seq-transformer's weights (load to
#                         the first token, peak RSS, write, JSON) vs torch.load, to OUT/base.md
#                         (--quick: a tiny model)
#   peers                 bench/peers.sh: batch-1 latency against PyTorch eager, TorchScript and
#                         ONNX Runtime, when they are installed (scripts/install-deps.sh --bench);
#                         otherwise its output says "skipped: not installed" and so does stderr
# then bench/summarize.py writes OUT/summary.md (machine, date, commit, load, the tables, every
# output) and OUT/readme-table.md (the README's performance table, taken from the same run, with
# a "Check: ... PASS|MISS" line per target, also printed), and when OUT is bench/results
# bench/readme_table.py --write copies that table and base.md's figures into README.md.
#
# Usage: bash bench/all.sh [--quick] [--out DIR] [--build DIR]
#   --quick      smoke test: every benchmark at its smallest (ratios mean little); the default
#                output is then build/bench/all-quick, not bench/results
#   --out DIR    where summary.md, readme-table.md and flops' files go (default bench/results)
#   --build DIR  build tree (default build; configured and built Release if needed)
# Took 8 min 47 s on the shared 2-core EPYC before the peers; --quick with them 189 s on the
# 2-core Xeon. Run it on a quiet machine: other processes on the cores distort the timings, and
# less so the ratios.
# Exit status: 0 ok (a MISSed target does not fail the run), 1 a benchmark failed, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
out=
build=build
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --out)
        [ $# -ge 2 ] || { echo "bench/all.sh: --out needs a directory" >&2; exit 2; }
        out=$2
        shift
        ;;
    --build)
        [ $# -ge 2 ] || { echo "bench/all.sh: --build needs a directory" >&2; exit 2; }
        build=$2
        shift
        ;;
    -h | --help)
        sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "bench/all.sh: unknown option '$1' (see --help)" >&2
        exit 2
        ;;
    esac
    shift
done
if [ -z "$out" ]; then
    if [ $quick = 1 ]; then out=$build/bench/all-quick; else out=bench/results; fi
fi
for need in /usr/bin/python3 wrk; do
    command -v "$need" >/dev/null || { echo "bench/all.sh: $need not found (scripts/install-deps.sh)" >&2; exit 1; }
done
mkdir -p "$out"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target attn bench_train_speed bench_infer_speed \
    bench_flops bench_seq2seq bench_threads bench_kernels bench_serve >/dev/null
# every output of this run, kept for bench/summarize.py (rerun it alone: /usr/bin/python3
# bench/summarize.py BUILD/bench/all-raw OUT)
raw=$build/bench/all-raw
rm -rf "$raw"
mkdir -p "$raw"
b=$build/bench
if [ $quick = 1 ]; then
    q_train=(--epochs 1) q_infer=(--quick) q_flops=(--quick) q_s2s=(--quick) q_threads=(--quick)
    q_kernels=(--train-size 500 --infer 100 --reps 1)
    q_serve=(--seconds 2 --requests 2000 --cheap 2000)
else
    # threads: 5 pairs of runs, not 3 (each row moves 10-20 % between pairs on a VM)
    q_train=() q_infer=() q_flops=() q_s2s=() q_threads=(--reps 5) q_kernels=() q_serve=()
fi
# name, command...: output to $raw/name.txt, the command line to .cmd, the seconds to .secs
run() {
    local name=$1
    shift
    echo "bench/all.sh: $name: $*" >&2
    printf '%s\n' "$*" >"$raw/$name.cmd"
    local t0 t1
    t0=$(date +%s.%N)
    if ! "$@" >"$raw/$name.txt" 2>&1; then
        cat "$raw/$name.txt" >&2
        echo "bench/all.sh: $name failed" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{printf "%.1f\n", $2 - $1}' >"$raw/$name.secs"
}
start=$(date +%s)
{
    echo "date $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "cores $(nproc)"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (uncommitted changes)')"
    echo "openblas $(ldd "$b/threads" | awk '/libopenblas/ {print $3}')"
    echo "load_start $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "quick $quick"
} >"$raw/machine.txt"
run train_speed "$b/train_speed" --torch "${q_train[@]}"
run infer_speed "$b/infer_speed" --torch "${q_infer[@]}"
run flops "$b/flops" --torch --out "$out" "${q_flops[@]}"
run seq2seq "$b/seq2seq" --torch "${q_s2s[@]}"
run threads "$b/threads" "${q_threads[@]}"
run kernels "$b/kernels" "${q_kernels[@]}"
run serve "$b/serve" --attn "$build/attn" "${q_serve[@]}"
run base /usr/bin/python3 bench/base.py --attn "$build/attn" --seq2seq "$b/seq2seq" \
    --out "$out/base.md" \
    $([ $quick = 1 ] && echo --quick)
if bash bench/peers.sh --check >/dev/null 2>&1; then
    run peers bash bench/peers.sh --build "$build" $([ $quick = 1 ] && echo --quick)
else
    bash bench/peers.sh --check >"$raw/peers.txt" 2>&1 || true
    echo "bash bench/peers.sh --check" >"$raw/peers.cmd"
    echo 0 >"$raw/peers.secs"
    echo "bench/all.sh: $(cat "$raw/peers.txt")" >&2
fi
{
    echo "load_end $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "total_seconds $(($(date +%s) - start))"
} >>"$raw/machine.txt"
/usr/bin/python3 bench/summarize.py "$raw" "$out"
echo "bench/all.sh: wrote $out/summary.md and $out/readme-table.md in $(($(date +%s) - start)) s" >&2
# the committed results: README's performance table is their readme-table.md and its base model
# figures their base.md's (style/readme_table)
if [ "$(cd "$out" && pwd -P)" = "$(cd bench/results && pwd -P)" ]; then
    /usr/bin/python3 bench/readme_table.py --write README.md "$out"
    echo "bench/all.sh: copied $out/readme-table.md and base.md's figures into README.md" >&2
fi
