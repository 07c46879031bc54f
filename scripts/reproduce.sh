#!/usr/bin/env bash
# The main job: installs what is missing, builds attn and reproduces the write-up's table
# (RNN, LSTM and Transformer, 3 seeds, 8,000 sentences, 20 epochs, four test sets).
# Usage: bash scripts/reproduce.sh [extra options for 'attn reproduce']
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
build/attn reproduce --out weights "$@"
