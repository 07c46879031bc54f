/* checkpoint_json.c -- the training state (attn_train_state, from src/train/checkpoint.c) as
 * "attn-checkpoint-v1" JSON: model config, train config, a fingerprint of the training data,
 * epochs done, the shuffling PRNG state, Adam's step, and params, m, v as flat float arrays
 * (floats widened to double, which cJSON prints with enough digits to round-trip bit for bit),
 * and model selection's state: best_epoch (0 = none), best_acc and, when best_epoch > 0,
 * best_params. Written atomically: path.tmp, fflush, fsync, rename, so an existing checkpoint
 * survives any failure. Whether a state fits a trainer is decided by attn_trainer_set_state. */
#include "io_internal.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT "attn-checkpoint-v1"

/* ---- writing ------------------------------------------------------------------------------ */

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
    /* only when on: checkpoints of runs without warm-up stay byte for byte as before */
    if (c->warmup > 0) cJSON_AddNumberToObject(o, "warmup", c->warmup);
    cJSON *a = cJSON_AddObjectToObject(o, "adam");
    cJSON_AddNumberToObject(a, "lr", c->adam.lr);
    cJSON_AddNumberToObject(a, "beta1", c->adam.beta1);
    cJSON_AddNumberToObject(a, "beta2", c->adam.beta2);
    cJSON_AddNumberToObject(a, "eps", c->adam.eps);
    cJSON_AddNumberToObject(a, "weight_decay", c->adam.weight_decay);
    return o;
}

/* The document for st (with the arrays or without: a safetensors checkpoint's "state"); NULL
 * when out of memory. */
static cJSON *state_json(const attn_train_state *st, bool arrays) {
    int n = (int)st->n_params;
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "format", FORMAT);
    cJSON_AddItemToObject(root, "model", attn_io_model_config_to_json(&st->model_cfg, true));
    cJSON_AddItemToObject(root, "train", train_config_json(&st->train_cfg));
    cJSON_AddNumberToObject(root, "n_sentences", st->n_sentences);
    add_u64(root, "data_fingerprint", st->data_fingerprint);
    cJSON_AddBoolToObject(root, "holdout_separate", st->holdout_separate);
    cJSON_AddNumberToObject(root, "epoch", st->epoch);
    attn_kernels_info kernels; /* what the state was computed with (a note on resume) */
    attn_kernels_info_get(&kernels);
    cJSON_AddItemToObject(root, "kernels", attn_io_kernels_json(&kernels));
    add_u64(root, "rng_state", st->rng_state);
    cJSON_AddNumberToObject(root, "adam_step", (double)st->adam_step);
    cJSON_AddNumberToObject(root, "n_params", (double)st->n_params);
    if (arrays) {
        cJSON_AddItemToObject(root, "params", cJSON_CreateFloatArray(st->params, n));
        cJSON_AddItemToObject(root, "m", cJSON_CreateFloatArray(st->m, n));
        cJSON_AddItemToObject(root, "v", cJSON_CreateFloatArray(st->v, n));
    }
    cJSON_AddNumberToObject(root, "best_epoch", st->best_epoch);
    cJSON_AddNumberToObject(root, "best_acc", st->best_acc);
    if (st->best_epoch && arrays)
        cJSON_AddItemToObject(root, "best_params", cJSON_CreateFloatArray(st->best_params, n));
    return root;
}

attn_status attn_trainer_save_checkpoint(const attn_trainer *t, const char *path, attn_error *err) {
    attn_train_state st;
    attn_error serr;
    if (attn_trainer_get_state(t, &st, &serr) != ATTN_OK)
        return attn_errorf(err, serr.status, "%s: not written: %s", path, serr.msg);
    if (st.n_params > (size_t)1 << 30)
        return attn_errorf(err, ATTN_ERR_ARG, "%s: %zu parameters are too many", path, st.n_params);
    const bool binary = attn_io_wants_safetensors(path); /* by the extension, as --out */
    cJSON *root = state_json(&st, !binary);
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (binary) {
        const float *const arrays[ATTN_IO_CKPT_ARRAYS] = {st.params, st.m, st.v,
                                                          st.best_epoch ? st.best_params : NULL};
        attn_status s = text ? attn_io_ckpt_st_save(path, FORMAT, text, arrays, st.n_params, err)
                             : attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory printing", path);
        cJSON_free(text);
        return s;
    }
    size_t len = text ? strlen(text) - 1 : 0; /* without the closing '}' */
    char *file = text ? malloc(len + ATTN_IO_CRC_TAIL_LEN + 1) : NULL;
    if (file) { /* {...,"crc32":"0x<crc of the bytes before the comma>"}\n */
        memcpy(file, text, len);
        len = attn_io_crc_append(file, len);
    }
    cJSON_free(text);
    if (!file) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory printing", path);
    attn_status s = attn_write_file_atomic(path, file, len, err);
    free(file);
    return s;
}

