/* b64.c -- the "data_b64" tensor encoding of the weights format: base64 (RFC 4648, padded) of
 * the values as little-endian float32, whatever the host's byte order. */
#include "io_internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

size_t attn_io_b64_len(size_t n_bytes) {
    return (n_bytes + 2) / 3 * 4;
}

/* Decodes text (exactly attn_io_b64_len(4 n) characters) into dst[n]; false with the offending
 * character index in *bad. */
bool attn_io_b64_decode_floats(const char *text, size_t n, float *dst, size_t *bad) {
    size_t n_bytes = 4 * n, n_chars = attn_io_b64_len(n_bytes);
    uint32_t word = 0;
    size_t byte = 0;
    for (size_t i = 0; i < n_chars; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            v[k] = b64_value(text[i + k]);
            /* the last group of 1 or 2 bytes ends with "==" or "=" */
            bool pad = k >= 2 && 3 * (i / 4) + (size_t)k - 1 >= n_bytes;
            if (pad ? text[i + k] != '=' : v[k] < 0) {
                *bad = i + (size_t)k;
                return false;
            }
            if (pad) v[k] = 0;
        }
        uint32_t triple =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        for (int k = 0; k < 3 && byte < n_bytes; k++, byte++) {
            word |= ((triple >> (16 - 8 * k)) & 0xffu) << (8 * (byte % 4));
            if (byte % 4 == 3) {
                memcpy(&dst[byte / 4], &word, sizeof word);
                word = 0;
            }
        }
    }
    return true;
}

/* Appends the base64 of x[n] (little-endian float32) to f. */
void attn_io_b64_write_floats(FILE *f, const float *x, size_t n) {
    size_t n_bytes = 4 * n;
    unsigned char in[3];
    char out[4];
    for (size_t b = 0; b < n_bytes; b += 3) {
        size_t take = n_bytes - b < 3 ? n_bytes - b : 3;
        for (size_t k = 0; k < 3; k++) {
            size_t at = b + k;
            uint32_t u = 0;
            if (k < take) memcpy(&u, &x[at / 4], sizeof u);
            in[k] = k < take ? (unsigned char)(u >> (8 * (at % 4))) : 0;
        }
        uint32_t triple = (uint32_t)in[0] << 16 | (uint32_t)in[1] << 8 | in[2];
        for (int k = 0; k < 4; k++) out[k] = B64[(triple >> (18 - 6 * k)) & 63];
        if (take < 3) out[3] = '=';
        if (take < 2) out[2] = '=';
        fwrite(out, 1, 4, f);
    }
}
