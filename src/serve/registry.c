/* registry.c -- the models of `attn serve`, both families: every DIR/<name>-seed<S>.json (JSON or
 * safetensors, recognised by content by the loaders) whose name is a classifier's
 * (<arch>-seed<S>.json, every S of 1..SERVE_MAX_SEEDS) or a seq2seq model's (seq2seq-* and
 * compose-*, the lowest S of each name), one list of entries with a copy per worker context
 * (context 0 the loaded model, the others its replicas), finding an entry, and the answers that
 * never change (models, decoders, vocabulary, figures), computed once. */
#include "decoder_internal.h"
#include "serve_assets.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* attn_arch order in the answers: the write-up's models, the GRU beside its kin. */
static const attn_arch arch_order[SERVE_N_ARCH] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_GRU,
                                                   ATTN_ARCH_TRANSFORMER};

int serve_find_entry(const serve_app *app, attn_arch arch, int seed) {
    for (int i = 0; i < app->n_entries; i++) {
        const serve_entry *e = &app->entries[i];
        if (e->family == SERVE_CLASSIFIER && e->arch == arch && e->seed == seed) return i;
    }
    return -1;
}

attn_model *serve_model(serve_app *app, int ctx, int entry) {
    return app->models[(size_t)ctx * app->n_entries + entry];
}

attn_seq2seq *serve_decoder_model(serve_app *app, int ctx, int entry) {
    return app->models[(size_t)ctx * app->n_entries + entry];
}

static bool big_grads(const serve_app *app, int entry) {
    return app->entries[entry].n_params > SERVE_KEEP_GRADS / sizeof(float);
}

/* The shared gradient buffer of a big model, lent under its lock (NULL before the first
 * explain: the backward allocates it) and given back with the lock released. */
static float *grads_lend(serve_app *app, int entry) {
    pthread_mutex_lock(&app->grads_lock[entry]);
    float *g = app->shared_grads[entry];
    app->shared_grads[entry] = NULL;
    return g;
}

static void grads_return(serve_app *app, int entry, float *g) {
    app->shared_grads[entry] = g;
    pthread_mutex_unlock(&app->grads_lock[entry]);
}

attn_model *serve_explain_begin(serve_app *app, int ctx, int entry) {
    attn_model *m = serve_model(app, ctx, entry);
    if (big_grads(app, entry)) attn_model_grads_give(m, grads_lend(app, entry));
    return m; /* small: each worker keeps its own */
}

void serve_explain_end(serve_app *app, int ctx, int entry) {
    if (big_grads(app, entry))
        grads_return(app, entry, attn_model_grads_take(serve_model(app, ctx, entry)));
}

attn_seq2seq *serve_decoder_explain_begin(serve_app *app, int ctx, int entry) {
    attn_seq2seq *m = serve_decoder_model(app, ctx, entry);
    if (big_grads(app, entry)) attn_seq2seq_grads_give(m, grads_lend(app, entry));
    return m;
}

void serve_decoder_explain_end(serve_app *app, int ctx, int entry) {
    if (big_grads(app, entry))
        grads_return(app, entry, attn_seq2seq_grads_take(serve_decoder_model(app, ctx, entry)));
}

int serve_decoder_find(const serve_app *app, const char *name, bool compose) {
    int first = -1;
    for (int i = 0; i < app->n_entries; i++) {
        const serve_entry *e = &app->entries[i];
        if (e->family != SERVE_SEQ2SEQ) continue;
        if (name[0] && strcmp(e->name, name) == 0) return i;
        if (name[0] || e->compose != compose) continue;
        if (strstr(e->name, "seq2seq-transformer")) return i; /* the write-up's model */
        if (first < 0) first = i;
    }
    return first;
}

int serve_app_n_contexts(const serve_app *app) {
    return app->n_ctx;
}

const char *serve_app_summary(const serve_app *app) {
    return app->summary;
}

int serve_max_words(const serve_app *app, const int *entries, int n) {
    int max = ATTN_MAX_WORDS;
    for (int i = 0; i < n; i++) {
        const attn_model_config *c = &app->entries[entries[i]].cfg;
        if (c->arch == ATTN_ARCH_TRANSFORMER && c->max_len - 1 < max) max = c->max_len - 1;
    }
    return max;
}

/* ---- finding the files ------------------------------------------------------------------ */

/* "seq2seq-transformer-seed12.json" -> stem "seq2seq-transformer", seed 12 (1..9999); false if
 * the name is not <stem>-seed<S>.json. */
