/* fuzz_tokenizer.c -- libFuzzer harness for the tokenizer (attn_tokenize), the vocabulary
 * lookup (attn_vocab_id) and the unknown-word suggestions (attn_vocab_suggest) on arbitrary
 * bytes. Checked: no crash or undefined behaviour; the ids array is written only within
 * max_ids (it is allocated to exactly that size, so ASan sees one int too far); a success gives
 * 1..max_ids ids of real words (not [PAD]/[CLS]), and the same sentence gives the same ids with
 * any max_ids that is large enough; the suggestions name the tokenizer's first unknown word
 * (none when every word is known), in increasing positions, each class word a word of its
 * group's category. */
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

/* The suggestions for s agree with the tokenizer's error (or success). */
static void check_suggestions(const char *s) {
    attn_suggestion sg[4];
    int found = -1, ids[ATTN_MAX_WORDS], n = 0;
    FUZZ_CHECK(attn_vocab_suggest(attn_vocab_builtin(), s, sg, 4, &found, NULL) == ATTN_OK);
    attn_error err;
    const attn_status st = attn_tokenize(s, ids, ATTN_MAX_WORDS, &n, &err);
    if (st == ATTN_OK || err.code != ATTN_CODE_UNKNOWN_WORD) {
        FUZZ_CHECK(found == 0);
        return;
    }
    FUZZ_CHECK(found >= 1 && sg[0].position == err.position && strcmp(sg[0].word, err.token) == 0);
    for (int i = 0; i < found && i < 4; i++) {
        FUZZ_CHECK(i == 0 || sg[i].position > sg[i - 1].position);
        FUZZ_CHECK(sg[i].word[0] != '\0' && sg[i].nearest != NULL);
        FUZZ_CHECK(sg[i].place ? sg[i].n_groups >= 1 && sg[i].n_groups <= ATTN_SUGGEST_GROUPS
                               : sg[i].n_groups == 0);
        for (int g = 0; g < sg[i].n_groups; g++) {
            FUZZ_CHECK(sg[i].groups[g].n >= 1 && sg[i].groups[g].n <= ATTN_SUGGEST_GROUP_MAX);
            for (int w = 0; w < sg[i].groups[g].n; w++) {
                const int id = attn_vocab_id(sg[i].groups[g].words[w]);
                FUZZ_CHECK(id >= 2 &&
                           strcmp(attn_vocab_category(id), sg[i].groups[g].category) == 0);
            }
        }
    }
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
    check_suggestions(s);
    int id = attn_vocab_id(s);
    FUZZ_CHECK(id >= -1 && id < ATTN_VOCAB_SIZE);
    if (id >= 0) FUZZ_CHECK(strcmp(attn_vocab_word(id), s) == 0);
    free(s);
    return 0;
}
