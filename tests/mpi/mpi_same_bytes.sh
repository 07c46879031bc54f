#!/usr/bin/env bash
# tests/mpi/mpi_same_bytes.sh ATTN -- `mpirun -np 2` gives the same bytes as `-np 1` and as no
# mpirun at all (-j 1): a small sweep, a small reproduce and `experiment norm --quick` (its runs
# spread over the ranks), `reproduce --task rewrite` (each run over every rank), compared byte for byte (stdout and every file; the lines and fields
# that hold wall times are taken out first); a sweep point gives the accuracies of the same
# reproduce run. Then runs that fail on rank 1 (eval --table, sweep): the
# message names the run, the rank and the host, the exit code is 1 and nothing is written.
# Loopback only, so it runs on any CI machine.
set -u
attn=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca oob_tcp_if_include lo
     --mca btl_vader_single_copy_mechanism none)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# same DIR1 DIR2 FILE...: each FILE identical in both directories
same() {
  local a=$1 b=$2; shift 2
  for f in "$@"; do
    if [ ! -s "$a/$f" ]; then fail "$a/$f missing or empty"; continue; fi
    cmp -s "$a/$f" "$b/$f" && echo "same: $f ($(basename "$a") = $(basename "$b"))" ||
      fail "$f differs between $(basename "$a") and $(basename "$b")"
  done
}
# run NAME LAUNCH... -- ATTN-ARGS...: in $work/NAME, stdout to out.txt, stderr to err.txt
run() {
  local name=$1; shift
  local launch=()
  while [ "$1" != "--" ]; do launch+=("$1"); shift; done
  shift
  mkdir -p "$work/$name"
  (cd "$work/$name" && "${launch[@]}" "$attn" "$@" >out.txt 2>err.txt)
  local rc=$?
  [ $rc -eq 0 ] || { fail "$name: exit $rc"; cat "$work/$name/err.txt"; }
}

sweep=(sweep --model transformer --grid 'embed-dim=8,16 heads=1,2 seed=1..2'
       --set 'train-size=300' --epochs 2 --test-size 200 --out out)
run sweep-j1 -- "${sweep[@]}" -j 1
run sweep-np1 "${mpi[@]}" -np 1 -- "${sweep[@]}"
run sweep-np2 "${mpi[@]}" -np 2 -- "${sweep[@]}"
files=(out.txt out/runs.jsonl out/summary.md out/accuracy-vs-embed-dim.png out/accuracy-vs-heads.png)
same "$work/sweep-j1" "$work/sweep-np1" "${files[@]}"
same "$work/sweep-j1" "$work/sweep-np2" "${files[@]}"
[ "$(wc -l <"$work/sweep-np2/out/runs.jsonl")" = 8 ] || fail "runs.jsonl: not 8 runs"

repro=(reproduce --seeds 2 --epochs 1 --train-size 200 --models rnn,lstm --out out)
run repro-j1 -- "${repro[@]}" -j 1
run repro-np2 "${mpi[@]}" -np 2 -- "${repro[@]}"
for d in repro-j1 repro-np2; do grep -v '^Total wall time' "$work/$d/out.txt" >"$work/$d/table.txt"; done
same "$work/repro-j1" "$work/repro-np2" table.txt out/reproduce.json out/rnn-seed1.json \
  out/rnn-seed2.json out/lstm-seed1.json out/lstm-seed2.json

# reproduce --task rewrite under mpirun: each run spread over the ranks (not one run per rank),
# the weights and the table of the plain command; -np 3 leaves one rank with fewer micro-batches
s2s=(reproduce --task rewrite --models seq2seq-transformer,seq2seq-gru --seeds 2 --epochs 1
     --train-size 200 --test-size 40 --out out)
run s2s-j1 -- "${s2s[@]}" -j 1
run s2s-np3 "${mpi[@]}" -np 3 -- "${s2s[@]}"
same "$work/s2s-j1" "$work/s2s-np3" out.txt out/seq2seq-transformer-seed1.json \
  out/seq2seq-transformer-seed2.json out/seq2seq-gru-seed1.json out/seq2seq-gru-seed2.json
