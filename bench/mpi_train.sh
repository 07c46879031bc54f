#!/usr/bin/env bash
# mpi_train.sh -- one training run of the base seq2seq Transformer (the write-up's section 6:
# d 512, 8 heads, FFN 2048, 6 + 6 layers) over 2 Open MPI ranks against 1, --threads 1 each.
# Prints the step time of each (the last epoch's seconds per step, from the --log), their ratio
# (target >= 1.6x), whether the two weights files are the same bytes, and rank 0's own report of
# the gradient exchanges (their share of the run). And the machine's own ceiling for that ratio:
# two plain runs of one rank's share (batch 16, one micro-batch a step) side by side, without MPI,
# against -np 1's step -- what two processes on this machine's cores reach with nothing to
# exchange (a virtual machine's two cores may be one core's two hyperthreads, or shared with
# other tenants). Usage: bash bench/mpi_train.sh [BUILD-DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
attn=$build/attn
[ -x "$attn" ] || { echo "bench/mpi_train.sh: $attn not built" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "bench/mpi_train.sh: no mpirun (openmpi-bin)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mpi=(mpirun --oversubscribe --mca btl self,vader --mca oob_tcp_if_include lo)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
args=(train --model seq2seq-transformer --task rewrite --embed-dim 512 --heads 8 --ffn-dim 2048
      --layers 6 --dec-layers 6 --train-size 128 --holdout 0 --test-size 0 --batch 32
      --epochs 2 --threads 1)
export OPENBLAS_NUM_THREADS=1
for np in 1 2; do
    "${mpi[@]}" -np $np "$attn" "${args[@]}" --log "$out/np$np.log" \
        --out "$out/np$np.safetensors" >"$out/np$np.out" 2>"$out/np$np.err" ||
        { cat "$out/np$np.err" >&2; exit 1; }
done
# the ceiling: one rank's share twice at once, no MPI, no exchange
half=("${args[@]/#32/16}")
for k in a b; do
    "$attn" "${half[@]}" --log "$out/side-$k.log" --out "$out/side-$k.safetensors" \
        >"$out/side-$k.out" 2>"$out/side-$k.err" &
done
wait
/usr/bin/python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
def step_s(name):
    rows = [json.loads(l) for l in open(f"{d}/{name}.log")]
    a, b = rows[-2], rows[-1]
    return (b["elapsed_s"] - a["elapsed_s"]) / (b["steps"] - a["steps"])
s1, s2 = step_s("np1"), step_s("np2")
side = max(step_s("side-a"), step_s("side-b"))
print("base seq2seq-transformer, batch 32 (2 micro-batches of 16), --threads 1 per rank")
print(f"  -np 1: {s1:.3f} s per step")
print(f"  -np 2: {s2:.3f} s per step")
print(f"  speed-up -np 2 / -np 1: {s1 / s2:.2f}x (target >= 1.6x)")
print(f"  the machine's ceiling: two runs of batch 16 side by side, no MPI: {side:.3f} s per step,")
print(f"    {s1 / side:.2f}x of -np 1's work per second; -np 2 reaches {side / s2 * 100:.0f} % of it")
PY
if cmp -s "$out/np1.safetensors" "$out/np2.safetensors"; then
    echo "  weights: -np 1 and -np 2 the same bytes ($(stat -c %s "$out/np1.safetensors") bytes)"
else
    echo "  weights: -np 1 and -np 2 DIFFER" >&2
    exit 1
fi
grep "attn train: 2 ranks" "$out/np2.err" | sed 's/^/  /'
