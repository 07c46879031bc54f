/* experiments_decoder_parallel.c -- `attn experiment parallel-decoder` (write-up §6): "because
 * of the causal mask, all positions of a target sentence are trained in parallel, something an
 * RNN decoder cannot do".
 *
 * A teacher-forced training step of the Transformer's decoder computes every target position at
 * once: each decoder layer is a few products over all T rows (the mask keeps row t from the
 * rows after it), so its sequential depth is the number of layers, whatever T. A GRU decoder
 * (seq2seq-gru, and seq2seq-attn, whose attention reads the previous state) computes s_t from
 * s_{t-1}: T sequential steps, even when every input word is known. Measured on freshly
 * initialised models of the default sizes (timing does not depend on training), one BLAS
 * thread, batch 1, a 10-word source and random target words of T = 1 .. 64 (the rewrite
 * task's targets have at most 4 words and the compose task is not in attn yet, so the longer
 * targets are synthetic; the decoder's position table is made long enough): the products of one
 * forward counted with the sgemm counter (the recurrent ones = the sequential steps of a GRU
 * decoder), and the time of a training step (forward + backward) per sentence: the fastest of
 * repeated runs after a warm-up (the least disturbed one on a shared machine). The number
 * compared is the time each target word adds, from 8 words to the longest: one more sequential
 * step for a GRU decoder, one more row in the same products for the Transformer. */
#include "attn_kernels.h"
#include "attn_plot.h"
#include "experiments_decoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_MODELS 3
static const char *const models[N_MODELS] = {"seq2seq-gru", "seq2seq-attn", "seq2seq-transformer"};
static const int lengths_full[] = {1, 2, 4, 8, 16, 32, 64};
static const int lengths_quick[] = {2, 8, 32};
#define MAX_LENGTHS 7
#define MAX_T       64
#define SRC_WORDS   10
#define MAX_REPS    201
/* the added time per word is measured from 8 target words on: below, the encoder's fixed cost
 * (the same 10-word source) dominates */
#define LONG_FROM 8

typedef struct step_timing {
    double seconds;   /* fastest seconds of forward + backward */
    double products;  /* sgemm calls of one forward */
    double recurrent; /* of them, recurrent (h . W_hh^T) products */
} step_timing;

typedef struct step_run {
    attn_seq2seq *m;
    const attn_s2s_batch *b;
    float *logits, *d_logits;
} step_run;

static attn_status run_forward(void *ctx, attn_error *err) {
    const step_run *s = ctx;
    return attn_seq2seq_forward(s->m, s->b, s->logits, err);
}

static attn_status run_step(void *ctx, attn_error *err) {
    const step_run *s = ctx;
    attn_status st = attn_seq2seq_forward(s->m, s->b, s->logits, err);
    return st ? st : attn_seq2seq_backward(s->m, s->b, s->d_logits, err);
}

static attn_status time_step(attn_seq2seq *m, int T, double min_total, step_timing *t,
                             attn_error *err) {
    const int Vt = attn_seq2seq_config_of(m)->tgt_vocab, S = SRC_WORDS, n = T + 1;
    int src[SRC_WORDS], dec[MAX_T + 1];
    float *logits = malloc((size_t)n * Vt * sizeof *logits);
    float *d_logits = malloc((size_t)n * Vt * sizeof *d_logits);
    double *times = malloc(MAX_REPS * sizeof *times);
    attn_status st = logits && d_logits && times
                         ? ATTN_OK
                         : attn_errorf(err, ATTN_ERR_NOMEM, "parallel-decoder: out of memory");
    attn_rng r = attn_rng_seed(1000 + (uint64_t)T);
    for (int s = 0; s < S; s++) src[s] = 2 + (int)attn_rng_below(&r, ATTN_N_WORDS);
    dec[0] = ATTN_TGT_BOS;
    for (int i = 1; i < n; i++) dec[i] = 2 + (int)attn_rng_below(&r, ATTN_N_WORDS);
    for (size_t i = 0; d_logits && i < (size_t)n * Vt; i++)
        d_logits[i] = 1e-3f * (float)(attn_rng_uniform(&r) - 0.5);
    const attn_s2s_batch b = {1, S, n, src, &S, dec, &n};
    step_run run = {m, &b, logits, d_logits};
    attn_flop_counts c = {0};
    if (!st) st = exp_count_products(run_forward, &run, &c, err); /* warm-up, counted */
    t->products = t->recurrent = 0.0;
    for (int op = 0; op < ATTN_OP_COUNT; op++) t->products += (double)c.calls[op];
    t->recurrent = (double)c.calls[ATTN_OP_RECURRENT];
    if (!st) st = attn_seq2seq_backward(m, &b, d_logits, err);
    int k = 0;
    if (!st) st = exp_time_runs(run_step, &run, min_total, MAX_REPS, times, &k, err);
    if (!st) t->seconds = times[0];
    free(logits);
    free(d_logits);
    free(times);
    return st;
}

