/* attn_seq2seq_explain.h -- what a seq2seq model did with one source (src/explain/), that
 * explanation as JSON and the decoder's requests read from JSON (src/io/). attn_seq2seq.h
 * includes this header; it needs attn_seq2seq.h's models. */
#ifndef ATTN_SEQ2SEQ_EXPLAIN_H
#define ATTN_SEQ2SEQ_EXPLAIN_H

#include "attn_seq2seq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- explain (src/explain/seq2seq_explain.c) ---------------------------------------------- *
 * What the decoder did with one source: the words it writes (greedy, recomputing the decoder
 * over [BOS] + the words so far at every step: PyTorch's loop over nn.Transformer, bit for bit),
 * optionally after a forced prefix of target tokens; per step the top ATTN_S2S_TOP_K next
 * tokens with their probabilities (softmax of the step's float logits, as torch.softmax); the
 * attention maps of the teacher-forced pass over [BOS] + the output (attn_seq2seq_maps); and
 * saliency: for each step t and source word i, with g = d logit_t[chosen_t] / d x_i (x_i the
 * word's first-layer input row, attn_seq2seq_source_input) in that teacher-forced pass:
 *   grad_norm[t, i] = |g|_2,   grad_x_input[t, i] = sum_j g_j x_ij   (as attn_explain's).
 *
 *     attn_s2s_explanation *e = NULL;
 *     if (attn_seq2seq_explain(m, src, n_src, NULL, &e, &err) == ATTN_OK) {
 *         // e->out[e->n_out], e->top_ids / e->top_probs [T, 5], e->cross [L, NH, T, S], ...
 *     }
 *     attn_s2s_explanation_free(e);
 */
#define ATTN_S2S_TOP_K 5
typedef struct attn_s2s_explain_opts {
    const int *prefix; /* NULL or [n_prefix] target ids written first, whatever the model would
                        * choose (not [PAD], [BOS] or [EOS]) */
    int n_prefix;
    int max_out;      /* words at most (prefix included); 0: max_tgt_len - 1 */
    bool no_saliency; /* skip the backward passes (grad_norm, grad_x_input NULL; NULL too for a
                       * model without "src_embedding.weight") */
} attn_s2s_explain_opts;

typedef struct attn_s2s_explanation {
    attn_s2s_arch arch;
    int n_src;             /* S */
    int n_out, n_prefix;   /* words written ([EOS] not included), the forced ones among them */
    int *out;              /* [n_out] target ids */
    int T;                 /* steps = decoder rows: n_out + 1 when [EOS] ended it, else n_out */
    bool ended;            /* [EOS] was chosen */
    int *chosen;           /* [T] the token of step t: out[t], or [EOS] last */
    float *chosen_prob;    /* [T] its probability */
    int *top_ids;          /* [T, ATTN_S2S_TOP_K] most probable first (ties: lower id) */
    float *top_probs;      /* [T, ATTN_S2S_TOP_K] */
    int n_layers, n_heads; /* the maps' L, NH (0: no maps) */
    float *cross;          /* [L, NH, T, S] or NULL */
    float *self;           /* [L, NH, T, T] or NULL */
    float *grad_norm;      /* [T, S] or NULL */
    float *grad_x_input;   /* [T, S] or NULL */
} attn_s2s_explanation;

attn_status attn_seq2seq_explain(attn_seq2seq *m, const int *src, int n_src,
                                 const attn_s2s_explain_opts *opts, attn_s2s_explanation **out,
                                 attn_error *err);
void attn_s2s_explanation_free(attn_s2s_explanation *e); /* NULL ok */

/* ---- explanations and decoder requests as JSON (src/io/seq2seq_explain_json.c) -------------
 * {"sentence", "model", "tokens" (source), "output", "words", "ended", "prefix" (forced words),
 *  "steps": [{"token", "id", "probability", "forced", "top": [{"token", "id", "probability"}]}],
 *  "n_layers", "n_heads", "cross_attention" [L][NH][T][S], "self_attention" [L][NH][T][T]
 *  (with maps), "alignment_layer", "alignment_head", "alignment" [T][S] (with alignment: the
 *  layer's and head's cross-attention, -1 = the mean over layers or heads), "saliency":
 *  {"grad_norm" [T][S], "grad_x_input" [T][S]}}; floats %.9g. opts NULL: maps, no alignment. */
typedef struct attn_s2s_json_opts {
    bool maps;       /* cross_attention and self_attention in full */
    bool alignment;  /* one [T][S] cross-attention map: */
    int layer, head; /* -1: the mean */
} attn_s2s_json_opts;
attn_status attn_s2s_explanation_to_json(const char *sentence, const int *src,
                                         const attn_s2s_explanation *e, const attn_s2s_json_opts *o,
                                         char **out, size_t *len, attn_error *err);

/* POST /api/generate {"model"?, "text", "prefix"? [target words], "layer"?, "head"? (-1 = the
 * mean), "maps"? (bool)}, read strictly (attn_explain_request_parse's rules). */
typedef struct attn_generate_request {
    char model[64]; /* "" = the server's default */
    char *text;     /* owned */
    int prefix[ATTN_S2S_MAX_TGT], n_prefix;
    int layer, head; /* -1 when absent */
    bool maps;
} attn_generate_request;
attn_status attn_generate_request_parse(const char *buf, size_t len, attn_generate_request *r,
                                        attn_error *err);
void attn_generate_request_clear(attn_generate_request *r);

/* POST /api/compose {"model"?, "polarity": "positive"|"negative", "subject"?, "temperature"?
 * (0.01..100, 1), "top_p"? (0..1, 0.9), "n"? (1..ATTN_COMPOSE_MAX_SAMPLES, 4), "seed"? (1)}. */
#define ATTN_COMPOSE_MAX_SAMPLES 16
typedef struct attn_compose_request {
    char model[64], polarity[16], subject[32];
    double temperature, top_p;
    int n;
    uint64_t seed;
} attn_compose_request;
attn_status attn_compose_request_parse(const char *buf, size_t len, attn_compose_request *r,
                                       attn_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_SEQ2SEQ_EXPLAIN_H */
