/* attn_explain.h -- what a model did with one sentence (src/explain/): the logit, the attention
 * probabilities the forward used (Transformer), the probability after each word (recurrent
 * models) and saliency per word. Built on the batch-1 accessors of attn_model.h; written as JSON
 * by attn_explanation_to_json (attn_io.h).
 *
 *     attn_explanation *e = NULL;
 *     if (attn_explain(m, ids, n, NULL, &e, &err) == ATTN_OK) {
 *         // e->logit, e->probability; e->attention [L, NH, S, S] or e->prefix_probability [n];
 *         // e->grad_norm, e->grad_x_input, e->integrated_gradients [n]
 *     }
 *     attn_explanation_free(e);
 */
#ifndef ATTN_EXPLAIN_H
#define ATTN_EXPLAIN_H

#include "attn_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What attn_explain computes for one sentence. Saliency is over the n_words words (the
 * Transformer's [CLS] row is a constant, not a word of the sentence: it gets none), with x_i
 * the first-layer input row of word i and g_i = d logit / d x_i at x:
 *   grad_norm[i]            = |g_i|_2
 *   grad_x_input[i]         = sum_j g_ij x_ij
 *   integrated_gradients[i] = sum_j (x_ij - x'_ij) * mean_k g_ij(x' + (k - 1/2)/N (x - x')),
 *                             k = 1..N (the midpoint rule, N = ig_steps), with the baseline
 *                             x' = the first-layer input of the same number of [PAD] words
 *                             (RNN/LSTM: the [PAD] embedding row; Transformer: [PAD] embedding +
 *                             the word's position; [CLS] keeps its row). Completeness:
 *                             sum_i integrated_gradients[i] ~ logit - ig_baseline_logit,
 *                             within 1 % on short random sentences but far off where the logit
 *                             flips sharply along the path (trained LSTM on long sentences:
 *                             more steps do not help; measured in the README).
 * (A zero baseline was tried first: the pre-norm Transformer's LayerNorm of a*x_i jumps near
 * a = 0, which 64 midpoint steps cannot resolve; completeness missed 1 % by far.) */
#define ATTN_EXPLAIN_IG_STEPS  64
#define ATTN_EXPLAIN_NO_IG     (-1) /* ig_steps: skip integrated gradients */
#define ATTN_EXPLAIN_MAX_STEPS 4096
/* The memory an explanation may ask for unless attn_explain_opts.max_bytes says otherwise:
 * 2 GiB. A recurrent model's integrated gradients hold ATTN_EXPLAIN_IG_CHUNK copies of the
 * sentence's activations per thread (LSTM: under 55 kB per word per thread), the Transformer's
 * attention maps grow with the square of the length. */
#define ATTN_EXPLAIN_MAX_BYTES ((size_t)2 << 30)
typedef struct attn_explain_opts {
    int ig_steps;     /* N in 1..ATTN_EXPLAIN_MAX_STEPS; 0 = ATTN_EXPLAIN_IG_STEPS;
                       * ATTN_EXPLAIN_NO_IG = none (integrated_gradients NULL, ig_steps 0) */
    size_t max_bytes; /* 0 = ATTN_EXPLAIN_MAX_BYTES: an explanation whose upper estimate of the
                       * memory it needs (attn_explain_bytes) is larger is refused with
                       * ATTN_ERR_NOMEM before anything is allocated */
    bool qk;          /* Transformer: also keep each head's q, k and scores (below) */
} attn_explain_opts;

typedef struct attn_explanation {
    attn_arch arch;
    int n_words;
    float logit;              /* the same float as attn_model_forward of the sentence */
    double probability;       /* 1 / (1 + exp(-logit)) in double, as attn predict prints it */
    int n_layers, n_heads, S; /* Transformer: attention's sizes (S = n_words + 1); else 0 */
    float *attention;         /* [n_layers, n_heads, S, S] (layer, head, query, key) or NULL */
    /* With opts.qk (Transformer, else NULL): what each head's softmax was taken of. q and k
     * [n_layers, n_heads, S, head_size] as the forward held them (q already divided by
     * sqrt(head_size): attn_model_attention_qk), scores [n_layers, n_heads, S, S] = q.k^T by
     * the forward's own product (the same kernel, shape and size rule), so that
     * attn_softmax_forward of a score row is the attention row bit for bit. */
    float *q, *k, *scores;
    /* With opts.qk and pos alibi (else NULL), [n_layers, n_heads, S, S]: scores is q.k^T plus
     * the ALiBi term, added as the forward adds it (one float add each): dot_products is q.k^T
     * (the forward's product), score_bias the term (attn_model_score_bias). */
    float *dot_products, *score_bias;
    int head_size;               /* HS with opts.qk (Transformer), else 0 */
    float *prefix_logit;         /* RNN/LSTM: [n_words] logit of words 0..i, as a forward of
                                  * that prefix gives it (attn predict); else NULL */
    double *prefix_probability;  /* RNN/LSTM: [n_words] its probability; else NULL */
    float *grad_norm;            /* [n_words] */
    float *grad_x_input;         /* [n_words] */
    float *integrated_gradients; /* [n_words], or NULL when not asked for */
    int ig_steps;                /* N used (0: none) */
    float ig_baseline_logit;     /* the logit at the baseline x' */
} attn_explanation;

/* Explains sentence ids[0..n_words) (no [CLS]) with m. opts may be NULL (defaults). The logit,
 * attention, saliency and prefixes come from batch-1 passes (exact mode: the floats attn predict
 * computes); the ig_steps integrated-gradient points run ATTN_EXPLAIN_IG_CHUNK (attn_threads.h) at
 * a time (attn_model_forward_embedded_batch), so they round as a batch does. Overwrites m's
 * gradient buffer (left zeroed). *out is the caller's: attn_explanation_free. */
attn_status attn_explain(attn_model *m, const int *ids, int n_words, const attn_explain_opts *opts,
                         attn_explanation **out, attn_error *err);
void attn_explanation_free(attn_explanation *e);
/* An upper estimate of the bytes attn_explain (threads = 1) or attn_explain_pool (threads = the
 * pool's) holds at once for n_words words with ig_steps steps (as in attn_explain_opts): the
 * explanation, the inputs, the integrated-gradient buffers, the models' activations and the
 * replicas' gradients. In double, so that no length overflows it. */
double attn_explain_bytes(const attn_model *m, int n_words, int ig_steps, int threads);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_EXPLAIN_H */
