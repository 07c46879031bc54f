/* seq2seq_transformer.c -- "seq2seq-transformer": PyTorch's nn.Transformer between embeddings and
 * a head (write-up §6).
 *
 *   memory = encoder.norm(Le x TransformerEncoderLayer(src_embedding[src] + src positions))
 *   logits = head(decoder.norm(Ld x TransformerDecoderLayer(tgt_embedding[tgt] + tgt positions,
 *                                                           memory, causal mask)))
 *
 * nn.Transformer always has both final norms (post-norm too). Positions (docs/decoder.md) as the
 * classifier's, one scheme for both sides, each side counted from 0: learned tables initialised
 * with the sinusoid times 2, the fixed sinusoidal table, or none, added to the embeddings; rope
 * and alibi act inside the self-attentions (the encoder's, as the classifier's encoder layer
 * applies them, and the decoder's masked one, decoder_layer.c), never in cross-attention. The
 * encoder layers are the classifier's (encoder_layer.c, PyTorch's fast path in eval + no_grad:
 * bit-identical at batch 1), the decoder layers decoder_layer.c. Rows are packed per pair
 * (encoder_layer.h), so a pair's result is its batch-1 result up to the GEMMs' row count.
 * Decoding and the attention maps: seq2seq_transformer_decode.c. */
#include "seq2seq_transformer.h"

#include "attention_positions.h"

#include "attn_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POS_AMPLITUDE 2.0f /* learned positions start as the sinusoid table times 2 */

static const char *const ENC_LAYER[12] = {"self_attn.in_proj_weight",
                                          "self_attn.in_proj_bias",
                                          "self_attn.out_proj.weight",
                                          "self_attn.out_proj.bias",
                                          "linear1.weight",
                                          "linear1.bias",
                                          "linear2.weight",
                                          "linear2.bias",
                                          "norm1.weight",
                                          "norm1.bias",
                                          "norm2.weight",
                                          "norm2.bias"};
static const char *const DEC_LAYER[18] = {"self_attn.in_proj_weight",
                                          "self_attn.in_proj_bias",
                                          "self_attn.out_proj.weight",
                                          "self_attn.out_proj.bias",
                                          "multihead_attn.in_proj_weight",
                                          "multihead_attn.in_proj_bias",
                                          "multihead_attn.out_proj.weight",
                                          "multihead_attn.out_proj.bias",
                                          "linear1.weight",
                                          "linear1.bias",
                                          "linear2.weight",
                                          "linear2.bias",
                                          "norm1.weight",
                                          "norm1.bias",
                                          "norm2.weight",
                                          "norm2.bias",
                                          "norm3.weight",
                                          "norm3.bias"};

/* A layer tensor's shape and PyTorch init: nn.Transformer's _reset_parameters draws every
 * matrix xavier_uniform_; attention biases start at 0, Linear biases U(+-1/sqrt(fan_in)). */
static void layer_spec(attn_param_spec *s, const char *name, const char *suffix, int D, int F) {
    const float xav_in = sqrtf(6.0f / (float)(D + 3 * D)), xav_out = sqrtf(6.0f / (float)(2 * D));
    const float xav_ff = sqrtf(6.0f / (float)(D + F));
    if (strstr(suffix, "in_proj_weight"))
        attn_spec_set(s, name, 2, (int[]){3 * D, D}, ATTN_INIT_UNIFORM, xav_in);
    else if (strstr(suffix, "in_proj_bias"))
        attn_spec_set(s, name, 1, (int[]){3 * D}, ATTN_INIT_ZEROS, 0.0f);
    else if (strstr(suffix, "out_proj.weight"))
        attn_spec_set(s, name, 2, (int[]){D, D}, ATTN_INIT_UNIFORM, xav_out);
    else if (strstr(suffix, "out_proj.bias"))
        attn_spec_set(s, name, 1, (int[]){D}, ATTN_INIT_ZEROS, 0.0f);
    else if (!strcmp(suffix, "linear1.weight"))
        attn_spec_set(s, name, 2, (int[]){F, D}, ATTN_INIT_UNIFORM, xav_ff);
    else if (!strcmp(suffix, "linear1.bias"))
        attn_spec_set(s, name, 1, (int[]){F}, ATTN_INIT_UNIFORM, 1.0f / sqrtf((float)D));
    else if (!strcmp(suffix, "linear2.weight"))
        attn_spec_set(s, name, 2, (int[]){D, F}, ATTN_INIT_UNIFORM, xav_ff);
    else if (!strcmp(suffix, "linear2.bias"))
        attn_spec_set(s, name, 1, (int[]){D}, ATTN_INIT_UNIFORM, 1.0f / sqrtf((float)F));
    else if (strstr(suffix, ".weight")) /* norms */
        attn_spec_set(s, name, 1, (int[]){D}, ATTN_INIT_ONES, 0.0f);
    else
        attn_spec_set(s, name, 1, (int[]){D}, ATTN_INIT_ZEROS, 0.0f);
}

