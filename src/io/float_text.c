/* float_text.c -- a float as printf("%.9g") writes it, without printf: the text of every number
 * of the weights files and the explain JSON. Nine significant digits read back as the same float
 * (float -> text -> double -> float is exact), and glibc's printf costs about 0.15 us a number,
 * most of an attention map's JSON. The digits come from exact integer arithmetic: a float is
 * m * 2^e (m < 2^24), so m * 10^k / 2^-e (or m * 2^e / 10^-k for the large ones) is an exact
 * 128-bit quotient and remainder, rounded half to even as glibc rounds. Out of that range
 * (below 1e-23, at or above 2^127, and Inf/NaN) it calls snprintf. tests/io/test_float_text.c
 * compares it with snprintf over every edge and millions of random bit patterns. */
#include "io_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef unsigned __int128 u128;

static u128 pow10_u128(int k) {
    u128 p = 1;
    while (k-- > 0) p *= 10u;
    return p;
}

/* *q = round(m * 2^e * 10^k), to nearest, ties to even, exactly; false when an operand would
 * not fit in 128 bits. */
static bool scaled_round(uint32_t m, int e, int k, u128 *q) {
    u128 num = m, r, half;
    if (k >= 0) {
        if (k > 31) return false;
        num *= pow10_u128(k); /* < 2^24 * 10^31 < 2^128 */
        if (e >= 0) {         /* an integer: exact */
            if (e > 127 || (num >> (127 - e)) != 0) return false;
            *q = num << e;
            return true;
        }
        const int s = -e;
        if (s > 127) return false;
        *q = num >> s;
        r = num & (((u128)1 << s) - 1);
        half = (u128)1 << (s - 1);
        if (r > half || (r == half && (*q & 1u))) (*q)++;
        return true;
    }
    if (e < 0 || e > 103 || -k > 38) return false;
    num <<= e;
    const u128 den = pow10_u128(-k);
    *q = num / den;
    r = num % den;
    if (2 * r > den || (2 * r == den && (*q & 1u))) (*q)++;
    return true;
}

/* The nine significant digits of x > 0 (finite) and the decimal exponent of the first one. */
static bool digits9(float x, uint64_t *digits, int *exp10) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    const int field = (int)(bits >> 23) & 0xff;
    const uint32_t m = field ? (bits & 0x7fffffu) | 0x800000u : bits & 0x7fffffu;
    const int e = field ? field - 150 : -149;
    int X = (int)floor(log10((double)x));
    for (int tries = 0; tries < 3; tries++) {
        u128 q;
        if (X < -23 || !scaled_round(m, e, 8 - X, &q)) return false;
        if (q < 100000000u) { /* X was one too high (log10 rounded up at a power of ten) */
            X--;
            continue;
        }
        if (q > 1000000000u) {
            X++;
            continue;
        }
        if (q == 1000000000u) { /* rounded up to the next power of ten */
            q = 100000000u;
            X++;
        }
        *digits = (uint64_t)q;
        *exp10 = X;
        return true;
    }
    return false;
}

int attn_io_format_float(char out[ATTN_IO_FLOAT_TEXT_MAX], float x) {
    uint64_t q;
    int X;
    if (x == 0.0f || !isfinite(x) || !digits9(fabsf(x), &q, &X))
        return snprintf(out, ATTN_IO_FLOAT_TEXT_MAX, "%.9g", (double)x);
    char d[9];
    for (int i = 8; i >= 0; i--, q /= 10) d[i] = (char)('0' + q % 10);
    int nd = 9;
    while (nd > 1 && d[nd - 1] == '0') nd--; /* %g drops trailing zeros */
    char *p = out;
    if (signbit(x)) *p++ = '-';
    if (X >= -4 && X < 9) { /* %f style with 8 - X decimals */
        if (X < 0) {
            *p++ = '0';
            *p++ = '.';
            for (int i = 0; i < -X - 1; i++) *p++ = '0';
            for (int i = 0; i < nd; i++) *p++ = d[i];
        } else {
            for (int i = 0; i <= X; i++) *p++ = d[i];
            if (nd > X + 1) {
                *p++ = '.';
                for (int i = X + 1; i < nd; i++) *p++ = d[i];
            }
        }
    } else { /* %e style: d.dddddddde+XX */
        *p++ = d[0];
        if (nd > 1) {
            *p++ = '.';
            for (int i = 1; i < nd; i++) *p++ = d[i];
        }
        *p++ = 'e';
        *p++ = X < 0 ? '-' : '+';
        const int a = X < 0 ? -X : X;
        if (a >= 100) *p++ = (char)('0' + a / 100);
        *p++ = (char)('0' + a / 10 % 10);
        *p++ = (char)('0' + a % 10);
    }
    *p = '\0';
    return (int)(p - out);
}

void attn_io_write_floats(FILE *f, const float *x, size_t n, const char *sep) {
    char buf[4096];
    const size_t sep_len = strlen(sep);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (used + sep_len + ATTN_IO_FLOAT_TEXT_MAX > sizeof buf) {
            fwrite(buf, 1, used, f);
            used = 0;
        }
        if (i) {
            memcpy(buf + used, sep, sep_len);
            used += sep_len;
        }
        used += (size_t)attn_io_format_float(buf + used, x[i]);
    }
    fwrite(buf, 1, used, f);
}
