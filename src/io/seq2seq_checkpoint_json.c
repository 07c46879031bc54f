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

/* An integer member lo..hi into *out. */
static void get_int(const cJSON *o, const char *key, long lo, long hi, long *out,
                    attn_io_problems *p) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        attn_io_problem(p, ATTN_ERR_PARSE, "\"%s\" %s, expected an integer %ld..%ld", key,
                        v ? "is out of range or not an integer" : "is missing", lo, hi);
    else
        *out = (long)v->valuedouble;
}

static void get_double(const cJSON *o, const char *key, double *out, attn_io_problems *p) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        attn_io_problem(p, ATTN_ERR_PARSE, "\"%s\" %s, expected a number", key,
                        v ? "is not a finite number" : "is missing");
    else
        *out = v->valuedouble;
}

/* "0x" and 16 hex digits. */
static void get_u64(const cJSON *o, const char *key, uint64_t *out, attn_io_problems *p) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
    bool ok = s && strlen(s) == 18 && s[0] == '0' && s[1] == 'x';
    uint64_t x = 0;
    for (int i = 2; ok && i < 18; i++) {
        const char c = s[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        ok = d >= 0;
        x = x * 16 + (uint64_t)(d < 0 ? 0 : d);
    }
    if (!ok)
        attn_io_problem(p, ATTN_ERR_PARSE, "\"%s\" %s, expected \"0x\" and 16 hex digits", key,
                        v ? "is malformed" : "is missing");
    else
        *out = x;
}

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
    long v[4] = {0};
    const char *keys[4] = {"epochs", "batch_size", "holdout", "keep_best"};
    for (int i = 0; i < 4; i++) get_int(o, keys[i], 0, 1L << 30, &v[i], p);
    c->epochs = (int)v[0], c->batch_size = (int)v[1], c->holdout = (int)v[2];
    c->keep_best = (int)v[3];
    get_u64(o, "seed", &c->seed, p);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "adam");
    if (!cJSON_IsObject(a) || cJSON_GetArraySize(a) != 5) {
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "\"adam\" must be {lr, beta1, beta2, eps, weight_decay}");
        return;
    }
    get_double(a, "lr", &c->adam.lr, p);
    get_double(a, "beta1", &c->adam.beta1, p);
    get_double(a, "beta2", &c->adam.beta2, p);
    get_double(a, "eps", &c->adam.eps, p);
    get_double(a, "weight_decay", &c->adam.weight_decay, p);
    if (cJSON_GetArraySize(o) != 6)
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "\"train\" must have exactly epochs, batch_size, "
                        "holdout, keep_best, seed and adam");
}

/* What the CLI accepts and Adam can reach, as for a classifier's checkpoint (load_limits.c);
 * "n_params" is the config's count (checked against ATTN_MAX_PARAMS when the config was read),
 * before any array is read. */
static void check_scalars(const attn_s2s_train_state *st, attn_io_problems *p) {
    const attn_s2s_train_config *tc = &st->train_cfg;
    attn_error e;
    if (attn_io_check_adam(&tc->adam, &e) != ATTN_OK ||
        attn_io_check_run(tc->epochs, ATTN_IO_MAX_S2S_EPOCHS, tc->batch_size, ATTN_IO_MAX_S2S_BATCH,
                          &e) != ATTN_OK ||
        attn_io_check_steps(st->adam_step, st->epoch, st->n_pairs, "pairs", tc->batch_size, &e) !=
            ATTN_OK) {
        attn_io_problem(p, e.status, "%s", e.msg);
        return;
    }
    if (st->epoch > tc->epochs)
        attn_io_problem(p, ATTN_ERR_VALUE, "\"epoch\" = %d is more than the run's %d epochs",
                        st->epoch, tc->epochs);
    if (!(st->best_score <= 1.0))
        attn_io_problem(p, ATTN_ERR_VALUE,
                        "\"best_score\" = %g is out of range (an exact match is at most 1, "
                        "minus a loss at most 0)",
                        st->best_score);
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
    long n_pairs = 0, epoch = 0, step = 0, n_params = 0, best_epoch = 0;
    get_int(root, "n_pairs", 1, ATTN_DATA_MAX_N, &n_pairs, p);
    get_int(root, "epoch", 0, 1L << 30, &epoch, p);
    get_int(root, "adam_step", 0, 1L << 52, &step, p);
    get_int(root, "n_params", 1, 1L << 30, &n_params, p);
    get_int(root, "best_epoch", 0, epoch, &best_epoch, p);
    get_double(root, "best_score", &st->best_score, p);
    get_u64(root, "data_fingerprint", &st->data_fingerprint, p);
    get_u64(root, "rng_state", &st->rng_state, p);
    st->n_pairs = (int)n_pairs, st->epoch = (int)epoch, st->adam_step = step;
    st->n_params = (size_t)n_params, st->best_epoch = (int)best_epoch;
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
    attn_io_st_file f = {0}; /* a safetensors checkpoint, recognised by content */
    const bool binary = attn_io_is_safetensors(path);
    attn_status s = binary ? attn_io_ckpt_st_open(path, FORMAT, &f, &root, err)
                           : attn_io_parse_file_crc(path, &root, err);
    if (s != ATTN_OK) return s;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, FORMAT) != 0) {
        cJSON_Delete(root);
        attn_io_st_close(&f);
        return attn_errorf(err, ATTN_ERR_PARSE,
                           "%s: \"format\" is not \"%s\" (not a seq2seq "
                           "checkpoint)",
                           path, FORMAT);
    }
    attn_io_problems p = {err, path, 0, ATTN_OK};
    parse_state(root, binary ? &f : NULL, st, &p);
    attn_io_st_close(&f);
    if (!p.n) attn_io_kernels_note(path, cJSON_GetObjectItemCaseSensitive(root, "kernels"));
    cJSON_Delete(root);
    s = attn_io_problems_finish(&p);
    if (s != ATTN_OK) attn_s2s_train_state_clear(st);
    return s;
}
