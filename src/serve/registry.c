/* registry.c -- the models of `attn serve`: loading the classifiers of a weights directory
 * (one copy per worker context) beside the seq2seq ones (decoder_registry.c), finding an entry,
 * and the answers that never change (models, vocabulary, figures), computed once. */
#include "serve_assets.h"
#include "serve_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* attn_arch order in the answers: the write-up's models, the GRU beside its kin. */
static const attn_arch arch_order[SERVE_N_ARCH] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_GRU,
                                                   ATTN_ARCH_TRANSFORMER};

int serve_find_entry(const serve_app *app, attn_arch arch, int seed) {
    for (int i = 0; i < app->n_entries; i++)
        if (app->entries[i].arch == arch && app->entries[i].seed == seed) return i;
    return -1;
}

attn_model *serve_model(serve_app *app, int ctx, int entry) {
    return app->models[(size_t)ctx * app->n_entries + entry];
}

int serve_app_n_contexts(const serve_app *app) {
    return app->n_ctx;
}

const char *serve_app_summary(const serve_app *app) {
    return app->summary;
}

/* ---- loading ----------------------------------------------------------------------------------
 */

/* a and b (NULL: the built-in one) hold the same tokens in the same order. */
static bool same_vocab(const attn_vocab *a, const attn_vocab *b) {
    if (!a) a = attn_vocab_builtin();
    if (!b) b = attn_vocab_builtin();
    if (a == b) return true;
    const int n = attn_vocab_count(a);
    if (n != attn_vocab_count(b)) return false;
    for (int id = 0; id < n; id++)
        if (strcmp(attn_vocab_token(a, id), attn_vocab_token(b, id)) != 0) return false;
    return true;
}

/* Gives each entry the group of the first entry with the same vocabulary; the default group
 * is the task's vocabulary where a model reads it (else the first model's). */
static void group_vocabs(serve_app *app) {
    app->n_groups = 0;
    app->default_group = 0;
    for (int i = 0; i < app->n_entries; i++) {
        serve_entry *e = &app->entries[i];
        e->vocab_group = -1;
        for (int j = 0; j < i && e->vocab_group < 0; j++)
            if (same_vocab(e->vocab, app->entries[j].vocab))
                e->vocab_group = app->entries[j].vocab_group;
        if (e->vocab_group < 0) e->vocab_group = app->n_groups++;
    }
    for (int i = app->n_entries - 1; i >= 0; i--)
        if (app->entries[i].task_vocab) app->default_group = app->entries[i].vocab_group;
}

/* Loads DIR/<arch>-seed<S>.json for every arch and seed present into models[0..n) (context 0). */
static attn_status load_dir(serve_app *app, const char *dir, attn_model **first, attn_error *err) {
    for (int a = 0; a < SERVE_N_ARCH; a++) {
        for (int seed = 1; seed <= SERVE_MAX_SEEDS; seed++) {
            char path[4096];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s-seed%d.json", dir, attn_arch_name(arch_order[a]),
                     seed);
            if (stat(path, &st) != 0 && errno == ENOENT) continue;
            attn_model *m = NULL;
            attn_vocab *own = NULL;
            attn_status s = attn_weights_load_json_vocab(path, &m, &own, err);
            if (s != ATTN_OK) return s;
            const attn_model_config *c = attn_model_config_of(m);
            if (c->arch != arch_order[a]) {
                attn_model_free(m);
                attn_vocab_free(own);
                return attn_errorf(err, ATTN_ERR_VALUE, "%s: holds a %s model, not a %s", path,
                                   attn_arch_name(c->arch), attn_arch_name(arch_order[a]));
            }
            const attn_vocab *v = own ? own : attn_vocab_builtin();
            serve_entry *e = &app->entries[app->n_entries];
            *e =
                (serve_entry){c->arch, seed, attn_model_n_params(m), *c, v, same_vocab(v, NULL), 0};
            first[app->n_entries++] = m;
        }
    }
    if (app->n_entries == 0 && serve_decoders_count(app) == 0)
        return attn_errorf(err, ATTN_ERR_IO,
                           "%s: no weights found (expected files like %s/transformer-seed1.json "
                           "or %s/seq2seq-transformer-seed1.json, as attn reproduce writes them)",
                           dir, dir, dir);
    return ATTN_OK;
}

/* Contexts 1..n_ctx-1: copies of context 0's models. */
static attn_status copy_contexts(serve_app *app, attn_error *err) {
    for (int c = 1; c < app->n_ctx; c++) {
        for (int i = 0; i < app->n_entries; i++) {
            attn_model **dst = &app->models[(size_t)c * app->n_entries + i];
            attn_status s = attn_model_create(&app->entries[i].cfg, 0, dst, err);
            if (s != ATTN_OK) return s;
            memcpy(attn_model_params(*dst), attn_model_params(serve_model(app, 0, i)),
                   app->entries[i].n_params * sizeof(float));
        }
    }
    return ATTN_OK;
}

