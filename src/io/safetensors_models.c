/* safetensors_models.c -- both model families in safetensors (format: safetensors.c): each
 * family is turned into one attn_io_model_view (its tensor table, its flat parameters, its
 * config and vocabulary as the JSON weights write them) and the one container code does the
 * rest. The "__metadata__" strings are "format" (the JSON weights' format name, which tells the
 * family), "config" (the config object's JSON text, written and read by the JSON weights' own
 * functions), "vocab" (a classifier's own vocabulary as a JSON array, when it has one) and
 * "writer" ("attn"). */
#include "attn_seq2seq.h"
#include "io_internal.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

#define S2S_FORMAT "attn-seq2seq-weights-v1"

/* ---- views ---------------------------------------------------------------------------------- */

void attn_io_model_view_free(attn_io_model_view *v) {
    free(v->tensors);
    free(v->config);
    free(v->vocab);
    free(v->kernels);
    memset(v, 0, sizeof *v);
}

/* What print writes, from its first `open` character on ("config": {..} -> {..}). */
static attn_status print_value(attn_io_print_fn print, const void *ctx, char open, char **out,
                               attn_error *err) {
    size_t len = 0;
    attn_status st = attn_io_print_string(print, ctx, "safetensors metadata", out, &len, err);
    if (st != ATTN_OK) return st;
    const char *at = strchr(*out, open);
    if (at) memmove(*out, at, strlen(at) + 1);
    return ATTN_OK;
}

static bool print_config(FILE *f, const void *ctx) {
    return attn_io_model_config_write(f, ctx);
}
static bool print_vocab(FILE *f, const void *ctx) {
    attn_io_vocab_write(f, ctx); /* ,\n"vocab": [..] */
    return true;
}
static bool print_kernels(FILE *f, const void *ctx) {
    attn_io_kernels_field(f, ctx); /* ,\n"kernels": {..} */
    return true;
}
static bool print_s2s_config(FILE *f, const void *ctx) {
    attn_io_s2s_config_write(f, ctx); /* "config": {..} */
    return true;
}

static attn_status view_alloc(attn_io_model_view *v, const char *format, size_t count,
                              attn_error *err) {
    memset(v, 0, sizeof *v);
    v->format = format;
    v->count = count;
    v->tensors = calloc(count ? count : 1, sizeof *v->tensors);
    return v->tensors ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
}

attn_status attn_io_view_of_model(const attn_model *m, const attn_vocab *vocab, float *params,
                                  bool meta, attn_io_model_view *v, attn_error *err) {
    attn_status st = view_alloc(v, ATTN_IO_WEIGHTS_FORMAT, attn_model_tensor_count(m), err);
    for (size_t i = 0; st == ATTN_OK && i < v->count; i++) {
        attn_io_tensor_view *t = &v->tensors[i];
        t->name = attn_model_tensor_name(m, i);
        t->ndim = attn_model_tensor_shape(m, i, t->shape);
        t->offset = attn_model_tensor_offset(m, i);
        t->numel = attn_model_tensor_numel(m, i);
    }
    v->params = params;
    if (st == ATTN_OK && meta)
        st = print_value(print_config, attn_model_config_of(m), '{', &v->config, err);
    if (st == ATTN_OK && meta && vocab && !attn_vocab_is_builtin(vocab))
        st = print_value(print_vocab, vocab, '[', &v->vocab, err);
    if (st == ATTN_OK && meta && attn_model_kernels(m))
        st = print_value(print_kernels, attn_model_kernels(m), '{', &v->kernels, err);
    if (st != ATTN_OK) attn_io_model_view_free(v);
    return st;
}

attn_status attn_io_view_of_s2s(attn_seq2seq *m, bool meta, attn_io_model_view *v,
                                attn_error *err) {
    attn_status st = view_alloc(v, S2S_FORMAT, attn_seq2seq_tensor_count(m), err);
    for (size_t i = 0; st == ATTN_OK && i < v->count; i++) {
        attn_io_tensor_view *t = &v->tensors[i];
        t->name = attn_seq2seq_tensor_name(m, i);
        t->ndim = attn_seq2seq_tensor_shape(m, i, t->shape);
        t->offset = attn_seq2seq_tensor_offset(m, i);
        t->numel = attn_seq2seq_tensor_numel(m, i);
    }
    v->params = attn_seq2seq_params(m);
    if (st == ATTN_OK && meta)
        st = print_value(print_s2s_config, attn_seq2seq_config_of(m), '{', &v->config, err);
    if (st == ATTN_OK && meta && attn_seq2seq_kernels(m))
        st = print_value(print_kernels, attn_seq2seq_kernels(m), '{', &v->kernels, err);
    if (st != ATTN_OK) attn_io_model_view_free(v);
    return st;
}

