#!/usr/bin/env bash
# kernels_policy.sh ATTN -- which kernels a command runs on when nobody says
# (src/cli/kernels_policy.c): native for the user's own work (predict, train, ...), pinned where
# bytes travel (reproduce, figures, experiment, attend, lesson, sweep); $ATTN_KERNELS and
# --kernels choose otherwise. Read from --help, from the ATTN_DEBUG line, from a checkpoint's
# kernels record and, on an AVX2+FMA CPU, from the bytes of a short training forced onto
# OpenBLAS's Prescott kernels (native honours OPENBLAS_CORETYPE, pinned does not). CTest
# kernels/policy.
set -uo pipefail
attn=${1:?usage: kernels_policy.sh ATTN}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run() { env -u ATTN_KERNELS -u OPENBLAS_CORETYPE -u ATTN_CPU "$@"; }

for c in predict generate explain saliency eval grad train serve flops data vocab info; do
    run "$attn" $c --help >"$dir/help.txt"
    grep -q "Default \$ATTN_KERNELS, else native:" "$dir/help.txt" || bad "$c --help: default not native"
done
for c in reproduce figures experiment attend lesson sweep; do
    run "$attn" $c --help >"$dir/help.txt"
    grep -q "Default \$ATTN_KERNELS, else pinned:" "$dir/help.txt" || bad "$c --help: default not pinned"
done
n_help=18

# what runs before the command's options are read (ATTN_DEBUG)
debug() { # PATTERN ENV/ARGS...: the ATTN_DEBUG lines of a command hold PATTERN
    local pattern=$1
    shift
    run ATTN_DEBUG=1 "$@" 2>"$dir/debug.txt" >/dev/null
    grep -q "$pattern" "$dir/debug.txt"
}
debug "kernels: native, vocab's default" "$attn" vocab || bad "vocab does not start on native"
debug "kernels: pinned, attend's default" "$attn" attend || bad "attend does not start on pinned"
debug "kernels: pinned, from \$ATTN_KERNELS" ATTN_KERNELS=pinned "$attn" vocab ||
    bad "ATTN_KERNELS=pinned is not honoured"

train() { # NAME ENV/ARGS... : a short LSTM training, its weights and checkpoint in $dir
    local name=$1
    shift
    local envs=()
    while [ $# -gt 0 ] && [[ $1 == *=* ]]; do envs+=("$1"); shift; done
    run "${envs[@]}" "$attn" train --model lstm --epochs 1 --train-size 200 --holdout 20 \
        --out "$dir/$name.json" --checkpoint "$dir/$name.ck.json" "$@" >/dev/null \
        2>"$dir/$name.err" || { cat "$dir/$name.err"; bad "train $name failed"; }
}
mode_of() { grep -o '"kernels":{"mode":"[a-z]*"' "$dir/$1.ck.json" | cut -d'"' -f6; }
train default ATTN_TEST=1
train option ATTN_TEST=1 --kernels pinned
[ "$(mode_of default)" = native ] || bad "train's checkpoint records '$(mode_of default)', not native"
[ "$(mode_of option)" = pinned ] || bad "train --kernels pinned records '$(mode_of option)'"

repro() { # NAME ARGS...: a one-epoch attn reproduce; prints the mode its reproduce.json records
    local name=$1
    shift
    run "$attn" reproduce --seeds 1 --epochs 1 --train-size 200 --models lstm --out "$dir/$name" \
        "$@" >/dev/null 2>"$dir/$name.err" || { cat "$dir/$name.err"; bad "reproduce $name failed"; }
    grep -o '"kernels": {"mode": "[a-z]*"' "$dir/$name/reproduce.json" | cut -d'"' -f6
}
[ "$(repro repro-default)" = pinned ] || bad "reproduce's report does not record pinned"
[ "$(repro repro-native --kernels native)" = native ] ||
    bad "reproduce --kernels native does not record native"
# reproduce --task rewrite writes no report of its own: its output says which kernels it ran
run "$attn" reproduce --task rewrite --models seq2seq-gru --seeds 1 --epochs 1 --train-size 100 \
    --out "$dir/repro-s2s" >"$dir/repro-s2s.out" 2>"$dir/repro-s2s.err" || bad "reproduce --task rewrite failed"
grep -q '^kernels: OpenBLAS .*(pinned)$' "$dir/repro-s2s.out" ||
    bad "reproduce --task rewrite does not say it ran pinned: $(grep kernels "$dir/repro-s2s.out")"

if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    train prescott-default OPENBLAS_CORETYPE=Prescott
    train prescott-native OPENBLAS_CORETYPE=Prescott --kernels native
    train prescott-pinned OPENBLAS_CORETYPE=Prescott --kernels pinned
    train prescott-env OPENBLAS_CORETYPE=Prescott ATTN_KERNELS=pinned
    cmp -s "$dir/prescott-default.json" "$dir/prescott-native.json" ||
        bad "train's default is not --kernels native"
    cmp -s "$dir/prescott-default.json" "$dir/prescott-pinned.json" &&
        bad "train on Prescott: native equals pinned, the check cannot tell"
    cmp -s "$dir/prescott-pinned.json" "$dir/option.json" ||
        bad "--kernels pinned under OPENBLAS_CORETYPE=Prescott is not pinned"
    cmp -s "$dir/prescott-env.json" "$dir/prescott-pinned.json" ||
        bad "ATTN_KERNELS=pinned is not --kernels pinned"
    # a run resumed on other kernels than its checkpoint's says so, and goes on
    run "$attn" train --resume "$dir/prescott-default.ck.json" --epochs 2 --kernels pinned \
        --out "$dir/resumed.json" >/dev/null 2>"$dir/resume.err" || bad "resume failed"
    grep -q "note: .*prescott-default.ck.json was computed with OpenBLAS [^ ]* Prescott.*(native); this run uses .*Haswell.*(pinned)" \
        "$dir/resume.err" || bad "resume on other kernels gives no note: $(cat "$dir/resume.err")"
    s2s=(--model seq2seq-gru --task rewrite --epochs 1 --train-size 100 --holdout 20)
    run OPENBLAS_CORETYPE=Prescott "$attn" train "${s2s[@]}" --out "$dir/s2s.json" \
        --checkpoint "$dir/s2s.ck.json" >/dev/null 2>"$dir/s2s.err" || bad "seq2seq train failed"
    run "$attn" train --resume "$dir/s2s.ck.json" --epochs 2 --kernels pinned \
        --out "$dir/s2s-resumed.json" >/dev/null 2>"$dir/s2s-resume.err" || bad "seq2seq resume failed"
    grep -q "note: .*s2s.ck.json was computed with OpenBLAS [^ ]* Prescott" "$dir/s2s-resume.err" ||
        bad "seq2seq resume on other kernels gives no note: $(cat "$dir/s2s-resume.err")"
    run OPENBLAS_CORETYPE=Prescott "$attn" train --resume "$dir/s2s.ck.json" --epochs 2 \
        --out "$dir/s2s-resumed2.json" >/dev/null 2>"$dir/s2s-resume2.err" || bad "seq2seq resume failed"
    grep -q "note:" "$dir/s2s-resume2.err" && bad "a note on resume on the same kernels: $(cat "$dir/s2s-resume2.err")"
fi
[ $fail = 0 ] && echo "kernels policy: $n_help commands' defaults in --help, debug line, checkpoint record and bytes as the table says"
exit $fail
