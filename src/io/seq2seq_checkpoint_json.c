/* seq2seq_checkpoint_json.c -- the seq2seq training state (attn_s2s_train_state, from
 * src/train/seq2seq_train.c) as "attn-seq2seq-checkpoint-v1" JSON (attn_seq2seq.h): the model
 * config as a weights file holds it, the training settings, the data's size and fingerprint,
 * epochs done, the shuffling generator, Adam's step, and params, m, v (and best_params) as
 * base64 float32, doubles as %.17g: everything reads back bit for bit, and the file ends with
 * the CRC-32 of its bytes as a classifier's checkpoint does. Written atomically; read strictly
 * (the checksum, then every field within what attn train accepts and Adam can reach, the
 * shared checks of load_limits.c), every problem named with the file. */
#include "attn_seq2seq.h"
#include "io_internal.h"

#include <cjson/cJSON.h>

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT "attn-seq2seq-checkpoint-v1"

/* ---- writing ------------------------------------------------------------------------------ */

static void write_floats(FILE *f, const char *key, const float *x, size_t n) {
    fprintf(f, ",\n\"%s\": \"", key);
    attn_io_b64_write_floats(f, x, n);
    fputc('"', f);
}

static void write_train(FILE *f, const attn_s2s_train_config *c) {
    fprintf(f,
            ",\n\"train\": {\"epochs\": %d, \"batch_size\": %d, \"holdout\": %d, \"keep_best\": "
            "%d, \"seed\": \"0x%016" PRIx64 "\", \"adam\": {\"lr\": %.17g, \"beta1\": %.17g, "
            "\"beta2\": %.17g, \"eps\": %.17g, \"weight_decay\": %.17g}}",
            c->epochs, c->batch_size, c->holdout, c->keep_best, c->seed, c->adam.lr, c->adam.beta1,
            c->adam.beta2, c->adam.eps, c->adam.weight_decay);
}

/* What print_checkpoint prints: the state, with its arrays (the JSON checkpoint) or without
 * (a safetensors checkpoint's "state"). */
typedef struct print_ctx {
    const attn_s2s_train_state *st;
    bool arrays;
} print_ctx;

static bool print_checkpoint(FILE *f, const void *ctx);

attn_status attn_s2s_checkpoint_save(const attn_s2s_train_state *st, const char *path,
                                     attn_error *err) {
    if (!st || !path || !st->params || !st->m || !st->v || (st->best_epoch > 0 && !st->best_params))
        return attn_errorf(err, ATTN_ERR_ARG, "seq2seq checkpoint: NULL state, path or array");
    char *text = NULL;
    size_t len = 0;
    const bool binary = attn_io_wants_safetensors(path); /* by the extension, as --out */
    const print_ctx ctx = {st, !binary};
    attn_status s = attn_io_print_string(print_checkpoint, &ctx, path, &text, &len, err);
    if (s != ATTN_OK) return s;
    if (binary) {
        const float *const arrays[ATTN_IO_CKPT_ARRAYS] = {
            st->params, st->m, st->v, st->best_epoch > 0 ? st->best_params : NULL};
        s = attn_io_ckpt_st_save(path, FORMAT, text, arrays, st->n_params, err);
        free(text);
        return s;
    }
    /* {...,"crc32":"0x<crc of the bytes before the comma>"}\n in place of the closing }\n */
    char *file = len >= 2 ? realloc(text, len - 2 + ATTN_IO_CRC_TAIL_LEN + 1) : NULL;
    if (!file) {
        free(text);
        return attn_errorf(err, ATTN_ERR_NOMEM, "%s: not written: out of memory", path);
    }
    len = attn_io_crc_append(file, len - 2);
    s = attn_write_file_atomic(path, file, len, err);
    free(file);
    return s;
}

