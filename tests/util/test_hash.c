/* test_hash.c -- FNV-1a against the published 64-bit test vectors, and attn_index (the one hash
 * table) against a linear scan: every key put is found as its entry, keys not put are not,
 * under colliding hashes and wrapping probes, at the half-full bound. */
#include "test_util.h"

#include <stdlib.h>

START_TEST(test_fnv1a_vectors) {
    /* FNV-1a 64-bit of "" and "a" and "foobar" (the reference test suite's values) */
    ck_assert_uint_eq(attn_hash_string(""), 0xcbf29ce484222325ull);
    ck_assert_uint_eq(attn_hash_string("a"), 0xaf63dc4c8601ec8cull);
    ck_assert_uint_eq(attn_hash_string("foobar"), 0x85944171f73967e8ull);
}
END_TEST

/* Entry i has key keys[i]; the hash is the key with few bits (many collisions). */
static int find(const attn_index *ix, const int *keys, int key) {
    for (size_t s = attn_index_start(ix, (uint64_t)key % 7); ix->slots[s];
         s = attn_index_next(ix, s))
        if (keys[ix->slots[s] - 1] == key) return ix->slots[s] - 1;
    return -1;
}

START_TEST(test_index_against_scan) {
    for (size_t n = 0; n <= 40; n++) {
        const size_t n_slots = attn_index_slot_count(n);
        ck_assert(n_slots >= 2 * n && n_slots >= ATTN_INDEX_SLOTS_MIN &&
                  (n_slots & (n_slots - 1)) == 0);
        int *slots = malloc(n_slots * sizeof *slots);
        int *keys = malloc((n + 1) * sizeof *keys);
        ck_assert(slots && keys);
        for (size_t i = 0; i < n_slots; i++) slots[i] = -5; /* init must clear */
        attn_index ix = attn_index_init(slots, n_slots);
        for (size_t i = 0; i < n; i++) {
            keys[i] = (int)(i * 37 % 101);
            attn_index_put(&ix, (uint64_t)keys[i] % 7, (int)i);
        }
        for (int key = 0; key < 101; key++) {
            int want = -1;
            for (size_t i = 0; i < n && want < 0; i++)
                if (keys[i] == key) want = (int)i;
            ck_assert_int_eq(find(&ix, keys, key), want);
        }
        free(slots);
        free(keys);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("util/hash");
    TCase *tc = tcase_create("hash");
    tcase_add_test(tc, test_fnv1a_vectors);
    tcase_add_test(tc, test_index_against_scan);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
