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

#ifdef __cplusplus
}
#endif
#endif /* ATTN_SEQ2SEQ_H */
