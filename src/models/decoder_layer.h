/* decoder_layer.h -- one nn.TransformerDecoderLayer (pre- or post-norm, relu or gelu) over a
 * packed batch of target sequences with their encoder memories, forward and backward
 * (decoder_layer.c), and its one-row step with a KV cache. Internal to libattn.
 *
 * Rows are PACKED as in encoder_layer.h: pair i owns target rows trows[i] .. trows[i+1]-1 and
 * memory rows srows[i] .. srows[i+1]-1; q, k, v are head-major [NH, N, HS], the memory's
 * cross-attention keys and values [NH, Ns, HS]. Each pair attends within itself only, so its
 * result is its batch-1 result.
 *
 *   three blocks b = self-attention (causal), cross-attention (to the memory), feed-forward:
 *   pre-norm:  res_{b+1} = res_b + F_b(LN_b(res_b))          out = res_3
 *   post-norm: res_{b+1} = LN_b(res_b + F_b(res_b))          out = res_3
 * with res_0 = x (PyTorch's TransformerDecoderLayer.forward; the memory is never normalised).
 * Positions inside the attention (c->pos rope or alibi, docs/decoder.md) act on the
 * self-attention only, target row t of a pair at position t: rope rotates its q and k, alibi
 * adds -slope_h * (t - j) to its scores before the causal mask. Cross-attention has none. */
#ifndef ATTN_DECODER_LAYER_H
#define ATTN_DECODER_LAYER_H

#include "attn_seq2seq.h"

/* One layer's tensors (PyTorch layout and names); the same struct names their gradients. */
typedef struct attn_decoder_weights {
    float *sa_in_w, *sa_in_b;     /* self_attn.in_proj_weight [3D, D], .in_proj_bias [3D] */
    float *sa_out_w, *sa_out_b;   /* self_attn.out_proj.weight [D, D], .bias [D] */
    float *ca_in_w, *ca_in_b;     /* multihead_attn.in_proj_weight [3D, D] (q | k | v), [3D] */
    float *ca_out_w, *ca_out_b;   /* multihead_attn.out_proj.weight [D, D], .bias [D] */
    float *l1_w, *l1_b;           /* linear1.weight [F, D], .bias [F] */
    float *l2_w, *l2_b;           /* linear2.weight [D, F], .bias [D] */
    float *norm_w[3], *norm_b[3]; /* norm1..3.weight, .bias [D] */
} attn_decoder_weights;

typedef struct attn_decoder_rows {
    int B, N, Ns;     /* pairs, target rows, memory rows */
    const int *trows; /* [B+1] first target row of each pair */
    const int *srows; /* [B+1] first memory row of each pair */
    int step_keys;    /* 0; a cached step's layout: N = 1 query over up to step_keys keys */
    bool unmasked;    /* false; true: self-attention without the causal mask (the causal-mask
                       * experiment, attn_seq2seq_set_causal_mask) */
} attn_decoder_rows;

/* What forward computes and backward reads. */
typedef struct attn_decoder_acts {
    float *ln[3];             /* [N, D] LN_b output (pre: block input; post: res_{b+1}) */
    float *mean[3], *rstd[3]; /* [N] */
    float *sum[3];            /* [N, D] res_b + F_b(...) */
    float *qkv;               /* [N, 3D] self-attention in-projection (bias inside) */
    float *q, *k, *v;         /* [NH, N, HS] q divided by sqrt(HS) */
    float *sa_probs;          /* sum_i NH * T_i * T_i */
    float *sa_ctx;            /* [NH, N, HS] */
    float *sa_att;            /* [N, D] heads concatenated */
    float *cq_lin;            /* [N, D] cross q projection (bias inside) */
    float *cq;                /* [NH, N, HS] divided by sqrt(HS) */
    float *ckv;               /* [Ns, 2D] memory k | v projection (bias inside) */
    float *ck, *cv;           /* [NH, Ns, HS] */
    float *ca_probs;          /* sum_i NH * T_i * S_i */
    float *ca_ctx, *ca_att;   /* [NH, N, HS], [N, D] */
    float *ff1, *act;         /* [N, F] */
    float *out;               /* the layer output (ln[2] or sum[2]) */
    /* positions inside the self-attention (pos rope / alibi; cross-attention has none) */
    const float *rope; /* pos rope: [P, HS] attn_rope_table, P >= the target rows; else unused */
    float *sa_bias;    /* pos alibi: scratch for one pair's [NH, T, keys] score bias, else NULL */
} attn_decoder_acts;

