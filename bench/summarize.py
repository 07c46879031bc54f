#!/usr/bin/python3
"""summarize.py -- the summary of one bench/all.sh run: bench/results/summary.md and the README's
performance table (readme-table.md), both taken from the outputs of that run, never typed.

Usage: /usr/bin/python3 bench/summarize.py RAW_DIR OUT_DIR
RAW_DIR holds what bench/all.sh captured: machine.txt (key value lines), and for each benchmark
NAME.txt (its output), NAME.cmd (its command line), NAME.secs (its wall time); OUT_DIR holds
flops.csv (written by bench/flops --out OUT_DIR in the same run). A figure a benchmark did not
print is shown as "-", so a partial run still gives a table; the parse of each output is by the
line formats of bench/*.c, tools/bench_seq2seq.py and bench/peers_table.py (change them
together). The batch-1 table against the peers ends in one "Check: ... PASS|MISS" line per
target (attn's default within 5 % of --kernels native on every row; ahead of ONNX Runtime and
TorchScript C++ on every row; both by wall time), which are also printed to stdout.
Exit status: 0 ok, 1 a file missing or unreadable, 2 usage.
"""
import csv
import os
import re
import sys

ORDER = ["train_speed", "infer_speed", "flops", "seq2seq", "threads", "kernels", "serve", "peers", "base"]
TITLES = {
    "train_speed": "Training, four classifiers, against PyTorch (batch 32, 1 thread)",
    "infer_speed": "Batched eval, four classifiers, against PyTorch (batch 256, 1 thread)",
    "flops": "ViT-Base layer: cost table, sgemm ceiling, against PyTorch (1 and 2 threads)",
    "seq2seq": "seq2seq-transformer: training and batch-1 generation against PyTorch",
    "threads": "One run on 1 and 2 threads (bytes checked identical)",
    "kernels": "Pinned against native OpenBLAS kernels",
    "serve": "attn serve under load (its own clients and wrk)",
    "peers": "Batch 1 against PyTorch eager, TorchScript and ONNX Runtime (bench/peers.sh)",
    "base": "Section 6's base seq2seq-transformer: load, memory, write, JSON (bench/base.py)",
}
MODELS = ["rnn", "gru", "lstm", "transformer"]
NAMES = {"rnn": "RNN", "gru": "GRU", "lstm": "LSTM", "transformer": "Transformer"}


def read(path):
    with open(path) as f:
        return f.read()


def num(s):
    return float(s.replace(",", ""))


def fmt(v, spec, suffix=""):
    return "-" if v is None else format(v, spec) + suffix


def parse_train(text):
    """-> ceiling GFLOP/s, {model: (attn sent/s, GFLOP/s, of ceiling %)}, {model: (torch, ratio)}"""
    m = re.search(r"^sgemm 2048\^3, 1 thread: ([0-9.]+) GFLOP/s", text, re.M)
    ceiling = num(m.group(1)) if m else None
    attn, torch = {}, {}
    for m in re.finditer(r"^(\w+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)%$", text, re.M):
        attn[m.group(1)] = (num(m.group(2)), num(m.group(4)), num(m.group(5)))
    for m in re.finditer(r"^(\w+)\s+(\d+)\s+(\d+)\s+([0-9.]+)x$", text, re.M):
        torch[m.group(1)] = (num(m.group(3)), num(m.group(4)))
    return ceiling, attn, torch


def parse_infer(text):
    """-> {model: dict(attn, torch sentences/s by CPU time, ratio, gflops by CPU time)}"""
    out = {}
    for m in re.finditer(r"^(\w+)\s+(attn|torch)\s*:\s+\d+ sentences/s\s+\(per pass of (\d+): "
                         r"median [0-9.]+ s, min [0-9.]+ s, CPU median ([0-9.]+) s\)", text, re.M):
        d = out.setdefault(m.group(1), {})
        d[m.group(2) + "_cpu"] = num(m.group(4))
        d["n"] = int(m.group(3))
    for m in re.finditer(r"^(\w+)\s+attn : ([0-9.]+) M multiply-adds per pass", text, re.M):
        out.setdefault(m.group(1), {})["madds"] = num(m.group(2)) * 1e6
    for m in re.finditer(r"^(\w+)\s+attn / PyTorch: ([0-9.]+)x by CPU time", text, re.M):
        out.setdefault(m.group(1), {})["ratio"] = num(m.group(2))
    for d in out.values():
        if "attn_cpu" in d and "madds" in d and d["attn_cpu"] > 0:
            d["gflops"] = 2 * d["madds"] / d["attn_cpu"] / 1e9
    return out