static size_t s2s_specs(const attn_seq2seq_config *c, attn_param_spec *s) {
    const int D = c->d_model, F = c->ffn_dim, Vt = c->tgt_vocab;
    size_t n = 0;
    char name[ATTN_NAME_MAX];
    if (c->pos == ATTN_POS_LEARNED) {
        attn_spec_set(&s[n++], "src_pos_embedding", 2, (int[]){c->max_src_len, D},
                      ATTN_INIT_SINUSOID, POS_AMPLITUDE);
        attn_spec_set(&s[n++], "tgt_pos_embedding", 2, (int[]){c->max_tgt_len, D},
                      ATTN_INIT_SINUSOID, POS_AMPLITUDE);
    }
    attn_spec_set(&s[n++], "src_embedding.weight", 2, (int[]){c->src_vocab, D}, ATTN_INIT_NORMAL,
                  1.0f);
    attn_spec_set(&s[n++], "tgt_embedding.weight", 2, (int[]){Vt, D}, ATTN_INIT_NORMAL, 1.0f);
    for (int l = 0; l < c->enc_layers; l++)
        for (int j = 0; j < 12; j++) {
            snprintf(name, sizeof name, "transformer.encoder.layers.%d.%s", l, ENC_LAYER[j]);
            layer_spec(&s[n++], name, ENC_LAYER[j], D, F);
        }
    attn_spec_set(&s[n++], "transformer.encoder.norm.weight", 1, (int[]){D}, ATTN_INIT_ONES, 0.0f);
    attn_spec_set(&s[n++], "transformer.encoder.norm.bias", 1, (int[]){D}, ATTN_INIT_ZEROS, 0.0f);
    for (int l = 0; l < c->dec_layers; l++)
        for (int j = 0; j < 18; j++) {
            snprintf(name, sizeof name, "transformer.decoder.layers.%d.%s", l, DEC_LAYER[j]);
            layer_spec(&s[n++], name, DEC_LAYER[j], D, F);
        }
    attn_spec_set(&s[n++], "transformer.decoder.norm.weight", 1, (int[]){D}, ATTN_INIT_ONES, 0.0f);
    attn_spec_set(&s[n++], "transformer.decoder.norm.bias", 1, (int[]){D}, ATTN_INIT_ZEROS, 0.0f);
    const float kd = 1.0f / sqrtf((float)D);
    attn_spec_set(&s[n++], "head.weight", 2, (int[]){Vt, D}, ATTN_INIT_UNIFORM, kd);
    attn_spec_set(&s[n++], "head.bias", 1, (int[]){Vt}, ATTN_INIT_UNIFORM, kd);
    return n;
}

/* ---- views, run state --------------------------------------------------------------------- */

static float *layer_view(attn_seq2seq *m, float *base, const char *side, int l, const char *sfx) {
    char name[ATTN_NAME_MAX];
    snprintf(name, sizeof name, "transformer.%s.layers.%d.%s", side, l, sfx);
    return attn_seq2seq_view(m, base, name);
}

