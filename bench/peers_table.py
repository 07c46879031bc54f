#!/usr/bin/python3
"""peers_table.py -- the tables of one bench/peers.sh run, from the files it left in DIR.

DIR holds machine.txt, and per model M and engine E (attn, eager, torchscript, ort): M.E.txt (the
engine's output: infer_speed's "M attn : ... per pass of N: median S s, ..., CPU median C s" line,
or a "peer name=... sentences=N ... median_s=S cpu_median_s=C" line), M.E.rss (peak RSS in KiB,
/usr/bin/time %M) and M.E.f32 (logits, float32, sentence order; attn's is M.attn.f32).
Prints Markdown: machine lines, then one row per model and engine with µs per sentence (wall
median per pass / sentences), engine / attn, the logits bit-identical to attn's, and peak RSS.
The seq2seq models S (s2s-transformer, s2s-attn, s2s-gru; engines as above, plus ts_cpp when
the TorchScript C++ program ran) leave S.E.txt ("peer name=... sources=N tokens=K ..."), S.E.rss,
S.E.tok (output words per source) and S.E.f32 (every step's logits, source by source); their
table gives tokens per second, the sources whose words equal attn's and the decoder steps whose
logits are bit-identical to attn's (a step compared when both engines took it).
Exit status: 0 ok, 1 a file missing or unparsable (named), 2 usage.
"""
import array
import os
import re
import sys

MODELS = [("rnn", "RNN"), ("gru", "GRU"), ("lstm", "LSTM"), ("transformer", "Transformer")]
ENGINES = [("attn", "attn (default kernels)"), ("eager", "PyTorch eager"),
           ("eager_stock", "PyTorch eager, stock kernels"),
           ("torchscript", "TorchScript (Python, jit.trace)"),
           ("ts_cpp", "TorchScript (C++, libtorch)"),
           ("ort", "ONNX Runtime (node)")]
SEQ2SEQ = [("s2s-transformer", "seq2seq-transformer"), ("s2s-attn", "seq2seq-attn"),
           ("s2s-gru", "seq2seq-gru")]
S2S_LINE = re.compile(r"^peer name=\S+ sources=(\d+) tokens=(\d+) reps=\d+ median_s=([0-9.]+) "
                      r"cpu_median_s=([0-9.]+)", re.M)
CORE = re.compile(r" core=(\S+)")
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


def ename_of(d, tag, e, ename):
    """The engine's label, with the kernel table PyTorch reported."""
    m = CORE.search(read(os.path.join(d, "%s.%s.txt" % (tag, e))))
    return "%s (OpenBLAS %s)" % (ename, m.group(1)) if m and e.startswith("eager") else ename


def rss_mb(d, tag, e):
    return int(read(os.path.join(d, "%s.%s.rss" % (tag, e))).split()[-1]) / 1024


def tokens(path, n):
    with open(path) as f:
        rows = [line.split() for line in f]
    if len(rows) != n:
        raise ValueError("%s: %d sources, expected %d" % (path, len(rows), n))
    return rows