def parse_flops(path):
    """-> ceilings {threads: GFLOP/s}, layers {n: of ceiling at 1 thread}, torch {(n, thr): row}"""
    ceil, layer, torch = {}, {}, {}
    if not os.path.exists(path):
        return ceil, layer, torch
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["section"] == "ceiling" and r["path"] == "sgemm":
                ceil[int(r["threads"])] = num(r["gflops"])
            elif r["section"] == "layer" and r["row"] == "**layer total**":
                layer[int(r["n"])] = num(r["ceiling_frac"])
            elif r["section"] == "torch":
                # time_ms = attn ms, time_share = PyTorch ms, gflops = ratio, ceiling_frac = memory
                torch[(int(r["n"]), int(r["threads"]))] = (num(r["time_ms"]), num(r["time_share"]),
                                                           num(r["gflops"]), num(r["ceiling_frac"]))
    return ceil, layer, torch


def parse_seq2seq(text):
    """bench/seq2seq's lines -> train (attn, torch tokens/s by CPU, ratio), gen (cached,
    recomputing, torch tokens/s by CPU, cached ratio, recomputing ratio), train_frac (%)"""
    d = {}
    cpu = {}
    for m in re.finditer(r"^(training attn|training torch|generation attn cached|generation attn "
                         r"recompute|generation torch loop)\s*:\s+([0-9.]+) (?:target )?tokens/s "
                         r"by CPU time", text, re.M):
        cpu[m.group(1)] = num(m.group(2))
    ratio = {}
    for m in re.finditer(r"^(training attn|generation attn cached|generation attn recomputing) / "
                         r"PyTorch(?: loop)?: ([0-9.]+)x by CPU time", text, re.M):
        ratio[m.group(1)] = num(m.group(2))
    if "training attn" in cpu:
        d["train"] = (cpu["training attn"], cpu.get("training torch"), ratio.get("training attn"))
    if "generation attn cached" in cpu:
        d["gen"] = (cpu["generation attn cached"], cpu.get("generation attn recompute"),
                    cpu.get("generation torch loop"), ratio.get("generation attn cached"),
                    ratio.get("generation attn recomputing"))
    m = re.search(r"GFLOP/s, ([0-9.]+)% of the sgemm ceiling", text)
    if m:
        d["train_frac"] = num(m.group(1))
    m = re.search(r"^sgemm 2048\^3, 1 thread: ([0-9.]+) GFLOP/s by CPU time", text, re.M)
    if m:
        d["cpu_ceiling"] = num(m.group(1))
    return d


def parse_threads(text):
    rows = []
    for m in re.finditer(r"^(\S.*?)\s{2,}([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)x\s+"
                         r"(?:(>= [0-9.]+x) (PASS|MISS)|-)\s+(\w+)$", text, re.M):
        rows.append((m.group(1), num(m.group(2)), num(m.group(3)), num(m.group(4)),
                     m.group(5), m.group(6), m.group(7)))
    return rows


def parse_kernels(text):
    out = {}
    for m in re.finditer(r"^(\w+)\s+(train|infer)\s+(\d+)\s+(\d+)\s+([0-9.]+)x$", text, re.M):
        out[(m.group(1), m.group(2))] = num(m.group(5))
    return out


