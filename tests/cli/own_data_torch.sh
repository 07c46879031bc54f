#!/bin/sh
# own_data_torch.sh ATTN SOURCE_DIR -- docs/own-data.md's path, live: train the Transformer and
# the LSTM on examples/cafe-train.tsv with --vocab-from-data, then examples/to_pytorch.py
# (PyTorch's logits equal attn predict's bit for bit, [UNK] included), then back to attn with
# tools/export_classifier.py: the same predict output byte for byte.
set -eu
attn=$1
src=$2
dir=$(mktemp -d /tmp/attn_own_data_XXXXXX)
trap 'rm -rf "$dir"' EXIT
for m in transformer lstm; do
    "$attn" train --model $m --data "$src/examples/cafe-train.tsv" --vocab-from-data \
        --min-count 2 --holdout 80 --epochs 5 --batch 16 --out "$dir/$m.json" 2>/dev/null
    /usr/bin/python3 "$src/examples/to_pytorch.py" --weights "$dir/$m.json" --attn "$attn" \
        --save "$dir/$m.pt" "honestly the espresso was not bitter" "The waiter was never rude!" \
        "the latte was heavenly"
    python_json="import json, sys; d = json.load(open(sys.argv[1]))"
    /usr/bin/python3 -c "$python_json; print('\n'.join(d['vocab']))" "$dir/$m.json" >"$dir/words.txt"
    config=$(/usr/bin/python3 -c "$python_json; print(json.dumps(d['config']))" "$dir/$m.json")
    /usr/bin/python3 "$src/tools/export_classifier.py" --module "$src/tools/attn_models.py:build" \
        --kwargs "{\"config\": $config}" --state-dict "$dir/$m.pt" --vocab "$dir/words.txt" \
        --out "$dir/back.json"
    cut -f2 "$src/examples/cafe-test.tsv" | "$attn" predict --weights "$dir/$m.json" \
        --format json >"$dir/a.out" 2>/dev/null
    cut -f2 "$src/examples/cafe-test.tsv" | "$attn" predict --weights "$dir/back.json" \
        --format json >"$dir/b.out" 2>/dev/null
    test "$(wc -l <"$dir/a.out")" -eq 100
    cmp "$dir/a.out" "$dir/b.out"
    echo "$m: back from PyTorch, 100/100 predict lines identical"
done
