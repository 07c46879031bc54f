/* checkpoint.c -- save/restore the whole training state as "attn-checkpoint-v1" JSON:
 * model config, train config, a fingerprint of the training data, epochs done, the shuffling
 * PRNG state, Adam's step, and params, m, v as flat float arrays (floats widened to double,
 * which cJSON prints with enough digits to round-trip bit for bit), and model selection's
 * state: best_epoch (0 = none), best_acc and, when best_epoch > 0, best_params. Written atomically:
 * path.tmp, fflush, fsync, rename, so an existing checkpoint survives any failure. */
#include "io_internal.h"
#include "train_internal.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT "attn-checkpoint-v1"

/* FNV-1a over the labels and ids of the data, so a resume on different data is refused. */
static uint64_t data_fingerprint(const attn_dataset *d) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < d->n; i++) {
        h = (h ^ (uint64_t)(d->labels[i] + 1)) * 1099511628211ull;
        h = (h ^ (uint64_t)d->lengths[i]) * 1099511628211ull;
        for (size_t j = d->offsets[i]; j < d->offsets[i + 1]; j++)
            h = (h ^ (uint64_t)(unsigned)d->ids[j]) * 1099511628211ull;
    }
    return h;
}

static void add_u64(cJSON *o, const char *key, uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
    cJSON_AddStringToObject(o, key, buf);
}

static cJSON *train_config_json(const attn_train_config *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "epochs", c->epochs);
    cJSON_AddNumberToObject(o, "batch_size", c->batch_size);
    cJSON_AddNumberToObject(o, "bucket", c->bucket);
    cJSON_AddNumberToObject(o, "holdout", c->holdout);
    cJSON_AddNumberToObject(o, "keep_best", c->keep_best);
    cJSON_AddNumberToObject(o, "eval_batch", c->eval_batch);
    add_u64(o, "seed", c->seed);
    cJSON *a = cJSON_AddObjectToObject(o, "adam");
    cJSON_AddNumberToObject(a, "lr", c->adam.lr);
    cJSON_AddNumberToObject(a, "beta1", c->adam.beta1);
    cJSON_AddNumberToObject(a, "beta2", c->adam.beta2);
    cJSON_AddNumberToObject(a, "eps", c->adam.eps);
    cJSON_AddNumberToObject(a, "weight_decay", c->adam.weight_decay);
    return o;
}

attn_status attn_trainer_save_checkpoint(const attn_trainer *t, const char *path, attn_error *err) {
    size_t n = attn_model_n_params(t->model);
    if (n > (size_t)1 << 30)
        return attn_errorf(err, ATTN_ERR_ARG, "%s: %zu parameters are too many", path, n);
    if (attn_model_check_finite(t->model, false, err) != ATTN_OK) {
        char inner[ATTN_ERROR_MSG_MAX];
        snprintf(inner, sizeof inner, "%s", err ? err->msg : "");
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: not written: %s", path, inner);
    }
    cJSON *root = cJSON_CreateObject();
    if (!root) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
    cJSON_AddStringToObject(root, "format", FORMAT);
    cJSON_AddItemToObject(root, "model",
                          attn_io_model_config_to_json(attn_model_config_of(t->model), true));
    cJSON_AddItemToObject(root, "train", train_config_json(&t->cfg));
    cJSON_AddNumberToObject(root, "n_sentences", t->data->n);
    add_u64(root, "data_fingerprint", data_fingerprint(t->data));
    cJSON_AddBoolToObject(root, "holdout_separate", t->heldout_separate);
    cJSON_AddNumberToObject(root, "epoch", t->epoch);
    add_u64(root, "rng_state", t->rng.state);
    cJSON_AddNumberToObject(root, "adam_step", (double)t->adam->step);
    cJSON_AddNumberToObject(root, "n_params", (double)n);
    cJSON_AddItemToObject(root, "params",
                          cJSON_CreateFloatArray(attn_model_params(t->model), (int)n));
    cJSON_AddItemToObject(root, "m", cJSON_CreateFloatArray(t->adam->m, (int)n));
    cJSON_AddItemToObject(root, "v", cJSON_CreateFloatArray(t->adam->v, (int)n));
    cJSON_AddNumberToObject(root, "best_epoch", t->best_epoch);
    cJSON_AddNumberToObject(root, "best_acc", t->best_epoch ? t->best_acc : 0.0);
    if (t->best_epoch)
        cJSON_AddItemToObject(root, "best_params", cJSON_CreateFloatArray(t->best_params, (int)n));
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    size_t len = text ? strlen(text) : 0;
    char *line = text ? malloc(len + 1) : NULL; /* the file ends with a newline */
    if (line) {
        memcpy(line, text, len);
        line[len] = '\n';
    }
    cJSON_free(text);
    if (!line) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory printing", path);
    attn_status st = attn_io_write_atomic(path, line, len + 1, err);
    free(line);
    return st;
}

