#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ (clang, ASan + UBSan, build-fuzz/) and runs each for
# SECONDS (default 60) on a copy of its seed corpus, which grows across runs in
# build-fuzz/fuzz-run/<target>/corpus (fuzz/corpus/ is never written).
# Usage: bash scripts/fuzz.sh [SECONDS] [TARGET...]
#        targets: weights checkpoint tokenizer tsv serve (the request handler of attn serve)
#                 seq2seq_weights seq2seq_checkpoint pairs_tsv (seq2seq pairs) sweep (--grid/--set) safetensors
# Prints the executions and the outcome per harness; exits 1 if any harness found a crash,
# leak, timeout or out-of-memory, naming the reproducer (rerun it: build-fuzz/fuzz/fuzz_<target>
# FILE). Extra libFuzzer flags go in FUZZ_FLAGS (e.g. FUZZ_FLAGS=-jobs=2); FUZZ_RUN_DIR moves
# build-fuzz/fuzz-run (e.g. to keep a long campaign apart from the CI runs); FUZZ_PARALLEL
# harnesses run at once (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
[ $# -gt 0 ] && shift
case "$seconds" in
  '' | *[!0-9]*) echo "usage: bash scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac
all=(weights checkpoint tokenizer tsv serve seq2seq_weights seq2seq_checkpoint pairs_tsv sweep
     safetensors)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
declare -A seen=()
unique=()
for t in "${targets[@]}"; do
  [ -d "fuzz/corpus/$t" ] || { echo "unknown target '$t' (one of: ${all[*]})" >&2; exit 2; }
  [ -n "${seen[$t]:-}" ] || unique+=("$t") # twice at once would share one run directory
  seen[$t]=1
done
targets=("${unique[@]}")
parallel=${FUZZ_PARALLEL:-$(nproc)}
case "$parallel" in
  '' | *[!0-9]* | 0) echo "FUZZ_PARALLEL must be a positive number, not '$parallel'" >&2; exit 2 ;;
esac

# clang and libFuzzer (Debian 12), only what is missing (like scripts/install-deps.sh)
missing=()
for p in clang libfuzzer-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DATTN_FUZZ=ON >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target attn_fuzz >/dev/null

# One harness: its summary line(s) go to $work/summary (printed in the order of the targets).
fuzz_one() {
  local t=$1 work=${FUZZ_RUN_DIR:-build-fuzz/fuzz-run}/$1
  mkdir -p "$work/corpus" "$work/artifacts"
  cp -n fuzz/corpus/"$t"/* "$work/corpus/"
  local flags=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1
               -artifact_prefix="$work/artifacts/")
  case "$t" in
    weights | checkpoint | seq2seq_weights | seq2seq_checkpoint)
      flags+=(-dict=fuzz/json.dict -max_len=20000) ;;
    safetensors) flags+=(-dict=fuzz/json.dict -max_len=8192) ;;
    serve) flags+=(-dict=fuzz/json.dict -max_len=4096) ;;
    *) flags+=(-max_len=4096) ;;
  esac
  local log=$work/last.log rc=0
  # shellcheck disable=SC2086 # FUZZ_FLAGS is a list of flags
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
    OPENBLAS_NUM_THREADS=1 "build-fuzz/fuzz/fuzz_$t" "${flags[@]}" ${FUZZ_FLAGS:-} \
    "$work/corpus" >"$log" 2>&1 || rc=$?
  local execs
  execs=$(awk '/stat::number_of_executed_units/ {n += $2} END {print n + 0}' "$log")
  {
    if grep -q 'libFuzzer: run interrupted' "$log"; then
      echo "fuzz_$t: interrupted after $execs executions, 0 crashes until then"
    elif [ "$rc" -eq 0 ]; then
      echo "fuzz_$t: $execs executions in ${seconds} s, 0 crashes (corpus $(ls "$work/corpus" | wc -l) inputs)"
    else
      local kind
      kind=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [a-z-]+|runtime error|invariant failed' "$log" || echo "exit $rc")
      echo "fuzz_$t: FAILED ($kind) after $execs executions; log $log"
      grep -E '^artifact_prefix|Test unit written to' "$log" | sed 's/^/  /' || true
      grep -m20 -E '^ *#[0-9]+ .*\.c:[0-9]+|runtime error|invariant failed|ERROR:|SUMMARY' "$log" | sed 's/^/  /' || true
    fi
  } >"$work/summary"
}

# The harnesses run side by side, FUZZ_PARALLEL at a time (default: one per core); each still
# gets its SECONDS of one core, so a 2-core CI machine does the same fuzzing in 3 rounds, not 5.
for t in "${targets[@]}"; do
  rm -f "${FUZZ_RUN_DIR:-build-fuzz/fuzz-run}/$t/summary"
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait
failed=0
for t in "${targets[@]}"; do
  summary=${FUZZ_RUN_DIR:-build-fuzz/fuzz-run}/$t/summary
  if [ -f "$summary" ]; then
    cat "$summary"
    grep -q -E '^fuzz_[a-z0-9_]+: (FAILED|interrupted)' "$summary" && failed=1
  else
    echo "fuzz_$t: no summary (the run itself failed)"
    failed=1
  fi
done
exit $failed
