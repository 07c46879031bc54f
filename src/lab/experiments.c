/* experiments.c -- the table of the write-up's claims as experiments (attn_experiments.h) and
 * what every experiment shares: measurements, verdicts, weights, timing, a log-log slope.
 *
 * Adding an experiment: a file experiments_NAME.c with a run function that records its
 * measurements (exp_put / exp_put_array) and sets the verdict from them (exp_verdict, by the
 * rule of its table row), and a plot function that draws them through attn_plot.h; then one row
 * below. Claims that wait for model options not yet in attn are not in the table until they run. */
#include "experiments_decoder.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const attn_experiment table[] = {
    {"convolution",
     "A multi-head self-attention layer with a relative position bias, one head per kernel "
     "offset, computes a 1-D convolution of kernel size 3 exactly (in the limit of a sharp "
     "bias); without position information no attention layer can.",
     "§9, §10", "Cordonnier, Loukas, Jaggi 2020",
     "holds if the constructed layer's largest difference from the directly computed "
     "convolution falls to float rounding (<= 1e-5 x max|y|) as the bias sharpens, AND without "
     "positions two positions with equal inputs but different neighbours get the same output "
     "(difference <= 1e-6 x max|y|), so that the best any position-free layer can do has an "
     "error >= half the difference of the convolution's outputs there, which is > 1e-2 x "
     "max|y|; mixed if one part holds; does not hold otherwise",
     exp_convolution_run, exp_convolution_plot},
    {"convolution-2d",
     "In two dimensions too: a multi-head self-attention layer with 9 heads and a relative "
     "position bias computes a 3x3 convolution of an image, each head attending to one kernel "
     "offset.",
     "§9", "Cordonnier, Loukas, Jaggi 2020",
     "holds if the constructed layer's largest difference from the directly computed 3x3 "
     "convolution of a random 6x6 image falls to float rounding (<= 1e-5 x max|y|) as the bias "
     "sharpens, AND at the sharpest bias every head puts >= 0.999 of its attention on its own "
     "kernel offset; mixed if one part holds; does not hold otherwise",
     exp_convolution2d_run, exp_convolution2d_plot},
    {"embedding",
     "An embedding layer is a lookup table, not a normaliser: its rows have whatever length "
     "training gave them, and multiplying a one-hot vector by the matrix is the lookup.",
     "§10", "",
     "holds if one-hot x matrix (attn_sgemm) equals the table's rows bit for bit for every "
     "token of every model, the logit computed from the one-hot rows equals the model's own "
     "bit for bit, AND the trained rows are not normalised (max |norm - 1| > 0.05 and "
     "max/min norm over the words > 1.1 in every model); mixed if only one part holds",
     exp_embedding_run, exp_embedding_plot},
    {"parallel",
     "Recurrent models take one sequential step per word, so their time per sentence grows in "
     "proportion to its length; a Transformer layer handles all words at once, so its time per "
     "sentence grows more slowly than the recurrent models' even though it does more work per "
     "word.",
     "§1, §8", "",
     "from the log-log slope of time per sentence against length (least squares over the "
     "lengths measured): holds if the RNN's and the LSTM's slopes are >= 0.8 at batch 1 and at "
     "batch 256 AND the Transformer's slope at batch 1 is below both recurrent slopes at batch "
     "1 by at least 0.2; mixed if only one part holds",
     exp_parallel_run, exp_parallel_plot},
    {"path-length",
     "A recurrent model's gradient to a word k steps back passes through k steps of the "
     "recurrence and fades with k; the LSTM learns to keep its path open. In self-attention "
     "every word is one step from the output: its gradient is flat in distance from the start.",
     "§1", "",
     "from the median gradient ratio of the farthest word (T - 1 steps back) before and after "
     "training: attention is flat if the Transformer's is >= 0.1 before and after; the LSTM's "
     "path opens if its ratio after training is above its ratio before AND above the RNN's "
     "after; holds if both, mixed if one, does not hold if neither",
     exp_path_length_run, exp_path_length_plot},
    {"heads",
     "Many attention heads are redundant once a model is trained: most can be removed one at a "
     "time, or half of them together, at little cost, and some layers can be reduced to a "
     "single head.",
     "§5, §10", "Michel, Levy, Neubig 2019",
     "on the trained 8-head model (2 layers x 8 heads, D = 32): many heads are redundant if "
     "removing one head costs < 0.02 mean test accuracy for >= 50% of the heads AND greedily "
     "removing half of them (chosen on the held-out set) costs < 0.02; a layer needs one head "
     "if keeping only its best head costs < 0.02 in at least one layer; holds if both, mixed "
     "if one, does not hold if neither (the 1/2/4/8-head models at the same width are "
     "reported beside it)",
     exp_heads_run, exp_heads_plot},
    {"scaling",
     "Scores are divided by sqrt(d_k): without it, q.k grows with d_k, the softmax saturates "
     "and training stalls.",
     "§3", "Vaswani et al. 2017",
     "one-head models with d_k = 64, same data, seed and initialisation: training stalls "
     "without the scaling if its final training loss is not below the scaled model's + 0.05 "
     "AND its mean test accuracy is lower by >= 0.02; the softmax saturates if [CLS]'s largest "
     "attention probability (mean over layers and 50 probe sentences) ends higher by > 0.05; "
     "holds if both, mixed if one, does not hold if neither",
     exp_scaling_run, exp_scaling_plot},
    {"norm",
     "Post-norm Transformers (LayerNorm after each residual sum) need a learning-rate warm-up "
     "as they get deeper; pre-norm Transformers (LayerNorm inside the residual branch) train "
     "without one.",
     "§6", "Xiong et al. 2020",
     "gain = mean test accuracy with a linear warm-up (over the first 4 of 10 epochs; --quick: the "
     "first epoch) minus "
     "without, same data and seed (a diverged run counts as accuracy 0.5): holds if post-norm's "
     "gain at the deepest model is >= 0.05 and larger than at the shallowest AND pre-norm's "
     "gain is < 0.05 at every depth; does not hold if post-norm's gain at the deepest is < 0.05 "
     "and pre-norm's too; mixed otherwise, and mixed without a verdict when no run reaches 0.75 "
     "mean test accuracy (too short to learn the task, as with --quick)",
     exp_norm_run, exp_norm_plot},
    {"equivariance",
     "Without position information self-attention is permutation-equivariant and the [CLS] "
     "output permutation-invariant: \"the food was not good\" and \"not the food was good\" "
     "get the same logit. With positions they need not.",
     "§4, §10", "",
     "holds if, with the positions removed (the trained Transformers as pos = none models) and in "
     "Transformers "
     "trained without positions, the largest |logit change| over the pair and over shuffled "
     "test sentences is <= 1e-4 (float summation order) and every layer's attention maps are "
     "permuted copies (<= 1e-5), AND with positions the largest change is > 1e-2; mixed if only "
     "one part holds",
     exp_equivariance_run, exp_equivariance_plot},
    {"extrapolation",
     "Fixed sinusoidal position encodings degrade on sentences longer than those seen in "
     "training; relative schemes (RoPE, ALiBi) hold up.",
     "§4, §10", "Press, Smith, Lewis 2022; Su et al. 2021",
     "a scheme's drop is its test accuracy on the training lengths (8-30 words) minus that on "
     "61-120 words (mean over seeds, percentage points); holds if sinusoidal drops by >= 5 "
     "points AND rope and alibi each by < 5; mixed if only one part holds; does not hold "
     "otherwise (learned and none are reported)",
     exp_extrapolation_run, exp_extrapolation_plot},
    /* the decoder's claims (write-up §6): experiments_decoder*.c */
    {"causal-mask",
     "The causal mask keeps a prediction from peeking at the answer: with it, what the decoder "
     "predicts at target position i depends only on the words up to i, so changing the words "
     "after i leaves every logit at positions <= i exactly as it was; without it, they change.",
     "§6", "Vaswani et al. 2017",
     "holds if, with the mask, every logit at positions <= i is bit-identical after the target "
     "words after i are replaced (the trained seq2seq-transformer on the rewrite test pairs and "
     "an untrained one on random 15-word inputs, every i) while >= 90% of the rows after i "
     "change, AND without the mask (the same weights) >= 90% of the rows at positions <= i "
     "change, in both models; mixed if one part holds; does not hold otherwise",
     exp_causal_mask_run, exp_causal_mask_plot},
    {"kv-cache",
     "A KV cache changes bits, not tokens: greedy decoding that keeps the keys and values of "
     "earlier steps computes logits that differ from recomputing the whole prefix only in their "
     "last bits, chooses the same words, and is faster.",
     "§6", "",
     "over the four rewrite test sets with the trained seq2seq-transformer: holds if >= 99.9% "
     "of the greedy output sequences are the same with and without the cache AND the cached "
     "decoding is >= 1.2x as fast; mixed if one part holds (the ULPs between the step logits "
     "are reported)",
     exp_kv_cache_run, exp_kv_cache_plot},
    {"parallel-decoder",
     "Because of the causal mask, all positions of a target sentence are trained in parallel: "
     "a teacher-forced step of the Transformer's decoder is one pass over every target "
     "position, while a GRU decoder needs one sequential step per word.",
     "§6", "",
     "on untrained models of the default sizes, batch 1, a 10-word source and 1-64 target "
     "words: holds if the GRU decoders (seq2seq-gru, seq2seq-attn) take exactly one sequential "
     "(recurrent) step per target word while the Transformer's products per forward stay the "
     "same at every length, AND each target word adds less time to the Transformer's "
     "training step (forward + backward, fastest of repeated runs; from 8 words to the "
     "longest) than to both GRU decoders'; mixed if one part holds; does not hold otherwise",

     exp_parallel_decoder_run, exp_parallel_decoder_plot},
    {"looking-back",
     "An encoder-decoder that squeezes the source into one vector falls off with the source's "
     "length; a decoder that looks back at every source word through attention holds up.",
     "§1, §6", "Bahdanau, Cho, Bengio 2015",
     "exact match of greedy decoding on the four rewrite test sets (the trained weights of each "
     "seed), pooled over the seeds: holds if seq2seq-gru's exact match on sources of 41 words "
     "or more is lower than on 1-10-word sources by >= 10 points AND seq2seq-attn's and "
     "seq2seq-transformer's each by < 5 points; mixed if one part holds; does not hold "
     "otherwise; mixed without a verdict when a model reaches < 50% on the 1-10-word sources "
     "(it has not learnt the task, as --quick models trained without weights)",
     exp_looking_back_run, exp_looking_back_plot},
    {"alignment",
     "A decoder's attention over the source is an alignment: for each word it writes, the "
     "source word it attends to most is the one that word comes from.",
     "§6, §7", "Bahdanau, Cho, Bengio 2015",
     "teacher forced on the four rewrite test sets (seed 1), the argmax over the source of the "
     "cross-attention row that writes each target word against the source position the "
     "generator took it from (the polarity word: the first adjective): holds if seq2seq-attn's "
     "additive attention AND the seq2seq-transformer's best head (layer and head reported) "
     "each find it for >= 80% of the target words; mixed if one does; does not hold otherwise "
     "(every head, each layer's mean of heads and chance are reported)",
     exp_alignment_run, exp_alignment_plot},
};
#define N_EXPERIMENTS ((int)(sizeof table / sizeof table[0]))

