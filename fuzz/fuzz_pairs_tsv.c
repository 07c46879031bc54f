/* fuzz_pairs_tsv.c -- libFuzzer harness for the source/target pairs reader
 * (attn_pairs_read_tsv: `attn eval --data` and `attn train --data` of a seq2seq model), for both
 * tasks. Checked: no crash, leak or undefined behaviour; a failure gives a message and no
 * pairs; read pairs are consistent: 1..max_tgt target words of the target vocabulary (no [PAD],
 * [BOS], [EOS]), offsets that add up, sources of 1..max_src ids, alignments -1. */
#include "fuzz_common.h"

#include "attn_seq2seq.h"

#include <string.h>

#define MAX_SRC 80
#define MAX_TGT 15

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_pairs(const attn_pairs *p, attn_task task) {
    const attn_dataset *d = p->src;
    FUZZ_CHECK(d != NULL && d->n >= 1 && p->task == task && p->tgt_offsets[0] == 0);
    const int src_vocab = task == ATTN_TASK_COMPOSE ? ATTN_TGT_VOCAB_SIZE : ATTN_VOCAB_SIZE;
    for (int i = 0; i < d->n; i++) {
        FUZZ_CHECK(d->lengths[i] >= 1 && d->lengths[i] <= MAX_SRC);
        FUZZ_CHECK(d->offsets[i + 1] - d->offsets[i] == (size_t)d->lengths[i]);
        for (int j = 0; j < d->lengths[i]; j++) {
            const int id = d->ids[d->offsets[i] + (size_t)j];
            FUZZ_CHECK(id >= 1 && id < src_vocab);
        }
        FUZZ_CHECK(p->tgt_lengths[i] >= 1 && p->tgt_lengths[i] <= MAX_TGT);
        FUZZ_CHECK(p->tgt_offsets[i + 1] - p->tgt_offsets[i] == (size_t)p->tgt_lengths[i]);
        for (size_t k = p->tgt_offsets[i]; k < p->tgt_offsets[i + 1]; k++) {
            const int t = p->tgt_ids[k];
            FUZZ_CHECK(t > 0 && t < ATTN_TGT_VOCAB_SIZE && t != ATTN_TGT_BOS && t != ATTN_TGT_EOS);
            FUZZ_CHECK(p->align[k] == -1);
        }
        FUZZ_CHECK(p->tgt_texts[i] != NULL && strlen(p->tgt_texts[i]) > 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_input_path(data, size);
    for (int t = 0; t < 2; t++) {
        const attn_task task = t ? ATTN_TASK_COMPOSE : ATTN_TASK_REWRITE;
        attn_pairs *p = (attn_pairs *)&p;
        attn_error err;
        attn_status st = attn_pairs_read_tsv(path, task, MAX_SRC, MAX_TGT, &p, &err);
        if (st != ATTN_OK) {
            FUZZ_CHECK(p == NULL && err.status == st && err.msg[0] != '\0');
            continue;
        }
        check_pairs(p, task);
        attn_pairs_free(p);
    }
    return 0;
}
