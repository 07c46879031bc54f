#!/usr/bin/env bash
# The main job: installs what is missing (build and run dependencies only, no PyTorch), builds
# attn and reproduces the write-up's table (RNN, LSTM and Transformer, 3 seeds, 8,000
# sentences, 20 epochs, four test sets) into runs/ (git-ignored), then says whether the nine
# weights files are identical to the committed ones in weights/; then the decoder half: the
# three translation models x 3 seeds on the rewrite task (attn reproduce --task rewrite), with
# the same comparison for their nine weights files. The working tree stays clean.
# Usage: bash scripts/reproduce.sh [extra options for 'attn reproduce', e.g. --out weights]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target attn
build/attn reproduce "$@"
# the decoder half (§1, §6): the three translation models x 3 seeds on the rewrite task
build/attn reproduce --task rewrite
