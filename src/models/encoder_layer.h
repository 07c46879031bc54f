/* encoder_layer.h -- one nn.TransformerEncoderLayer (pre- or post-norm, relu or gelu) over a
 * packed batch of sentences, forward and backward (encoder_layer.c). Internal to libattn; the
 * Transformer model (transformer.c) and bench/vit_layer.h use it.
 *
 * Rows are PACKED: sentence i owns rows[i] .. rows[i+1]-1 of every [N, .] tensor (S_i
 * positions, [CLS] first). q, k, v and the per-head outputs are head-major [NH, N, HS]: head h
 * of sentence i is the contiguous [S_i, HS] block at (h*N + rows[i])*HS. Each sentence attends
 * to its own positions only, so its attention is exactly its batch-1 attention.
 *
 * The [CLS]-only variant (attn_encoder_cls_*) computes the queries, the attention output, the
 * residuals, LayerNorms and feed-forward for the B [CLS] rows only (row i of its [B, .]
 * tensors is sentence i's [CLS]); keys and values still cover all N rows. The model's last
 * layer uses it when only [CLS] reaches the loss (see transformer.c). */
#ifndef ATTN_ENCODER_LAYER_H
#define ATTN_ENCODER_LAYER_H

#include "attn.h"

/* One layer's parameter tensors (PyTorch layout); the same struct names their gradients. */
typedef struct attn_encoder_weights {
    float *in_proj_weight;                                        /* [3D, D] packed q, k, v */
    float *in_proj_bias;                                          /* [3D] */
    float *out_proj_weight;                                       /* [D, D] */
    float *out_proj_bias;                                         /* [D] */
    float *linear1_weight;                                        /* [F, D] */
    float *linear1_bias;                                          /* [F] */
    float *linear2_weight;                                        /* [D, F] */
    float *linear2_bias;                                          /* [D] */
    float *norm1_weight, *norm1_bias, *norm2_weight, *norm2_bias; /* [D] */
} attn_encoder_weights;

/* The feed-forward block's four tensors (linear1 [F, D] and [F], linear2 [D, F] and [D]), or
 * their gradients: what the encoder and the decoder layers share. */
typedef struct attn_ffn_tensors {
    float *l1_w, *l1_b, *l2_w, *l2_b;
} attn_ffn_tensors;

/* The feed-forward block's backward, in both layers: from d_out [n, D] through linear2, the
 * activation (relu or gelu) and linear1, adding into d_in [n, D] and into the gradients d_w.
 * in [n, D] is the block's input, ff1 [n, F] linear1's output, act [n, F] the activation's;
 * d_act and d_ff1 [n, F] are scratch (with relu, d_ff1 is not used: written in place). */
void attn_ffn_backward(float *d_in, attn_ffn_tensors d_w, const float *d_out, const float *in,
                       const float *ff1, const float *act, attn_ffn_tensors w, int n, int D, int F,
                       attn_activation activation, float *d_act, float *d_ff1);

/* The packed batch: B sentences in N rows. */
typedef struct attn_encoder_rows {
    int B, N;
    const int *rows; /* [B+1] first row of each sentence; rows[B] = N */
} attn_encoder_rows;

/* Stages of a forward, for a profiler's lap hook (bench/vit_layer.h times them). */
typedef enum attn_encoder_stage {
    ATTN_ENCODER_LAYERNORM,
    ATTN_ENCODER_QKV,       /* in_proj GEMM */
    ATTN_ENCODER_SPLIT,     /* bias, scale and head split */
    ATTN_ENCODER_ATTENTION, /* attn_attention_forward of every sentence, heads concatenated */
    ATTN_ENCODER_OUT_PROJ,
    ATTN_ENCODER_FFN_UP,
    ATTN_ENCODER_ACTIVATION,
    ATTN_ENCODER_FFN_DOWN,
    ATTN_ENCODER_ADD, /* residual adds */
    ATTN_ENCODER_STAGE_COUNT
} attn_encoder_stage;

