/* seq2seq_transformer_decode.c -- generation and the attention maps of "seq2seq-transformer"
 * (seq2seq_transformer.h): greedy decoding recomputing the prefix (exactly nn.Transformer's
 * loop, attn_seq2seq_decode_recompute) or stepping with a KV cache (attn_decoder_step_rows),
 * one source or several decoded together (attn_seq2seq_greedy_batch), and the probabilities of
 * a teacher-forced pair.
 *
 * The cache (llama2.c's layout, docs/decoder.md): per decoder layer the self-attention keys and
 * values of the rows so far and the memory's cross keys and values, computed once. With pos
 * rope a key is cached rotated at its own position; with alibi the new row's bias is computed
 * from its absolute position (decoder_layer.c), so a step needs nothing else from the past. */
#include "seq2seq_transformer.h"

#include "attn_kernels.h"

#include <stdlib.h>
#include <string.h>

/* The run state of a cached generation of n sequences decoded together, one allocation: per
 * layer an n-row activation set and each sequence's cache (self keys and values [NH, cap, HS],
 * the memory's cross keys and values [NH, S_i, HS]), then the rows' buffers. */
typedef struct s2s_run {
    float *buf;
    int n;
    attn_decoder_acts acts[S2S_MAX_L];
    attn_decoder_cache *cache;           /* [L * n]: layer l, sequence i at l * n + i */
    attn_decoder_cache **live;           /* [L * n]: layer l's caches of the live rows, in order */
    float *x, *y, *mean, *rstd, *logits; /* [n, D], [n, D], [n], [n], [n, Vt] */
} s2s_run;

static void run_free(s2s_run *run) {
    free(run->buf);
    free(run->cache);
    free(run->live);
    run->buf = NULL;
    run->cache = NULL;
    run->live = NULL;
}

/* Lays out the run state for n sources (lengths n_src[i]) and cap rows of self-attention keys;
 * each sequence's cross keys and values are filled by run_memory. */
static attn_status run_create(s2s_run *run, s2s_impl *v, const attn_seq2seq_config *c, int n,
                              const int *n_src, int cap, attn_error *err) {
    const int D = c->d_model, L = c->dec_layers;
    int smax = 0;
    size_t cross = 0;
    for (int i = 0; i < n; i++) {
        smax = n_src[i] > smax ? n_src[i] : smax;
        cross += 2 * (size_t)n_src[i] * D;
    }
    const int rows[2] = {0, n}, srows[2] = {0, smax};
    const attn_decoder_rows rn = {
        .B = 1, .N = n, .Ns = smax, .trows = rows, .srows = srows, .step_keys = cap};
    size_t u = 0;
    for (int l = 0; l < L; l++) attn_decoder_layout(&run->acts[l], NULL, c, NULL, &u, &rn);
    const size_t per_layer = u, kv = (size_t)cap * D;
    const size_t rows_f = (size_t)n * (2 * (size_t)D + 2 + (size_t)c->tgt_vocab);
    run->n = n;
    run->buf = malloc(((size_t)L * (per_layer + 2 * kv * n + cross) + rows_f) * sizeof(float));
    run->cache = malloc((size_t)L * n * sizeof *run->cache);
    run->live = malloc((size_t)L * n * sizeof *run->live);
    if (!run->buf || !run->cache || !run->live) {
        run_free(run);
        return attn_errorf(err, ATTN_ERR_NOMEM, "generate: out of memory for the run state");
    }
    u = 0;
    for (int l = 0; l < L; l++) {
        attn_decoder_layout(&run->acts[l], NULL, c, run->buf, &u, &rn);
        run->acts[l].rope = v->rope;
        for (int i = 0; i < n; i++) {
            const size_t sd = (size_t)n_src[i] * D;
            float *p = run->buf + u;
            run->cache[l * n + i] =
                (attn_decoder_cache){p, p + kv, p + 2 * kv, p + 2 * kv + sd, cap, n_src[i]};
            run->live[l * n + i] = &run->cache[l * n + i];
            u += 2 * kv + 2 * sd;
        }
    }
    run->x = run->buf + u;
    run->y = run->x + (size_t)n * D;
    run->mean = run->y + (size_t)n * D;
    run->rstd = run->mean + n;
    run->logits = run->rstd + n;
    return ATTN_OK;
}

