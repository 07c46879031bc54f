"""Import before torch: makes PyTorch run on the OpenBLAS kernels attn runs on.

OpenBLAS 0.3.21 (Debian 12) falls back to its SSE3 "Prescott" kernels on a CPU it does not
recognise (seen on virtualised Intel Xeons with AVX-512). attn then sets OPENBLAS_CORETYPE to
the kernels OpenBLAS should have picked and runs again (src/cli/preferred_blas.c,
attn_blas_preferred_core): "SkylakeX" with AVX-512 F/BW/DQ/VL, "Haswell" with AVX2 + FMA. The
same rule here, so that torch and attn round alike: with OPENBLAS_CORETYPE unset, a child
process loads OpenBLAS and reports the core it picked; on "Prescott" the variable is set for
this process (before torch loads OpenBLAS) and its children. Does nothing when the variable is
set or OpenBLAS picked a core itself.
"""
import os
import subprocess
import sys

_PROBE = ("import ctypes\n"
          "for n in ('libopenblas.so.0', 'libblas.so.3'):\n"
          "    try:\n"
          "        f = ctypes.CDLL(n).openblas_get_corename\n"
          "    except (OSError, AttributeError):\n"
          "        continue\n"
          "    f.restype = ctypes.c_char_p\n"
          "    print(f().decode().strip())\n"
          "    break\n")


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def preferred_core():
    """The core attn would set, or None."""
    if os.environ.get("OPENBLAS_CORETYPE"):
        return None
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True)
    if r.stdout.strip() != "Prescott":
        return None
    flags = _cpu_flags()
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


_core = preferred_core()
if _core:
    if "torch" in sys.modules:
        raise RuntimeError("tools/blas_core.py must be imported before torch")
    os.environ["OPENBLAS_CORETYPE"] = _core
