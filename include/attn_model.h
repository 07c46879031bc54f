/* attn_model.h -- the four models (src/models/): an Elman RNN, an LSTM, a GRU and a Transformer
 * encoder with a [CLS] token, each a classifier with one logit per sentence. A model is a
 * config (the blueprint), one flat parameter array with named views (PyTorch state_dict names
 * and layouts), one flat gradient array of the same layout, and run state (activations).
 *
 * Dimension letters (used in every shape comment of the project):
 *   B  batch (sentences)              T  positions (words; +1 for [CLS] in the Transformer)
 *   V  vocabulary (91)                E  word embedding width of RNN/LSTM/GRU (16)
 *   H  RNN/LSTM/GRU hidden size (32)  D  Transformer model width (32)
 *   NH attention heads (2)            HS head size (D / NH = 16)
 *   F  feed-forward width (64)        L  layers (Transformer 2, recurrent 1)
 *
 *     attn_model_config cfg = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
 *     attn_model *m = NULL;
 *     attn_model_create(&cfg, 1, &m, &err);                     // PyTorch's initialisation
 *     int ids[] = {3, 11, 15, 22}, len = 4;
 *     attn_batch b = {.B = 1, .T = 4, .ids = ids, .lengths = &len};
 *     float logit, d_logit = 1.0f;
 *     attn_model_forward(m, &b, &logit, &err);                 // probability = sigmoid(logit)
 *     attn_model_zero_grad(m);
 *     attn_model_backward(m, &b, &d_logit, &err);              // += into attn_model_grads(m)
 *     attn_model_free(m);
 */
#ifndef ATTN_MODEL_H
#define ATTN_MODEL_H

#include "attn_data.h"
#include "attn_kernelset.h"
#include "attn_util.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- models (src/models/) --------------------------------------------------------------- */

/* ATTN_ARCH_GRU comes last so the three models of the write-up keep their numbers. */
typedef enum attn_arch {
    ATTN_ARCH_RNN,
    ATTN_ARCH_LSTM,
    ATTN_ARCH_TRANSFORMER,
    ATTN_ARCH_GRU /* nn.GRU (gates r, z, n), the recurrent models' sizes */
} attn_arch;
typedef enum attn_norm { ATTN_NORM_PRE, ATTN_NORM_POST } attn_norm;
typedef enum attn_activation { ATTN_ACT_RELU, ATTN_ACT_GELU } attn_activation;
/* How the Transformer learns where a word is (docs/transformer-positions.md). A new scheme adds
 * a value here, a name in attn_pos_name and a case in transformer.c's positions functions. */
typedef enum attn_pos {
    ATTN_POS_LEARNED,    /* "learned": pos_embedding [max_len, D], a trained parameter (default) */
    ATTN_POS_SINUSOIDAL, /* "sinusoidal": the fixed sin/cos table (Vaswani et al., base 10000,
                          * unscaled), not trained and not a tensor of the weights file */
    ATTN_POS_NONE,       /* "none": no position information at all */
    ATTN_POS_ROPE,       /* "rope": rotary q and k per head (GPT-NeoX halves, base 10000) */
    ATTN_POS_ALIBI,      /* "alibi": score bias -slope_h * |i - j| (Press et al. 2022) */
} attn_pos;
#define ATTN_N_POS                  5
#define ATTN_TRANSFORMER_MAX_LAYERS 12 /* n_layers of a transformer: 1..12 */
#define ATTN_RECURRENT_MAX_LAYERS   8  /* n_layers of rnn/lstm/gru (num_layers): 1..8 */

/* The blueprint. Defaults (attn_model_config_default) are the write-up's models. */
typedef struct attn_model_config {
    attn_arch arch;
    int vocab_size;  /* V = 91 */
    int embed_dim;   /* E (rnn/lstm/gru: 16) or D (transformer: 32) */
    int hidden_size; /* H (rnn/lstm/gru: 32); unused by the transformer */
    int n_heads;     /* NH (transformer: 2) */
    int ffn_dim;     /* F (transformer: 64) */
    int n_layers;    /* L (transformer: 2; rnn/lstm/gru: 1) */
    int max_len;     /* positions incl. [CLS] (transformer: 81) */
    attn_norm norm;  /* transformer: pre (norm_first=True) has a final "norm"; post has none */
    attn_activation activation; /* transformer FFN: relu (default) or gelu (erf form) */
    attn_pos pos;               /* transformer positions: learned (default), sinusoidal,
                                 * none, rope, alibi */
    /* transformer: 0 (default) scores q.k / sqrt(d_k) as PyTorch does; 1 leaves out the
     * 1/sqrt(d_k) (the `scaling` experiment; not a PyTorch option). JSON: "attn_unscaled": 1
     * only when set. */
    int attn_unscaled;
} attn_model_config;

