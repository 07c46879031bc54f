/* attn_lab.h -- the lab (src/lab/): looking inside the models beyond attn_explain.
 *
 *   s1  attn_saliency_*       the gradient-versus-distance curve: how much the logit still
 *                             feels a word k positions before the last one
 *   s2  attn_attend_*         the step-by-step attention calculator on small made-up numbers
 *   s3  attn_lesson_scaling   why scores are divided by sqrt(d_k)
 *   s4  attn_sinusoid_*, attn_equivariance_*
 *                             the sinusoid table, PE(p).PE(q) as a function of q - p, and
 *                             permutation equivariance without position information
 *   s7  attn_observe_*        the write-up's observations on trained weights: where [CLS]
 *                             attends, how the recurrent models' probability moves
 *
 * Everything runs at batch 1 in exact mode through the public model API (attn.h) and the
 * kernels (attn_kernels.h); nothing here prints but the *_write reports, into the caller's
 * FILE (what `attn lesson` and `attn attend` show). Ownership as in attn.h: every *_compute that
 * returns an object has a *_free that accepts NULL. These calls overwrite the model's
 * activation and gradient buffers (the gradient buffer is left zeroed).
 */
#ifndef ATTN_LAB_H
#define ATTN_LAB_H

#include "attn_io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- s1: gradient versus distance -------------------------------------------------------- *
 * For a sentence of T words with first-layer inputs x_0..x_{T-1} (attn_model.h: the embedding rows
 * of RNN/LSTM, embedding + position for the Transformer) and g_i = d logit / d x_i:
 *     ratio[k] = |g_{T-1-k}|_2 / |g_{T-1}|_2,   k = 0..T-1 (distance from the last word),
 * so ratio[0] = 1. The curve is the median and the 10th and 90th percentiles of ratio[k] over
 * n sentences of T words drawn uniformly from the 89 words (ids 2..90) with attn_rng seeded by
 * `seed` (percentiles by linear interpolation between order statistics, numpy's default). */
#define ATTN_SALIENCY_DEFAULT_T 60
#define ATTN_SALIENCY_DEFAULT_N 100

typedef struct attn_saliency_opts {
    int T;         /* words per sentence, 1..ATTN_MAX_WORDS; 0 = ATTN_SALIENCY_DEFAULT_T */
    int n;         /* sentences, 1..100000; 0 = ATTN_SALIENCY_DEFAULT_N */
    uint64_t seed; /* of the random sentences (not of the model) */
} attn_saliency_opts;

typedef struct attn_saliency_curve {
    int T, n;       /* distances 0..T-1, sentences */
    double *median; /* [T] indexed by distance k */
    double *p10;    /* [T] */
    double *p90;    /* [T] */
} attn_saliency_curve;

/* ratio[k] for one sentence ids[0..n_words) (no [CLS]); ratio: [n_words]. A zero gradient at
 * the last word gives ATTN_ERR_VALUE. */
attn_status attn_saliency_ratios(attn_model *m, const int *ids, int n_words, double *ratio,
                                 attn_error *err);
/* The curve over opts->n random sentences (opts may be NULL: defaults, seed 0). *out is the
 * caller's: attn_saliency_curve_free. */
attn_status attn_saliency_curve_compute(attn_model *m, const attn_saliency_opts *opts,
                                        attn_saliency_curve **out, attn_error *err);
void attn_saliency_curve_free(attn_saliency_curve *c);
/* The curves in one log-scale chart (median line, 10th-90th percentile band each) through
 * attn_plot.h; path ends in .png or .svg; title NULL: a default. */
attn_status attn_saliency_plot(const attn_saliency_curve *const *curves, const char *const *names,
                               int n_curves, const char *title, const char *path, attn_error *err);

/* ---- s2: the attention calculator ---------------------------------------------------------- *
 * One head of self-attention on made-up numbers small enough to print: each word of the
 * vocabulary has a 4-dimensional embedding built from its category (documented in
 * src/lab/attend.c and `attn attend --help`):
 *     dim 0 sentiment (+1 positive, -1 negative adjective), dim 1 negation (not, never),
 *     dim 2 noun (subjects and distractor nouns), dim 3 everything else (function words),
 * plus 0.1 * ((id mod 5) - 2) on dim 3 so that no two words of a category are equal.
 * W_Q, W_K, W_V are fixed 4x3 matrices (ATTN_ATTEND_D x ATTN_ATTEND_DK), listed in attend.c.
 * Q = X W_Q, K = X W_K, V = X W_V; scores = Q K^T; scaled = scores / sqrt(d_k);
 * probs = row softmax(scaled); out = probs V. No position information is added. probs and out
 * come from attn_attention_forward (the engine's own kernel); scores and scaled are
 * recomputed beside it for display. */
#define ATTN_ATTEND_D  4
#define ATTN_ATTEND_DK 3

typedef struct attn_attend_result {
    int n;            /* words */
    int *ids;         /* [n] */
    float *x;         /* [n, D]  embeddings */
    float *q, *k, *v; /* [n, DK] */
    float *scores;    /* [n, n]  q_i . k_j */
    float *scaled;    /* [n, n]  scores / sqrt(DK) */
    float *probs;     /* [n, n]  softmax rows (the kernel's) */
    float *out;       /* [n, DK] probs . v (the kernel's) */
} attn_attend_result;

/* The constants (read-only): embedding of a vocabulary id into e[D]; W_Q, W_K, W_V [D, DK]. */
attn_status attn_attend_embedding(int id, float e[ATTN_ATTEND_D], attn_error *err);
const float *attn_attend_weights(char which /* 'q', 'k' or 'v' */);
attn_status attn_attend_compute(const int *ids, int n, attn_attend_result **out, attn_error *err);
void attn_attend_result_free(attn_attend_result *r);
/* Permutation equivariance, measured: with ids permuted (word i of the new sentence is word
 * perm[i] of the old), the largest |out'[i] - out[perm[i]]| and |probs'[i][j] -
 * probs[perm[i]][perm[j]]| over all entries. */
attn_status attn_attend_equivariance(const int *ids, int n, const int *perm, double *max_out_dev,
                                     double *max_prob_dev, attn_error *err);

/* ---- s3: why divide by sqrt(d_k) ----------------------------------------------------------- *
 * For d_k = 4, 8, ..., 512: n_trials draws of one query q and n_keys keys k_j with N(0,1)
 * entries; the scores q.k_j with and without the 1/sqrt(d_k); statistics over all draws.
 * Softmax through attn_softmax_forward. [0]: unscaled q.k, [1]: scaled. */
#define ATTN_SCALING_N_DK 8
typedef struct attn_scaling_row {
    int d_k;
    double score_std[2]; /* standard deviation of the scores (expected sqrt(d_k) and 1) */
    double max_prob[2];  /* mean of the largest softmax probability of a row */
    double mean_pq[2];   /* mean p(1 - p) over all probabilities: softmax's own gradient
                          * d p_i / d s_i = p_i (1 - p_i), near 0 when the softmax saturates */
} attn_scaling_row;
attn_status attn_lesson_scaling(int n_keys, int n_trials, uint64_t seed,
                                attn_scaling_row rows[ATTN_SCALING_N_DK], attn_error *err);

/* ---- s4: positions ----------------------------------------------------------------------- *
 * The sinusoid table of "Attention Is All You Need": PE[p][2i] = sin(p / 10000^(2i/D)),
 * PE[p][2i+1] = cos(p / 10000^(2i/D)), computed in double; pe: [P, D], D even. (attn's
 * Transformer starts its learned pos_embedding at 2 * this table.) */
attn_status attn_sinusoid_table(double *pe, int P, int D, attn_error *err);
/* dot[d] = PE(0).PE(d) for d = 0..P-1, and the largest |PE(p).PE(p+d) - PE(0).PE(d)| over
 * all p, d with p + d < P: zero up to rounding, since the dot product is sum_i cos(d w_i). */
attn_status attn_sinusoid_dots(int P, int D, double *dot, double *max_dev, attn_error *err);

/* What a permutation of the words does to a Transformer (the [CLS] stays first). f(x) is
 * observed through every layer's attention map A_l (heads, query, key) and the input gradient
 * g = d logit / d x (a function of every layer's output). Equivariance means A_l(Px) =
 * P A_l(x) P^T and g(Px) = P g(x); invariance of the [CLS] output, logit(Px) = logit(x). */
typedef struct attn_equivariance {
    double attention_dev; /* largest |A_l(Px)[h][i][j] - A_l(x)[h][pi][pj]| */
    double grad_dev;      /* largest |g(Px)[i] - g(x)[pi]| (entries) */
    double logit_dev;     /* |logit(Px) - logit(x)| */
    float logit, logit_permuted;
} attn_equivariance;
/* ids[0..n) and its permutation (word i of the permuted sentence is word perm[i]). */
attn_status attn_equivariance_measure(attn_model *m, const int *ids, int n, const int *perm,
                                      attn_equivariance *out, attn_error *err);
/* Replaces *m (freed) by a Transformer without position information: the same configuration
 * with pos = none and the same tensors but pos_embedding. ATTN_ERR_ARG for another arch; on
 * error *m is unchanged. */
attn_status attn_model_remove_positions(attn_model **m, attn_error *err);

/* ---- s7: the write-up's observations on trained weights -------------------------------------- *
 * Word roles come from the vocabulary's categories: the deciding word of a sentence is its
 * first negation (not, never) if it has one, else its first adjective (positive/negative);
 * a distractor adjective is an adjective after the first one; fillers are "filler" words. */
#define ATTN_OBS_MAX_LAYERS 8
/* Per layer l (< ATTN_OBS_MAX_LAYERS), over the sentences, of [CLS]'s attention row (query 0):
 * "mean" is the heads' average row, "head" the single heads. */
typedef struct attn_attention_obs {
    int n;            /* sentences */
    int n_distractor; /* sentences with a distractor adjective */
    int n_layers;
    double deciding_mean[ATTN_OBS_MAX_LAYERS];   /* mean weight on the deciding word */
    double deciding_avg90[ATTN_OBS_MAX_LAYERS];  /* fraction of sentences whose mean row puts
                                                  * >= 0.9 on the deciding word */
    double deciding_head90[ATTN_OBS_MAX_LAYERS]; /* ... where some head puts >= 0.9 on it */
    double core_head90[ATTN_OBS_MAX_LAYERS];     /* ... where every head puts >= 0.9 on the core's
                                                  * negation or adjective (one word each head) */
    double distractor_mean[ATTN_OBS_MAX_LAYERS]; /* mean weight on the distractor adjective
                                                  * (NAN without such sentences) */
    double distractor_max[ATTN_OBS_MAX_LAYERS];  /* its largest weight */
    double mean_max[ATTN_OBS_MAX_LAYERS];        /* mean of the mean row's largest weight (1: all
                                                  * on one token) */
    double mean_entropy[ATTN_OBS_MAX_LAYERS];    /* mean entropy of the mean row (nats) */
} attn_attention_obs;
attn_status attn_observe_attention(attn_model *m, const attn_dataset *d, attn_attention_obs *out,
                                   attn_error *err);

/* RNN/LSTM: the probability after each word (attn_explain's prefix_probability), summed up. */
typedef struct attn_prefix_obs {
    int n;
    double mean_step_deciding; /* mean |p_i - p_{i-1}| at the deciding word and the first
                                * adjective (the words that decide the label) */
    double mean_step_filler;   /* mean |p_i - p_{i-1}| at filler words after the first adjective */
    double mean_dist_half;     /* mean |p_i - 0.5| over every prefix of every sentence */
    double frac_within_10;     /* fraction of prefixes with p_i in [0.4, 0.6] */
} attn_prefix_obs;
attn_status attn_observe_prefixes(attn_model *m, const attn_dataset *d, attn_prefix_obs *out,
                                  attn_error *err);

/* ---- s3 and s4 as a report: `attn lesson` (src/lab/lesson_report.c) ---------------------- */
typedef enum attn_lesson { ATTN_LESSON_SCALING, ATTN_LESSON_POSITIONS } attn_lesson;
typedef struct attn_lesson_opts {
    attn_lesson lesson;
    bool json;             /* one JSON object and a newline instead of the text */
    const char *weights;   /* positions: the Transformer's weights file; NULL: an untrained one */
    uint64_t seed;         /* the random draws (and the untrained Transformer) */
    const char *chart_dir; /* non-NULL: also write the lesson's charts there as PNG and SVG */
} attn_lesson_opts;
/* scaling: attn_lesson_scaling (16 keys, 500 trials) as a table; positions: the sinusoid dots
 * and attn_equivariance_measure with and without positions on two fixed sentences and 50 plain
 * test sentences, each randomly permuted. Writes the report to out only once it is computed;
 * ATTN_ERR_ARG (message "WEIGHTS: positions needs a transformer") for other weights. */
attn_status attn_lesson_write(FILE *out, const attn_lesson_opts *o, attn_error *err);

/* ---- charts of the above (src/lab/charts.c, through attn_plot.h; path .png or .svg) ---- */

/* s3: score spread, largest probability and mean p(1-p) against d_k, with (solid) and without
 * (dashed) the 1/sqrt(d_k); log scales. */
attn_status attn_lesson_scaling_plot(const attn_scaling_row rows[ATTN_SCALING_N_DK],
                                     const char *path, attn_error *err);
/* s4: the sinusoid table [P, D] as a heat map; PE(0).PE(d) against the offset d. */
attn_status attn_sinusoid_plot_table(int P, int D, const char *path, attn_error *err);
attn_status attn_sinusoid_plot_dots(int P, int D, const char *path, attn_error *err);
/* s7: how much [CLS] attends to each token, one row per layer and head plus each layer's
 * head average, from an attn_explain of a Transformer (ids: the sentence's words). */
attn_status attn_explain_plot_cls(const attn_explanation *e, const int *ids, const char *title,
                                  const char *path, attn_error *err);
/* s7: the probability after each word of several recurrent models' explanations of the same
 * sentence (names: legend entries), words on the x axis. */
attn_status attn_explain_plot_prefixes(const attn_explanation *const *e, const char *const *names,
                                       int n_models, const int *ids, const char *title,
                                       const char *path, attn_error *err);

/* The write-up's s6 figures (src/lab/figures_decoder.c), PNG and SVG into out_dir from the
 * seq2seq weights in weights_dir (seq2seq-transformer|gru|attn-seed<S>.json, S = 1..3 as present,
 * and compose-seq2seq-transformer-seed1.json if present): s6-causal-mask, s6-alignment-attn,
 * s6-alignment-transformer (its best-aligning head), s6-looking-back, s6-compose-positive and
 * -negative. *markdown (malloc'd, the caller frees) introduces them for index.md. quick: one
 * seed and fewer test pairs. ATTN_ERR_IO naming the file when a rewrite model of seed 1 is missing.
 */
attn_status attn_figures_decoder(const char *weights_dir, const char *out_dir, bool quick,
                                 char **markdown, attn_error *err);
/* true when weights_dir holds the three rewrite models of seed 1 the s6 figures need. */
bool attn_figures_decoder_available(const char *weights_dir);

#ifdef __cplusplus
}
#endif
#endif
