#!/usr/bin/python3
"""weights_json.py -- attn-weights-v1 JSON export/import for the reference modules.

Format (include/attn.h): {"format": "attn-weights-v1", "config": {...},
"tensors": {"<state_dict key>": {"shape": [..], "data": [.. flat, row-major ..]}}}.
Each float32 is written as its shortest decimal form, checked to come back bit for bit through
double (strtod, then a cast to float, which is what cJSON does); when the check fails the
17-digit repr of the double is written instead. NaN/Inf are refused, naming the tensor.
With --encoding b64 a tensor holds "data_b64" instead of "data": the base64 (RFC 4648, "="
padded) of its flat values as little-endian float32 (bit-exact, and about 5.3 bytes a value).
Both are read.

    weights_json.py export PATH [--arch A] [--seed S] [--encoding text|b64]
                                                        fresh reference weights -> PATH
    weights_json.py check PATH                          load PATH strictly, print a summary
    weights_json.py convert PATH OUT --encoding text|b64
                                                        rewrite PATH's tensors in an encoding
"""
import argparse
import base64
import binascii
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


ENCODINGS = ("text", "b64")


def tensor_text(name, t, encoding="text"):
    a = t.detach().to(torch.float32).cpu().contiguous().numpy().reshape(-1)
    bad = ~np.isfinite(a)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError("tensor %r holds %s at index %d; refusing to write it"
                         % (name, "NaN" if math.isnan(a[i]) else "Inf", i))
    shape = json.dumps(list(t.shape))
    if encoding == "b64":
        data = base64.b64encode(a.astype("<f4").tobytes()).decode("ascii")
        return '%s:{"shape":%s,"data_b64":"%s"}' % (json.dumps(name), shape, data)
    data = ",".join(float_text(x) for x in a.tolist())
    return '%s:{"shape":%s,"data":[%s]}' % (json.dumps(name), shape, data)


def dumps(tensors, config, encoding="text"):
    """tensors: iterable of (name, tensor) in order."""
    if encoding not in ENCODINGS:
        raise ValueError("unknown encoding %r (expected text or b64)" % (encoding,))
    parts = [tensor_text(name, t, encoding) for name, t in tensors]
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


def export(model, config, path, encoding="text"):
    """Writes model's state_dict (with config) to path atomically."""
    sd = model.state_dict()
    items = [(strip_prefix(k), v) for k, v in sd.items()]
    write_atomic(path, dumps(items, config, encoding))


def export_tensors(tensors, config, path, encoding="text"):
    """Writes an ordered list of (name, tensor) (e.g. gradients) as attn-weights-v1."""
    write_atomic(path, dumps(tensors, config, encoding))


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
        shape = t["shape"]
        if any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in shape):
            raise ValueError("%s: tensor %r: shape %r is not a list of integers >= 0"
                             % (path, name, shape))
        n = 1
        for d in shape:
            n *= d
        if ("data" in t) == ("data_b64" in t):
            raise ValueError('%s: tensor %r needs exactly one of "data" and "data_b64"'
                             % (path, name))
        if "data_b64" in t:
            try:
                raw = base64.b64decode(t["data_b64"], validate=True)
            except (binascii.Error, TypeError) as e:
                raise ValueError("%s: tensor %r: data_b64 is not base64: %s" % (path, name, e))
            if len(raw) != 4 * n:
                raise ValueError("%s: tensor %r has %d bytes of data_b64, shape %s needs %d"
                                 % (path, name, len(raw), shape, 4 * n))
            a = np.frombuffer(raw, dtype="<f4").astype(np.float32)
            if not np.isfinite(a).all():
                raise ValueError("%s: tensor %r holds NaN/Inf" % (path, name))
            tensors[strip_prefix(name)] = torch.from_numpy(a.copy()).reshape(shape)
            continue
        data = t["data"]
        if any(not isinstance(x, (int, float)) or isinstance(x, bool) for x in data):
            raise ValueError("%s: tensor %r has a non-number in its data" % (path, name))
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
    ap.add_argument("command", choices=["export", "check", "convert"],
                    help="export: fresh reference weights to PATH; check: load PATH strictly; "
                    "convert: PATH's tensors to OUT in --encoding")
    ap.add_argument("path", help="the attn-weights-v1 JSON file")
    ap.add_argument("out", nargs="?", help="output file of convert")
    ap.add_argument("--encoding", default="text", choices=ENCODINGS,
                    help='tensor data as "data" number arrays (text, default) or "data_b64"')
    ap.add_argument("--arch", default="lstm", choices=["rnn", "lstm", "gru", "transformer"],
                    help="model of export (default lstm)")
    ap.add_argument("--seed", type=int, default=1, help="torch.manual_seed of export (default 1)")
    args = ap.parse_args()
    if args.command == "export":
        torch.manual_seed(args.seed)
        config = {"arch": args.arch}
        export(attn_models.build(config), config, args.path, args.encoding)
        print("%s: wrote %s weights" % (args.path, args.arch))
        return 0
    if args.command == "convert":
        if not args.out:
            ap.error("convert needs PATH and OUT")
        try:
            config, tensors = read(args.path)
            export_tensors(list(tensors.items()), config, args.out, args.encoding)
        except (ValueError, KeyError, OSError) as e:
            print("weights_json.py convert: %s: %s" % (args.path, e), file=sys.stderr)
            return 1
        print("%s: wrote %d tensors (%s)" % (args.out, len(tensors), args.encoding))
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