attn_model_config attn_model_config_default(attn_arch arch);
const char *attn_arch_name(attn_arch a); /* "rnn", "lstm", "transformer", "gru" */
const char *attn_pos_name(attn_pos p);   /* "learned", "sinusoidal", "none", "rope", "alibi" */
/* -1 when name is not a position scheme. */
int attn_pos_from_name(const char *name);
attn_status attn_arch_from_name(const char *name, attn_arch *out, attn_error *err);
/* Checks sizes (positive, D divisible by NH, ...); the message names the field. */
attn_status attn_model_config_validate(const attn_model_config *cfg, attn_error *err);
/* The number of parameters a model of a valid cfg has, without creating it. */
size_t attn_model_config_n_params(const attn_model_config *cfg);

typedef struct attn_model attn_model; /* opaque; src/models/model_internal.h */

/* A padded batch, batch-first like PyTorch. Sentence b has lengths[b] >= 1 words in
 * ids[b*T .. b*T + lengths[b]); the rest is ATTN_PAD_ID. The Transformer prepends [CLS]
 * itself, so T <= max_len - 1 for it. RNN/LSTM read the hidden state after word lengths[b]. */
typedef struct attn_batch {
    int B, T;
    const int *ids;     /* [B, T] */
    const int *lengths; /* [B] */
} attn_batch;

/* Creates a model with parameters initialised as PyTorch initialises the reference modules,
 * drawn from attn_rng seeded with `seed`. */
attn_status attn_model_create(const attn_model_config *cfg, uint64_t seed, attn_model **out,
                              attn_error *err);
void attn_model_free(attn_model *m);
/* Where a loader's new model (either family: attn_seq2seq_create_from too) takes its parameters
 * from: params NULL: zeros of its own, no initialisation drawn (the loader fills them); else
 * params[n_params] are the caller's -- e.g. a mapped file -- kept for the model's life, written
 * by training like any model's, and handed back with release(owner) (NULL: never) when the
 * model is freed; if creating it fails they stay the caller's. Replicas borrow them as they
 * borrow any model's. */
typedef struct attn_param_source {
    float *params;
    void (*release)(void *owner);
    void *owner;
} attn_param_source;
attn_status attn_model_create_from(const attn_model_config *cfg, const attn_param_source *src,
                                   attn_model **out, attn_error *err);
const attn_model_config *attn_model_config_of(const attn_model *m);
/* The kernels that computed m's parameters (attn_kernelset.h): the record of the file they were
 * loaded from, or of the process that trained them; NULL when nothing recorded it (a new model,
 * a file without a record). Savers write it when there is one; training sets it at every epoch
 * (k NULL: the current process's kernels). */
const attn_kernels_info *attn_model_kernels(const attn_model *m);
void attn_model_set_kernels(attn_model *m, const attn_kernels_info *k);

/* logits: [B], one logit per sentence (probability = sigmoid(logit)). Keeps the activations
 * needed by attn_model_backward. Grows the activation arena as needed. */
attn_status attn_model_forward(attn_model *m, const attn_batch *b, float *logits, attn_error *err);
/* The same logits, bit for bit, from a forward that no backward will follow (evaluation,
 * prediction): the RNN, LSTM and GRU keep only one step's gates and states instead of every
 * step's, so their working set stays in cache. A following attn_model_backward back-propagates
 * nothing (as after attn_model_prefix_logits). */
attn_status attn_model_forward_infer(attn_model *m, const attn_batch *b, float *logits,
                                     attn_error *err);
/* Back-propagates d_logits [B] through the last forward (same batch) and ACCUMULATES into the
 * gradient buffer (allocated on first use; ATTN_ERR_NOMEM if that fails). */
attn_status attn_model_backward(attn_model *m, const attn_batch *b, const float *d_logits,
                                attn_error *err);
void attn_model_zero_grad(attn_model *m); /* memset of the gradient buffer */

size_t attn_model_n_params(const attn_model *m);
float *attn_model_params(attn_model *m); /* [n_params] */
float *attn_model_grads(attn_model *m);  /* [n_params] or NULL before the first backward */
/* The same, read-only, for code that only reads a model (exporters). */
const float *attn_model_params_const(const attn_model *m);
const float *attn_model_grads_const(const attn_model *m);
size_t attn_model_tensor_count(const attn_model *m);
const char *attn_model_tensor_name(const attn_model *m, size_t i); /* state_dict key */
/* shape: [4], returns the number of dims; the tensor's element count is the shape product. */
int attn_model_tensor_shape(const attn_model *m, size_t i, int shape[4]);
size_t attn_model_tensor_offset(const attn_model *m, size_t i); /* into params and grads */
size_t attn_model_tensor_numel(const attn_model *m, size_t i);
/* Index of a tensor by state_dict key, or -1. */
long attn_model_tensor_find(const attn_model *m, const char *name);
/* The vector a Transformer adds to the embedding at position p (0 = [CLS], p < max_len) into
 * row[embed_dim]: row p of its trained pos_embedding (learned) or of the fixed table the
 * forward adds (sinusoidal, bit for bit); false, row untouched, for a scheme that adds none
 * (none; rope and alibi act in the attention), another model, or p out of range
 * (src/models/position_rows.c). */