/* What forward computes and backward reads. n_out = N (full layer) or B ([CLS]-only). */
typedef struct attn_encoder_acts {
    float *n1;            /* pre: [N, D] LN1(x); post: [n_out, D] LN1(r1) */
    float *mean1, *rstd1; /* [N] */
    float *qkv;           /* [N, 3D] x.W_in^T, no bias ([CLS]-only: kv [N, 2D], then q [B, D]) */
    float *x_cls;         /* [B, D] [CLS]-only: the [CLS] rows of the attention input */
    float *q, *k, *v;     /* [NH, N, HS]; q = (q + b_q) / sqrt(HS) */
    float *probs;         /* sentence after sentence: [NH, n_q, S_i], n_q = S_i or 1; NULL in a
                           * forward-only use (then long sentences take the blocked path) */
    float *attn_work;     /* forward-only use: attn_attention_forward_work_size(S, S) floats */
    float *ctx;           /* [NH, N, HS] P.v per head ([CLS]-only: at the [CLS] rows) */
    float *att;           /* [n_out, D] heads concatenated */
    float *r1;            /* [n_out, D] x + out_proj(att) */
    float *n2;            /* [n_out, D] pre: LN2(r1); post: LN2(r2) = layer output */
    float *mean2, *rstd2; /* [n_out] */
    float *ff1;           /* [n_out, F] linear1 output (activation input) */
    float *act;           /* [n_out, F] relu/gelu(ff1) */
    float *r2;            /* [n_out, D] pre: r1 + ff = layer output; post: n1 + ff */
    float *out;           /* [n_out, D] the layer output: r2 (pre) or n2 (post) */
    /* positions inside the attention (pos rope / alibi; docs/transformer-positions.md) */
    const float *rope; /* pos rope: [max_len, HS] cos | sin of each position, else unused */
    float *score_bias; /* pos alibi or key_padding: [NH, S_max, S_max] scratch for a sentence's
                        * bias */
    /* [N] nonzero: that row is padding, no query attends to it (a -inf score bias, PyTorch's
     * src_key_padding_mask); NULL: none (attn_encoder, include/attn_encoder.h) */
    const unsigned char *key_padding;
    /* optional: called after each stage of a forward with lap_ctx (NULL: not called) */
    void (*lap)(void *lap_ctx, attn_encoder_stage stage);
    void *lap_ctx;
} attn_encoder_acts;

/* Backward scratch, each buffer named for the gradient it holds. */
typedef struct attn_encoder_scratch {
    float *d_r1, *d_r2, *d_n2; /* [n_out, D] */
    float *d_n1;               /* [N, D] */
    float *d_att;              /* [n_out, D] */
    float *d_ctx;              /* [NH, N, HS] */
    float *d_q, *d_k, *d_v;    /* [NH, N, HS] */
    float *d_qkv;              /* [N, 3D] ([CLS]-only: d_kv [N, 2D], then d_q_cls [B, D]) */
    float *d_x_cls;            /* [B, D] */
    float *d_ff1, *d_act;      /* [n_out, F] */
    float *attn_work;          /* attn_attention_backward_work_size(S_max, S_max) */
} attn_encoder_scratch;

/* out = layer(x), x [N, D]; fills a (a->out [n_out, D]). Backward: d_x[N, D] = d(x) given
 * d_out[n_out, D] (written: the caller need not zero it; [CLS]-only: += d(x)); accumulates the
 * parameter gradients into d_w. */
void attn_encoder_forward(attn_encoder_acts *a, const float *x, const attn_encoder_weights *w,
                          const attn_model_config *c, const attn_encoder_rows *r);
void attn_encoder_backward(float *d_x, const attn_encoder_weights *d_w, const float *d_out,
                           const attn_encoder_acts *a, const float *x,
                           const attn_encoder_weights *w, const attn_model_config *c,
                           const attn_encoder_rows *r, const attn_encoder_scratch *s);
void attn_encoder_cls_forward(attn_encoder_acts *a, const float *x, const attn_encoder_weights *w,
                              const attn_model_config *c, const attn_encoder_rows *r);
void attn_encoder_cls_backward(float *d_x, const attn_encoder_weights *d_w, const float *d_out,
                               const attn_encoder_acts *a, const float *x,
                               const attn_encoder_weights *w, const attn_model_config *c,
                               const attn_encoder_rows *r, const attn_encoder_scratch *s);

/* The arena layout (attn_arena_carve over base from *u; base NULL: counts only). One layer's
 * activations for N rows, n_out of them past the attention (B in a [CLS]-only layer, else N),
 * n_probs floats of probabilities; attn_work stays NULL (the probabilities are kept). The
 * backward scratch for N rows and sentences of up to SM positions, shared by the layers. */
void attn_encoder_acts_layout(attn_encoder_acts *a, const attn_model_config *c, float *base,
                              size_t *u, size_t N, size_t n_out, bool cls_only, size_t n_probs);
void attn_encoder_scratch_layout(attn_encoder_scratch *s, const attn_model_config *c, float *base,
                                 size_t *u, size_t N, size_t SM);

/* Floats of probabilities a layer keeps for sentences of S_i = rows[i+1]-rows[i] positions. */
size_t attn_encoder_probs_size(const attn_model_config *c, const attn_encoder_rows *r,
                               bool cls_only);

#endif /* ATTN_ENCODER_LAYER_H */
