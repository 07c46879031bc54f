/* test_kernels_json.c -- the kernels record (src/io/kernels_json.c): written and read back
 * field for field; attn_io_kernels_note says, through the log hook and only then, that a file
 * was computed on other kernels (another OpenBLAS kernel table, version or attn path; the
 * thread count does not count); a training checkpoint loaded on other kernels than it records
 * gives that note and still loads, one without a record loads silently. Weights files of both
 * families carry the record of the kernels that computed their values (training sets it, loading
 * keeps it, JSON and safetensors alike); a new model's file has none; a malformed one is
 * refused, naming "kernels". */
#include "attn_seq2seq.h"
#include "io_internal.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

typedef struct log_seen {
    int n;
    attn_log_level level;
    char msg[1024];
} log_seen;

static void remember(attn_log_level level, const char *msg, void *user) {
    log_seen *s = user;
    s->n++;
    s->level = level;
    snprintf(s->msg, sizeof s->msg, "%s", msg);
}

/* The record of what runs now as a cJSON object, with blas_core (if not NULL) and
 * blas_threads (if > 0) changed. */
static cJSON *record_now(const char *core, int threads) {
    attn_kernels_info k;
    attn_kernels_info_get(&k);
    if (core) snprintf(k.blas_core, sizeof k.blas_core, "%s", core);
    if (threads > 0) k.blas_threads = threads;
    cJSON *o = attn_io_kernels_json(&k);
    ck_assert_ptr_nonnull(o);
    return o;
}

START_TEST(test_record_round_trip) {
    attn_kernels_info k, back;
    attn_kernels_info_get(&k);
    cJSON *o = attn_io_kernels_json(&k);
    ck_assert(attn_io_kernels_from_json(o, &back));
    ck_assert_str_eq(back.mode, k.mode);
    ck_assert_str_eq(back.openblas, k.openblas);
    ck_assert_str_eq(back.blas_core, k.blas_core);
    ck_assert_int_eq(back.blas_threads, k.blas_threads);
    ck_assert_str_eq(back.cpu_path, k.cpu_path);
    cJSON_DeleteItemFromObject(o, "blas_core");
    ck_assert(!attn_io_kernels_from_json(o, &back));
    cJSON_Delete(o);
}
END_TEST

START_TEST(test_note_only_on_other_kernels) {
    log_seen seen = {0};
    attn_set_log(remember, &seen);
    attn_io_kernels_note("none.json", NULL); /* a file from before the record */
    cJSON *same = record_now(NULL, 7);       /* another thread count: the same bytes */
    attn_io_kernels_note("same.json", same);
    cJSON *bad = cJSON_CreateString("Haswell");
    attn_io_kernels_note("bad.json", bad);
    ck_assert_int_eq(seen.n, 0);
    cJSON *other = record_now("NotThisCore", 0);
    attn_io_kernels_note("other.json", other);
    attn_set_log(NULL, NULL);
    ck_assert_int_eq(seen.n, 1);
    ck_assert_int_eq(seen.level, ATTN_LOG_INFO);
    ck_assert_msg(strstr(seen.msg, "other.json") && strstr(seen.msg, "NotThisCore") &&
                      strstr(seen.msg, tu_blas_core()) && strstr(seen.msg, "may differ"),
                  "%s", seen.msg);
    cJSON_Delete(same);
    cJSON_Delete(bad);
    cJSON_Delete(other);
}
END_TEST

/* Recomputes the checksum tail ,"crc32":"0x<8 hex>"}\n of an edited checkpoint. */
static void rechecksum(char *text) {
    size_t len = strlen(text);
    ck_assert(len >= 23);
    unsigned long crc = crc32(0L, (const Bytef *)text, (uInt)(len - 23));
    snprintf(text + len - 23, 24, ",\"crc32\":\"0x%08lx\"}\n", crc);
}

