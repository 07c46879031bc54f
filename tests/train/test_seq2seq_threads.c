/* test_seq2seq_threads.c -- seq2seq training on a pool (attn_seq2seq_train_pool,
 * src/train/seq2seq_parallel.c): for each architecture the trained parameters, Adam's moments
 * and the printed losses are the same bytes with no pool and with pools of 1, 2 and 3 threads,
 * for batches of 32 (two micro-batches), 40 (the last micro-batch smaller) and 10 (one
 * micro-batch smaller than ATTN_MICRO_BATCH); a step's micro-batched gradient and loss are the
 * whole batch's (the same quantity summed in another order: within a tolerance that a
 * micro-batch's own 1/n in place of the batch's would break); a run checkpointed after one epoch
 * on one thread and resumed on two ends with the bytes of two epochs on two threads; a NaN
 * parameter is caught by the summed gradient's check and stops the training at step 1. */
#include "test_util.h"
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static attn_seq2seq *make(attn_s2s_arch arch) {
    attn_seq2seq_config c = attn_seq2seq_config_default(arch);
    c.d_model = 16;
    c.n_heads = 2;
    c.ffn_dim = 16;
    c.enc_layers = 1;
    c.dec_layers = 1;
    c.hidden_size = 16;
    attn_error err;
    attn_seq2seq *m = NULL;
    ck_assert_msg(attn_seq2seq_create(&c, 7, &m, &err) == ATTN_OK, "%s", err.msg);
    return m;
}

static attn_pool *pool_of(int n) { /* 0: no pool (NULL) */
    attn_pool *p = NULL;
    attn_error err;
    if (n == 0) return NULL;
    ck_assert_msg(attn_pool_create(n, &p, &err) == ATTN_OK, "%s", err.msg);
    return p;
}

#define MAX_EPOCHS 2
typedef struct run_out {
    double loss[MAX_EPOCHS]; /* what attn train prints, before rounding */
    int epochs;
    float *params, *m, *v; /* the last state's (copies) */
    size_t P;
} run_out;

static bool on_epoch(const attn_s2s_epoch_stats *st, void *user) {
    run_out *o = user;
    ck_assert_int_lt(o->epochs, MAX_EPOCHS);
    o->loss[o->epochs++] = st->loss;
    return true;
}

static float *copy_floats(const float *x, size_t n) {
    float *y = malloc(n * sizeof *y);
    ck_assert_ptr_nonnull(y);
    memcpy(y, x, n * sizeof *y);
    return y;
}

/* The state after the run's last epoch (and, with keep, a deep copy to resume from). */
typedef struct last_state {
    run_out *o;
    attn_s2s_train_state *keep; /* NULL or filled after epoch 1 */
} last_state;

static attn_status on_state(const attn_s2s_train_state *st, void *user, attn_error *err) {
    (void)err;
    last_state *l = user;
    run_out *o = l->o;
    free(o->params), free(o->m), free(o->v);
    o->P = st->n_params;
    o->params = copy_floats(st->params, st->n_params);
    o->m = copy_floats(st->m, st->n_params);
    o->v = copy_floats(st->v, st->n_params);
    if (l->keep) {
        *l->keep = *st;
        l->keep->params = copy_floats(st->params, st->n_params);
        l->keep->m = copy_floats(st->m, st->n_params);
        l->keep->v = copy_floats(st->v, st->n_params);
        l->keep->best_params = st->best_params ? copy_floats(st->best_params, st->n_params) : NULL;
    }
    return ATTN_OK;
}

static run_out train(attn_s2s_arch arch, const attn_pairs *pairs, const attn_pairs *held, int B,
                     int epochs, int threads, const attn_s2s_train_state *from,
                     attn_s2s_train_state *keep) {
    attn_seq2seq *m = make(arch);
    attn_s2s_train_config tc = attn_s2s_train_config_default();
    tc.epochs = epochs;
    tc.batch_size = B;
    tc.holdout = held ? 8 : 0;
    tc.adam.lr = 3e-3;
    run_out o = {{0}, 0, NULL, NULL, NULL, 0};
    last_state l = {&o, keep};
    const attn_s2s_callbacks cb = {on_epoch, &o};
    const attn_s2s_resume rs = {from, on_state, &l};
    attn_pool *pool = pool_of(threads);
    attn_error err;
    ck_assert_msg(attn_seq2seq_train_pool(m, pairs, held, &tc, &cb, &rs, pool, &err) == ATTN_OK,
                  "%s", err.msg);
    attn_pool_free(pool);
    attn_seq2seq_free(m);
    return o;
}

static void run_free(run_out *o) {
    free(o->params), free(o->m), free(o->v);
}

static void assert_same_run(const run_out *a, const run_out *b, const char *what) {
    ck_assert_int_eq(a->epochs, b->epochs);
    for (int e = 0; e < a->epochs; e++)
        ck_assert_msg(memcmp(&a->loss[e], &b->loss[e], sizeof(double)) == 0,
                      "%s: epoch %d loss %.17g vs %.17g", what, e + 1, a->loss[e], b->loss[e]);
    ck_assert_uint_eq(a->P, b->P);
    tu_assert_identical(what, a->params, b->params, a->P);
    tu_assert_identical("Adam m", a->m, b->m, a->P);
    tu_assert_identical("Adam v", a->v, b->v, a->P);
}