/* ---- the answers that never change ------------------------------------------------------------
 */

/* One loaded architecture of /api/models: its explained seed, every seed, its vocabulary. */
static void model_json(const serve_app *app, const serve_entry *e, attn_json_writer *w) {
    attn_json_begin_object(w);
    attn_json_field_string(w, "name", attn_arch_name(e->arch));
    attn_json_field_int(w, "explain_seed", e->seed);
    attn_json_field_uint(w, "params", e->n_params);
    attn_json_begin_array_field(w, "seeds");
    for (int i = 0; i < app->n_entries; i++)
        if (app->entries[i].arch == e->arch) attn_json_int(w, app->entries[i].seed);
    attn_json_end_array(w);
    attn_json_field_string(w, "vocab", e->task_vocab ? "task" : "file");
    attn_json_field_int(w, "vocab_size", attn_vocab_count(e->vocab));
    attn_json_field_int(w, "vocab_group", e->vocab_group);
    attn_json_field_bool(w, "test_sets", e->task_vocab);
    if (e->arch == ATTN_ARCH_TRANSFORMER) {
        attn_json_field_int(w, "n_layers", e->cfg.n_layers);
        attn_json_field_int(w, "n_heads", e->cfg.n_heads);
    }
    attn_json_field_int(w, "max_words",
                        e->arch == ATTN_ARCH_TRANSFORMER ? e->cfg.max_len - 1 : ATTN_MAX_WORDS);
    attn_json_end_object(w);
}

static void models_json(const serve_app *app, attn_json_writer *w) {
    static const char *const sets[] = {"plain", "distractor", "fill4", "fill8", "holdout"};
    attn_json_begin_object(w);
    attn_json_begin_array_field(w, "models");
    for (int a = 0; a < SERVE_N_ARCH; a++) {
        const int first = app->explain_entry[arch_order[a]];
        if (first >= 0) model_json(app, &app->entries[first], w);
    }
    attn_json_end_array(w);
    attn_json_begin_array_field(w, "sets");
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) attn_json_string(w, sets[i]);
    attn_json_end_array(w);
    attn_json_end_object(w);
}

/* The words the tokenizer can produce from e's vocabulary (the task's with their grammatical
 * categories, a file's own with the category "word"), and the models that read them. */
static void vocab_json(const serve_app *app, const serve_entry *e, attn_json_writer *w) {
    const attn_vocab *v = e->vocab;
    attn_json_begin_object(w);
    attn_json_field_string(w, "source", e->task_vocab ? "task" : "file");
    attn_json_field_int(w, "vocab_size", attn_vocab_count(v));
    attn_json_begin_array_field(w, "models");
    for (int a = 0; a < SERVE_N_ARCH; a++) {
        const int first = app->explain_entry[arch_order[a]];
        if (first >= 0 && app->entries[first].vocab_group == e->vocab_group)
            attn_json_string(w, attn_arch_name(arch_order[a]));
    }
    attn_json_end_array(w);
    attn_json_begin_array_field(w, "words");
    for (int id = 0; id < attn_vocab_count(v); id++) {
        if (strcmp(attn_vocab_kind(v, id), "word") != 0) continue;
        attn_json_begin_object(w);
        attn_json_field_int(w, "id", id);
        attn_json_field_string(w, "word", attn_vocab_token(v, id));
        attn_json_field_string(w, "category", e->task_vocab ? attn_vocab_category(id) : "word");
        attn_json_end_object(w);
    }
    attn_json_end_array(w);
    attn_json_end_object(w);
}

static void figures_json(attn_json_writer *w) {
    attn_json_begin_object(w);
    attn_json_begin_array_field(w, "figures");
    for (size_t i = 0; i < serve_n_assets; i++) {
        const size_t len = strlen(serve_assets[i].path);
        if (strncmp(serve_assets[i].path, "/figures/", 9) == 0 &&
            strcmp(serve_assets[i].path + len - 4, ".png") == 0)
            attn_json_string(w, serve_assets[i].path);
    }
    attn_json_end_array(w);
    attn_json_end_object(w);
}

