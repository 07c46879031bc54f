/* seq2seq_json.c -- seq2seq weights as JSON state_dicts, both ways (attn_seq2seq.h).
 *
 *   {"format": "attn-seq2seq-weights-v1",
 *    "config": {"arch": "seq2seq-transformer", "src_vocab": 91, ..., "norm": "pre", ...},
 *    "tensors": {"<state_dict key>": {"shape": [..], "data": [..] | "data_b64": ".."}}}
 *
 * Floats as %.9g (exact through double) or base64 little-endian float32. "task" ("rewrite" or
 * "compose") is written when it is not rewrite and read as rewrite when absent. Loading is
 * strict: every other config key present and no other, every tensor of the config present with its
 * exact shape, no other tensor, no duplicate, every value a finite float32 (the tensor reader is
 * the classifiers', attn_io_json_tensors_load); all problems are reported at once. A
 * classifier's file (attn-weights-v1) is named as such. */
#include "attn_seq2seq.h"
#include "io_internal.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S2S_FORMAT "attn-seq2seq-weights-v1"

typedef struct cfg_int {
    const char *key;
    size_t offset;
} cfg_int;

#define CFG_INT(f)                                                                                 \
    { #f, offsetof(attn_seq2seq_config, f) }
static const cfg_int cfg_ints[] = {CFG_INT(src_vocab),  CFG_INT(tgt_vocab),   CFG_INT(d_model),
                                   CFG_INT(n_heads),    CFG_INT(ffn_dim),     CFG_INT(enc_layers),
                                   CFG_INT(dec_layers), CFG_INT(max_src_len), CFG_INT(max_tgt_len)};
#define N_CFG_INTS ((int)(sizeof cfg_ints / sizeof cfg_ints[0]))
/* The GRU models' keys (no Transformer key but the vocabularies, widths and lengths). */
static const cfg_int rnn_ints[] = {
    CFG_INT(src_vocab),     CFG_INT(tgt_vocab),   CFG_INT(d_model),    CFG_INT(hidden_size),
    CFG_INT(bidirectional), CFG_INT(max_src_len), CFG_INT(max_tgt_len)};
#define N_RNN_INTS ((int)(sizeof rnn_ints / sizeof rnn_ints[0]))

static bool is_rnn(attn_s2s_arch a) {
    return a == ATTN_S2S_GRU || a == ATTN_S2S_ATTN;
}

/* The integer keys of arch a's config. */
static const cfg_int *ints_of(attn_s2s_arch a, int *n) {
    *n = is_rnn(a) ? N_RNN_INTS : N_CFG_INTS;
    return is_rnn(a) ? rnn_ints : cfg_ints;
}

static int *cfg_field(attn_seq2seq_config *c, const cfg_int *k) {
    return (int *)((char *)c + k->offset);
}

/* ---- saving --------------------------------------------------------------------------------- */

static void write_config(FILE *f, const attn_seq2seq_config *c) {
    attn_seq2seq_config copy = *c;
    int n;
    const cfg_int *keys = ints_of(c->arch, &n);
    fprintf(f, "\"config\": {\"arch\": \"%s\"", attn_s2s_arch_name(c->arch));
    for (int i = 0; i < n; i++)
        fprintf(f, ", \"%s\": %d", keys[i].key, *cfg_field(&copy, &keys[i]));
    if (is_rnn(c->arch)) { /* trained on rewrite only (attn train refuses compose for them) */
        fputc('}', f);
        return;
    }
    fprintf(f, ", \"norm\": \"%s\", \"activation\": \"%s\", \"pos\": \"%s\"",
            c->norm == ATTN_NORM_PRE ? "pre" : "post",
            c->activation == ATTN_ACT_GELU ? "gelu" : "relu", attn_pos_name(c->pos));
    /* "task" only where it is not rewrite: a file without it is a rewrite model (the files
     * written before the key existed, and the same bytes now) */
    if (c->task != ATTN_TASK_REWRITE) fprintf(f, ", \"task\": \"%s\"", attn_task_name(c->task));
    fputc('}', f);
}

typedef struct s2s_doc {
    attn_seq2seq *m;
    const float *base;
    bool b64;
} s2s_doc;

static bool print_s2s(FILE *f, const void *ctx) {
    const s2s_doc *d = ctx;
    fprintf(f, "{\"format\": \"%s\",\n", S2S_FORMAT);
    write_config(f, attn_seq2seq_config_of(d->m));
    attn_io_kernels_field(f, attn_seq2seq_kernels(d->m));
    fprintf(f, ",\n\"tensors\": {\n");
    const size_t count = attn_seq2seq_tensor_count(d->m);
    for (size_t i = 0; i < count; i++) {
        int shape[4];
        const int nd = attn_seq2seq_tensor_shape(d->m, i, shape);
        attn_io_write_tensor(f, attn_seq2seq_tensor_name(d->m, i), shape, nd,
                             d->base + attn_seq2seq_tensor_offset(d->m, i),
                             attn_seq2seq_tensor_numel(d->m, i), d->b64, i + 1 == count);
    }
    fprintf(f, "}}\n");
    return true;
}

attn_status attn_seq2seq_save_json(attn_seq2seq *m, bool grads, bool b64, const char *path,
                                   attn_error *err) {
    if (!m || !path) return attn_errorf(err, ATTN_ERR_ARG, "seq2seq weights: NULL model or path");
    if (!grads && attn_io_wants_safetensors(path))
        return attn_seq2seq_save_safetensors(m, path, err);
    const float *base = grads ? attn_seq2seq_grads(m) : attn_seq2seq_params(m);
    if (!base) return attn_errorf(err, ATTN_ERR_ARG, "%s: the model has no gradients yet", path);
    const size_t count = attn_seq2seq_tensor_count(m);
    for (size_t i = 0; i < count; i++) {
        const attn_status st = attn_io_st_check_finite(path, attn_seq2seq_tensor_name(m, i),
                                                       base + attn_seq2seq_tensor_offset(m, i),
                                                       attn_seq2seq_tensor_numel(m, i), err);
        if (st != ATTN_OK) return st;
    }
    const s2s_doc doc = {m, base, b64};
    return attn_io_print_file(print_s2s, &doc, path, err);
}

/* ---- loading ------------------------------------------------------------------------------- */

static int name_index(const char *s, const char *const *names, int n) {
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* A GRU model's config: no other key; then the validation naming the field. */
static void parse_rnn_rest(const cJSON *obj, attn_seq2seq_config *c, const cfg_int *ints,
                           int n_ints, attn_io_problems *p) {
    const cJSON *item;
    cJSON_ArrayForEach(item, obj) {
        const char *k = item->string ? item->string : "";
        bool known = !strcmp(k, "arch");
        for (int i = 0; i < n_ints && !known; i++) known = !strcmp(k, ints[i].key);
        if (!known)
            attn_io_problem(p, ATTN_ERR_PARSE, "config: unknown key \"%s\" for %s", k,
                            attn_s2s_arch_name(c->arch));
    }
    attn_error e;
    if (p->n == 0 && attn_seq2seq_config_validate(c, &e) != ATTN_OK)
        attn_io_problem(p, e.status, "%s", e.msg);
}

static void parse_config(const cJSON *obj, attn_seq2seq_config *c, attn_io_problems *p) {
    if (!cJSON_IsObject(obj)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "%s \"config\"", obj ? "malformed" : "missing");
        return;
    }
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(obj, "arch");
    attn_s2s_arch a = ATTN_S2S_TRANSFORMER;
    attn_error e;
    if (!cJSON_IsString(arch) || attn_s2s_arch_from_name(arch->valuestring, &a, &e) != ATTN_OK) {
        attn_io_problem(p, ATTN_ERR_VALUE,
                        "config: \"arch\" must be \"seq2seq-transformer\", \"seq2seq-gru\" or "
                        "\"seq2seq-attn\"");
        return;
    }
    *c = attn_seq2seq_config_default(a);
    int n_ints;
    const cfg_int *ints = ints_of(a, &n_ints);
    for (int i = 0; i < n_ints; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, ints[i].key);
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
            fabs(v->valuedouble) > 1e9)
            attn_io_problem(p, ATTN_ERR_PARSE, "config: \"%s\" %s, expected an integer",
                            ints[i].key, v ? "is not an integer" : "is missing");
        else
            *cfg_field(c, &ints[i]) = (int)v->valuedouble;
    }
    if (is_rnn(a)) {
        parse_rnn_rest(obj, c, ints, n_ints, p);
        return;
    }
    static const char *const norms[] = {"pre", "post"}, *const acts[] = {"relu", "gelu"};
    const char *const keys[3] = {"norm", "activation", "pos"};
    for (int k = 0; k < 3; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, keys[k]);
        const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
        const int i = k == 0   ? name_index(s, norms, 2)
                      : k == 1 ? name_index(s, acts, 2)
                               : attn_pos_from_name(s);
        if (i < 0)
            attn_io_problem(p, ATTN_ERR_VALUE, "config: \"%s\" %s%s%s", keys[k],
                            s   ? "is \""
                            : v ? "is not a string"
                                : "is missing",
                            s ? s : "", s ? "\"" : "");
        else if (k == 0)
            c->norm = i == 0 ? ATTN_NORM_PRE : ATTN_NORM_POST;
        else if (k == 1)
            c->activation = i == 0 ? ATTN_ACT_RELU : ATTN_ACT_GELU;
        else
            c->pos = (attn_pos)i;
    }
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(obj, "task");
    if (task &&
        (!cJSON_IsString(task) || attn_task_from_name(task->valuestring, &c->task, &e) != ATTN_OK))
        attn_io_problem(p, ATTN_ERR_VALUE, "config: \"task\" must be \"rewrite\" or \"compose\"");
    const cJSON *item;
    cJSON_ArrayForEach(item, obj) {
        const char *k = item->string ? item->string : "";
        bool known = !strcmp(k, "arch") || !strcmp(k, "norm") || !strcmp(k, "activation") ||
                     !strcmp(k, "pos") || !strcmp(k, "task");
        for (int i = 0; i < N_CFG_INTS && !known; i++) known = !strcmp(k, cfg_ints[i].key);
        if (!known) attn_io_problem(p, ATTN_ERR_PARSE, "config: unknown key \"%s\"", k);
    }
    if (p->n == 0 && attn_seq2seq_config_validate(c, &e) != ATTN_OK)
        attn_io_problem(p, e.status, "%s", e.msg);
}