grep -q '^attn reproduce: 3 ranks, [1-9][0-9]* exchanges' "$work/s2s-np3/err.txt" ||
  fail "reproduce --task rewrite -np 3: no exchanges reported (not one run over the ranks?)"
"$attn" reproduce --task rewrite --size base --models seq2seq-gru --out "$work/x" 2>/dev/null
[ $? -eq 2 ] || fail "reproduce --size base --models seq2seq-gru: not a usage error (exit 2)"

# a sweep's point is the table's run: the same accuracies as reproduce.json for (lstm, seed)
run cons-np2 "${mpi[@]}" -np 2 -- sweep --model lstm --grid 'seed=1..2' --set 'train-size=200' \
  --epochs 1 --out out
/usr/bin/python3 - "$work/repro-np2/out/reproduce.json" "$work/cons-np2/out/runs.jsonl" <<'PY' ||
import json, sys
table = {(r["model"], r["seed"]): r["accuracy"] for r in json.load(open(sys.argv[1]))["runs"]}
lines = [json.loads(l) for l in open(sys.argv[2])]
assert len(lines) == 2, lines
for l in lines:
    want = table[("lstm", l["options"]["seed"])]
    assert l["accuracy"] == want, (l["accuracy"], want)
print("sweep points = reproduce runs (lstm seeds 1, 2)")
PY
  fail "sweep accuracies differ from reproduce's"

exp=(experiment norm --quick --format json --out out)
run exp-np1 "${mpi[@]}" -np 1 -- "${exp[@]}"
run exp-np2 "${mpi[@]}" -np 2 -- "${exp[@]}"
for d in exp-np1 exp-np2; do
  sed 's/"seconds": [0-9.]*, //' "$work/$d/out.txt" >"$work/$d/result.json"
  sed 's/"seconds": [0-9.]*, //' "$work/$d/out/norm.json" >"$work/$d/saved.json"
done
same "$work/exp-np1" "$work/exp-np2" result.json saved.json out/norm.png
grep -q '"verdict"' "$work/exp-np2/result.json" || fail "experiment: no verdict on stdout"

# eval --table over the ranks: the same table as without mpirun; the run whose weights file is
# missing (lstm seed 2, run 4 of 6: rank 1 of 2) is named with its rank; exit 1 (no transformer)
cp -r "$work/repro-j1/out" "$work/table" && rm "$work/table/lstm-seed2.json"
(cd "$work" && "$attn" eval --table table --seeds 2 >table-j.txt 2>table-j.err)
rc_j=$?
(cd "$work" && "${mpi[@]}" -np 2 "$attn" eval --table table --seeds 2 >table-np2.txt 2>table-np2.err)
rc_np2=$?
[ $rc_j -eq 1 ] && [ $rc_np2 -eq 1 ] || fail "eval --table with missing files: exit $rc_j and $rc_np2"
cmp -s "$work/table-j.txt" "$work/table-np2.txt" && echo "same: eval --table (no mpirun = -np 2)" ||
  fail "eval --table differs"
grep -q 'lstm seed 2 failed: .*lstm-seed2.json.*(rank 1 on ' "$work/table-np2.err" &&
  echo "the missing run is named with its rank" || { fail "eval: no message naming lstm seed 2 and rank 1"; cat "$work/table-np2.err"; }

# run 2 of 2 (max-len=8: the training sentences are longer) fails on rank 1
mkdir -p "$work/fail"
(cd "$work/fail" && "${mpi[@]}" -np 2 "$attn" sweep --model transformer --grid 'max-len=81,8' \
  --set 'train-size=100 embed-dim=8' --epochs 1 --test-size 50 --out out >out.txt 2>err.txt)
rc=$?
[ $rc -eq 1 ] || fail "failing sweep: exit $rc, expected 1"
grep -q 'run 2 (max-len=8) failed: .*(rank 1 on ' "$work/fail/err.txt" &&
  echo "the failing run is named with its rank" || { fail "no message naming run 2 and rank 1"; cat "$work/fail/err.txt"; }
[ ! -e "$work/fail/out/runs.jsonl" ] || fail "a failed sweep wrote runs.jsonl"
[ ! -s "$work/fail/out.txt" ] || fail "a failed sweep printed a table"

[ $fails -eq 0 ] && echo "all same" || echo "$fails failures"
exit $((fails > 0))