static bool print_checkpoint(FILE *f, const void *ctx) {
    const print_ctx *c = ctx;
    const attn_s2s_train_state *st = c->st;
    fprintf(f, "{\"format\": \"%s\",\n", FORMAT);
    attn_io_s2s_config_write(f, &st->model_cfg);
    write_train(f, &st->train_cfg);
    fprintf(f,
            ",\n\"n_pairs\": %d, \"data_fingerprint\": \"0x%016" PRIx64 "\", \"epoch\": %d, "
            "\"rng_state\": \"0x%016" PRIx64 "\", \"adam_step\": %ld, \"n_params\": %zu, "
            "\"best_epoch\": %d, \"best_score\": %.17g",
            st->n_pairs, st->data_fingerprint, st->epoch, st->rng_state, st->adam_step,
            st->n_params, st->best_epoch, st->best_score);
    attn_kernels_info kernels; /* what the state was computed with (a note on resume) */
    attn_kernels_info_get(&kernels);
    fputs(",\n\"kernels\": ", f);
    attn_kernels_info_write_json(f, &kernels);
    if (c->arrays) {
        write_floats(f, "params", st->params, st->n_params);
        write_floats(f, "m", st->m, st->n_params);
        write_floats(f, "v", st->v, st->n_params);
        if (st->best_epoch > 0) write_floats(f, "best_params", st->best_params, st->n_params);
    }
    fprintf(f, "}\n");
    return true;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Whether member key is the base64 of n float32 (a problem if not): checked for every array
 * before any is allocated. */
static bool floats_present(const cJSON *o, const char *key, size_t n, attn_io_problems *p) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v) && strlen(v->valuestring) == attn_io_b64_len(4 * n)) return true;
    attn_io_problem(p, ATTN_ERR_PARSE, "\"%s\" %s, expected the base64 of %zu float32", key,
                    v ? "has the wrong length or type" : "is missing", n);
    return false;
}

/* The base64 float array key of n values (allocated; floats_present said it is there). */
static float *get_floats(const cJSON *o, const char *key, size_t n, attn_io_problems *p) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    float *x = NULL;
    size_t bad = 0;
    if (!(x = malloc((n ? n : 1) * sizeof *x))) {
        attn_io_problem(p, ATTN_ERR_NOMEM, "out of memory for \"%s\"", key);
    } else if (!attn_io_b64_decode_floats(v->valuestring, n, x, &bad)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "\"%s\": bad base64 at character %zu", key, bad);
    } else {
        for (size_t i = 0; i < n; i++)
            if (!isfinite(x[i])) {
                attn_io_problem(p, ATTN_ERR_VALUE, "\"%s\": element %zu is not finite", key, i);
                break;
            }
        return x;
    }
    free(x);
    return NULL;
}

static void parse_train(const cJSON *o, attn_s2s_train_config *c, attn_io_problems *p) {
    if (!cJSON_IsObject(o)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "\"train\" is missing or not an object");
        return;
    }
    attn_io_ckpt_int(o, "epochs", 0, 1 << 30, &c->epochs, p);
    attn_io_ckpt_int(o, "batch_size", 0, 1 << 30, &c->batch_size, p);
    attn_io_ckpt_int(o, "holdout", 0, 1 << 30, &c->holdout, p);
    attn_io_ckpt_int(o, "keep_best", 0, 1 << 30, &c->keep_best, p);
    attn_io_ckpt_u64(o, "seed", &c->seed, p);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "adam");
    if (!cJSON_IsObject(a) || cJSON_GetArraySize(a) != 5) {
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "\"adam\" must be {lr, beta1, beta2, eps, weight_decay}");
        return;
    }
    attn_io_ckpt_adam(a, &c->adam, p);
    if (cJSON_GetArraySize(o) != 6)
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "\"train\" must have exactly epochs, batch_size, "
                        "holdout, keep_best, seed and adam");
}

/* What the CLI accepts and Adam can reach, as for a classifier's checkpoint; "n_params" is the
 * config's count (checked against ATTN_MAX_PARAMS when the config was read), before any array
 * is read. */
static void check_scalars(const attn_s2s_train_state *st, attn_io_problems *p) {
    const attn_s2s_train_config *tc = &st->train_cfg;
    const attn_io_ckpt_progress r = {.adam = &tc->adam,
                                     .epochs = tc->epochs,
                                     .max_epochs = ATTN_S2S_MAX_EPOCHS,
                                     .batch_size = tc->batch_size,
                                     .max_batch = ATTN_S2S_MAX_BATCH,
                                     .epoch = st->epoch,
                                     .best_epoch = st->best_epoch,
                                     .adam_step = st->adam_step,
                                     .n_train = st->n_pairs,
                                     .what = "pairs"};
    attn_io_ckpt_check_progress(&r, p);
    const size_t need = attn_seq2seq_config_n_params(&st->model_cfg);
    if (st->n_params != need)
        attn_io_problem(p, ATTN_ERR_SHAPE,
                        "\"n_params\" = %zu, but the config's model has %zu parameters",
                        st->n_params, need);
}

static const char *const top_keys[] = {
    "format",    "config",    "train",       "n_pairs",    "data_fingerprint", "epoch",
    "rng_state", "adam_step", "n_params",    "best_epoch", "best_score",       "params",
    "m",         "v",         "best_params", "crc32"};

