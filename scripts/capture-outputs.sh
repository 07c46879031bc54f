#!/bin/sh
# capture-outputs.sh ATTN OUTDIR -- run a fixed set of attn commands and keep every output byte,
# so that a restructuring can show it changed none:
#   scripts/capture-outputs.sh /tmp/attn-before /tmp/before
#   scripts/capture-outputs.sh build/attn /tmp/after
#   diff -r /tmp/before /tmp/after   # no output: byte-identical
# Covers predict, eval, explain (text and JSON), grad, train + resume, a small reproduce --out,
# the seq2seq models' generate, explain, train + resume, grad and reproduce --task rewrite|compose,
# experiment all --quick JSON (the "seconds" field, a wall time, removed), saliency, attend,
# lesson, flops and a few answers of attn serve. Timings and absolute paths are filtered out;
# nothing else is. Runs from the source tree (weights/).
set -eu
# one kernel set for every command and for binaries from before the per-command defaults
# (src/cli/kernels_policy.c), so that two builds are compared like with like
ATTN_KERNELS=${ATTN_KERNELS:-pinned}
export ATTN_KERNELS
ATTN=$(realpath "$1")
OUT=$2
rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
W=weights
S1="the lecture was not good"
S2="the teacher was great but the room was terrible"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; [ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null || true' EXIT

run() { # run NAME CMD...: stdout to NAME.out, stderr to NAME.err, exit code to NAME.rc
    name=$1
    shift
    set +e
    "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    echo $? >"$OUT/$name.rc"
    set -e
}

for m in rnn lstm transformer; do
    run predict-$m "$ATTN" predict --weights $W/$m-seed1.json "$S1" "$S2"
    run predict-json-$m "$ATTN" predict --weights $W/$m-seed1.json --format json "$S1" "$S2"
    run explain-json-$m "$ATTN" explain --weights $W/$m-seed1.json --format json "$S1" "$S2"
    run explain-text-$m "$ATTN" explain --weights $W/$m-seed1.json --color never "$S1"
    run eval-$m "$ATTN" eval --weights $W/$m-seed1.json --set plain --n 200
done
"$ATTN" data --set train --seed 3 --n 64 >"$TMP/data.tsv"
for m in rnn transformer; do
    run grad-$m "$ATTN" grad --weights $W/$m-seed1.json --data "$TMP/data.tsv" --out "$OUT/grad-$m.json"
done
run eval-data "$ATTN" eval --weights $W/lstm-seed1.json --data "$TMP/data.tsv"
for m in rnn gru transformer; do
    run train-$m "$ATTN" train --model $m --epochs 2 --train-size 200 --holdout 50 \
        --out "$OUT/train-$m.json" --checkpoint "$TMP/ck-$m.json" --log "$OUT/train-$m.jsonl"
    run resume-$m "$ATTN" train --resume "$TMP/ck-$m.json" --epochs 3 --out "$OUT/resume-$m.json"
done
run reproduce "$ATTN" reproduce --seeds 1 --epochs 1 --train-size 200 -j 2 \
    --models rnn,gru,lstm,transformer --out "$TMP/repro"
for f in "$TMP"/repro/*.json; do
    grep -v '"seconds"\|wall\|"started"\|"finished"' "$f" >"$OUT/repro-$(basename "$f")" || true
done
sed -i 's/[0-9.]* s\b/<t> s/g; s/[0-9.]*s wall/<t>s wall/g' "$OUT/reproduce.out" "$OUT/reproduce.err"
run experiments "$ATTN" experiment all --quick --format json
# parallel measures wall times (its numbers and so its verdict vary run to run): left out;
# kv-cache and parallel-decoder time their decoders too: their timed measurements, the "why"
# that quotes them and parallel-decoder's verdict that rests on them are masked
grep -v '^{"experiment": "parallel"' "$OUT/experiments.out" |
    sed 's/"seconds": *[-0-9.e+]*/"seconds": 0/g' |
    python3 -c '
import json, re, sys
timed = re.compile(r"seconds|speedup|microseconds|slope")
for line in sys.stdin:
    d = json.loads(line) if line.startswith("{") else None
    if d is None or d.get("experiment") not in ("kv-cache", "parallel-decoder"):
        sys.stdout.write(line)
        continue
    d["why"] = "<timed>"
    if d["experiment"] == "parallel-decoder":
        d["verdict"] = "<timed>"
    m = d.get("measurements", {})
    for k in [k for k in m if timed.search(k)]:
        m[k] = "<timed>"
    print(json.dumps(d))
' >"$TMP/e" && mv "$TMP/e" "$OUT/experiments.out"
run saliency "$ATTN" saliency --model rnn,transformer --T 12 --n 20 --format json
run attend "$ATTN" attend --shuffle --format json
run lesson-scaling "$ATTN" lesson scaling --format json
run lesson-positions "$ATTN" lesson positions --format json
run flops "$ATTN" flops --model transformer --train

# the translation family: generate, explain, train + resume (weights, checkpoint, log), grad,
# and a small reproduce --task rewrite|compose
for m in transformer gru attn; do
    sw=$W/seq2seq-$m-seed1.json
    run s2s-gen-$m "$ATTN" generate --weights "$sw" "$S1" "the teacher was great"
    run s2s-genj-$m "$ATTN" generate --weights "$sw" --format json "$S1"
    run s2s-expl-$m "$ATTN" explain --weights "$sw" --format json "$S1"
    run s2s-explt-$m "$ATTN" explain --weights "$sw" --color never "$S1"
    run s2s-train-$m "$ATTN" train --model seq2seq-$m --task rewrite --epochs 1 --train-size 64 \
        --holdout 16 --test-size 16 --threads 2 --out "$OUT/s2s-train-$m.json" \
        --checkpoint "$OUT/s2s-ck-$m.json" --log "$OUT/s2s-train-$m.jsonl"
    run s2s-resume-$m "$ATTN" train --resume "$OUT/s2s-ck-$m.json" --epochs 2 \
        --out "$OUT/s2s-resume-$m.json" --threads 2
done
"$ATTN" data --task rewrite --seed 3 --n 32 >"$TMP/pairs.tsv"
run s2s-grad "$ATTN" grad --weights $W/seq2seq-transformer-seed1.json --data "$TMP/pairs.tsv" \
    --out "$OUT/s2s-grad.json"
run s2s-gen-compose "$ATTN" generate --weights $W/compose-seq2seq-transformer-seed1.json \
    --format json "positive exam"
for task in rewrite compose; do
    run s2s-repro-$task "$ATTN" reproduce --task $task --seeds 1 --epochs 1 --train-size 64 \
        --holdout 16 --test-size 16 -j 2 --out "$TMP/r-$task"
    for f in "$TMP/r-$task"/*; do
        [ -f "$f" ] && cp "$f" "$OUT/s2s-repro-$task-$(basename "$f")"
    done
    sort "$OUT/s2s-repro-$task.err" >"$TMP/r" && mv "$TMP/r" "$OUT/s2s-repro-$task.err"
done

# serve: a few answers over HTTP
PORT=$((20000 + $$ % 20000))
"$ATTN" serve --weights $W --port $PORT --threads 1 >"$TMP/serve.log" 2>&1 &
SERVE_PID=$!
i=0
while ! curl -s "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "serve did not start" >&2; exit 1; }
    sleep 0.1
done
for p in /api/models /api/vocab "/api/sets/plain?model=rnn&seed=1" "/api/sets/fill8?model=transformer&seed=2"; do
    curl -s -D - "http://127.0.0.1:$PORT$p" | grep -vi '^date:' >"$OUT/serve-$(echo "$p" | tr -c 'a-z0-9\n' '_').out"
done
for body in "{\"sentence\": \"$S1\"}" "{\"sentence\": \"$S2\", \"models\": [\"lstm\", \"transformer\"]}" \
    '{"sentence": "the lecture was \u00e9 good"}' '{"sentence": 3}' '{"sentence": "a", "sentence": "b"}'; do
    n=$(echo "$body" | cksum | cut -d' ' -f1)
    curl -s -D - -X POST -H 'Content-Type: application/json' --data "$body" \
        "http://127.0.0.1:$PORT/api/explain" | grep -vi '^date:' >"$OUT/serve-explain-$n.out"
done
kill "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null || true
SERVE_PID=
# what varies run to run: temporary paths, speeds and wall times, the workers' finishing order
for f in "$OUT"/*; do
    sed -i "s|$TMP|<tmp>|g; s|$OUT|<out>|g" "$f"
done
sed -i 's/[0-9.]* sent\/s  elapsed [0-9.]* s  ETA [0-9.]* s/<speed>/' "$OUT"/train-*.err "$OUT"/resume-*.err
sed -i 's/"sentences_per_s": [^,]*, "elapsed_s": [^,]*, "eta_s": [^}]*/<speed>/' "$OUT"/*.jsonl
sort "$OUT/reproduce.err" >"$TMP/r" && mv "$TMP/r" "$OUT/reproduce.err"
sed -i -E 's/[0-9.]+ ?(s|ms|pairs\/s|sent\/s|tokens\/s|target tokens\/s)\b/<t>/g' "$OUT"/s2s-*.err "$OUT"/s2s-*.out
sed -i -E 's/"(seconds|elapsed_s|eta_s|pairs_per_s|sentences_per_s|tokens_per_s|started|finished|wall_s)": *[^,}]*/"\1": 0/g' \
    "$OUT"/s2s-*
echo "captured $(ls "$OUT" | wc -l) files into $OUT"
