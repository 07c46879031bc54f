#!/usr/bin/env bash
# kernels_pinned.sh ATTN -- the pinned kernels (src/kernels/kernelset.c) make training
# independent of what OpenBLAS would pick: a short `attn train` of the Transformer and the LSTM
# gives the same bytes with OPENBLAS_CORETYPE unset, Haswell, Zen, SkylakeX, Cooperlake, with
# OPENBLAS_L2_SIZE changed and with OPENBLAS_NUM_THREADS=2. And the check can fail: native
# kernels on OpenBLAS's SSE3 "Prescott" table (runs on any x86-64) give other bytes. CTest
# kernels/pinned; exit 77 (skipped) on a CPU without AVX2+FMA, where pinned means "what
# OpenBLAS picks" and these variants are not promised to agree.
set -euo pipefail
attn=${1:?usage: kernels_pinned.sh ATTN}
if ! grep -qw avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
    echo "skipped: this CPU has no AVX2+FMA (the pinned rule's second reference: scalar)"
    exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
train() { # NAME MODEL ENV... : trains pinned (train's own default is native) with ENV
    local name=$1 model=$2
    shift 2
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE -u OPENBLAS_NUM_THREADS -u ATTN_CPU ATTN_KERNELS=pinned \
        "$@" "$attn" train --model "$model" --epochs 1 --train-size 400 --holdout 40 \
        --out "$dir/$name-$model.json" >/dev/null 2>"$dir/$name-$model.err" ||
        { cat "$dir/$name-$model.err"; exit 1; }
}
variants=(unset:ATTN_TEST_VARIANT=unset haswell:OPENBLAS_CORETYPE=Haswell zen:OPENBLAS_CORETYPE=Zen
          l2:OPENBLAS_L2_SIZE=4096 threads2:OPENBLAS_NUM_THREADS=2)
if grep -qw avx512f /proc/cpuinfo; then # forcing AVX-512 kernels needs an AVX-512 CPU
    variants+=(skylakex:OPENBLAS_CORETYPE=SkylakeX cooperlake:OPENBLAS_CORETYPE=Cooperlake)
fi
fail=0
for model in transformer lstm; do
    for v in "${variants[@]}"; do
        train "${v%%:*}" $model "${v#*:}"
        if ! cmp -s "$dir/unset-$model.json" "$dir/${v%%:*}-$model.json"; then
            echo "FAIL: $model with ${v#*:} differs from OPENBLAS_CORETYPE unset"
            fail=1
        fi
    done
    train native-prescott $model ATTN_KERNELS=native OPENBLAS_CORETYPE=Prescott
    if cmp -s "$dir/unset-$model.json" "$dir/native-prescott-$model.json"; then
        echo "FAIL: $model on native Prescott kernels equals pinned: the check cannot tell"
        fail=1
    fi
    # the option does what the variable does
    train option-prescott $model OPENBLAS_CORETYPE=Prescott
    mv "$dir/option-prescott-$model.json" "$dir/pinned-prescott-$model.json"
    env -u ATTN_KERNELS OPENBLAS_CORETYPE=Prescott "$attn" train --kernels native --model $model \
        --epochs 1 --train-size 400 --holdout 40 --out "$dir/option-$model.json" >/dev/null 2>&1
    if ! cmp -s "$dir/native-prescott-$model.json" "$dir/option-$model.json" ||
        ! cmp -s "$dir/unset-$model.json" "$dir/pinned-prescott-$model.json"; then
        echo "FAIL: $model: --kernels native is not ATTN_KERNELS=native, or Prescott was not pinned"
        fail=1
    fi
    [ $fail = 0 ] && echo "$model: ${#variants[@]} variants identical, native Prescott differs"
done
if "$attn" vocab --kernels fast >/dev/null 2>"$dir/usage.err" || [ $? != 2 ] ||
    ! grep -q "expects pinned or native, got 'fast'" "$dir/usage.err"; then
    echo "FAIL: --kernels fast is not a usage error naming the value"
    fail=1
fi
exit $fail
