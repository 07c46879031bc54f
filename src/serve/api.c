/* api.c -- the endpoints that run the models: POST /api/explain (attn_explain of one sentence
 * with each requested model, as the objects `attn explain --format json` prints; every model
 * reads the sentence with its own file's vocabulary), GET /api/vocab (a model's words) and
 * GET /api/sets/NAME (accuracy and the misclassified sentences of a generated test set, in
 * exact mode, computed once per set, model and seed and then cached). */
#include "serve_internal.h"
#include "attn_own_data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- explain ----------------------------------------------------------------------------------
 */

/* The entries the request names (all explained models when it names none); false after an
 * error answer. */
static bool pick_models(const serve_app *app, const attn_explain_request *r, int *entries, int *n,
                        serve_response *rs) {
    *n = 0;
    if (r->n_models == 0) {
        static const attn_arch order[] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_GRU,
                                          ATTN_ARCH_TRANSFORMER};
        for (int a = 0; a < 4; a++) {
            const int e = app->explain_entry[order[a]];
            if (e >= 0 && app->entries[e].vocab_group == app->default_group) entries[(*n)++] = e;
        }
        return true;
    }
    for (int i = 0; i < r->n_models; i++) {
        attn_arch arch;
        int e = attn_arch_from_name(r->models[i], &arch, NULL) == ATTN_OK ? app->explain_entry[arch]
                                                                          : -1;
        if (e < 0) {
            sbuf msg = {0};
            sb_add(&msg, "unknown model ");
            sb_json_string(&msg, r->models[i]);
            sb_add(&msg, " (loaded: see /api/models)");
            serve_error_response(rs, 404, "unknown_model", msg.failed ? "unknown model" : msg.s);
            sb_free(&msg);
            return false;
        }
        entries[(*n)++] = e;
    }
    return true;
}

/* ids[i * ATTN_MAX_WORDS ...]: the sentence in the vocabulary of model entries[i]. */
static bool explain_models(serve_app *app, int ctx, const attn_explain_request *r,
                           const int *all_ids, int n_words, const int *entries, int n,
                           serve_response *rs) {
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    attn_json_begin_object(&w);
    attn_json_field_string(&w, "sentence", r->sentence);
    attn_json_field_int(&w, "words", n_words);
    attn_json_begin_array_field(&w, "explanations");
    for (int i = 0; i < n; i++) {
        const serve_entry *en = &app->entries[entries[i]];
        const int *ids = all_ids + (size_t)i * ATTN_MAX_WORDS;
        attn_error err;
        attn_explanation *e = NULL;
        char *json = NULL;
        size_t len = 0;
        const attn_explain_opts o = {.ig_steps = r->ig_steps ? r->ig_steps : ATTN_EXPLAIN_NO_IG,
                                     .qk = r->qk};
        attn_status st =
            attn_explain(serve_explain_begin(app, ctx, entries[i]), ids, n_words, &o, &e, &err);
        serve_explain_end(app, ctx, entries[i]);
        if (st == ATTN_OK)
            st = attn_explanation_to_json(en->vocab, r->sentence, ids, e, &json, &len, &err);
        attn_explanation_free(e);
        if (st != ATTN_OK) {
            attn_json_writer_finish(&w, NULL);
            serve_error_response(rs, st == ATTN_ERR_NOMEM ? 503 : 500, "explain_failed", err.msg);
            return false;
        }
        attn_json_begin_object(&w);
        serve_json_model_fields(&w, attn_arch_name(en->arch), en->seed);
        attn_json_key(&w, "explain");
        attn_json_raw(&w, json, len);
        attn_json_end_object(&w);
        free(json);
    }
    attn_json_end_array(&w);
    attn_json_end_object(&w);
    serve_json_answer(rs, 200, &w);
    return true;
}