def parse_serve(text):
    d = {}
    m = re.search(r"^attn\s+\d+ requests in [0-9.]+ s: ([0-9.]+) req/s, p50 ([0-9.]+) ms, p99 "
                  r"([0-9.]+) ms", text, re.M)
    if m:
        d["attn"] = tuple(num(x) for x in m.groups())
    m = re.search(r"^wrk\s+Requests/sec:\s+([0-9.]+)", text, re.M)
    if m:
        d["wrk"] = num(m.group(1))
    m = re.search(r"^wrk\s+99%\s+([0-9.]+)ms", text, re.M)
    if m:
        d["wrk_p99"] = num(m.group(1))
    m = re.search(r"^decoder\s+\d+ requests in [0-9.]+ s: ([0-9.]+) req/s, p50 ([0-9.]+) ms, p99 "
                  r"([0-9.]+) ms", text, re.M)
    if m:
        d["decoder"] = tuple(num(x) for x in m.groups())
    return d


PEER_ROWS = [("rnn", "RNN"), ("gru", "GRU"), ("lstm", "LSTM"), ("transformer", "Transformer"),
             ("s2s-transformer", "seq2seq-transformer"), ("s2s-attn", "seq2seq-attn"),
             ("s2s-gru", "seq2seq-gru")]
# bench/peers_table.py's engine labels (up to the kernels it adds in parentheses) -> short names
PEER_ENGINES = [("attn default", "default"), ("attn --kernels native", "native"),
                ("attn --kernels pinned", "pinned"), ("PyTorch eager, stock kernels", "stock"),
                ("PyTorch eager", "eager"), ("TorchScript (Python", "ts_py"),
                ("TorchScript (C++", "ts_cpp"), ("ONNX Runtime", "ort")]
PEER_COLUMNS = [("ort", "ONNX Runtime (node)"), ("ts_cpp", "TorchScript C++"),
                ("eager", "PyTorch eager")]
WITHIN = 1.05  # attn's default at most 5 % slower than --kernels native


def parse_peers(text):
    """bench/peers_table.py's Markdown -> {model label: {engine: (value, wall ratio, CPU ratio)}},
    the value µs/sentence (classifiers) or tokens/s (seq2seq), the ratios engine / attn default
    by time (> 1: slower than attn's default); and the line naming attn's default kernels."""
    rows = {}
    for m in re.finditer(r"^\| ([\w-]+) \| ([^|]+?) \| ([0-9.]+) \| ([0-9.]+)x? \| ([0-9.]+)x? \|",
                         text, re.M):
        label = m.group(2)
        eng = next((e for prefix, e in PEER_ENGINES if label.startswith(prefix)), None)
        if eng:
            rows.setdefault(m.group(1), {})[eng] = (num(m.group(3)), num(m.group(4)),
                                                    num(m.group(5)))
    k = re.search(r"`attn generate` run when nobody says\): (\w+), (\w+);", text)
    return rows, (k.group(1), k.group(2)) if k else ("?", "?")


