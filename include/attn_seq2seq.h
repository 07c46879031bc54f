/* attn_seq2seq.h -- the generative half of attn (write-up §6): sequence-to-sequence tasks and
 * the encoder-decoder Transformer (PyTorch's nn.Transformer) with teacher-forced training and
 * greedy generation. attn.h is the umbrella; this header adds the seq2seq API.
 *
 * Example: rewrite one review into its verdict with a trained model.
 *
 *     attn_error err;
 *     attn_seq2seq *m = NULL;
 *     if (attn_seq2seq_load_json("rewrite.json", &m, &err) != ATTN_OK) { ... err.msg ... }
 *     int src[ATTN_MAX_WORDS], n_src, out[ATTN_S2S_MAX_TGT], n_out;
 *     attn_tokenize("the exam was not very clear", src, ATTN_MAX_WORDS, &n_src, &err);
 *     attn_seq2seq_greedy(m, src, n_src, ATTN_S2S_MAX_TGT, true, out, &n_out, NULL, &err);
 *     // out holds target-vocabulary ids: attn_tgt_vocab_token(out[i]); [EOS] not included
 *     attn_seq2seq_free(m);
 *
 * Dimension letters (besides attn.h's): S source positions, T target positions (teacher
 * forcing: [BOS] + target words), Vs / Vt source / target vocabulary sizes, Le / Ld encoder /
 * decoder layers.
 *
 * Vocabularies (docs/decoder.md):
 *   source: the built-in course-review vocabulary (attn_vocab_builtin(): [PAD], [CLS], the
 *           words); sources are word ids, no [CLS].
 *   target: the source vocabulary's ids unchanged (a copied word keeps its id) followed by four
 *           tokens of the target side only: [BOS] = ATTN_VOCAB_SIZE, [EOS], "positive",
 *           "negative". Id 0 is [PAD] on both sides, the padding a loss ignores.
 */
#ifndef ATTN_SEQ2SEQ_H
#define ATTN_SEQ2SEQ_H

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the target vocabulary (src/data/rewrite.c) --------------------------------------------- */

#define ATTN_TGT_BOS        (ATTN_VOCAB_SIZE + 0)
#define ATTN_TGT_EOS        (ATTN_VOCAB_SIZE + 1)
#define ATTN_TGT_POSITIVE   (ATTN_VOCAB_SIZE + 2)
#define ATTN_TGT_NEGATIVE   (ATTN_VOCAB_SIZE + 3)
#define ATTN_TGT_VOCAB_SIZE (ATTN_VOCAB_SIZE + 4)

/* "[PAD]", a source word, "[BOS]", "[EOS]", "positive", "negative"; NULL if out of range. */
const char *attn_tgt_vocab_token(int id);
/* -1 if token is not in the target vocabulary. */
int attn_tgt_vocab_id(const char *token);

/* ---- tasks: source/target pairs (src/data/rewrite.c) ---------------------------------------- */

typedef enum attn_task { ATTN_TASK_REWRITE } attn_task;
const char *attn_task_name(attn_task t); /* "rewrite" */
attn_status attn_task_from_name(const char *name, attn_task *out, attn_error *err);

/* Longest target (words, without [BOS]/[EOS]) of the rewrite task: polarity subject negation
 * adjective. */
#define ATTN_REWRITE_MAX_TGT 4
/* Longest target a seq2seq model generates (words, [EOS] not counted). */
#define ATTN_S2S_MAX_TGT 64

/* n source/target pairs. The sources are exactly attn_data_generate's sentences of (set, n,
 * seed) (src keeps its labels); target i is tgt_ids[tgt_offsets[i] .. + tgt_lengths[i]) in the
 * target vocabulary, and align[j] is the 0-based source position target word j comes from. */
typedef struct attn_pairs {
    attn_task task;
    attn_dataset *src;   /* [n] the sources, owned */
    int *tgt_lengths;    /* [n] target words (no [BOS], no [EOS]) */
    size_t *tgt_offsets; /* [n+1] */
    int *tgt_ids;        /* [tgt_offsets[n]] target vocabulary ids */
    int *align;          /* [tgt_offsets[n]] source position of each target word */
    char **tgt_texts;    /* [n] the targets, single spaces */
} attn_pairs;

/* rewrite: target `<polarity> <subject> [<negation>] <first adjective>` of a review sentence
 * ids[n] (source vocabulary) whose label is `label` (1 positive): the core clause's subject, its
 * negation if any, its adjective (intensifiers, fillers and the distractor clause dropped).
 * Alignment: polarity -> the first adjective's position (the word that decides it, with the
 * negation), the others -> their own positions. tgt and align have room for
 * ATTN_REWRITE_MAX_TGT. ATTN_ERR_VALUE when ids is not a sentence of the grammar. */
