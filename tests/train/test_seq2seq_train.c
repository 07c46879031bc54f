/* test_seq2seq_train.c -- seq2seq training: on the compose task the epoch kept is the one with
 * the lowest held-out loss; the weights file records the task (and a rewrite file stays without
 * the key), and the reader refuses a bad task; a run resumed from a checkpoint file ends with
 * the uninterrupted run's parameters bit for bit (both tasks), a state that does not fit is
 * refused, and the checkpoint reader refuses edited files. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static attn_seq2seq_config compose_config(void) {
    attn_seq2seq_config c = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    attn_seq2seq_config_set_task(&c, ATTN_TASK_COMPOSE);
    c.d_model = 16;
    c.ffn_dim = 16;
    c.enc_layers = 1;
    c.dec_layers = 1;
    return c;
}

#define EPOCHS 40
typedef struct losses {
    double held[EPOCHS];
    int n;
} losses;

static bool record(const attn_s2s_epoch_stats *st, void *user) {
    losses *l = user;
    ck_assert(isnan(st->holdout_exact));
    l->held[l->n++] = st->holdout_loss;
    return true;
}

START_TEST(test_compose_keeps_the_lowest_held_out_loss) {
    attn_error err;
    attn_pairs *train = NULL, *held = NULL;
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_COMPOSE, ATTN_SET_TRAIN, 24, 3, &train, &err),
                     ATTN_OK);
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_COMPOSE, ATTN_SET_HOLDOUT, 40, 3, &held, &err),
                     ATTN_OK);
    for (int keep = 0; keep < 2; keep++) {
        const attn_seq2seq_config c = compose_config();
        attn_seq2seq *m = NULL;
        ck_assert_int_eq(attn_seq2seq_create(&c, 5, &m, &err), ATTN_OK);
        attn_s2s_train_config tc = attn_s2s_train_config_default();
        tc.epochs = EPOCHS;
        tc.holdout = 40;
        tc.keep_best = keep;
        tc.adam.lr = 0.02; /* 24 pairs for 40 epochs: it overfits, the held-out loss rises */
        losses l = {{0}, 0};
        const attn_s2s_callbacks cb = {record, &l};
        ck_assert_msg(attn_seq2seq_train(m, train, held, &tc, &cb, &err) == ATTN_OK, "%s", err.msg);
        ck_assert_int_eq(l.n, EPOCHS);
        int best = 0;
        for (int e = 0; e < EPOCHS; e++) {
            ck_assert(isfinite(l.held[e]));
            if (l.held[e] <= l.held[best]) best = e;
        }
        ck_assert_msg(best < EPOCHS - 1, "the last epoch is the best: the test shows nothing");
        double final = NAN;
        ck_assert_int_eq(attn_seq2seq_loss(m, held, 0, 40, &final, &err), ATTN_OK);
        printf("compose held-out loss per epoch:");
        for (int e = 0; e < EPOCHS; e++) printf(" %.4f", l.held[e]);
        printf("; keep_best %d ends at %.4f\n", keep, final);
        ck_assert(final == (keep ? l.held[best] : l.held[EPOCHS - 1]));
        attn_seq2seq_free(m);
    }
    attn_pairs_free(train);
    attn_pairs_free(held);
}
END_TEST