bool attn_model_position_row(const attn_model *m, int p, float *row);
/* ATTN_ERR_VALUE naming the first tensor (and index) holding NaN/Inf in params (or grads). */
attn_status attn_model_check_finite(const attn_model *m, bool grads, attn_error *err);

/* ---- looking inside a model: batch-1 accessors (src/models/); attn_explain.h builds on them *
 * "The first layer's input" x of a sentence of n words: RNN/LSTM, the n embedding rows fed to the
 * cell, [n, E]; Transformer, x0 = embedding + pos_embedding of [CLS] and the n words, [n+1, D]
 * ([CLS] row first). The accessors read the buffers of the model's last forward/backward (valid
 * until the next call on the model) and fail (ATTN_ERR_ARG) unless that forward had B = 1. */

/* Forward of one sentence from its first-layer input vectors x (layout above) instead of ids:
 * with x the rows attn_model_forward builds, the logit is the same float. A following
 * attn_model_backward takes a batch of the same shape (B = 1, T = lengths[0] = n_words); its ids
 * only choose the embedding rows that receive the input gradient. */
attn_status attn_model_forward_embedded(attn_model *m, const float *x, int n_words, float *logit,
                                        attn_error *err);
/* The same for B sentences of n_words words each at once: x [B, rows, width] (each sentence's
 * rows as above, one sentence after the other), logits [B]. A following attn_model_backward takes
 * a batch of B sentences of length n_words; attn_model_input_grad then reads each one's
 * d logit / d x. (A batch rounds differently from B batch-1 forwards: OpenBLAS rounds a GEMM
 * row by the row count. Batch 1 is the exact mode.) */
attn_status attn_model_forward_embedded_batch(attn_model *m, const float *x, int B, int n_words,
                                              float *logits, attn_error *err);
/* d_x [rows, width] = d loss / d x of sentence i of the last forward_embedded(_batch) and the
 * backward after it (ATTN_ERR_ARG if the batch has no sentence i). */
attn_status attn_model_input_grad(const attn_model *m, int i, float *d_x, attn_error *err);
/* RNN/LSTM/GRU: logits[p] = the logit attn_model_forward gives the prefix ids[0..p] at batch 1,
 * p = 0..n_words-1, bit for bit, in one pass: the head on the hidden state after each word,
 * except that a step is run again where the prefix's own input GEMM rounds a row differently
 * (OpenBLAS may round a row by the row count; measured up to 9 ULP). ATTN_ERR_ARG for the
 * Transformer (each prefix is its own forward there). Overwrites the activation buffers. */
attn_status attn_model_prefix_logits(attn_model *m, const int *ids, int n_words, float *logits,
                                     attn_error *err);
/* x (the last batch-1 forward's first-layer input, *n_rows x *width) and d_x (d loss / d x of the
 * last backward after it; garbage before one). Either pointer may be NULL. */
attn_status attn_model_input(const attn_model *m, const float **x, const float **d_x, int *n_rows,
                             int *width, attn_error *err);
/* Transformer: layer `layer`'s attention probabilities of the last batch-1 forward, the ones it
 * used: *probs [NH, S, S] (head, query, key), S = n_words + 1 ([CLS] first). */
attn_status attn_model_attention_probs(const attn_model *m, int layer, const float **probs, int *S,
                                       attn_error *err);
/* Transformer: layer `layer`'s queries and keys of the last batch-1 forward, the ones its
 * scores q.k^T were made of: q already scaled by 1/sqrt(HS) (as PyTorch scales q, not the
 * scores; rope: after the rotation), HS = D / NH. Head h of position t (0 = [CLS]) is
 * q + h * *head_stride + t * *row_stride (k likewise), HS contiguous floats; *S positions.
 * ATTN_ERR_ARG for a model without attention or a last forward not at batch 1. With pos alibi
 * the scores are q.k^T plus attn_model_score_bias's term. */
attn_status attn_model_attention_qk(const attn_model *m, int layer, const float **q,
                                    const float **k, size_t *head_stride, size_t *row_stride,
                                    int *S, attn_error *err);
/* Transformer, pos alibi: the term its forward adds to q.k^T before each softmax, the same in
 * every layer, into bias [NH, S, S] (head, query, key): -slope_h * |i - j| for query position i
 * and key position j ([CLS] = 0; slopes of Press et al. 2022, as tools/attn_models.py). False
 * (bias untouched) for a model whose scores are q.k^T alone. */
bool attn_model_score_bias(const attn_model *m, int S, float *bias);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_MODEL_H */
