#!/usr/bin/python3
"""golden_adam.py -- writes weights/golden/adam.json: torch.optim.Adam (defaults, CPU,
single-tensor path, the 1.13 default) on a few small tensors with random gradients.

The file holds the initial parameters, the gradient of every step, and the parameters and
moments (exp_avg = m, exp_avg_sq = v) after 1 and after 10 steps. Tensor sizes include
lengths that are not multiples of 16 so that both ATen's vectorised body and its scalar tail
are exercised. Run with Debian's torch: /usr/bin/python3 tools/golden_adam.py
"""
import argparse
import json
import os

import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch

STEPS = 10
SHAPES = {"a": [5, 3], "b": [37], "c": [4, 8], "d": [1], "e": [2, 21]}


def tolist(t):
    return [float(x) for x in t.detach().reshape(-1).tolist()]


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 success, 1 failure (Python traceback), 2 usage error.")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "weights", "golden", "adam.json"),
                    help="output file (default weights/golden/adam.json)")
    args = ap.parse_args()

    torch.manual_seed(1234)
    params = {k: torch.nn.Parameter(torch.randn(s) * 0.5) for k, s in SHAPES.items()}
    names = list(SHAPES)
    initial = {k: tolist(params[k]) for k in names}
    opt = torch.optim.Adam([params[k] for k in names])  # lr 1e-3, betas (0.9, 0.999), eps 1e-8
    assert not opt.defaults.get("foreach"), "expected the single-tensor Adam path"
    grads, after = [], {}
    for step in range(1, STEPS + 1):
        g = {}
        for i, k in enumerate(names):
            # mixed magnitudes: tensor "d" gets tiny gradients, "e" large ones
            scale = {"d": 1e-6, "e": 30.0}.get(k, 1.0)
            t = torch.randn(SHAPES[k]) * scale
            if step % 3 == 0 and k == "c":
                t[0] = 0.0  # exact zeros
            params[k].grad = t.clone()
            g[k] = tolist(t)
        grads.append(g)
        opt.step()
        if step in (1, STEPS):
            snap = {}
            for k in names:
                st = opt.state[params[k]]
                snap[k] = {"param": tolist(params[k]), "m": tolist(st["exp_avg"]),
                           "v": tolist(st["exp_avg_sq"])}
            after[str(step)] = snap
    out = {"torch": torch.__version__, "lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
           "names": names, "shapes": SHAPES, "initial": initial, "grads": grads,
           "after": after}
    with open(args.out, "w") as f:
        json.dump(out, f)
        f.write("\n")


if __name__ == "__main__":
    main()