/* ---- saving --------------------------------------------------------------------------------- */

bool attn_io_wants_safetensors(const char *path) {
    static const char ext[] = ".safetensors";
    const size_t n = path ? strlen(path) : 0, e = sizeof ext - 1;
    return n > e && strcmp(path + n - e, ext) == 0;
}

bool attn_io_is_checkpoint_format(const char *format) {
    return format && (strcmp(format, "attn-checkpoint-v1") == 0 ||
                      strcmp(format, "attn-seq2seq-checkpoint-v1") == 0);
}

attn_status attn_weights_save_safetensors(const attn_model *m, const attn_vocab *vocab,
                                          const char *path, attn_error *err) {
    if (!m || !path) return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL model or path");
    attn_error verr;
    if (vocab && attn_vocab_check_config(vocab, attn_model_config_of(m), &verr) != ATTN_OK)
        return attn_errorf(err, verr.status, "%s: not written: %s", path, verr.msg);
    attn_io_model_view v;
    /* the view only reads the parameters when saving */
    float *params = (float *)attn_model_params_const(m);
    attn_status st = attn_io_view_of_model(m, vocab, params, true, &v, err);
    if (st != ATTN_OK) return st;
    st = attn_io_safetensors_save(&v, path, err);
    attn_io_model_view_free(&v);
    return st;
}

attn_status attn_seq2seq_save_safetensors(attn_seq2seq *m, const char *path, attn_error *err) {
    if (!m || !path) return attn_errorf(err, ATTN_ERR_ARG, "seq2seq weights: NULL model or path");
    attn_io_model_view v;
    attn_status st = attn_io_view_of_s2s(m, true, &v, err);
    if (st != ATTN_OK) return st;
    st = attn_io_safetensors_save(&v, path, err);
    attn_io_model_view_free(&v);
    return st;
}

/* ---- loading -------------------------------------------------------------------------------- */

/* The file's "format" must be `want`; the other family's is named as such. */
static void check_format(const attn_io_st_file *f, const char *want, attn_io_problems *p) {
    if (f->format && strcmp(f->format, want) == 0) return;
    const bool s2s = f->format && strcmp(f->format, S2S_FORMAT) == 0;
    if (s2s || (f->format && strcmp(f->format, ATTN_IO_WEIGHTS_FORMAT) == 0))
        attn_io_problem(p, ATTN_ERR_VALUE, "holds a %s's weights (\"%s\"), not a %s's: use %s",
                        s2s ? "seq2seq model" : "classifier", f->format,
                        s2s ? "classifier" : "seq2seq model",
                        s2s ? "attn generate with it" : "attn predict with it");
    else if (attn_io_is_checkpoint_format(f->format))
        attn_io_problem(p, ATTN_ERR_VALUE, ATTN_IO_CKPT_NOT_WEIGHTS, f->format);
    else
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "a safetensors file without attn's \"__metadata__\" \"format\" (\"%s\" "
                        "or \"%s\") and \"config\": attn needs the config to know the model",
                        ATTN_IO_WEIGHTS_FORMAT, S2S_FORMAT);
}

/* The metadata as the JSON weights' top level: {"config": {..}, "vocab": [..]}; NULL after a
 * problem. */