void serve_api_explain(serve_app *app, int ctx, const serve_request *rq, serve_response *rs) {
    attn_explain_request r;
    attn_error err;
    attn_status st = attn_explain_request_parse(rq->body, rq->body_len, &r, &err);
    if (st != ATTN_OK) {
        if (st == ATTN_ERR_NOMEM)
            serve_error_response(rs, 503, "out_of_memory", err.msg);
        else
            serve_error_response(
                rs, 400, err.code == ATTN_CODE_MALFORMED_JSON ? "malformed_json" : "bad_request",
                err.msg);
        return;
    }
    int entries[ATTN_EXPLAIN_REQUEST_MAX_MODELS], n = 0;
    if (pick_models(app, &r, entries, &n, rs)) {
        /* each model reads the sentence with its own file's vocabulary */
        int ids[ATTN_EXPLAIN_REQUEST_MAX_MODELS * ATTN_MAX_WORDS];
        int n_words = 0, i = 0;
        for (; i < n; i++) {
            const serve_entry *en = &app->entries[entries[i]];
            int n_unk = 0; /* a word the vocabulary lacks reads as its [UNK], as in attn predict */
            if (attn_tokenize_vocab_unk(
                    en->vocab, r.sentence, attn_vocab_lookup(en->vocab, ATTN_UNK_TOKEN),
                    ids + (size_t)i * ATTN_MAX_WORDS, serve_max_words(app, entries, n), &n_words,
                    &n_unk, &err) != ATTN_OK) {
                serve_tokenize_error(rs, &err, en->vocab, r.sentence, attn_arch_name(en->arch), 0);
                break;
            }
        }
        if (i == n) explain_models(app, ctx, &r, ids, n_words, entries, n, rs);
    }
    attn_explain_request_clear(&r);
}

/* ---- test sets --------------------------------------------------------------------------------
 */

/* A positive decimal int <= max, or -1. */
static int parse_small(const char *s, int max) {
    int v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
        if (v > max) return -1;
    }
    return v;
}

/* The misclassified sentences (at most SERVE_MAX_MISSES) of one model on one set. */
typedef struct set_misses {
    int n, i[SERVE_MAX_MISSES];
    float logit[SERVE_MAX_MISSES];
} set_misses;

static void set_write(attn_json_writer *w, const serve_entry *en, attn_set set,
                      const attn_dataset *d, int correct, int n_miss, const set_misses *miss) {
    attn_json_begin_object(w);
    attn_json_field_string(w, "set", attn_set_name(set));
    serve_json_model_fields(w, attn_arch_name(en->arch), en->seed);
    attn_json_field_int(w, "n", d->n);
    attn_json_field_int(w, "correct", correct);
    attn_json_field_fixed(w, "accuracy", (double)correct / d->n, 6);
    attn_json_field_int(w, "batch", 1);
    attn_json_field_int(w, "misclassified_total", n_miss);
    attn_json_begin_array_field(w, "misclassified");
    for (int k = 0; k < miss->n; k++) {
        const int i = miss->i[k];
        attn_json_begin_object(w);
        attn_json_field_string(w, "sentence", d->texts[i]);
        attn_json_field_string(w, "label", d->labels[i] ? "positive" : "negative");
        attn_json_field_fixed(w, "probability", 1.0 / (1.0 + exp(-(double)miss->logit[k])), 6);
        attn_json_end_object(w);
    }
    attn_json_end_array(w);
    attn_json_end_object(w);
}

static attn_status set_answer(serve_app *app, int ctx, int entry, attn_set set, attn_json_writer *w,
                              attn_error *err) {
    const serve_entry *en = &app->entries[entry];
    const int n = set == ATTN_SET_HOLDOUT ? ATTN_HOLDOUT_DEFAULT_N : ATTN_TEST_DEFAULT_N;
    attn_dataset *d = NULL;
    attn_status st = attn_data_generate(set, n, (uint64_t)en->seed, &d, err);
    if (st != ATTN_OK) return st;
    attn_model *m = serve_model(app, ctx, entry);
    set_misses miss = {0};
    int correct = 0, n_miss = 0;
    for (int i = 0; i < d->n && st == ATTN_OK; i++) {
        const attn_batch b = {
            .B = 1, .T = d->lengths[i], .ids = d->ids + d->offsets[i], .lengths = &d->lengths[i]};
        float logit;
        st = attn_model_forward_infer(m, &b, &logit, err);
        if (st != ATTN_OK) break;
        if ((logit > 0.0f) == (d->labels[i] == 1)) {
            correct++;
        } else if (n_miss++ < SERVE_MAX_MISSES) {
            miss.i[miss.n] = i;
            miss.logit[miss.n++] = logit;
        }
    }
    if (st == ATTN_OK) set_write(w, en, set, d, correct, n_miss, &miss);
    attn_dataset_free(d);
    return st;
}

