/* test_checkpoint_safetensors.c -- training checkpoints in safetensors (issue 33,
 * src/io/checkpoint_safetensors.c), for a classifier and a seq2seq model: a run stopped after
 * epoch 1 and saved as both a JSON and a safetensors checkpoint resumes from either to the same
 * final weights file, byte for byte, as the uninterrupted run; the safetensors file holds the
 * JSON one's state exactly. Hostile files, built here from the written file's parts with the
 * checksum recomputed by zlib (so that the check behind it is the one reached): a flipped data
 * byte (the checksum), edited state (adam_step, batch_size, lr, n_params, best_epoch, arrays
 * in the state), a NaN in params, a negative adam.v, a missing, renamed, misshapen or extra
 * tensor, another writer, a truncated file, the other family's checkpoint, weights instead of a
 * checkpoint and a checkpoint instead of weights (also one over the weights' size limit) -- each
 * refused with a message naming the file and
 * the tensor or field, no state loaded. A rebuilt file without an edit loads, so each refusal is
 * the edit's. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static char tmp_dir[256];

static const char *in_tmp(const char *name) {
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp_dir, name);
    return buf[k];
}

static bool same_file(const char *a, const char *b) {
    size_t la = 0, lb = 0;
    char *x = tu_read_file(a, &la), *y = tu_read_file(b, &lb);
    ck_assert_msg(x && y, "cannot read %s or %s", a, b);
    const bool same = la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* ---- a safetensors checkpoint taken apart and put together again ---------------------------- */

typedef struct parts {
    char *bytes; /* the whole file */
    size_t size;
    cJSON *header; /* its JSON header, parsed */
    const char *data;
} parts;

static parts parts_read(const char *path) {
    parts p = {0};
    p.bytes = tu_read_file(path, &p.size);
    ck_assert_msg(p.bytes && p.size > 8, "cannot read %s", path);
    size_t n = 0;
    for (int k = 7; k >= 0; k--) n = n * 256 + (unsigned char)p.bytes[k];
    ck_assert(8 + n <= p.size);
    p.header = cJSON_ParseWithLength(p.bytes + 8, n);
    ck_assert_msg(p.header != NULL, "%s: header is not JSON", path);
    p.data = p.bytes + 8 + n;
    return p;
}

static void parts_free(parts *p) {
    cJSON_Delete(p->header);
    free(p->bytes);
}

/* The header's "state" string. */
static const char *state_of(const cJSON *header) {
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(header, "__metadata__");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(md, "state");
    ck_assert(cJSON_IsString(s));
    return s->valuestring;
}

/* Writes header (its tensors' data_offsets rewritten to follow one another in header order, the
 * data of each taken from the original file p's data, or `data` if not NULL, at its own
 * original offsets) to path, padded to
 * 64 bytes, with the checksum that the format defines recomputed here with zlib. */
static void write_rebuilt(const char *path, const parts *p, const cJSON *header, const char *data) {
    cJSON *h = cJSON_Duplicate(header, true);
    ck_assert_ptr_nonnull(h);
    size_t total = 0, count = 0;
    const char *src[8];
    size_t len[8];
    cJSON *t;
    cJSON_ArrayForEach(t, h) {
        if (!strcmp(t->string, "__metadata__")) continue;
        const cJSON *orig = cJSON_GetObjectItemCaseSensitive(p->header, t->string);
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(orig ? orig : t, "data_offsets");
        ck_assert(count < 8 && cJSON_GetArraySize(off) == 2);
        const size_t a = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
        const size_t b = (size_t)cJSON_GetArrayItem(off, 1)->valuedouble;
        src[count] = (data ? data : p->data) + a;
        len[count] = b - a;
        cJSON *offsets = cJSON_CreateArray();
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)total));
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)(total + b - a)));
        cJSON_ReplaceItemInObjectCaseSensitive(t, "data_offsets", offsets);
        total += b - a;
        count++;
    }
    char *text = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    ck_assert_ptr_nonnull(text);
    const size_t hlen = strlen(text), padded = (hlen + 8 + 63) / 64 * 64 - 8;
    const size_t size = 8 + padded + total;
    unsigned char *out = malloc(size);
    ck_assert_ptr_nonnull(out);
    for (int k = 0; k < 8; k++) out[k] = (unsigned char)((unsigned long long)padded >> (8 * k));
    memcpy(out + 8, text, hlen);
    memset(out + 8 + hlen, ' ', padded - hlen);
    free(text);
    size_t at = 8 + padded;
    for (size_t k = 0; k < count; k++) {
        memcpy(out + at, src[k], len[k]);
        at += len[k];
    }
    /* the CRC-32 of every byte but the 8 hex digits after "crc32":"0x */
    const char *c = strstr((const char *)out + 8, "\"crc32\":\"0x");
    ck_assert_ptr_nonnull(c);
    const size_t d = (size_t)(c - (const char *)out) + strlen("\"crc32\":\"0x");
    uLong crc = crc32(0L, out, (uInt)d);
    crc = crc32(crc, out + d + 8, (uInt)(size - d - 8));
    char hex[9];
    snprintf(hex, sizeof hex, "%08lx", (unsigned long)crc);
    memcpy(out + d, hex, 8);
    tu_write_file(path, (const char *)out, size);
    free(out);
}

