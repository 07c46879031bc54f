/* rng.c -- the project's PRNG: splitmix64 (Steele, Lea & Flood, "Fast splittable pseudorandom
 * number generators", OOPSLA 2014). The state is a value the caller owns; the same seed gives
 * the same stream on every machine (only integer arithmetic until the final conversions). */
#include "attn.h"

#include <math.h>

attn_rng attn_rng_seed(uint64_t seed) {
    attn_rng r = {seed};
    return r;
}

uint64_t attn_rng_next(attn_rng *r) {
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Lemire's multiply-shift with rejection: unbiased for every n. */
uint32_t attn_rng_below(attn_rng *r, uint32_t n) {
    uint64_t m = (uint64_t)(uint32_t)(attn_rng_next(r) >> 32) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            m = (uint64_t)(uint32_t)(attn_rng_next(r) >> 32) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

double attn_rng_uniform(attn_rng *r) {
    return (double)(attn_rng_next(r) >> 11) * 0x1.0p-53;
}

float attn_rng_uniform_range(attn_rng *r, float lo, float hi) {
    return (float)((double)lo + ((double)hi - (double)lo) * attn_rng_uniform(r));
}

double attn_rng_normal(attn_rng *r) {
    /* Box-Muller; u1 in (0, 1] so log never sees 0. */
    double u1 = 1.0 - attn_rng_uniform(r);
    double u2 = attn_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void attn_rng_shuffle(attn_rng *r, int *a, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)attn_rng_below(r, (uint32_t)(i + 1));
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}