/* Straight into the model's parameters: a model that fails to load is freed, so no second
 * full-size buffer is needed. */
static void load_tensors(attn_seq2seq *m, const cJSON *root, attn_io_problems *p) {
    attn_io_model_view v;
    attn_error verr;
    if (attn_io_view_of_s2s(m, false, &v, &verr) != ATTN_OK) {
        attn_io_problem(p, ATTN_ERR_NOMEM, "out of memory");
        return;
    }
    attn_io_json_tensors_load(&v, root, attn_s2s_arch_name(attn_seq2seq_config_of(m)->arch), p);
    attn_io_model_view_free(&v);
}

attn_status attn_seq2seq_load_json(const char *path, attn_seq2seq **out, attn_error *err) {
    if (!path || !out) return attn_errorf(err, ATTN_ERR_ARG, "seq2seq weights: NULL path or out");
    *out = NULL;
    if (attn_io_is_safetensors(path)) return attn_seq2seq_load_safetensors(path, out, err);
    cJSON *root = NULL;
    attn_status st = attn_io_parse_file(path, false, &root, err);
    if (st != ATTN_OK) return st;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const char *f = cJSON_IsString(fmt) ? fmt->valuestring : NULL;
    if (!f || strcmp(f, S2S_FORMAT) != 0) {
        st = f && strcmp(f, ATTN_IO_WEIGHTS_FORMAT) == 0
                 ? attn_errorf(err, ATTN_ERR_VALUE,
                               "%s holds a classifier's weights (\"%s\"), not a seq2seq model's "
                               "(\"%s\"): use attn predict with it",
                               path, f, S2S_FORMAT)
             : attn_io_is_checkpoint_format(f)
                 ? attn_errorf(err, ATTN_ERR_VALUE, "%s: " ATTN_IO_CKPT_NOT_WEIGHTS, path, f)
                 : attn_errorf(err, ATTN_ERR_PARSE, "%s: \"format\" is %s%s%s, expected \"%s\"",
                               path, f ? "\"" : "", f ? f : "missing or not a string",
                               f ? "\"" : "", S2S_FORMAT);
        cJSON_Delete(root);
        return st;
    }
    attn_io_problems p = {err, path, 0, ATTN_OK};
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        const char *k = item->string ? item->string : "";
        if (strcmp(k, "format") && strcmp(k, "config") && strcmp(k, "tensors") &&
            strcmp(k, "kernels"))
            attn_io_problem(&p, ATTN_ERR_PARSE, "unknown top-level key \"%s\"", k);
    }
    attn_kernels_info made_on;
    const bool recorded = attn_io_kernels_read(root, &made_on, &p);
    attn_seq2seq_config cfg;
    parse_config(cJSON_GetObjectItemCaseSensitive(root, "config"), &cfg, &p);
    /* the size the config asks for, against the limit and the file's values, before the model
     * is allocated */
    if (p.n == 0) attn_io_check_n_params(attn_seq2seq_config_n_params(&cfg), root, &p);
    attn_seq2seq *m = NULL;
    attn_error cerr;
    if (p.n == 0 && attn_seq2seq_create(&cfg, 0, &m, &cerr) != ATTN_OK) {
        cJSON_Delete(root);
        return attn_errorf(err, cerr.status, "%s: %s", path, cerr.msg);
    }
    if (m) load_tensors(m, root, &p);
    if (m && recorded) attn_seq2seq_set_kernels(m, &made_on);
    cJSON_Delete(root);
    st = attn_io_problems_finish(&p);
    if (st != ATTN_OK) {
        attn_seq2seq_free(m);
        return st;
    }
    *out = m;
    return ATTN_OK;
}

/* ---- for the seq2seq checkpoint (seq2seq_checkpoint_json.c) -------------------------------- */

void attn_io_s2s_config_write(FILE *f, const attn_seq2seq_config *c) {
    write_config(f, c);
}

void attn_io_s2s_config_parse(const cJSON *obj, attn_seq2seq_config *c, attn_io_problems *p) {
    parse_config(obj, c, p);
}