/* The file's header with the state's `from` replaced by `to` (caller deletes). */
static cJSON *state_edited(const parts *p, const char *from, const char *to) {
    cJSON *h = cJSON_Duplicate(p->header, true);
    char *s = tu_replace_once(state_of(h), "state", from, to);
    cJSON *md = cJSON_GetObjectItemCaseSensitive(h, "__metadata__");
    cJSON_ReplaceItemInObjectCaseSensitive(md, "state", cJSON_CreateString(s));
    free(s);
    return h;
}

/* One hostile file of a kind: bytes as they are, or a header rebuilt (then deleted). */
typedef struct hostile {
    const char *what; /* the edit, for failure messages */
    cJSON *header;    /* NULL: write raw[raw_len] */
    const char *data; /* with header: the tensors' data instead of the file's */
    const char *raw;
    size_t raw_len;
    const char *msgs[3]; /* each must be in the error message */
} hostile;

/* Float k of tensor `name` in data (a copy of p's) set to x. */
static void set_float(const parts *p, char *data, const char *name, size_t k, float x) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(p->header, name);
    const size_t at =
        (size_t)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(t, "data_offsets"), 0)
            ->valuedouble;
    memcpy(data + at + 4 * k, &x, 4); /* little-endian machines only, as the tests' others */
}

/* The hostile files every checkpoint gets, from its parts: flipped (p->size bytes), nan_data
 * and neg_data (its data's size) are the caller's buffers. The headers are the caller's to
 * delete (expect_all_refused does). */
