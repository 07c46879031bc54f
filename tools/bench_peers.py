#!/usr/bin/python3
"""bench_peers.py -- PyTorch's side of bench/peers.sh: batch-1 latency of a classifier in PyTorch
eager and TorchScript, and its ONNX export for ONNX Runtime.

Modes (one process each, so that each peer's peak RSS is its own):
  export       load the attn-weights-v1 file into the reference module (tools/attn_models.py),
               write OUT.pt (torch.jit.trace on the first sentence, then checked against eager on
               every sentence: a trace that froze a length would differ) and OUT.onnx
               (torch.onnx.export, opset 14, the sentence length T dynamic)
  eager        time the reference module, eval mode, torch.no_grad()
  torchscript  time OUT.pt loaded with torch.jit.load (no Python module code involved)
With --stock (eager, torchscript) PyTorch runs on the kernels it picks itself, nothing pinned
(ATTN_KERNELS=default for tools/blas_core.py: the kernels a user's own PyTorch runs on).
Sentences come from --ids (one per line, token ids; bench/infer_speed --dump writes them); each is
run alone, ids [1, T] and lengths [1]. Timed: --reps passes over all sentences after --warmup
untimed ones; the wall-clock median and the median of the thread's CPU time per pass.
PyTorch runs on attn's OpenBLAS kernels (tools/blas_core.py, imported before torch), 1 thread.

Prints one line, parsed by bench/peers.sh (core: the OpenBLAS kernel table torch runs):
  peer name=torchscript sentences=1000 reps=5 median_s=0.21 cpu_median_s=0.20 core=Haswell
and writes the logits of the last pass to --logits as float32 (host byte order), sentence order.
Exit codes: 0 ok, 1 runtime error (unreadable files, a trace that differs from eager,
non-finite logits), 2 usage.  Run with /usr/bin/python3 (Debian's torch 1.13).
"""
import argparse
import os
import statistics
import sys

from bench_infer_torch import openblas_core, read_ids, timed_passes  # one reader, one timing loop


def write_f32(path, values):
    import array
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        array.array("f", values).tofile(f)
    os.replace(tmp, path)


def run(args):
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS
    os.environ["OMP_NUM_THREADS"] = "1"
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if args.stock:
        os.environ["ATTN_KERNELS"] = "default"  # blas_core: PyTorch on its own kernels
    import blas_core  # noqa: F401 -- before torch: attn's OpenBLAS kernels (unless --stock)
    import torch
    import weights_json

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    inputs = [(torch.tensor([s], dtype=torch.long), torch.tensor([len(s)], dtype=torch.long))
              for s in read_ids(args.ids)]
    with torch.no_grad():
        if args.mode == "export":
            model = weights_json.load(args.weights).eval()
            traced = torch.jit.trace(model, inputs[0], check_trace=False)
            worst = 0.0
            for ids, lengths in inputs:
                worst = max(worst, float((traced(ids, lengths) - model(ids, lengths)).abs().max()))
            if not worst <= 1e-5:
                raise RuntimeError("the trace differs from eager by %.3g on some sentence" % worst)
            traced.save(args.out + ".pt.tmp")
            os.replace(args.out + ".pt.tmp", args.out + ".pt")
            # with grad enabled (the parameters require it) nn.TransformerEncoderLayer takes its
            # composite path: ONNX has no export of the fused eval kernel
            with torch.enable_grad():
                torch.onnx.export(model, inputs[0], args.out + ".onnx.tmp",
                                  input_names=["ids", "lengths"], output_names=["logits"],
                                  dynamic_axes={"ids": {1: "T"}}, opset_version=14)
            os.replace(args.out + ".onnx.tmp", args.out + ".onnx")
            print("exported %s.pt and %s.onnx (trace vs eager: worst %.3g)"
                  % (args.out, args.out, worst))
            return 0
        if args.mode == "eager":
            model = weights_json.load(args.weights).eval()
        else:
            model = torch.jit.load(args.out + ".pt").eval()
        times, cpu, logits = timed_passes(torch, model, inputs, args.warmup, args.reps)
    if not bool(torch.isfinite(logits).all()):
        raise RuntimeError("non-finite logits")
    write_f32(args.logits, logits.tolist())
    print("peer name=%s sentences=%d reps=%d median_s=%.6f cpu_median_s=%.6f core=%s"
          % (args.mode, len(inputs), args.reps, statistics.median(times), statistics.median(cpu),
             openblas_core()), flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description="PyTorch eager / TorchScript side of bench/peers.sh")
    ap.add_argument("mode", choices=("export", "eager", "torchscript"))
    ap.add_argument("--weights", help="attn-weights-v1 JSON of the classifier (export, eager)")
    ap.add_argument("--ids", required=True, help="token ids, one sentence per line")
    ap.add_argument("--out", required=True, help="path prefix of the .pt and .onnx files")
    ap.add_argument("--logits", help="float32 logits of the last pass (eager, torchscript)")
    ap.add_argument("--reps", type=int, default=5, help="timed passes (5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes first (1)")
    ap.add_argument("--stock", action="store_true",
                    help="PyTorch on its own kernels (ATTN_KERNELS=default for tools/blas_core.py)")
    args = ap.parse_args()
    if args.reps < 1 or args.warmup < 0:
        ap.error("--reps must be >= 1, --warmup >= 0")
    if args.mode != "torchscript" and not args.weights:
        ap.error("%s needs --weights" % args.mode)
    if args.mode != "export" and not args.logits:
        ap.error("%s needs --logits" % args.mode)
    try:
        return run(args)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        print("bench_peers: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