static void summarize(serve_app *app) {
    size_t at = 0;
    app->summary[0] = '\0';
    for (int a = 0; a < SERVE_N_ARCH; a++) {
        int first = app->explain_entry[arch_order[a]], n = 0;
        if (first < 0) continue;
        for (int i = 0; i < app->n_entries; i++) n += app->entries[i].arch == arch_order[a];
        char own[64] = "";
        if (!app->entries[first].task_vocab)
            snprintf(own, sizeof own, "; its own vocabulary of %d tokens",
                     attn_vocab_count(app->entries[first].vocab));
        int w = snprintf(app->summary + at, sizeof app->summary - at,
                         "%s%s (seed %d explained; %d seed%s%s)", at ? ", " : "",
                         attn_arch_name(arch_order[a]), app->entries[first].seed, n,
                         n == 1 ? "" : "s", own);
        if (w < 0 || (size_t)w >= sizeof app->summary - at) break;
        at += (size_t)w;
    }
}

static attn_status precompute(serve_app *app, attn_error *err) {
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    models_json(app, &w);
    attn_json_writer_take(&w, &app->models_json, &app->models_len, NULL);
    attn_json_writer_init(&w, NULL);
    figures_json(&w);
    attn_json_writer_take(&w, &app->figures_json, &app->figures_len, NULL);
    bool failed = !app->models_json || !app->figures_json;
    for (int i = 0; i < app->n_entries; i++) {
        const int g = app->entries[i].vocab_group;
        if (app->vocab_json[g]) continue;
        attn_json_writer_init(&w, NULL);
        vocab_json(app, &app->entries[i], &w);
        attn_json_writer_take(&w, &app->vocab_json[g], &app->vocab_len[g], NULL);
        failed = failed || !app->vocab_json[g];
    }
    if (failed) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    summarize(app);
    return ATTN_OK;
}

attn_status serve_app_create(const char *weights_dir, int n_contexts, serve_app **out,
                             attn_error *err) {
    if (!weights_dir || !out || n_contexts < 1 || n_contexts > 256)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "serve_app_create: NULL argument or contexts "
                           "outside 1..256");
    *out = NULL;
    serve_app *app = calloc(1, sizeof *app);
    attn_model **first = calloc(SERVE_MAX_ENTRY, sizeof *first);
    if (!app || !first) {
        free(app);
        free(first);
        return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    }
    pthread_mutex_init(&app->cache_lock, NULL);
    app->n_ctx = n_contexts;
    attn_status st = serve_decoders_load(app, weights_dir, n_contexts, err);
    if (st == ATTN_OK) st = load_dir(app, weights_dir, first, err);
    if (st == ATTN_OK) {
        app->models = calloc((size_t)n_contexts * app->n_entries + 1, sizeof *app->models);
        if (!app->models) st = attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    }
    if (st == ATTN_OK) {
        memcpy(app->models, first, (size_t)app->n_entries * sizeof *first);
        memset(first, 0, SERVE_MAX_ENTRY * sizeof *first);
        st = copy_contexts(app, err);
    }
    for (int i = 0; i < SERVE_MAX_ENTRY; i++) attn_model_free(first[i]);
    free(first);
    for (int a = 0; a < SERVE_N_ARCH; a++) app->explain_entry[a] = -1;
    for (int i = app->n_entries - 1; i >= 0; i--) app->explain_entry[app->entries[i].arch] = i;
    group_vocabs(app);
    if (st == ATTN_OK) st = precompute(app, err);
    if (st == ATTN_OK) serve_decoders_summary(app);
    if (st != ATTN_OK) {
        serve_app_free(app);
        return st;
    }
    *out = app;
    return ATTN_OK;
}

void serve_app_free(serve_app *app) {
    if (!app) return;
    if (app->models)
        for (size_t i = 0; i < (size_t)app->n_ctx * app->n_entries; i++)
            attn_model_free(app->models[i]);
    free(app->models);
    for (int i = 0; i < app->n_entries; i++) attn_vocab_free(app->entries[i].vocab);
    for (int g = 0; g < SERVE_MAX_ENTRY; g++) free(app->vocab_json[g]);
    free(app->models_json);
    free(app->figures_json);
    for (int i = 0; i < SERVE_MAX_ENTRY; i++)
        for (int s = 0; s < SERVE_MAX_SETS; s++) free(app->set_cache[i][s]);
    pthread_mutex_destroy(&app->cache_lock);
    serve_decoders_free(app->decoders);
    free(app);
}

int serve_max_words(const serve_app *app, const int *entries, int n) {
    int max = ATTN_MAX_WORDS;
    for (int i = 0; i < n; i++) {
        const attn_model_config *c = &app->entries[entries[i]].cfg;
        if (c->arch == ATTN_ARCH_TRANSFORMER && c->max_len - 1 < max) max = c->max_len - 1;
    }
    return max;
}
