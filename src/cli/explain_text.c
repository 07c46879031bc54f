/* explain_text.c -- `attn explain`'s text for both families: words shaded by attention and
 * saliency (cli_shaded_to, 24-bit ANSI or plain), the classifier's [CLS] rows and probability
 * after each word, the decoder's steps with their top 5. */
#include "attn_seq2seq.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Diverging shade: green for positive x, red for negative, strength |x| / scale. */
static void signed_word(FILE *f, bool color, const char *word, double x, double scale,
                        const char *note) {
    const double t = scale > 0.0 ? fabs(x) / scale : 0.0;
    if (x >= 0.0)
        cli_shaded_to(f, color, word, t, 60, 190, 75, note);
    else
        cli_shaded_to(f, color, word, t, 230, 75, 75, note);
}

/* ---- classifiers ------------------------------------------------------------------------------
 */

/* Token i of the displayed axis: [CLS] first for the Transformer. */
static const char *token_name(const attn_vocab *vocab, const attn_explanation *e, const int *ids,
                              int i) {
    if (e->arch == ATTN_ARCH_TRANSFORMER)
        return i == 0 ? "[CLS]" : attn_vocab_token(vocab, ids[i - 1]);
    return attn_vocab_token(vocab, ids[i]);
}

/* One attention row: how much [CLS] (query 0) attends to each key; w [S]. */
static void attention_row(FILE *f, const cli_explain_look *look, const attn_vocab *vocab,
                          const attn_explanation *e, const int *ids, const char *label,
                          const float *w) {
    float max = 0.0f;
    for (int k = 0; k < e->S; k++) max = w[k] > max ? w[k] : max;
    fprintf(f, "  %-8s ", label);
    for (int k = 0; k < e->S; k++) {
        char note[32];
        /* fixed width, so that the lines of the heads and layers align */
        snprintf(note, sizeof note, "%3.0f%%", 100.0 * w[k]);
        cli_shaded_to(f, look->color, token_name(vocab, e, ids, k), max > 0.0f ? w[k] / max : 0.0,
                      255, 140, 0, note);
    }
    fputc('\n', f);
}

static void print_attention(FILE *f, const cli_explain_look *look, const attn_vocab *vocab,
                            const attn_explanation *e, const int *ids) {
    const int S = e->S, NH = e->n_heads;
    float *avg = malloc((size_t)S * sizeof *avg);
    fprintf(f, "  [CLS] attends to (shade relative to the line's largest; L0 is the write-up's "
               "layer 1):\n");
    for (int l = 0; l < e->n_layers; l++) {
        if (look->layer >= 0 && l != look->layer) continue;
        char label[32];
        if (avg) memset(avg, 0, (size_t)S * sizeof *avg);
        for (int h = 0; h < NH; h++) {
            const float *cls = e->attention + ((size_t)l * NH + h) * S * S; /* query 0 */
            for (int k = 0; avg && k < S; k++) avg[k] += cls[k] / (float)NH;
            if (look->head >= 0 && h != look->head) continue;
            snprintf(label, sizeof label, "L%d H%d", l, h);
            attention_row(f, look, vocab, e, ids, label, cls);
        }
        snprintf(label, sizeof label, "L%d avg", l);
        if (look->head < 0 && avg) attention_row(f, look, vocab, e, ids, label, avg);
    }
    free(avg);
}

static void print_prefix(FILE *f, const cli_explain_look *look, const attn_vocab *vocab,
                         const attn_explanation *e, const int *ids) {
    fprintf(f, "  probability after each word:\n  ");
    for (int i = 0; i < e->n_words; i++) {
        char note[32];
        snprintf(note, sizeof note, "%.2f", e->prefix_probability[i]);
        signed_word(f, look->color, attn_vocab_token(vocab, ids[i]), e->prefix_probability[i] - 0.5,
                    0.5, note);
    }
    fputc('\n', f);
}

/* The saliency line: integrated gradients (with their sum against logit - baseline), or, when
 * there are none, gradient x input; each word shaded by its value relative to the largest. */
static void print_saliency(FILE *f, const cli_explain_look *look, const attn_vocab *vocab,
                           const attn_explanation *e, const int *ids) {
    const float *val = e->integrated_gradients ? e->integrated_gradients : e->grad_x_input;
    double scale = 0.0, sum = 0.0;
    for (int i = 0; i < e->n_words; i++) {
        scale = fmax(scale, fabs(val[i]));
        sum += val[i];
    }
    if (e->integrated_gradients)
        fprintf(f, "  integrated gradients (sum %.3f = logit %.3f - baseline %.3f, %d steps):\n  ",
                sum, (double)e->logit, (double)e->ig_baseline_logit, e->ig_steps);
    else
        fprintf(f, "  gradient x input:\n  ");
    for (int i = 0; i < e->n_words; i++) {
        char note[32];
        snprintf(note, sizeof note, "%+.2f", (double)val[i]);
        signed_word(f, look->color, attn_vocab_token(vocab, ids[i]), val[i], scale, note);
    }
    fputc('\n', f);
    fprintf(f, "  (gradients: how the logit responds to small changes of each word's vector, not "
               "what the word does;\n   to see that, remove it: attn predict on the sentence "
               "without it, the page's occlusion)\n");
}