/* /api/vocab?model=M: the words model M reads; without model=, those of the models explained
 * when a request names none. */
void serve_api_vocab(serve_app *app, const char *query, serve_response *rs) {
    char model[32];
    attn_arch arch;
    int group = app->default_group;
    const int given = serve_query_value(query, "model", model, sizeof model);
    if (given != 0) {
        if (given < 0 || attn_arch_from_name(model, &arch, NULL) != ATTN_OK ||
            app->explain_entry[arch] < 0) {
            serve_error_response(rs, 404, "unknown_model",
                                 "model=M must name a loaded model (see /api/models)");
            return;
        }
        group = app->entries[app->explain_entry[arch]].vocab_group;
    }
    serve_json_copy(rs, app->vocab_json[group], app->vocab_len[group]);
}

void serve_api_sets(serve_app *app, int ctx, const char *name, const char *query,
                    serve_response *rs) {
    attn_set set;
    char model[32], seed_text[8];
    attn_arch arch;
    if (attn_set_from_name(name, &set, NULL) != ATTN_OK || set == ATTN_SET_TRAIN) {
        serve_error_response(rs, 404, "unknown_set",
                             "no such test set (plain, distractor, fill4, fill8, holdout)");
        return;
    }
    if (serve_query_value(query, "model", model, sizeof model) != 1 ||
        attn_arch_from_name(model, &arch, NULL) != ATTN_OK || app->explain_entry[arch] < 0) {
        serve_error_response(rs, 404, "unknown_model",
                             "model=M must name a loaded model (see /api/models)");
        return;
    }
    int seed = app->entries[app->explain_entry[arch]].seed;
    const int given = serve_query_value(query, "seed", seed_text, sizeof seed_text);
    if (given != 0) seed = given < 0 ? -1 : parse_small(seed_text, 99);
    const int entry = seed < 0 ? -1 : serve_find_entry(app, arch, seed);
    if (entry < 0) {
        serve_error_response(rs, 404, "unknown_seed",
                             "seed=S must be a seed loaded for the model (see /api/models)");
        return;
    }
    if (!app->entries[entry].task_vocab) {
        serve_error_response(rs, 404, "no_test_sets",
                             "this model reads its own vocabulary, not the task's: the task's "
                             "test sets do not apply to it");
        return;
    }
    pthread_mutex_lock(&app->cache_lock);
    const char *cached = app->set_cache[entry][set];
    size_t cached_len = app->set_cache_len[entry][set];
    if (cached) serve_json_copy(rs, cached, cached_len);
    pthread_mutex_unlock(&app->cache_lock);
    if (cached) return;
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    attn_error err = {0};
    if (set_answer(app, ctx, entry, set, &w, &err) != ATTN_OK) {
        attn_json_writer_finish(&w, NULL);
        serve_error_response(rs, 503, "set_failed", err.msg[0] ? err.msg : "out of memory");
        return;
    }
    char *s = NULL;
    size_t len = 0;
    if (attn_json_writer_take(&w, &s, &len, &err) != ATTN_OK) {
        serve_error_response(rs, 503, "set_failed", err.msg);
        return;
    }
    serve_json_copy(rs, s, len);
    pthread_mutex_lock(&app->cache_lock);
    if (s && !app->set_cache[entry][set]) {
        app->set_cache[entry][set] = s;
        app->set_cache_len[entry][set] = len;
        s = NULL;
    }
    pthread_mutex_unlock(&app->cache_lock);
    free(s);
}
