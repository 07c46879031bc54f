/* seq2seq_beam.c -- beam search for seq2seq models (attn_seq2seq.h), on the recomputing decoder:
 * every hypothesis's next-word distribution is the teacher-forced forward of its prefix at batch 1
 * (the last row), so it is PyTorch's nn.Transformer bit for bit and tools/seq2seq_models.beam
 * reproduces the search exactly (the same double arithmetic in the same order, glibc's exp and
 * log on both sides).
 *
 * Step: for each live hypothesis (words w, score s = sum of log p so far) and each token v, the
 * candidate s + log_softmax(logits)[v] (in double: m = max, z = sum_j exp(x_j - m) in order,
 * log p_v = (x_v - m) - log z); at max_out words only [EOS] may follow. Candidates are ordered by
 * score (higher first), then hypothesis index, then token id, and the best k kept: those ending
 * in [EOS] are finished with the length-normalised score s / (words + 1) ([EOS] counted), the
 * others live on. The search ends when no hypothesis lives; the answer is the finished one with
 * the best normalised score (ties: the one finished first). */
#include "seq2seq_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    double score;
    int hyp, tok;
} cand;

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->hyp != y->hyp) return x->hyp < y->hyp ? -1 : 1;
    return (x->tok > y->tok) - (x->tok < y->tok);
}

/* lp[V] = log_softmax(x) in double. */
static void log_softmax(double *lp, const float *x, int V) {
    double m = x[0], z = 0.0;
    for (int j = 1; j < V; j++) m = x[j] > m ? x[j] : m;
    for (int j = 0; j < V; j++) z += exp((double)x[j] - m);
    const double lz = log(z);
    for (int j = 0; j < V; j++) lp[j] = ((double)x[j] - m) - lz;
}

attn_status attn_seq2seq_beam(attn_seq2seq *m, const int *src, int n_src, int max_out, int k,
                              int *out, int *n_out, double *score, attn_error *err) {
    const int V = m->cfg.tgt_vocab, W = max_out + 1; /* [BOS] + words */
    if (k < 1 || k > ATTN_S2S_MAX_BEAM)
        return attn_errorf(err, ATTN_ERR_ARG, "beam: width %d, expected 1..%d", k,
                           ATTN_S2S_MAX_BEAM);
    if (V <= ATTN_TGT_EOS || max_out < 0 || max_out + 1 > m->cfg.max_tgt_len || !out || !n_out)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "beam: at most %d words, a target vocabulary with "
                           "[BOS] and [EOS]",
                           m->cfg.max_tgt_len - 1);
    int *live = malloc((size_t)k * W * sizeof *live), *next = malloc((size_t)k * W * sizeof *next);
    double *lscore = malloc((size_t)k * sizeof *lscore),
           *nscore = malloc((size_t)k * sizeof(double));
    cand *cands = malloc((size_t)k * V * sizeof *cands);
    float *logits = malloc((size_t)W * V * sizeof *logits);
    double *lp = malloc((size_t)V * sizeof *lp);
    attn_status st = live && next && lscore && nscore && cands && logits && lp
                         ? ATTN_OK
                         : attn_errorf(err, ATTN_ERR_NOMEM, "beam: out of memory");
    int n_live = 1, len = 0, best_len = -1;
    double best = -INFINITY;
    if (st == ATTN_OK) live[0] = ATTN_TGT_BOS, lscore[0] = 0.0;
    while (st == ATTN_OK && n_live > 0) {
        int nc = 0;
        const int T = len + 1;
        for (int h = 0; h < n_live && st == ATTN_OK; h++) {
            const attn_s2s_batch b = {1, n_src, T, src, &n_src, live + (size_t)h * W, &T};
            st = attn_seq2seq_forward(m, &b, logits, err);
            if (st != ATTN_OK) break;
            log_softmax(lp, logits + (size_t)len * V, V);
            for (int v = 0; v < V; v++)
                if (len < max_out || v == ATTN_TGT_EOS)
                    cands[nc++] = (cand){lscore[h] + lp[v], h, v};
        }
        if (st != ATTN_OK) break;
        qsort(cands, (size_t)nc, sizeof *cands, cand_cmp);
        int n_next = 0;
        for (int c = 0; c < nc && c < k; c++) {
            const int *from = live + (size_t)cands[c].hyp * W;
            if (cands[c].tok == ATTN_TGT_EOS) {
                const double norm = cands[c].score / (double)(len + 1);
                if (norm > best) {
                    best = norm, best_len = len;
                    memcpy(out, from + 1, (size_t)len * sizeof *out);
                }
                continue;
            }
            int *to = next + (size_t)n_next * W;
            memcpy(to, from, (size_t)T * sizeof *to);
            to[T] = cands[c].tok;
            nscore[n_next++] = cands[c].score;
        }
        int *t = live;
        live = next, next = t;
        double *ts = lscore;
        lscore = nscore, nscore = ts;
        n_live = n_next;
        len++;
    }
    if (st == ATTN_OK) {
        *n_out = best_len;
        if (score) *score = best;
    }
    free(live), free(next), free(lscore), free(nscore), free(cands), free(logits), free(lp);
    return st;
}
