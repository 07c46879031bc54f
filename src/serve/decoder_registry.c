/* decoder_registry.c -- the seq2seq models of `attn serve`: DIR/seq2seq-<arch>-seed<S>.json
 * and DIR/compose-<arch>-seed<S>.json (the lowest seed of each name, one copy per worker
 * context), the /api/decoders answer computed once, and finding a model by name. */
#include "decoder_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading ----------------------------------------------------------------------------- */

/* "seq2seq-transformer-seed12.json" -> stem "seq2seq-transformer", seed 12; false if the name
 * is not DIR's kind of decoder file. */
static bool decoder_file(const char *name, char *stem, size_t cap, int *seed) {
    if (strncmp(name, "seq2seq-", 8) != 0 && strncmp(name, "compose-", 8) != 0) return false;
    const size_t len = strlen(name);
    const char *at = strstr(name, "-seed");
    if (!at || len < 6 || strcmp(name + len - 5, ".json") != 0) return false;
    while (strstr(at + 1, "-seed")) at = strstr(at + 1, "-seed");
    int s = 0;
    const char *p = at + 5;
    if (p == name + len - 5) return false;
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

/* The lowest seed of every decoder file name of dir into d->d[] (not yet loaded). */
static attn_status scan_dir(serve_decoders *d, const char *dir, attn_error *err) {
    DIR *dp = opendir(dir);
    if (!dp) return ATTN_OK; /* the classifier loader names a missing directory */
    for (struct dirent *de; (de = readdir(dp));) {
        char stem[64];
        int seed, i;
        if (!decoder_file(de->d_name, stem, sizeof stem, &seed)) continue;
        for (i = 0; i < d->n && strcmp(d->d[i].name, stem) != 0; i++) {
        }
        if (i == d->n) {
            if (d->n == SERVE_MAX_DECODERS) {
                closedir(dp);
                return attn_errorf(err, ATTN_ERR_VALUE, "%s: more than %d seq2seq model names", dir,
                                   SERVE_MAX_DECODERS);
            }
            memcpy(d->d[d->n].name, stem, strlen(stem) + 1);
            d->d[d->n++].seed = seed;
        } else if (seed < d->d[i].seed) {
            d->d[i].seed = seed;
        }
    }
    closedir(dp);
    for (int i = 1; i < d->n; i++) /* by name, so that the answers do not follow readdir */
        for (int j = i; j > 0 && strcmp(d->d[j - 1].name, d->d[j].name) > 0; j--) {
            const serve_decoder t = d->d[j];
            d->d[j] = d->d[j - 1];
            d->d[j - 1] = t;
        }
    return ATTN_OK;
}

static attn_status load_models(serve_decoders *d, const char *dir, int n_ctx, attn_error *err) {
    d->models = calloc((size_t)n_ctx * (d->n ? d->n : 1), sizeof *d->models);
    if (!d->models) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    d->n_ctx = n_ctx;
    for (int i = 0; i < d->n; i++) {
        serve_decoder *e = &d->d[i];
        char path[4096];
        snprintf(path, sizeof path, "%s/%s-seed%d.json", dir, e->name, e->seed);
        attn_seq2seq *m = NULL;
        attn_status st = attn_seq2seq_load_json(path, &m, err);
        if (st != ATTN_OK) return st;
        d->models[i] = m;
        e->cfg = *attn_seq2seq_config_of(m);
        e->n_params = attn_seq2seq_n_params(m);
        e->compose = strncmp(e->name, "compose-", 8) == 0 || e->cfg.task == ATTN_TASK_COMPOSE;
        for (int c = 1; c < n_ctx; c++) {
            attn_seq2seq **dst = &d->models[(size_t)c * d->n + i];
            st = attn_seq2seq_create(&e->cfg, 0, dst, err);
            if (st != ATTN_OK) return st;
            memcpy(attn_seq2seq_params(*dst), attn_seq2seq_params(m), e->n_params * sizeof(float));
        }
    }
    return ATTN_OK;
}

static void decoder_json(const serve_decoder *e, const attn_seq2seq *m, attn_json_writer *w) {
    int L = 0, NH = 0;
    const bool maps = attn_seq2seq_map_shape(m, &L, &NH, NULL);
    attn_json_begin_object(w);
    attn_json_field_string(w, "name", e->name);
    attn_json_field_string(w, "arch", attn_s2s_arch_name(e->cfg.arch));
    attn_json_field_int(w, "seed", e->seed);
    attn_json_field_string(w, "task", e->compose ? "compose" : "rewrite");
    attn_json_field_uint(w, "params", e->n_params);
    attn_json_field_int(w, "n_layers", L);
    attn_json_field_int(w, "n_heads", NH);
    attn_json_field_bool(w, "maps", maps);
    attn_json_field_int(w, "max_words", e->cfg.max_src_len);
    attn_json_field_int(w, "max_out", e->cfg.max_tgt_len - 1);
    attn_json_end_object(w);
}

static void decoders_json(const serve_decoders *d, attn_json_writer *w) {
    attn_json_begin_object(w);
    attn_json_begin_array_field(w, "decoders");
    for (int i = 0; i < d->n; i++) decoder_json(&d->d[i], d->models[i], w);
    attn_json_end_array(w);
    attn_json_end_object(w);
}

attn_status serve_decoders_load(serve_app *app, const char *dir, int n_ctx, attn_error *err) {
    serve_decoders *d = calloc(1, sizeof *d);
    if (!d) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    app->decoders = d;
    attn_status st = scan_dir(d, dir, err);
    if (st == ATTN_OK) st = load_models(d, dir, n_ctx, err);
    if (st == ATTN_OK) {
        attn_json_writer w;
        attn_json_writer_init(&w, NULL);
        decoders_json(d, &w);
        attn_json_writer_take(&w, &d->json, &d->json_len, NULL);
        if (!d->json) st = attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    }
    return st;
}

int serve_decoders_count(const serve_app *app) {
    return app->decoders ? app->decoders->n : 0;
}

void serve_decoders_free(serve_decoders *d) {
    if (!d) return;
    if (d->models)
        for (size_t i = 0; i < (size_t)d->n_ctx * d->n; i++) attn_seq2seq_free(d->models[i]);
    free(d->models);
    free(d->json);
    free(d);
}

int serve_decoder_find(const serve_app *app, const char *name, bool compose) {
    const serve_decoders *d = app->decoders;
    int first = -1;
    for (int i = 0; d && i < d->n; i++) {
        if (name[0] && strcmp(d->d[i].name, name) == 0) return i;
        if (name[0] || d->d[i].compose != compose) continue;
        if (strstr(d->d[i].name, "seq2seq-transformer")) return i; /* the write-up's model */
        if (first < 0) first = i;
    }
    return first;
}

attn_seq2seq *serve_decoder_model(serve_app *app, int ctx, int i) {
    return app->decoders->models[(size_t)ctx * app->decoders->n + i];
}

void serve_decoders_summary(serve_app *app) {
    const serve_decoders *d = app->decoders;
    size_t at = strlen(app->summary);
    for (int i = 0; d && i < d->n; i++) {
        const int w = snprintf(app->summary + at, sizeof app->summary - at, "%s%s (seed %d)",
                               at ? ", " : "", d->d[i].name, d->d[i].seed);
        if (w < 0 || (size_t)w >= sizeof app->summary - at) break;
        at += (size_t)w;
    }
}
