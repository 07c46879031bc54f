/* test_cli_hostile_io.c -- what the command does with hostile weights and checkpoint files:
 * each is refused with exit code 1 (a bad file, not bad usage) and a message naming the file
 * and the field, without hanging (FIFO) or reading forever (/dev/zero). */
#include "cli_harness.h"

#include <zlib.h>

/* A checkpoint of a 2-epoch tiny run, then `text` edited (old -> rep) with its checksum
 * rewritten, as tmp_path(name). */
static const char *edited_checkpoint(const char *old, const char *rep, const char *name) {
    const char *ck = tmp_path("ck.json");
    if (!exists(ck)) {
        run_result r =
            run(NULL, "train", "--model", "rnn", "--train-size", "120", "--epochs", "2",
                "--holdout", "20", "--checkpoint", ck, "--out", tmp_path("w.json"), NULL);
        expect(&r, "tiny train with checkpoint", 0, NULL);
        run_free(&r);
    }
    char *text = tu_read_text(ck);
    char *out = tu_replace_once(text, ck, old, rep);
    size_t len = strlen(out);
    ck_assert(len > 23);
    unsigned long crc = crc32(0L, (const Bytef *)out, (uInt)(len - 23));
    snprintf(out + len - 23, 24, ",\"crc32\":\"0x%08lx\"}\n", crc);
    const char *path = tmp_path(name);
    write_file(path, out);
    free(out);
    free(text);
    return path;
}

START_TEST(test_cli_checkpoint_epoch_overflow_exit_1) {
    const char *p = edited_checkpoint("\"epoch\":2", "\"epoch\":2147483647", "ep.json");
    run_result r = run(NULL, "train", "--resume", p, "--epochs", "3", NULL);
    expect(&r, "epoch 2147483647", 1, p, "\"epoch\" = 2147483647 is out of range", NULL);
    ck_assert_msg(!strstr(r.out, "-2147483648") && !strstr(r.err, "-2147483648"), "%s", r.err);
    run_free(&r);
}
END_TEST

START_TEST(test_cli_checkpoint_negative_n_sentences_exit_1) {
    const char *p = edited_checkpoint("\"n_sentences\":120", "\"n_sentences\":-5", "n.json");
    run_result r = run(NULL, "train", "--resume", p, "--epochs", "3", NULL);
    expect(&r, "n_sentences -5", 1, p, "\"n_sentences\" = -5", NULL);
    run_free(&r);
    p = edited_checkpoint("\"lr\":0.001", "\"lr\":1e300", "lr.json");
    r = run(NULL, "train", "--resume", p, "--epochs", "3", NULL);
    expect(&r, "lr 1e300", 1, p, "\"lr\"", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_cli_checkpoint_bitflip_exit_1) {
    const char *ck = edited_checkpoint("\"epoch\":2", "\"epoch\":2", "same.json");
    char *text = tu_read_text(ck);
    char *flip = strstr(text, "\"adam_step\":");
    ck_assert_ptr_nonnull(flip);
    flip[12] ^= 1; /* one bit of the step count */
    const char *p = tmp_path("flip.json");
    write_file(p, text);
    free(text);
    run_result r = run(NULL, "train", "--resume", p, "--epochs", "3", NULL);
    expect(&r, "bit flip", 1, p, "checksum mismatch", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_cli_weights_trailing_data_exit_1) {
    char *text = tu_read_text(golden("rnn"));
    size_t len = strlen(text);
    char *two = malloc(2 * len + 1);
    ck_assert_ptr_nonnull(two);
    memcpy(two, text, len);
    memcpy(two + len, text, len + 1);
    const char *p = tmp_path("twice.json");
    write_file(p, two);
    run_result r = run(NULL, "info", "--weights", p, NULL);
    expect(&r, "weights twice", 1, p, "trailing data", NULL);
    run_free(&r);
    free(two);
    free(text);
}
END_TEST

START_TEST(test_cli_fifo_and_dev_zero_refused) {
    const char *fifo = tmp_path("fifo.json");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    run_result r = run(NULL, "info", "--weights", fifo, NULL);
    expect(&r, "FIFO", 1, fifo, "FIFO", NULL);
    run_free(&r);
    r = run(NULL, "train", "--resume", fifo, "--epochs", "3", NULL);
    expect(&r, "FIFO checkpoint", 1, fifo, "only regular files", NULL);
    run_free(&r);
    r = run(NULL, "info", "--weights", "/dev/zero", NULL);
    expect(&r, "/dev/zero", 1, "/dev/zero", "character device", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_cli_huge_config_refused_fast) {
    const char *p = tmp_path("huge.json");
    write_file(p,
               "{\"format\": \"attn-weights-v1\", \"config\": {\"arch\": \"rnn\", \"vocab_size\": "
               "1048576, \"embed_dim\": 4096}, \"tensors\": {}}");
    run_result r = run(NULL, "info", "--weights", p, NULL);
    expect(&r, "huge config", 1, p, "over the limit", "ATTN_MAX_PARAMS", NULL);
    run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cli_hostile_io");
    TCase *tc = tcase_create("cli_hostile_io");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_cli_checkpoint_epoch_overflow_exit_1);
    tcase_add_test(tc, test_cli_checkpoint_negative_n_sentences_exit_1);
    tcase_add_test(tc, test_cli_checkpoint_bitflip_exit_1);
    tcase_add_test(tc, test_cli_weights_trailing_data_exit_1);
    tcase_add_test(tc, test_cli_fifo_and_dev_zero_refused);
    tcase_add_test(tc, test_cli_huge_config_refused_fast);
    suite_add_tcase(s, tc);
    return cli_run_suite_in_tmp(s);
}
