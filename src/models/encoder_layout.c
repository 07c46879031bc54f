/* encoder_layout.c -- where one encoder layer's activations and the shared backward scratch
 * live in a model's arena (encoder_layer.h); the Transformer classifier and the seq2seq encoder
 * both lay their layers out with it. */
#include "encoder_layer.h"
#include "model_internal.h"

/* One layer's activations for N rows, n_out of them past the attention (B in a [CLS]-only
 * layer, else N), n_probs floats of probabilities. */
void attn_encoder_acts_layout(attn_encoder_acts *a, const attn_model_config *c, float *base,
                              size_t *u, size_t N, size_t n_out, bool cls_only, size_t n_probs) {
    const size_t D = c->embed_dim, F = c->ffn_dim;
    a->n1 = attn_arena_carve(base, u, N * D);
    a->mean1 = attn_arena_carve(base, u, N);
    a->rstd1 = attn_arena_carve(base, u, N);
    a->qkv = attn_arena_carve(base, u, 3 * N * D);
    a->x_cls = attn_arena_carve(base, u, cls_only ? n_out * D : 0);
    ATTN_ARENA_CARVE_EACH(base, u, N * D, &a->q, &a->k, &a->v);
    a->probs = attn_arena_carve(base, u, n_probs);
    a->attn_work = NULL; /* probabilities are kept: the naive path needs no work */
    a->ctx = attn_arena_carve(base, u, N * D);
    ATTN_ARENA_CARVE_EACH(base, u, n_out * D, &a->att, &a->r1, &a->n2);
    ATTN_ARENA_CARVE_EACH(base, u, n_out, &a->mean2, &a->rstd2);
    ATTN_ARENA_CARVE_EACH(base, u, n_out * F, &a->ff1, &a->act);
    a->r2 = attn_arena_carve(base, u, n_out * D);
    a->out = c->norm == ATTN_NORM_PRE ? a->r2 : a->n2;
    a->key_padding = NULL;
}

/* Backward scratch for N rows and sentences of up to SM positions. */
void attn_encoder_scratch_layout(attn_encoder_scratch *s, const attn_model_config *c, float *base,
                                 size_t *u, size_t N, size_t SM) {
    const size_t D = c->embed_dim, F = c->ffn_dim;
    ATTN_ARENA_CARVE_EACH(base, u, N * D, &s->d_r1, &s->d_r2, &s->d_n2, &s->d_n1, &s->d_att,
                          &s->d_ctx, &s->d_q, &s->d_k, &s->d_v);
    s->d_qkv = attn_arena_carve(base, u, 3 * N * D);
    s->d_x_cls = attn_arena_carve(base, u, N * D);
    ATTN_ARENA_CARVE_EACH(base, u, N * F, &s->d_ff1, &s->d_act);
    s->attn_work = attn_arena_carve(base, u, attn_attention_backward_work_size((int)SM, (int)SM));
}
