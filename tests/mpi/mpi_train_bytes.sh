#!/usr/bin/env bash
# tests/mpi/mpi_train_bytes.sh ATTN -- one training run over the ranks of mpirun: `mpirun -np N
# attn train` for N = 1, 2, 3 and --threads 1, 2 writes the weights, checkpoint and log of plain
# `attn train --threads 1` byte for byte (cmp), for a transformer classifier and a
# seq2seq-transformer (the log's wall-time fields -- sentences_per_s, tokens_per_s, elapsed_s,
# eta_s -- taken out first: they differ between two plain runs too; and "epochs", the planned
# length, which a 1-epoch run extended to 2 writes as 1 in its first line); a run resumed on -np 3 from an -np 2 checkpoint too. Small models and data
# (batches of 48: three micro-batches, so -np 2 splits them unevenly, -np 3 one each, and -np 4
# leaves a rank without one).
set -u
attn=$1
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT; echo "work: $work"
mpi=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca oob_tcp_if_include lo
     --mca btl_vader_single_copy_mechanism none)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# run DIR LAUNCH... -- ARGS...: in $work/DIR
run() {
  local dir=$1; shift
  local launch=()
  while [ "$1" != "--" ]; do launch+=("$1"); shift; done
  shift
  mkdir -p "$work/$dir"
  (cd "$work/$dir" && "${launch[@]}" "$attn" "$@" >out.txt 2>err.txt) ||
    { fail "$dir: exit $?"; cat "$work/$dir/err.txt"; }
  [ -f "$work/$dir/log.jsonl" ] &&
    sed -E 's/, "(epochs|sentences_per_s|tokens_per_s|elapsed_s|eta_s)": [^,}]*//g' \
      "$work/$dir/log.jsonl" >"$work/$dir/log.txt"
}
same() { # same REF DIR FILE...
  for f in "${@:3}"; do
    if [ ! -s "$work/$1/$f" ]; then fail "$1/$f missing or empty"; continue; fi
    cmp -s "$work/$1/$f" "$work/$2/$f" && echo "same: $2/$f" || fail "$2/$f differs from $1/$f"
  done
}
files=(w.json ck.json log.txt)
cls=(train --model transformer --embed-dim 16 --heads 2 --layers 1 --train-size 288
     --holdout 48 --batch 48 --seed 3 --out w.json --checkpoint ck.json --log log.jsonl)
s2s=(train --model seq2seq-transformer --task rewrite --embed-dim 16 --heads 2 --ffn 32
     --layers 1 --dec-layers 1 --train-size 192 --holdout 16 --batch 48 --seed 5
     --out w.json --checkpoint ck.json --log log.jsonl)
for fam in ${FAMS:-cls s2s}; do
  declare -n args=$fam
  run "$fam-plain" -- "${args[@]}" --epochs 2 --threads 1
  for np in 1 2 3; do
    for th in 1 2; do
      run "$fam-np$np-t$th" "${mpi[@]}" -np $np -- "${args[@]}" --epochs 2 --threads $th
      same "$fam-plain" "$fam-np$np-t$th" "${files[@]}"
    done
  done
  # -np 4: more ranks than a step's three micro-batches, so rank 0 computes none and still owns
  # a quarter of the parameters (sums and updates them)
  run "$fam-np4-t1" "${mpi[@]}" -np 4 -- "${args[@]}" --epochs 2 --threads 1
  same "$fam-plain" "$fam-np4-t1" "${files[@]}"
  # resume: 1 epoch on -np 2, then on to 2 epochs on -np 3 = the 2-epoch run
  run "$fam-resume" "${mpi[@]}" -np 2 -- "${args[@]}" --epochs 1 --threads 1
  run "$fam-resume" "${mpi[@]}" -np 3 -- train --resume ck.json --epochs 2 --out w.json \
    --checkpoint ck.json --log log.jsonl --threads 1
  same "$fam-plain" "$fam-resume" "${files[@]}"
  # the other ranks write nothing: rank 0's files only
  [ "$(ls "$work/$fam-np3-t1" | sort | tr '\n' ' ')" = "ck.json err.txt log.jsonl log.txt out.txt w.json " ] ||
    fail "$fam-np3-t1: unexpected files: $(ls "$work/$fam-np3-t1")"
  unset -n args
done
[ $fails -eq 0 ] && echo "PASS" || { echo "$fails failures"; exit 1; }