/* ---- reading ------------------------------------------------------------------------------ */

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        attn_status st_ = (expr);                                                                  \
        if (st_ != ATTN_OK) return st_;                                                            \
    } while (0)

static attn_status read_root(const char *path, cJSON **out, attn_error *err) {
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    TRY(attn_io_read_file(path, &buf, &len, err));
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    if (!root) return attn_errorf(err, ATTN_ERR_PARSE, "%s: malformed JSON", path);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, FORMAT) != 0) {
        cJSON_Delete(root);
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: \"format\" is not \"" FORMAT "\"", path);
    }
    *out = root;
    return ATTN_OK;
}

/* Each getter reports a missing or mistyped key, naming file and key. */
static attn_status get_num(const char *path, const cJSON *o, const char *key, double *out,
                           attn_error *err) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: \"%s\" is missing or not a finite number",
                           path, key);
    *out = x->valuedouble;
    return ATTN_OK;
}

static attn_status get_int(const char *path, const cJSON *o, const char *key, int *out,
                           attn_error *err) {
    double d = 0.0;
    attn_status st = get_num(path, o, key, &d, err);
    if (st != ATTN_OK) return st;
    if (d != floor(d) || d < -2147483648.0 || d > 2147483647.0)
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: \"%s\" = %g is not an integer", path, key, d);
    *out = (int)d;
    return ATTN_OK;
}

static attn_status get_u64(const char *path, const cJSON *o, const char *key, uint64_t *out,
                           attn_error *err) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    char *end = NULL;
    if (cJSON_IsString(x)) *out = strtoull(x->valuestring, &end, 16);
    if (!cJSON_IsString(x) || strncmp(x->valuestring, "0x", 2) != 0 || *end)
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: \"%s\" is missing or not a hex string", path,
                           key);
    return ATTN_OK;
}

static attn_status parse_configs(const char *path, const cJSON *root, attn_model_config *mc,
                                 attn_train_config *tc, attn_error *err) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "train");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(t, "adam");
    if (!cJSON_IsObject(m) || !cJSON_IsObject(t) || !cJSON_IsObject(a))
        return attn_errorf(err, ATTN_ERR_PARSE,
                           "%s: \"model\", \"train\" or \"train.adam\" is missing", path);
    attn_io_problems p = {err, path, 0, ATTN_OK};
    attn_io_model_config_from_json(m, "model", ATTN_IO_CONFIG_REQUIRE_ALL, mc, &p);
    TRY(attn_io_problems_finish(&p));
    *tc = attn_train_config_default();
    TRY(get_int(path, t, "epochs", &tc->epochs, err));
    TRY(get_int(path, t, "batch_size", &tc->batch_size, err));
    TRY(get_int(path, t, "bucket", &tc->bucket, err));
    TRY(get_int(path, t, "holdout", &tc->holdout, err));
    TRY(get_int(path, t, "keep_best", &tc->keep_best, err));
    TRY(get_int(path, t, "eval_batch", &tc->eval_batch, err));
    TRY(get_u64(path, t, "seed", &tc->seed, err));
    TRY(get_num(path, a, "lr", &tc->adam.lr, err));
    TRY(get_num(path, a, "beta1", &tc->adam.beta1, err));
    TRY(get_num(path, a, "beta2", &tc->adam.beta2, err));
    TRY(get_num(path, a, "eps", &tc->adam.eps, err));
    TRY(get_num(path, a, "weight_decay", &tc->adam.weight_decay, err));
    return ATTN_OK;
}

attn_status attn_checkpoint_peek(const char *path, attn_model_config *model_cfg,
                                 attn_train_config *train_cfg, int *n_sentences, attn_error *err) {
    cJSON *root = NULL;
    TRY(read_root(path, &root, err));
    int n = 0;
    attn_status st = parse_configs(path, root, model_cfg, train_cfg, err);
    if (st == ATTN_OK) st = get_int(path, root, "n_sentences", &n, err);
    if (st == ATTN_OK && n_sentences) *n_sentences = n;
    cJSON_Delete(root);
    return st;
}

/* Reads array `key` of exactly n finite numbers into out[n]. */
static attn_status get_floats(const char *path, const cJSON *root, const char *key, float *out,
                              size_t n, attn_error *err) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsArray(a) || (size_t)cJSON_GetArraySize(a) != n)
        return attn_errorf(err, ATTN_ERR_SHAPE, "%s: \"%s\" is not an array of %zu numbers", path,
                           key, n);
    size_t i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, a) {
        if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
            return attn_errorf(err, ATTN_ERR_PARSE, "%s: \"%s\"[%zu] is not a finite number", path,
                               key, i);
        out[i++] = (float)x->valuedouble;
    }
    return ATTN_OK;
}

