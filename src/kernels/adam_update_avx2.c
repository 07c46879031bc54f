/* adam_update_avx2.c -- the AVX2 version of Adam's elementwise update (compiled with -mavx2
 * -mfma; chosen at run time by adam_update.c): the plain loop's operations, 8 lanes at a time,
 * then the plain loop for the last n mod 8. */
#include "kernels_internal.h"

#if ATTN_HAVE_AVX2_KERNELS

void attn_adam_update_avx2(float *params, float *m, float *v, const float *grads, float *zero,
                           size_t n, const attn_adam_scalars *s) {
    const __m256 vb1 = _mm256_set1_ps(s->b1), v1mb1 = _mm256_set1_ps(s->one_minus_b1);
    const __m256 vb2 = _mm256_set1_ps(s->b2), v1mb2 = _mm256_set1_ps(s->one_minus_b2);
    const __m256 vbc2 = _mm256_set1_ps(s->bc2_sqrt), vstep = _mm256_set1_ps(s->neg_step_size);
    const __m256 veps = _mm256_set1_ps(s->eps), vwd = _mm256_set1_ps(s->wd);
    const bool wd = s->wd != 0.0f;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 g = _mm256_loadu_ps(grads + i), p = _mm256_loadu_ps(params + i);
        if (zero) _mm256_storeu_ps(zero + i, _mm256_setzero_ps()); /* grads + i, read */
        if (wd) g = _mm256_fmadd_ps(p, vwd, g);
        __m256 mi = _mm256_fmadd_ps(g, v1mb1, _mm256_mul_ps(_mm256_loadu_ps(m + i), vb1));
        __m256 vi =
            _mm256_fmadd_ps(_mm256_mul_ps(v1mb2, g), g, _mm256_mul_ps(_mm256_loadu_ps(v + i), vb2));
        __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), vbc2), veps);
        p = _mm256_add_ps(p, _mm256_div_ps(_mm256_mul_ps(vstep, mi), denom));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        _mm256_storeu_ps(params + i, p);
    }
    attn_adam_update_scalar(params, m, v, grads, zero, i, n, s);
}

#endif /* ATTN_HAVE_AVX2_KERNELS */
