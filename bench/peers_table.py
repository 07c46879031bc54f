#!/usr/bin/python3
"""peers_table.py -- the tables of one bench/peers.sh run, from the files it left in DIR.

DIR holds machine.txt, and per model M and engine E (attn, attn_native, attn_pinned, eager,
eager_stock, torchscript, ts_cpp, ort): M.E.txt (the engine's output: infer_speed's "M attn : ...
per pass of N: median S s, ..., CPU median C s" line, or a "peer name=... sentences=N ...
median_s=S cpu_median_s=C" line), M.E.rss (peak RSS in KiB, /usr/bin/time %M) and M.E.f32
(logits, float32, sentence order; attn's are M.attn.f32 for its default kernels, named by
machine.txt's kernels_predict / kernels_generate, and native/M.attn.f32, pinned/M.attn.f32).
Prints Markdown: machine lines, then one row per model and engine with µs per sentence (wall
median per pass / sentences), engine / attn default, the logits bit-identical to attn's on the
same kernels (SAME_KERNELS), and peak RSS.
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
ENGINES = [("attn", "attn default"), ("attn_native", "attn --kernels native"),
           ("attn_pinned", "attn --kernels pinned"), ("eager", "PyTorch eager"),
           ("eager_stock", "PyTorch eager, stock kernels"),
           ("torchscript", "TorchScript (Python, jit.trace)"),
           ("ts_cpp", "TorchScript (C++, libtorch)"),
           ("ort", "ONNX Runtime (node)")]
# whose logits a row's are compared with: PyTorch on attn's pinned kernels with attn pinned,
# stock PyTorch with attn native, the rest with attn's default
SAME_KERNELS = {"eager": "attn_pinned", "torchscript": "attn_pinned", "ts_cpp": "attn_pinned",
                "eager_stock": "attn_native"}
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


def path_of(d, tag, e, ext):
    """Where engine e's file ext of model tag is: attn's second and third runs in native/, pinned/."""
    if e in ("attn_native", "attn_pinned"):
        return os.path.join(d, e[len("attn_"):], "%s.attn.%s" % (tag, ext))
    return os.path.join(d, "%s.%s.%s" % (tag, e, ext))


def timing(path, engine):
    m = (ATTN_LINE if engine.startswith("attn") else PEER_LINE).search(read(path))
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


def ename_of(d, tag, e, ename, default):
    """The engine's label, with the kernel table PyTorch reported and attn's default kernels."""
    if e == "attn":
        return "%s (%s)" % (ename, default)
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


def engines(d, tag):
    """The engines that ran on model tag (TorchScript C++ only with libtorch-dev)."""
    return [(e, ename) for e, ename in ENGINES
            if e != "ts_cpp" or os.path.exists(os.path.join(d, "%s.ts_cpp.txt" % tag))]


def s2s_run(d, m, e, n):
    """One seq2seq engine's run: (tokens taken, wall s, CPU s, words per source, step logits)."""
    p = os.path.join(d, "%s.%s.txt" % (m, e))
    mt = S2S_LINE.search(read(p))
    if not mt:
        raise ValueError("%s: no timing line" % p)
    en, tok, wall, cpu = int(mt.group(1)), int(mt.group(2)), float(mt.group(3)), \
        float(mt.group(4))
    if n is not None and en != n:
        raise ValueError("%s.%s: %d sources, attn ran %d" % (m, e, en, n))
    words = tokens(path_of(d, m, e, "tok"), en)
    with open(path_of(d, m, e, "f32"), "rb") as f:
        f32 = f.read()
    return en, tok, wall, cpu, words, f32


def same_steps(mine, my_f32, theirs, their_f32, row, max_out, what):
    """Sources with the same words, and decoder steps (taken by both) with the same logits."""
    same_tok = same = 0
    pa = pb = 0
    for a, b in zip(mine, theirs):
        same_tok += a == b
        sa = len(a) + (len(a) < max_out)
        sb = len(b) + (len(b) < max_out)
        for k in range(min(sa, sb)):
            same += my_f32[pa + k * row:pa + (k + 1) * row] == \
                their_f32[pb + k * row:pb + (k + 1) * row]
        pa += sa * row
        pb += sb * row
    if pa != len(my_f32) or pb != len(their_f32):
        raise ValueError("%s: step counts do not match the words" % what)
    return same_tok, same