START_TEST(test_weights_record_the_task) {
    attn_error err;
    char path[] = "/tmp/attn-compose-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    for (int t = ATTN_TASK_REWRITE; t <= ATTN_TASK_COMPOSE; t++) {
        attn_seq2seq_config c = compose_config();
        attn_seq2seq_config_set_task(&c, (attn_task)t);
        attn_seq2seq *m = NULL, *back = NULL;
        ck_assert_int_eq(attn_seq2seq_create(&c, 1, &m, &err), ATTN_OK);
        ck_assert_int_eq(attn_seq2seq_save_json(m, false, true, path, &err), ATTN_OK);
        char *text = tu_read_text(path);
        ck_assert_ptr_nonnull(text);
        /* compose files say so; rewrite files keep the bytes they had before the key */
        ck_assert_int_eq(strstr(text, "\"task\": \"compose\"") != NULL, t == ATTN_TASK_COMPOSE);
        ck_assert_int_eq(strstr(text, "\"task\"") != NULL, t == ATTN_TASK_COMPOSE);
        ck_assert_msg(attn_seq2seq_load_json(path, &back, &err) == ATTN_OK, "%s", err.msg);
        const attn_seq2seq_config *b = attn_seq2seq_config_of(back);
        ck_assert_int_eq(b->task, t);
        ck_assert_int_eq(b->src_vocab, t == ATTN_TASK_COMPOSE ? ATTN_TGT_VOCAB_SIZE : 91);
        ck_assert_int_eq(b->max_tgt_len, t == ATTN_TASK_COMPOSE ? ATTN_COMPOSE_MAX_TGT + 1 : 16);
        attn_seq2seq_free(back);
        if (t == ATTN_TASK_COMPOSE) { /* a bad task is refused, naming the key */
            const char *bad[] = {"\"task\": \"summarise\"", "\"task\": 1"};
            for (int k = 0; k < 2; k++) {
                char *edited = tu_replace_once(text, path, "\"task\": \"compose\"", bad[k]);
                FILE *f = fopen(path, "w");
                ck_assert_ptr_nonnull(f);
                fputs(edited, f);
                fclose(f);
                ck_assert_int_ne(attn_seq2seq_load_json(path, &back, &err), ATTN_OK);
                ck_assert_ptr_null(back);
                ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "\"task\" must be"), "%s",
                              err.msg);
                free(edited);
            }
        }
        free(text);
        attn_seq2seq_free(m);
    }
    unlink(path);
}
END_TEST

/* ---- checkpoints and resume -------------------------------------------------------------- */

typedef struct saved {
    int at;                    /* the epoch whose state to keep */
    const char *path;          /* and write there */
    attn_s2s_train_state kept; /* a deep copy */
} saved;

static float *copy_floats(const float *x, size_t n) {
    float *y = malloc(n * sizeof *y);
    ck_assert_ptr_nonnull(y);
    memcpy(y, x, n * sizeof *y);
    return y;
}

static attn_status keep_state(const attn_s2s_train_state *st, void *user, attn_error *err) {
    saved *s = user;
    if (st->epoch != s->at) return ATTN_OK;
    s->kept = *st;
    s->kept.params = copy_floats(st->params, st->n_params);
    s->kept.m = copy_floats(st->m, st->n_params);
    s->kept.v = copy_floats(st->v, st->n_params);
    s->kept.best_params = st->best_params ? copy_floats(st->best_params, st->n_params) : NULL;
    return attn_s2s_checkpoint_save(st, s->path, err);
}

static void assert_same_state(const attn_s2s_train_state *a, const attn_s2s_train_state *b) {
    ck_assert_int_eq(a->epoch, b->epoch);
    ck_assert_int_eq(a->n_pairs, b->n_pairs);
    ck_assert(a->data_fingerprint == b->data_fingerprint && a->rng_state == b->rng_state);
    ck_assert_int_eq(a->adam_step, b->adam_step);
    ck_assert_int_eq(a->best_epoch, b->best_epoch);
    ck_assert(a->best_score == b->best_score);
    ck_assert(a->train_cfg.seed == b->train_cfg.seed &&
              a->train_cfg.adam.lr == b->train_cfg.adam.lr);
    ck_assert_int_eq(a->model_cfg.task, b->model_cfg.task);
    ck_assert_uint_eq(a->n_params, b->n_params);
    tu_assert_identical("params", a->params, b->params, a->n_params);
    tu_assert_identical("m", a->m, b->m, a->n_params);
    tu_assert_identical("v", a->v, b->v, a->n_params);
    ck_assert_int_eq(a->best_params != NULL, b->best_params != NULL);
    if (a->best_params) tu_assert_identical("best", a->best_params, b->best_params, a->n_params);
}

/* Trains `epochs` epochs (from `from`, if given) and returns the final parameters. */
static float *train_run(attn_task task, const attn_pairs *train, const attn_pairs *held, int epochs,
                        const attn_s2s_train_state *from, saved *keep, attn_status want,
                        attn_error *err) {
    attn_seq2seq_config c = compose_config();
    attn_seq2seq_config_set_task(&c, task);
    attn_seq2seq *m = NULL;
    ck_assert_int_eq(attn_seq2seq_create(&c, 2, &m, err), ATTN_OK);
    attn_s2s_train_config tc = attn_s2s_train_config_default();
    tc.epochs = epochs;
    tc.holdout = 30;
    tc.seed = 4;
    const attn_s2s_resume rs = {from, keep ? keep_state : NULL, keep};
    const attn_status st = attn_seq2seq_train_resume(m, train, held, &tc, NULL, &rs, err);
    ck_assert_msg(st == want, "status %d: %s", st, err->msg);
    float *p = copy_floats(attn_seq2seq_params(m), attn_seq2seq_n_params(m));
    attn_seq2seq_free(m);
    return p;
}