static void bind(attn_seq2seq *m, s2s_tensors *t, float *base) {
    t->src_pos = attn_seq2seq_view(m, base, "src_pos_embedding");
    t->tgt_pos = attn_seq2seq_view(m, base, "tgt_pos_embedding");
    t->src_emb = attn_seq2seq_view(m, base, "src_embedding.weight");
    t->tgt_emb = attn_seq2seq_view(m, base, "tgt_embedding.weight");
    t->enc_norm_w = attn_seq2seq_view(m, base, "transformer.encoder.norm.weight");
    t->enc_norm_b = attn_seq2seq_view(m, base, "transformer.encoder.norm.bias");
    t->dec_norm_w = attn_seq2seq_view(m, base, "transformer.decoder.norm.weight");
    t->dec_norm_b = attn_seq2seq_view(m, base, "transformer.decoder.norm.bias");
    t->head_w = attn_seq2seq_view(m, base, "head.weight");
    t->head_b = attn_seq2seq_view(m, base, "head.bias");
    for (int l = 0; l < m->cfg.enc_layers; l++) {
        float **e[12] = {
            &t->enc[l].in_proj_weight, &t->enc[l].in_proj_bias,   &t->enc[l].out_proj_weight,
            &t->enc[l].out_proj_bias,  &t->enc[l].linear1_weight, &t->enc[l].linear1_bias,
            &t->enc[l].linear2_weight, &t->enc[l].linear2_bias,   &t->enc[l].norm1_weight,
            &t->enc[l].norm1_bias,     &t->enc[l].norm2_weight,   &t->enc[l].norm2_bias};
        for (int j = 0; j < 12; j++) *e[j] = layer_view(m, base, "encoder", l, ENC_LAYER[j]);
    }
    for (int l = 0; l < m->cfg.dec_layers; l++) {
        attn_decoder_weights *w = &t->dec[l];
        float **e[18] = {&w->sa_in_w,   &w->sa_in_b,   &w->sa_out_w,  &w->sa_out_b,  &w->ca_in_w,
                         &w->ca_in_b,   &w->ca_out_w,  &w->ca_out_b,  &w->l1_w,      &w->l1_b,
                         &w->l2_w,      &w->l2_b,      &w->norm_w[0], &w->norm_b[0], &w->norm_w[1],
                         &w->norm_b[1], &w->norm_w[2], &w->norm_b[2]};
        for (int j = 0; j < 18; j++) *e[j] = layer_view(m, base, "decoder", l, DEC_LAYER[j]);
    }
}

static float *sinusoid_table(int P, int D) {
    float *t = malloc((size_t)P * D * sizeof(float));
    if (t)
        for (int p = 0; p < P; p++)
            for (int j = 0; j < D; j++) t[(size_t)p * D + j] = attn_sinusoid_value(p, j, D, 1.0f);
    return t;
}

static attn_status s2s_setup(attn_seq2seq *m, attn_error *err) {
    s2s_impl *v = calloc(1, sizeof *v);
    if (!v) return attn_errorf(err, ATTN_ERR_NOMEM, "seq2seq: out of memory for views");
    m->impl = v;
    bind(m, &v->w, m->params);
    const attn_seq2seq_config *c = &m->cfg;
    v->enc_cfg = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    v->enc_cfg.embed_dim = c->d_model;
    v->enc_cfg.n_heads = c->n_heads;
    v->enc_cfg.ffn_dim = c->ffn_dim;
    v->enc_cfg.n_layers = c->enc_layers;
    v->enc_cfg.max_len = c->max_src_len;
    v->enc_cfg.norm = c->norm;
    v->enc_cfg.activation = c->activation;
    /* learned, sinusoidal: added to the embeddings here; rope, alibi: in the encoder layer */
    const bool inside = c->pos == ATTN_POS_ROPE || c->pos == ATTN_POS_ALIBI;
    v->enc_cfg.pos = inside ? c->pos : ATTN_POS_NONE;
    if (c->pos == ATTN_POS_SINUSOIDAL) {
        v->src_table = sinusoid_table(c->max_src_len, c->d_model);
        v->tgt_table = sinusoid_table(c->max_tgt_len, c->d_model);
        if (!v->src_table || !v->tgt_table)
            return attn_errorf(err, ATTN_ERR_NOMEM, "seq2seq: out of memory for position tables");
    }
    if (c->pos == ATTN_POS_ROPE) { /* one table serves both sides: a row depends on p only */
        const int P = c->max_src_len > c->max_tgt_len ? c->max_src_len : c->max_tgt_len;
        v->rope = attn_rope_table(P, c->d_model / c->n_heads);
        if (!v->rope)
            return attn_errorf(err, ATTN_ERR_NOMEM, "seq2seq: out of memory for the rotary table");
    }
    return ATTN_OK;
}