/* ---- reading ------------------------------------------------------------------------------ */

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        attn_status st_ = (expr);                                                                  \
        if (st_ != ATTN_OK) return st_;                                                            \
    } while (0)

/* The document of path into *out: the JSON checkpoint's, or a safetensors checkpoint's
 * "state" (recognised by content) with *f left open on its tensors (f->map NULL otherwise). */
static attn_status read_root(const char *path, cJSON **out, attn_io_st_file *f, attn_error *err) {
    *out = NULL;
    memset(f, 0, sizeof *f);
    if (attn_io_is_safetensors(path)) {
        cJSON *root = NULL;
        TRY(attn_io_ckpt_st_open(path, FORMAT, f, &root, err));
        const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
        if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, FORMAT) != 0) {
            cJSON_Delete(root);
            attn_io_st_close(f);
            return attn_errorf(err, ATTN_ERR_PARSE,
                               "%s: \"state\" \"format\" is not \"" FORMAT "\"", path);
        }
        *out = root;
        return ATTN_OK;
    }
    char *buf = NULL;
    size_t len = 0;
    TRY(attn_io_read_file(path, &buf, &len, err));
    size_t at = 0;
    const char *why = NULL;
    cJSON *root = NULL;
    attn_status st = attn_io_json_parse(buf, len, &root, &at, &why);
    if (st == ATTN_ERR_NOMEM) {
        attn_errorf(err, st, "%s: %s (%zu bytes of JSON)", path, why, len);
    } else if (st != ATTN_OK) {
        int line = 1, col = 1;
        attn_io_text_position(buf, at, &line, &col);
        attn_errorf(err, st, "%s: malformed JSON at byte %zu (line %d, column %d): %s", path, at,
                    line, col, why);
    } else {
        st = attn_io_crc_check(path, buf, len, err);
    }
    free(buf);
    if (st != ATTN_OK) {
        cJSON_Delete(root);
        return st;
    }
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
    TRY(get_num(path, o, key, &d, err));
    if (d != floor(d) || d < -2147483648.0 || d > 2147483647.0)
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: \"%s\" = %g is not an integer", path, key, d);
    *out = (int)d;
    return ATTN_OK;
}

/* An integer stored as a JSON number (exact up to 2^53). */
static attn_status get_long(const char *path, const cJSON *o, const char *key, long *out,
                            attn_error *err) {
    double d = 0.0;
    TRY(get_num(path, o, key, &d, err));
    if (d != floor(d) || fabs(d) > 0x1p53)
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: \"%s\" = %g is not an integer", path, key, d);
    *out = (long)d;
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

/* A number key that must lie in [lo, hi] (an ATTN_ERR_VALUE naming it otherwise). */
static attn_status get_num_in(const char *path, const cJSON *o, const char *key, double lo,
                              double hi, double *out, attn_error *err) {
    TRY(get_num(path, o, key, out, err));
    if (!(*out >= lo && *out <= hi))
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: \"%s\" = %g is out of range [%g, %g]", path,
                           key, *out, lo, hi);
    return ATTN_OK;
}

static attn_status get_int_in(const char *path, const cJSON *o, const char *key, int lo, int hi,
                              int *out, attn_error *err) {
    TRY(get_int(path, o, key, out, err));
    if (*out < lo || *out > hi)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: \"%s\" = %d is out of range [%d, %d]", path,
                           key, *out, lo, hi);
    return ATTN_OK;
}

