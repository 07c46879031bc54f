/* experiments_heads.c -- `attn experiment heads` (write-up §5, §10, Michel, Levy, Neubig
 * 2019, "Are Sixteen Heads Really Better than One?"): many attention heads are redundant once
 * a model is trained, and some layers can be reduced to a single head.
 *
 * Measured:
 *   (a) Transformers of the write-up's width (D = 32, F = 64, 2 layers) with 1, 2, 4 and 8
 *       heads (head size 32, 16, 8, 4), same data and seed: mean accuracy on the four test sets;
 *   (b) on the trained 8-head model (16 heads): the accuracy with each head removed, and a
 *       greedy pruning curve -- repeatedly remove the head whose removal costs the least
 *       accuracy on the held-out set (ATTN_SET_HOLDOUT), reporting the test accuracy -- and,
 *       per layer, the accuracy when only that layer's best head is kept.
 * Removing head h of layer l masks its output: the head's HS columns of out_proj.weight are
 * zeroed (on the model's parameters, restored afterwards), which is exactly the layer's output
 * with that head's context replaced by zeros -- no change to the model code. */
#include "attn_plot.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_HEAD_COUNTS 4
static const int head_counts[N_HEAD_COUNTS] = {1, 2, 4, 8};
#define PRUNE_HEADS    8    /* heads per layer of the pruned model */
#define LEARNT         0.75 /* the pruned model must have learnt the task (mean test accuracy) */
#define REDUNDANT_DROP 0.02 /* a head is redundant if removing it costs < this (mean acc) */

typedef struct heads_ctx {
    attn_model *m;
    float *saved; /* [n_params] the trained parameters */
    attn_dataset *const *tests, *holdout;
    int L, NH, HS, D;
} heads_ctx;

/* Parameters = trained ones with the heads in removed[L * NH] (non-zero) masked. */
static attn_status mask_heads(heads_ctx *c, const char *removed, attn_error *err) {
    float *p = attn_model_params(c->m);
    memcpy(p, c->saved, attn_model_n_params(c->m) * sizeof *p);
    for (int l = 0; l < c->L; l++) {
        char name[64];
        snprintf(name, sizeof name, "layers.%d.self_attn.out_proj.weight", l);
        const long t = attn_model_tensor_find(c->m, name);
        if (t < 0) return attn_errorf(err, ATTN_ERR_ARG, "heads: model has no %s", name);
        float *w = p + attn_model_tensor_offset(c->m, (size_t)t); /* [D out, D in] */
        for (int h = 0; h < c->NH; h++)
            if (removed[l * c->NH + h])
                for (int i = 0; i < c->D; i++)
                    memset(w + (size_t)i * c->D + (size_t)h * c->HS, 0, (size_t)c->HS * sizeof *w);
    }
    return ATTN_OK;
}

static attn_status test_acc(heads_ctx *c, const char *removed, double *acc, attn_error *err) {
    attn_status st = mask_heads(c, removed, err);
    return st ? st : exp_accuracy(c->m, c->tests, acc, NULL, err);
}

static attn_status holdout_acc(heads_ctx *c, const char *removed, double *acc, attn_error *err) {
    attn_status st = mask_heads(c, removed, err);
    return st ? st : attn_evaluate(c->m, c->holdout, 0, c->holdout->n, 256, acc, err);
}

#define PRUNE_LAYERS 2 /* the pruned model's layers (the default Transformer's) */
#define PRUNE_H      (PRUNE_LAYERS * PRUNE_HEADS)

/* What (b) measures on the pruned model: the numbers of one job's output (doubles only). */
typedef struct pruned {
    double done; /* 1 when this job pruned */
    double full, redundant, half_drop, layer_drop;
    double single[PRUNE_H], frac[PRUNE_H + 1], curve[PRUNE_H + 1], order[PRUNE_H];
    double layer_acc[PRUNE_LAYERS];
} pruned;