typedef struct attn_decoder_scratch {
    float *d_res, *d_sum, *d_in, *d_att; /* [N, D] */
    float *d_ctx, *d_q, *d_k, *d_v;      /* [NH, N, HS] */
    float *d_qkv;                        /* [N, 3D] */
    float *d_ck, *d_cv;                  /* [NH, Ns, HS] */
    float *d_ckv;                        /* [Ns, 2D] */
    float *d_ff1, *d_act;                /* [N, F] */
    float *attn_work;                    /* 2 * max_i T_i * max(T_i, S_i) */
} attn_decoder_scratch;

/* Carves a's buffers (and s's when s is non-NULL) from base at *used (base NULL: counts). */
void attn_decoder_layout(attn_decoder_acts *a, attn_decoder_scratch *s,
                         const attn_seq2seq_config *c, float *base, size_t *used,
                         const attn_decoder_rows *r);

/* out = layer(x, mem): x [N, D], mem [Ns, D]. */
void attn_decoder_forward(attn_decoder_acts *a, const float *x, const float *mem,
                          const attn_decoder_weights *w, const attn_seq2seq_config *c,
                          const attn_decoder_rows *r);
/* d_x [N, D] = d(x) (written: the caller need not zero it), d_mem [Ns, D] += d(mem) given
 * d_out [N, D]; d_w accumulates. */
void attn_decoder_backward(float *d_x, float *d_mem, const attn_decoder_weights *d_w,
                           const float *d_out, const attn_decoder_acts *a, const float *x,
                           const float *mem, const attn_decoder_weights *w,
                           const attn_seq2seq_config *c, const attn_decoder_rows *r,
                           const attn_decoder_scratch *s);

/* ---- incremental decoding (one new row per sequence and step) -----------------------------
 * The layer's run state for generation (llama2.c): the self-attention keys and values of the
 * rows so far, two arrays [NH, cap, HS], and the memory's cross keys/values, computed once. */
typedef struct attn_decoder_cache {
    float *k, *v;   /* [NH, cap, HS] rows 0..pos-1 filled */
    float *ck, *cv; /* [NH, S, HS] */
    int cap, S;
} attn_decoder_cache;

/* Fills c->ck, c->cv from mem [S, D] (the same products as the full pass). */
void attn_decoder_cache_memory(attn_decoder_cache *cache, float *ckv_scratch, const float *mem,
                               const attn_decoder_weights *w, const attn_seq2seq_config *c);
/* out [n, D] = the layer on rows x [n, D], row r one step of its own sequence at position pos
 * (< its cache's cap; every row at the same position), with its own cache caches[r]: its key
 * and value appended there, its attention over its own rows and memory only. The linear
 * products take the n rows together; the rest is row r's one-row step. a: acts of an n-row
 * layout (attn_decoder_layout with B = 1, N = n, trows {0, n}, srows {0, S} for S >= every
 * cache's S, step_keys = cap). n = 1: the one-row step of a single generation. */
void attn_decoder_step_rows(attn_decoder_acts *a, const float *x, const attn_decoder_weights *w,
                            const attn_seq2seq_config *c, attn_decoder_cache *const *caches, int n,
                            int pos);

#endif /* ATTN_DECODER_LAYER_H */
