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
An optional "vocab": ["[PAD]", "[CLS]", "word", ...] is the model's own vocabulary (token i =
row i of embedding.weight; absent = attn's built-in course-review vocabulary); export_vocab,
read_with_vocab and convert keep it (check_vocab states attn's rules).

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

import blas_core  # noqa: E402,F401 -- before numpy and torch, which load OpenBLAS
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


VOCAB_MAX_TOKENS = 1 << 20  # include/attn.h ATTN_VOCAB_MAX_TOKENS
VOCAB_TOKEN_MAX = 64       # bytes per token, ATTN_VOCAB_TOKEN_MAX
_WHITE_SPACE = {0x20, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000} | set(
    range(0x2000, 0x200b))


def check_vocab(vocab, config):
    """Raises ValueError unless vocab (a list of str) is one attn loads for config: [PAD] at 0,
    [CLS] at 1 for the transformer, vocab_size tokens, each 1..64 bytes of UTF-8 without white
    space or control characters, no duplicates (the rules of include/attn.h)."""
    c = attn_models.full_config(config)
    if not isinstance(vocab, list) or not all(isinstance(w, str) for w in vocab):
        raise ValueError("vocab must be a list of strings")
    if len(vocab) != c["vocab_size"]:
        raise ValueError("vocab has %d tokens but vocab_size is %d" % (len(vocab), c["vocab_size"]))
    if not 2 <= len(vocab) <= VOCAB_MAX_TOKENS:
        raise ValueError("vocab has %d tokens; expected 2..%d" % (len(vocab), VOCAB_MAX_TOKENS))
    if vocab[0] != "[PAD]":
        raise ValueError("vocab[0] is %r, expected '[PAD]'" % (vocab[0],))
    if c["arch"] == "transformer" and vocab[1] != "[CLS]":
        raise ValueError("vocab[1] is %r, expected '[CLS]' (the transformer)" % (vocab[1],))
    seen = {}
    for i, w in enumerate(vocab):
        n = len(w.encode("utf-8", "surrogatepass"))
        if not 1 <= n <= VOCAB_TOKEN_MAX:
            raise ValueError("vocab[%d] %r is %d bytes long; expected 1..%d"
                             % (i, w, n, VOCAB_TOKEN_MAX))
        for ch in w:
            cp = ord(ch)
            if cp < 0x20 or 0x7f <= cp <= 0x9f or cp in _WHITE_SPACE or 0xd800 <= cp <= 0xdfff:
                raise ValueError("vocab[%d] %r holds U+%04X (control, white space or surrogate)"
                                 % (i, w, cp))
        if w in seen:
            raise ValueError("vocab[%d] %r duplicates vocab[%d]" % (i, w, seen[w]))
        seen[w] = i


def dumps(tensors, config, encoding="text", vocab=None):
    """tensors: iterable of (name, tensor) in order; vocab: None or the model's token list."""
    if encoding not in ENCODINGS:
        raise ValueError("unknown encoding %r (expected text or b64)" % (encoding,))
    parts = [tensor_text(name, t, encoding) for name, t in tensors]
    vocab_text = ""
    if vocab is not None:
        check_vocab(vocab, config)
        vocab_text = '"vocab":%s,\n' % json.dumps(vocab, ensure_ascii=False)
    return ('{"format":"%s",\n"config":%s,\n%s"tensors":{\n%s\n}}\n'
            % (FORMAT, json.dumps(attn_models.full_config(config)), vocab_text,
               ",\n".join(parts)))


def write_atomic(path, text):
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def export(model, config, path, encoding="text", vocab=None):
    """Writes model's state_dict (with config, and vocab when given) to path atomically."""
    sd = model.state_dict()
    items = [(strip_prefix(k), v) for k, v in sd.items()]
    write_atomic(path, dumps(items, config, encoding, vocab))


def export_vocab(model, config, vocab, path, encoding="text"):
    """export() of a model with its own vocabulary (checked with check_vocab)."""
    export(model, config, path, encoding, vocab)


def export_tensors(tensors, config, path, encoding="text", vocab=None):
    """Writes an ordered list of (name, tensor) (e.g. gradients) as attn-weights-v1."""
    write_atomic(path, dumps(tensors, config, encoding, vocab))


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
    config, tensors, _ = read_with_vocab(path)
    return config, tensors


def read_with_vocab(path):
    """-> (config dict, {name: float32 tensor}, vocab list or None)."""
    with open(path, encoding="utf-8") as f:
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
    vocab = doc.get("vocab")
    if vocab is not None:
        check_vocab(vocab, doc["config"])
    return doc["config"], tensors, vocab


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
            config, tensors, vocab = read_with_vocab(args.path)
            export_tensors(list(tensors.items()), config, args.out, args.encoding, vocab)
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
