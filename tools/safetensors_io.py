#!/usr/bin/python3
"""safetensors_io.py -- safetensors files with what Debian ships (struct, json, numpy; torch
tensors accepted): Debian 12 has no `safetensors` package.

Format: an unsigned 64-bit little-endian header length N, N bytes of UTF-8 JSON
{"__metadata__": {str: str}, "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}},
then the raw little-endian tensor data; offsets count from the first byte after the header and
the tensors are contiguous, without gaps, the last ending at the end of the file.

attn's files carry in "__metadata__": "format" ("attn-weights-v1" for a classifier,
"attn-seq2seq-weights-v1" for a seq2seq model), "config" (the config object as JSON text, as in
the JSON weights), "vocab" (a classifier's own vocabulary as a JSON array, when it has one).

    import safetensors_io
    safetensors_io.save_state_dict(model.state_dict(), "w.safetensors", config)  # attn reads it
    tensors, metadata = safetensors_io.load("w.safetensors")   # {name: np.float32 array}

    safetensors_io.py show PATH        the header: each tensor's dtype, shape and offsets
"""
import json
import os
import struct
import sys

import numpy as np

CLASSIFIER_FORMAT = "attn-weights-v1"
SEQ2SEQ_FORMAT = "attn-seq2seq-weights-v1"
MAX_HEADER = 100 * 1000 * 1000


def _as_f32(t):
    if hasattr(t, "detach"):  # a torch tensor
        t = t.detach().cpu().contiguous().numpy()
    a = np.asarray(t)
    if a.dtype != np.float32:
        raise ValueError("dtype %s: only float32 is written (attn reads F32 only)" % a.dtype)
    return np.ascontiguousarray(a, dtype="<f4")


def dumps(tensors, metadata=None):
    """tensors: iterable of (name, array) in order -> the file's bytes."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, at = [], 0
    for name, t in tensors:
        a = _as_f32(t)
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)  # the data starts at a multiple of 8, as the reference
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def save(path, tensors, metadata=None):
    """Writes dumps(tensors, metadata) to path atomically (temporary file, fsync, rename)."""
    data = dumps(tensors, metadata)
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def save_state_dict(state_dict, path, config, fmt=CLASSIFIER_FORMAT, vocab=None):
    """A model's state_dict (torch tensors or arrays) with attn's metadata, for attn to load."""
    metadata = {"format": fmt, "config": json.dumps(config)}
    if vocab is not None:
        metadata["vocab"] = json.dumps(vocab, ensure_ascii=False)
    save(path, list(state_dict.items()), metadata)


def load(path):
    """-> ({name: float32 array}, metadata dict), checking the layout strictly."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: %d bytes, too short" % (path, len(raw)))
    (n,) = struct.unpack("<Q", raw[:8])
    if n > MAX_HEADER or 8 + n > len(raw):
        raise ValueError("%s: header length %d out of range" % (path, n))

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError("%s: duplicate key in the header" % path)
        return dict(pairs)

    header = json.loads(raw[8:8 + n].decode("utf-8"), object_pairs_hook=no_duplicates)
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors, ends = {}, []
    for name, e in header.items():
        if e["dtype"] != "F32":
            raise ValueError("%s: tensor %r: dtype %s, only F32 is read" % (path, name, e["dtype"]))
        b, end = e["data_offsets"]
        numel = int(np.prod(e["shape"], dtype=np.int64))
        if end - b != 4 * numel:
            raise ValueError("%s: tensor %r: %d bytes for shape %s" % (path, name, end - b, e["shape"]))
        ends.append((b, end, name))
        tensors[name] = np.frombuffer(data, dtype="<f4", count=numel, offset=b).reshape(e["shape"])
    at = 0
    for b, end, name in sorted(ends):
        if b != at:
            raise ValueError("%s: tensor %r begins at %d, expected %d (gap or overlap)"
                             % (path, name, b, at))
        at = end
    if at != len(data):
        raise ValueError("%s: the tensors end at %d of %d data bytes" % (path, at, len(data)))
    return tensors, metadata


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "show":
        sys.exit(__doc__)
    tensors, metadata = load(sys.argv[2])
    for k, v in metadata.items():
        print("metadata %s: %s" % (k, v if len(v) < 200 else v[:200] + "..."))
    for name, a in tensors.items():
        print("%-40s F32 %s" % (name, list(a.shape)))


if __name__ == "__main__":
    main()