/* Sequence i's memory: source src[n_src] encoded alone (the batch-1 pass, bits and all), then
 * each layer's cross keys and values computed from it into i's caches. */
static attn_status run_memory(s2s_run *run, s2s_impl *v, const attn_seq2seq_config *c, int i,
                              const int *src, int n_src, attn_error *err) {
    const int one = 1, bos = ATTN_TGT_BOS;
    const attn_s2s_batch b = {1, n_src, 1, src, &n_src, &bos, &one};
    attn_status st = attn_s2s_tf_prepare(v, c, &b, err);
    if (st != ATTN_OK) return st;
    attn_s2s_tf_encode(v, c, &b);
    for (int l = 0; l < c->dec_layers; l++)
        attn_decoder_cache_memory(&run->cache[l * run->n + i], run->acts[l].ckv, v->mem,
                                  &v->w.dec[l], c);
    return ATTN_OK;
}

/* run->logits [n_live, Vt] = the decoder's prediction after tokens[r] at position pos for
 * each live row r (its caches run->live[l * n + r]; its row cached). */
static void run_step(s2s_run *run, const s2s_impl *v, const attn_seq2seq_config *c,
                     const int *tokens, int n_live, int pos) {
    const int D = c->d_model;
    for (int r = 0; r < n_live; r++)
        attn_s2s_tf_embed_target(run->x + (size_t)r * D, v, c, tokens[r], pos);
    const float *h = run->x;
    for (int l = 0; l < c->dec_layers; l++) {
        attn_decoder_step_rows(&run->acts[l], h, &v->w.dec[l], c, run->live + (size_t)l * run->n,
                               n_live, pos);
        h = run->acts[l].out;
    }
    attn_layernorm_forward(run->y, run->mean, run->rstd, h, v->w.dec_norm_w, v->w.dec_norm_b,
                           n_live, D);
    attn_linear_forward(run->logits, run->y, v->w.head_w, v->w.head_b, n_live, D, c->tgt_vocab,
                        ATTN_OP_HEAD);
}

/* n sources decoded together from [BOS], every live row one step at a time; a row that chose
 * [EOS] or reached max_out words leaves the live rows (the later rows move up, its caches stay
 * where they are), so the next steps' products take only the rows still decoding. Sequence i's
 * words in out[i * max_out ..], its chooser ch[i]. */
static attn_status greedy_cached(attn_seq2seq *m, int n, const int *const *src, const int *n_src,
                                 int max_out, const attn_s2s_chooser *ch, int *out, int *n_out,
                                 float *step_logits, int *n_steps, attn_error *err) {
    s2s_impl *v = m->impl;
    const attn_seq2seq_config *c = &m->cfg;
    const int Vt = c->tgt_vocab, L = c->dec_layers;
    s2s_run run = {0};
    attn_status st = run_create(&run, v, c, n, n_src, max_out + 1, err);
    for (int i = 0; st == ATTN_OK && i < n; i++)
        st = run_memory(&run, v, c, i, src[i], n_src[i], err);
    int *seq = malloc(2 * (size_t)n * sizeof *seq), *tokens = seq ? seq + n : NULL;
    if (st == ATTN_OK && !seq) st = attn_errorf(err, ATTN_ERR_NOMEM, "generate: out of memory");
    if (st != ATTN_OK) {
        run_free(&run);
        free(seq);
        return st;
    }
    int n_live = max_out > 0 ? n : 0;
    for (int i = 0; i < n; i++) {
        seq[i] = i;
        tokens[i] = ATTN_TGT_BOS;
        n_out[i] = 0;
        if (n_steps) n_steps[i] = 0;
    }
    for (int pos = 0; n_live > 0; pos++) {
        run_step(&run, v, c, tokens, n_live, pos);
        int kept = 0;
        for (int r = 0; r < n_live; r++) {
            const int i = seq[r];
            const float *logits = run.logits + (size_t)r * Vt;
            if (step_logits)
                memcpy(step_logits + ((size_t)i * (max_out + 1) + pos) * Vt, logits,
                       (size_t)Vt * sizeof(float));
            if (n_steps) n_steps[i]++;
            const int token = ch[i].choose(ch[i].ctx, logits, Vt);
            if (token == ATTN_TGT_EOS) continue;
            out[(size_t)i * max_out + n_out[i]++] = token;
            if (n_out[i] == max_out) continue;
            /* row r stays live, as row `kept` */
            seq[kept] = i;
            tokens[kept] = token;
            for (int l = 0; l < L; l++) run.live[l * n + kept] = run.live[l * n + r];
            kept++;
        }
        n_live = kept;
    }
    run_free(&run);
    free(seq);
    return ATTN_OK;
}

