#!/usr/bin/python3
"""golden_kernels.py -- PyTorch 1.13 reference outputs for the kernel tests.

Writes weights/golden/kernels.json: random inputs and torch's outputs for linear, tanh, sigmoid,
softmax, layernorm, relu, gelu and BCE-with-logits. tests/kernels/test_*.c load it and require
bit-identical forward results (see docs/numerics.md for the protocol).

Run with Debian's torch and one OpenBLAS thread:
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 tools/golden_kernels.py
The top-level "machine" object records where it was made (make_golden.machine()): bit-identity
is defined only on the same CPU class, elsewhere the tests check a tolerance.
Floats are written with json.dumps (shortest round-trip repr of the float32 value as a double),
which cJSON reads back exactly.

With --capability default it writes weights/golden/kernels_default.json instead: tanh, sigmoid,
softmax and LayerNorm computed by PyTorch's CPU kernels of the default capability
(ATEN_CPU_CAPABILITY=default, set before torch loads: the generic 8-lane Vectorized<float>,
no FMA, glibc's libm), the reference of attn's scalar kernel path. Those ops touch
no BLAS, so the file holds on any x86-64 machine; it records the C library, whose expf/tanhf
they call. --capability avx512 (on a CPU with AVX-512) writes kernels_avx512.json, the same
ops by PyTorch's avx512 kernels, the reference of attn's ATTN_CPU=avx512 path.
"""
import argparse
import json
import os
import platform
import sys

CAPABILITIES = {"default": "NO AVX", "avx512": "AVX512"}  # what torch's config then says
if "--capability" in sys.argv[:-1]:  # ATen reads it once, when torch loads
    os.environ["ATEN_CPU_CAPABILITY"] = sys.argv[sys.argv.index("--capability") + 1]

import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import machine  # noqa: E402

torch.manual_seed(20240601)
torch.set_num_threads(1)


def flat(t):
    return t.detach().contiguous().reshape(-1).tolist()


def linear_cases():
    shapes = [(1, 16, 32), (1, 32, 128), (1, 32, 96), (1, 128, 32), (1, 32, 32), (33, 32, 96),
              (7, 17, 5), (81, 32, 32), (1, 1, 1), (3, 64, 2)]
    out = []
    for n, k, m in shapes:
        x = torch.rand(n, k) * 2 - 1
        w = (torch.rand(m, k) * 2 - 1) / k ** 0.5
        b = (torch.rand(m) * 2 - 1) / k ** 0.5
        y = F.linear(x, w, b)
        y0 = F.linear(x, w)
        out.append({"n": n, "in": k, "out": m, "x": flat(x), "w": flat(w), "b": flat(b),
                    "y": flat(y), "y_nobias": flat(y0)})
    return out


def unary_cases(fn, max_len, scale):
    out = []
    for n in range(1, max_len + 1):
        x = torch.randn(n) * scale
        out.append({"x": flat(x), "y": flat(fn(x))})
    return out


def softmax_cases():
    out = []
    for n in range(1, 101):
        x = torch.randn(1, n) * 3
        out.append({"x": flat(x), "y": flat(torch.softmax(x, -1))})
    return out


def layernorm_cases():
    out = []
    for D, rows in [(32, 24), (16, 24), (768, 4), (5, 6), (100, 4), (200, 3)]:
        x = torch.randn(rows, D) * 2 + 0.5
        g = torch.rand(D) * 2 - 0.5
        b = torch.randn(D) * 0.5
        y = F.layer_norm(x, (D,), g, b, 1e-5)
        out.append({"n": rows, "D": D, "x": flat(x), "gamma": flat(g), "beta": flat(b),
                    "y": flat(y)})
    return out


def relu_case():
    x = torch.randn(1000) * 2
    x[:4] = torch.tensor([0.0, -0.0, 1e-40, -1e-40])
    return {"x": flat(x), "y": flat(torch.relu(x))}


def gelu_case():
    x = torch.cat([torch.randn(3000) * 2, torch.linspace(-10, 10, 1001), torch.randn(50) * 1e-3])
    return {"x": flat(x), "y": flat(F.gelu(x))}


def bce_cases():
    out = []
    for B in [1, 2, 7, 64]:
        z = torch.randn(B) * 4
        z[0] = 30.0 if B > 1 else z[0]
        y = (torch.rand(B) < 0.5).float()
        loss = F.binary_cross_entropy_with_logits(z, y)
        out.append({"B": B, "logits": flat(z), "labels": flat(y), "loss": float(loss)})
    return out


def layernorm_default_cases():
    """Also rows with a scalar tail (D mod 8) and Welford cascades of depth 2..5 (D / 8 vectors
    in chunks of 16)."""
    out = layernorm_cases()
    for D, rows in [(20, 5), (264, 3), (520, 2), (1000, 2), (2056, 1)]:
        x = torch.randn(rows, D) * 3 - 1.5
        g = torch.rand(D) * 2 - 0.5
        b = torch.randn(D) * 0.5
        y = F.layer_norm(x, (D,), g, b, 1e-5)
        out.append({"n": rows, "D": D, "x": flat(x), "gamma": flat(g), "beta": flat(b),
                    "y": flat(y)})
    return out


def write(name, data):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "weights", "golden", name)
    with open(path, "w") as f:
        json.dump(data, f, separators=(",", ":"))
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def main_capability(cap):
    """kernels_<cap>.json: the BLAS-free vectorised ops under ATEN_CPU_CAPABILITY=cap."""
    m = machine()
    if not CAPABILITIES[cap].startswith(m["cpu_capability"]):  # "NO AVX" reads as "NO"
        sys.exit("torch runs capability %s, not %s" % (m["cpu_capability"], cap))
    m["cpu_capability"] = CAPABILITIES[cap]
    write("kernels_%s.json" % cap, {
        "machine": m,
        "torch_version": torch.__version__,
        "aten_cpu_capability": cap,
        "libc": " ".join(platform.libc_ver()),
        "tanh": unary_cases(torch.tanh, 70, 1.5),
        "sigmoid": unary_cases(torch.sigmoid, 70, 3.0),
        "softmax": softmax_cases(),
        "layernorm": layernorm_default_cases(),
    })


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 success, 1 OPENBLAS_NUM_THREADS is not 1 (or a traceback), "
               "2 usage error.")
    ap.add_argument("--capability", choices=sorted(CAPABILITIES),
                    help="write kernels_CAPABILITY.json with ATEN_CPU_CAPABILITY set to it")
    args = ap.parse_args()
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        sys.exit("run with OPENBLAS_NUM_THREADS=1 (see docs/numerics.md)")
    if args.capability:
        main_capability(args.capability)
        return
    data = {
        "machine": machine(),
        "torch_version": torch.__version__,
        "linear": linear_cases(),
        "tanh": unary_cases(torch.tanh, 70, 1.5),
        "sigmoid": unary_cases(torch.sigmoid, 70, 3.0),
        "softmax": softmax_cases(),
        "layernorm": layernorm_cases(),
        "relu": relu_case(),
        "gelu": gelu_case(),
        "bce": bce_cases(),
    }
    write("kernels.json", data)


if __name__ == "__main__":
    main()