void cli_explain_text(FILE *f, const cli_explain_look *look, const attn_vocab *vocab,
                      const char *sentence, const int *ids, const attn_explanation *e) {
    fprintf(f, "%s  p=%.6f  logit=%.9g  %s\n", e->logit > 0.0f ? "positive" : "negative",
            e->probability, (double)e->logit, sentence);
    if (e->attention) print_attention(f, look, vocab, e, ids);
    if (e->prefix_probability) print_prefix(f, look, vocab, e, ids);
    print_saliency(f, look, vocab, e, ids);
}

/* ---- seq2seq ----------------------------------------------------------------------------------
 */

/* The cross-attention row of step t: one layer/head or the mean (double). */
static void cross_row(const cli_explain_look *look, const attn_s2s_explanation *e, int t,
                      double *row) {
    const int S = e->n_src, T = e->T;
    int n = 0;
    for (int i = 0; i < S; i++) row[i] = 0.0;
    for (int l = 0; l < e->n_layers; l++)
        for (int h = 0; h < e->n_heads; h++) {
            if ((look->layer >= 0 && l != look->layer) || (look->head >= 0 && h != look->head))
                continue;
            const float *p = e->cross + (((size_t)l * e->n_heads + h) * T + t) * S;
            for (int i = 0; i < S; i++) row[i] += p[i];
            n++;
        }
    for (int i = 0; n && i < S; i++) row[i] /= n;
}

/* "     attends w1 w2 ...": the source words shaded by step t's cross-attention. */
static void print_attends(FILE *f, const cli_explain_look *look, const attn_s2s_explanation *e,
                          const int *src, int t, double *row) {
    const int S = e->n_src;
    cross_row(look, e, t, row);
    double max = 0.0;
    for (int i = 0; i < S; i++) max = fmax(max, row[i]);
    fprintf(f, "     attends ");
    for (int i = 0; i < S; i++) {
        char note[16];
        snprintf(note, sizeof note, "%3.0f%%", 100.0 * row[i]);
        cli_shaded_to(f, look->color, attn_tgt_vocab_token(src[i]), max > 0 ? row[i] / max : 0, 255,
                      140, 0, note);
    }
    fputc('\n', f);
}

/* "     g x in  w1 w2 ...": the source words shaded by step t's gradient x input. */
static void print_grad_x_input(FILE *f, const cli_explain_look *look, const attn_s2s_explanation *e,
                               const int *src, int t) {
    const int S = e->n_src;
    const float *gx = e->grad_x_input + (size_t)t * S;
    double max = 0.0;
    for (int i = 0; i < S; i++) max = fmax(max, fabs(gx[i]));
    fprintf(f, "     g x in  ");
    for (int i = 0; i < S; i++) {
        char note[16];
        snprintf(note, sizeof note, "%+.2f", (double)gx[i]);
        signed_word(f, look->color, attn_tgt_vocab_token(src[i]), gx[i], max, note);
    }
    fputc('\n', f);
}

static void print_step(FILE *f, const cli_explain_look *look, const attn_s2s_explanation *e,
                       const int *src, int t, double *row) {
    fprintf(f, "  %2d %-10s p=%.4f%s  top:", t + 1, attn_tgt_vocab_token(e->chosen[t]),
            (double)e->chosen_prob[t], t < e->n_prefix ? " (forced)" : "");
    for (int k = 0; k < ATTN_S2S_TOP_K; k++) {
        const int id = e->top_ids[(size_t)t * ATTN_S2S_TOP_K + k];
        if (id >= 0)
            fprintf(f, " %s %.4f", attn_tgt_vocab_token(id),
                    (double)e->top_probs[(size_t)t * ATTN_S2S_TOP_K + k]);
    }
    fputc('\n', f);
    if (e->cross) print_attends(f, look, e, src, t, row);
    if (e->grad_x_input) print_grad_x_input(f, look, e, src, t);
}

/* "  cross-attention: layer 1, head mean (2 layers x 2 heads)", or that there are no maps. */
static void print_maps_line(FILE *f, const cli_explain_look *look, const attn_s2s_explanation *e) {
    if (!e->cross) {
        fprintf(f, "  (%s has no attention maps)\n", attn_s2s_arch_name(e->arch));
        return;
    }
    char which[64] = "the mean of every layer and head";
    if (look->layer >= 0 || look->head >= 0) {
        char l[16] = "mean", h[16] = "mean";
        if (look->layer >= 0) snprintf(l, sizeof l, "%d", look->layer);
        if (look->head >= 0) snprintf(h, sizeof h, "%d", look->head);
        snprintf(which, sizeof which, "layer %s, head %s", l, h);
    }
    fprintf(f, "  cross-attention: %s (%d layer%s x %d head%s)\n", which, e->n_layers,
            e->n_layers == 1 ? "" : "s", e->n_heads, e->n_heads == 1 ? "" : "s");
}

void cli_explain_s2s_text(FILE *f, const cli_explain_look *look, const char *source, const int *src,
                          const attn_s2s_explanation *e) {
    fprintf(f, "%s  <-  %s\n", source, attn_s2s_arch_name(e->arch));
    fprintf(f, "  output:");
    for (int i = 0; i < e->n_out; i++) fprintf(f, " %s", attn_tgt_vocab_token(e->out[i]));
    fprintf(f, "%s\n", e->ended ? "" : " (no [EOS] within the length limit)");
    print_maps_line(f, look, e);
    double *row = malloc((size_t)e->n_src * sizeof *row);
    for (int t = 0; row && t < e->T; t++) print_step(f, look, e, src, t, row);
    free(row);
}