static void s2s_set_grads(attn_seq2seq *m) {
    bind(m, &((s2s_impl *)m->impl)->d, m->grads);
}

static void s2s_destroy(attn_seq2seq *m) {
    s2s_impl *v = m->impl;
    free(v->arena);
    free(v->srows);
    free(v->src_table);
    free(v->tgt_table);
    free(v->rope);
    free(v);
    m->impl = NULL;
}

/* ---- arena ---------------------------------------------------------------------------------- */

/* Lays the arena out for the planned batch (base NULL: counts). */
static size_t layout(s2s_impl *v, const attn_seq2seq_config *c, float *base) {
    const size_t D = (size_t)c->d_model, Ns = (size_t)v->erows.N, Nt = (size_t)v->drows.N;
    size_t u = 0, SM = 0, n_probs = 0;
    for (int i = 0; i < v->B; i++) {
        const size_t S = (size_t)(v->srows[i + 1] - v->srows[i]);
        SM = S > SM ? S : SM;
        n_probs += (size_t)c->n_heads * S * S;
    }
    /* pos alibi: one score-bias scratch for the encoder layers, as the classifier's */
    float *bias =
        c->pos == ATTN_POS_ALIBI ? attn_arena_carve(base, &u, (size_t)c->n_heads * SM * SM) : NULL;
    for (int l = 0; l < c->enc_layers; l++) { /* the encoder's layers, as the Transformer's */
        memset(&v->eacts[l], 0, sizeof v->eacts[l]);
        attn_encoder_acts_layout(&v->eacts[l], &v->enc_cfg, base, &u, Ns, Ns, false, n_probs);
        if (l == 0) attn_encoder_scratch_layout(&v->escratch, &v->enc_cfg, base, &u, Ns, SM);
        v->eacts[l].rope = v->rope;
        v->eacts[l].score_bias = bias;
    }
    for (int l = 0; l < c->dec_layers; l++) {
        attn_decoder_layout(&v->dacts[l], l == 0 ? &v->dscratch : NULL, c, base, &u, &v->drows);
        v->dacts[l].rope = v->rope;
    }
    v->xs0 = attn_arena_carve(base, &u, Ns * D);
    v->xt0 = attn_arena_carve(base, &u, Nt * D);
    v->mem = attn_arena_carve(base, &u, Ns * D);
    v->mem_mean = attn_arena_carve(base, &u, Ns);
    v->mem_rstd = attn_arena_carve(base, &u, Ns);
    v->dec_out = attn_arena_carve(base, &u, Nt * D);
    v->dn_mean = attn_arena_carve(base, &u, Nt);
    v->dn_rstd = attn_arena_carve(base, &u, Nt);
    for (int l = 0; l <= c->enc_layers; l++) v->d_enc[l] = attn_arena_carve(base, &u, Ns * D);
    v->d_mem = attn_arena_carve(base, &u, Ns * D);
    for (int l = 0; l <= c->dec_layers; l++) v->d_dec[l] = attn_arena_carve(base, &u, Nt * D);
    v->d_out = attn_arena_carve(base, &u, Nt * D);
    return u;
}

attn_status attn_s2s_tf_prepare(s2s_impl *v, const attn_seq2seq_config *c, const attn_s2s_batch *b,
                                attn_error *err) {
    if (b->B + 1 > v->rows_cap) {
        int *rows = malloc(2 * (size_t)(b->B + 1) * sizeof *rows);
        if (!rows) return attn_errorf(err, ATTN_ERR_NOMEM, "seq2seq: out of memory for a batch");
        free(v->srows);
        v->srows = rows;
        v->trows = rows + b->B + 1;
        v->rows_cap = b->B + 1;
    }
    v->B = b->B;
    v->srows[0] = v->trows[0] = 0;
    for (int i = 0; i < b->B; i++) {
        v->srows[i + 1] = v->srows[i] + b->src_lengths[i];
        v->trows[i + 1] = v->trows[i] + b->tgt_lengths[i];
    }
    v->erows = (attn_encoder_rows){b->B, v->srows[b->B], v->srows};
    v->drows = (attn_decoder_rows){.B = b->B,
                                   .N = v->trows[b->B],
                                   .Ns = v->srows[b->B],
                                   .trows = v->trows,
                                   .srows = v->srows,
                                   .unmasked = v->unmasked};
    attn_status st = attn_arena_reserve(&v->arena, &v->cap, layout(v, c, NULL), err);
    if (st != ATTN_OK) {
        v->B = 0;
        return st;
    }
    layout(v, c, v->arena);
    return ATTN_OK;
}

