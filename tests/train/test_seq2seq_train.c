/* test_seq2seq_train.c -- seq2seq training on the compose task: the epoch kept is the one with
 * the lowest held-out loss, the weights file records the task (and a rewrite file stays without
 * the key), and the reader refuses a bad task. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int main(void) {
    Suite *s = suite_create("seq2seq_train");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_compose_keeps_the_lowest_held_out_loss);
    tcase_add_test(tc, test_weights_record_the_task);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