static attn_status masked_ok(const attn_seq2seq *m, attn_error *err) {
    if (((s2s_impl *)m->impl)->unmasked)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "generate: the causal mask is off (attn_seq2seq_set_causal_mask); a "
                           "decoder without it is only run teacher forced");
    return ATTN_OK;
}

attn_status attn_s2s_tf_decode(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                               const attn_s2s_chooser *ch, int *out, int *n_out, float *step_logits,
                               int *n_steps, attn_error *err) {
    attn_status st = masked_ok(m, err);
    if (st != ATTN_OK) return st;
    return cache ? greedy_cached(m, 1, &src, &n_src, max_out, ch, out, n_out, step_logits, n_steps,
                                 err)
                 : attn_seq2seq_decode_recompute(m, src, n_src, max_out, ch, out, n_out,
                                                 step_logits, n_steps, err);
}

attn_status attn_s2s_tf_decode_batch(attn_seq2seq *m, int n, const int *const *src,
                                     const int *n_src, int max_out, const attn_s2s_chooser *ch,
                                     int *out, int *n_out, float *step_logits, int *n_steps,
                                     attn_error *err) {
    attn_status st = masked_ok(m, err);
    if (st != ATTN_OK) return st;
    return greedy_cached(m, n, src, n_src, max_out, ch, out, n_out, step_logits, n_steps, err);
}

/* The probabilities the teacher-forced forward of one pair used: each decoder layer's
 * self-attention [NH, T, T] and cross-attention [NH, T, S] (B = 1: the whole of sa_probs and
 * ca_probs). */
attn_status attn_s2s_tf_maps(attn_seq2seq *m, const int *src, int n_src, const int *dec_in,
                             int n_dec, float *cross, float *self, attn_error *err) {
    s2s_impl *v = m->impl;
    const attn_seq2seq_config *c = &m->cfg;
    float *logits = malloc((size_t)n_dec * c->tgt_vocab * sizeof *logits);
    if (!logits) return attn_errorf(err, ATTN_ERR_NOMEM, "seq2seq maps: out of memory");
    const attn_s2s_batch b = {1, n_src, n_dec, src, &n_src, dec_in, &n_dec};
    attn_status st = attn_s2s_tf_forward(m, &b, logits, err);
    const size_t nc = (size_t)c->n_heads * n_dec * n_src, ns = (size_t)c->n_heads * n_dec * n_dec;
    for (int l = 0; st == ATTN_OK && l < c->dec_layers; l++) {
        if (cross) memcpy(cross + nc * l, v->dacts[l].ca_probs, nc * sizeof(float));
        if (self) memcpy(self + ns * l, v->dacts[l].sa_probs, ns * sizeof(float));
    }
    free(logits);
    return st;
}
