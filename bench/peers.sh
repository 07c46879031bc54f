#!/usr/bin/env bash
# peers.sh -- attn's batch-1 classifier latency beside the engines a user would pick instead.
#
# For each of rnn, gru, lstm and transformer, on the same sentences (the four seed-1 test sets,
# N each) and the same weights (weights/M-seed1.json; the GRU has none committed: its seed-1
# initialisation, written by infer_speed), each engine in its own process, one thread:
#   attn         build/bench/infer_speed --batch 1 on the kernels `attn predict` runs by default
#                (its --help: native, the user's own work; $ATTN_KERNELS when set), which also
#                writes the sentences and its logits (--dump); then the same again on
#                ATTN_KERNELS=native and on ATTN_KERNELS=pinned (reproduce's kernels), each its
#                own process and row ("attn default", "attn --kernels native", "... pinned")
#   torch eager  tools/bench_peers.py eager: the reference module (tools/attn_models.py)
#   torchscript  tools/bench_peers.py torchscript: torch.jit.trace of it, saved and reloaded
#   onnxruntime  bench/peers_ort.js: torch.onnx.export of it, run by onnxruntime-node
#   torch stock  tools/bench_peers.py eager --stock: PyTorch on the kernels it picks itself
#   torchscript C++  bench/peers_torchscript (bench/peers_torchscript.cpp), built against Debian's
#                libtorch-dev when it is installed (else the row is left out)
# PyTorch runs on attn's pinned OpenBLAS kernels (tools/blas_core.py) but for the stock row; a
# row's logits are compared with attn's on the same kernels (pinned PyTorch with attn pinned,
# stock PyTorch with attn native, ONNX Runtime with attn's default).
# Then the seq2seq models (weights/seq2seq-{transformer,attn,gru}-seed1.json): greedy decoding at
# batch 1 of the sources of the four rewrite test sets of seed 1 (N each): attn
# (build/bench/peers_seq2seq, the KV cache; default, native and pinned kernels as above, the
# default being `attn generate`'s), tools/bench_peers_seq2seq.py eager / --stock /
# torchscript (the encoder and a decoder step, jit.trace), bench/peers_torchscript and
# bench/peers_ort_seq2seq.js (the same pieces, torch.onnx.export). bench/peers_table.py prints
# the tables: µs per sentence or tokens per second (wall median of a pass), the ratio engine /
# attn default, the logits bit-identical to attn's on the same kernels (float32 bits; seq2seq:
# the sources with attn's words and the decoder steps with attn's logits) and each process's
# peak RSS (/usr/bin/time).
#
# Usage: bash bench/peers.sh [--quick] [--n N] [--reps R] [--build DIR] [--check]
#   --n N      sentences per test set (default 250: 1000 sentences; --quick: 25)
#   --reps R   timed passes per engine (default 5; --quick: 2), after one warm-up pass
#   --build    build tree (default build; infer_speed is built Release there if needed)
#   --check    only say whether the peers are installed
# Needs /usr/bin/python3 with torch, node, and bench/peers-node/node_modules/onnxruntime-node
# (bash scripts/install-deps.sh --bench). Files: BUILD/bench/peers/.
# Exit status: 0 ok, 1 an engine failed, 2 usage, 3 skipped: the peers are not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
n=250 reps=5 build=build check=0
while [ $# -gt 0 ]; do
    case $1 in
    --quick) n=25 reps=2 ;;
    --check) check=1 ;;
    --n | --reps | --build)
        [ $# -ge 2 ] || { echo "bench/peers.sh: $1 needs a value" >&2; exit 2; }
        case $1 in
        --n) n=$2 ;;
        --reps) reps=$2 ;;
        --build) build=$2 ;;
        esac
        shift
        ;;
    -h | --help)
        sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "bench/peers.sh: unknown option '$1' (see --help)" >&2
        exit 2
        ;;
    esac
    shift
done
for v in "$n" "$reps"; do
    [[ $v =~ ^[1-9][0-9]{0,4}$ ]] || { echo "bench/peers.sh: --n and --reps take 1..99999, not '$v'" >&2; exit 2; }
done
missing=()
/usr/bin/python3 -c 'import torch' 2>/dev/null || missing+=("python3-torch")
command -v node >/dev/null || missing+=("nodejs")
[ -f bench/peers-node/node_modules/onnxruntime-node/package.json ] || missing+=("onnxruntime-node in bench/peers-node")
[ -x /usr/bin/time ] || missing+=("time")
if [ ${#missing[@]} -gt 0 ]; then
    echo "peers: skipped: not installed: ${missing[*]} (bash scripts/install-deps.sh --bench)"
    exit 3
fi
if [ $check = 1 ]; then
    echo "peers: installed"
    exit 0
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j 2 --target attn bench_infer_speed bench_peers_seq2seq >/dev/null
# the kernels attn's own commands run when nobody says (src/cli/kernels_policy.c, quoted by
# each command's --help as "Default $ATTN_KERNELS, else MODE")
kernels_default() {
    local mode
    mode=$("$build/attn" "$1" --help | sed -n 's/.*Default \$ATTN_KERNELS, else \([a-z]*\).*/\1/p')
    case ${ATTN_KERNELS:-$mode} in
    pinned | native) echo "${ATTN_KERNELS:-$mode}" ;;
    *) echo "bench/peers.sh: cannot tell the default kernels of attn $1 ('${ATTN_KERNELS:-$mode}')" >&2; exit 1 ;;
    esac
}
def_predict=$(kernels_default predict)
def_generate=$(kernels_default generate)
# TorchScript from C++: only with Debian's libtorch-dev (never needed by the tests)
ts_cpp=""
if [ -f /usr/include/torch/script.h ] || [ -f /usr/include/torch/csrc/api/include/torch/script.h ]; then
    if [ ! -x "$build/bench/peers_torchscript" ] || [ bench/peers_torchscript.cpp -nt "$build/bench/peers_torchscript" ]; then
        echo "bench/peers.sh: building bench/peers_torchscript (libtorch)" >&2
        g++ -O2 -std=c++17 -o "$build/bench/peers_torchscript" bench/peers_torchscript.cpp \
            -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10 -lpthread ||
            { echo "bench/peers.sh: building bench/peers_torchscript failed" >&2; exit 1; }
    fi
    # pinned as tools/blas_core.py pins the Python rows: OpenBLAS Haswell, ATen and oneDNN AVX2
    ts_cpp=$build/bench/peers_torchscript
    if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
        ts_cpp="env OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2 $ts_cpp"
    fi
