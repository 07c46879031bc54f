"""Import before torch: makes PyTorch run on the kernels attn runs on.

attn's rule (include/attn_kernelset.h, docs/numerics.md "Pinned kernels"), the same here:
- pinned (ATTN_KERNELS unset or "pinned", attn's default): on a CPU with AVX2 and FMA, OpenBLAS
  runs its Haswell kernel table whatever it would detect and whatever OPENBLAS_CORETYPE says
  (OPENBLAS_CORETYPE=Haswell is set for this process and its children, before torch loads
  OpenBLAS), on one thread (OPENBLAS_NUM_THREADS=1 unless the caller set a count on purpose,
  as the benchmarks do), ATen on its avx2 kernels and oneDNN (GELU) on its AVX2 code unless
  ATEN_CPU_CAPABILITY / DNNL_MAX_CPU_ISA are set (tools/portable_check.py sets them per path).
  Without AVX2+FMA: what OpenBLAS picks, like attn.
- default (ATTN_KERNELS=default, a word of the tools only): PyTorch as under native, and nothing
  passed to attn: ATTN_KERNELS is removed, so every attn command a tool starts runs its own
  command's default (native for predict, generate, train: "attn's default equals the PyTorch
  installed here" with no variable set on either side).
- native (ATTN_KERNELS=native): OpenBLAS's own choice, except its fallback to the SSE3
  "Prescott" kernels on a CPU it does not recognise (virtualised Intel Xeons with AVX-512):
  then the kernels the CPU has ("SkylakeX" with AVX-512 F/BW/DQ/VL, else "Haswell"), as attn's
  attn_blas_preferred_core.
The mode goes to ATTN_KERNELS for the attn commands a tool starts, which otherwise run on their
own command's default (src/cli/kernels_policy.c: native for predict, generate, ...): both sides
then run one kernel set, pinned against PyTorch pinned to Haswell, native against stock PyTorch.
record() is the kernels record artefacts carry ({"mode", "openblas", "blas_core",
"blas_threads", "cpu_path"}), read from the OpenBLAS that torch loaded.
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


_DEFAULT = os.environ.get("ATTN_KERNELS") == "default"


def mode():
    """"pinned" or "native", from ATTN_KERNELS as attn reads it ("default": PyTorch native)."""
    return "native" if _DEFAULT or os.environ.get("ATTN_KERNELS") == "native" else "pinned"


def has_avx2_fma():
    return {"avx2", "fma"} <= _cpu_flags()


def preferred_core():
    """The OPENBLAS_CORETYPE this module sets, or None."""
    if mode() == "pinned":
        return "Haswell" if has_avx2_fma() else None
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


def _blas():
    import ctypes
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            lib = ctypes.CDLL(name)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            return lib
        except (OSError, AttributeError):
            continue
    return None


def record():
    """The kernels record of this process (call after torch is imported)."""
    lib = _blas()
    config = lib.openblas_get_config().decode().split() if lib else []
    cap = os.environ.get("ATEN_CPU_CAPABILITY") or ("avx2" if has_avx2_fma() else "default")
    return {"mode": "default" if _DEFAULT else mode(),
            "openblas": config[1] if len(config) > 1 else "unknown",
            "blas_core": lib.openblas_get_corename().decode().strip() if lib else "unknown",
            "blas_threads": lib.openblas_get_num_threads() if lib else 1,
            "cpu_path": "scalar" if cap == "default" else cap}


def _apply():
    core = preferred_core()
    pinned = mode() == "pinned" and has_avx2_fma()
    if (core or pinned) and "torch" in sys.modules:
        raise RuntimeError("tools/blas_core.py must be imported before torch")
    if core:
        os.environ["OPENBLAS_CORETYPE"] = core
    if _DEFAULT:
        os.environ.pop("ATTN_KERNELS")  # each attn command on its own default
    else:
        os.environ["ATTN_KERNELS"] = mode()
    if mode() == "pinned":
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if pinned:
        os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
        os.environ.setdefault("DNNL_MAX_CPU_ISA", "AVX2")


_apply()


def both_sides(attn):
    """"kernels: PyTorch {...}; attn <its ATTN_DEBUG line>": what each side of a cross-check runs
    (call after torch is imported; attn is the attn binary, run as the check runs it)."""
    r = subprocess.run([attn, "vocab"], capture_output=True, text=True,
                       env=dict(os.environ, ATTN_DEBUG="1"))
    line = next((x for x in r.stderr.splitlines() if "kernels:" in x), "attn: kernels: unknown")
    k = record()
    n = k["blas_threads"]
    return ("kernels: PyTorch %s, OpenBLAS %s %s, %d BLAS %s, ATen %s; attn %s"
            % (k["mode"], k["openblas"], k["blas_core"], n, "thread" if n == 1 else "threads",
               k["cpu_path"], line.split("kernels: ", 1)[1]))