def peers_section(txt, ker_text):
    """The batch-1 table against the peers and a check line per target, as Markdown lines."""
    rows, (k_pred, k_gen) = parse_peers(txt)
    L = []
    if not rows:
        why = txt.strip().splitlines()[0] if txt.strip() else "bench/peers.sh did not run"
        L.append("Batch 1 against ONNX Runtime, TorchScript and PyTorch: not measured (%s)." % why)
        L.append("")
        L.append("Check: attn's default within 5 % of `--kernels native` on every row: MISS "
                 "(not measured).")
        L.append("Check: attn's default ahead of ONNX Runtime and TorchScript C++ on every row: "
                 "MISS (not measured).")
        return L
    m = re.search(r"ceiling: pinned ([0-9.]+), native ([0-9.]+) GFLOP/s", ker_text)
    L.append("Batch 1, 1 thread, each engine in its own process (`bash bench/peers.sh`, in the "
             "same run; every engine and the bit-identical shares: bench/results/summary.md). "
             "attn default: the kernels `attn predict` and `attn generate` run when nobody says "
             "(%s, %s; docs/numerics.md, \"Which kernels a command runs on\"), `--kernels "
             "native` and `pinned` (reproduce's) the same program again on those kernels; "
             "PyTorch and TorchScript on attn's pinned OpenBLAS kernels. default / native is "
             "the default's CPU time over native's (> 1: slower; the same program on one thread, "
             "so CPU time, which other jobs disturb least, judges it)." % (k_pred, k_gen))
    L.append("")
    L.append("| batch 1, 1 thread (wall time) | attn default | attn `--kernels native` | "
             "default / native (CPU time) "
             "| attn `--kernels pinned` | " + " | ".join(n for _, n in PEER_COLUMNS) + " |")
    L.append("|---|---:|---:|---:|---:|" + "---:|" * len(PEER_COLUMNS))
    if m:
        L.append("| sgemm 2048^3, GFLOP/s (bench/kernels) | | %s | | %s |%s" % (
            m.group(2), m.group(1), " |" * len(PEER_COLUMNS)))
    near, behind, worst_native = [], [], None
    for tag, name in PEER_ROWS:
        r = rows.get(name if tag.startswith("s2s") else NAMES[tag])
        if not r or "default" not in r:
            near.append("%s not measured" % name)
            behind.append("%s not measured" % name)
            continue
        s2s = tag.startswith("s2s")
        unit = "tokens/s" if s2s else "µs/sentence"

        def cell(e):
            if e not in r:
                return "-"
            return format(r[e][0], ",.0f") if s2s else format(r[e][0], ".1f")
        nat = r.get("native")
        # default's time over native's: the ratio engine / default inverted
        dn = (1 / nat[1], 1 / nat[2]) if nat and nat[1] and nat[2] else None
        if dn and (worst_native is None or dn[1] > worst_native[1][1]):
            worst_native = (name, dn)
        if dn is None or dn[1] > WITHIN:
            near.append("%s %s" % (name, fmt(dn and dn[1], ".2f", "x")))
        for e, ename in PEER_COLUMNS[:2]:
            if e not in r or r[e][1] <= 1.0 or r[e][2] <= 1.0:
                behind.append("%s (%s %s attn's wall time, %s its CPU time)" % (
                    name, ename, fmt(r.get(e) and r[e][1], ".2f", "x"),
                    fmt(r.get(e) and r[e][2], ".2f", "x")))
        L.append("| %s, %s | %s | %s | %s | %s | %s |" % (
            name, unit, cell("default"), cell("native"), fmt(dn and dn[1], ".2f", "x"),
            cell("pinned"), " | ".join(cell(e) for e, _ in PEER_COLUMNS)))
    closest = min(((min(r[e][1], r[e][2]), name, ename) for tag, name in PEER_ROWS
                   for r in [rows.get(name if tag.startswith("s2s") else NAMES[tag], {})]
                   for e, ename in PEER_COLUMNS[:2] if e in r), default=None)
    L.append("")
    L.append("Check: attn's default within 5 %% of `--kernels native` on every row (CPU time): "
             "%s%s." % ("PASS" if not near and worst_native else "MISS",
                        " (worst: %s, %.2fx; by wall time %.2fx)" % (
                            worst_native[0], worst_native[1][1], worst_native[1][0])
                        if worst_native else "" if not near else "")
             + (" Outside: %s." % ", ".join(near) if near else ""))
    L.append("Check: attn's default ahead of ONNX Runtime and TorchScript C++ on every row (wall "
             "and CPU time): %s%s." % ("PASS" if not behind and closest else "MISS",
                                       " (closest: %s, %s at %.2fx attn's time)" % (
                                   closest[1], closest[2], closest[0]) if closest else "")
             + (" Behind or not measured: %s." % "; ".join(behind) if behind else ""))
    return L