static attn_status one_model(const attn_experiment_opts *o, int a, const double *L, int nL,
                             attn_experiment_result *r, attn_error *err) {
    attn_s2s_arch arch;
    attn_status st = attn_s2s_arch_from_name(models[a], &arch, err);
    if (st) return st;
    attn_seq2seq_config cfg = attn_seq2seq_config_default(arch);
    cfg.max_tgt_len = MAX_T + 1;
    if (o->base && arch == ATTN_S2S_TRANSFORMER) /* section 6's base Transformer */
        cfg.d_model = 512, cfg.n_heads = 8, cfg.ffn_dim = 2048, cfg.enc_layers = 6,
        cfg.dec_layers = 6;
    else if (o->base) /* GRU decoders of the same width */
        cfg.d_model = 512, cfg.hidden_size = 512;
    attn_seq2seq *m = NULL;
    st = attn_seq2seq_create(&cfg, 1, &m, err);
    double secs[MAX_LENGTHS], products[MAX_LENGTHS], steps[MAX_LENGTHS];
    double rec1 = 0.0;
    for (int i = 0; !st && i < nL; i++) {
        exp_progress(o, "parallel-decoder: %s, %d target words", models[a], (int)L[i]);
        step_timing t = {0};
        st = time_step(m, (int)L[i], o->quick ? 0.02 : o->base ? 2.0 : 0.25, &t, err);
        if (i == 0) rec1 = t.recurrent - L[0]; /* the encoder's recurrent products */
        secs[i] = 1e6 * t.seconds;
        products[i] = t.products;
        /* sequential steps of the decoder: its recurrent products (a GRU), else its layers
         * (each layer's products cover every row at once) */
        steps[i] = arch == ATTN_S2S_TRANSFORMER ? cfg.dec_layers : t.recurrent - rec1;
    }
    char key[64];
    snprintf(key, sizeof key, "%s.microseconds_per_step", models[a]);
    if (!st) st = exp_put_array(r, key, nL, secs, err);
    int from = 0;
    while (from < nL - 2 && L[from] < LONG_FROM) from++;
    snprintf(key, sizeof key, "%s.slope", models[a]);
    if (!st) st = exp_put(r, key, exp_loglog_slope(L + from, secs + from, nL - from), err);
    snprintf(key, sizeof key, "%s.microseconds_per_added_word", models[a]);
    if (!st && nL - 1 > from)
        st = exp_put(r, key, (secs[nL - 1] - secs[from]) / (L[nL - 1] - L[from]), err);
    snprintf(key, sizeof key, "%s.products_per_forward", models[a]);
    if (!st) st = exp_put_array(r, key, nL, products, err);
    snprintf(key, sizeof key, "%s.sequential_steps", models[a]);
    if (!st) st = exp_put_array(r, key, nL, steps, err);
    attn_seq2seq_free(m);
    return st;
}

attn_status exp_parallel_decoder_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                     attn_error *err) {
    const int *lengths = o->quick ? lengths_quick : lengths_full;
    const int nL = o->quick ? 3 : MAX_LENGTHS;
    double L[MAX_LENGTHS];
    for (int i = 0; i < nL; i++) L[i] = lengths[i];
    attn_status st = exp_put_array(r, "target_words", nL, L, err);
    if (!st) st = exp_put(r, "source_words", SRC_WORDS, err);
    if (!st && o->base) st = exp_put(r, "d_model", 512, err); /* --size base */
    for (int a = 0; !st && a < N_MODELS; a++) st = one_model(o, a, L, nL, r, err);
    if (st) return st;
    exp_parallel_decoder_verdict(r);
    return ATTN_OK;
}

/* holds if both GRU decoders take one sequential step per target word (steps == T at every T)
 * while the Transformer's products per forward do not grow with T, AND each target word adds
 * less time to the Transformer's training step than to both GRU decoders' (from 8 words to the
 * longest); mixed if one of the two. */
