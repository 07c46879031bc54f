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
#include <limits.h>
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

static void parse_configs(const cJSON *root, attn_model_config *mc, attn_train_config *tc,
                          int *n_sentences, attn_io_problems *p) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "train");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(t, "adam");
    if (!cJSON_IsObject(m) || !cJSON_IsObject(t) || !cJSON_IsObject(a)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "\"model\", \"train\" or \"train.adam\" is missing");
        return;
    }
    attn_io_model_config_from_json(m, "model", ATTN_IO_CONFIG_REQUIRE_ALL, mc, p);
    if (p->n) return;
    attn_io_check_n_params(attn_model_config_n_params(mc), NULL, p);
    if (p->n) return;
    *tc = attn_train_config_default();
    attn_io_ckpt_int(root, "n_sentences", 2, ATTN_DATA_MAX_N, n_sentences, p);
    int *const ints[] = {&tc->epochs,  &tc->batch_size, &tc->bucket,
                         &tc->holdout, &tc->keep_best,  &tc->eval_batch};
    const char *const keys[] = {"epochs",  "batch_size", "bucket",
                                "holdout", "keep_best",  "eval_batch"};
    for (int i = 0; i < 6; i++) attn_io_ckpt_int(t, keys[i], INT_MIN, INT_MAX, ints[i], p);
    attn_io_ckpt_u64(t, "seed", &tc->seed, p);
    if (cJSON_GetObjectItemCaseSensitive(t, "warmup")) /* absent: no warm-up (older files) */
        attn_io_ckpt_int(t, "warmup", 0, ATTN_MAX_WARMUP, &tc->warmup, p);
    attn_io_ckpt_adam(a, &tc->adam, p);
}

/* The train config against the data's size: a separate held-out set (the generator's) takes
 * none of the training sentences, its size bounded by the data's limit, not by theirs. */
static attn_status check_split(const void *ctx, attn_error *err) {
    const attn_train_state *st = ctx;
    attn_train_config split = st->train_cfg;
    if (st->holdout_separate && split.holdout >= 0 && split.holdout <= ATTN_DATA_MAX_N)
        split.holdout = 0;
    return attn_train_config_validate(&split, st->n_sentences, err);
}

/* Everything but the arrays into *st, each value checked against its range and the others. */
static void parse_scalars(const cJSON *root, attn_train_state *st, attn_io_problems *p) {
    parse_configs(root, &st->model_cfg, &st->train_cfg, &st->n_sentences, p);
    attn_io_ckpt_u64(root, "data_fingerprint", &st->data_fingerprint, p);
    const cJSON *sep = cJSON_GetObjectItemCaseSensitive(root, "holdout_separate");
    if (sep && !cJSON_IsBool(sep))
        attn_io_problem(p, ATTN_ERR_PARSE, "\"holdout_separate\" is not true or false");
    st->holdout_separate = cJSON_IsTrue(sep);
    attn_io_ckpt_int(root, "epoch", INT_MIN, INT_MAX, &st->epoch, p);
    attn_io_ckpt_u64(root, "rng_state", &st->rng_state, p);
    attn_io_ckpt_long(root, "adam_step", LONG_MIN, LONG_MAX, &st->adam_step, p);
    attn_io_ckpt_int(root, "best_epoch", INT_MIN, INT_MAX, &st->best_epoch, p);
    attn_io_ckpt_num(root, "best_acc", 0.0, 1.0, &st->best_acc, p);
    if (p->n) return;
    if (!sep) /* written before separate held-out sets existed */
        attn_log(ATTN_LOG_INFO,
                 "%s: no \"holdout_separate\" (an older checkpoint): its held-out slice is taken "
                 "as split off the training data",
                 p->path);
    const attn_train_config *tc = &st->train_cfg;
    /* every epoch takes one Adam step per batch of the training sentences */
    const attn_io_ckpt_progress r = {
        .adam = &tc->adam,
        .epochs = tc->epochs,
        .max_epochs = ATTN_IO_MAX_EPOCHS,
        .batch_size = tc->batch_size,
        .max_batch = ATTN_IO_MAX_BATCH,
        .epoch = st->epoch,
        .best_epoch = st->best_epoch,
        .adam_step = st->adam_step,
        .n_train = st->holdout_separate ? st->n_sentences : st->n_sentences - tc->holdout,
        .what = "sentences",
        .settings = check_split,
        .ctx = st};
    attn_io_ckpt_check_progress(&r, p);
}

/* The document of path (either container) with its scalars into *st; f open on the tensors of
 * a safetensors checkpoint. */
static attn_status read_scalars(const char *path, cJSON **root, attn_io_st_file *f,
                                attn_train_state *st, attn_error *err) {
    memset(st, 0, sizeof *st);
    TRY(attn_io_ckpt_open(path, FORMAT, "", f, root, err));
    attn_io_problems p = {err, path, 0, ATTN_OK};
    parse_scalars(*root, st, &p);
    return attn_io_problems_finish(&p);
}