def seq2seq_table(d, max_out):
    print()
    print("| model | engine | tokens/s (wall) | engine / attn (wall) | engine / attn (CPU) "
          "| tokens identical to attn | step logits bit-identical to attn | peak RSS MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for m, name in SEQ2SEQ:
        if not os.path.exists(os.path.join(d, m + ".attn.txt")):
            continue
        m0 = S2S_LINE.search(read(os.path.join(d, m + ".attn.txt")))
        if not m0:
            raise ValueError("%s.attn.txt: no timing line" % m)
        n, a_tok, a_wall, a_cpu = int(m0.group(1)), int(m0.group(2)), float(m0.group(3)), \
            float(m0.group(4))
        mine = tokens(os.path.join(d, m + ".attn.tok"), n)
        with open(os.path.join(d, m + ".attn.f32"), "rb") as f:
            my_f32 = f.read()
        vt = len(my_f32) // 4 // a_tok
        if vt * 4 * a_tok != len(my_f32):
            raise ValueError("%s.attn.f32: not %d steps of logits" % (m, a_tok))
        for e, ename in ENGINES:
            p = os.path.join(d, "%s.%s.txt" % (m, e))
            if e == "ts_cpp" and not os.path.exists(p):
                continue
            mt = S2S_LINE.search(read(p))
            if not mt:
                raise ValueError("%s: no timing line" % p)
            en, tok, wall, cpu = int(mt.group(1)), int(mt.group(2)), float(mt.group(3)), \
                float(mt.group(4))
            if en != n:
                raise ValueError("%s.%s: %d sources, attn ran %d" % (m, e, en, n))
            theirs = tokens(os.path.join(d, "%s.%s.tok" % (m, e)), n)
            with open(os.path.join(d, "%s.%s.f32" % (m, e)), "rb") as f:
                their_f32 = f.read()
            if len(their_f32) != 4 * vt * tok:
                raise ValueError("%s.%s.f32: not %d steps of %d logits" % (m, e, tok, vt))
            same_tok = same_steps = 0
            pa = pb = 0
            row = 4 * vt
            for a, b in zip(mine, theirs):
                same_tok += a == b
                sa = len(a) + (len(a) < max_out)
                sb = len(b) + (len(b) < max_out)
                for k in range(min(sa, sb)):
                    same_steps += my_f32[pa + k * row:pa + (k + 1) * row] == \
                        their_f32[pb + k * row:pb + (k + 1) * row]
                pa += sa * row
                pb += sb * row
            if pa != len(my_f32) or pb != len(their_f32):
                raise ValueError("%s.%s: step counts do not match the words" % (m, e))
            print("| %s | %s | %.0f | %s | %s | %d/%d | %d/%d | %.0f |" % (
                name, ename_of(d, m, e, ename), tok / wall,
                "1" if e == "attn" else "%.2fx" % ((wall / tok) / (a_wall / a_tok)),
                "1" if e == "attn" else "%.2fx" % ((cpu / tok) / (a_cpu / a_tok)),
                same_tok, n, same_steps, a_tok, rss_mb(d, m, e)))


def main():
    if len(sys.argv) != 2:
        print("usage: peers_table.py DIR", file=sys.stderr)
        return 2
    d = sys.argv[1]
    try:
        machine = dict(line.split(" ", 1) for line in read(os.path.join(d, "machine.txt"))
                       .splitlines() if " " in line)
        print("bench/peers.sh on %s (%s cores), %s, commit %s, load average %s at the start, %s "
              "at the end; PyTorch %s (on attn's pinned OpenBLAS kernels but for the stock rows), onnxruntime-node %s (node %s); "
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
                if e == "ts_cpp" and not os.path.exists(os.path.join(d, m + ".ts_cpp.txt")):
                    continue
                en, wall, cpu = timing(os.path.join(d, "%s.%s.txt" % (m, e)), e)
                if en != n:
                    raise ValueError("%s.%s: %d sentences, attn ran %d" % (m, e, en, n))
                theirs = logits(os.path.join(d, "%s.%s.f32" % (m, e)), n)
                same = sum(mine[4 * i:4 * i + 4] == theirs[4 * i:4 * i + 4] for i in range(n))
                rss = rss_mb(d, m, e)
                print("| %s | %s | %.1f | %s | %s | %d/%d | %.0f |" % (
                    name, ename_of(d, m, e, ename), 1e6 * wall / n, "1" if e == "attn" else "%.2fx" % (wall / a_wall),
                    "1" if e == "attn" else "%.2fx" % (cpu / a_cpu), same, n, rss))
        seq2seq_table(d, int(machine.get("s2s_max_out", "15")))
    except (OSError, ValueError, IndexError) as e:
        print("peers_table.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
