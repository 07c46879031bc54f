#!/usr/bin/python3
"""bench_peers_seq2seq.py -- PyTorch's side of bench/peers.sh for the seq2seq models: greedy
decoding at batch 1 in PyTorch eager and TorchScript, and the ONNX export for ONNX Runtime.

Modes (one process each, so that each peer's peak RSS is its own):
  export       load the attn-seq2seq-weights-v1 file (tools/seq2seq_models.py) and write the two
               pieces a greedy loop calls, as OUT.enc.pt / OUT.step.pt (torch.jit.trace) and
               OUT.enc.onnx / OUT.step.onnx (torch.onnx.export, opset 14, lengths dynamic):
                 encoder  src int64 [1, S] -> seq2seq-transformer: memory [1, S, D];
                          seq2seq-attn/-gru: enc [S, He], keys [S, H], state [1, H]
                 step     seq2seq-transformer: (memory, prefix int64 [1, T], mask float [T, T],
                          the causal -inf mask) -> logits [1, Vt] of the last position (the
                          decoder recomputed over the prefix: nn.Transformer has no KV cache);
                          RNN: (enc, keys, state, token int64 [1]) -> (logits [1, Vt],
                          state_out [1, H]) (the state is the cache)
               The traced pieces are then run greedily on every source and must give eager's
               tokens (a trace that froze a length would not).
  eager        the reference modules' greedy loop: seq2seq_models.greedy for the transformer
               (nn.Transformer's decoder over the prefix at each step), the incremental step for
               the RNNs (seq2seq_models.incremental)
  torchscript  the same loop over OUT.enc.pt / OUT.step.pt loaded with torch.jit.load
Every source of --ids alone, up to max_tgt_len - 1 words, argmax (ties: the lower id) until
[EOS]. Timed: --reps passes after one untimed one; wall-clock median and the median of the
thread's CPU time per pass. PyTorch runs on attn's OpenBLAS kernels (tools/blas_core.py), one
thread; --stock: on the kernels it picks itself (ATTN_KERNELS=default for blas_core: nothing set).

Prints one line for bench/peers_table.py:
  peer name=eager sources=100 tokens=458 reps=2 median_s=0.2 cpu_median_s=0.2 core=Haswell
and writes the output words of the last pass to --tokens (ids per line) and every step's
logits to --logits (float32, host order, source by source).
Exit codes: 0 ok, 1 runtime error (unreadable files, a trace whose tokens differ), 2 usage.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_infer_torch import openblas_core, read_ids  # noqa: E402 -- one reader


def pieces(torch, sm, model):
    """(encoder, step) modules of model, and whether it is the transformer."""
    nn = torch.nn

    class TEnc(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, src):
            return self.m.encode(src)

    class TStep(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, memory, prefix, mask):
            y = self.m.transformer.decoder(self.m.embed("tgt", prefix), memory, tgt_mask=mask)
            return self.m.head(y[:, -1])

    class REnc(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, src):
            enc, keys, s0 = self.m.encode(src)
            return enc, (keys if keys is not None else enc), s0

    class RStep(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, enc, keys, state, token):
            m = self.m
            x = m.tgt_embedding(token)
            if m.attn:
                ctx, _ = m.attention(state, enc, keys)
                x = torch.cat([x, ctx], 1)
            s = m.decoder(x, state)
            o = torch.cat([s, ctx], 1) if m.attn else s
            return m.head(o), s

    if isinstance(model, sm.Seq2SeqRNN):
        return REnc(model).eval(), RStep(model).eval(), False
    return TEnc(model).eval(), TStep(model).eval(), True


def loop(torch, sm, enc, step, is_t, src, max_out):
    """Greedy decoding over the pieces: (words, per-step logits)."""
    memory = enc(torch.tensor([src]))
    prefix, rows = [sm.BOS], []
    state = None if is_t else memory[2]
    while len(prefix) - 1 < max_out:
        if is_t:
            T = len(prefix)
            logits = step(memory, torch.tensor([prefix]),
                          torch.nn.Transformer.generate_square_subsequent_mask(T))
        else:
            logits, state = step(memory[0], memory[1], state, torch.tensor([prefix[-1]]))
        rows.append(logits[0])
        nxt = int(torch.argmax(logits[0]))
        if nxt == sm.EOS:
            break
        prefix.append(nxt)
    return prefix[1:], rows


def eager_loop(torch, sm, model, src, max_out):
    if isinstance(model, sm.Seq2SeqRNN):  # the state is the cache: one step per token
        dec, prefix, rows = sm.incremental(model, src), [sm.BOS], []
        while len(prefix) - 1 < max_out:
            logits = dec.step(prefix[-1], len(prefix) - 1)
            rows.append(logits)
            nxt = int(torch.argmax(logits))
            if nxt == sm.EOS:
                break
            prefix.append(nxt)
        return prefix[1:], rows
    return sm.greedy(model, src, max_out)


def run(args):
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"
    if args.stock:
        os.environ["ATTN_KERNELS"] = "default"  # blas_core: PyTorch on its own kernels
    else:
        os.environ.pop("ATTN_KERNELS", None)  # blas_core: pinned, attn's default
    import blas_core  # noqa: F401 -- before torch
    import torch
    import seq2seq_models as sm

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    sources = read_ids(args.ids)
    out = args.out
    with torch.no_grad():
        if args.mode in ("export", "eager"):
            model = sm.load(args.weights)
            max_out = model.config["max_tgt_len"] - 1
        if args.mode == "export":
            enc, step, is_t = pieces(torch, sm, model)
            s0 = torch.tensor([sources[0]])
            m0 = enc(s0)
            if is_t:
                ex = (m0, torch.tensor([[sm.BOS, 5, 6]]),
                      torch.nn.Transformer.generate_square_subsequent_mask(3))
                names = (["memory"], ["memory", "prefix", "mask"], ["logits"])
                axes = ({"src": {1: "S"}, "memory": {1: "S"}},
                        {"memory": {1: "S"}, "prefix": {1: "T"}, "mask": {0: "T", 1: "T"}})
            else:
                ex = (m0[0], m0[1], m0[2], torch.tensor([sm.BOS]))
                names = (["enc", "keys", "state"], ["enc", "keys", "state", "token"],
                         ["logits", "state_out"])
                axes = ({"src": {1: "S"}, "enc": {0: "S"}, "keys": {0: "S"}},
                        {"enc": {0: "S"}, "keys": {0: "S"}})
            t_enc = torch.jit.trace(enc, (s0,), check_trace=False)
            t_step = torch.jit.trace(step, ex, check_trace=False)
            for s in sources:
                if loop(torch, sm, t_enc, t_step, is_t, s, max_out)[0] != \
                        eager_loop(torch, sm, model, s, max_out)[0]:
                    raise RuntimeError("the traced pieces decode %s differently from eager" % s)
            for piece, tag in ((t_enc, "enc"), (t_step, "step")):
                piece.save(out + "." + tag + ".pt.tmp")
                os.replace(out + "." + tag + ".pt.tmp", out + "." + tag + ".pt")
            with torch.enable_grad():  # the composite path of the layers (as bench_peers.py)
                torch.onnx.export(enc, (s0,), out + ".enc.onnx.tmp", input_names=["src"],
                                  output_names=names[0], dynamic_axes=axes[0], opset_version=14)
                torch.onnx.export(step, ex, out + ".step.onnx.tmp", input_names=names[1],
                                  output_names=names[2], dynamic_axes=axes[1], opset_version=14)
            for tag in ("enc", "step"):
                os.replace(out + "." + tag + ".onnx.tmp", out + "." + tag + ".onnx")
            print("exported %s.{enc,step}.{pt,onnx} (traced tokens = eager's on %d sources)"
                  % (out, len(sources)))
            return 0
        if args.mode == "eager":
            decode = lambda s: eager_loop(torch, sm, model, s, max_out)  # noqa: E731
        else:
            t_enc = torch.jit.load(out + ".enc.pt").eval()
            t_step = torch.jit.load(out + ".step.pt").eval()
            is_t = len(list(t_step.graph.inputs())) == 4  # self, memory, prefix, mask
            max_out = args.max_out
            decode = lambda s: loop(torch, sm, t_enc, t_step, is_t, s, max_out)  # noqa: E731
        times, cpu = [], []
        for r in range(args.reps + 1):
            t0, c0 = time.perf_counter(), time.thread_time()
            results = [decode(s) for s in sources]
            t1, c1 = time.perf_counter(), time.thread_time()
            if r > 0:
                times.append(t1 - t0)
                cpu.append(c1 - c0)
    tokens = sum(len(rows) for _, rows in results)
    with open(args.tokens + ".tmp", "w") as f:
        for words, _ in results:
            f.write(" ".join(str(w) for w in words) + "\n")
    os.replace(args.tokens + ".tmp", args.tokens)
    with open(args.logits + ".tmp", "wb") as f:
        for _, rows in results:
            for row in rows:
                f.write(row.contiguous().numpy().astype("float32").tobytes())
    os.replace(args.logits + ".tmp", args.logits)
    print("peer name=%s sources=%d tokens=%d reps=%d median_s=%.6f cpu_median_s=%.6f core=%s"
          % (args.mode, len(sources), tokens, args.reps, statistics.median(times),
             statistics.median(cpu), openblas_core()), flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description="PyTorch side of bench/peers.sh, seq2seq models")
    ap.add_argument("mode", choices=("export", "eager", "torchscript"))
    ap.add_argument("--weights", help="attn-seq2seq-weights-v1 JSON (export, eager)")
    ap.add_argument("--ids", required=True, help="source token ids, one source per line")
    ap.add_argument("--out", required=True, help="path prefix of the .pt and .onnx files")
    ap.add_argument("--tokens", help="output words of the last pass (eager, torchscript)")
    ap.add_argument("--logits", help="float32 step logits of the last pass (eager, torchscript)")
    ap.add_argument("--reps", type=int, default=2, help="timed passes (2)")
    ap.add_argument("--max-out", type=int, default=15, help="torchscript: words at most (15)")
    ap.add_argument("--stock", action="store_true", help="PyTorch on its own kernels")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    if args.mode != "torchscript" and not args.weights:
        ap.error("%s needs --weights" % args.mode)
    if args.mode != "export" and not (args.logits and args.tokens):
        ap.error("%s needs --tokens and --logits" % args.mode)
    try:
        return run(args)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        print("bench_peers_seq2seq: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
