#!/usr/bin/python3
"""base.py -- section 6's base seq2seq-transformer (d_model 512, 8 heads, FFN 2048, 6 + 6
layers, post-norm): load, memory and write of its weights, attn against PyTorch, in one run.

The weights: the PyTorch twin of attn's model (tools/seq2seq_models.build) at the base size,
torch.manual_seed(1), exported with tools/safetensors_io.save_state_dict (attn's metadata), so
that attn and PyTorch read the same values. Measured, one thread each, the file in the page
cache (one untimed run first), medians of --reps runs, each attn run its own process:

- load to the first generated token: `attn generate --weights W.safetensors --max-len 1` on one
  sentence, the whole process's wall time (start, map, validate, encode, one decoder step,
  exit) and its peak RSS (GNU time's %M), against the parameters' float32 bytes;
- write: `attn convert W.safetensors OUT.safetensors` (the whole process: map and validate the
  input, write a temporary file, fsync, rename), an upper bound of the write alone;
- PyTorch: torch.load of the same state_dict saved with torch.save, and
  tools/safetensors_io.load of the safetensors file, in this process;
- with --seq2seq: `bench/seq2seq --torch --size base` (training step, greedy generation at the
  model's own length, and KV-cache generation at a fixed length of 15 words at batch 1 and 8
  against PyTorch's cached loop and TorchScript), its output kept verbatim;
- JSON: `attn convert W.safetensors OUT.json`, what it prints, its time, peak RSS and the
  file's size (its limit is ATTN_MAX_FILE_BYTES on reading).

Usage: /usr/bin/python3 bench/base.py [--attn build/attn] [--out FILE.md] [--reps R]
                                      [--quick] [--tmp DIR] [--seq2seq build/bench/seq2seq]
  --quick: a tiny model (d 32, 2 heads, FFN 64, 1 + 1 layers), one rep: a smoke test.
Exit: 0 ok (a MISSed target does not fail the run), 1 a command failed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import blas_core  # noqa: E402,F401
import torch  # noqa: E402

import safetensors_io  # noqa: E402
import seq2seq_models as sm  # noqa: E402

BASE = {"d_model": 512, "n_heads": 8, "ffn_dim": 2048, "enc_layers": 6, "dec_layers": 6,
        "norm": "post"}
TINY = {"d_model": 32, "n_heads": 2, "ffn_dim": 64, "enc_layers": 1, "dec_layers": 1,
        "norm": "post"}
SENTENCE = "the exam was not very clear"
TARGET_LOAD_S, TARGET_RSS, TARGET_WRITE_S = 0.2, 1.2, 1.0


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def timed_proc(cmd, stdin=None, timeout=600):
    """(returncode, wall seconds, peak RSS KB, stdout, stderr) of cmd under GNU time."""
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "TIME-RSS-KB %M"] + cmd, input=stdin,
                       capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    m = re.search(r"TIME-RSS-KB (\d+)", r.stderr)
    err = "\n".join(line for line in r.stderr.splitlines() if "TIME-RSS-KB" not in line
                    and "Command exited" not in line)
    return r.returncode, wall, int(m.group(1)) if m else -1, r.stdout, err


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def passfail(ok):
    return "PASS" if ok else "MISS"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn", default="build/attn")
    ap.add_argument("--out", help="the markdown report (default: stdout only)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tmp", help="work directory (default: a temporary one)")
    ap.add_argument("--seq2seq", help="build/bench/seq2seq: also run it with --torch --size base "
                    "(--quick: --quick) and keep its output")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.quick:
        a.reps = 1
    cfg = TINY if a.quick else BASE
    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    load_start = loadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=HERE).stdout.strip() or "unknown"
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), "unknown")
    out("# Section 6's base seq2seq-transformer: load, memory, write (bench/base.py)")
    out()
    out("- date: %s" % time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()))
    out("- machine: %s, %d cores (other jobs on them move the timings: the load averages)"
        % (cpu, os.cpu_count()))
    out("- commit: %s" % commit)
    out("- load average at start: %s; this process's niceness %d"
        % (load_start, os.nice(0)))
    out("- command: /usr/bin/python3 bench/base.py %s" % " ".join(sys.argv[1:]))
    out()
    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp:
        st = os.path.join(tmp, "base.safetensors")
        pt = os.path.join(tmp, "base.pt")
        torch.manual_seed(1)
        model = sm.build(cfg)
        sd = model.state_dict()
        n_params = sum(t.numel() for t in sd.values())
        param_bytes = 4 * n_params
        t0 = time.perf_counter()
        safetensors_io.save_state_dict(sd, st, model.config, fmt=safetensors_io.SEQ2SEQ_FORMAT)
        py_write = time.perf_counter() - t0
        torch.save(sd, pt)
        out("model: d_model %d, %d heads, FFN %d, %d + %d layers, %s-norm; %s parameters, "
            "%.1f MB of float32; safetensors file %.1f MB"
            % (cfg["d_model"], cfg["n_heads"], cfg["ffn_dim"], cfg["enc_layers"],
               cfg["dec_layers"], cfg["norm"], format(n_params, ","), param_bytes / 1e6,
               os.path.getsize(st) / 1e6))
        out()
        env_cmd = ["env", "OPENBLAS_NUM_THREADS=1", a.attn]
        gen = env_cmd + ["generate", "--threads", "1", "--weights", st, "--max-len", "1"]
        rc, _, _, so, se = timed_proc(gen + [SENTENCE])  # warm: the file in the page cache
        if rc != 0:
            print("base.py: %s failed: %s" % (" ".join(gen), se), file=sys.stderr)
            return 1
        first = so.strip()
        walls, rss = [], []
        for _ in range(a.reps):
            rc, w, kb, so, se = timed_proc(gen + [SENTENCE])
            if rc != 0:
                print("base.py: generate failed: %s" % se, file=sys.stderr)
                return 1
            walls.append(w)
            rss.append(kb)
        load_s, rss_kb = median(walls), max(rss)
        conv = env_cmd + ["convert", st, os.path.join(tmp, "copy.safetensors"), "--to",
                          "safetensors"]
        wwalls = []
        for _ in range(a.reps):
            rc, w, _, _, se = timed_proc(conv)
            if rc != 0:
                print("base.py: convert failed: %s" % se, file=sys.stderr)
                return 1
            wwalls.append(w)
        write_s = median(wwalls)
        same = open(st, "rb").read() == open(os.path.join(tmp, "copy.safetensors"), "rb").read()
        tl, sl = [], []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            torch.load(pt)
            tl.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            safetensors_io.load(st)
            sl.append(time.perf_counter() - t0)
        torch_load, st_load = median(tl), median(sl)
        out("| what (medians of %d runs, file in the page cache, 1 thread) | seconds "
            "| peak RSS MB |" % a.reps)
        out("|---|---:|---:|")
        out("| attn generate --max-len 1, one sentence: process start to exit (load to first "
            "token) | %.3f | %.1f |" % (load_s, rss_kb * 1024 / 1e6))
        out("| attn convert safetensors -> safetensors (map, validate, write, fsync, rename) "
            "| %.3f | |" % write_s)
        out("| torch.load of the same state_dict (torch.save file), in-process | %.3f | |"
            % torch_load)
        out("| tools/safetensors_io.load of the safetensors file, in-process | %.3f | |"
            % st_load)
        out("| tools/safetensors_io.save_state_dict (writing the file), in-process | %.3f | |"
            % py_write)
        out()
        out("first generated token of %r: %r; the copy attn wrote is %s to the file "
            "tools/safetensors_io.py wrote (the two writers need not lay out the header alike)"
            % (SENTENCE, first, "byte-identical" if same else "not byte-identical"))
        out("attn's whole process to the first token over torch.load alone (in-process): %.2fx; "
            "over safetensors_io.load alone: %.2fx"
            % (load_s / torch_load, load_s / st_load))
        out()
        out("- %s load to the first generated token <= %.1f s warm (%.3f s)"
            % (passfail(load_s <= TARGET_LOAD_S), TARGET_LOAD_S, load_s))
        out("- %s peak RSS of attn generate <= %.1fx the parameter bytes (%.1f MB / %.1f MB = "
            "%.2fx)" % (passfail(rss_kb * 1024 <= TARGET_RSS * param_bytes), TARGET_RSS,
                        rss_kb * 1024 / 1e6, param_bytes / 1e6, rss_kb * 1024 / param_bytes))
        out("- %s writing the safetensors file <= %.1f s (%.3f s, the whole convert process)"
            % (passfail(write_s <= TARGET_WRITE_S), TARGET_WRITE_S, write_s))
        out()
        js = os.path.join(tmp, "base.json")
        cj = env_cmd + ["convert", st, js]
        rc, w, kb, so, se = timed_proc(cj)
        size = os.path.getsize(js) if os.path.exists(js) else 0
        out("## The same model as JSON")
        out()
        out("`attn convert W.safetensors W.json`: exit %d, %.2f s, peak RSS %.1f MB, output %s"
            % (rc, w, kb * 1024 / 1e6, "%.1f MB" % (size / 1e6) if size else "not written"))
        msg = (se.strip() or so.strip()).splitlines()
        out()
        out("```")
        for line in msg[-5:]:
            out(line.replace(tmp, "DIR"))
        out("```")
        if size:
            rc, w, kb, so, se = timed_proc(env_cmd + ["generate", "--threads", "1", "--weights",
                                                      js, "--max-len", "1", SENTENCE])
            out()
            out("`attn generate --weights W.json --max-len 1`: exit %d, %.2f s, peak RSS %.1f MB"
                % (rc, w, kb * 1024 / 1e6))
            out()
            out("```")
            for line in (se.strip() or so.strip()).splitlines()[-5:]:
                out(line.replace(tmp, "DIR"))
            out("```")
    if a.seq2seq:
        cmd = [a.seq2seq, "--torch"] + (["--quick", "--gen-len", "15"] if a.quick
                                         else ["--size", "base"])
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.join(HERE, ".."))
        out()
        out("## Training step and greedy generation (`%s`, 1 thread)" % " ".join(cmd[1:]))
        out()
        out("Its output verbatim (bench/README.md, seq2seq-transformer section)."
            + ("" if a.quick else " The model has had two epochs of 64 pairs: at this size it "
               "still stops at [EOS] at once, so the batch-1 lines at the model's own length "
               "(\"up to 15 words\") time the encoder and one step (tokens = sources). The "
               "\"fixed length\" lines decode every source to 15 words ([EOS] out of the argmax "
               "until then: `attn generate --min-len 15`), a real decoding loop, with the KV "
               "cache at batch 1 and batch 8, against PyTorch's cached loop "
               "(tools/seq2seq_models.greedy_cached, greedy_batch) and the same step under "
               "TorchScript; their words are required to be attn's."))
        out()
        out("```")
        out((r.stdout + r.stderr).rstrip("\n"))
        out("```")
        if r.returncode != 0:
            print("base.py: %s failed" % " ".join(cmd), file=sys.stderr)
            return 1
    out()
    out("- load average at end: %s" % loadavg())
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
