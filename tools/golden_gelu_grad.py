#!/usr/bin/python3
"""golden_gelu_grad.py -- PyTorch 1.13's GELU backward (autograd of F.gelu, the erf form) as a
golden for tests/kernels/test_gelu_backward.c.

Writes weights/golden/gelu_grad.json: {"machine", "x", "dy", "dx"} with dx = d(sum(dy * gelu(x)))
/ dx from autograd on one contiguous float32 tensor. PyTorch hands that backward to oneDNN
(eltwise_gelu_erf, backward_data: see ONEDNN_VERBOSE=1), whose arithmetic attn follows on both
kernel paths; the test requires bit-identity.

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 tools/golden_gelu_grad.py [--out PATH]
"""
import argparse
import json
import os
import sys

import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import machine  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "weights", "golden",
                                                  "gelu_grad.json"))
    args = ap.parse_args()
    torch.manual_seed(20261201)
    torch.set_num_threads(1)
    # every region: the tails (|x| > 5, where Q underflows), the cancellation near x = -3,
    # values near 0; 2,001 + 1,000 + 200 + 13 values (not a multiple of 8: a partial block)
    x = torch.cat([torch.linspace(-10, 10, 2001), torch.randn(1000) * 3, torch.randn(200) * 0.01,
                   torch.tensor([0.0, -0.0, 1e-30, -1e-30, 20.0, -20.0, 100.0, -100.0, 1e-8,
                                 -1e-8, 0.5, -0.5, 3.0])]).float()
    dy = torch.randn(x.numel()).float()
    xr = x.clone().requires_grad_(True)
    F.gelu(xr).backward(dy)
    doc = {"machine": machine(), "x": x.tolist(), "dy": dy.tolist(), "dx": xr.grad.tolist()}
    with open(args.out + ".tmp", "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    os.replace(args.out + ".tmp", args.out)
    print("%s: %d values" % (args.out, x.numel()))


if __name__ == "__main__":
    sys.exit(main())
