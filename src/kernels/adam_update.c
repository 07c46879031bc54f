/* adam_update.c -- Adam's elementwise update over flat buffers (attn_kernels.h); the scalars of
 * the step come from src/train/adam.c. The plain loop here runs on any CPU; adam_update_avx2.c
 * has the same operations 8 lanes at a time (fma, mul, sqrt, div and add are correctly rounded
 * lane by lane, so both give the same bits; tests/kernels/test_adam_update.c compares them). */
#include "kernels_internal.h"

#include <math.h>

void attn_adam_update_scalar(float *params, float *m, float *v, const float *grads, float *zero,
                             size_t i, size_t n, const attn_adam_scalars *s) {
    for (; i < n; i++) {
        float g = grads[i];
        if (zero) zero[i] = 0.0f; /* grads[i], read */
        if (s->wd != 0.0f) g = fmaf(params[i], s->wd, g);
        m[i] = fmaf(g, s->one_minus_b1, m[i] * s->b1);
        v[i] = fmaf(s->one_minus_b2 * g, g, v[i] * s->b2);
        float denom = sqrtf(v[i]) / s->bc2_sqrt + s->eps;
        params[i] = params[i] + s->neg_step_size * m[i] / denom;
    }
}

static void update(float *params, float *m, float *v, const float *grads, float *zero, size_t n,
                   const attn_adam_scalars *s) {
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        attn_adam_update_avx2(params, m, v, grads, zero, n, s);
        return;
    }
#endif
    attn_adam_update_scalar(params, m, v, grads, zero, 0, n, s);
}

void attn_adam_update(float *params, float *m, float *v, const float *grads, size_t n,
                      const attn_adam_scalars *s) {
    update(params, m, v, grads, NULL, n, s);
}

void attn_adam_update_zero_grads(float *params, float *m, float *v, float *grads, size_t n,
                                 const attn_adam_scalars *s) {
    update(params, m, v, grads, grads, n, s);
}