static attn_status parse_configs(const char *path, const cJSON *root, attn_model_config *mc,
                                 attn_train_config *tc, int *n_sentences, attn_error *err) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "train");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(t, "adam");
    if (!cJSON_IsObject(m) || !cJSON_IsObject(t) || !cJSON_IsObject(a))
        return attn_errorf(err, ATTN_ERR_PARSE,
                           "%s: \"model\", \"train\" or \"train.adam\" is missing", path);
    attn_io_problems p = {err, path, 0, ATTN_OK};
    attn_io_model_config_from_json(m, "model", ATTN_IO_CONFIG_REQUIRE_ALL, mc, &p);
    TRY(attn_io_problems_finish(&p));
    attn_io_check_n_params(attn_model_config_n_params(mc), NULL, &p);
    TRY(attn_io_problems_finish(&p));
    *tc = attn_train_config_default();
    TRY(get_int_in(path, root, "n_sentences", 2, ATTN_DATA_MAX_N, n_sentences, err));
    TRY(get_int(path, t, "epochs", &tc->epochs, err));
    TRY(get_int(path, t, "batch_size", &tc->batch_size, err));
    TRY(get_int(path, t, "bucket", &tc->bucket, err));
    TRY(get_int(path, t, "holdout", &tc->holdout, err));
    TRY(get_int(path, t, "keep_best", &tc->keep_best, err));
    TRY(get_int(path, t, "eval_batch", &tc->eval_batch, err));
    TRY(get_u64(path, t, "seed", &tc->seed, err));
    if (cJSON_GetObjectItemCaseSensitive(t, "warmup")) /* absent: no warm-up (older files) */
        TRY(get_int_in(path, t, "warmup", 0, ATTN_MAX_WARMUP, &tc->warmup, err));
    TRY(get_num(path, a, "lr", &tc->adam.lr, err));
    TRY(get_num(path, a, "beta1", &tc->adam.beta1, err));
    TRY(get_num(path, a, "beta2", &tc->adam.beta2, err));
    TRY(get_num(path, a, "eps", &tc->adam.eps, err));
    TRY(get_num(path, a, "weight_decay", &tc->adam.weight_decay, err));
    attn_error verr;
    /* a separate held-out set (the generator's) takes none of the training sentences: its size
     * is bounded by the data's limit, not by theirs */
    attn_train_config split = *tc;
    const bool separate = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "holdout_separate"));
    if (separate && tc->holdout >= 0 && tc->holdout <= ATTN_DATA_MAX_N) split.holdout = 0;
    if (attn_io_check_adam(&tc->adam, &verr) != ATTN_OK ||
        attn_io_check_run(tc->epochs, ATTN_IO_MAX_EPOCHS, tc->batch_size, ATTN_IO_MAX_BATCH,
                          &verr) != ATTN_OK ||
        attn_train_config_validate(&split, *n_sentences, &verr) != ATTN_OK)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: %s", path, verr.msg);
    return ATTN_OK;
}

/* Everything but the arrays into *st, each value checked against its range and the others. */
static attn_status parse_scalars(const char *path, const cJSON *root, attn_train_state *st,
                                 attn_error *err) {
    TRY(parse_configs(path, root, &st->model_cfg, &st->train_cfg, &st->n_sentences, err));
    TRY(get_u64(path, root, "data_fingerprint", &st->data_fingerprint, err));
    const cJSON *sep = cJSON_GetObjectItemCaseSensitive(root, "holdout_separate");
    if (sep && !cJSON_IsBool(sep))
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: \"holdout_separate\" is not true or false",
                           path);
    st->holdout_separate = cJSON_IsTrue(sep);
    if (!sep) /* written before separate held-out sets existed */
        attn_log(ATTN_LOG_INFO,
                 "%s: no \"holdout_separate\" (an older checkpoint): its held-out slice is taken "
                 "as split off the training data",
                 path);
    const attn_train_config *tc = &st->train_cfg;
    TRY(get_int_in(path, root, "epoch", 0, tc->epochs, &st->epoch, err));
    TRY(get_u64(path, root, "rng_state", &st->rng_state, err));
    TRY(get_long(path, root, "adam_step", &st->adam_step, err));
    /* every epoch takes one Adam step per batch of the training sentences */
    long n_train = st->holdout_separate ? st->n_sentences : st->n_sentences - tc->holdout;
    attn_error serr;
    if (attn_io_check_steps(st->adam_step, st->epoch, n_train, "sentences", tc->batch_size,
                            &serr) != ATTN_OK)
        return attn_errorf(err, serr.status, "%s: %s", path, serr.msg);
    TRY(get_int_in(path, root, "best_epoch", 0, st->epoch, &st->best_epoch, err));
    return get_num_in(path, root, "best_acc", 0.0, 1.0, &st->best_acc, err);
}

attn_status attn_checkpoint_peek(const char *path, attn_model_config *model_cfg,
                                 attn_train_config *train_cfg, int *n_sentences, attn_error *err) {
    cJSON *root = NULL;
    attn_io_st_file f;
    TRY(read_root(path, &root, &f, err));
    attn_io_st_close(&f);
    attn_train_state st_;
    memset(&st_, 0, sizeof st_);
    attn_status st = parse_scalars(path, root, &st_, err);
    if (st == ATTN_OK) {
        *model_cfg = st_.model_cfg;
        *train_cfg = st_.train_cfg;
        if (n_sentences) *n_sentences = st_.n_sentences;
    }
    cJSON_Delete(root);
    return st;
}

