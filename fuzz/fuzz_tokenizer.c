/* fuzz_tokenizer.c -- libFuzzer harness for the tokenizer (attn_tokenize) and the vocabulary
 * lookup (attn_vocab_id) on arbitrary bytes. Checked: no crash or undefined behaviour; the
 * ids array is written only within max_ids (it is allocated to exactly that size, so ASan
 * sees one int too far); a success gives 1..max_ids ids of real words (not [PAD]/[CLS]), and
 * the same sentence gives the same ids with any max_ids that is large enough. */
#include "fuzz_common.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Tokenizes s with an ids array of exactly max_ids ints; returns the count or -1. */
static int tokenize(const char *s, int max_ids, int *copy) {
    int *ids = max_ids > 0 ? malloc((size_t)max_ids * sizeof *ids) : NULL;
    FUZZ_CHECK(max_ids == 0 || ids);
    attn_error err;
    int n = -7;
    attn_status st = attn_tokenize(s, ids, max_ids, &n, &err);
    if (st != ATTN_OK) {
        FUZZ_CHECK(st == ATTN_ERR_VALUE && err.status == st && err.msg[0] != '\0');
        free(ids);
        return -1;
    }
    FUZZ_CHECK(n >= 1 && n <= max_ids);
    for (int i = 0; i < n; i++) {
        FUZZ_CHECK(ids[i] >= 2 && ids[i] < ATTN_VOCAB_SIZE);
        copy[i] = ids[i];
    }
    free(ids);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    FUZZ_CHECK(s);
    memcpy(s, data, size);
    s[size] = '\0';

    int full[ATTN_MAX_WORDS], small[ATTN_MAX_WORDS];
    int n = tokenize(s, ATTN_MAX_WORDS, full);
    int max_small = (int)(size % 9); /* 0..8: the limit and the error past it */
    int m = tokenize(s, max_small, small);
    if (n > 0 && n <= max_small) {
        FUZZ_CHECK(m == n && memcmp(full, small, (size_t)n * sizeof *full) == 0);
    } else {
        FUZZ_CHECK(m == -1);
    }
    int id = attn_vocab_id(s);
    FUZZ_CHECK(id >= -1 && id < ATTN_VOCAB_SIZE);
    if (id >= 0) FUZZ_CHECK(strcmp(attn_vocab_word(id), s) == 0);
    free(s);
    return 0;
}