attn_status attn_rewrite_target(const int *ids, int n, int label, int *tgt, int *align, int *n_tgt,
                                attn_error *err);
/* The pairs of `task` for attn_data_generate's (set, n, seed). */
attn_status attn_pairs_generate(attn_task task, attn_set set, int n, uint64_t seed,
                                attn_pairs **out, attn_error *err);
void attn_pairs_free(attn_pairs *p); /* NULL ok */

/* ---- models (src/models/seq2seq*.c) --------------------------------------------------------- */

typedef enum attn_s2s_arch {
    ATTN_S2S_TRANSFORMER, /* "seq2seq-transformer": nn.Transformer with embeddings and a head */
} attn_s2s_arch;

/* The blueprint of a seq2seq model. seq2seq-transformer (docs/decoder.md): source embedding +
 * positions -> enc_layers x TransformerEncoderLayer -> encoder.norm = memory; [BOS] + target
 * embedding + positions -> dec_layers x TransformerDecoderLayer (causal self-attention,
 * cross-attention to the memory) -> decoder.norm -> head Linear(D, tgt_vocab). */
typedef struct attn_seq2seq_config {
    attn_s2s_arch arch;
    int src_vocab, tgt_vocab;   /* Vs (91), Vt (95) */
    int d_model, n_heads;       /* D (32), NH (2) */
    int ffn_dim;                /* F (64) */
    int enc_layers, dec_layers; /* Le (2), Ld (2): 1..ATTN_TRANSFORMER_MAX_LAYERS */
    int max_src_len;            /* source positions (80) */
    int max_tgt_len;            /* decoder positions, [BOS] included (16) */
    attn_norm norm;             /* pre (norm_first=True) or post; both have the final norms */
    attn_activation activation; /* relu or gelu */
    attn_pos pos;               /* learned (default), sinusoidal or none, on both sides */
} attn_seq2seq_config;

attn_seq2seq_config attn_seq2seq_config_default(attn_s2s_arch arch);
const char *attn_s2s_arch_name(attn_s2s_arch a); /* "seq2seq-transformer" */
/* Fails (ATTN_ERR_VALUE) naming the expected names. */
attn_status attn_s2s_arch_from_name(const char *name, attn_s2s_arch *out, attn_error *err);
/* Checks sizes; the message names the field. */
attn_status attn_seq2seq_config_validate(const attn_seq2seq_config *cfg, attn_error *err);

typedef struct attn_seq2seq attn_seq2seq; /* opaque; src/models/seq2seq_internal.h */

/* Parameters drawn from seed (PyTorch's initialisers: nn.Transformer's xavier_uniform_ on every
 * matrix, zero attention biases, unit norms, N(0, 1) embeddings, the sinusoid table times 2 for
 * learned positions, nn.Linear's uniform for the rest). */
attn_status attn_seq2seq_create(const attn_seq2seq_config *cfg, uint64_t seed, attn_seq2seq **out,
                                attn_error *err);
void attn_seq2seq_free(attn_seq2seq *m); /* NULL ok */
const attn_seq2seq_config *attn_seq2seq_config_of(const attn_seq2seq *m);
size_t attn_seq2seq_n_params(const attn_seq2seq *m);
float *attn_seq2seq_params(attn_seq2seq *m);
float *attn_seq2seq_grads(attn_seq2seq *m); /* NULL before the first backward */
/* Tensors in state_dict order ("src_embedding.weight", "transformer.encoder.layers.0...", ...) */
size_t attn_seq2seq_tensor_count(const attn_seq2seq *m);
const char *attn_seq2seq_tensor_name(const attn_seq2seq *m, size_t i);
int attn_seq2seq_tensor_shape(const attn_seq2seq *m, size_t i, int shape[4]); /* ndim */
size_t attn_seq2seq_tensor_offset(const attn_seq2seq *m, size_t i);
size_t attn_seq2seq_tensor_numel(const attn_seq2seq *m, size_t i);
long attn_seq2seq_tensor_find(const attn_seq2seq *m, const char *name); /* -1 if absent */

/* B pairs, teacher forced: source i is src_ids[i*S .. + src_lengths[i]) (source ids, 1..S
 * words), decoder input i is tgt_ids[i*T .. + tgt_lengths[i]) (target ids, [BOS] first). */