START_TEST(test_same_bytes_for_every_pool) {
    const attn_s2s_arch arch = (attn_s2s_arch)_i;
    const int n_pairs = tu_small() ? 100 : 300;
    attn_error err;
    attn_pairs *pairs = NULL, *held = NULL;
    ck_assert_int_eq(
        attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, n_pairs, 2, &pairs, &err), ATTN_OK);
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_HOLDOUT, 8, 2, &held, &err),
                     ATTN_OK);
    static const int batches[] = {32, 40, 10};
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        run_out none = train(arch, pairs, held, batches[b], 2, 0, NULL, NULL);
        ck_assert(isfinite(none.loss[0]) && none.loss[1] < none.loss[0]); /* it learns */
        for (int t = 1; t <= 3; t++) {
            char what[96];
            snprintf(what, sizeof what, "%s B=%d, %d-thread pool vs none", attn_s2s_arch_name(arch),
                     batches[b], t);
            run_out o = train(arch, pairs, held, batches[b], 2, t, NULL, NULL);
            assert_same_run(&o, &none, what);
            run_free(&o);
        }
        printf("%s B=%d: losses %.6f %.6f, the same bytes for no pool and 1-3 threads\n",
               attn_s2s_arch_name(arch), batches[b], none.loss[0], none.loss[1]);
        run_free(&none);
    }
    attn_pairs_free(pairs);
    attn_pairs_free(held);
}
END_TEST

/* ---- one step against the whole batch --------------------------------------------------- */

typedef struct batch_buf {
    int src[40 * 64], src_len[40], tgt[40 * 64], tgt_len[40], labels[40 * 64];
    attn_s2s_batch b;
    int rows;
} batch_buf;

/* pairs [0, B) as a training batch: sources, [BOS] + target, labels (target then [EOS]) */
static void fill(batch_buf *x, const attn_pairs *p, int B) {
    int S = 1, T = 1;
    for (int i = 0; i < B; i++) {
        if (p->src->lengths[i] > S) S = p->src->lengths[i];
        if (p->tgt_lengths[i] + 1 > T) T = p->tgt_lengths[i] + 1;
    }
    ck_assert(B <= 40 && S <= 64 && T <= 64);
    memset(x->src, 0, sizeof x->src);
    memset(x->tgt, 0, sizeof x->tgt);
    x->rows = 0;
    for (int i = 0; i < B; i++) {
        const int L = p->tgt_lengths[i];
        const int *tgt = p->tgt_ids + p->tgt_offsets[i];
        memcpy(x->src + i * S, p->src->ids + p->src->offsets[i],
               (size_t)p->src->lengths[i] * sizeof(int));
        x->src_len[i] = p->src->lengths[i];
        x->tgt[i * T] = ATTN_TGT_BOS;
        memcpy(x->tgt + i * T + 1, tgt, (size_t)L * sizeof(int));
        x->tgt_len[i] = L + 1;
        memcpy(x->labels + x->rows, tgt, (size_t)L * sizeof(int));
        x->labels[x->rows + L] = ATTN_TGT_EOS;
        x->rows += L + 1;
    }
    x->b = (attn_s2s_batch){B, S, T, x->src, x->src_len, x->tgt, x->tgt_len};
}

START_TEST(test_step_is_the_whole_batch_gradient) {
    const attn_s2s_arch arch = (attn_s2s_arch)_i;
    attn_error err;
    attn_pairs *pairs = NULL;
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, 40, 5, &pairs, &err),
                     ATTN_OK);
    static batch_buf x;
    fill(&x, pairs, 40); /* micro-batches of 16, 16 and 8 pairs */
    attn_seq2seq *m = make(arch);
    const size_t P = attn_seq2seq_n_params(m);
    const int V = attn_seq2seq_config_of(m)->tgt_vocab;
    float *logits = malloc((size_t)x.rows * V * sizeof *logits);
    float *d = calloc((size_t)x.rows * V, sizeof *d);
    ck_assert(logits && d);
    /* the whole batch in one forward and backward, the plain mean */
    attn_seq2seq_zero_grad(m);
    ck_assert(attn_seq2seq_forward(m, &x.b, logits, &err) == ATTN_OK);
    const double whole_loss =
        attn_cross_entropy_forward_backward(d, 1.0f, logits, x.labels, x.rows, V, ATTN_PAD_ID);
    ck_assert(attn_seq2seq_backward(m, &x.b, d, &err) == ATTN_OK);
    float *whole = copy_floats(attn_seq2seq_grads(m), P);
    float *first = NULL;
    for (int threads = 0; threads <= 2; threads += 2) {
        attn_pool *pool = pool_of(threads);
        attn_s2s_replicas r = {0};
        double loss = NAN;
        bool finite = false;
        ck_assert_msg(attn_s2s_forward_backward(m, &r, pool, &x.b, x.labels, logits, d, &loss,
                                                &finite, &err) == ATTN_OK,
                      "%s", err.msg);
        ck_assert(finite);
        ck_assert_msg(fabs(loss - whole_loss) <= 1e-6 * whole_loss, "loss %.17g vs whole %.17g",
                      loss, whole_loss);
        float gmax = 0;
        for (size_t i = 0; i < P; i++) gmax = fabsf(whole[i]) > gmax ? fabsf(whole[i]) : gmax;
        ck_assert(gmax > 0);
        /* another summation order: elements near zero judged against 1e-3 of the largest */
        tu_assert_close("micro-batched vs whole-batch gradient", attn_seq2seq_grads(m), whole, P,
                        1e-3, 1e-3 * gmax);
        if (!first)
            first = copy_floats(attn_seq2seq_grads(m), P);
        else
            tu_assert_identical("the step's gradient, 2 threads vs none", attn_seq2seq_grads(m),
                                first, P);
        attn_s2s_replicas_free(&r);
        attn_pool_free(pool);
    }
    free(first);
    free(whole);
    free(logits);
    free(d);
    attn_seq2seq_free(m);
    attn_pairs_free(pairs);
}
END_TEST

