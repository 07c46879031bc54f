/* test_checkpoint.c -- a run stopped after epoch k, saved, and resumed in a fresh model and
 * trainer ends bit-identical (params, Adam m, v, step, model selection's best epoch and
 * parameters) to an uninterrupted run; checkpoint
 * writes are atomic (a failed save leaves the existing file intact, no .tmp left behind);
 * the same with a separate held-out set; mismatched data, a held-out slice taken the other way
 * (split vs separate set) or a damaged file are refused with a message naming the problem. */
#include "test_util.h"
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

typedef struct stopper {
    int stop_at;
} stopper;

static bool on_epoch(const attn_epoch_stats *st, void *user) {
    const stopper *s = user;
    return st->epoch != s->stop_at;
}

static char dir[256];

static void make_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/attn_test_ckpt_%ld", (long)getpid());
    mkdir(dir, 0700);
}

static const char *in_dir(const char *name) {
    static char buf[4][512];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static attn_train_config small_config(void) {
    attn_train_config cfg = attn_train_config_default();
    cfg.epochs = 3;
    cfg.holdout = 20;
    cfg.batch_size = 16;
    cfg.bucket = 2;
    cfg.seed = 42;
    return cfg;
}

/* A trainer on d with the held-out slice split off d (h NULL) or from the separate set h. */
static attn_trainer *trainer_new(attn_model *m, const attn_dataset *d, const attn_dataset *h,
                                 const attn_train_config *cfg) {
    attn_trainer *t = NULL;
    attn_error err;
    ck_assert_msg(attn_trainer_create_heldout(m, d, h, cfg, &t, &err) == ATTN_OK, "%s", err.msg);
    return t;
}

/* separate: the held-out slice is a separate ATTN_SET_HOLDOUT set, not split off the data */
/* variant: a non-default transformer (3 post-norm GELU layers, sinusoidal positions) trained
 * with a warm-up that spans the interruption */
static void resume_case(attn_arch arch, bool separate, bool variant) {
    attn_set_num_threads(1);
    make_dir();
    attn_dataset *d = tu_train_data(120, 5), *h = NULL;
    attn_error e0;
    if (separate)
        ck_assert_msg(attn_data_generate(ATTN_SET_HOLDOUT, 20, 5, &h, &e0) == ATTN_OK, "%s",
                      e0.msg);
    attn_train_config cfg = small_config();
    attn_model_config mc = attn_model_config_default(arch);
    if (variant) {
        mc.n_layers = 3;
        mc.norm = ATTN_NORM_POST;
        mc.activation = ATTN_ACT_GELU;
        mc.pos = ATTN_POS_SINUSOIDAL;
        cfg.warmup = 12; /* 7 steps an epoch */
    }
    attn_error err;

    /* uninterrupted */
    attn_model *ma = tu_model_new(&mc, 9);
    attn_trainer *ta = trainer_new(ma, d, h, &cfg);
    ck_assert(attn_trainer_run(ta, NULL, &err) == ATTN_OK);

    /* stopped after epoch 1, saved, everything freed */
    char path[512];
    snprintf(path, sizeof path, "%s", in_dir("run.ckpt.json"));
    float *saved_best = malloc(attn_model_n_params(ma) * sizeof(float));
    ck_assert(saved_best != NULL);
    double saved_acc = -1.0;
    {
        attn_model *m = tu_model_new(&mc, 9);
        attn_trainer *t = trainer_new(m, d, h, &cfg);
        stopper s = {1};
        attn_train_callbacks cb = {on_epoch, NULL, &s};
        ck_assert(attn_trainer_run(t, &cb, &err) == ATTN_OK);
        ck_assert_int_eq(attn_trainer_epoch(t), 1);
        ck_assert_int_eq(attn_trainer_best_epoch(t, NULL), 1);
        ck_assert_msg(attn_trainer_save_checkpoint(t, path, &err) == ATTN_OK, "%s", err.msg);
        /* the stopped run's model selection state, to compare with the loaded one */
        memcpy(saved_best, t->best.params, attn_model_n_params(m) * sizeof(float));
        saved_acc = t->best.score;
        attn_trainer_free(t);
        attn_model_free(m);
    }
    ck_assert(access(in_dir("run.ckpt.json.tmp"), F_OK) != 0);

    /* resumed: configs from the file, a model with a different init seed (overwritten) */
    attn_model_config mc2;
    attn_train_config cfg2;
    int n_sent = 0;
    ck_assert_msg(attn_checkpoint_peek(path, &mc2, &cfg2, &n_sent, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(mc2.arch, arch);
    ck_assert_int_eq(n_sent, 120);
    ck_assert_int_eq(cfg2.epochs, 3);
    ck_assert(cfg2.seed == 42 && cfg2.adam.lr == 1e-3 && cfg2.adam.beta2 == 0.999);
    ck_assert_int_eq(cfg2.warmup, cfg.warmup);
    ck_assert_int_eq(mc2.pos, mc.pos);
    ck_assert_int_eq(mc2.n_layers, mc.n_layers);
    attn_model *mb = tu_model_new(&mc2, 12345);
    attn_trainer *tb = trainer_new(mb, d, h, &cfg2);
    ck_assert_msg(attn_trainer_load_checkpoint(tb, path, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(attn_trainer_epoch(tb), 1);
    double acc = 0.0;
    ck_assert_int_eq(attn_trainer_best_epoch(tb, &acc), 1);
    ck_assert(acc == saved_acc);
    tu_assert_identical("loaded best params", tb->best.params, saved_best, attn_model_n_params(mb));
    ck_assert(attn_trainer_run(tb, NULL, &err) == ATTN_OK);
    double acc_a = 0.0, acc_b = 0.0;
    ck_assert_int_eq(attn_trainer_best_epoch(tb, &acc_b), attn_trainer_best_epoch(ta, &acc_a));
    ck_assert(acc_a == acc_b);

    size_t n = attn_model_n_params(ma);
    ck_assert_int_eq(attn_trainer_steps(tb), attn_trainer_steps(ta));
    tu_assert_identical("resumed params", attn_model_params(mb), attn_model_params(ma), n);
    tu_assert_identical("resumed adam m", attn_trainer_adam(tb)->m, attn_trainer_adam(ta)->m, n);
    tu_assert_identical("resumed adam v", attn_trainer_adam(tb)->v, attn_trainer_adam(ta)->v, n);

    /* the same checkpoint refused on other data */
    attn_dataset *other = tu_train_data(120, 6);
    attn_trainer *tc = trainer_new(mb, other, h, &cfg2);
    ck_assert(attn_trainer_load_checkpoint(tc, path, &err) == ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "different data") != NULL, "%s", err.msg);
    ck_assert_int_eq(err.code, ATTN_CODE_OTHER_DATA); /* what attn train --data decides by */
    attn_trainer_free(tc);
    attn_dataset_free(other);
    /* ... and with the held-out slice taken the other way (split vs separate set) */
    attn_dataset *h2 = NULL;
    if (!separate)
        ck_assert_msg(attn_data_generate(ATTN_SET_HOLDOUT, 20, 5, &h2, &err) == ATTN_OK, "%s",
                      err.msg);
    tc = trainer_new(mb, d, h2, &cfg2);
    ck_assert(attn_trainer_load_checkpoint(tc, path, &err) == ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "held-out") != NULL, "%s", err.msg);
    ck_assert_int_eq(err.code, ATTN_CODE_NONE); /* not other data: attn train exits 1, not 2 */
    attn_trainer_free(tc);
    attn_dataset_free(h2);

    free(saved_best);
    remove(path);
    rmdir(dir);
    attn_trainer_free(ta);
    attn_trainer_free(tb);
    attn_model_free(ma);
    attn_model_free(mb);
    attn_dataset_free(d);
    attn_dataset_free(h);
}

START_TEST(test_resume_lstm) {
    resume_case(ATTN_ARCH_LSTM, false, false);
}
END_TEST

START_TEST(test_resume_transformer) {
    resume_case(ATTN_ARCH_TRANSFORMER, false, false);
}
END_TEST

START_TEST(test_resume_transformer_variant_warmup) {
    resume_case(ATTN_ARCH_TRANSFORMER, false, true);
}
END_TEST

START_TEST(test_resume_separate_heldout) {
    resume_case(ATTN_ARCH_LSTM, true, false);
}
END_TEST

/* The state itself, without a file: attn_trainer_get_state of a run stopped after epoch 1,
 * put into a fresh trainer with attn_trainer_set_state, resumes bit-identical; states that do
 * not fit the trainer are refused and leave it unchanged. */
START_TEST(test_state_without_file) {
    attn_set_num_threads(1);
    attn_dataset *d = tu_train_data(120, 5);
    attn_train_config cfg = small_config();
    attn_model_config mc = attn_model_config_default(ATTN_ARCH_RNN);
    attn_error err;
    attn_model *ma = tu_model_new(&mc, 9);
    attn_trainer *ta = tu_trainer_new(ma, d, &cfg);
    ck_assert(attn_trainer_run(ta, NULL, &err) == ATTN_OK);

    attn_model *m1 = tu_model_new(&mc, 9);
    attn_trainer *t1 = tu_trainer_new(m1, d, &cfg);
    stopper s = {1};
    attn_train_callbacks cb = {on_epoch, NULL, &s};
    ck_assert(attn_trainer_run(t1, &cb, &err) == ATTN_OK);
    attn_train_state st;
    ck_assert_msg(attn_trainer_get_state(t1, &st, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(st.epoch, 1);
    ck_assert_int_eq(st.best_epoch, 1);
    ck_assert(st.best_params != NULL && st.n_params == attn_model_n_params(m1));
    /* its own state back into the same trainer (the arrays alias) changes nothing */
    ck_assert_msg(attn_trainer_set_state(t1, &st, "self", &err) == ATTN_OK, "%s", err.msg);

    attn_model *mb = tu_model_new(&mc, 777);
    attn_trainer *tb = tu_trainer_new(mb, d, &cfg);
    attn_train_state bad = st;
    bad.n_params = st.n_params - 1;
    ck_assert(attn_trainer_set_state(tb, &bad, "short.json", &err) == ATTN_ERR_SHAPE);
    ck_assert_msg(strstr(err.msg, "short.json") && strstr(err.msg, "parameters"), "%s", err.msg);
    bad = st;
    bad.best_epoch = 2;
    ck_assert(attn_trainer_set_state(tb, &bad, "best.json", &err) == ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "best_epoch 2") != NULL, "%s", err.msg);
    bad = st;
    bad.train_cfg.seed++;
    ck_assert(attn_trainer_set_state(tb, &bad, "seed.json", &err) == ATTN_ERR_VALUE);
    ck_assert_int_eq(attn_trainer_epoch(tb), 0);

    ck_assert_msg(attn_trainer_set_state(tb, &st, "state", &err) == ATTN_OK, "%s", err.msg);
    attn_trainer_free(t1);
    attn_model_free(m1);
    ck_assert(attn_trainer_run(tb, NULL, &err) == ATTN_OK);
    size_t n = attn_model_n_params(ma);
    tu_assert_identical("resumed params", attn_model_params(mb), attn_model_params(ma), n);
    tu_assert_identical("resumed adam v", attn_trainer_adam(tb)->v, attn_trainer_adam(ta)->v, n);

    /* a diverged run has no state worth keeping */
    attn_model_params(mb)[3] = INFINITY;
    ck_assert(attn_trainer_get_state(tb, &st, &err) == ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "embedding.weight") != NULL, "%s", err.msg);

    attn_trainer_free(ta);
    attn_trainer_free(tb);
    attn_model_free(ma);
    attn_model_free(mb);
    attn_dataset_free(d);
}
END_TEST

static int logged;
/* Recomputes the checksum that ends an edited checkpoint (src/io/checkpoint_json.c): the
 * CRC-32 of every byte before the 23-byte tail ,"crc32":"0x<8 hex>"}\n. */
static void rechecksum(char *text) {
    size_t len = strlen(text);
    ck_assert(len >= 23);
    unsigned long crc = crc32(0L, (const Bytef *)text, (uInt)(len - 23));
    snprintf(text + len - 23, 24, ",\"crc32\":\"0x%08lx\"}\n", crc);
}

static void count_log(attn_log_level level, const char *msg, void *user) {
    (void)level;
    ck_assert_msg(strstr(msg, "holdout_separate") != NULL, "%s", msg);
    ++*(int *)user;
}

/* The file at path holds exactly `want`. */
static void assert_file_text(const char *path, const char *want) {
    char *text = tu_read_text(path);
    ck_assert_str_eq(text, want);
    free(text);
}

START_TEST(test_atomic_write) {
    make_dir();
    attn_dataset *d = tu_train_data(40, 5);
    attn_train_config cfg = small_config();
    attn_model_config mc = attn_model_config_default(ATTN_ARCH_RNN);
    attn_model *m = tu_model_new(&mc, 1);
    attn_trainer *t = tu_trainer_new(m, d, &cfg);
    attn_error err;

    /* the temporary file cannot be created (no such directory): the message names the file */
    char path[512];
    snprintf(path, sizeof path, "%s", in_dir("nodir/keep.json"));
    ck_assert(attn_trainer_save_checkpoint(t, path, &err) == ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, "nodir/keep.json") != NULL, "%s", err.msg);
    snprintf(path, sizeof path, "%s", in_dir("keep.json"));
    tu_write_file(path, "precious\n", strlen("precious\n"));

    /* the target is a directory: refused, no temporary file left behind */
    char dpath[512];
    snprintf(dpath, sizeof dpath, "%s", in_dir("adir"));
    ck_assert(mkdir(dpath, 0700) == 0);
    tu_write_file(in_dir("adir/x"), "", 0);
    ck_assert(attn_trainer_save_checkpoint(t, dpath, &err) == ATTN_ERR_IO);
    ck_assert(access(in_dir("adir.tmp"), F_OK) != 0);
    remove(in_dir("adir/x"));
    rmdir(dpath);

    /* a directory that does not exist */
    ck_assert(attn_trainer_save_checkpoint(t, in_dir("nope/c.json"), &err) == ATTN_ERR_IO);

    /* NaN parameters are refused before anything is written */
    attn_model_params(m)[0] = NAN;
    ck_assert(attn_trainer_save_checkpoint(t, path, &err) == ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "embedding.weight") != NULL, "%s", err.msg);
    assert_file_text(path, "precious\n");

    /* a checkpoint from before separate held-out sets (no "holdout_separate") still loads,
     * and the loader says how it read it through the log hook */
    attn_model_params(m)[0] = 0.25f;
    ck_assert_msg(attn_trainer_save_checkpoint(t, in_dir("old.json"), &err) == ATTN_OK, "%s",
                  err.msg);
    char *text = tu_read_text(in_dir("old.json"));
    char *old = tu_replace_once(text, "checkpoint", "\"holdout_separate\":false,", "");
    rechecksum(old);
    tu_write_file(in_dir("old.json"), old, strlen(old));
    logged = 0;
    attn_set_log(count_log, &logged);
    ck_assert_msg(attn_trainer_load_checkpoint(t, in_dir("old.json"), &err) == ATTN_OK, "%s",
                  err.msg);
    attn_set_log(NULL, NULL);
    ck_assert_int_eq(logged, 1);
    remove(in_dir("old.json"));
    free(old);
    free(text);

    /* loading something that is not a checkpoint */
    ck_assert(attn_trainer_load_checkpoint(t, path, &err) == ATTN_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "keep.json") != NULL, "%s", err.msg);
    ck_assert(attn_checkpoint_peek(in_dir("missing.json"), &mc, &cfg, NULL, &err) == ATTN_ERR_IO);

    remove(path);
    rmdir(dir);
    attn_trainer_free(t);
    attn_model_free(m);
    attn_dataset_free(d);
}
END_TEST

int main(void) {
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("checkpoint");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_resume_lstm);
    tcase_add_test(tc, test_resume_transformer);
    tcase_add_test(tc, test_resume_transformer_variant_warmup);
    tcase_add_test(tc, test_resume_separate_heldout);
    tcase_add_test(tc, test_atomic_write);
    tcase_add_test(tc, test_state_without_file);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
