/* fuzz_tsv.c -- libFuzzer harness for the TSV reader (attn_dataset_read_tsv). Checked: no
 * crash, leak or undefined behaviour; a failure gives a message and no data set; a data set
 * is consistent (offsets, lengths, labels, ids of real words) and each stored text tokenizes
 * back to its ids. */
#include "fuzz_common.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_dataset(const attn_dataset *d) {
    FUZZ_CHECK(d->n >= 1);
    FUZZ_CHECK(d->offsets[0] == 0);
    for (int i = 0; i < d->n; i++) {
        FUZZ_CHECK(d->labels[i] == 0 || d->labels[i] == 1);
        FUZZ_CHECK(d->lengths[i] >= 1 && d->lengths[i] <= ATTN_MAX_WORDS);
        FUZZ_CHECK(d->offsets[i + 1] - d->offsets[i] == (size_t)d->lengths[i]);
        const int *ids = d->ids + d->offsets[i];
        for (int j = 0; j < d->lengths[i]; j++) FUZZ_CHECK(ids[j] >= 2 && ids[j] < ATTN_VOCAB_SIZE);
        int again[ATTN_MAX_WORDS], n = 0;
        attn_error err;
        FUZZ_CHECK(attn_tokenize(d->texts[i], again, ATTN_MAX_WORDS, &n, &err) == ATTN_OK);
        FUZZ_CHECK(n == d->lengths[i] && memcmp(again, ids, (size_t)n * sizeof *ids) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    attn_dataset *d = NULL;
    attn_error err;
    attn_status st = attn_dataset_read_tsv(fuzz_input_path(data, size), &d, &err);
    if (st != ATTN_OK) {
        FUZZ_CHECK(d == NULL && err.status == st && err.msg[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(d != NULL);
    check_dataset(d);
    attn_dataset_free(d);
    return 0;
}
