#!/usr/bin/env bash
# Installs the Debian 12 packages attn needs, only those missing (run as root).
set -euo pipefail
packages=(build-essential cmake pkg-config libopenblas-dev libcjson-dev check libsleef-dev
          python3 python3-torch python3-numpy gnuplot-nox clang-format)
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
