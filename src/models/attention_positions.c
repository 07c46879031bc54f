/* attention_positions.c -- rope's rotation and table, alibi's slopes and bias
 * (attention_positions.h). */
#include "attention_positions.h"

#include <math.h>
#include <stdlib.h>

float *attn_rope_table(int P, int HS) {
    const size_t h2 = (size_t)HS / 2;
    float *t = malloc((size_t)P * (size_t)HS * sizeof(float));
    if (!t) return NULL;
    for (size_t p = 0; p < (size_t)P; p++)
        for (size_t i = 0; i < h2; i++) {
            const double angle = (double)p / pow(10000.0, (double)(2 * i) / (double)HS);
            t[p * HS + i] = (float)cos(angle);
            t[p * HS + h2 + i] = (float)sin(angle);
        }
    return t;
}

void attn_rope_row(float *x, const float *table, int p, int HS, bool transpose) {
    const int h2 = HS / 2;
    const float *cs = table + (size_t)p * HS, *sn = cs + h2;
    for (int i = 0; i < h2; i++) {
        const float x1 = x[i], x2 = x[i + h2];
        if (transpose) {
            x[i] = x1 * cs[i] + x2 * sn[i];
            x[i + h2] = x2 * cs[i] - x1 * sn[i];
        } else {
            x[i] = x1 * cs[i] - x2 * sn[i];
            x[i + h2] = x2 * cs[i] + x1 * sn[i];
        }
    }
}

/* ALiBi slope of head h of NH: 2^(-8(h+1)/NH) for NH a power of two; otherwise the paper's
 * interpolation: the n = 2^floor(log2 NH) slopes of n heads, then every other slope of 2n heads
 * (2^(-8(2j+1)/2n), j = 0..NH-n-1). Computed in double, rounded once. */
static float alibi_slope(int h, int NH) {
    int n = 1;
    while (2 * n <= NH) n *= 2;
    const double e = h < n ? 8.0 * (h + 1) / n : 8.0 * (2 * (h - n) + 1) / (2.0 * n);
    return (float)pow(2.0, -e);
}

void attn_alibi_bias(float *bias, int NH, int q_pos, int n_q, int S) {
    for (int h = 0; h < NH; h++) {
        const float slope = alibi_slope(h, NH);
        for (int r = 0; r < n_q; r++) {
            const int i = q_pos + r;
            for (int j = 0; j < S; j++)
                bias[((size_t)h * n_q + r) * S + j] = -(slope * (float)(i > j ? i - j : j - i));
        }
    }
}