static size_t common_hostile(const parts *p, hostile *h, char *flipped, char *nan_data,
                             char *neg_data) {
    size_t n = 0;
    /* a flipped byte in adam.m's data, the checksum as written */
    memcpy(flipped, p->bytes, p->size);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(p->header, "adam.m");
    const size_t m_at =
        (size_t)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "data_offsets"), 0)
            ->valuedouble;
    flipped[(p->data - p->bytes) + m_at + 5] ^= 0x10;
    h[n++] = (hostile){"flipped data byte", NULL, NULL, flipped, p->size, {"checksum mismatch"}};
    /* truncated: the last tensor cut short */
    h[n++] = (hostile){"truncated", NULL,          NULL,
                       p->bytes,    p->size - 100, {"tensor \"best_params\"", "truncated"}};
    /* cut inside the header */
    h[n++] = (hostile){"cut in the header", NULL, NULL, p->bytes, 40, {"truncated"}};
    /* adam.v missing */
    cJSON *x = cJSON_Duplicate(p->header, true);
    cJSON_DeleteItemFromObjectCaseSensitive(x, "adam.v");
    h[n++] = (hostile){"no adam.v", x, NULL, NULL, 0, {"missing tensor \"adam.v\""}};
    /* adam.v renamed */
    x = cJSON_Duplicate(p->header, true);
    cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(x, "adam.v");
    cJSON_AddItemToObject(x, "adam.w", v);
    h[n++] = (hostile){"adam.v renamed",
                       x,
                       NULL,
                       NULL,
                       0,
                       {"missing tensor \"adam.v\"", "unexpected tensor \"adam.w\""}};
    /* params of shape [1, n] (the same bytes) */
    x = cJSON_Duplicate(p->header, true);
    cJSON *shape =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(x, "params"), "shape");
    const double count = cJSON_GetArrayItem(shape, 0)->valuedouble;
    cJSON_InsertItemInArray(shape, 0, cJSON_CreateNumber(1));
    static char want_shape[96];
    snprintf(want_shape, sizeof want_shape, "tensor \"params\": shape [1,%.0f], the", count);
    h[n++] = (hostile){"params [1, n]", x, NULL, NULL, 0, {want_shape}};
    /* an extra tensor: adam.m twice, under another name */
    x = cJSON_Duplicate(p->header, true);
    cJSON_AddItemToObject(x, "adam.m2", cJSON_Duplicate(m, true));
    h[n++] = (hostile){"extra tensor", x, NULL, NULL, 0, {"unexpected tensor \"adam.m2\""}};
    /* values the checksum covers: a NaN in params, a negative adam.v */
    const size_t data_len = p->size - (size_t)(p->data - p->bytes);
    memcpy(nan_data, p->data, data_len);
    set_float(p, nan_data, "params", 3, NAN);
    h[n++] = (hostile){"NaN in params",      cJSON_Duplicate(p->header, true), nan_data, NULL, 0,
                       {"\"params\"", "NaN"}};
    memcpy(neg_data, p->data, data_len);
    set_float(p, neg_data, "adam.v", 0, -1.0f);
    h[n++] = (hostile){"adam.v < 0",
                       cJSON_Duplicate(p->header, true),
                       neg_data,
                       NULL,
                       0,
                       {"\"v\"[0] = -1 is negative"}};
    /* the metadata's writer */
    x = cJSON_Duplicate(p->header, true);
    cJSON *md = cJSON_GetObjectItemCaseSensitive(x, "__metadata__");
    cJSON_ReplaceItemInObjectCaseSensitive(md, "writer", cJSON_CreateString("other"));
    h[n++] = (hostile){"writer", x, NULL, NULL, 0, {"\"writer\": \"attn\""}};
    return n;
}

typedef attn_status (*load_fn)(const char *path, void *ctx, attn_error *err);

/* Writes each hostile file to path and expects load to refuse it naming path and the msgs;
 * a rebuilt header without an edit first, which must load. */
static void expect_all_refused(const parts *p, hostile *h, size_t n, load_fn load, void *ctx) {
    const char *path = in_tmp("hostile.safetensors");
    attn_error err;
    write_rebuilt(path, p, p->header, NULL);
    ck_assert_msg(load(path, ctx, &err) == ATTN_OK, "the unedited rebuilt file: %s", err.msg);
    for (size_t i = 0; i < n; i++) {
        if (h[i].header)
            write_rebuilt(path, p, h[i].header, h[i].data);
        else
            tu_write_file(path, h[i].raw, h[i].raw_len);
        memset(&err, 0, sizeof err);
        const attn_status st = load(path, ctx, &err);
        ck_assert_msg(st != ATTN_OK, "%s: loaded", h[i].what);
        ck_assert_msg(err.status == st && strstr(err.msg, path), "%s: %s", h[i].what, err.msg);
        for (int k = 0; k < 3 && h[i].msgs[k]; k++)
            ck_assert_msg(strstr(err.msg, h[i].msgs[k]), "%s: want \"%s\" in: %s", h[i].what,
                          h[i].msgs[k], err.msg);
        cJSON_Delete(h[i].header);
    }
}

/* ---- the classifier ------------------------------------------------------------------------- */

typedef struct stopper {
    int stop_at;
} stopper;

static bool on_epoch(const attn_epoch_stats *st, void *user) {
    const stopper *s = user;
    return st->epoch != s->stop_at;
}

static attn_train_config small_config(void) {
    attn_train_config cfg = attn_train_config_default();
    cfg.epochs = 3;
    cfg.holdout = 20;
    cfg.batch_size = 16;
    cfg.seed = 42;
    return cfg;
}