static bool weights_file(const char *name, char *stem, size_t cap, int *seed) {
    const size_t len = strlen(name);
    const char *at = strstr(name, "-seed");
    if (!at || len < 6 || strcmp(name + len - 5, ".json") != 0) return false;
    while (strstr(at + 1, "-seed")) at = strstr(at + 1, "-seed");
    int s = 0;
    const char *p = at + 5;
    if (p >= name + len - 5) return false;
    for (; p < name + len - 5; p++) {
        if (*p < '0' || *p > '9' || s > 999) return false;
        s = s * 10 + (*p - '0');
    }
    if ((size_t)(at - name) >= cap || s < 1) return false;
    memcpy(stem, name, (size_t)(at - name));
    stem[at - name] = '\0';
    *seed = s;
    return true;
}

/* The entry of file `name` of dir, if it is a model's: e's family, name, seed (arch). */
static bool entry_of(const char *dir, const char *name, serve_entry *e) {
    char stem[64], canon[96], path[4096];
    int seed;
    struct stat st;
    if (!weights_file(name, stem, sizeof stem, &seed)) return false;
    *e = (serve_entry){.seed = seed};
    memcpy(e->name, stem, strlen(stem) + 1);
    if (strncmp(stem, "seq2seq-", 8) == 0 || strncmp(stem, "compose-", 8) == 0) return true;
    e->family = SERVE_CLASSIFIER;
    snprintf(canon, sizeof canon, "%s-seed%d.json", stem, seed);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (seed > SERVE_MAX_SEEDS || strcmp(canon, name) != 0 ||
        attn_arch_from_name(stem, &e->arch, NULL) != ATTN_OK)
        return false;
    return !(stat(path, &st) != 0 && errno == ENOENT); /* a dangling link is no file */
}

static int rank(const serve_entry *e) {
    for (int a = 0; a < SERVE_N_ARCH; a++)
        if (arch_order[a] == e->arch) return a;
    return 0;
}

/* The list's order (serve_app.entries): -1, 0, 1 as a comes before, with or after b. */
static int order(const serve_entry *a, const serve_entry *b) {
    if (a->family != b->family) return a->family < b->family ? -1 : 1;
    if (a->family == SERVE_SEQ2SEQ) return strcmp(a->name, b->name);
    if (a->arch != b->arch) return rank(a) < rank(b) ? -1 : 1;
    return a->seed < b->seed ? -1 : a->seed > b->seed;
}

/* The entries of dir's model files, in order, not yet loaded: every classifier seed, the lowest
 * seed of each seq2seq name. */
static attn_status scan_dir(serve_app *app, const char *dir, attn_error *err) {
    DIR *dp = opendir(dir);
    if (!dp) return ATTN_OK; /* "no weights found" names the directory */
    int n_dec = 0;
    for (struct dirent *de; (de = readdir(dp));) {
        serve_entry e;
        int i = 0;
        if (!entry_of(dir, de->d_name, &e)) continue;
        while (i < app->n_entries && order(&app->entries[i], &e) < 0) i++;
        serve_entry *at = &app->entries[i];
        if (e.family == SERVE_SEQ2SEQ && i < app->n_entries && order(at, &e) == 0) {
            if (e.seed < at->seed) at->seed = e.seed;
            continue;
        }
        if (e.family == SERVE_SEQ2SEQ && n_dec++ == SERVE_MAX_DECODERS) {
            closedir(dp);
            return attn_errorf(err, ATTN_ERR_VALUE, "%s: more than %d seq2seq model names", dir,
                               SERVE_MAX_DECODERS);
        }
        memmove(at + 1, at, (size_t)(app->n_entries++ - i) * sizeof *at);
        *at = e;
    }
    closedir(dp);
    return ATTN_OK;
}

/* ---- loading: the family-specific part ----------------------------------------------------- */

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

/* e's model from path into *m (freed with the app, whatever the result), its config into e. */
static attn_status load_entry(serve_entry *e, const char *path, void **m, attn_error *err) {
    attn_status st;
    if (e->family == SERVE_SEQ2SEQ) {
        attn_seq2seq *s = NULL;
        st = attn_seq2seq_load_json(path, &s, err);
        if (!(*m = s)) return st;
        e->s2s = *attn_seq2seq_config_of(s);
        e->n_params = attn_seq2seq_n_params(s);
        e->compose = strncmp(e->name, "compose-", 8) == 0 || e->s2s.task == ATTN_TASK_COMPOSE;
        return st;
    }
    attn_model *c = NULL;
    attn_vocab *own = NULL;
    st = attn_weights_load_json_vocab(path, &c, &own, err);
    if (!(*m = c)) return st;
    e->cfg = *attn_model_config_of(c);
    e->n_params = attn_model_n_params(c);
    e->vocab = own ? own : attn_vocab_builtin();
    e->task_vocab = same_vocab(e->vocab, NULL);
    if (st == ATTN_OK && e->cfg.arch != e->arch)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: holds a %s model, not a %s", path,
                           attn_arch_name(e->cfg.arch), e->name);
    return st;
}