void exp_parallel_decoder_verdict(attn_experiment_result *r) {
    const attn_measure *L = attn_experiment_measure(r, "target_words");
    const attn_measure *gs = attn_experiment_measure(r, "seq2seq-gru.sequential_steps");
    const attn_measure *as = attn_experiment_measure(r, "seq2seq-attn.sequential_steps");
    const attn_measure *tp = attn_experiment_measure(r, "seq2seq-transformer.products_per_forward");
    const attn_measure *ts = attn_experiment_measure(r, "seq2seq-transformer.sequential_steps");
    bool steps_ok = L && gs && as && tp && ts && gs->n == L->n && as->n == L->n && tp->n == L->n &&
                    ts->n == L->n;
    for (int i = 0; steps_ok && i < L->n; i++)
        steps_ok = gs->values[i] == L->values[i] && as->values[i] == L->values[i] &&
                   tp->values[i] == tp->values[0];
    const double ug = exp_get(r, "seq2seq-gru.microseconds_per_added_word");
    const double ua = exp_get(r, "seq2seq-attn.microseconds_per_added_word");
    const double ut = exp_get(r, "seq2seq-transformer.microseconds_per_added_word");
    const int last = L ? L->n - 1 : 0;
    const bool cheaper = ut < fmin(ug, ua);
    exp_verdict(r,
                steps_ok && cheaper   ? ATTN_VERDICT_HOLDS
                : steps_ok || cheaper ? ATTN_VERDICT_MIXED
                                      : ATTN_VERDICT_DOES_NOT_HOLD,
                "sequential steps of the decoder at %g target words: seq2seq-gru %g, seq2seq-attn "
                "%g (%s one per word), seq2seq-transformer %g layers with %g products per forward "
                "(%s at every length); time each target word adds to a training step (from %d "
                "words on): seq2seq-gru %.1f, seq2seq-attn %.1f, seq2seq-transformer %.1f "
                "microseconds (the Transformer's %s)",
                L ? L->values[last] : NAN, gs ? gs->values[last] : NAN, as ? as->values[last] : NAN,
                steps_ok ? "each" : "not each", ts ? ts->values[last] : NAN,
                tp ? tp->values[last] : NAN, steps_ok ? "the same" : "not the same", LONG_FROM, ug,
                ua, ut, cheaper ? "lower than both" : "not lower than both");
}

attn_status exp_parallel_decoder_plot(const attn_experiment_result *r, const char *path,
                                      attn_error *err) {
    const attn_measure *L = attn_experiment_measure(r, "target_words");
    if (!L) return attn_errorf(err, ATTN_ERR_ARG, "parallel-decoder plot: no lengths");
    attn_plot_series s[N_MODELS];
    char titles[N_MODELS][128];
    int n = 0;
    for (int a = 0; a < N_MODELS; a++) {
        char key[64];
        snprintf(key, sizeof key, "%s.microseconds_per_step", models[a]);
        const attn_measure *t = attn_experiment_measure(r, key);
        snprintf(key, sizeof key, "%s.sequential_steps", models[a]);
        const attn_measure *q = attn_experiment_measure(r, key);
        if (!t || !q || t->n != L->n || q->n != L->n) continue;
        snprintf(key, sizeof key, "%s.microseconds_per_added_word", models[a]);
        snprintf(titles[n], sizeof titles[n],
                 "%s: %g sequential steps at %g words, +%.1f us per word", models[a],
                 q->values[q->n - 1], L->values[L->n - 1], exp_get(r, key));
        s[n] = (attn_plot_series){titles[n], t->n, L->values, t->values, .points = true};
        n++;
    }
    if (n == 0) return attn_errorf(err, ATTN_ERR_ARG, "parallel-decoder plot: no timings");
    const bool base = attn_experiment_measure(r, "d_model") != NULL; /* --size base */
    const attn_plot p = {.title = base ? "Teacher-forced training step per sentence at the base "
                                         "sizes (width 512), batch 1, 1 thread"
                                       : "Teacher-forced training step (forward + backward) per "
                                         "sentence, batch 1, 1 thread",
                         .xlabel = "target words (a 10-word source)",
                         .ylabel = "time per sentence (microseconds)",
                         .log_x = true,
                         .log_y = true,
                         .key = "top left",
                         .n_series = n,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}
