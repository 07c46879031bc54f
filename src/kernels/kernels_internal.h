/* kernels_internal.h -- helpers shared by the kernel files (src/kernels/): ATTN_ASSERT and the
 * 8-lane AVX2 helpers that reproduce ATen's Vectorized<float> partial loads/stores.
 * Not part of the public API; tests may include it. */
#ifndef ATTN_KERNELS_INTERNAL_H
#define ATTN_KERNELS_INTERNAL_H

#include "attn_kernels.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

/* Programmer-error check for debug builds; compiled out with NDEBUG (Release). Kernels never
 * validate user input: that happens at the model/API boundary. */
#ifdef NDEBUG
#define ATTN_ASSERT(cond) ((void)0)
#else
#include <assert.h>
#define ATTN_ASSERT(cond) assert(cond)
#endif

/* True when sgemm.c was built with ATTN_NAIVE_GEMM (a triple loop instead of OpenBLAS): then
 * matrix products are correct but not bit-identical to PyTorch, and tests say so. */
extern const bool attn_sgemm_naive;

/* ATen's Vec::loadu(p, count): the first count (< 8) lanes from p, the rest +0.0f. */
static inline __m256 attn_load_partial8(const float *p, size_t count) {
    float buf[8] = {0};
    memcpy(buf, p, count * sizeof *buf);
    return _mm256_loadu_ps(buf);
}

/* ATen's Vec::store(p, count): writes only the first count (< 8) lanes. */
static inline void attn_store_partial8(float *p, __m256 v, size_t count) {
    float buf[8];
    _mm256_storeu_ps(buf, v);
    memcpy(p, buf, count * sizeof *buf);
}

/* attn_gelu_forward one element at a time (activations.c): the reference its 8-lane path must
 * match bit for bit. */
void attn_gelu_forward_scalar(float *y, const float *x, size_t n);

#endif /* ATTN_KERNELS_INTERNAL_H */