static attn_status replica(const serve_entry *e, void *m, void **out, attn_error *err) {
    attn_seq2seq *s = NULL;
    attn_model *c = NULL;
    attn_status st = e->family == SERVE_SEQ2SEQ ? attn_seq2seq_replica(m, &s, err)
                                                : attn_model_replica(m, &c, err);
    *out = s ? (void *)s : (void *)c;
    return st;
}

static void model_free(const serve_entry *e, void *m) {
    if (e->family == SERVE_SEQ2SEQ)
        attn_seq2seq_free(m);
    else
        attn_model_free(m);
}

/* Every entry of the list into context 0, then the replicas of contexts 1..n_ctx-1. */
static attn_status load_models(serve_app *app, const char *dir, attn_error *err) {
    const size_t n = (size_t)app->n_entries;
    app->models = calloc((size_t)app->n_ctx * n + 1, sizeof *app->models);
    if (!app->models) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        serve_entry *e = &app->entries[i];
        snprintf(path, sizeof path, "%s/%s-seed%d.json", dir, e->name, e->seed);
        attn_status st = load_entry(e, path, &app->models[i], err);
        for (size_t c = 1; st == ATTN_OK && c < (size_t)app->n_ctx; c++)
            st = replica(e, app->models[i], &app->models[c * n + i], err);
        if (st != ATTN_OK) return st;
    }
    return ATTN_OK;
}

/* Gives each classifier the group of the first one with the same vocabulary; the default group
 * is the task's vocabulary where a model reads it (else the first model's). */
static void group_vocabs(serve_app *app) {
    for (int a = 0; a < SERVE_N_ARCH; a++) app->explain_entry[a] = -1;
    for (int i = app->n_entries - 1; i >= 0; i--)
        if (app->entries[i].family == SERVE_CLASSIFIER)
            app->explain_entry[app->entries[i].arch] = i;
    for (int i = 0; i < app->n_entries; i++) {
        serve_entry *e = &app->entries[i];
        e->vocab_group = -1;
        for (int j = 0; j < i && e->vocab_group < 0 && e->family == SERVE_CLASSIFIER; j++)
            if (app->entries[j].family == SERVE_CLASSIFIER &&
                same_vocab(e->vocab, app->entries[j].vocab))
                e->vocab_group = app->entries[j].vocab_group;
        if (e->vocab_group < 0 && e->family == SERVE_CLASSIFIER) e->vocab_group = app->n_groups++;
    }
    for (int i = app->n_entries - 1; i >= 0; i--)
        if (app->entries[i].task_vocab) app->default_group = app->entries[i].vocab_group;
}

/* ---- the answers that never change --------------------------------------------------------- */

