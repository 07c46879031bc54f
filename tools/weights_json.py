#!/usr/bin/python3
"""weights_json.py -- attn-weights-v1 JSON export/import for the reference modules.

Format (include/attn.h): {"format": "attn-weights-v1", "config": {...},
"tensors": {"<state_dict key>": {"shape": [..], "data": [.. flat, row-major ..]}}}.
Each float32 is written as its shortest decimal form, checked to come back bit for bit through
double (strtod, then a cast to float, which is what cJSON does); when the check fails the
17-digit repr of the double is written instead. NaN/Inf are refused, naming the tensor.

    weights_json.py export PATH [--arch A] [--seed S]   fresh reference weights -> PATH
    weights_json.py check PATH                          load PATH strictly, print a summary
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_models  # noqa: E402

FORMAT = "attn-weights-v1"
PREFIXES = ("module.", "_orig_mod.")


def _bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def float_text(v):
    """Shortest text for float32 v that round-trips via double -> float32."""
    s = str(np.float32(v))
    if _bits(float(np.float32(float(s)))) != _bits(float(v)):
        s = repr(float(v))
    return s


def tensor_text(name, t):
    a = t.detach().to(torch.float32).cpu().contiguous().numpy().reshape(-1)
    bad = ~np.isfinite(a)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError("tensor %r holds %s at index %d; refusing to write it"
                         % (name, "NaN" if math.isnan(a[i]) else "Inf", i))
    data = ",".join(float_text(x) for x in a.tolist())
    return '%s:{"shape":%s,"data":[%s]}' % (json.dumps(name), json.dumps(list(t.shape)), data)


def dumps(tensors, config):
    """tensors: iterable of (name, tensor) in order."""
    parts = [tensor_text(name, t) for name, t in tensors]
    return ('{"format":"%s",\n"config":%s,\n"tensors":{\n%s\n}}\n'
            % (FORMAT, json.dumps(attn_models.full_config(config)), ",\n".join(parts)))


def write_atomic(path, text):
    tmp = path + ".tmp"
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def export(model, config, path):
    """Writes model's state_dict (with config) to path atomically."""
    sd = model.state_dict()
    items = [(strip_prefix(k), v) for k, v in sd.items()]
    write_atomic(path, dumps(items, config))


def export_tensors(tensors, config, path):
    """Writes an ordered list of (name, tensor) (e.g. gradients) as attn-weights-v1."""
    write_atomic(path, dumps(tensors, config))


def strip_prefix(name):
    changed = True
    while changed:
        changed = False
        for p in PREFIXES:
            if name.startswith(p):
                name = name[len(p):]
                changed = True
    return name


def _reject_constant(s):
    raise ValueError("non-finite number %s" % s)


def read(path):
    """-> (config dict, {name: float32 tensor}) with prefixes stripped."""
    with open(path) as f:
        doc = json.load(f, parse_constant=_reject_constant)
    if doc.get("format") != FORMAT:
        raise ValueError("%s: format %r, expected %r" % (path, doc.get("format"), FORMAT))
    tensors = {}
    for name, t in doc["tensors"].items():
        shape, data = t["shape"], t["data"]
        if any(not isinstance(x, (int, float)) or isinstance(x, bool) for x in data):
            raise ValueError("%s: tensor %r has a non-number in its data" % (path, name))
        n = 1
        for d in shape:
            n *= d
        if n != len(data):
            raise ValueError("%s: tensor %r has %d values for shape %s"
                             % (path, name, len(data), shape))
        tensors[strip_prefix(name)] = torch.tensor(data, dtype=torch.float64).to(
            torch.float32).reshape(shape)
    return doc["config"], tensors


def load(path):
    """-> reference module with the file's weights (strict: every key, every shape)."""
    config, tensors = read(path)
    model = attn_models.build(config)
    model.load_state_dict(tensors, strict=True)
    return model


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 success, 1 the file failed the check (named on stderr), 2 usage error.")
    ap.add_argument("command", choices=["export", "check"],
                    help="export: fresh reference weights to PATH; check: load PATH strictly")
    ap.add_argument("path", help="the attn-weights-v1 JSON file")
    ap.add_argument("--arch", default="lstm", choices=["rnn", "lstm", "gru", "transformer"],
                    help="model of export (default lstm)")
    ap.add_argument("--seed", type=int, default=1, help="torch.manual_seed of export (default 1)")
    args = ap.parse_args()
    if args.command == "export":
        torch.manual_seed(args.seed)
        config = {"arch": args.arch}
        export(attn_models.build(config), config, args.path)
        print("%s: wrote %s weights" % (args.path, args.arch))
        return 0
    try:
        model = load(args.path)
    except (ValueError, KeyError, RuntimeError, OSError) as e:
        print("weights_json.py check: %s: %s" % (args.path, e), file=sys.stderr)
        return 1
    c = model.config
    print("%s: %s, %d tensors, %d parameters" % (args.path, c["arch"], len(model.state_dict()),
                                                 attn_models.n_params(model)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