START_TEST(test_resume_ends_bit_identical) {
    const attn_task task = _i ? ATTN_TASK_COMPOSE : ATTN_TASK_REWRITE;
    attn_error err;
    attn_pairs *train = NULL, *held = NULL, *other = NULL;
    ck_assert_int_eq(attn_pairs_generate(task, ATTN_SET_TRAIN, 150, 3, &train, &err), ATTN_OK);
    ck_assert_int_eq(attn_pairs_generate(task, ATTN_SET_HOLDOUT, 30, 3, &held, &err), ATTN_OK);
    ck_assert_int_eq(attn_pairs_generate(task, ATTN_SET_TRAIN, 150, 4, &other, &err), ATTN_OK);
    char path[] = "/tmp/attn-s2s-ckpt-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    saved keep = {.at = 2, .path = path};
    float *whole = train_run(task, train, held, 4, NULL, &keep, ATTN_OK, &err);
    const size_t P = keep.kept.n_params;
    ck_assert_int_eq(keep.kept.epoch, 2);
    /* the file holds the state bit for bit */
    attn_s2s_train_state loaded;
    ck_assert_msg(attn_s2s_checkpoint_load(path, &loaded, &err) == ATTN_OK, "%s", err.msg);
    assert_same_state(&loaded, &keep.kept);
    /* resumed from the file: the same parameters as the uninterrupted run */
    float *resumed = train_run(task, train, held, 4, &loaded, NULL, ATTN_OK, &err);
    tu_assert_identical("resumed run's parameters", resumed, whole, P);
    /* a state from epoch 2 differs from the end: the comparison could fail */
    ck_assert(memcmp(loaded.params, whole, P * sizeof(float)) != 0);
    /* refused: other pairs, fewer epochs than done, another seed (its generator state) */
    free(train_run(task, other, held, 4, &loaded, NULL, ATTN_ERR_VALUE, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "other pairs"));
    free(train_run(task, train, held, 1, &loaded, NULL, ATTN_ERR_VALUE, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "done 2 epochs"));
    loaded.rng_state ^= 1;
    free(train_run(task, train, held, 4, &loaded, NULL, ATTN_ERR_VALUE, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "generator state"));
    loaded.rng_state ^= 1;
    loaded.train_cfg.seed = 5;
    free(train_run(task, train, held, 4, &loaded, NULL, ATTN_ERR_VALUE, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "seed"));
    loaded.train_cfg.seed = 4;
    loaded.model_cfg.task = task == ATTN_TASK_COMPOSE ? ATTN_TASK_REWRITE : ATTN_TASK_COMPOSE;
    free(train_run(task, train, held, 4, &loaded, NULL, ATTN_ERR_VALUE, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "model"));
    attn_s2s_train_state_clear(&loaded);
    attn_s2s_train_state_clear(&keep.kept);
    free(whole);
    free(resumed);
    unlink(path);
    attn_pairs_free(train);
    attn_pairs_free(held);
    attn_pairs_free(other);
}
END_TEST

/* Writes text to path (its checksum tail rewritten when rechecksum) and expects the reader to
 * refuse it with a message naming path and holding msg. */
static void expect_refused(const char *path, char *text, bool rechecksum, const char *msg) {
    const size_t len = strlen(text);
    ck_assert(len > 23);
    if (rechecksum) {
        unsigned long crc = crc32(0L, (const Bytef *)text, (uInt)(len - 23));
        snprintf(text + len - 23, 24, ",\"crc32\":\"0x%08lx\"}\n", crc);
    }
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    attn_s2s_train_state st;
    attn_error err;
    ck_assert_int_ne(attn_s2s_checkpoint_load(path, &st, &err), ATTN_OK);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, msg), "want \"%s\": %s", msg, err.msg);
    ck_assert_ptr_null(st.params);
}

