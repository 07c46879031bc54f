#!/usr/bin/env bash
# The main job: installs what is missing (build and run dependencies only, no PyTorch), builds
# attn and reproduces the write-up's table (RNN, LSTM and Transformer, 3 seeds, 8,000
# sentences, 20 epochs, four test sets) into runs/ (git-ignored), then says whether the nine
# weights files are identical to the committed ones in weights/. The working tree stays clean.
# Usage: bash scripts/reproduce.sh [extra options for 'attn reproduce', e.g. --out weights]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target attn
build/attn reproduce "$@"
