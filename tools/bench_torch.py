#!/usr/bin/python3
"""bench_torch.py -- PyTorch's side of bench/flops: one ViT-Base encoder layer forward.

nn.TransformerEncoderLayer(768, 12, 3072, activation='gelu', norm_first=True, batch_first=True)
in eval mode under torch.no_grad() (PyTorch 1.13 then takes its fused "fast path"), batch 1,
n tokens. Each (n, threads) runs in a fresh subprocess so that its peak RSS (VmHWM from
/proc/self/status, which a fresh exec starts from zero) is its own; the thread count is set
both with torch.set_num_threads and OPENBLAS_NUM_THREADS / OMP_NUM_THREADS before torch loads.

Prints one line per configuration, parsed by bench/flops.c:
  torch n=197 threads=1 reps=30 median_s=0.0123 min_s=0.0120 base_kb=123456 peak_kb=234567

Run with Debian's interpreter (torch 1.13 lives there): /usr/bin/python3 tools/bench_torch.py
"""
import argparse
import os
import subprocess
import sys
import time


def vm_kb(field):
    """VmRSS / VmHWM of this process in kB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def child(n, threads, reps, warmup):
    import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
    import torch
    from torch import nn

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.1, activation="gelu",
                                       norm_first=True, batch_first=True).eval()
    x = torch.randn(1, n, 768)
    base_kb = vm_kb("VmRSS")
    times = []
    with torch.no_grad():
        for i in range(warmup + reps):
            t0 = time.perf_counter()
            y = layer(x)
            t1 = time.perf_counter()
            if i >= warmup:
                times.append(t1 - t0)
    if not torch.isfinite(y).all():
        print(f"bench_torch: n={n}: non-finite output", file=sys.stderr)
        return 1
    times.sort()
    median = times[len(times) // 2] if len(times) % 2 else 0.5 * (
        times[len(times) // 2 - 1] + times[len(times) // 2])
    print(f"torch n={n} threads={threads} reps={reps} median_s={median:.6f} "
          f"min_s={times[0]:.6f} base_kb={base_kb} peak_kb={vm_kb('VmHWM')}", flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 success, 1 a benchmark subprocess failed, 2 usage error.")
    ap.add_argument("--n", type=int, nargs="+", default=[197, 4097],
                    help="token counts n (default 197 4097)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                    help="thread counts (default 1 2)")
    ap.add_argument("--reps-short", type=int, default=30, help="reps for n <= 1024 (default 30)")
    ap.add_argument("--reps-long", type=int, default=3, help="reps for n > 1024 (default 3)")
    ap.add_argument("--quick", action="store_true", help="2 reps, for a smoke test")
    ap.add_argument("--child", type=int, nargs=4, metavar=("N", "THREADS", "REPS", "WARMUP"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(*a.child)
    status = 0
    for n in a.n:
        for t in a.threads:
            reps = 2 if a.quick else (a.reps_short if n <= 1024 else a.reps_long)
            warmup = 1 if n > 1024 or a.quick else 3
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(t), OMP_NUM_THREADS=str(t),
                       MKL_NUM_THREADS=str(t))
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(n),
                                str(t), str(reps), str(warmup)], env=env)
            status = status or r.returncode
    return status


if __name__ == "__main__":
    sys.exit(main())