def tables(raw, out, machine):
    """The performance tables, as Markdown lines."""
    txt = {k: read(os.path.join(raw, k + ".txt")) if os.path.exists(os.path.join(raw, k + ".txt"))
           else "" for k in ORDER}
    ceiling, tr_attn, tr_torch = parse_train(txt["train_speed"])
    inf = parse_infer(txt["infer_speed"])
    fl_ceil, fl_layer, fl_torch = parse_flops(os.path.join(out, "flops.csv"))
    s2s = parse_seq2seq(txt["seq2seq"])
    thr = parse_threads(txt["threads"])
    ker = parse_kernels(txt["kernels"])
    srv = parse_serve(txt["serve"])
    L = []
    L.append("Measured by `bash bench/all.sh` on %s (%s cores), %s, commit %s; load average %s at "
             "the start, %s at the end. Each ratio is attn against PyTorch 1.13 (Debian) on the "
             "same OpenBLAS kernels, same data and batch, measured in the same run; \"of "
             "ceiling\" is attn's GFLOP/s over this run's 1-thread 2048^3 sgemm (%s GFLOP/s; the "
             "ViT rows: the one bench/flops measured in its own run; rows marked CPU time: over the "
             "ceiling by CPU time that bench/seq2seq measured, %s GFLOP/s). Rows marked CPU time "
             "are judged by process CPU time (less disturbed by other jobs), the rest by wall "
             "time."
             % (machine.get("cpu", "?"), machine.get("cores", "?"), machine.get("date", "?"),
                machine.get("commit", "?"), machine.get("load_start", "?"),
                machine.get("load_end", "?"), fmt(ceiling, ".1f"),
                fmt(s2s.get("cpu_ceiling"), ".1f")))
    L.append("")
    L.append("| benchmark | attn | PyTorch | attn / PyTorch | of sgemm ceiling |")
    L.append("|---|---:|---:|---:|---:|")
    for a in MODELS:
        at, tt = tr_attn.get(a), tr_torch.get(a)
        L.append("| training %s, sentences/s | %s | %s | %s | %s |" % (
            NAMES[a], fmt(at and at[0], ",.0f"), fmt(tt and tt[0], ",.0f"),
            fmt(tt and tt[1], ".1f", "x"), fmt(at and at[2], ".0f", " %")))
    for a in MODELS:
        d = inf.get(a, {})
        n = d.get("n")
        a_sps = n / d["attn_cpu"] if n and d.get("attn_cpu") else None
        t_sps = n / d["torch_cpu"] if n and d.get("torch_cpu") else None
        # GFLOP/s by CPU time over the ceiling by CPU time (bench/seq2seq measures it so)
        cc = s2s.get("cpu_ceiling")
        frac = 100 * d["gflops"] / cc if d.get("gflops") and cc else None
        L.append("| batched eval %s, sentences/s (CPU time) | %s | %s | %s | %s |" % (
            NAMES[a], fmt(a_sps, ",.0f"), fmt(t_sps, ",.0f"), fmt(d.get("ratio"), ".1f", "x"),
            fmt(frac, ".0f", " %")))
    for (n, t) in sorted(fl_torch):
        a_ms, t_ms, ratio, mem = fl_torch[(n, t)]
        frac = fl_layer.get(n) if t == 1 else None
        L.append("| ViT-Base layer n = %d, %d thread%s, ms (memory %.2fx PyTorch's) | %.1f | %.1f "
                 "| %.2fx | %s |" % (n, t, "s" if t > 1 else "", mem, a_ms, t_ms, ratio,
                                     fmt(frac and 100 * frac, ".0f", " %")))
    tr = s2s.get("train")
    L.append("| seq2seq-transformer training, target tokens/s (CPU time) | %s | %s | %s | %s |" % (
        fmt(tr and tr[0], ",.0f"), fmt(tr and tr[1], ",.0f"), fmt(tr and tr[2], ".1f", "x"),
        fmt(s2s.get("train_frac"), ".0f", " %")))
    g = s2s.get("gen")
    L.append("| seq2seq generation, batch 1, KV cache, tokens/s (CPU time) | %s | %s | %s | |" % (
        fmt(g and g[0], ",.0f"), fmt(g and g[2], ",.0f"), fmt(g and g[3], ".1f", "x")))
    L.append("| seq2seq generation, batch 1, recomputing, tokens/s (CPU time) | %s | %s | %s | |" % (
        fmt(g and g[1], ",.0f"), fmt(g and g[2], ",.0f"), fmt(g and g[4], ".1f", "x")))
    L.append("")
    L += peers_section(txt["peers"], txt["kernels"])
    L.append("")
    L.append("| one run, 2 threads against 1 (bytes identical) | 1 thread | 2 threads | speed-up | "
             "target |")
    L.append("|---|---:|---:|---:|---|")
    for name, one, two, up, target, verdict, same in thr:
        unit = "pairs/s" if name.startswith("seq2seq") else "sentences/s"
        goal = "(none)" if not target else "%s %s" % (
            target, "met" if verdict == "PASS" else "missed")
        L.append("| %s, %s (%s) | %s | %s | %.2fx | %s |" % (
            name, unit, same, format(one, ",.0f"), format(two, ",.0f"), up, goal))
    if fl_ceil:
        L.append("| sgemm 2048^3, GFLOP/s | %s | %s | %s | |" % (
            fmt(fl_ceil.get(1), ".1f"), fmt(fl_ceil.get(2), ".1f"),
            fmt(fl_ceil.get(2) / fl_ceil[1] if fl_ceil.get(1) and fl_ceil.get(2) else None, ".2f",
                "x")))
    L.append("")
    if ker:
        L.append("Pinned (Haswell) against native OpenBLAS kernels, 1 thread, pinned / native: "
                 + "; ".join("%s training %s, exact-mode inference %s" % (
                     NAMES[a], fmt(ker.get((a, "train")), ".2f", "x"),
                     fmt(ker.get((a, "infer")), ".2f", "x"))
                     for a in MODELS if (a, "train") in ker) + ".")
    if srv.get("attn"):
        r, p50, p99 = srv["attn"]
        L.append("`attn serve --threads 2`, 16 clients, explain of 20 words with three models: "
                 "%s requests/s, p50 %.2f ms, p99 %.2f ms (wrk: %s requests/s, p99 %s ms)."
                 % (format(r, ",.0f"), p50, p99, fmt(srv.get("wrk"), ",.0f"),
                    fmt(srv.get("wrk_p99"), ".2f")))
        if srv.get("decoder"):
            r, p50, p99 = srv["decoder"]
            L[-1] = L[-1][:-1] + ("; the decoder's `POST /api/generate` (20 words, output with "
                                  "top-5, cross-attention, saliency), same clients: %s requests/s, "
                                  "p99 %.2f ms." % (format(r, ",.0f"), p99))
    return L


