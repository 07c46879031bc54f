#!/usr/bin/env bash
# tests/mpi/mpi_killed_rank.sh ATTN -- a rank that dies ends a training run over the ranks:
# `mpirun -np 2 attn train` of a classifier and of a seq2seq model, rank 1 killed (SIGKILL) once
# the run has written its first checkpoint; then mpirun exits non-zero and names rank 1, rank 0
# says what it means for the files, no temporary is left, and the checkpoint is whole: `attn
# train --resume` of it (without mpirun) runs on to the next epoch.
set -u
attn=$1
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"; kill $(jobs -p) 2>/dev/null' EXIT
echo "work: $work"
mpi=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca oob_tcp_if_include lo
     --mca btl_vader_single_copy_mechanism none)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cls=(train --model transformer --embed-dim 16 --heads 2 --layers 1 --train-size 2000
     --holdout 48 --batch 48 --seed 3)
s2s=(train --model seq2seq-gru --task rewrite --embed-dim 16 --hidden 32 --train-size 1000
     --holdout 16 --batch 48 --seed 5)
# rank_pid MPIRUN_PID RANK: the pid of that rank (mpirun starts the ranks on this node itself)
rank_pid() {
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$p"
  done
}
for fam in cls s2s; do
  declare -n args=$fam
  dir=$work/$fam
  mkdir -p "$dir"
  (cd "$dir" && exec "${mpi[@]}" -np 2 "$attn" "${args[@]}" --epochs 100000 --threads 1 \
     --out w.json --checkpoint ck.json >out.txt 2>err.txt) &
  launcher=$!
  for _ in $(seq 1 300); do [ -s "$dir/ck.json" ] && break; sleep 0.1; done
  [ -s "$dir/ck.json" ] || { fail "$fam: no checkpoint after 30 s"; cat "$dir/err.txt"; kill $launcher; continue; }
  mpirun_pid=$(pgrep -P $launcher -x mpirun || echo $launcher)
  victim=$(rank_pid "$mpirun_pid" 1)
  [ -n "$victim" ] || { fail "$fam: rank 1 not found under mpirun $mpirun_pid"; kill $launcher; continue; }
  kill -KILL "$victim"
  start=$SECONDS
  wait $launcher
  rc=$?
  echo "$fam: mpirun exit $rc, $((SECONDS - start)) s after rank 1 was killed"
  [ $rc -ne 0 ] || fail "$fam: mpirun exited 0 after a rank died"
  [ $((SECONDS - start)) -le 30 ] || fail "$fam: the run took more than 30 s to end"
  grep -q "rank 1 .*signal 9" "$dir/err.txt" || fail "$fam: mpirun does not name rank 1: $(tail -5 "$dir/err.txt")"
  grep -q "attn train: rank 0 stopped by SIGTERM from mpirun" "$dir/err.txt" ||
    fail "$fam: rank 0 says nothing of the files: $(tail -5 "$dir/err.txt")"
  leftovers=$(cd "$dir" && ls -A | grep -v -x -e ck.json -e ck.json.lock -e w.json.lock -e out.txt -e err.txt)
  [ -z "$leftovers" ] || fail "$fam: left behind: $leftovers"
  epoch=$(grep -o '"epoch": *[0-9]*' "$dir/ck.json" | head -1 | grep -o '[0-9]*$')
  [ -n "$epoch" ] || { fail "$fam: no epoch in the checkpoint"; continue; }
  (cd "$dir" && "$attn" train --resume ck.json --epochs $((epoch + 1)) --threads 1 --out w2.json \
     >resume.out 2>resume.err) || fail "$fam: --resume of the checkpoint failed: $(cat "$dir/resume.err")"
  [ -s "$dir/w2.json" ] && echo "$fam: checkpoint of epoch $epoch resumed to epoch $((epoch + 1))" ||
    fail "$fam: the resumed run wrote no weights"
  unset -n args
done
[ $fails = 0 ] && echo "killed rank: non-zero exit, rank 1 named, the checkpoint whole, for both families"
exit $fails