static bool same_model_config(const attn_model_config *a, const attn_model_config *b) {
    bool tr = a->arch == ATTN_ARCH_TRANSFORMER;
    return a->arch == b->arch && a->vocab_size == b->vocab_size && a->embed_dim == b->embed_dim &&
           a->n_layers == b->n_layers &&
           (tr ? a->n_heads == b->n_heads && a->ffn_dim == b->ffn_dim && a->max_len == b->max_len &&
                     a->norm == b->norm && a->activation == b->activation
               : a->hidden_size == b->hidden_size);
}

static attn_status load_state(attn_trainer *t, const char *path, const cJSON *root, float *params,
                              float *m, float *v, float *best, attn_error *err) {
    attn_model_config mc;
    attn_train_config tc;
    TRY(parse_configs(path, root, &mc, &tc, err));
    if (!same_model_config(&mc, attn_model_config_of(t->model)))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: the checkpoint's %s model differs from the model being trained "
                           "(%s)",
                           path, attn_arch_name(mc.arch),
                           attn_arch_name(attn_model_config_of(t->model)->arch));
    if (tc.batch_size != t->cfg.batch_size || tc.bucket != t->cfg.bucket ||
        tc.holdout != t->cfg.holdout || tc.seed != t->cfg.seed || tc.keep_best != t->cfg.keep_best)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: batch size, bucket, holdout, seed or keep_best differ from the "
                           "trainer's (checkpoint %d/%d/%d/%" PRIu64 "/%d, trainer "
                           "%d/%d/%d/%" PRIu64 "/%d)",
                           path, tc.batch_size, tc.bucket, tc.holdout, tc.seed, tc.keep_best,
                           t->cfg.batch_size, t->cfg.bucket, t->cfg.holdout, t->cfg.seed,
                           t->cfg.keep_best);
    int n_sent;
    uint64_t fp;
    TRY(get_int(path, root, "n_sentences", &n_sent, err));
    TRY(get_u64(path, root, "data_fingerprint", &fp, err));
    if (n_sent != t->data->n || fp != data_fingerprint(t->data))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: the checkpoint was trained on different data (%d sentences, "
                           "fingerprint %016" PRIx64 "; now %d sentences)",
                           path, n_sent, fp, t->data->n);
    /* absent in checkpoints written before separate held-out sets: the split */
    const cJSON *sep = cJSON_GetObjectItemCaseSensitive(root, "holdout_separate");
    if ((cJSON_IsTrue(sep) ? 1 : 0) != (t->heldout_separate ? 1 : 0))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: the checkpoint's held-out slice was %s, the trainer's is %s", path,
                           cJSON_IsTrue(sep) ? "a separate set" : "split off the training data",
                           t->heldout_separate ? "a separate set" : "split off the training data");
    int epoch;
    double step;
    uint64_t rng_state;
    TRY(get_int(path, root, "epoch", &epoch, err));
    TRY(get_u64(path, root, "rng_state", &rng_state, err));
    TRY(get_num(path, root, "adam_step", &step, err));
    if (epoch < 0 || step < 0 || step != floor(step))
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: bad epoch %d or adam_step %g", path, epoch,
                           step);
    size_t n = attn_model_n_params(t->model);
    TRY(get_floats(path, root, "params", params, n, err));
    TRY(get_floats(path, root, "m", m, n, err));
    TRY(get_floats(path, root, "v", v, n, err));
    int best_epoch;
    double best_acc;
    TRY(get_int(path, root, "best_epoch", &best_epoch, err));
    TRY(get_num(path, root, "best_acc", &best_acc, err));
    if (best_epoch < 0 || best_epoch > epoch || (best_epoch > 0) != (t->best_params && epoch > 0))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: best_epoch %d does not fit epoch %d with keep_best %d", path,
                           best_epoch, epoch, t->cfg.keep_best);
    if (best_epoch > 0) TRY(get_floats(path, root, "best_params", best, n, err));
    /* Everything parsed: commit. */
    memcpy(attn_model_params(t->model), params, n * sizeof(float));
    memcpy(t->adam->m, m, n * sizeof(float));
    memcpy(t->adam->v, v, n * sizeof(float));
    t->adam->step = (long)step;
    t->epoch = epoch;
    t->rng.state = rng_state;
    t->best_epoch = best_epoch;
    t->best_acc = best_acc;
    if (best_epoch > 0) memcpy(t->best_params, best, n * sizeof(float));
    return ATTN_OK;
}

attn_status attn_trainer_load_checkpoint(attn_trainer *t, const char *path, attn_error *err) {
    cJSON *root = NULL;
    TRY(read_root(path, &root, err));
    size_t n = attn_model_n_params(t->model);
    float *buf = malloc(4 * (n ? n : 1) * sizeof(float));
    attn_status st = buf ? load_state(t, path, root, buf, buf + n, buf + 2 * n, buf + 3 * n, err)
                         : attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
    free(buf);
    cJSON_Delete(root);
    return st;
}
