/* experiments_decoder_cache.c -- `attn experiment kv-cache` (write-up §6, docs/decoder.md "The
 * KV cache"): the cache changes bits, not tokens.
 *
 * Greedy decoding with the KV cache computes one new decoder row per step from the keys and
 * values kept so far; without it the decoder recomputes [BOS] + the words so far at every step
 * (PyTorch's nn.Transformer loop, bit for bit). The two multiply matrices of different shapes,
 * and OpenBLAS rounds a row by the shape of its GEMM, so the logits may differ in their last
 * bits; the claim is that the chosen tokens do not, and that the cache is faster. Measured with
 * the trained seq2seq-transformer(s) over the four rewrite test sets: attn_seq2seq_greedy with
 * cache true and false on every source (one after the other, each timed), every step's logits
 * compared (ULPs), the output sequences compared, the time summed. */
#include "attn_plot.h"
#include "experiments_decoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAME_OK    0.999 /* "not tokens": >= 99.9 % of the output sequences identical */
#define SPEEDUP_OK 1.2   /* "faster": the cached decoding >= 1.2x the recomputing one */
#define N_BUCKETS  6
static const char *const bucket_names[N_BUCKETS] = {"0", "1", "2-4", "5-16", "17-64", "> 64"};
static int bucket_of(uint32_t ulp) {
    return ulp == 0 ? 0 : ulp == 1 ? 1 : ulp <= 4 ? 2 : ulp <= 16 ? 3 : ulp <= 64 ? 4 : 5;
}

