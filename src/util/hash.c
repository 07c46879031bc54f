/* hash.c -- FNV-1a (Fowler, Noll, Vo), the one hash of attn: the checkpoint's data fingerprint,
 * the generator's sentence set and the vocabulary's token table; and attn_index, the one hash
 * table (open addressing with linear probing over the caller's entries). */
#include "attn_util.h"

#include <string.h>

uint64_t attn_hash_step(uint64_t h, uint64_t unit) {
    return (h ^ unit) * 0x100000001b3ull; /* the 64-bit FNV prime */
}

uint64_t attn_hash_string(const char *s) {
    uint64_t h = ATTN_HASH_BASIS;
    for (; *s; s++) h = attn_hash_step(h, (unsigned char)*s);
    return h;
}

size_t attn_index_slot_count(size_t n) {
    size_t slots = ATTN_INDEX_SLOTS_MIN;
    while (slots < 2 * n) slots *= 2;
    return slots;
}

attn_index attn_index_init(int *slots, size_t n_slots) {
    memset(slots, 0, n_slots * sizeof *slots);
    return (attn_index){slots, n_slots - 1};
}

size_t attn_index_start(const attn_index *ix, uint64_t hash) {
    return (size_t)hash & ix->mask; /* the mask keeps the low bits */
}

size_t attn_index_next(const attn_index *ix, size_t s) {
    return (s + 1) & ix->mask;
}

void attn_index_put(attn_index *ix, uint64_t hash, int entry) {
    size_t s = attn_index_start(ix, hash);
    while (ix->slots[s]) s = attn_index_next(ix, s);
    ix->slots[s] = entry + 1;
}