START_TEST(test_resume_on_another_thread_count) {
    attn_error err;
    attn_pairs *pairs = NULL, *held = NULL;
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, 120, 3, &pairs, &err),
                     ATTN_OK);
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_HOLDOUT, 8, 3, &held, &err),
                     ATTN_OK);
    attn_s2s_train_state one = {0};
    run_out first = train(ATTN_S2S_TRANSFORMER, pairs, held, 40, 1, 1, NULL, &one);
    ck_assert_int_eq(one.epoch, 1);
    run_out rest = train(ATTN_S2S_TRANSFORMER, pairs, held, 40, 2, 2, &one, NULL);
    run_out whole = train(ATTN_S2S_TRANSFORMER, pairs, held, 40, 2, 2, NULL, NULL);
    ck_assert_int_eq(rest.epochs, 1);
    ck_assert(memcmp(&rest.loss[0], &whole.loss[1], sizeof(double)) == 0);
    rest.loss[1] = rest.loss[0], rest.loss[0] = first.loss[0], rest.epochs = 2;
    assert_same_run(&rest, &whole, "1 epoch on 1 thread + 1 on 2 vs 2 on 2");
    ck_assert(memcmp(one.params, whole.params, whole.P * sizeof(float)) != 0); /* it moved */
    attn_s2s_train_state_clear(&one);
    run_free(&first);
    run_free(&rest);
    run_free(&whole);
    attn_pairs_free(pairs);
    attn_pairs_free(held);
}
END_TEST

START_TEST(test_non_finite_stops_training) {
    attn_error err;
    attn_pairs *pairs = NULL;
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, 40, 5, &pairs, &err),
                     ATTN_OK);
    static batch_buf x;
    fill(&x, pairs, 40);
    for (int threads = 0; threads <= 2; threads += 2) {
        attn_seq2seq *m = make(ATTN_S2S_TRANSFORMER);
        const int V = attn_seq2seq_config_of(m)->tgt_vocab;
        float *logits = malloc((size_t)x.rows * V * sizeof *logits);
        float *d = malloc((size_t)x.rows * V * sizeof *d);
        ck_assert(logits && d);
        attn_pool *pool = pool_of(threads);
        attn_s2s_replicas r = {0};
        double loss = 0;
        bool finite = true;
        ck_assert(attn_s2s_forward_backward(m, &r, pool, &x.b, x.labels, logits, d, &loss, &finite,
                                            &err) == ATTN_OK);
        ck_assert(finite && isfinite(loss)); /* the check can say yes */
        attn_seq2seq_params(m)[attn_seq2seq_n_params(m) / 2] = NAN;
        ck_assert(attn_s2s_forward_backward(m, &r, pool, &x.b, x.labels, logits, d, &loss, &finite,
                                            &err) == ATTN_OK);
        ck_assert_msg(!finite, "%d threads: a NaN parameter left the gradient finite", threads);
        attn_s2s_train_config tc = attn_s2s_train_config_default();
        tc.epochs = 1;
        tc.holdout = 0;
        ck_assert_int_eq(attn_seq2seq_train_pool(m, pairs, NULL, &tc, NULL, NULL, pool, &err),
                         ATTN_ERR_VALUE);
        ck_assert_msg(strstr(err.msg, "at step 1"), "%s", err.msg);
        attn_s2s_replicas_free(&r);
        attn_pool_free(pool);
        free(logits);
        free(d);
        attn_seq2seq_free(m);
    }
    attn_pairs_free(pairs);
}
END_TEST

int main(void) {
    Suite *s = suite_create("seq2seq_threads");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_same_bytes_for_every_pool, ATTN_S2S_TRANSFORMER,
                        ATTN_S2S_ATTN + 1);
    tcase_add_loop_test(tc, test_step_is_the_whole_batch_gradient, ATTN_S2S_TRANSFORMER,
                        ATTN_S2S_ATTN + 1);
    tcase_add_test(tc, test_resume_on_another_thread_count);
    tcase_add_test(tc, test_non_finite_stops_training);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