def seq2seq_table(d, max_out, default):
    print()
    print("| model | engine | tokens/s (wall) | engine / attn default (wall) | engine / attn default "
          "(CPU) | tokens identical to attn on the same kernels | step logits bit-identical to "
          "attn on the same kernels | peak RSS MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for m, name in SEQ2SEQ:
        if not os.path.exists(os.path.join(d, m + ".attn.txt")):
            continue
        n, a_tok, a_wall, a_cpu, _, my_f32 = s2s_run(d, m, "attn", None)
        vt = len(my_f32) // 4 // a_tok
        if vt * 4 * a_tok != len(my_f32):
            raise ValueError("%s.attn.f32: not %d steps of logits" % (m, a_tok))
        runs = {}
        for e, ename in engines(d, m):
            runs[e] = s2s_run(d, m, e, n)
            _, tok, wall, cpu, theirs, their_f32 = runs[e]
            if len(their_f32) != 4 * vt * tok:
                raise ValueError("%s.%s.f32: not %d steps of %d logits" % (m, e, tok, vt))
        for e, ename in engines(d, m):
            _, tok, wall, cpu, theirs, their_f32 = runs[e]
            ref = SAME_KERNELS.get(e, "attn")
            _, r_tok, _, _, mine, ref_f32 = runs[ref]
            same_tok, same = same_steps(mine, ref_f32, theirs, their_f32, 4 * vt, max_out,
                                        "%s.%s" % (m, e))
            print("| %s | %s | %.0f | %s | %s | %d/%d | %d/%d | %.0f |" % (
                name, ename_of(d, m, e, ename, default), tok / wall,
                "1" if e == "attn" else "%.2fx" % ((wall / tok) / (a_wall / a_tok)),
                "1" if e == "attn" else "%.2fx" % ((cpu / tok) / (a_cpu / a_tok)),
                same_tok, n, same, r_tok, rss_mb(d, m, e)))
    print()
    print("Step logits: attn decodes with its KV cache; PyTorch's and TorchScript's seq2seq-"
          "transformer loops recompute the prefix at every step (nn.Transformer has no cache), so "
          "their logits agree with attn's only up to rounding, the words the same (`attn generate "
          "--no-cache` is their loop bit for bit: docs/decoder.md); the recurrent decoders are "
          "incremental on both sides. ONNX Runtime runs its own kernels.")


def main():
    if len(sys.argv) != 2:
        print("usage: peers_table.py DIR", file=sys.stderr)
        return 2
    d = sys.argv[1]
    try:
        machine = dict(line.split(" ", 1) for line in read(os.path.join(d, "machine.txt"))
                       .splitlines() if " " in line)
        print("bench/peers.sh on %s (%s cores), %s, commit %s, load average %s at the start, %s "
              "at the end; PyTorch %s (on attn's pinned OpenBLAS kernels but for the stock rows), "
              "onnxruntime-node %s (node %s); attn's default kernels (those `attn predict` and "
              "`attn generate` run when nobody says): %s, %s; 1 thread everywhere, batch 1, each "
              "engine in its own process."
              % tuple(machine.get(k, "?") for k in ("cpu", "cores", "date", "commit", "load_start",
                                                    "load_end", "torch", "onnxruntime", "node",
                                                    "kernels_predict", "kernels_generate")))
        print()
        print("| model | engine | µs/sentence (wall) | engine / attn default (wall) | engine / attn "
              "default (CPU) | logits bit-identical to attn on the same kernels | peak RSS MB |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for m, name in MODELS:
            n, a_wall, a_cpu = timing(os.path.join(d, m + ".attn.txt"), "attn")
            ref = {e: logits(path_of(d, m, e, "f32"), n) for e in ("attn", "attn_native",
                                                                   "attn_pinned")}
            for e, ename in engines(d, m):
                en, wall, cpu = timing(os.path.join(d, "%s.%s.txt" % (m, e)), e)
                if en != n:
                    raise ValueError("%s.%s: %d sentences, attn ran %d" % (m, e, en, n))
                theirs = logits(path_of(d, m, e, "f32"), n)
                mine = ref[SAME_KERNELS.get(e, "attn")]
                same = sum(mine[4 * i:4 * i + 4] == theirs[4 * i:4 * i + 4] for i in range(n))
                rss = rss_mb(d, m, e)
                print("| %s | %s | %.1f | %s | %s | %d/%d | %.0f |" % (
                    name, ename_of(d, m, e, ename, machine.get("kernels_predict", "?")),
                    1e6 * wall / n, "1" if e == "attn" else "%.2fx" % (wall / a_wall),
                    "1" if e == "attn" else "%.2fx" % (cpu / a_cpu), same, n, rss))
        seq2seq_table(d, int(machine.get("s2s_max_out", "15")),
                      machine.get("kernels_generate", "?"))
    except (OSError, ValueError, IndexError, KeyError) as e:
        print("peers_table.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