/* (b): single removals, the greedy curve, one head per layer. */
static attn_status prune(heads_ctx *c, pruned *pr, attn_error *err) {
    const int H = c->L * c->NH;
    if (H != PRUNE_H)
        return attn_errorf(err, ATTN_ERR_ARG, "heads: the pruned model has %d heads, not %d", H,
                           PRUNE_H);
    char removed[PRUNE_H] = {0};
    double *full = &pr->full, *redundant_frac = &pr->redundant, *half_drop = &pr->half_drop,
           *best_layer_drop = &pr->layer_drop;
    double *single = pr->single, *curve = pr->curve, *frac = pr->frac, *order = pr->order,
           *layer_acc = pr->layer_acc;
    attn_status st = test_acc(c, removed, full, err);
    int n_redundant = 0;
    for (int k = 0; !st && k < H; k++) {
        removed[k] = 1;
        st = test_acc(c, removed, &single[k], err);
        removed[k] = 0;
        n_redundant += *full - single[k] < REDUNDANT_DROP;
    }
    *redundant_frac = (double)n_redundant / H;
    curve[0] = *full, frac[0] = 0.0;
    for (int step = 1; !st && step <= H; step++) { /* greedy on the held-out set */
        int best = -1;
        double best_acc = -1.0;
        for (int k = 0; !st && k < H; k++) {
            if (removed[k]) continue;
            double a;
            removed[k] = 1;
            st = holdout_acc(c, removed, &a, err);
            removed[k] = 0;
            if (a > best_acc) best_acc = a, best = k;
        }
        if (st) break;
        removed[best] = 1;
        order[step - 1] = best;
        frac[step] = (double)step / H;
        st = test_acc(c, removed, &curve[step], err);
    }
    /* accuracy drop when half the heads are gone */
    *half_drop = *full - curve[H / 2];
    /* per layer: keep only the layer's best head (by held-out accuracy), others untouched */
    *best_layer_drop = INFINITY;
    for (int l = 0; !st && l < c->L; l++) {
        double best = -1.0;
        int keep = 0;
        for (int h = 0; !st && h < c->NH; h++) {
            memset(removed, 0, sizeof removed);
            for (int g = 0; g < c->NH; g++) removed[l * c->NH + g] = g != h;
            double a;
            st = holdout_acc(c, removed, &a, err);
            if (a > best) best = a, keep = h;
        }
        memset(removed, 0, sizeof removed);
        for (int g = 0; g < c->NH; g++) removed[l * c->NH + g] = g != keep;
        if (!st) st = test_acc(c, removed, &layer_acc[l], err);
        *best_layer_drop = fmin(*best_layer_drop, *full - layer_acc[l]);
    }
    memset(removed, 0, sizeof removed);
    if (!st) st = mask_heads(c, removed, err); /* the trained model back */
    pr->done = 1;
    return st;
}

/* The measurements of (b), in the order they were always recorded. */
static attn_status put_pruned(attn_experiment_result *r, const pruned *pr, attn_error *err) {
    const int H = PRUNE_H;
    attn_status st = exp_put(r, "pruned_model.heads_per_layer", PRUNE_HEADS, err);
    const double *single = pr->single, *curve = pr->curve, *frac = pr->frac, *order = pr->order;
    const double full = pr->full;
    if (!st) st = exp_put(r, "pruned_model.full_accuracy", full, err);
    if (!st) st = exp_put_array(r, "pruned_model.accuracy_without_head", H, single, err);
    if (!st) st = exp_put_array(r, "pruned_model.greedy.fraction_removed", H + 1, frac, err);
    if (!st) st = exp_put_array(r, "pruned_model.greedy.accuracy", H + 1, curve, err);
    if (!st) st = exp_put_array(r, "pruned_model.greedy.order", H, order, err);
    if (!st)
        st = exp_put_array(r, "pruned_model.one_head_per_layer.accuracy", PRUNE_LAYERS,
                           pr->layer_acc, err);
    return st;
}

/* One job: head_counts[job % N_HEAD_COUNTS] heads trained with seed 1 + job / N_HEAD_COUNTS;
 * out: the accuracy per test set, their mean, then (the 8-head model of seed 1) `pruned`. */
typedef struct heads_jobs {
    const attn_experiment_opts *o;
    attn_dataset **tests, *holdout;
    int n_train, epochs;
} heads_jobs;
#define JOB_WIDTH (ATTN_N_TEST_SETS + 1 + (int)(sizeof(pruned) / sizeof(double)))

