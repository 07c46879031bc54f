#!/usr/bin/env bash
# regenerate.sh -- remakes, once, every committed artefact whose numbers depend on the kernels
# or on the vocabulary, under the pinned kernels (docs/numerics.md, "Pinned kernels"):
#   weights/         attn reproduce --out weights (the table's nine runs; prints the table),
#                    and the seq2seq models: attn reproduce --task rewrite --out weights
#                    (seq2seq-gru, seq2seq-attn, seq2seq-transformer x 3 seeds) and
#                    attn reproduce --task compose --out weights (compose-seq2seq-transformer)
#   weights/golden/  the PyTorch goldens that ran a GEMM (their bits depend on the kernel set)
#                    or hold the task's sentences (the vocabulary): make_golden.py (model
#                    goldens; trained_* from the new weights/ and a GRU trained here) and
#                    golden_kernels.py (kernels.json: linear runs sgemm)
#   docs/figures/    attn figures
# Not remade, because neither a GEMM nor a word enters them: kernels_default.json,
# kernels_avx512.json (elementwise ops by ATen's default/avx512 kernels), gelu_grad.json
# (oneDNN's GELU backward) and adam.json (torch.optim.Adam).
# Usage: bash scripts/regenerate.sh [options for 'attn reproduce', e.g. -j 2]
set -euo pipefail
cd "$(dirname "$0")/.."
py=/usr/bin/python3 # Debian's python3-torch
# The pinned rule, whatever the caller's environment says (attn and tools/blas_core.py ignore
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE under it; these two would select something else), and
# for every command here, also those whose own default is native (attn train below).
unset ATTN_CPU ATEN_CPU_CAPABILITY DNNL_MAX_CPU_ISA
export ATTN_KERNELS=pinned
export OPENBLAS_NUM_THREADS=1

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target attn

echo "== weights/ (attn reproduce --out weights)"
build/attn reproduce --out weights "$@"

echo "== weights/ seq2seq (attn reproduce --task rewrite|compose --out weights)"
build/attn reproduce --task rewrite --out weights
build/attn reproduce --task compose --out weights

echo "== weights/golden/"
"$py" tools/make_golden.py --attn build/attn --out weights/golden
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build/attn train --model gru --seed 1 --out "$tmp/gru-seed1.json" >/dev/null
"$py" tools/make_golden.py --attn build/attn --out weights/golden --trained \
    weights/rnn-seed1.json weights/lstm-seed1.json weights/transformer-seed1.json \
    "$tmp/gru-seed1.json"
"$py" tools/golden_kernels.py

echo "== docs/figures/ (attn figures)"
build/attn figures --out docs/figures

echo "== done: review with git status / git diff --stat, then commit weights/ and docs/figures/"
