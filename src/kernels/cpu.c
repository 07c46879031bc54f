/* cpu.c -- which implementation of the vectorised kernels runs: "scalar" (plain C, any CPU;
 * bit-identical to PyTorch 1.13 run with ATEN_CPU_CAPABILITY=default), "avx2" (x86-64 with
 * AVX2 and FMA; bit-identical to PyTorch 1.13's avx2 kernels, its choice on an AVX2 machine) or
 * "avx512" (the AVX2 kernels, except the two ops whose arithmetic depends on ATen's 16-lane
 * vectors, softmax and sigmoid, which follow PyTorch's avx512 kernels; runs on any AVX2+FMA CPU,
 * never chosen by auto). tools/portable_check.py checks the pairs live.
 *
 * The choice is process-wide, like OpenBLAS's choice of its kernel set, and made once, on the
 * first kernel call (or attn_cpu_path/attn_cpu_select):
 *   ATTN_CPU=scalar       the plain C kernels;
 *   ATTN_CPU=avx2         the AVX2 kernels; on a CPU or build without AVX2+FMA a warning goes to
 *                         the log hook and the scalar kernels run (kernels cannot fail);
 *   ATTN_CPU=avx512       the same, with ATen's avx512 softmax and sigmoid;
 *   ATTN_CPU=auto/unset   avx2 iff __builtin_cpu_supports("avx2") and ("fma");
 *   anything else         a warning, then auto.
 * Process-wide state on purpose (as the log hook): one atomic int, so reading it on every kernel
 * call costs one relaxed load and a branch, and attn_cpu_select from any thread is safe.
 */
#include "kernels_internal.h"

#include "attn.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { PATH_UNSET = 0, PATH_SCALAR, PATH_AVX2, PATH_AVX512, PATH_AUTO, PATH_UNKNOWN };

static _Atomic int active_path = PATH_UNSET;

/* The CPU can run the AVX2 kernels (and the OS saves the ymm registers: libgcc checks XCR0). */
bool attn_cpu_has_avx2_fma(void) {
#if ATTN_HAVE_AVX2_KERNELS
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

static int path_from_name(const char *name) {
    if (!name || !*name || strcmp(name, "auto") == 0) return PATH_AUTO;
    if (strcmp(name, "scalar") == 0) return PATH_SCALAR;
    if (strcmp(name, "avx2") == 0) return PATH_AVX2;
    if (strcmp(name, "avx512") == 0) return PATH_AVX512;
    return PATH_UNKNOWN;
}

static const char *path_name(int path) {
    return path == PATH_AVX2 ? "avx2" : path == PATH_AVX512 ? "avx512" : "scalar";
}

/* The first choice, from $ATTN_CPU (see the file comment). */
static int initial_path(void) {
    const char *env = getenv("ATTN_CPU");
    const int best = attn_cpu_has_avx2_fma() ? PATH_AVX2 : PATH_SCALAR;
    switch (path_from_name(env)) {
    case PATH_SCALAR:
        return PATH_SCALAR;
    case PATH_AVX2:
    case PATH_AVX512:
        if (best != PATH_AVX2)
            attn_log(ATTN_LOG_WARN,
                     "ATTN_CPU=%s: this %s has no AVX2+FMA; running the scalar kernels", env,
                     ATTN_HAVE_AVX2_KERNELS ? "CPU" : "build (not x86-64)");
        return best == PATH_AVX2 ? path_from_name(env) : best;
    case PATH_UNKNOWN:
        attn_log(ATTN_LOG_WARN, "ATTN_CPU=%s: unknown (scalar, avx2, avx512 or auto); running %s",
                 env, path_name(best));
        return best;
    default:
        return best;
    }
}

static int current_path(void) {
    int p = atomic_load_explicit(&active_path, memory_order_relaxed);
    if (p != PATH_UNSET) return p;
    int expected = PATH_UNSET, chosen = initial_path();
    /* a concurrent first call may have chosen already (the same answer): keep the first */
    if (!atomic_compare_exchange_strong(&active_path, &expected, chosen)) return expected;
    return chosen;
}

void attn_cpu_reset(void) {
    atomic_store(&active_path, PATH_UNSET);
}

bool attn_cpu_use_avx2(void) {
    const int p = current_path();
    return p == PATH_AVX2 || p == PATH_AVX512;
}

/* Whether the CPU has AVX-512F (with the OS saving the zmm registers: libgcc checks XCR0) and
 * ATTN_AVX512F is not "0": decided once, 0 unset, 1 no, 2 yes. */
static _Atomic int avx512f_state;

bool attn_cpu_use_avx512f(void) {
    if (!attn_cpu_use_avx2()) return false;
    int s = atomic_load_explicit(&avx512f_state, memory_order_relaxed);
    if (s == 0) {
        const char *env = getenv("ATTN_AVX512F");
        bool off = env && strcmp(env, "0") == 0;
#if ATTN_HAVE_AVX2_KERNELS
        __builtin_cpu_init();
        s = !off && __builtin_cpu_supports("avx512f") ? 2 : 1;
#else
        (void)off;
        s = 1;
#endif
        atomic_store_explicit(&avx512f_state, s, memory_order_relaxed);
    }
    return s == 2;
}

void attn_cpu_allow_avx512f(bool allow) {
    const char *env = getenv("ATTN_AVX512F");
    bool off = !allow || (env && strcmp(env, "0") == 0);
#if ATTN_HAVE_AVX2_KERNELS
    __builtin_cpu_init();
    atomic_store(&avx512f_state, !off && __builtin_cpu_supports("avx512f") ? 2 : 1);
#else
    (void)off;
    atomic_store(&avx512f_state, 1);
#endif
}

bool attn_cpu_aten_avx512(void) {
    return current_path() == PATH_AVX512;
}

const char *attn_cpu_path(void) {
    return path_name(current_path());
}

bool attn_cpu_path_supported(const char *name) {
    switch (path_from_name(name)) {
    case PATH_SCALAR:
    case PATH_AUTO:
        return true;
    case PATH_AVX2:
    case PATH_AVX512:
        return attn_cpu_has_avx2_fma();
    default:
        return false;
    }
}

bool attn_cpu_select(const char *name) {
    int p = path_from_name(name);
    if (p == PATH_UNKNOWN) {
        attn_log(ATTN_LOG_WARN,
                 "attn_cpu_select(\"%s\"): unknown path (scalar, avx2, avx512 or auto)", name);
        return false;
    }
    if ((p == PATH_AVX2 || p == PATH_AVX512) && !attn_cpu_has_avx2_fma()) {
        attn_log(ATTN_LOG_WARN, "attn_cpu_select(\"%s\"): this CPU or build has no AVX2+FMA", name);
        return false;
    }
    if (p == PATH_AUTO) p = attn_cpu_has_avx2_fma() ? PATH_AVX2 : PATH_SCALAR;
    atomic_store(&active_path, p);
    return true;
}