fi
d=$build/bench/peers
rm -rf "$d"
mkdir -p "$d" "$d/native" "$d/pinned"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# engine, command...: output to $d/M.engine.txt, peak RSS (KiB) to $d/M.engine.rss
run() {
    local tag=$1
    shift
    if ! /usr/bin/time -f %M -o "$d/$tag.rss" "$@" >"$d/$tag.txt" 2>"$d/$tag.err"; then
        cat "$d/$tag.txt" "$d/$tag.err" >&2
        echo "bench/peers.sh: $tag failed: $*" >&2
        exit 1
    fi
}
{
    echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "cores $(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
    echo "date $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "load_start $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
    echo "onnxruntime $(node -p "require('./bench/peers-node/node_modules/onnxruntime-node/package.json').version")"
    echo "node $(node --version)"
    echo "kernels_predict $def_predict"
    echo "kernels_generate $def_generate"
} >"$d/machine.txt"
for m in rnn gru lstm transformer; do
    echo "bench/peers.sh: $m" >&2
    run "$m.attn" env ATTN_KERNELS="$def_predict" "$build/bench/infer_speed" --model "$m" --batch 1 \
        --n "$n" --reps "$reps" --dump "$d"
    for k in native pinned; do
        run "$m.attn_$k" env ATTN_KERNELS=$k "$build/bench/infer_speed" --model "$m" --batch 1 \
            --n "$n" --reps "$reps" --dump "$d/$k"
    done
    w=weights/$m-seed1.json
    [ -f "$w" ] || w=$d/$m.weights.json
    run "$m.export" /usr/bin/python3 tools/bench_peers.py export --weights "$w" --ids "$d/ids.txt" --out "$d/$m"
    for e in eager torchscript; do
        run "$m.$e" /usr/bin/python3 tools/bench_peers.py "$e" --weights "$w" --ids "$d/ids.txt" \
            --out "$d/$m" --logits "$d/$m.$e.f32" --reps "$reps"
    done
    run "$m.eager_stock" /usr/bin/python3 tools/bench_peers.py eager --stock --weights "$w" \
        --ids "$d/ids.txt" --out "$d/$m" --logits "$d/$m.eager_stock.f32" --reps "$reps"
    [ -z "$ts_cpp" ] || run "$m.ts_cpp" $ts_cpp classifier "$d/$m.pt" "$d/ids.txt" "$d/$m.ts_cpp.f32" "$reps"
    run "$m.ort" node bench/peers_ort.js "$d/$m.onnx" "$d/ids.txt" "$d/$m.ort.f32" "$reps" 1
done
for a in transformer attn gru; do
    m=s2s-$a w=weights/seq2seq-$a-seed1.json
    echo "bench/peers.sh: $m" >&2
    run "$m.attn" env ATTN_KERNELS="$def_generate" "$build/bench/peers_seq2seq" --weights "$w" \
        --name "$m" --dump "$d" --n "$n" --reps "$reps"
    for k in native pinned; do
        run "$m.attn_$k" env ATTN_KERNELS=$k "$build/bench/peers_seq2seq" --weights "$w" \
            --name "$m" --dump "$d/$k" --n "$n" --reps "$reps"
    done
    # [BOS], [EOS] and the words at most, from the weights' config
    read -r bos eos max_out < <(/usr/bin/python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["config"]
print(c["tgt_vocab"] - 4, c["tgt_vocab"] - 3, c["max_tgt_len"] - 1)' "$w")
    run "$m.export" /usr/bin/python3 tools/bench_peers_seq2seq.py export --weights "$w" --ids "$d/s2s.ids.txt" --out "$d/$m"
    for e in eager eager_stock torchscript; do
        run "$m.$e" /usr/bin/python3 tools/bench_peers_seq2seq.py "${e%_stock}" \
            $([ "$e" = eager_stock ] && echo --stock) --weights "$w" --ids "$d/s2s.ids.txt" \
            --out "$d/$m" --tokens "$d/$m.$e.tok" --logits "$d/$m.$e.f32" --reps "$reps" --max-out "$max_out"
    done
    [ -z "$ts_cpp" ] || run "$m.ts_cpp" $ts_cpp seq2seq "$d/$m" "$d/s2s.ids.txt" "$d/$m.ts_cpp" "$reps" "$bos" "$eos" "$max_out"
    run "$m.ort" node bench/peers_ort_seq2seq.js "$d/$m" "$d/s2s.ids.txt" "$d/$m.ort.tok" "$d/$m.ort.f32" "$bos" "$eos" "$max_out" "$reps"
done
echo "s2s_max_out $max_out" >>"$d/machine.txt"
echo "load_end $(cut -d' ' -f1-3 /proc/loadavg)" >>"$d/machine.txt"
/usr/bin/python3 bench/peers_table.py "$d"
