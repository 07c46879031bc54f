/* epoch_loop.c -- the epoch loop both model families train with (train.c, seq2seq_train.c):
 * per epoch the family's steps, its held-out score, the epoch counted, model selection (the
 * best held-out epoch's parameters, ties: the later), then its report (stats, callbacks,
 * checkpoint state). The best parameters go back into the model at the end, where the family
 * puts them (attn_epoch_ops.restore_after). */
#include "train_internal.h"

#include <math.h>
#include <string.h>

static void keep_best(const attn_epoch_ops *o, double score) {
    attn_best *b = o->best;
    if (!b->params) return;
    if (score >= (b->epoch ? b->score : -INFINITY)) { /* an accuracy is never NaN */
        b->epoch = *o->epoch;
        b->score = score;
        memcpy(b->params, o->params, o->n * sizeof(float));
    }
    if (!o->restore_after && *o->epoch == o->epochs) { /* the last epoch's kept for the state */
        memcpy(b->last, o->params, o->n * sizeof(float));
        memcpy(o->params, b->params, o->n * sizeof(float));
        b->restored = true;
    }
}

attn_status attn_epoch_loop(const attn_epoch_ops *o, attn_error *err) {
    attn_epoch_clock c = {attn_seconds(), 0, 0, 0, *o->epoch};
    attn_status st = ATTN_OK;
    bool go_on = true;
    while (st == ATTN_OK && go_on && *o->epoch < o->epochs) {
        c.t0 = attn_seconds();
        st = o->steps(o->ctx, err);
        if (st != ATTN_OK) break;
        c.t1 = attn_seconds();
        double score = NAN;
        if (o->score) st = o->score(o->ctx, &score, err);
        if (st != ATTN_OK) break;
        ++*o->epoch;
        if (o->score) keep_best(o, score);
        c.t2 = attn_seconds();
        st = o->report(o->ctx, &c, &go_on, err);
    }
    if (st == ATTN_OK && o->restore_after && *o->epoch == o->epochs && o->best->epoch > 0)
        memcpy(o->params, o->best->params, o->n * sizeof(float));
    return st;
}