/* ---- forward ------------------------------------------------------------------------------- */

/* x[D] = emb[id] + the position row of p (learned or sinusoidal; else emb[id]). */
static void embed(float *x, const float *emb, int id, const float *learned, const float *table,
                  int p, int D) {
    const float *e = emb + (size_t)id * D;
    const float *row = learned ? learned + (size_t)p * D : table ? table + (size_t)p * D : NULL;
    if (row)
        attn_add_forward(x, e, row, (size_t)D);
    else
        memcpy(x, e, (size_t)D * sizeof(float));
}

void attn_s2s_tf_embed_target(float *x, const s2s_impl *v, const attn_seq2seq_config *c, int id,
                              int p) {
    embed(x, v->w.tgt_emb, id, v->w.tgt_pos, v->tgt_table, p, c->d_model);
}

void attn_s2s_tf_encode(s2s_impl *v, const attn_seq2seq_config *c, const attn_s2s_batch *b) {
    const int D = c->d_model;
    for (int i = 0; i < b->B; i++)
        for (int s = 0; s < b->src_lengths[i]; s++)
            embed(v->xs0 + ((size_t)v->srows[i] + s) * D, v->w.src_emb,
                  b->src_ids[(size_t)i * b->S + s], v->w.src_pos, v->src_table, s, D);
    const float *x = v->xs0;
    for (int l = 0; l < c->enc_layers; l++) {
        attn_encoder_forward(&v->eacts[l], x, &v->w.enc[l], &v->enc_cfg, &v->erows);
        x = v->eacts[l].out;
    }
    attn_layernorm_forward(v->mem, v->mem_mean, v->mem_rstd, x, v->w.enc_norm_w, v->w.enc_norm_b,
                           v->erows.N, D);
}

static void decode(s2s_impl *v, const attn_seq2seq_config *c, const attn_s2s_batch *b,
                   float *logits) {
    const int D = c->d_model, Nt = v->drows.N;
    for (int i = 0; i < b->B; i++)
        for (int t = 0; t < b->tgt_lengths[i]; t++)
            embed(v->xt0 + ((size_t)v->trows[i] + t) * D, v->w.tgt_emb,
                  b->tgt_ids[(size_t)i * b->T + t], v->w.tgt_pos, v->tgt_table, t, D);
    const float *y = v->xt0;
    for (int l = 0; l < c->dec_layers; l++) {
        attn_decoder_forward(&v->dacts[l], y, v->mem, &v->w.dec[l], c, &v->drows);
        y = v->dacts[l].out;
    }
    attn_layernorm_forward(v->dec_out, v->dn_mean, v->dn_rstd, y, v->w.dec_norm_w, v->w.dec_norm_b,
                           Nt, D);
    attn_linear_forward(logits, v->dec_out, v->w.head_w, v->w.head_b, Nt, D, c->tgt_vocab,
                        ATTN_OP_HEAD);
}

attn_status attn_s2s_tf_forward(attn_seq2seq *m, const attn_s2s_batch *b, float *logits,
                                attn_error *err) {
    s2s_impl *v = m->impl;
    attn_status st = attn_s2s_tf_prepare(v, &m->cfg, b, err);
    if (st != ATTN_OK) return st;
    attn_s2s_tf_encode(v, &m->cfg, b);
    decode(v, &m->cfg, b, logits);
    return ATTN_OK;
}

/* ---- backward ------------------------------------------------------------------------------ */

