/* hash.c -- FNV-1a (Fowler, Noll, Vo), the one hash of attn: the checkpoint's data fingerprint,
 * the generator's sentence set and the vocabulary's token table. */
#include "attn_util.h"

uint64_t attn_hash_step(uint64_t h, uint64_t unit) {
    return (h ^ unit) * 0x100000001b3ull; /* the 64-bit FNV prime */
}

uint64_t attn_hash_string(const char *s) {
    uint64_t h = ATTN_HASH_BASIS;
    for (; *s; s++) h = attn_hash_step(h, (unsigned char)*s);
    return h;
}
