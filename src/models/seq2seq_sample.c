/* seq2seq_sample.c -- sampling for seq2seq models (attn_seq2seq.h): temperature, top-k and top-p
 * (nucleus) on the project's splitmix64 generator, every step in double in a fixed order, so that
 * tools/seq2seq_models.sample (the same steps in Python floats, the same generator in Python
 * integers) draws the same tokens from the same logits.
 *
 * One step, logits x[V] (float):
 *   1. z_j = x_j / temperature (double);
 *   2. tokens ordered by z (higher first), ties by id (lower first);
 *   3. top-k: the first k of that order (k = 0: all);
 *   4. p_j = exp(z_j - z_first) / s, s the sum of exp(z_j - z_first) over the kept tokens in order;
 *   5. top-p (0 < top_p < 1): the shortest prefix of the order whose running sum of p reaches
 *      top_p is kept;
 *   6. u = uniform(rng) * (the kept p's sum, in order); the first kept token whose running sum of
 *      p exceeds u is drawn (the last kept one if rounding leaves none). */
#include "seq2seq_internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct sampler {
    attn_s2s_sampling cfg;
    attn_rng rng;
    double *z, *p; /* [V] */
    int *order;    /* [V] */
} sampler;

/* qsort takes no context: the keys of the calling thread's current step */
static _Thread_local const double *tl_keys;

static int by_z(const void *a, const void *b) {
    const int i = *(const int *)a, j = *(const int *)b;
    if (tl_keys[i] != tl_keys[j]) return tl_keys[i] > tl_keys[j] ? -1 : 1;
    return (i > j) - (i < j);
}

static int choose_sample(void *ctx, const float *x, int V) {
    sampler *s = ctx;
    for (int j = 0; j < V; j++) {
        s->z[j] = (double)x[j] / s->cfg.temperature;
        s->order[j] = j;
    }
    tl_keys = s->z;
    qsort(s->order, (size_t)V, sizeof *s->order, by_z);
    int n = s->cfg.top_k > 0 && s->cfg.top_k < V ? s->cfg.top_k : V;
    const double top = s->z[s->order[0]];
    double sum = 0.0;
    for (int r = 0; r < n; r++) sum += (s->p[r] = exp(s->z[s->order[r]] - top));
    for (int r = 0; r < n; r++) s->p[r] /= sum;
    if (s->cfg.top_p > 0.0 && s->cfg.top_p < 1.0) {
        double run = 0.0;
        int keep = 0;
        while (keep < n && run < s->cfg.top_p) run += s->p[keep++];
        n = keep;
    }
    double kept = 0.0;
    for (int r = 0; r < n; r++) kept += s->p[r];
    const double u = attn_rng_uniform(&s->rng) * kept;
    double run = 0.0;
    for (int r = 0; r < n; r++) {
        run += s->p[r];
        if (u < run) return s->order[r];
    }
    return s->order[n - 1];
}

attn_status attn_seq2seq_sample(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                                const attn_s2s_sampling *cfg, int *out, int *n_out,
                                float *step_logits, int *n_steps, attn_error *err) {
    if (!cfg || !(cfg->temperature > 0.0) || !isfinite(cfg->temperature) || cfg->top_k < 0 ||
        !(cfg->top_p >= 0.0 && cfg->top_p <= 1.0))
        return attn_errorf(err, ATTN_ERR_ARG,
                           "sampling: temperature > 0, top_k >= 0 and top_p in [0, 1] expected");
    attn_status st = attn_seq2seq_check_decode(m, src, n_src, max_out, out, n_out, err);
    if (st != ATTN_OK) return st;
    const int V = m->cfg.tgt_vocab;
    sampler s = {*cfg, attn_rng_seed(cfg->seed), malloc((size_t)V * sizeof(double)),
                 malloc((size_t)V * sizeof(double)), malloc((size_t)V * sizeof(int))};
    if (!s.z || !s.p || !s.order)
        st = attn_errorf(err, ATTN_ERR_NOMEM, "sampling: out of memory");
    else {
        const attn_s2s_chooser ch = {choose_sample, &s};
        st = m->vt->decode(m, src, n_src, max_out, cache, &ch, out, n_out, step_logits, n_steps,
                           err);
    }
    free(s.z), free(s.p), free(s.order);
    return st;
}