attn_status attn_checkpoint_peek(const char *path, attn_model_config *model_cfg,
                                 attn_train_config *train_cfg, int *n_sentences, attn_error *err) {
    cJSON *root = NULL;
    attn_io_st_file f;
    attn_train_state st_;
    attn_status st = read_scalars(path, &root, &f, &st_, err);
    attn_io_st_close(&f);
    if (st == ATTN_OK) {
        *model_cfg = st_.model_cfg;
        *train_cfg = st_.train_cfg;
        if (n_sentences) *n_sentences = st_.n_sentences;
    }
    cJSON_Delete(root);
    return st;
}

/* Array `key` of exactly n finite float32 numbers into out[n]. */
static void get_floats(const cJSON *root, const char *key, float *out, size_t n,
                       attn_io_problems *p) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsArray(a) || (size_t)cJSON_GetArraySize(a) != n) {
        attn_io_problem(p, ATTN_ERR_SHAPE, "\"%s\" is not an array of %zu numbers", key, n);
        return;
    }
    size_t i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, a) {
        const double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
        if (!isfinite(d)) {
            attn_io_problem(p, ATTN_ERR_PARSE, "\"%s\"[%zu] is not a finite number", key, i);
            return;
        }
        if (fabs(d) >= 0x1.ffffffp127) { /* >= FLT_MAX + half an ulp rounds to Inf */
            attn_io_problem(p, ATTN_ERR_VALUE, "\"%s\"[%zu] = %g overflows float32", key, i, d);
            return;
        }
        out[i++] = (float)d;
    }
}

/* "n_params" = n, the values "params" holds (a safetensors checkpoint: its tensors' length),
 * = the model config's count. */
static void check_count(const cJSON *root, const attn_train_state *st, size_t n,
                        attn_io_problems *p) {
    long n_params = -1;
    attn_io_ckpt_long(root, "n_params", 0, LONG_MAX, &n_params, p);
    const size_t need = attn_model_config_n_params(&st->model_cfg);
    if (p->n == 0 && (size_t)n_params != n)
        attn_io_problem(p, ATTN_ERR_SHAPE, "\"n_params\" is %ld but \"params\" holds %zu", n_params,
                        n);
    else if (p->n == 0 && n != need)
        attn_io_problem(p, ATTN_ERR_SHAPE,
                        "\"params\" holds %zu values but the model config has %zu parameters", n,
                        need);
}

/* The arrays into arr[] (allocated, caller frees): the tensors of the safetensors checkpoint f,
 * or root's arrays (sized by "params"). */
static void parse_arrays(const cJSON *root, const attn_io_st_file *f, attn_train_state *st,
                         float *arr[ATTN_IO_CKPT_ARRAYS], attn_io_problems *p) {
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
    if (!f->map && !cJSON_IsArray(params)) {
        attn_io_problem(p, ATTN_ERR_SHAPE, "\"params\" is missing or not an array");
        return;
    }
    const size_t n =
        f->map ? attn_model_config_n_params(&st->model_cfg) : (size_t)cJSON_GetArraySize(params);
    check_count(root, st, n, p);
    if (p->n) return;
    if (f->map) {
        attn_io_ckpt_st_arrays(f, n, st->best_epoch > 0, arr, p);
    } else {
        const char *const keys[ATTN_IO_CKPT_ARRAYS] = {"params", "m", "v", "best_params"};
        for (int k = 0; k < (st->best_epoch > 0 ? 4 : 3) && p->n == 0; k++)
            if (!(arr[k] = malloc((n ? n : 1) * sizeof(float))))
                attn_io_problem(p, ATTN_ERR_NOMEM, "out of memory");
            else
                get_floats(root, keys[k], arr[k], n, p);
        attn_error e;
        if (p->n == 0 && attn_io_check_moments(arr[1], arr[2], n, &e) != ATTN_OK)
            attn_io_problem(p, e.status, "%s", e.msg);
    }
    st->n_params = n;
    st->params = arr[0];
    st->m = arr[1];
    st->v = arr[2];
    st->best_params = arr[3];
}

attn_status attn_trainer_load_checkpoint(attn_trainer *t, const char *path, attn_error *err) {
    cJSON *root = NULL;
    attn_io_st_file f;
    attn_train_state st;
    float *arr[ATTN_IO_CKPT_ARRAYS] = {0};
    attn_status s = read_scalars(path, &root, &f, &st, err);
    if (s == ATTN_OK) {
        attn_io_problems p = {err, path, 0, ATTN_OK};
        parse_arrays(root, &f, &st, arr, &p);
        s = attn_io_problems_finish(&p);
    }
    attn_io_st_close(&f);
    if (s == ATTN_OK) attn_io_kernels_note(path, cJSON_GetObjectItemCaseSensitive(root, "kernels"));
    cJSON_Delete(root);
    if (s == ATTN_OK) s = attn_trainer_set_state(t, &st, path, err);
    for (int k = 0; k < ATTN_IO_CKPT_ARRAYS; k++) free(arr[k]);
    return s;
}
