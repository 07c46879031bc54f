#!/usr/bin/python3
"""peers_table.py -- the table of one bench/peers.sh run, from the files it left in DIR.

DIR holds machine.txt, and per model M and engine E (attn, eager, torchscript, ort): M.E.txt (the
engine's output: infer_speed's "M attn : ... per pass of N: median S s, ..., CPU median C s" line,
or a "peer name=... sentences=N ... median_s=S cpu_median_s=C" line), M.E.rss (peak RSS in KiB,
/usr/bin/time %M) and M.E.f32 (logits, float32, sentence order; attn's is M.attn.f32).
Prints Markdown: machine lines, then one row per model and engine with µs per sentence (wall
median per pass / sentences), engine / attn, the logits bit-identical to attn's, and peak RSS.
Exit status: 0 ok, 1 a file missing or unparsable (named), 2 usage.
"""
import array
import os
import re
import sys

MODELS = [("rnn", "RNN"), ("gru", "GRU"), ("lstm", "LSTM"), ("transformer", "Transformer")]
ENGINES = [("attn", "attn (default kernels)"), ("eager", "PyTorch eager"),
           ("torchscript", "TorchScript (Python, jit.trace)"),
           ("ort", "ONNX Runtime (node)")]
ATTN_LINE = re.compile(r"attn :\s+\S+ sentences/s\s+\(per pass of (\d+): median ([0-9.]+) s, "
                       r"min [0-9.]+ s, CPU median ([0-9.]+) s\)")
PEER_LINE = re.compile(r"^peer name=\S+ sentences=(\d+) reps=\d+ median_s=([0-9.]+) "
                       r"cpu_median_s=([0-9.]+)", re.M)


def read(path):
    with open(path) as f:
        return f.read()


def timing(path, engine):
    m = (ATTN_LINE if engine == "attn" else PEER_LINE).search(read(path))
    if not m:
        raise ValueError("%s: no timing line" % path)
    return int(m.group(1)), float(m.group(2)), float(m.group(3))


def logits(path, n):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if len(a) != n:
        raise ValueError("%s: %d logits, expected %d" % (path, len(a), n))
    return a.tobytes()


def main():
    if len(sys.argv) != 2:
        print("usage: peers_table.py DIR", file=sys.stderr)
        return 2
    d = sys.argv[1]
    try:
        machine = dict(line.split(" ", 1) for line in read(os.path.join(d, "machine.txt"))
                       .splitlines() if " " in line)
        print("bench/peers.sh on %s (%s cores), %s, commit %s, load average %s at the start, %s "
              "at the end; PyTorch %s on attn's OpenBLAS kernels, onnxruntime-node %s (node %s); "
              "1 thread everywhere, batch 1, each engine in its own process."
              % tuple(machine.get(k, "?") for k in ("cpu", "cores", "date", "commit", "load_start",
                                                    "load_end", "torch", "onnxruntime", "node")))
        print()
        print("| model | engine | µs/sentence (wall) | engine / attn (wall) | engine / attn (CPU)"
              " | logits bit-identical to attn | peak RSS MB |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for m, name in MODELS:
            n, a_wall, a_cpu = timing(os.path.join(d, m + ".attn.txt"), "attn")
            mine = logits(os.path.join(d, m + ".attn.f32"), n)
            for e, ename in ENGINES:
                en, wall, cpu = timing(os.path.join(d, "%s.%s.txt" % (m, e)), e)
                if en != n:
                    raise ValueError("%s.%s: %d sentences, attn ran %d" % (m, e, en, n))
                theirs = logits(os.path.join(d, "%s.%s.f32" % (m, e)), n)
                same = sum(mine[4 * i:4 * i + 4] == theirs[4 * i:4 * i + 4] for i in range(n))
                rss = int(read(os.path.join(d, "%s.%s.rss" % (m, e))).split()[-1]) / 1024
                print("| %s | %s | %.1f | %s | %s | %d/%d | %.0f |" % (
                    name, ename, 1e6 * wall / n, "1" if e == "attn" else "%.2fx" % (wall / a_wall),
                    "1" if e == "attn" else "%.2fx" % (cpu / a_cpu), same, n, rss))
    except (OSError, ValueError, IndexError) as e:
        print("peers_table.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