/* Resumes the checkpoint at path in a fresh model and trainer and writes the final weights. */
static void classifier_resume(const attn_dataset *d, const char *path, const char *weights) {
    attn_error err;
    attn_model_config mc;
    attn_train_config cfg;
    int n_sent = 0;
    ck_assert_msg(attn_checkpoint_peek(path, &mc, &cfg, &n_sent, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(n_sent, 120);
    ck_assert_int_eq(cfg.epochs, 3);
    attn_model *m = tu_model_new(&mc, 777);
    attn_trainer *t = tu_trainer_new(m, d, &cfg);
    ck_assert_msg(attn_trainer_load_checkpoint(t, path, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(attn_trainer_epoch(t), 1);
    ck_assert_msg(attn_trainer_run(t, NULL, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_weights_save_json(m, false, weights, &err) == ATTN_OK, "%s", err.msg);
    attn_trainer_free(t);
    attn_model_free(m);
}

typedef struct classifier_ctx {
    attn_trainer *t;
    attn_model *m;
} classifier_ctx;

static attn_status classifier_load(const char *path, void *ctx, attn_error *err) {
    classifier_ctx *c = ctx;
    const size_t n = attn_model_n_params(c->m);
    float *before = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(before);
    memcpy(before, attn_model_params(c->m), n * sizeof(float));
    const attn_status st = attn_trainer_load_checkpoint(c->t, path, err);
    if (st != ATTN_OK) /* a refused file changes nothing */
        tu_assert_identical("params after a refused load", attn_model_params(c->m), before, n);
    free(before);
    return st;
}

START_TEST(test_classifier_resumes_from_either_file) {
    attn_set_num_threads(1);
    attn_dataset *d = tu_train_data(120, 5);
    attn_train_config cfg = small_config();
    attn_model_config mc = attn_model_config_default(ATTN_ARCH_LSTM);
    attn_error err;
    /* uninterrupted */
    attn_model *ma = tu_model_new(&mc, 9);
    attn_trainer *ta = tu_trainer_new(ma, d, &cfg);
    ck_assert(attn_trainer_run(ta, NULL, &err) == ATTN_OK);
    const char *whole = in_tmp("c-whole.json");
    ck_assert_msg(attn_weights_save_json(ma, false, whole, &err) == ATTN_OK, "%s", err.msg);
    /* stopped after epoch 1, saved both ways */
    const char *cj = in_tmp("c.ckpt.json"), *cs = in_tmp("c.ckpt.safetensors");
    attn_model *m = tu_model_new(&mc, 9);
    attn_trainer *t = tu_trainer_new(m, d, &cfg);
    stopper s = {1};
    attn_train_callbacks cb = {on_epoch, NULL, &s};
    ck_assert(attn_trainer_run(t, &cb, &err) == ATTN_OK);
    ck_assert_int_eq(attn_trainer_best_epoch(t, NULL), 1); /* best_params is written */
    ck_assert_msg(attn_trainer_save_checkpoint(t, cj, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_trainer_save_checkpoint(t, cs, &err) == ATTN_OK, "%s", err.msg);
    const char *part = in_tmp("c-part.json");
    ck_assert_msg(attn_weights_save_json(m, false, part, &err) == ATTN_OK, "%s", err.msg);
    /* the file is a safetensors checkpoint, not JSON */
    parts p = parts_read(cs);
    ck_assert_ptr_nonnull(strstr(state_of(p.header), "\"format\":\"attn-checkpoint-v1\""));
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(p.header, "best_params"));
    /* resumed from each: the uninterrupted run's weights file, byte for byte */
    const char *rj = in_tmp("c-rj.json"), *rs = in_tmp("c-rs.json");
    classifier_resume(d, cj, rj);
    classifier_resume(d, cs, rs);
    ck_assert_msg(same_file(rj, whole), "resumed from JSON differs from the uninterrupted run");
    ck_assert_msg(same_file(rs, whole),
                  "resumed from safetensors differs from the uninterrupted run");
    ck_assert_msg(!same_file(part, whole), "epoch 1 = epoch 3: the comparison cannot fail");

    /* hostile files, into a trainer on the same data */
    hostile h[16];
    char *flipped = malloc(p.size), *nan_data = malloc(p.size), *neg_data = malloc(p.size);
    ck_assert(flipped && nan_data && neg_data);
    size_t n = common_hostile(&p, h, flipped, nan_data, neg_data);
    h[n++] = (hostile){"adam_step", state_edited(&p, "\"adam_step\":", "\"adam_step\":1"),
                       NULL,        NULL,
                       0,           {"\"adam_step\" = 1", "take 7 steps"}};
    h[n++] = (hostile){"batch_size",
                       state_edited(&p, "\"batch_size\":16", "\"batch_size\":1073741824"),
                       NULL,
                       NULL,
                       0,
                       {"\"batch_size\" = 1073741824 is out of range"}};
    h[n++] = (hostile){"n_params", state_edited(&p, "\"n_params\":", "\"n_params\":1"),
                       NULL,       NULL,
                       0,          {"\"n_params\""}};
    h[n++] = (hostile){"best_epoch 0 with best_params",
                       state_edited(&p, "\"best_epoch\":1", "\"best_epoch\":0"),
                       NULL,
                       NULL,
                       0,
                       {"unexpected tensor \"best_params\"", "best_epoch is 0"}};
    h[n++] = (hostile){"arrays in the state",
                       state_edited(&p, "\"n_params\":", "\"v\":[],\"n_params\":"),
                       NULL,
                       NULL,
                       0,
                       {"\"state\" holds \"v\""}};
    classifier_ctx ctx = {tu_trainer_new(ma, d, &cfg), ma};
    expect_all_refused(&p, h, n, classifier_load, &ctx);
    /* the seq2seq reader names the other family's file as such */
    attn_s2s_train_state st;
    ck_assert_int_ne(attn_s2s_checkpoint_load(cs, &st, &err), ATTN_OK);
    ck_assert_msg(strstr(err.msg, "the other model family's checkpoint"), "%s", err.msg);
    attn_trainer_free(ctx.t);
    free(flipped);
    free(nan_data);
    free(neg_data);
    parts_free(&p);
    attn_trainer_free(t);
    attn_trainer_free(ta);
    attn_model_free(m);
    attn_model_free(ma);
    attn_dataset_free(d);
}
END_TEST

/* ---- the seq2seq model ---------------------------------------------------------------------- */

typedef struct saved {
    const char *json, *st;
    attn_s2s_train_state kept; /* epoch 1's, deep copy */
} saved;

static float *copy_floats(const float *x, size_t n) {
    float *y = malloc((n ? n : 1) * sizeof *y);
    ck_assert_ptr_nonnull(y);
    memcpy(y, x, n * sizeof *y);
    return y;
}

static attn_status save_both(const attn_s2s_train_state *st, void *user, attn_error *err) {
    saved *s = user;
    if (st->epoch != 1) return ATTN_OK;
    s->kept = *st;
    s->kept.params = copy_floats(st->params, st->n_params);
    s->kept.m = copy_floats(st->m, st->n_params);
    s->kept.v = copy_floats(st->v, st->n_params);
    s->kept.best_params = st->best_params ? copy_floats(st->best_params, st->n_params) : NULL;
    attn_status r = attn_s2s_checkpoint_save(st, s->json, err);
    return r == ATTN_OK ? attn_s2s_checkpoint_save(st, s->st, err) : r;
}

static void assert_same_state(const attn_s2s_train_state *a, const attn_s2s_train_state *b) {
    ck_assert_int_eq(a->epoch, b->epoch);
    ck_assert_int_eq(a->n_pairs, b->n_pairs);
    ck_assert(a->data_fingerprint == b->data_fingerprint && a->rng_state == b->rng_state);
    ck_assert_int_eq(a->adam_step, b->adam_step);
    ck_assert_int_eq(a->best_epoch, b->best_epoch);
    ck_assert(a->best_score == b->best_score);
    ck_assert(memcmp(&a->train_cfg, &b->train_cfg, sizeof a->train_cfg) == 0);
    ck_assert(memcmp(&a->model_cfg, &b->model_cfg, sizeof a->model_cfg) == 0);
    ck_assert_uint_eq(a->n_params, b->n_params);
    tu_assert_identical("params", a->params, b->params, a->n_params);
    tu_assert_identical("m", a->m, b->m, a->n_params);
    tu_assert_identical("v", a->v, b->v, a->n_params);
    ck_assert_int_eq(a->best_params != NULL, b->best_params != NULL);
    if (a->best_params) tu_assert_identical("best", a->best_params, b->best_params, a->n_params);
}

static attn_seq2seq_config s2s_config(void) {
    attn_seq2seq_config c = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    c.d_model = 16;
    c.ffn_dim = 16;
    c.enc_layers = 1;
    c.dec_layers = 1;
    return c;
}

/* Trains 3 epochs (from `from`, if given; saving epoch 1 to keep's files, if given) and writes
 * the final weights. */
static void s2s_run(const attn_pairs *train, const attn_pairs *held,
                    const attn_s2s_train_state *from, saved *keep, const char *weights) {
    attn_seq2seq_config c = s2s_config();
    attn_seq2seq *m = NULL;
    attn_error err;
    ck_assert_int_eq(attn_seq2seq_create(&c, from ? 99 : 2, &m, &err), ATTN_OK);
    attn_s2s_train_config tc = attn_s2s_train_config_default();
    tc.epochs = 3;
    tc.holdout = 20;
    tc.seed = 4;
    const attn_s2s_resume rs = {from, keep ? save_both : NULL, keep};
    ck_assert_msg(attn_seq2seq_train_resume(m, train, held, &tc, NULL, &rs, &err) == ATTN_OK, "%s",
                  err.msg);
    ck_assert_msg(attn_seq2seq_save_json(m, false, false, weights, &err) == ATTN_OK, "%s", err.msg);
    attn_seq2seq_free(m);
}

static attn_status s2s_load(const char *path, void *ctx, attn_error *err) {
    (void)ctx;
    attn_s2s_train_state st;
    const attn_status s = attn_s2s_checkpoint_load(path, &st, err);
    if (s != ATTN_OK) ck_assert_msg(st.params == NULL && st.m == NULL && st.v == NULL, "arrays");
    attn_s2s_train_state_clear(&st);
    return s;
}

static attn_status classifier_peek(const char *path, void *ctx, attn_error *err) {
    (void)ctx;
    attn_model_config mc;
    attn_train_config tc;
    return attn_checkpoint_peek(path, &mc, &tc, NULL, err);
}

START_TEST(test_seq2seq_resumes_from_either_file) {
    attn_set_num_threads(1);
    attn_error err;
    attn_pairs *train = NULL, *held = NULL;
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, 60, 3, &train, &err),
                     ATTN_OK);
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_HOLDOUT, 20, 3, &held, &err),
                     ATTN_OK);
    saved keep = {.json = in_tmp("s.ckpt.json"), .st = in_tmp("s.ckpt.safetensors")};
    const char *whole = in_tmp("s-whole.json");
    s2s_run(train, held, NULL, &keep, whole);
    ck_assert_int_eq(keep.kept.epoch, 1);
    ck_assert_int_gt(keep.kept.best_epoch, 0);
    /* both files hold the state bit for bit */
    attn_s2s_train_state from_json, from_st;
    ck_assert_msg(attn_s2s_checkpoint_load(keep.json, &from_json, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_s2s_checkpoint_load(keep.st, &from_st, &err) == ATTN_OK, "%s", err.msg);
    assert_same_state(&from_json, &keep.kept);
    assert_same_state(&from_st, &keep.kept);
    /* resumed from each: the uninterrupted run's weights file, byte for byte */
    const char *rj = in_tmp("s-rj.json"), *rs = in_tmp("s-rs.json");
    s2s_run(train, held, &from_json, NULL, rj);
    s2s_run(train, held, &from_st, NULL, rs);
    ck_assert_msg(same_file(rj, whole), "resumed from JSON differs from the uninterrupted run");
    ck_assert_msg(same_file(rs, whole),
                  "resumed from safetensors differs from the uninterrupted run");
    {
        attn_seq2seq *w = NULL;
        ck_assert_int_eq(attn_seq2seq_load_json(whole, &w, &err), ATTN_OK);
        ck_assert_msg(
            memcmp(attn_seq2seq_params(w), from_st.params, from_st.n_params * sizeof(float)) != 0,
            "epoch 1 = epoch 3: the comparison cannot fail");
        attn_seq2seq_free(w);
    }

    /* hostile files */
    parts p = parts_read(keep.st);
    hostile h[16];
    char *flipped = malloc(p.size), *nan_data = malloc(p.size), *neg_data = malloc(p.size);
    ck_assert(flipped && nan_data && neg_data);
    size_t n = common_hostile(&p, h, flipped, nan_data, neg_data);
    char step_from[64], step_to[64], step_msg[64];
    snprintf(step_from, sizeof step_from, "\"adam_step\": %ld", keep.kept.adam_step);
    snprintf(step_to, sizeof step_to, "\"adam_step\": %ld", keep.kept.adam_step + 1);
    snprintf(step_msg, sizeof step_msg, "\"adam_step\" = %ld, but 1 epoch ",
             keep.kept.adam_step + 1);
    h[n++] =
        (hostile){"adam_step", state_edited(&p, step_from, step_to), NULL, NULL, 0, {step_msg}};
    h[n++] = (hostile){"batch_size",
                       state_edited(&p, "\"batch_size\": 32", "\"batch_size\": 1073741824"),
                       NULL,
                       NULL,
                       0,
                       {"\"batch_size\" = 1073741824 is out of range [1, 65536]"}};
    h[n++] = (hostile){"lr", state_edited(&p, "\"lr\": 0.001", "\"lr\": 0"),
                       NULL, NULL,
                       0,    {"\"lr\" = 0 is out of range"}};
    h[n++] = (hostile){"n_params", state_edited(&p, "\"n_params\": ", "\"n_params\": 1"),
                       NULL,       NULL,
                       0,          {"\"n_params\" = 1"}};
    expect_all_refused(&p, h, n, s2s_load, NULL);

    /* the classifier's reader names the other family's file as such */
    attn_s2s_train_state st;
    ck_assert_int_ne(classifier_peek(keep.st, NULL, &err), ATTN_OK);
    ck_assert_msg(strstr(err.msg, "the other model family's checkpoint"), "%s", err.msg);
    /* weights are not a checkpoint */
    const char *ws = in_tmp("s-weights.safetensors");
    {
        attn_seq2seq *w = NULL;
        ck_assert_int_eq(attn_seq2seq_load_json(whole, &w, &err), ATTN_OK);
        ck_assert_int_eq(attn_seq2seq_save_safetensors(w, ws, &err), ATTN_OK);
        attn_seq2seq_free(w);
    }
    ck_assert_int_ne(attn_s2s_checkpoint_load(ws, &st, &err), ATTN_OK);
    ck_assert_msg(strstr(err.msg, "(weights, not a training checkpoint)"), "%s", err.msg);
    /* and a checkpoint is not weights (predict, generate, info) */
    attn_seq2seq *w = NULL;
    ck_assert_int_ne(attn_seq2seq_load_json(keep.st, &w, &err), ATTN_OK);
    ck_assert_msg(strstr(err.msg, "holds a training checkpoint (\"attn-seq2seq-checkpoint-v1\"), "
                                  "not weights: resume it with attn train --resume"),
                  "%s", err.msg);
    /* ... also when its four arrays are over the weights' limit but the model is not (the
     * base Transformer's 709 MB checkpoint), while train --resume still reads it */
    char limit[32];
    snprintf(limit, sizeof limit, "%zu", 2 * from_st.n_params);
    ck_assert_int_eq(setenv("ATTN_MAX_PARAMS", limit, 1), 0);
    ck_assert_int_ne(attn_seq2seq_load_json(keep.st, &w, &err), ATTN_OK);
    ck_assert_msg(strstr(err.msg, "holds a training checkpoint (\"attn-seq2seq-checkpoint-v1\"), "
                                  "not weights: resume it with attn train --resume"),
                  "%s", err.msg);
    ck_assert_msg(s2s_load(keep.st, NULL, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(unsetenv("ATTN_MAX_PARAMS"), 0);
    ck_assert_int_ne(attn_seq2seq_load_json(keep.json, &w, &err), ATTN_OK);
    ck_assert_msg(strstr(err.msg, "holds a training checkpoint (\"attn-seq2seq-checkpoint-v1\"), "
                                  "not weights: resume it with attn train --resume"),
                  "%s", err.msg);

    free(flipped);
    free(nan_data);
    free(neg_data);
    parts_free(&p);
    attn_s2s_train_state_clear(&from_json);
    attn_s2s_train_state_clear(&from_st);
    attn_s2s_train_state_clear(&keep.kept);
    attn_pairs_free(train);
    attn_pairs_free(held);
}
END_TEST

int main(void) {
    Suite *s = suite_create("checkpoint_safetensors");
    TCase *tc = tcase_create("checkpoint_safetensors");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_classifier_resumes_from_either_file);
    tcase_add_test(tc, test_seq2seq_resumes_from_either_file);
    suite_add_tcase(s, tc);
    return tu_run_suite_in_tmp(s, tmp_dir, sizeof tmp_dir, "ckpt_st");
}
