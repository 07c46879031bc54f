/* pairs.c -- what both seq2seq tasks share (attn_seq2seq.h): the target vocabulary (the 89
 * words, then [BOS], [EOS], positive, negative), the task names, and freeing a set of pairs.
 * rewrite.c and compose.c make the pairs on top of it. */
#include "attn_seq2seq.h"
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const tgt_extra[] = {"[BOS]", "[EOS]", "positive", "negative"};

const char *attn_tgt_vocab_token(int id) {
    if (id >= 0 && id < ATTN_VOCAB_SIZE) return attn_vocab_word(id);
    if (id >= ATTN_VOCAB_SIZE && id < ATTN_TGT_VOCAB_SIZE) return tgt_extra[id - ATTN_VOCAB_SIZE];
    return NULL;
}

int attn_tgt_vocab_id(const char *token) {
    if (!token) return -1;
    for (int i = 0; i < ATTN_TGT_VOCAB_SIZE - ATTN_VOCAB_SIZE; i++)
        if (strcmp(token, tgt_extra[i]) == 0) return ATTN_VOCAB_SIZE + i;
    return attn_vocab_id(token);
}

const char *attn_task_name(attn_task t) {
    return t == ATTN_TASK_REWRITE ? "rewrite" : t == ATTN_TASK_COMPOSE ? "compose" : "unknown";
}

attn_status attn_task_from_name(const char *name, attn_task *out, attn_error *err) {
    for (int t = ATTN_TASK_REWRITE; t <= ATTN_TASK_COMPOSE; t++)
        if (name && strcmp(name, attn_task_name((attn_task)t)) == 0) {
            *out = (attn_task)t;
            return ATTN_OK;
        }
    return attn_errorf(err, ATTN_ERR_ARG, "unknown task '%s'; expected rewrite or compose",
                       name ? name : "(null)");
}

void attn_pairs_free(attn_pairs *p) {
    if (!p) return;
    if (p->tgt_texts && p->src)
        for (int i = 0; i < p->src->n; i++) free(p->tgt_texts[i]);
    free(p->tgt_texts);
    attn_dataset_free(p->src);
    free(p->tgt_lengths);
    free(p->tgt_offsets);
    free(p->tgt_ids);
    free(p->align);
    free(p);
}
