/* kernelset.c -- pinned or native kernels (include/attn_kernelset.h, docs/numerics.md): the
 * policy; the OpenBLAS side (switching its kernel table, its thread count) is in sgemm.c, the
 * one file that talks to the BLAS, and attn's own path in cpu.c. */
#include "kernels_internal.h"

#include "attn.h"
#include "attn_kernelset.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The one kernel table of the AVX2+FMA class. Zen's sgemm is the same code, so "Zen" rounds as
 * "Haswell" does; SkylakeX and Cooperlake (AVX-512) round otherwise. */
#define PINNED_CORE "Haswell"

static attn_kernels_mode active_mode = ATTN_KERNELS_NATIVE;
static int native_threads = -1; /* OpenBLAS's thread count before the first select */
static bool switched;           /* the kernel table is not the one OpenBLAS chose */

const char *attn_kernels_mode_name(attn_kernels_mode mode) {
    return mode == ATTN_KERNELS_PINNED ? "pinned" : "native";
}

bool attn_kernels_mode_parse(const char *name, attn_kernels_mode *mode) {
    if (!name) return false;
    if (strcmp(name, "pinned") == 0)
        *mode = ATTN_KERNELS_PINNED;
    else if (strcmp(name, "native") == 0)
        *mode = ATTN_KERNELS_NATIVE;
    else
        return false;
    return true;
}

attn_kernels_mode attn_kernels_mode_active(void) {
    return active_mode;
}

/* Haswell's table on an AVX2+FMA CPU; elsewhere whatever OpenBLAS picked. */
static bool select_pinned(void) {
    bool ok = true;
    /* the ATTN_NAIVE_GEMM build has no BLAS to pin: its loop is the same everywhere */
    if (!attn_sgemm_naive && attn_cpu_has_avx2_fma() &&
        strcasecmp(attn_blas_corename(), PINNED_CORE) != 0) {
        ok = attn_blas_use_core(PINNED_CORE);
        switched = ok || switched;
        if (!ok)
            attn_log(ATTN_LOG_WARN,
                     "pinned kernels: this BLAS cannot switch to OpenBLAS's %s kernels (not "
                     "built with DYNAMIC_ARCH?); running %s, results may differ in the last bits",
                     PINNED_CORE, attn_blas_corename());
    }
    attn_set_num_threads(1);
    return ok;
}

/* OpenBLAS's own choice again, without its Prescott fallback. */
static bool select_native(void) {
    bool ok = true;
    if (switched) {
        ok = attn_blas_use_core(NULL);
        switched = !ok;
    }
    const char *preferred = attn_blas_preferred_core();
    if (preferred && attn_blas_use_core(preferred)) switched = true;
    if (native_threads > 0) attn_set_num_threads(native_threads);
    return ok;
}

bool attn_kernels_select(attn_kernels_mode mode) {
    if (native_threads < 0) native_threads = attn_num_threads();
    active_mode = mode;
    return mode == ATTN_KERNELS_PINNED ? select_pinned() : select_native();
}

void attn_kernels_info_get(attn_kernels_info *info) {
    memset(info, 0, sizeof *info);
    snprintf(info->mode, sizeof info->mode, "%s", attn_kernels_mode_name(active_mode));
    snprintf(info->openblas, sizeof info->openblas, "%s", attn_blas_version());
    snprintf(info->blas_core, sizeof info->blas_core, "%s", attn_blas_corename());
    info->blas_threads = attn_num_threads();
    snprintf(info->cpu_path, sizeof info->cpu_path, "%s", attn_cpu_path());
}

bool attn_kernels_info_same(const attn_kernels_info *a, const attn_kernels_info *b) {
    return strcmp(a->openblas, b->openblas) == 0 && strcasecmp(a->blas_core, b->blas_core) == 0 &&
           a->blas_threads == b->blas_threads && strcmp(a->cpu_path, b->cpu_path) == 0;
}

void attn_kernels_info_describe(const attn_kernels_info *info, char *buf, int n) {
    snprintf(buf, n > 0 ? (size_t)n : 0, "OpenBLAS %s %s, %d %s, attn %s (%s)", info->openblas,
             info->blas_core, info->blas_threads, info->blas_threads == 1 ? "thread" : "threads",
             info->cpu_path, info->mode);
}
