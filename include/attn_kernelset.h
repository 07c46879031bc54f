/* attn_kernelset.h -- which kernels run, and the record of it that every artefact holding
 * numbers carries (docs/numerics.md, "Pinned kernels").
 *
 *   attn_kernels_select(ATTN_KERNELS_PINNED);   // once, at start, before other threads run
 *   attn_kernels_info k;
 *   attn_kernels_info_get(&k);                  // {"pinned", "0.3.21", "Haswell", 1, "avx2"}
 *
 * Pinned (the default of the library's tests and benchmarks, and of the attn commands whose bytes
 * must travel: src/cli/kernels_policy.c): on every x86-64 CPU with AVX2 and FMA
 * OpenBLAS runs its Haswell kernel table, whatever it detected (SkylakeX, Cooperlake, Zen, ...)
 * and whatever OPENBLAS_CORETYPE says, on one thread, and attn's elementwise kernels take their
 * avx2 path: the same bytes on every such machine. A CPU without AVX2+FMA runs the scalar path
 * and the kernels OpenBLAS picks for it: a second reference, bytes not promised to match the
 * first. Native (the default of the attn commands for a user's own work): OpenBLAS's own choice
 * of kernels (OPENBLAS_CORETYPE honoured; its Prescott fallback replaced by the kernels the CPU
 * has) and its thread count: the machine's speed and the bits of a stock PyTorch on it.
 *
 * OpenBLAS's kernel table and thread count are process-wide: selecting changes them for every
 * user of OpenBLAS in the process (PyTorch in the same process included). A program that embeds
 * the library calls attn_kernels_select once at start, before any thread runs a product; attn,
 * its tests and its benchmarks do so from a constructor (src/cli/preferred_blas.c), reading
 * ATTN_KERNELS=pinned|native. The switch needs an OpenBLAS built with DYNAMIC_ARCH (Debian's):
 * with another BLAS the kernels cannot be changed, attn_kernels_select says so (false, and a
 * warning through the log hook) and the record names what runs. */
#ifndef ATTN_KERNELSET_H
#define ATTN_KERNELSET_H

#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attn_kernels_mode {
    ATTN_KERNELS_PINNED = 0,
    ATTN_KERNELS_NATIVE = 1
} attn_kernels_mode;

/* "pinned" or "native" (static string). */
const char *attn_kernels_mode_name(attn_kernels_mode mode);
/* Reads "pinned" or "native" into *mode; false (and *mode untouched) for anything else. */
bool attn_kernels_mode_parse(const char *name, attn_kernels_mode *mode);

/* Makes `mode` the kernels of this process (see the file comment). Returns false, with a warning
 * through the log hook, when the kernels asked for cannot be had (the BLAS cannot switch its
 * kernel table); what runs is then in attn_kernels_info_get. Not thread-safe: call it before
 * other threads use OpenBLAS. */
bool attn_kernels_select(attn_kernels_mode mode);
/* The mode last selected (ATTN_KERNELS_NATIVE if attn_kernels_select was never called). */
attn_kernels_mode attn_kernels_mode_active(void);

/* What decides the bytes of a result: the record every artefact holding numbers carries. */
typedef struct attn_kernels_info {
    char mode[16];      /* "pinned" / "native" */
    char openblas[32];  /* OpenBLAS version, "0.3.21" ("naive" in the ATTN_NAIVE_GEMM build) */
    char blas_core[32]; /* the kernel table running: "Haswell", "SkylakeX", ... */
    int blas_threads;   /* OpenBLAS threads per product */
    char cpu_path[16];  /* attn's elementwise kernels: "avx2", "scalar" or "avx512" */
} attn_kernels_info;

/* The record of what runs now. */
void attn_kernels_info_get(attn_kernels_info *info);
/* True iff a and b would compute the same bytes: the same OpenBLAS version, kernel table,
 * thread count and attn path (the mode itself does not matter: a native run on a Haswell CPU
 * with one thread computes what a pinned one does). */
bool attn_kernels_info_same(const attn_kernels_info *a, const attn_kernels_info *b);
/* The record as one JSON object {"mode", "openblas", "blas_core", "blas_threads", "cpu_path"}
 * to f (src/io/kernels_json.c). */
void attn_kernels_info_write_json(FILE *f, const attn_kernels_info *k);
/* "OpenBLAS 0.3.21 Haswell, 1 thread, attn avx2 (pinned)" into buf. */
void attn_kernels_info_describe(const attn_kernels_info *info, char *buf, int n);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_KERNELSET_H */