typedef struct attn_s2s_batch {
    int B, S, T;
    const int *src_ids, *src_lengths; /* [B, S], [B] */
    const int *tgt_ids, *tgt_lengths; /* [B, T], [B] */
} attn_s2s_batch;

/* logits [sum_i tgt_lengths[i], Vt]: pair i's rows one after the other, row t the prediction of
 * the word after decoder input t. B = 1 is bit-identical to PyTorch's eval forward (no_grad). */
attn_status attn_seq2seq_forward(attn_seq2seq *m, const attn_s2s_batch *b, float *logits,
                                 attn_error *err);
/* Gradients of the last forward's batch from d_logits (same layout), ACCUMULATED into the
 * model's gradient array (allocated, zeroed, on first use). */
attn_status attn_seq2seq_backward(attn_seq2seq *m, const attn_s2s_batch *b, const float *d_logits,
                                  attn_error *err);
void attn_seq2seq_zero_grad(attn_seq2seq *m);

/* Greedy decoding of source src[n_src]: from [BOS], the argmax word (ties: the lower id) until
 * [EOS] or max_out words. cache true: one new decoder row per step with a KV cache; false: the
 * decoder recomputed over the whole prefix each step (PyTorch's nn.Transformer loop, bit for
 * bit). out[max_out] receives the words ([EOS] not included), *n_out their count;
 * step_logits (NULL or [max_out + 1, Vt]) each step's logits; *n_steps (may be NULL) the steps
 * taken (n_out + 1 when [EOS] ended it). max_out + 1 <= max_tgt_len. */
attn_status attn_seq2seq_greedy(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                                int *out, int *n_out, float *step_logits, int *n_steps,
                                attn_error *err);

/* ---- training and evaluation (src/train/seq2seq_train.c) ------------------------------------ */

typedef struct attn_s2s_train_config {
    int epochs;     /* 10 */
    int batch_size; /* 32 pairs per Adam step */
    int holdout;    /* 500: held-out pairs decoded after every epoch (0 = none) */
    int keep_best;  /* 1: end with the parameters of the best held-out exact match */
    uint64_t seed;  /* shuffling */
    attn_adam_config adam;
} attn_s2s_train_config;

typedef struct attn_s2s_epoch_stats {
    int epoch, epochs;    /* 1-based */
    long steps;           /* Adam steps so far */
    double loss;          /* mean cross-entropy per target token over the epoch's batches */
    double holdout_exact; /* exact match of greedy decoding on the held-out pairs (NaN: none) */
    double tokens_per_s;  /* target tokens ([EOS] included) trained per second */
    double elapsed_s;
} attn_s2s_epoch_stats;

typedef struct attn_s2s_callbacks {
    bool (*on_epoch)(const attn_s2s_epoch_stats *st, void *user); /* false stops */
    void *user;
} attn_s2s_callbacks;

attn_s2s_train_config attn_s2s_train_config_default(void);
/* Teacher-forced training of m on `train` (docs/decoder.md): per epoch a shuffle (seed), batches,
 * cross-entropy over target words and [EOS], Adam; the first cfg->holdout pairs of heldout scored
 * by exact match after each epoch. ATTN_ERR_VALUE on a non-finite loss or gradient. */
attn_status attn_seq2seq_train(attn_seq2seq *m, const attn_pairs *train, const attn_pairs *heldout,
                               const attn_s2s_train_config *cfg, const attn_s2s_callbacks *cb,
                               attn_error *err);

typedef struct attn_s2s_eval {
    int n;            /* pairs */
    double exact;     /* fraction whose greedy output (KV cache) equals the target exactly */
    double token_acc; /* fraction of target positions ([EOS] included) predicted right */
} attn_s2s_eval;
/* Greedy decoding of pairs [first, first + n) of p, scored against their targets. */
attn_status attn_seq2seq_evaluate(attn_seq2seq *m, const attn_pairs *p, int first, int n,
                                  attn_s2s_eval *out, attn_error *err);

/* Sampling (src/models/seq2seq_sample.c, docs/decoder.md): each step draws the next token from
 * softmax(logits / temperature) restricted to the top_k most probable (0: all) and then to the
 * smallest set whose probability reaches top_p (0 or 1: no limit), with the project's splitmix64
 * generator seeded with `seed` (attn_rng); tools/seq2seq_models.sample draws the same tokens. As
 * attn_seq2seq_greedy otherwise (cache: the KV-cached decoder, else the recomputing one). */
typedef struct attn_s2s_sampling {
    double temperature; /* > 0 */
    int top_k;          /* >= 0 */
    double top_p;       /* 0..1 */
    uint64_t seed;
} attn_s2s_sampling;
attn_status attn_seq2seq_sample(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                                const attn_s2s_sampling *cfg, int *out, int *n_out,
                                float *step_logits, int *n_steps, attn_error *err);