/* One loaded architecture of /api/models: its explained seed, every seed, its vocabulary. */
static void model_json(const serve_app *app, const serve_entry *e, attn_json_writer *w) {
    attn_json_begin_object(w);
    attn_json_field_string(w, "name", e->name);
    attn_json_field_int(w, "explain_seed", e->seed);
    attn_json_field_uint(w, "params", e->n_params);
    attn_json_begin_array_field(w, "seeds");
    for (int i = 0; i < app->n_entries; i++)
        if (app->entries[i].family == SERVE_CLASSIFIER && app->entries[i].arch == e->arch)
            attn_json_int(w, app->entries[i].seed);
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

/* One seq2seq model of /api/decoders. */
static void decoder_json(const serve_entry *e, const attn_seq2seq *m, attn_json_writer *w) {
    int L = 0, NH = 0;
    const bool maps = attn_seq2seq_map_shape(m, &L, &NH, NULL);
    attn_json_begin_object(w);
    attn_json_field_string(w, "name", e->name);
    attn_json_field_string(w, "arch", attn_s2s_arch_name(e->s2s.arch));
    attn_json_field_int(w, "seed", e->seed);
    attn_json_field_string(w, "task", e->compose ? "compose" : "rewrite");
    attn_json_field_uint(w, "params", e->n_params);
    attn_json_field_int(w, "n_layers", L);
    attn_json_field_int(w, "n_heads", NH);
    attn_json_field_bool(w, "maps", maps);
    attn_json_field_int(w, "max_words", e->s2s.max_src_len);
    attn_json_field_int(w, "max_out", e->s2s.max_tgt_len - 1);
    attn_json_end_object(w);
}

static void decoders_json(const serve_app *app, attn_json_writer *w) {
    attn_json_begin_object(w);
    attn_json_begin_array_field(w, "decoders");
    for (int i = 0; i < app->n_entries; i++)
        if (app->entries[i].family == SERVE_SEQ2SEQ)
            decoder_json(&app->entries[i], app->models[i], w);
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

static void figures_json(const serve_app *app, attn_json_writer *w) {
    (void)app;
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

/* "rnn (seed 1 explained; 3 seeds), ..., seq2seq-transformer (seed 1)". */
static void summarize(serve_app *app) {
    size_t at = 0;
    for (int k = 0; k <= SERVE_N_ARCH; k++) {
        for (int i = 0; i < app->n_entries; i++) {
            const serve_entry *e = &app->entries[i];
            char what[128];
            int n = 0;
            if (k < SERVE_N_ARCH ? i != app->explain_entry[arch_order[k]]
                                 : e->family != SERVE_SEQ2SEQ)
                continue;
            for (int j = 0; j < app->n_entries; j++)
                n += app->entries[j].family == SERVE_CLASSIFIER && app->entries[j].arch == e->arch;
            if (e->family == SERVE_SEQ2SEQ)
                snprintf(what, sizeof what, "seed %d", e->seed);
            else
                snprintf(what, sizeof what, "seed %d explained; %d seed%s", e->seed, n,
                         n == 1 ? "" : "s");
            if (!e->task_vocab && e->family == SERVE_CLASSIFIER)
                snprintf(what + strlen(what), sizeof what - strlen(what),
                         "; its own vocabulary of %d tokens", attn_vocab_count(e->vocab));
            const int w = snprintf(app->summary + at, sizeof app->summary - at, "%s%s (%s)",
                                   at ? ", " : "", e->name, what);
            if (w < 0 || (size_t)w >= sizeof app->summary - at) return;
            at += (size_t)w;
        }
    }
}

/* *text, *len: what write makes of app (and arg); false when out of memory. */
static bool answer(serve_app *app, void (*write)(const serve_app *, attn_json_writer *),
                   char **text, size_t *len) {
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    write(app, &w);
    attn_json_writer_take(&w, text, len, NULL);
    return *text != NULL;
}

static attn_status precompute(serve_app *app, attn_error *err) {
    bool ok = answer(app, models_json, &app->models_json, &app->models_len) &&
              answer(app, figures_json, &app->figures_json, &app->figures_len) &&
              answer(app, decoders_json, &app->decoders_json, &app->decoders_len);
    for (int i = 0; ok && i < app->n_entries; i++) {
        const serve_entry *e = &app->entries[i];
        if (e->family != SERVE_CLASSIFIER || app->vocab_json[e->vocab_group]) continue;
        attn_json_writer w;
        attn_json_writer_init(&w, NULL);
        vocab_json(app, e, &w);
        attn_json_writer_take(&w, &app->vocab_json[e->vocab_group], &app->vocab_len[e->vocab_group],
                              NULL);
        ok = app->vocab_json[e->vocab_group] != NULL;
    }
    if (!ok) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
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
    if (!app) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    pthread_mutex_init(&app->cache_lock, NULL);
    for (int i = 0; i < SERVE_MAX_ENTRY; i++) pthread_mutex_init(&app->grads_lock[i], NULL);
    app->n_ctx = n_contexts;
    attn_status st = scan_dir(app, weights_dir, err);
    if (st == ATTN_OK && app->n_entries == 0)
        st = attn_errorf(err, ATTN_ERR_IO,
                         "%s: no weights found (expected files like %s/transformer-seed1.json "
                         "or %s/seq2seq-transformer-seed1.json, as attn reproduce writes them)",
                         weights_dir, weights_dir, weights_dir);
    if (st == ATTN_OK) st = load_models(app, weights_dir, err);
    if (st == ATTN_OK) group_vocabs(app);
    if (st == ATTN_OK) st = precompute(app, err);
    if (st != ATTN_OK) {
        serve_app_free(app);
        return st;
    }
    *out = app;
    return ATTN_OK;
}

void serve_app_free(serve_app *app) {
    if (!app) return;
    const size_t n = (size_t)app->n_entries;
    for (size_t k = app->models ? (size_t)app->n_ctx * n : 0; k-- > 0;) /* replicas first */
        model_free(&app->entries[k % n], app->models[k]);
    free(app->models);
    for (size_t i = 0; i < n; i++) attn_vocab_free(app->entries[i].vocab);
    for (int g = 0; g < SERVE_MAX_ENTRY; g++) free(app->vocab_json[g]);
    free(app->models_json);
    free(app->figures_json);
    free(app->decoders_json);
    for (int i = 0; i < SERVE_MAX_ENTRY; i++)
        for (int s = 0; s < SERVE_MAX_SETS; s++) free(app->set_cache[i][s]);
    pthread_mutex_destroy(&app->cache_lock);
    for (int i = 0; i < SERVE_MAX_ENTRY; i++) {
        pthread_mutex_destroy(&app->grads_lock[i]);
        free(app->shared_grads[i]);
    }
    free(app);
}