static int cmp_u32(const void *a, const void *b) {
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

typedef struct cache_stats {
    double sources, same_output, logits, identical, max_abs;
    double seconds[2]; /* cached, recomputed */
    double tokens;     /* generated with the cache, [EOS] included */
    double bucket[N_BUCKETS];
    uint32_t *ulps; /* [n_ulps] */
    size_t n_ulps, cap_ulps;
} cache_stats;

static attn_status push_ulp(cache_stats *s, uint32_t u, attn_error *err) {
    if (s->n_ulps == s->cap_ulps) {
        const size_t cap = s->cap_ulps ? 2 * s->cap_ulps : 65536;
        uint32_t *p = realloc(s->ulps, cap * sizeof *p);
        if (!p) return attn_errorf(err, ATTN_ERR_NOMEM, "kv-cache: out of memory for ULPs");
        s->ulps = p, s->cap_ulps = cap;
    }
    s->ulps[s->n_ulps++] = u;
    s->bucket[bucket_of(u)]++;
    return ATTN_OK;
}

/* Both decodings of one source, compared into s. buf: 2 x [max_out + 1, Vt] logits. */
static attn_status one_source(attn_seq2seq *m, const int *src, int n_src, float *buf,
                              cache_stats *s, attn_error *err) {
    const attn_seq2seq_config *c = attn_seq2seq_config_of(m);
    const int Vt = c->tgt_vocab, max_out = c->max_tgt_len - 1;
    int out[2][ATTN_S2S_MAX_TGT], n_out[2], steps[2];
    float *logits[2] = {buf, buf + (size_t)(max_out + 1) * Vt};
    for (int k = 0; k < 2; k++) {
        const double t0 = attn_seconds();
        attn_status st = attn_seq2seq_greedy(m, src, n_src, max_out, k == 0, out[k], &n_out[k],
                                             logits[k], &steps[k], err);
        s->seconds[k] += attn_seconds() - t0;
        if (st != ATTN_OK) return st;
    }
    s->sources++;
    s->tokens += steps[0];
    s->same_output +=
        n_out[0] == n_out[1] && !memcmp(out[0], out[1], (size_t)n_out[0] * sizeof(int));
    const int n = steps[0] < steps[1] ? steps[0] : steps[1];
    for (size_t i = 0; i < (size_t)n * Vt; i++) {
        const float a = logits[0][i], b = logits[1][i];
        s->logits++;
        s->identical += memcmp(&a, &b, sizeof a) == 0;
        s->max_abs = fmax(s->max_abs, fabs((double)a - b));
        attn_status st = push_ulp(s, exp_ulp_distance(a, b), err);
        if (st != ATTN_OK) return st;
    }
    return ATTN_OK;
}

static attn_status cache_seed(const attn_experiment_opts *o, int seed, int n, cache_stats *s,
                              attn_error *err) {
    attn_seq2seq *m = NULL;
    attn_pairs *sets[ATTN_N_TEST_SETS] = {0};
    float *buf = NULL;
    attn_status st = exp_s2s_model(o, "seq2seq-transformer", seed, &m, NULL, err);
    if (!st) st = exp_s2s_test_sets(n, (uint64_t)seed, sets, err);
    if (!st) {
        const attn_seq2seq_config *c = attn_seq2seq_config_of(m);
        buf = malloc(2 * (size_t)c->max_tgt_len * c->tgt_vocab * sizeof *buf);
        if (!buf) st = attn_errorf(err, ATTN_ERR_NOMEM, "kv-cache: out of memory");
    }
    for (int k = 0; !st && k < ATTN_N_TEST_SETS; k++) {
        exp_progress(o, "kv-cache: seed %d, test set %d of 4", seed, k + 1);
        for (int i = 0; !st && i < sets[k]->src->n; i++) {
            int n_src;
            const int *src = exp_pair_source(sets[k], i, &n_src);
            st = one_source(m, src, n_src, buf, s, err);
        }
    }
    free(buf);
    exp_s2s_test_sets_free(sets);
    attn_seq2seq_free(m);
    return st;
}

attn_status exp_kv_cache_run(const attn_experiment_opts *o, attn_experiment_result *r,
                             attn_error *err) {
    const int seeds = o->seeds > 0 ? o->seeds : 1, n = o->quick ? 50 : ATTN_TEST_DEFAULT_N;
    cache_stats s = {0};
    attn_status st = ATTN_OK;
    for (int seed = 1; !st && seed <= seeds; seed++) st = cache_seed(o, seed, n, &s, err);
    if (!st && s.n_ulps == 0) st = attn_errorf(err, ATTN_ERR_VALUE, "kv-cache: no logits compared");
    if (!st) {
        qsort(s.ulps, s.n_ulps, sizeof *s.ulps, cmp_u32);
        double pct[N_BUCKETS];
        for (int b = 0; b < N_BUCKETS; b++) pct[b] = 100.0 * s.bucket[b] / (double)s.n_ulps;
        st = exp_put(r, "seeds", seeds, err);
        if (!st) st = exp_put(r, "sources", s.sources, err);
        if (!st) st = exp_put(r, "same_output", s.same_output, err);
        if (!st) st = exp_put(r, "same_output_share", s.same_output / s.sources, err);
        if (!st) st = exp_put(r, "step_logits", s.logits, err);
        if (!st) st = exp_put(r, "identical_logits", s.identical, err);
        if (!st) st = exp_put(r, "ulp_median", s.ulps[s.n_ulps / 2], err);
        if (!st) st = exp_put(r, "ulp_p99", s.ulps[(size_t)(0.99 * (double)(s.n_ulps - 1))], err);
        if (!st) st = exp_put(r, "ulp_max", s.ulps[s.n_ulps - 1], err);
        if (!st) st = exp_put(r, "max_abs_difference", s.max_abs, err);
        if (!st) st = exp_put_array(r, "ulp_percent_by_bucket", N_BUCKETS, pct, err);
        if (!st) st = exp_put(r, "cached_seconds", s.seconds[0], err);
        if (!st) st = exp_put(r, "recomputed_seconds", s.seconds[1], err);
        if (!st) st = exp_put(r, "speedup", s.seconds[1] / s.seconds[0], err);
        if (!st) st = exp_put(r, "tokens", s.tokens, err);
    }
    free(s.ulps);
    if (st) return st;
    exp_kv_cache_verdict(r);
    return ATTN_OK;
}

/* holds if >= 99.9 % of the output sequences are the same with and without the cache AND the
 * cache is >= 1.2x faster; mixed if one of the two. */
void exp_kv_cache_verdict(attn_experiment_result *r) {
    const double same = exp_get(r, "same_output"), n = exp_get(r, "sources");
    const double speedup = exp_get(r, "speedup");
    const double logits = exp_get(r, "step_logits"), identical = exp_get(r, "identical_logits");
    const bool tokens_ok = n > 0 && same >= SAME_OK * n, fast = speedup >= SPEEDUP_OK;
    exp_verdict(r,
                tokens_ok && fast   ? ATTN_VERDICT_HOLDS
                : tokens_ok || fast ? ATTN_VERDICT_MIXED
                                    : ATTN_VERDICT_DOES_NOT_HOLD,
                "same output sequence with and without the cache for %.0f / %.0f sources (%s "
                "99.9%%); step logits bit-identical %.0f / %.0f (%.1f%%), ULPs median %.0f, 99th "
                "percentile %.0f, largest |difference| %.2g; the cache %.2fx as fast (%s 1.2)",
                same, n, tokens_ok ? ">=" : "<", identical, logits,
                logits > 0 ? 100.0 * identical / logits : 0.0, exp_get(r, "ulp_median"),
                exp_get(r, "ulp_p99"), exp_get(r, "max_abs_difference"), speedup,
                fast ? ">=" : "<");
}

attn_status exp_kv_cache_plot(const attn_experiment_result *r, const char *path, attn_error *err) {
    const attn_measure *m = attn_experiment_measure(r, "ulp_percent_by_bucket");
    if (!m || m->n != N_BUCKETS)
        return attn_errorf(err, ATTN_ERR_ARG, "kv-cache plot: no ULP counts in the result");
    char title[256], ylabel[160];
    snprintf(title, sizeof title,
             "KV cache against recomputing: %.0f / %.0f outputs the same, %.2fx as fast",
             exp_get(r, "same_output"), exp_get(r, "sources"), exp_get(r, "speedup"));
    /* one series: the y axis names it, no legend */
    snprintf(ylabel, sizeof ylabel, "share of the %.0f step logits of greedy decoding (%%)",
             exp_get(r, "step_logits"));
    const attn_bars b = {.title = title,
                         .xlabel = "ULPs between the cached and the recomputed logit",
                         .ylabel = ylabel,
                         .n_categories = N_BUCKETS,
                         .categories = bucket_names,
                         .n_series = 1,
                         .series_titles = NULL,
                         .values = m->values,
                         .y_min = 0,
                         .y_max = 100};
    return attn_plot_bars(&b, path, err);
}