int attn_experiment_count(void) {
    return N_EXPERIMENTS;
}

const attn_experiment *attn_experiment_at(int i) {
    return i >= 0 && i < N_EXPERIMENTS ? &table[i] : NULL;
}

const attn_experiment *attn_experiment_find(const char *name) {
    for (int i = 0; name && i < N_EXPERIMENTS; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

const char *attn_verdict_name(attn_verdict v) {
    switch (v) {
    case ATTN_VERDICT_HOLDS:
        return "holds";
    case ATTN_VERDICT_DOES_NOT_HOLD:
        return "does not hold";
    case ATTN_VERDICT_MIXED:
        return "mixed";
    }
    return "?";
}

/* ---- results --------------------------------------------------------------------------- */

void attn_experiment_result_free(attn_experiment_result *res) {
    if (!res) return;
    for (int i = 0; i < res->n_measures; i++) free(res->measures[i].values);
    free(res->measures);
    memset(res, 0, sizeof *res);
}

attn_status attn_experiment_run(const attn_experiment *e, const attn_experiment_opts *opts,
                                attn_experiment_result *res, attn_error *err) {
    if (!e || !opts || !res) return attn_errorf(err, ATTN_ERR_ARG, "experiment: need e, opts, res");
    memset(res, 0, sizeof *res);
    res->verdict = ATTN_VERDICT_MIXED;
    snprintf(res->why, sizeof res->why, "no verdict reached");
    const double t0 = attn_seconds();
    attn_status st = e->run(opts, res, err);
    res->seconds = attn_seconds() - t0;
    if (st != ATTN_OK) attn_error_append(err, "experiment %s", e->name);
    return st;
}

const attn_measure *attn_experiment_measure(const attn_experiment_result *res, const char *name) {
    for (int i = 0; res && name && i < res->n_measures; i++)
        if (strcmp(res->measures[i].name, name) == 0) return &res->measures[i];
    return NULL;
}

attn_status exp_put_array(attn_experiment_result *r, const char *name, int n, const double *values,
                          attn_error *err) {
    if (strlen(name) >= sizeof r->measures[0].name || n < 1)
        return attn_errorf(err, ATTN_ERR_ARG, "measurement '%s': name too long or no values", name);
    if (r->n_measures == r->cap) {
        const int cap = r->cap ? 2 * r->cap : 16;
        attn_measure *m = realloc(r->measures, (size_t)cap * sizeof *m);
        if (!m) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory recording '%s'", name);
        r->measures = m;
        r->cap = cap;
    }
    attn_measure *m = &r->measures[r->n_measures];
    m->values = malloc((size_t)n * sizeof *m->values);
    if (!m->values) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory recording '%s'", name);
    memcpy(m->values, values, (size_t)n * sizeof *values);
    m->n = n;
    snprintf(m->name, sizeof m->name, "%s", name);
    r->n_measures++;
    return ATTN_OK;
}

attn_status exp_put(attn_experiment_result *r, const char *name, double value, attn_error *err) {
    return exp_put_array(r, name, 1, &value, err);
}

double exp_get(const attn_experiment_result *r, const char *name) {
    const attn_measure *m = attn_experiment_measure(r, name);
    return m && m->n == 1 ? m->values[0] : NAN;
}

void exp_verdict(attn_experiment_result *r, attn_verdict v, const char *fmt, ...) {
    r->verdict = v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

void exp_progress(const attn_experiment_opts *o, const char *fmt, ...) {
    if (!o->progress) return;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    o->progress(msg, o->user);
}

bool attn_experiment_spreads_runs(const attn_experiment *e) {
    return e->run == exp_norm_run || e->run == exp_extrapolation_run || e->run == exp_heads_run;
}

attn_status exp_map(const attn_experiment_opts *o, int n, int width, attn_experiment_job job,
                    void *ctx, double *out, attn_error *err) {
    if (o->map) return o->map(n, width, job, ctx, out, o->map_user, err);
    attn_status st = ATTN_OK;
    for (int j = 0; j < n && st == ATTN_OK; j++) st = job(j, out + (size_t)j * width, ctx, err);
    return st;
}

attn_status exp_load_weights(const attn_experiment_opts *o, const char *arch, int seed,
                             attn_model **out, attn_error *err) {
    char path[1024];
    const char *dir = o->weights_dir ? o->weights_dir : "weights";
    if (snprintf(path, sizeof path, "%s/%s-seed%d.json", dir, arch, seed) >= (int)sizeof path)
        return attn_errorf(err, ATTN_ERR_ARG, "weights directory name too long: %s", dir);
    return attn_weights_load_json(path, out, err);
}

double exp_loglog_slope(const double *x, const double *y, int n) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        const double lx = log(x[i]), ly = log(y[i]);
        sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
    }
    const double den = n * sxx - sx * sx;
    return den != 0.0 ? (n * sxy - sx * sy) / den : NAN;
}

int exp_cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

attn_status exp_time_runs(attn_status (*run)(void *ctx, attn_error *err), void *ctx,
                          double min_total, int max_reps, double *times, int *n, attn_error *err) {
    attn_status st = ATTN_OK;
    int k = 0;
    double total = 0.0;
    while (!st && k < max_reps && (k < 3 || total < min_total)) {
        const double t0 = attn_seconds();
        st = run(ctx, err);
        times[k] = attn_seconds() - t0;
        total += times[k++];
    }
    if (!st) qsort(times, (size_t)k, sizeof *times, exp_cmp_double);
    *n = k;
    return st;
}

attn_status exp_count_products(attn_status (*run)(void *ctx, attn_error *err), void *ctx,
                               attn_flop_counts *counts, attn_error *err) {
    *counts = (attn_flop_counts){0};
    attn_flop_counts *saved = attn_flops_get_counter();
    attn_flops_set_counter(counts);
    const attn_status st = run(ctx, err);
    attn_flops_set_counter(saved);
    return st;
}