START_TEST(test_checkpoint_reader_refuses) {
    attn_error err;
    attn_pairs *train = NULL, *held = NULL;
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, 40, 3, &train, &err),
                     ATTN_OK);
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_HOLDOUT, 30, 3, &held, &err),
                     ATTN_OK);
    char path[] = "/tmp/attn-s2s-ckpt-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    saved keep = {.at = 1, .path = path};
    free(train_run(ATTN_TASK_REWRITE, train, held, 1, NULL, &keep, ATTN_OK, &err));
    char *text = tu_read_text(path);
    ck_assert_ptr_nonnull(text);
    /* an edit without a new checksum: refused by it */
    char *flipped = tu_replace_once(text, path, "\"adam_step\": 2", "\"adam_step\": 3");
    expect_refused(path, flipped, false, "checksum mismatch");
    free(flipped);
    /* edits with the checksum rewritten: each field is checked, named in the message (the
     * run: 40 pairs in batches of 32, 1 epoch of 1, 2 Adam steps) */
    /* v's first float (its 6 first bytes: 8 base64 characters) made -1 (00 00 80 bf), the
     * second's low bytes 0 */
    char v_from[32];
    const char *v_at = strstr(text, "\"v\": \"");
    ck_assert_ptr_nonnull(v_at);
    snprintf(v_from, sizeof v_from, "%.14s", v_at);
    char best_from[64];
    const char *best_at = strstr(text, "\"best_score\": ");
    ck_assert_ptr_nonnull(best_at);
    snprintf(best_from, sizeof best_from, "%.*s", (int)(strchr(best_at, ',') - best_at + 1),
             best_at);
    const struct {
        const char *from, *to, *msg;
    } edits[] = {
        {"attn-seq2seq-checkpoint-v1", "attn-checkpoint-v1", "not a seq2seq checkpoint"},
        {"\"epoch\": 1", "\"epoch\": -1", "\"epoch\" = -1 is out of range"},
        {"\"n_pairs\"", "\"n_pairz\"", "unknown key \"n_pairz\""},
        {"\"params\": \"", "\"params\": \"AAAA", "\"params\" has the wrong length"},
        {"\"rng_state\": \"0x", "\"rng_state\": \"1x", "\"rng_state\" is malformed"},
        {"\"seed\": \"0x", "\"seed\": \"zz", "\"seed\" is malformed"},
        {"\"adam_step\": 2", "\"adam_step\": 4503599627370496", "\"adam_step\" = 4503599627370496"},
        {"\"adam_step\": 2", "\"adam_step\": 3", "\"adam_step\" = 3, but 1 epoch of 40"},
        {v_from, "\"v\": \"AACAvwAA", "\"v\"[0] = -1 is negative"},
        {"\"lr\": 0.001", "\"lr\": 1e30", "\"lr\" = 1e+30 is out of range (0, 1000]"},
        {"\"lr\": 0.001", "\"lr\": 0", "\"lr\" = 0 is out of range"},
        {"\"beta2\": 0.999", "\"beta2\": 1", "\"beta2\" = 1 is out of range"},
        {"\"eps\": 1e-08", "\"eps\": -1", "\"eps\" = -1 is out of range"},
        {"\"batch_size\": 32", "\"batch_size\": 1073741824",
         "\"batch_size\" = 1073741824 is out of range [1, 65536]"},
        {"\"epochs\": 1,", "\"epochs\": 1073741824,",
         "\"epochs\" = 1073741824 is out of range [0, 100000]"},
        {best_from, "\"best_score\": 2,", "\"best_score\" = 2 is out of range"},
        {"\"n_params\": ", "\"n_params\": 1", "\"n_params\" = 1"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        char *bad = tu_replace_once(text, path, edits[i].from, edits[i].to);
        expect_refused(path, bad, true, edits[i].msg);
        free(bad);
    }
    free(text);
    attn_s2s_train_state_clear(&keep.kept);
    unlink(path);
    attn_pairs_free(train);
    attn_pairs_free(held);
}
END_TEST

int main(void) {
    Suite *s = suite_create("seq2seq_train");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_compose_keeps_the_lowest_held_out_loss);
    tcase_add_test(tc, test_weights_record_the_task);
    tcase_add_loop_test(tc, test_resume_ends_bit_identical, 0, 2);
    tcase_add_test(tc, test_checkpoint_reader_refuses);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
