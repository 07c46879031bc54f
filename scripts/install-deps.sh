#!/usr/bin/env bash
# Installs the Debian 12 packages attn needs, only those missing (run as root).
# Usage: bash scripts/install-deps.sh          build and run attn (scripts/reproduce.sh)
#        bash scripts/install-deps.sh --test   also the tests and tools/ (scripts/test.sh):
#                                              PyTorch, NumPy, clang-format, clang, Chromium
#                                              (the headless browser of the attn serve test),
#                                              slowhttptest and wrk (serve tests, bench/serve)
#        bash scripts/install-deps.sh --bench  only what bench/peers.sh adds: PyTorch, Node.js,
#                                              npm (when no npm is on PATH), GNU time, libtorch-dev and
#                                              g++ (TorchScript from C++), and the npm
#                                              package onnxruntime-node into bench/peers-node/
# Check (the C unit-test library, small) is in the first list: CMakeLists.txt requires it to
# configure at all. libopenblas0-openmp is OpenBLAS's OpenMP build beside the pthread one: the
# same kernels, no lock shared by threads (docs/numerics.md, "Threads"). Open MPI (optional for
# the build) runs `mpirun -np N attn ...` (docs/mpi.md).
set -euo pipefail
packages=(build-essential cmake pkg-config libopenblas-dev libopenblas0-openmp libcjson-dev
          libsleef-dev zlib1g-dev check gnuplot-nox libmicrohttpd-dev openmpi-bin libopenmpi-dev)
test_packages=(python3 python3-torch python3-numpy clang-format clang libfuzzer-14-dev chromium
               slowhttptest wrk)
bench=0
case "${1:-}" in
  "") ;;
  --test) packages+=("${test_packages[@]}") ;;
  --bench)
    bench=1
    packages=(python3 python3-torch nodejs time libtorch-dev g++)
    command -v npm >/dev/null || packages+=(npm)
    ;;
  *) echo "usage: bash scripts/install-deps.sh [--test | --bench]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ $bench = 1 ]; then
  # the CPU binaries are in the npm package; its install script would only fetch GPU ones
  (cd "$(dirname "$0")/../bench/peers-node" &&
    ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund)
fi
