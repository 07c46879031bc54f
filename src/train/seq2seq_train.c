/* seq2seq_train.c -- teacher-forced training of a seq2seq model with Adam, and exact-match
 * evaluation by greedy decoding (attn_seq2seq.h).
 *
 * Each epoch shuffles the training pairs with the project PRNG (seeded from cfg.seed, the state
 * carried over epochs) and cuts the permutation into batches of batch_size pairs (the last may
 * be smaller). Each step: zero_grad, forward on [BOS] + target, mean cross-entropy over the
 * target words and [EOS] (padding would be ignored like CrossEntropyLoss(ignore_index=0); the
 * packed rows hold none), backward, NaN/Inf check, Adam step (attn_adam_step: torch.optim.Adam).
 * After each epoch the held-out pairs are decoded greedily (KV cache) and scored by exact match;
 * with keep_best the best epoch's parameters (ties: the later) are put back at the end. */
#include "attn_seq2seq.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

attn_s2s_train_config attn_s2s_train_config_default(void) {
    attn_s2s_train_config c = {0};
    c.epochs = 10;
    c.batch_size = 32;
    c.holdout = 500;
    c.keep_best = 1;
    c.seed = 1;
    c.adam = attn_adam_config_default();
    return c;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int src_len(const attn_pairs *p, int i) {
    return p->src->lengths[i];
}

/* ---- evaluation -------------------------------------------------------------------------- */

attn_status attn_seq2seq_evaluate(attn_seq2seq *m, const attn_pairs *p, int first, int n,
                                  attn_s2s_eval *out, attn_error *err) {
    memset(out, 0, sizeof *out);
    if (!p || first < 0 || n < 0 || first + n > p->src->n)
        return attn_errorf(err, ATTN_ERR_ARG, "evaluate: pairs %d..%d of %d", first, first + n,
                           p ? p->src->n : 0);
    const int max_out = attn_seq2seq_config_of(m)->max_tgt_len - 1;
    int *gen = malloc((size_t)(max_out + 1) * sizeof *gen);
    if (!gen) return attn_errorf(err, ATTN_ERR_NOMEM, "evaluate: out of memory");
    long exact = 0, right = 0, tokens = 0;
    for (int i = first; i < first + n; i++) {
        const int *tgt = p->tgt_ids + p->tgt_offsets[i], L = p->tgt_lengths[i];
        int n_out = 0;
        attn_status st = attn_seq2seq_greedy(m, p->src->ids + p->src->offsets[i], src_len(p, i),
                                             max_out, true, gen, &n_out, NULL, NULL, err);
        if (st != ATTN_OK) {
            free(gen);
            return st;
        }
        gen[n_out] = ATTN_TGT_EOS; /* the target's words then [EOS], position by position */
        bool same = n_out == L;
        for (int t = 0; t <= L; t++) {
            const int want = t < L ? tgt[t] : ATTN_TGT_EOS;
            const bool hit = t <= n_out && gen[t] == want;
            right += hit;
            same = same && hit;
        }
        tokens += L + 1;
        exact += same;
    }
    free(gen);
    out->n = n;
    out->exact = n ? (double)exact / n : NAN;
    out->token_acc = tokens ? (double)right / (double)tokens : NAN;
    return ATTN_OK;
}

/* ---- one batch -------------------------------------------------------------------------- */

typedef struct s2s_batch_buf {
    int *src, *src_len, *tgt, *tgt_len, *labels; /* [B, S], [B], [B, T], [B], [rows] */
    float *logits, *d_logits;                    /* [rows, Vt] */
    int S, T, B, rows;
} s2s_batch_buf;

/* Fills the batch of pairs order[0..B): sources, [BOS] + target words, and the labels (words
 * then [EOS]) of the packed rows. */
static void fill_batch(s2s_batch_buf *b, const attn_pairs *p, const int *order, int B) {
    b->B = B;
    b->S = b->T = 1;
    for (int k = 0; k < B; k++) {
        const int i = order[k];
        if (src_len(p, i) > b->S) b->S = src_len(p, i);
        if (p->tgt_lengths[i] + 1 > b->T) b->T = p->tgt_lengths[i] + 1;
    }
    b->rows = 0;
    for (int k = 0; k < B; k++) {
        const int i = order[k], L = p->tgt_lengths[i];
        const int *tgt = p->tgt_ids + p->tgt_offsets[i];
        memcpy(b->src + (size_t)k * b->S, p->src->ids + p->src->offsets[i],
               (size_t)src_len(p, i) * sizeof(int));
        b->src_len[k] = src_len(p, i);
        b->tgt[(size_t)k * b->T] = ATTN_TGT_BOS;
        memcpy(b->tgt + (size_t)k * b->T + 1, tgt, (size_t)L * sizeof(int));
        b->tgt_len[k] = L + 1;
        memcpy(b->labels + b->rows, tgt, (size_t)L * sizeof(int));
        b->labels[b->rows + L] = ATTN_TGT_EOS;
        b->rows += L + 1;
    }
}

static attn_status check_finite(attn_seq2seq *m, double loss, long step, attn_error *err) {
    if (!isfinite(loss))
        return attn_errorf(err, ATTN_ERR_VALUE, "training: the loss is %g at step %ld", loss, step);
    const float *g = attn_seq2seq_grads(m);
    /* one pass over the flat array first (the usual case); the tensor only for the message */
    const size_t P = attn_seq2seq_n_params(m);
    int bad = 0;
    for (size_t j = 0; j < P; j++) bad |= !(fabsf(g[j]) <= FLT_MAX); /* Inf or NaN */
    if (!bad) return ATTN_OK;
    for (size_t t = 0; t < attn_seq2seq_tensor_count(m); t++)
        for (size_t j = 0; j < attn_seq2seq_tensor_numel(m, t); j++)
            if (!isfinite(g[attn_seq2seq_tensor_offset(m, t) + j]))
                return attn_errorf(err, ATTN_ERR_VALUE,
                                   "training: the gradient of \"%s\" is not finite at step %ld",
                                   attn_seq2seq_tensor_name(m, t), step);
    return ATTN_OK;
}

/* One epoch over the shuffled pairs; fills loss and tokens. */
static attn_status run_epoch(attn_seq2seq *m, const attn_pairs *p, const int *order,
                             const attn_s2s_train_config *cfg, attn_adam *opt, s2s_batch_buf *b,
                             double *loss, long *tokens, attn_error *err) {
    const int n = p->src->n, V = attn_seq2seq_config_of(m)->tgt_vocab;
    double sum = 0.0;
    int batches = 0;
    *tokens = 0;
    for (int first = 0; first < n; first += cfg->batch_size) {
        const int B = n - first < cfg->batch_size ? n - first : cfg->batch_size;
        fill_batch(b, p, order + first, B);
        const attn_s2s_batch batch = {B, b->S, b->T, b->src, b->src_len, b->tgt, b->tgt_len};
        attn_seq2seq_zero_grad(m);
        attn_status st = attn_seq2seq_forward(m, &batch, b->logits, err);
        if (st != ATTN_OK) return st;
        memset(b->d_logits, 0, (size_t)b->rows * V * sizeof(float));
        const double l = attn_cross_entropy_forward_backward(b->d_logits, 1.0f, b->logits,
                                                             b->labels, b->rows, V, ATTN_PAD_ID);
        st = attn_seq2seq_backward(m, &batch, b->d_logits, err);
        if (st == ATTN_OK) st = check_finite(m, l, opt->step + 1, err);
        if (st != ATTN_OK) return st;
        attn_adam_step(opt, attn_seq2seq_params(m), attn_seq2seq_grads(m));
        sum += l;
        batches++;
        *tokens += b->rows;
    }
    *loss = batches ? sum / batches : NAN;
    return ATTN_OK;
}

static void batch_free(s2s_batch_buf *b) {
    free(b->src), free(b->src_len), free(b->tgt), free(b->tgt_len), free(b->labels);
    free(b->logits), free(b->d_logits);
}

static attn_status batch_alloc(s2s_batch_buf *b, const attn_pairs *p, int B, int V,
                               attn_error *err) {
    int S = 1, T = 1;
    for (int i = 0; i < p->src->n; i++) {
        if (src_len(p, i) > S) S = src_len(p, i);
        if (p->tgt_lengths[i] + 1 > T) T = p->tgt_lengths[i] + 1;
    }
    memset(b, 0, sizeof *b);
    b->src = malloc((size_t)B * S * sizeof(int));
    b->src_len = malloc((size_t)B * sizeof(int));
    b->tgt = malloc((size_t)B * T * sizeof(int));
    b->tgt_len = malloc((size_t)B * sizeof(int));
    b->labels = malloc((size_t)B * T * sizeof(int));
    b->logits = malloc((size_t)B * T * V * sizeof(float));
    b->d_logits = malloc((size_t)B * T * V * sizeof(float));
    if (!b->src || !b->src_len || !b->tgt || !b->tgt_len || !b->labels || !b->logits ||
        !b->d_logits) {
        batch_free(b);
        memset(b, 0, sizeof *b);
        return attn_errorf(err, ATTN_ERR_NOMEM, "training: out of memory for a batch");
    }
    return ATTN_OK;
}

attn_status attn_seq2seq_train(attn_seq2seq *m, const attn_pairs *train, const attn_pairs *heldout,
                               const attn_s2s_train_config *cfg, const attn_s2s_callbacks *cb,
                               attn_error *err) {
    if (!m || !train || !cfg || cfg->epochs < 0 || cfg->batch_size < 1 || cfg->holdout < 0 ||
        (cfg->holdout > 0 && (!heldout || cfg->holdout > heldout->src->n)))
        return attn_errorf(err, ATTN_ERR_ARG,
                           "training: need a model, pairs, epochs >= 0, batch_size >= 1 and at "
                           "most as many held-out pairs as the held-out set has");
    const int n = train->src->n, V = attn_seq2seq_config_of(m)->tgt_vocab;
    const size_t P = attn_seq2seq_n_params(m);
    attn_adam *opt = NULL;
    attn_status st = attn_adam_create(P, &cfg->adam, &opt, err);
    if (st != ATTN_OK) return st;
    s2s_batch_buf b;
    st = batch_alloc(&b, train, cfg->batch_size, V, err);
    int *order = malloc((size_t)n * sizeof *order);
    float *best = cfg->keep_best && cfg->holdout > 0 ? malloc(P * sizeof *best) : NULL;
    if (st == ATTN_OK && (!order || (cfg->keep_best && cfg->holdout > 0 && !best)))
        st = attn_errorf(err, ATTN_ERR_NOMEM, "training: out of memory");
    attn_rng rng = attn_rng_seed(cfg->seed);
    for (int i = 0; st == ATTN_OK && i < n; i++) order[i] = i;
    double best_exact = -1.0, t0 = now_s();
    for (int e = 0; st == ATTN_OK && e < cfg->epochs; e++) {
        attn_rng_shuffle(&rng, order, n);
        const double t_epoch = now_s();
        attn_s2s_epoch_stats es = {e + 1, cfg->epochs, 0, 0, NAN, 0, 0};
        long tokens = 0;
        st = run_epoch(m, train, order, cfg, opt, &b, &es.loss, &tokens, err);
        if (st != ATTN_OK) break;
        es.steps = opt->step;
        es.tokens_per_s = (double)tokens / (now_s() - t_epoch);
        if (cfg->holdout > 0) {
            attn_s2s_eval ev;
            st = attn_seq2seq_evaluate(m, heldout, 0, cfg->holdout, &ev, err);
            if (st != ATTN_OK) break;
            es.holdout_exact = ev.exact;
            if (best && ev.exact >= best_exact) {
                best_exact = ev.exact;
                memcpy(best, attn_seq2seq_params(m), P * sizeof *best);
            }
        }
        es.elapsed_s = now_s() - t0;
        if (e + 1 == cfg->epochs && best) memcpy(attn_seq2seq_params(m), best, P * sizeof *best);
        if (cb && cb->on_epoch && !cb->on_epoch(&es, cb->user)) break;
    }
    free(best);
    free(order);
    batch_free(&b);
    attn_adam_free(opt);
    return st;
}