/* Reads array `key` of exactly n finite float32 numbers (>= 0 when nonneg) into out[n]. */
static attn_status get_floats(const char *path, const cJSON *root, const char *key, bool nonneg,
                              float *out, size_t n, attn_error *err) {
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
        /* >= FLT_MAX + half an ulp rounds to Inf in the cast to float */
        if (fabs(x->valuedouble) >= 0x1.ffffffp127)
            return attn_errorf(err, ATTN_ERR_VALUE, "%s: \"%s\"[%zu] = %g overflows float32", path,
                               key, i, x->valuedouble);
        if (nonneg && x->valuedouble < 0)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "%s: \"%s\"[%zu] = %g is negative (Adam's second moment cannot be)",
                               path, key, i, x->valuedouble);
        out[i++] = (float)x->valuedouble;
    }
    return ATTN_OK;
}

/* "n_params" = n, the values "params" holds (a safetensors checkpoint: its tensors' length),
 * = the model config's count. */
static attn_status check_count(const char *path, const cJSON *root, const attn_train_state *st,
                               size_t n, attn_error *err) {
    long n_params = 0;
    TRY(get_long(path, root, "n_params", &n_params, err));
    if (n_params < 0 || (size_t)n_params != n)
        return attn_errorf(err, ATTN_ERR_SHAPE, "%s: \"n_params\" is %ld but \"params\" holds %zu",
                           path, n_params, n);
    size_t need = attn_model_config_n_params(&st->model_cfg);
    if (n != need)
        return attn_errorf(err, ATTN_ERR_SHAPE,
                           "%s: \"params\" holds %zu values but the model config has %zu "
                           "parameters",
                           path, n, need);
    return ATTN_OK;
}

/* The tensors of the safetensors checkpoint f into *st (arr[] allocated, caller frees). */
static attn_status st_arrays(const char *path, const cJSON *root, const attn_io_st_file *f,
                             attn_train_state *st, float *arr[ATTN_IO_CKPT_ARRAYS],
                             attn_error *err) {
    const size_t n = attn_model_config_n_params(&st->model_cfg);
    TRY(check_count(path, root, st, n, err));
    attn_io_problems p = {err, path, 0, ATTN_OK};
    attn_io_ckpt_st_arrays(f, n, st->best_epoch > 0, arr, &p);
    TRY(attn_io_problems_finish(&p));
    st->n_params = n;
    st->params = arr[0];
    st->m = arr[1];
    st->v = arr[2];
    st->best_params = arr[3];
    return ATTN_OK;
}

/* The arrays (sized by "params") into buf, which *st then points into; caller frees *buf. */
static attn_status parse_arrays(const char *path, const cJSON *root, attn_train_state *st,
                                float **buf, attn_error *err) {
    *buf = NULL;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
    if (!cJSON_IsArray(params))
        return attn_errorf(err, ATTN_ERR_SHAPE, "%s: \"params\" is missing or not an array", path);
    size_t n = (size_t)cJSON_GetArraySize(params);
    TRY(check_count(path, root, st, n, err));
    float *b = malloc(4 * (n ? n : 1) * sizeof(float));
    if (!b) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
    *buf = b;
    st->n_params = n;
    TRY(get_floats(path, root, "params", false, b, n, err));
    TRY(get_floats(path, root, "m", false, b + n, n, err));
    TRY(get_floats(path, root, "v", true, b + 2 * n, n, err));
    if (st->best_epoch > 0) TRY(get_floats(path, root, "best_params", false, b + 3 * n, n, err));
    st->params = b;
    st->m = b + n;
    st->v = b + 2 * n;
    st->best_params = st->best_epoch > 0 ? b + 3 * n : NULL;
    return ATTN_OK;
}

attn_status attn_trainer_load_checkpoint(attn_trainer *t, const char *path, attn_error *err) {
    cJSON *root = NULL;
    attn_io_st_file f;
    TRY(read_root(path, &root, &f, err));
    attn_train_state st;
    memset(&st, 0, sizeof st);
    float *buf = NULL, *arr[ATTN_IO_CKPT_ARRAYS] = {0};
    attn_status s = parse_scalars(path, root, &st, err);
    if (s == ATTN_OK)
        s = f.map ? st_arrays(path, root, &f, &st, arr, err)
                  : parse_arrays(path, root, &st, &buf, err);
    attn_io_st_close(&f);
    if (s == ATTN_OK) attn_io_kernels_note(path, cJSON_GetObjectItemCaseSensitive(root, "kernels"));
    cJSON_Delete(root);
    if (s == ATTN_OK) s = attn_trainer_set_state(t, &st, path, err);
    free(buf);
    for (int k = 0; k < ATTN_IO_CKPT_ARRAYS; k++) free(arr[k]);
    return s;
}