static attn_status heads_job(int job, double *out, void *ctx, attn_error *err) {
    const heads_jobs *c = ctx;
    const int i = job % N_HEAD_COUNTS, s = 1 + job / N_HEAD_COUNTS;
    pruned pr = {0};
    for (int k = 0; k < JOB_WIDTH; k++) out[k] = 0;
    if (c->o->quick && head_counts[i] != 1 && head_counts[i] != PRUNE_HEADS)
        return ATTN_OK; /* quick: only the 1- and 8-head models */
    exp_progress(c->o, "heads: %d heads, seed %d", head_counts[i], s);
    attn_dataset *train = NULL;
    attn_status st = attn_data_generate(ATTN_SET_TRAIN, c->n_train, (uint64_t)s, &train, err);
    exp_train_spec spec = {.cfg = attn_model_config_default(ATTN_ARCH_TRANSFORMER),
                           .seed = (uint64_t)s,
                           .train = train,
                           .epochs = c->epochs};
    spec.cfg.n_heads = head_counts[i];
    double loss[10];
    long diverged;
    attn_model *m = NULL;
    if (!st) st = exp_train(&spec, &m, loss, &diverged, err);
    if (!st) st = exp_accuracy(m, c->tests, &out[ATTN_N_TEST_SETS], out, err);
    if (!st && m && head_counts[i] == PRUNE_HEADS && s == 1) {
        exp_progress(c->o, "heads: pruning the %d-head model", PRUNE_HEADS);
        const attn_model_config *mc = attn_model_config_of(m);
        heads_ctx hc = {m,
                        malloc(attn_model_n_params(m) * sizeof(float)),
                        c->tests,
                        c->holdout,
                        mc->n_layers,
                        mc->n_heads,
                        mc->embed_dim / mc->n_heads,
                        mc->embed_dim};
        if (!hc.saved) st = attn_errorf(err, ATTN_ERR_NOMEM, "heads: out of memory");
        if (!st) {
            memcpy(hc.saved, attn_model_params(m), attn_model_n_params(m) * sizeof(float));
            st = prune(&hc, &pr, err);
        }
        free(hc.saved);
    }
    memcpy(out + ATTN_N_TEST_SETS + 1, &pr, sizeof pr);
    attn_model_free(m);
    attn_dataset_free(train);
    return st;
}

attn_status exp_heads_run(const attn_experiment_opts *o, attn_experiment_result *r,
                          attn_error *err) {
    const int seeds = o->seeds > 0 ? o->seeds : 1;
    const int n_train = o->quick ? 3000 : ATTN_TRAIN_DEFAULT_N, epochs = o->quick ? 8 : 10;
    attn_dataset *tests[ATTN_N_TEST_SETS] = {NULL}, *holdout = NULL;
    attn_status st = exp_test_sets(o->quick ? 300 : ATTN_TEST_DEFAULT_N, 1, tests, err);
    if (!st) st = attn_data_generate(ATTN_SET_HOLDOUT, o->quick ? 300 : 500, 1, &holdout, err);
    double mean_acc[N_HEAD_COUNTS] = {0};
    double redundant = 0, half_drop = 0, layer_drop = 0;
    const int n_jobs = seeds * N_HEAD_COUNTS;
    double *runs = malloc((size_t)n_jobs * JOB_WIDTH * sizeof *runs);
    if (!st && !runs) st = attn_errorf(err, ATTN_ERR_NOMEM, "heads: out of memory");
    heads_jobs jobs = {o, tests, holdout, n_train, epochs};
    if (!st) st = exp_map(o, n_jobs, JOB_WIDTH, heads_job, &jobs, runs, err);
    for (int s = 1; !st && s <= seeds; s++) {
        for (int i = 0; !st && i < N_HEAD_COUNTS; i++) {
            const double *out = runs + ((size_t)(s - 1) * N_HEAD_COUNTS + (size_t)i) * JOB_WIDTH;
            if (o->quick && head_counts[i] != 1 && head_counts[i] != PRUNE_HEADS) {
                mean_acc[i] = NAN; /* quick: only the 1- and 8-head models */
                continue;
            }
            char key[64];
            snprintf(key, sizeof key, "heads%d.seed%d.accuracy", head_counts[i], s);
            if (!st) st = exp_put_array(r, key, ATTN_N_TEST_SETS, out, err);
            if (!st) mean_acc[i] += out[ATTN_N_TEST_SETS] / seeds;
            pruned pr;
            memcpy(&pr, out + ATTN_N_TEST_SETS + 1, sizeof pr);
            if (!st && pr.done) {
                st = put_pruned(r, &pr, err);
                redundant = pr.redundant, half_drop = pr.half_drop, layer_drop = pr.layer_drop;
            }
        }
    }
    free(runs);
    attn_dataset_free(holdout);
    exp_test_sets_free(tests);
    /* only the head counts trained (--quick leaves out 2 and 4): no NaN in the output */
    double hc[N_HEAD_COUNTS], trained_acc[N_HEAD_COUNTS];
    int n_trained = 0;
    for (int i = 0; i < N_HEAD_COUNTS; i++) {
        if (isnan(mean_acc[i])) continue;
        hc[n_trained] = head_counts[i];
        trained_acc[n_trained++] = mean_acc[i];
    }
    if (!st) st = exp_put_array(r, "head_counts", n_trained, hc, err);
    if (!st) st = exp_put_array(r, "mean_accuracy", n_trained, trained_acc, err);
    if (!st) st = exp_put(r, "seeds", seeds, err);
    if (!st) st = exp_put(r, "epochs", epochs, err);
    if (!st) st = exp_put(r, "train_size", n_train, err);
    if (!st) st = exp_put(r, "pruned_model.fraction_redundant", redundant, err);
    if (!st) st = exp_put(r, "pruned_model.greedy.drop_at_half", half_drop, err);
    if (!st) st = exp_put(r, "pruned_model.one_head_per_layer.smallest_drop", layer_drop, err);
    if (st) return st;
    exp_heads_verdict(r);
    return ATTN_OK;
}

