/* seq2seq_transformer_decode.c -- generation and the attention maps of "seq2seq-transformer"
 * (seq2seq_transformer.h): greedy decoding recomputing the prefix (exactly nn.Transformer's
 * loop, attn_seq2seq_decode_recompute) or stepping with a KV cache (attn_decoder_step), and the
 * probabilities of a teacher-forced pair.
 *
 * The cache (llama2.c's layout, docs/decoder.md): per decoder layer the self-attention keys and
 * values of the rows so far and the memory's cross keys and values, computed once. With pos
 * rope a key is cached rotated at its own position; with alibi the new row's bias is computed
 * from its absolute position (decoder_layer.c), so a step needs nothing else from the past. */
#include "seq2seq_transformer.h"

#include "attn_kernels.h"

#include <stdlib.h>
#include <string.h>

/* The run state of one cached generation, one allocation: per layer a 1-row activation set and
 * the cache (two arrays and the memory's keys and values), then the last row's buffers. */
typedef struct s2s_run {
    float *buf;
    attn_decoder_acts acts[S2S_MAX_L];
    attn_decoder_cache cache[S2S_MAX_L];
    float *x, *y, *stats, *logits; /* [D], [D], [D], [Vt] */
} s2s_run;

/* Lays the run state out for a source of n_src rows (v->mem holds its memory) and fills each
 * layer's cross keys and values; cap rows of self-attention keys. */
static attn_status run_create(s2s_run *run, s2s_impl *v, const attn_seq2seq_config *c, int n_src,
                              int cap, attn_error *err) {
    const int D = c->d_model, L = c->dec_layers;
    const int rows[2] = {0, 1}, srows[2] = {0, n_src};
    const attn_decoder_rows r1 = {
        .B = 1, .N = 1, .Ns = n_src, .trows = rows, .srows = srows, .step_keys = cap};
    size_t u = 0;
    for (int l = 0; l < L; l++) attn_decoder_layout(&run->acts[l], NULL, c, NULL, &u, &r1);
    const size_t per_layer = u, kv = (size_t)cap * D;
    run->buf = malloc(((size_t)L * (per_layer + 2 * kv) + 3 * (size_t)D + (size_t)c->tgt_vocab) *
                      sizeof(float));
    if (!run->buf)
        return attn_errorf(err, ATTN_ERR_NOMEM, "generate: out of memory for the run state");
    u = 0;
    for (int l = 0; l < L; l++) {
        attn_decoder_layout(&run->acts[l], NULL, c, run->buf, &u, &r1);
        run->acts[l].rope = v->rope;
        run->cache[l] = (attn_decoder_cache){
            run->buf + u, run->buf + u + kv, run->acts[l].ck, run->acts[l].cv, cap, n_src};
        u += 2 * kv;
        attn_decoder_cache_memory(&run->cache[l], run->acts[l].ckv, v->mem, &v->w.dec[l], c);
    }
    run->x = run->buf + u;
    run->y = run->x + D;
    run->stats = run->y + D;
    run->logits = run->stats + D;
    return ATTN_OK;
}

/* run->logits [Vt] = the decoder's prediction after `token` at position pos (its row cached). */
static void run_step(s2s_run *run, const s2s_impl *v, const attn_seq2seq_config *c, int token,
                     int pos) {
    const int D = c->d_model;
    attn_s2s_tf_embed_target(run->x, v, c, token, pos);
    const float *h = run->x;
    for (int l = 0; l < c->dec_layers; l++) {
        attn_decoder_step(&run->acts[l], h, &v->w.dec[l], c, &run->cache[l], pos);
        h = run->acts[l].out;
    }
    attn_layernorm_forward(run->y, run->stats, run->stats + 1, h, v->w.dec_norm_w, v->w.dec_norm_b,
                           1, D);
    attn_linear_forward(run->logits, run->y, v->w.head_w, v->w.head_b, 1, D, c->tgt_vocab,
                        ATTN_OP_HEAD);
}

static attn_status greedy_cached(attn_seq2seq *m, const int *src, int n_src, int max_out,
                                 const attn_s2s_chooser *ch, int *out, int *n_out,
                                 float *step_logits, int *n_steps, attn_error *err) {
    s2s_impl *v = m->impl;
    const attn_seq2seq_config *c = &m->cfg;
    const int Vt = c->tgt_vocab, one = 1, bos = ATTN_TGT_BOS;
    /* the memory, as the full pass computes it */
    const attn_s2s_batch b = {1, n_src, 1, src, &n_src, &bos, &one};
    attn_status st = attn_s2s_tf_prepare(v, c, &b, err);
    if (st != ATTN_OK) return st;
    attn_s2s_tf_encode(v, c, &b);
    s2s_run run;
    st = run_create(&run, v, c, n_src, max_out + 1, err);
    if (st != ATTN_OK) return st;
    int n = 0, steps = 0, token = ATTN_TGT_BOS;
    while (n < max_out) {
        run_step(&run, v, c, token, n);
        if (step_logits)
            memcpy(step_logits + (size_t)steps * Vt, run.logits, (size_t)Vt * sizeof(float));
        steps++;
        token = ch->choose(ch->ctx, run.logits, Vt);
        if (token == ATTN_TGT_EOS) break;
        out[n++] = token;
    }
    *n_out = n;
    if (n_steps) *n_steps = steps;
    free(run.buf);
    return ATTN_OK;
}

attn_status attn_s2s_tf_decode(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                               const attn_s2s_chooser *ch, int *out, int *n_out, float *step_logits,
                               int *n_steps, attn_error *err) {
    if (((s2s_impl *)m->impl)->unmasked)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "generate: the causal mask is off (attn_seq2seq_set_causal_mask); a "
                           "decoder without it is only run teacher forced");
    return cache ? greedy_cached(m, src, n_src, max_out, ch, out, n_out, step_logits, n_steps, err)
                 : attn_seq2seq_decode_recompute(m, src, n_src, max_out, ch, out, n_out,
                                                 step_logits, n_steps, err);
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