def main():
    if len(sys.argv) != 3:
        print("usage: summarize.py RAW_DIR OUT_DIR", file=sys.stderr)
        return 2
    raw, out = sys.argv[1], sys.argv[2]
    try:
        machine = dict(line.split(" ", 1) for line in read(os.path.join(raw, "machine.txt"))
                       .splitlines() if " " in line)
        table = tables(raw, out, machine)
        S = ["# Benchmarks: one run of bench/all.sh", ""]
        for k in ("date", "cpu", "cores", "commit", "openblas", "load_start", "load_end", "total_seconds"):
            S.append("- %s: %s" % (k.replace("_", " "), machine.get(k, "?")))
        if machine.get("quick") == "1":
            S.append("- **--quick: a smoke test, the figures mean little**")
        S.append("")
        S.append("The machine may have been shared: absolute timings move with its load, ratios "
                 "measured in one run (attn and PyTorch back to back) much less. Regenerate with "
                 "`bash bench/all.sh`; what each benchmark measures: bench/README.md.")
        S.append("")
        S.append("## Tables")
        S.append("")
        S += table
        for k in ORDER:
            path = os.path.join(raw, k + ".txt")
            if not os.path.exists(path):
                continue
            cmd = read(os.path.join(raw, k + ".cmd")).strip()
            secs = read(os.path.join(raw, k + ".secs")).strip()
            S += ["", "## " + TITLES[k], "", "`%s` (%s s)" % (cmd, secs), "", "```"]
            S.append(read(path).rstrip("\n"))
            S.append("```")
        for name, lines in (("summary.md", S), ("readme-table.md", table)):
            tmp = os.path.join(out, "." + name + ".tmp")
            with open(tmp, "w") as f:
                f.write("\n".join(lines) + "\n")
            os.replace(tmp, os.path.join(out, name))
        for line in table:  # the targets' verdicts, also on stdout
            if line.startswith("Check:"):
                print(line)
    except OSError as e:
        print("summarize.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