/* Beam search of width k (1..ATTN_S2S_MAX_BEAM) on the recomputing decoder (src/models/
 * seq2seq_beam.c, docs/decoder.md): hypotheses scored by the sum of log-probabilities (double),
 * the best k candidates kept per step (ties: hypothesis, then token id), finished ones ranked by
 * the length-normalised score sum / (words + 1). out[max_out] receives the best one's words,
 * *score (may be NULL) its normalised score. */
#define ATTN_S2S_MAX_BEAM 64
attn_status attn_seq2seq_beam(attn_seq2seq *m, const int *src, int n_src, int max_out, int k,
                              int *out, int *n_out, double *score, attn_error *err);

/* ---- weights files (src/io/seq2seq_json.c) ------------------------------------------------ *
 * {"format": "attn-seq2seq-weights-v1", "config": {"arch", "src_vocab", "tgt_vocab", "d_model",
 * "n_heads", "ffn_dim", "enc_layers", "dec_layers", "max_src_len", "max_tgt_len", "norm",
 * "activation", "pos"}, "tensors": {state_dict key: {"shape", "data" | "data_b64"}}}; floats
 * %.9g or base64 of little-endian float32. Written atomically; read strictly (every key and
 * tensor exactly once, exact shapes, finite values; all problems reported, naming the file).
 * A classifier's file (attn-weights-v1) is refused as such. */
attn_status attn_seq2seq_save_json(attn_seq2seq *m, bool grads, bool b64, const char *path,
                                   attn_error *err);
attn_status attn_seq2seq_load_json(const char *path, attn_seq2seq **out, attn_error *err);

/* ---- the decoder's attentions (src/kernels/attention_masked.c), ops as in attn_kernels.h ----
 * out_h[n_q,HS] = softmax(q_h.k_h^T + mask) . v_h for h < NH, as PyTorch 1.13's
 * F.multi_head_attention_forward (baddbmm with the mask, softmax over the full row, bmm).
 * q is already divided by sqrt(HS). Head h of q/out (and d_q/d_out) starts at h * q_stride, of
 * k/v (and d_k/d_v) at h * kv_stride. probs [NH, n_q, n_k]: kept for backward (required).
 * Causal: query i is at position q_pos + i and sees keys 0..q_pos+i (q_pos + n_q <= n_k); the
 * rest get -inf and probability 0 (teacher forcing: q_pos 0, n_k = n_q; a cached step: n_q 1,
 * q_pos n_k - 1). Cross: every key. Backward ACCUMULATES (any d_ may be NULL); work:
 * attn_attention_backward_work_size(n_q, n_k) floats. */
void attn_causal_attention_forward(float *out, float *probs, const float *q, const float *k,
                                   const float *v, int NH, int n_q, int n_k, int HS, int q_pos,
                                   size_t q_stride, size_t kv_stride);
void attn_causal_attention_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                                    const float *probs, const float *q, const float *k,
                                    const float *v, int NH, int n_q, int n_k, int HS,
                                    size_t q_stride, size_t kv_stride, float *work);
void attn_cross_attention_forward(float *out, float *probs, const float *q, const float *k,
                                  const float *v, int NH, int n_q, int n_k, int HS, size_t q_stride,
                                  size_t kv_stride);
void attn_cross_attention_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                                   const float *probs, const float *q, const float *k,
                                   const float *v, int NH, int n_q, int n_k, int HS,
                                   size_t q_stride, size_t kv_stride, float *work);

/* ---- the seq2seq loss (src/kernels/cross_entropy.c) ---------------------------------------- *
 * nn.CrossEntropyLoss(ignore_index=ignore), reduction mean: logits [rows, V], labels [rows];
 * rows labelled `ignore` count for nothing (NaN when every row is ignored, as PyTorch). In
 * double. Backward: d_logits += d_loss * (softmax - onehot) / (rows not ignored). */
double attn_cross_entropy_forward(const float *logits, const int *labels, int rows, int V,
                                  int ignore);
void attn_cross_entropy_backward(float *d_logits, float d_loss, const float *logits,
                                 const int *labels, int rows, int V, int ignore);
/* Both in one pass over the logits (each row's log-sum-exp computed once): returns the loss and
 * adds the gradient, the same bits as forward then backward. */
double attn_cross_entropy_forward_backward(float *d_logits, float d_loss, const float *logits,
                                           const int *labels, int rows, int V, int ignore);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_SEQ2SEQ_H */
