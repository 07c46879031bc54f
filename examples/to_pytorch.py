#!/usr/bin/python3
"""to_pytorch.py -- your attn weights (with their own vocabulary) as a PyTorch module, and the
check that PyTorch gives attn's logits bit for bit (docs/own-data.md, step 5).

    /usr/bin/python3 examples/to_pytorch.py --weights W.json --attn build/attn SENTENCE...

Loads W.json with tools/weights_json.py (tensors and "vocab"), builds the reference module of
tools/attn_models.py, turns each sentence into ids with the file's vocabulary (lower case,
.,!?;: quotes and brackets removed; a word it lacks is [UNK]), runs PyTorch's batch-1 eval
and `attn predict --format json`, and prints both logits. Exit code 1 unless every logit is
identical to the bit. Also writes the module's state_dict with --save W.pt
(torch.save(model.state_dict()); tools/export_classifier.py brings it back).
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import weights_json  # noqa: E402 -- first: it loads attn's OpenBLAS kernels before torch
import attn_models  # noqa: E402
import torch  # noqa: E402

STRIP = re.compile("[.,!?;:\"'`()\\[\\]{}\u201c\u201d\u2018\u2019\u201e\u00ab\u00bb]")


def to_ids(sentence, vocab):
    index = {t: i for i, t in enumerate(vocab)}
    unk = index.get("[UNK]")
    ids = []
    for token in sentence.split():
        word = STRIP.sub("", token).lower()
        if not word:
            continue
        if word in index:
            ids.append(index[word])
        elif unk is not None:
            ids.append(unk)
        else:
            raise SystemExit("unknown word %r and no [UNK] in the vocabulary" % word)
    return ids


def bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--attn", required=True, help="the attn binary")
    ap.add_argument("--save", help="write the state_dict here (torch.save)")
    ap.add_argument("sentences", nargs="+")
    a = ap.parse_args()
    torch.set_num_threads(1)
    config, tensors, vocab = weights_json.read_with_vocab(a.weights)
    if vocab is None:
        raise SystemExit("%s has no vocabulary of its own" % a.weights)
    model = attn_models.build(config)
    model.load_state_dict(tensors, strict=True)
    model.eval()
    if a.save:
        torch.save(model.state_dict(), a.save)
    out = subprocess.run([a.attn, "predict", "--weights", a.weights, "--format", "json", "--"]
                         + a.sentences, check=True, capture_output=True, text=True).stdout
    same = 0
    for sentence, line in zip(a.sentences, out.splitlines()):
        ids = to_ids(sentence, vocab)
        with torch.no_grad():
            logit = model(torch.tensor([ids]), torch.tensor([len(ids)]))[0].item()
        theirs = json.loads(line)["logit"]
        equal = bits(logit) == bits(theirs)
        same += equal
        print("%-45s pytorch %.9g  attn %.9g  %s" % (sentence, logit, theirs,
                                                       "identical" if equal else "DIFFERENT"))
    print("%d/%d logits identical" % (same, len(a.sentences)))
    return 0 if same == len(a.sentences) else 1


if __name__ == "__main__":
    sys.exit(main())
