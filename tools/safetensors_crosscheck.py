#!/usr/bin/python3
"""safetensors_crosscheck.py -- attn's safetensors against an independent reader and writer.

For a Transformer and an LSTM classifier and a seq2seq Transformer (fresh weights from
`attn train --epochs 0`, JSON):
  1. `attn convert` JSON -> safetensors; the file parsed here (tools/safetensors_io.py: struct,
     json, numpy; not attn's reader) holds every tensor of the JSON, same names and shapes,
     every value equal bit for bit; the layout is the published one (F32, contiguous offsets).
  2. the PyTorch side writes the weights (the classifiers: the state_dict of the PyTorch module
     loaded from the JSON, in reverse order, so attn must read by name) with
     safetensors_io.save_state_dict; `attn predict` / `attn generate` on that file prints the
     same bytes as on the JSON, and `attn convert` of it back to JSON gives the JSON's bytes.

    safetensors_crosscheck.py --attn build/attn
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_core  # noqa: E402,F401 -- before numpy and torch, which load OpenBLAS
import numpy as np  # noqa: E402

import safetensors_io  # noqa: E402

SENTENCES = ["the course was great", "the lecture was not helpful",
             "the course was not bad"]


def run(attn, *args):
    r = subprocess.run([attn] + list(args), capture_output=True)
    if r.returncode != 0:
        sys.exit("FAIL: attn %s: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
    return r.stdout


def json_tensors(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    out = {}
    for name, t in doc["tensors"].items():
        a = np.array(t["data"], dtype=np.float64).astype(np.float32)
        out[name] = a.reshape(t["shape"])
    return doc, out


def compare(what, got, want):
    if list(got) != list(want) and sorted(got) != sorted(want):
        sys.exit("FAIL: %s: tensor names differ: %s vs %s" % (what, sorted(got), sorted(want)))
    n = 0
    for name, w in want.items():
        g = got[name]
        if list(g.shape) != list(w.shape):
            sys.exit("FAIL: %s: %s shape %s, JSON %s" % (what, name, g.shape, w.shape))
        diff = int(np.count_nonzero(g.view(np.uint32) != w.view(np.uint32)))
        if diff:
            sys.exit("FAIL: %s: %s: %d values differ in their bits" % (what, name, diff))
        n += w.size
    print("%s: %d tensors, %d values, all bit-identical" % (what, len(want), n))


def pytorch_state_dict(json_path, doc, tensors):
    """The classifiers: the state_dict of the PyTorch module holding the JSON's weights."""
    if doc["format"] != safetensors_io.CLASSIFIER_FORMAT:
        return dict(tensors)
    import weights_json
    return {k: v for k, v in weights_json.load(json_path).state_dict().items()}


def check(attn, tmp, model, extra):
    base = os.path.join(tmp, model)
    js, st, py, back = base + ".json", base + ".safetensors", base + ".py.safetensors", base + ".back.json"
    run(attn, "train", "--model", model, "--epochs", "0", "--seed", "3", "--out", js, *extra)
    run(attn, "convert", js, st)
    doc, want = json_tensors(js)
    got, meta = safetensors_io.load(st)
    if meta.get("format") != doc["format"] or json.loads(meta["config"]) != doc["config"]:
        sys.exit("FAIL: %s: metadata %s does not match the JSON's format and config" % (model, meta))
    compare(model + " attn -> safetensors", got, want)
    sd = pytorch_state_dict(js, doc, want)
    items = list(sd.items())[::-1]  # reverse order: attn must find tensors by name
    safetensors_io.save_state_dict(dict(items), py, doc["config"], doc["format"])
    cmd = "generate" if doc["format"] == safetensors_io.SEQ2SEQ_FORMAT else "predict"
    for s in SENTENCES:
        a, b = run(attn, cmd, "--weights", js, s), run(attn, cmd, "--weights", py, s)
        if a != b:
            sys.exit("FAIL: %s: attn %s differs on the PyTorch-written file: %r vs %r"
                     % (model, cmd, a, b))
    print("%s: attn %s on the PyTorch-written safetensors = on the JSON (%d sentences)"
          % (model, cmd, len(SENTENCES)))
    run(attn, "convert", py, back)
    with open(js, "rb") as f1, open(back, "rb") as f2:
        if f1.read() != f2.read():
            sys.exit("FAIL: %s: attn convert of the PyTorch-written file is not the JSON's bytes"
                     % model)
    print("%s: PyTorch-written safetensors -> attn convert -> the JSON's bytes" % model)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attn", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        check(a.attn, tmp, "transformer", [])
        check(a.attn, tmp, "lstm", [])
        check(a.attn, tmp, "seq2seq-transformer", ["--task", "rewrite"])
    print("PASS")


if __name__ == "__main__":
    main()