static cJSON *metadata_root(const attn_io_st_file *f, attn_io_problems *p) {
    const char *text[3] = {f->config, f->vocab, f->kernels};
    const char *key[3] = {"config", "vocab", "kernels"};
    cJSON *root = cJSON_CreateObject();
    if (!root) attn_io_problem(p, ATTN_ERR_NOMEM, "out of memory");
    for (int k = 0; k < 3 && root; k++) {
        if (!text[k]) continue;
        cJSON *item = NULL;
        size_t at = 0;
        const char *why = NULL;
        if (attn_io_json_parse(text[k], strlen(text[k]), &item, &at, &why) != ATTN_OK) {
            attn_io_problem(p, ATTN_ERR_PARSE,
                            "\"__metadata__\" \"%s\": malformed JSON at byte %zu: %s", key[k], at,
                            why);
            break;
        }
        cJSON_AddItemToObject(root, key[k], item);
    }
    if (p->n > 0) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* Below this many parameters a model is created to name each missing tensor; above it a config
 * that the file's data cannot fill is refused before anything is allocated. */
#define EAGER_CHECK_PARAMS ((size_t)1 << 20)

static void check_params(const attn_io_st_file *f, size_t need, attn_io_problems *p) {
    if (need > attn_io_max_params())
        attn_io_problem(p, ATTN_ERR_VALUE,
                        "config: the model would have %zu parameters, over the limit of %zu "
                        "(raise it with the environment variable ATTN_MAX_PARAMS)",
                        need, attn_io_max_params());
    else if (need >= EAGER_CHECK_PARAMS && need > f->data_len / 4)
        attn_io_problem(p, ATTN_ERR_SHAPE,
                        "config: the model would have %zu parameters but the file holds only %zu "
                        "values (config and tensors disagree)",
                        need, f->data_len / 4);
}

/* The values in place (attn_io_st_fill gave src): the zero-filled model *m replaced by one on
 * the mapping, which it then owns. */
static attn_status adopt_model(const char *path, const attn_model_config *cfg,
                               const attn_param_source *src, attn_model **m, attn_error *err) {
    attn_model_free(*m);
    *m = NULL;
    attn_error cerr;
    attn_status st = attn_model_create_from(cfg, src, m, &cerr);
    if (st == ATTN_OK) return ATTN_OK;
    src->release(src->owner);
    return attn_errorf(err, st, "%s: %s", path, cerr.msg);
}

static attn_status adopt_s2s(const char *path, const attn_seq2seq_config *cfg,
                             const attn_param_source *src, attn_seq2seq **m, attn_error *err) {
    attn_seq2seq_free(*m);
    *m = NULL;
    attn_error cerr;
    attn_status st = attn_seq2seq_create_from(cfg, src, m, &cerr);
    if (st == ATTN_OK) return ATTN_OK;
    src->release(src->owner);
    return attn_errorf(err, st, "%s: %s", path, cerr.msg);
}

/* The classifier of the open file f into *out, its vocabulary into *vocab (NULL: dropped);
 * its parameters the file's mapped values where they can be used in place. */
static attn_status load_model(attn_io_st_file *f, attn_model **out, attn_vocab **vocab,
                              attn_error *err) {
    attn_io_problems p = {err, f->path, 0, ATTN_OK};
    check_format(f, ATTN_IO_WEIGHTS_FORMAT, &p);
    cJSON *root = p.n == 0 ? metadata_root(f, &p) : NULL;
    attn_model_config cfg = attn_model_config_default(ATTN_ARCH_RNN);
    if (root)
        attn_io_model_config_from_json(cJSON_GetObjectItemCaseSensitive(root, "config"), "config",
                                       ATTN_IO_CONFIG_REJECT_UNKNOWN, &cfg, &p);
    attn_kernels_info made_on = {0}; /* mode "": no record */
    if (root) attn_io_kernels_read(root, &made_on, &p);
    if (p.n == 0) check_params(f, attn_model_config_n_params(&cfg), &p);
    attn_status st = attn_io_problems_finish(&p);
    attn_model *m = NULL;
    attn_vocab *v = NULL;
    attn_error cerr;
    const attn_param_source zeros = {0}; /* no initialisation drawn: the file's values follow */
    if (st == ATTN_OK && (st = attn_model_create_from(&cfg, &zeros, &m, &cerr)) != ATTN_OK)
        attn_errorf(err, st, "%s: %s", f->path, cerr.msg);
    attn_io_model_view view = {0};
    attn_param_source mapped = {0};
    if (st == ATTN_OK) st = attn_io_view_of_model(m, NULL, attn_model_params(m), false, &view, err);
    if (st == ATTN_OK) st = attn_io_st_fill(f, &view, &mapped, err);
    attn_io_model_view_free(&view);
    if (st == ATTN_OK && mapped.params) st = adopt_model(f->path, &cfg, &mapped, &m, err);
    if (st == ATTN_OK) st = attn_io_vocab_load(f->path, root, &cfg, &v, err);
    if (st == ATTN_OK) attn_model_set_kernels(m, &made_on);
    cJSON_Delete(root);
    if (st != ATTN_OK) {
        attn_model_free(m);
        return st;
    }
    *out = m;
    if (vocab)
        *vocab = v;
    else
        attn_vocab_free(v);
    return ATTN_OK;
}

attn_status attn_weights_load_safetensors(const char *path, attn_model **out, attn_vocab **vocab,
                                          attn_error *err) {
    if (!path || !out) return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL path or out");
    *out = NULL;
    if (vocab) *vocab = NULL;
    attn_io_st_file f;
    attn_status st = attn_io_st_open(path, &f, err);
    if (st != ATTN_OK) return st;
    st = load_model(&f, out, vocab, err);
    attn_io_st_close(&f);
    return st;
}

/* attn_weights_load_into for a safetensors file: the file's config must be the model's, its
 * vocabulary the built-in one; the values go into m only when every tensor was good. */
attn_status attn_io_load_into_safetensors(attn_model *m, const char *path, attn_error *err) {
    attn_model *file = NULL;
    attn_vocab *vocab = NULL;
    attn_status st = attn_weights_load_safetensors(path, &file, &vocab, err);
    if (st != ATTN_OK) return st;
    const attn_model_config *a = attn_model_config_of(file), *b = attn_model_config_of(m);
    bool same = a->arch == b->arch && a->norm == b->norm && a->activation == b->activation &&
                a->pos == b->pos && attn_model_n_params(file) == attn_model_n_params(m);
    for (size_t i = 0; same && i < ATTN_IO_N_CONFIG_INTS; i++)
        same = *(const int *)((const char *)a + attn_io_config_ints[i].offset) ==
               *(const int *)((const char *)b + attn_io_config_ints[i].offset);
    if (!same)
        st = attn_errorf(err, ATTN_ERR_VALUE, "%s: its \"config\" is not the model's", path);
    else if (vocab && !attn_vocab_is_builtin(vocab))
        st = attn_errorf(err, ATTN_ERR_VALUE,
                         "%s: the file has its own vocabulary of %d tokens; the model is on the "
                         "built-in one",
                         path, attn_vocab_count(vocab));
    else
        memcpy(attn_model_params(m), attn_model_params(file),
               attn_model_n_params(m) * sizeof(float));
    attn_vocab_free(vocab);
    attn_model_free(file);
    return st;
}

attn_status attn_seq2seq_load_safetensors(const char *path, attn_seq2seq **out, attn_error *err) {
    if (!path || !out) return attn_errorf(err, ATTN_ERR_ARG, "seq2seq weights: NULL path or out");
    *out = NULL;
    attn_io_st_file f;
    attn_status st = attn_io_st_open(path, &f, err);
    if (st != ATTN_OK) return st;
    attn_io_problems p = {err, path, 0, ATTN_OK};
    check_format(&f, S2S_FORMAT, &p);
    cJSON *root = p.n == 0 ? metadata_root(&f, &p) : NULL;
    attn_seq2seq_config cfg;
    if (root) attn_io_s2s_config_parse(cJSON_GetObjectItemCaseSensitive(root, "config"), &cfg, &p);
    attn_kernels_info made_on = {0}; /* mode "": no record */
    if (root) attn_io_kernels_read(root, &made_on, &p);
    cJSON_Delete(root);
    /* the count from the config, before the model is created (as the JSON loader does) */
    if (p.n == 0) check_params(&f, attn_seq2seq_config_n_params(&cfg), &p);
    st = attn_io_problems_finish(&p);
    attn_seq2seq *m = NULL;
    attn_error cerr;
    const attn_param_source zeros = {0}; /* no initialisation drawn: the file's values follow */
    if (st == ATTN_OK && (st = attn_seq2seq_create_from(&cfg, &zeros, &m, &cerr)) != ATTN_OK)
        attn_errorf(err, st, "%s: %s", path, cerr.msg);
    attn_io_model_view view = {0};
    attn_param_source mapped = {0};
    if (st == ATTN_OK) st = attn_io_view_of_s2s(m, false, &view, err);
    if (st == ATTN_OK) st = attn_io_st_fill(&f, &view, &mapped, err);
    attn_io_model_view_free(&view);
    if (st == ATTN_OK && mapped.params) st = adopt_s2s(path, &cfg, &mapped, &m, err);
    if (st == ATTN_OK) attn_seq2seq_set_kernels(m, &made_on);
    attn_io_st_close(&f);
    if (st != ATTN_OK) {
        attn_seq2seq_free(m);
        return st;
    }
    *out = m;
    return ATTN_OK;
}