/* mixed if the pruned model has not learnt the task (< LEARNT); else holds if removing one head
 * costs < REDUNDANT_DROP for at least half of the heads and greedily removing half of them
 * costs < REDUNDANT_DROP (many heads redundant) and one head per layer suffices in some layer
 * (< REDUNDANT_DROP); mixed if one of the two. */
void exp_heads_verdict(attn_experiment_result *r) {
    const attn_measure *full_m = attn_experiment_measure(r, "pruned_model.full_accuracy");
    const attn_measure *acc_m = attn_experiment_measure(r, "mean_accuracy");
    const attn_measure *hc_m = attn_experiment_measure(r, "head_counts");
    const double full = full_m && full_m->n == 1 ? full_m->values[0] : 0.0; /* 0: not pruned */
    const double redundant = exp_get(r, "pruned_model.fraction_redundant");
    const double half_drop = exp_get(r, "pruned_model.greedy.drop_at_half");
    const double layer_drop = exp_get(r, "pruned_model.one_head_per_layer.smallest_drop");
    /* the head counts trained (--quick leaves out 2 and 4) and their mean accuracy */
    char by_heads[128] = "";
    for (int i = 0; acc_m && hc_m && i < acc_m->n && i < hc_m->n; i++) {
        size_t used = strlen(by_heads);
        snprintf(by_heads + used, sizeof by_heads - used, "%s%d heads %.3f", used ? ", " : "",
                 (int)hc_m->values[i], acc_m->values[i]);
    }
    /* a model that has not learnt the task has nothing to lose: no verdict either way */
    const bool learnt = full >= LEARNT;
    const bool many = learnt && redundant >= 0.5 && half_drop < REDUNDANT_DROP;
    const bool one = learnt && layer_drop < REDUNDANT_DROP;
    if (!learnt) {
        exp_verdict(r, ATTN_VERDICT_MIXED,
                    "the trained %d-head model reaches only %.3f mean test accuracy (< %.2f): it "
                    "has not learnt the task, so removing heads cannot show redundancy (run "
                    "longer: without --quick)",
                    PRUNE_HEADS, full, LEARNT);
        return;
    }
    exp_verdict(r,
                many && one   ? ATTN_VERDICT_HOLDS
                : many || one ? ATTN_VERDICT_MIXED
                              : ATTN_VERDICT_DOES_NOT_HOLD,
                "in the trained %d-head model (test accuracy %.3f) removing one head costs < %.2f "
                "for %.0f%% of the heads (needed: >= 50%%) and greedily removing half of them "
                "costs %.3f (needed: < %.2f); keeping only the best head of a layer costs %.3f in "
                "the best layer (needed: < %.2f). Same width, trained with %s",
                PRUNE_HEADS, full, REDUNDANT_DROP, 100 * redundant, half_drop, REDUNDANT_DROP,
                layer_drop, REDUNDANT_DROP, by_heads);
}

attn_status exp_heads_plot(const attn_experiment_result *r, const char *path, attn_error *err) {
    const attn_measure *f = attn_experiment_measure(r, "pruned_model.greedy.fraction_removed");
    const attn_measure *a = attn_experiment_measure(r, "pruned_model.greedy.accuracy");
    const attn_measure *hc = attn_experiment_measure(r, "head_counts");
    const attn_measure *ma = attn_experiment_measure(r, "mean_accuracy");
    if (!f || !a || !hc || !ma || f->n != a->n || hc->n != ma->n)
        return attn_errorf(err, ATTN_ERR_ARG, "heads plot: no pruning curve in the result");
    /* both on one chart: the head counts drawn at x = 1 - heads/8 (the fraction of the
     * 8-head model's heads per layer that a model with fewer heads lacks) */
    double x2[N_HEAD_COUNTS];
    for (int i = 0; i < hc->n && i < N_HEAD_COUNTS; i++) x2[i] = 1.0 - hc->values[i] / PRUNE_HEADS;
    const attn_plot_series s[2] = {{"greedy pruning of the trained 8-head model (test accuracy)",
                                    f->n, f->values, a->values, .points = true},
                                   {"trained with 8, 4, 2, 1 heads at D = 32 (at 1 - heads/8)",
                                    hc->n, x2, ma->values, .points = true, .dashed = true}};
    const attn_plot p = {.title = "Removing attention heads after training",
                         .xlabel = "fraction of heads removed",
                         .ylabel = "mean accuracy over the four test sets",
                         .key = "bottom left",
                         .y_min = 0.4,
                         .y_max = 1.0,
                         .n_series = 2,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}
