#!/usr/bin/python3
"""summarize_checks.py SOURCE_DIR -- bench/summarize.py's target lines judge what they say: on a
bench/peers.sh table (bench/peers_table.py's format) where attn's default is within 5 % of
--kernels native and ahead of ONNX Runtime and TorchScript C++ everywhere both "Check:" lines
say PASS; a default 6 % slower than native on one row, or ONNX Runtime ahead on one row, turns
the line concerned (and only it) into MISS naming the row; without the peers both say MISS (not
measured). Exit 1 naming the first wrong line."""
import os
import subprocess
import sys
import tempfile

HEAD = ("bench/peers.sh on X (2 cores), date, commit c, load average 0 at the start, 0 at the "
        "end; PyTorch 1.13 (...), onnxruntime-node 1.30.0 (node v20); attn's default kernels "
        "(those `attn predict` and `attn generate` run when nobody says): native, native; 1 "
        "thread everywhere, batch 1, each engine in its own process.\n\n")


def table(default_over_native, ort_over_default):
    """peers_table.py-style rows: 'engine / attn default' ratios as given for the LSTM and
    seq2seq-attn rows, comfortable ones elsewhere."""
    rows = []
    for model in ("RNN", "GRU", "LSTM", "Transformer", "seq2seq-transformer", "seq2seq-attn",
                  "seq2seq-gru"):
        dn = default_over_native if model in ("LSTM", "seq2seq-attn") else 1.0
        od = ort_over_default if model == "seq2seq-attn" else 2.0
        s2s = model.startswith("seq2seq")
        base = 10000.0 if s2s else 10.0

        def row(label, ratio):  # ratio: engine's time / attn default's
            value = base / ratio if s2s else base * ratio
            return "| %s | %s | %.1f | %s | %s | 100/100 | 8 |" % (
                model, label, value, "1" if ratio == 1 else "%.2fx" % ratio,
                "1" if ratio == 1 else "%.2fx" % ratio)
        rows += [row("attn default (native)", 1), row("attn --kernels native", 1 / dn),
                 row("attn --kernels pinned", 1.5),
                 row("PyTorch eager (OpenBLAS Haswell)", 20.0),
                 row("TorchScript (C++, libtorch)", 3.0), row("ONNX Runtime (node)", od)]
    return HEAD + "\n".join(rows) + "\n"


def checks(src, peers_txt):
    with tempfile.TemporaryDirectory() as d:
        raw, out = os.path.join(d, "raw"), os.path.join(d, "out")
        os.mkdir(raw)
        os.mkdir(out)
        with open(os.path.join(raw, "machine.txt"), "w") as f:
            f.write("cpu test\n")
        for name, text in (("peers", peers_txt), ("kernels", "ceiling: pinned 100.0, native "
                                                  "150.0 GFLOP/s\n")):
            for ext, body in ((".txt", text), (".cmd", "cmd\n"), (".secs", "1\n")):
                with open(os.path.join(raw, name + ext), "w") as f:
                    f.write(body)
        r = subprocess.run(["/usr/bin/python3", os.path.join(src, "bench/summarize.py"), raw, out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("summarize.py failed (%d): %s" % (r.returncode, r.stderr))
        with open(os.path.join(out, "readme-table.md")) as f:
            table_lines = [line for line in f.read().splitlines() if line.startswith("Check:")]
        if table_lines != r.stdout.splitlines():
            raise SystemExit("stdout's check lines are not readme-table.md's:\n%s\n%s"
                             % (r.stdout, table_lines))
        if len(table_lines) != 2:
            raise SystemExit("expected 2 check lines, got %r" % table_lines)
        return table_lines


def expect(line, verdict, words, what):
    ok = (": %s" % verdict) in line and all(w in line for w in words)
    print("%s %s: %s" % ("ok  " if ok else "FAIL", what, line))
    return ok


def main():
    src = sys.argv[1]
    ok = True
    native, peers = checks(src, table(1.04, 2.0))
    ok &= expect(native, "PASS", ["1.04x"], "default 4 % slower than native")
    ok &= expect(peers, "PASS", [], "every peer slower")
    native, peers = checks(src, table(1.06, 2.0))
    ok &= expect(native, "MISS", ["LSTM 1.06x", "seq2seq-attn 1.06x"], "default 6 % slower")
    ok &= expect(peers, "PASS", [], "every peer slower (default 6 % slower than native)")
    native, peers = checks(src, table(1.0, 0.8))
    ok &= expect(native, "PASS", [], "default as fast as native")
    ok &= expect(peers, "MISS", ["seq2seq-attn (ONNX Runtime (node) 0.80x"], "ORT ahead")
    native, peers = checks(src, "peers: skipped: not installed: nodejs\n")
    ok &= expect(native, "MISS", ["not measured"], "no peers")
    ok &= expect(peers, "MISS", ["not measured"], "no peers")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