/* Everything into *st; with f (a safetensors checkpoint) the arrays from its tensors. */
static void parse_state(const cJSON *root, const attn_io_st_file *f, attn_s2s_train_state *st,
                        attn_io_problems *p) {
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        bool known = item->string && strcmp(item->string, "kernels") == 0; /* optional */
        for (size_t i = 0; i < sizeof top_keys / sizeof top_keys[0] && !known; i++)
            known = strcmp(item->string ? item->string : "", top_keys[i]) == 0;
        if (!known) attn_io_problem(p, ATTN_ERR_PARSE, "unknown key \"%s\"", item->string);
    }
    attn_io_s2s_config_parse(cJSON_GetObjectItemCaseSensitive(root, "config"), &st->model_cfg, p);
    if (p->n == 0) attn_io_check_n_params(attn_seq2seq_config_n_params(&st->model_cfg), NULL, p);
    parse_train(cJSON_GetObjectItemCaseSensitive(root, "train"), &st->train_cfg, p);
    long n_params = 0;
    attn_io_ckpt_int(root, "n_pairs", 1, ATTN_DATA_MAX_N, &st->n_pairs, p);
    attn_io_ckpt_int(root, "epoch", 0, 1 << 30, &st->epoch, p);
    attn_io_ckpt_long(root, "adam_step", 0, 1L << 52, &st->adam_step, p);
    attn_io_ckpt_long(root, "n_params", 1, 1L << 30, &n_params, p);
    attn_io_ckpt_int(root, "best_epoch", 0, 1 << 30, &st->best_epoch, p);
    /* an exact match is at most 1, minus a loss at most 0 */
    attn_io_ckpt_num(root, "best_score", -HUGE_VAL, 1.0, &st->best_score, p);
    attn_io_ckpt_u64(root, "data_fingerprint", &st->data_fingerprint, p);
    attn_io_ckpt_u64(root, "rng_state", &st->rng_state, p);
    st->n_params = (size_t)n_params;
    attn_kernels_info kernels; /* optional: checkpoints from before the record have none */
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(root, "kernels");
    if (k && !attn_io_kernels_from_json(k, &kernels))
        attn_io_problem(p, ATTN_ERR_PARSE, "\"kernels\" is not a kernels record");
    if (p->n) return; /* sizes unknown: the arrays cannot be checked */
    check_scalars(st, p);
    if (p->n) return;
    if (f) {
        float *arr[ATTN_IO_CKPT_ARRAYS];
        attn_io_ckpt_st_arrays(f, st->n_params, st->best_epoch > 0, arr, p);
        st->params = arr[0], st->m = arr[1], st->v = arr[2], st->best_params = arr[3];
        return;
    }
    const bool has_best = cJSON_GetObjectItemCaseSensitive(root, "best_params") != NULL;
    if (has_best != (st->best_epoch > 0)) {
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "\"best_params\" must be there exactly when "
                        "best_epoch > 0");
        return;
    }
    const char *const arrays[4] = {"params", "m", "v", "best_params"};
    bool present = true;
    for (int i = 0; i < (has_best ? 4 : 3); i++)
        present = floats_present(root, arrays[i], st->n_params, p) && present;
    if (!present) return;
    st->params = get_floats(root, "params", st->n_params, p);
    st->m = get_floats(root, "m", st->n_params, p);
    st->v = get_floats(root, "v", st->n_params, p);
    if (has_best) st->best_params = get_floats(root, "best_params", st->n_params, p);
    attn_error e;
    if (p->n == 0 && attn_io_check_moments(st->m, st->v, st->n_params, &e) != ATTN_OK)
        attn_io_problem(p, e.status, "%s", e.msg);
}

attn_status attn_s2s_checkpoint_load(const char *path, attn_s2s_train_state *st, attn_error *err) {
    if (!path || !st) return attn_errorf(err, ATTN_ERR_ARG, "seq2seq checkpoint: NULL argument");
    memset(st, 0, sizeof *st);
    cJSON *root = NULL;
    attn_io_st_file f; /* a safetensors checkpoint, recognised by content */
    attn_status s = attn_io_ckpt_open(path, FORMAT, " (not a seq2seq checkpoint)", &f, &root, err);
    if (s != ATTN_OK) return s;
    attn_io_problems p = {err, path, 0, ATTN_OK};
    parse_state(root, f.map ? &f : NULL, st, &p);
    attn_io_st_close(&f);
    if (!p.n) attn_io_kernels_note(path, cJSON_GetObjectItemCaseSensitive(root, "kernels"));
    cJSON_Delete(root);
    s = attn_io_problems_finish(&p);
    if (s != ATTN_OK) attn_s2s_train_state_clear(st);
    return s;
}