START_TEST(test_checkpoint_on_other_kernels) {
    char dir[256], path[512];
    snprintf(dir, sizeof dir, "/tmp/attn_test_kernels_json_%ld", (long)getpid());
    ck_assert(mkdir(dir, 0700) == 0);
    snprintf(path, sizeof path, "%s/ck.json", dir);
    attn_dataset *d = tu_train_data(40, 5);
    attn_train_config cfg = attn_train_config_default();
    cfg.epochs = 1;
    cfg.holdout = 10;
    attn_model_config mc = attn_model_config_default(ATTN_ARCH_RNN);
    attn_model *m = tu_model_new(&mc, 1);
    attn_trainer *t = tu_trainer_new(m, d, &cfg);
    attn_error err;
    ck_assert_msg(attn_trainer_save_checkpoint(t, path, &err) == ATTN_OK, "%s", err.msg);

    log_seen seen = {0};
    attn_set_log(remember, &seen);
    ck_assert_msg(attn_trainer_load_checkpoint(t, path, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(seen.n, 0); /* written and read on the same kernels */

    char *text = tu_read_text(path);
    char old_core[64];
    snprintf(old_core, sizeof old_core, "\"blas_core\":\"%s\"", tu_blas_core());
    char *other = tu_replace_once(text, "checkpoint", old_core, "\"blas_core\":\"NotThisCore\"");
    rechecksum(other);
    tu_write_file(path, other, strlen(other));
    ck_assert_msg(attn_trainer_load_checkpoint(t, path, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(seen.n, 1);
    ck_assert_msg(strstr(seen.msg, "NotThisCore") != NULL, "%s", seen.msg);

    /* a checkpoint from before the record loads without a word */
    const char *start = strstr(text, ",\"kernels\":{");
    const char *end = start ? strchr(start + 1, '}') : NULL;
    ck_assert(start && end);
    char *none = calloc(strlen(text) + 1, 1);
    memcpy(none, text, (size_t)(start - text));
    strcat(none, end + 1);
    rechecksum(none);
    tu_write_file(path, none, strlen(none));
    ck_assert_msg(attn_trainer_load_checkpoint(t, path, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(seen.n, 1);
    attn_set_log(NULL, NULL);

    free(none);
    free(other);
    free(text);
    remove(path);
    rmdir(dir);
    attn_trainer_free(t);
    attn_model_free(m);
    attn_dataset_free(d);
}
END_TEST

/* ---- the record in weights files ------------------------------------------------------------ */

static bool same_record(const attn_kernels_info *a, const attn_kernels_info *b) {
    return a && b && !strcmp(a->mode, b->mode) && !strcmp(a->openblas, b->openblas) &&
           !strcmp(a->blas_core, b->blas_core) && a->blas_threads == b->blas_threads &&
           !strcmp(a->cpu_path, b->cpu_path);
}

/* A record no machine here has: it can only come back from the file. */
static attn_kernels_info foreign_record(void) {
    attn_kernels_info k;
    attn_kernels_info_get(&k);
    snprintf(k.blas_core, sizeof k.blas_core, "NotThisCore");
    k.blas_threads = 7;
    return k;
}

static void tmp_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/attn_test_kernels_json_%ld_%s", (long)getpid(), name);
}

START_TEST(test_classifier_weights_record) {
    char js[256], st[256], js2[256];
    tmp_path(js, sizeof js, "w.json"), tmp_path(st, sizeof st, "w.safetensors");
    tmp_path(js2, sizeof js2, "w2.json");
    attn_model_config mc = attn_model_config_default(ATTN_ARCH_RNN);
    attn_model *m = tu_model_new(&mc, 1);
    attn_error err;
    ck_assert_ptr_null(attn_model_kernels(m)); /* an initialisation: nothing computed it */
    ck_assert_msg(attn_weights_save_json(m, false, js, &err) == ATTN_OK, "%s", err.msg);
    char *text = tu_read_text(js);
    ck_assert_msg(!strstr(text, "\"kernels\""), "a new model's file claims kernels");
    free(text);

    const attn_kernels_info k = foreign_record();
    attn_model_set_kernels(m, &k);
    ck_assert_msg(attn_weights_save_json(m, false, js, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_weights_save_safetensors(m, NULL, st, &err) == ATTN_OK, "%s", err.msg);
    const char *paths[2] = {js, st};
    for (int i = 0; i < 2; i++) {
        attn_model *back = NULL;
        ck_assert_msg(attn_weights_load_json(paths[i], &back, &err) == ATTN_OK, "%s", err.msg);
        ck_assert_msg(same_record(attn_model_kernels(back), &k), "%s: record not kept", paths[i]);
        if (i == 1) { /* safetensors -> JSON: the JSON file's bytes */
            ck_assert_msg(attn_weights_save_json(back, false, js2, &err) == ATTN_OK, "%s", err.msg);
            char *a = tu_read_text(js), *b = tu_read_text(js2);
            ck_assert_str_eq(a, b);
            free(a), free(b);
        }
        attn_model_free(back);
    }

    /* training computes new values: the record becomes this process's kernels */
    attn_dataset *d = tu_train_data(40, 5);
    attn_train_config cfg = attn_train_config_default();
    cfg.epochs = 1, cfg.holdout = 10;
    attn_trainer *t = tu_trainer_new(m, d, &cfg);
    ck_assert_msg(attn_trainer_run(t, NULL, &err) == ATTN_OK, "%s", err.msg);
    attn_kernels_info now;
    attn_kernels_info_get(&now);
    ck_assert_msg(same_record(attn_model_kernels(m), &now), "training left the old record");
    attn_trainer_free(t);
    attn_dataset_free(d);
    attn_model_free(m);
    remove(js), remove(st), remove(js2);
}
END_TEST

START_TEST(test_seq2seq_weights_record) {
    char js[256], st[256];
    tmp_path(js, sizeof js, "s.json"), tmp_path(st, sizeof st, "s.safetensors");
    attn_seq2seq_config mc = attn_seq2seq_config_default(ATTN_S2S_GRU);
    mc.d_model = 8, mc.hidden_size = 8;
    attn_seq2seq *m = NULL;
    attn_error err;
    ck_assert_msg(attn_seq2seq_create(&mc, 1, &m, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_ptr_null(attn_seq2seq_kernels(m));
    const attn_kernels_info k = foreign_record();
    attn_seq2seq_set_kernels(m, &k);
    ck_assert_msg(attn_seq2seq_save_json(m, false, false, js, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_seq2seq_save_safetensors(m, st, &err) == ATTN_OK, "%s", err.msg);
    const char *paths[2] = {js, st};
    for (int i = 0; i < 2; i++) {
        attn_seq2seq *back = NULL;
        ck_assert_msg(attn_seq2seq_load_json(paths[i], &back, &err) == ATTN_OK, "%s", err.msg);
        ck_assert_msg(same_record(attn_seq2seq_kernels(back), &k), "%s: record not kept", paths[i]);
        attn_seq2seq_free(back);
    }
    attn_pairs *train = NULL;
    ck_assert(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, 16, 1, &train, &err) ==
              ATTN_OK);
    attn_s2s_train_config tc = attn_s2s_train_config_default();
    tc.epochs = 1, tc.holdout = 0;
    ck_assert_msg(attn_seq2seq_train(m, train, NULL, &tc, NULL, &err) == ATTN_OK, "%s", err.msg);
    attn_kernels_info now;
    attn_kernels_info_get(&now);
    ck_assert_msg(same_record(attn_seq2seq_kernels(m), &now), "training left the old record");
    attn_pairs_free(train);
    attn_seq2seq_free(m);
    remove(js), remove(st);
}
END_TEST

/* A "kernels" that is not a record: refused by both families' loaders, naming it. */
START_TEST(test_malformed_record_refused) {
    char js[256];
    tmp_path(js, sizeof js, "bad.json");
    attn_model_config mc = attn_model_config_default(ATTN_ARCH_RNN);
    attn_model *m = tu_model_new(&mc, 1);
    attn_error err;
    const attn_kernels_info k = foreign_record();
    attn_model_set_kernels(m, &k);
    ck_assert_msg(attn_weights_save_json(m, false, js, &err) == ATTN_OK, "%s", err.msg);
    attn_model_free(m);
    char *text = tu_read_text(js);
    char *bad = tu_replace_once(text, "weights", "\"blas_threads\": 7", "\"blas_threads\": \"7\"");
    tu_write_file(js, bad, strlen(bad));
    attn_model *back = NULL;
    ck_assert(attn_weights_load_json(js, &back, &err) != ATTN_OK);
    ck_assert_ptr_null(back);
    ck_assert_msg(strstr(err.msg, "\"kernels\"") && strstr(err.msg, js), "%s", err.msg);
    free(bad), free(text);

    attn_seq2seq_config sc = attn_seq2seq_config_default(ATTN_S2S_GRU);
    sc.d_model = 8, sc.hidden_size = 8;
    attn_seq2seq *s = NULL;
    ck_assert(attn_seq2seq_create(&sc, 1, &s, &err) == ATTN_OK);
    attn_seq2seq_set_kernels(s, &k);
    ck_assert_msg(attn_seq2seq_save_json(s, false, false, js, &err) == ATTN_OK, "%s", err.msg);
    attn_seq2seq_free(s);
    text = tu_read_text(js);
    bad = tu_replace_once(text, "weights", "\"mode\": ", "\"mode\": 1, \"x\": ");
    tu_write_file(js, bad, strlen(bad));
    attn_seq2seq *sback = NULL;
    ck_assert(attn_seq2seq_load_json(js, &sback, &err) != ATTN_OK);
    ck_assert_ptr_null(sback);
    ck_assert_msg(strstr(err.msg, "\"kernels\""), "%s", err.msg);
    free(bad), free(text);
    remove(js);
}
END_TEST

int main(void) {
    Suite *s = suite_create("kernels_json");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_record_round_trip);
    tcase_add_test(tc, test_note_only_on_other_kernels);
    tcase_add_test(tc, test_checkpoint_on_other_kernels);
    tcase_add_test(tc, test_classifier_weights_record);
    tcase_add_test(tc, test_seq2seq_weights_record);
    tcase_add_test(tc, test_malformed_record_refused);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