static void s2s_backward(attn_seq2seq *m, const attn_s2s_batch *b, const float *d_logits) {
    s2s_impl *v = m->impl;
    const attn_seq2seq_config *c = &m->cfg;
    const int D = c->d_model, Ns = v->erows.N, Nt = v->drows.N, Le = c->enc_layers;
    const int Ld = c->dec_layers;
    if (v->B == 0) return;
    memset(v->d_out, 0, (size_t)Nt * D * sizeof(float));
    attn_linear_backward(v->d_out, v->d.head_w, v->d.head_b, d_logits, v->dec_out, v->w.head_w, Nt,
                         D, c->tgt_vocab, ATTN_OP_HEAD);
    const float *y_last = Ld > 0 ? v->dacts[Ld - 1].out : v->xt0;
    memset(v->d_dec[Ld], 0, (size_t)Nt * D * sizeof(float));
    attn_layernorm_backward(v->d_dec[Ld], v->d.dec_norm_w, v->d.dec_norm_b, v->d_out, y_last,
                            v->dn_mean, v->dn_rstd, v->w.dec_norm_w, Nt, D);
    memset(v->d_mem, 0, (size_t)Ns * D * sizeof(float));
    for (int l = Ld - 1; l >= 0; l--) {
        const float *y = l == 0 ? v->xt0 : v->dacts[l - 1].out;
        attn_decoder_backward(v->d_dec[l], v->d_mem, &v->d.dec[l], v->d_dec[l + 1], &v->dacts[l], y,
                              v->mem, &v->w.dec[l], c, &v->drows, &v->dscratch);
    }
    const float *x_last = v->eacts[Le - 1].out;
    memset(v->d_enc[Le], 0, (size_t)Ns * D * sizeof(float));
    attn_layernorm_backward(v->d_enc[Le], v->d.enc_norm_w, v->d.enc_norm_b, v->d_mem, x_last,
                            v->mem_mean, v->mem_rstd, v->w.enc_norm_w, Ns, D);
    for (int l = Le - 1; l >= 0; l--) {
        const float *x = l == 0 ? v->xs0 : v->eacts[l - 1].out;
        attn_encoder_backward(v->d_enc[l], &v->d.enc[l], v->d_enc[l + 1], &v->eacts[l], x,
                              &v->w.enc[l], &v->enc_cfg, &v->erows, &v->escratch);
    }
    if (m->d_src_x && b->B == 1) /* d loss / d source embedding row = d loss / d xs0 */
        memcpy(m->d_src_x, v->d_enc[0], (size_t)Ns * D * sizeof(float));
    /* embeddings and learned positions */
    for (int i = 0; i < b->B; i++) {
        for (int s = 0; s < b->src_lengths[i]; s++) {
            const float *d = v->d_enc[0] + ((size_t)v->srows[i] + s) * D;
            attn_add_forward(v->d.src_emb + (size_t)b->src_ids[(size_t)i * b->S + s] * D,
                             v->d.src_emb + (size_t)b->src_ids[(size_t)i * b->S + s] * D, d,
                             (size_t)D);
            if (v->d.src_pos)
                attn_add_forward(v->d.src_pos + (size_t)s * D, v->d.src_pos + (size_t)s * D, d,
                                 (size_t)D);
        }
        for (int t = 0; t < b->tgt_lengths[i]; t++) {
            const float *d = v->d_dec[0] + ((size_t)v->trows[i] + t) * D;
            float *d_e = v->d.tgt_emb + (size_t)b->tgt_ids[(size_t)i * b->T + t] * D;
            attn_add_forward(d_e, d_e, d, (size_t)D);
            if (v->d.tgt_pos)
                attn_add_forward(v->d.tgt_pos + (size_t)t * D, v->d.tgt_pos + (size_t)t * D, d,
                                 (size_t)D);
        }
    }
}

const attn_s2s_vt attn_s2s_transformer_vt = {
    "seq2seq-transformer",   s2s_specs,           s2s_setup,
    s2s_set_grads,           attn_s2s_tf_forward, s2s_backward,
    attn_s2s_tf_decode,      attn_s2s_tf_maps,    s2s_destroy,
    attn_s2s_tf_decode_batch};
