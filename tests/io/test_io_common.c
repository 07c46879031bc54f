/* test_io_common.c -- the helpers shared by the weights and checkpoint formats (io_internal.h):
 * atomic write + whole-file read round trip (binary bytes, exact length), failures that leave
 * the old file and no .tmp, the model config key sets per arch, and config parsing with
 * REQUIRE_ALL / REJECT_UNKNOWN, each problem naming file and key. */
#include "io_internal.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_dir[256];

static const char *in_tmp(const char *name) {
    static char bufs[4][512];
    static int next;
    char *buf = bufs[next++ % 4];
    snprintf(buf, 512, "%s/%s", tmp_dir, name);
    return buf;
}

START_TEST(test_write_read_round_trip) {
    const char *path = in_tmp("rt.bin");
    const char text[] = "a\0b\n{\"x\": 1}\xff"; /* embedded NUL and a high byte */
    size_t n = sizeof text - 1;
    attn_error err;
    ck_assert_msg(attn_write_file_atomic(path, text, n, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(access(in_tmp("rt.bin.tmp"), F_OK) != 0, ".tmp left behind");
    char *buf = NULL;
    size_t len = 0;
    ck_assert_msg(attn_io_read_file(path, &buf, &len, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_uint_eq(len, n);
    ck_assert(memcmp(buf, text, n) == 0);
    ck_assert_int_eq(buf[len], '\0');
    free(buf);
    /* a file larger than the first read buffer (64 KiB) comes back whole */
    size_t big = 200000;
    char *data = malloc(big);
    ck_assert_ptr_nonnull(data);
    for (size_t i = 0; i < big; i++) data[i] = (char)('a' + i % 23);
    ck_assert(attn_write_file_atomic(path, data, big, &err) == ATTN_OK);
    ck_assert(attn_io_read_file(path, &buf, &len, &err) == ATTN_OK);
    ck_assert_uint_eq(len, big);
    ck_assert(memcmp(buf, data, big) == 0);
    free(buf);
    free(data);
    remove(path);
}
END_TEST

START_TEST(test_write_failures) {
    attn_error err;
    /* a leftover path.tmp (the old fixed name) is in the way of nothing: names are unique */
    const char *path = in_tmp("keep.txt");
    tu_write_file(path, "old\n", 4);
    ck_assert_int_eq(mkdir(in_tmp("keep.txt.tmp"), 0700), 0);
    ck_assert_int_eq(attn_write_file_atomic(path, "new\n", 4, &err), ATTN_OK);
    char *text = tu_read_text(path);
    ck_assert_str_eq(text, "new\n");
    free(text);
    rmdir(in_tmp("keep.txt.tmp"));
    remove(path);
    /* the temporary file cannot be created (no such directory): the message names it */
    ck_assert_int_eq(attn_write_file_atomic(in_tmp("nodir/x.txt"), "x", 1, &err), ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, "nodir/x.txt") && strstr(err.msg, "cannot create"), "%s",
                  err.msg);
    /* a directory is refused, not renamed over; nothing is left beside it */
    const char *dir = in_tmp("adir");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(attn_write_file_atomic(dir, "x", 1, &err), ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, "adir") && strstr(err.msg, "is a directory"), "%s", err.msg);
    ck_assert(access(in_tmp("adir.tmp"), F_OK) != 0);
    rmdir(dir);
    /* reading a missing file */
    char *buf = (char *)1;
    size_t len = 7;
    ck_assert_int_eq(attn_io_read_file(in_tmp("none"), &buf, &len, &err), ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, "none") && strstr(err.msg, "cannot open"), "%s", err.msg);
    ck_assert_ptr_null(buf);
    ck_assert_uint_eq(len, 0);
}
END_TEST

/* Keys of object o joined by ',' into buf. */
static const char *keys_of(const cJSON *o, char *buf, size_t size) {
    buf[0] = '\0';
    const cJSON *it;
    cJSON_ArrayForEach(it, o) {
        strncat(buf, it->string, size - strlen(buf) - 1);
        strncat(buf, ",", size - strlen(buf) - 1);
    }
    return buf;
}

START_TEST(test_config_keys) {
    char buf[256];
    attn_model_config rnn = attn_model_config_default(ATTN_ARCH_RNN);
    attn_model_config tr = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    tr.norm = ATTN_NORM_POST;
    tr.activation = ATTN_ACT_GELU;
    cJSON *o = attn_io_model_config_to_json(&rnn, false);
    ck_assert_str_eq(keys_of(o, buf, sizeof buf),
                     "arch,vocab_size,embed_dim,hidden_size,n_layers,");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "arch")->valuestring, "rnn");
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(o, "hidden_size")->valueint, rnn.hidden_size);
    cJSON_Delete(o);
    o = attn_io_model_config_to_json(&tr, false);
    ck_assert_str_eq(keys_of(o, buf, sizeof buf),
                     "arch,vocab_size,embed_dim,n_heads,ffn_dim,n_layers,max_len,norm,activation,");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "norm")->valuestring, "post");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "activation")->valuestring, "gelu");
    cJSON_Delete(o);
    o = attn_io_model_config_to_json(&rnn, true);
    ck_assert_str_eq(keys_of(o, buf, sizeof buf),
                     "arch,vocab_size,embed_dim,hidden_size,n_heads,ffn_dim,n_layers,max_len,"
                     "norm,activation,");
    /* all keys parse back to the same config, in both modes */
    attn_error err;
    for (unsigned flags = 0; flags < 4; flags++) {
        attn_model_config back;
        memset(&back, 0xab, sizeof back);
        attn_io_problems p = {&err, "f.json", 0, ATTN_OK};
        attn_io_model_config_from_json(o, "model", flags, &back, &p);
        ck_assert_msg(attn_io_problems_finish(&p) == ATTN_OK, "%s", err.msg);
        ck_assert_int_eq(back.arch, rnn.arch);
        ck_assert_int_eq(back.vocab_size, rnn.vocab_size);
        ck_assert_int_eq(back.embed_dim, rnn.embed_dim);
        ck_assert_int_eq(back.hidden_size, rnn.hidden_size);
        ck_assert_int_eq(back.n_layers, rnn.n_layers);
        ck_assert_int_eq(back.max_len, rnn.max_len);
    }
    cJSON_Delete(o);
}
END_TEST

/* Parses text with flags; returns the status, message in err. */
static attn_status parse_text(const char *text, unsigned flags, attn_model_config *cfg,
                              attn_error *err) {
    cJSON *o = cJSON_Parse(text);
    ck_assert_ptr_nonnull(o);
    attn_io_problems p = {err, "f.json", 0, ATTN_OK};
    attn_io_model_config_from_json(o, "model", flags, cfg, &p);
    cJSON_Delete(o);
    return attn_io_problems_finish(&p);
}

START_TEST(test_config_parse_problems) {
    attn_model_config cfg;
    attn_error err;
    /* absent keys default unless REQUIRE_ALL; then each missing one is named */
    ck_assert(parse_text("{\"arch\": \"lstm\", \"embed_dim\": 12}", 0, &cfg, &err) == ATTN_OK);
    attn_model_config def = attn_model_config_default(ATTN_ARCH_LSTM);
    ck_assert_int_eq(cfg.arch, ATTN_ARCH_LSTM);
    ck_assert_int_eq(cfg.embed_dim, 12);
    ck_assert_int_eq(cfg.hidden_size, def.hidden_size);
    ck_assert_int_eq(parse_text("{\"arch\": \"lstm\", \"embed_dim\": 12}",
                                ATTN_IO_CONFIG_REQUIRE_ALL, &cfg, &err),
                     ATTN_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "f.json: model: missing \"vocab_size\"") &&
                      strstr(err.msg, "\"max_len\"") && !strstr(err.msg, "\"embed_dim\""),
                  "%s", err.msg);
    /* unknown keys only with REJECT_UNKNOWN */
    ck_assert(parse_text("{\"arch\": \"rnn\", \"zz\": 1}", 0, &cfg, &err) == ATTN_OK);
    ck_assert_int_eq(
        parse_text("{\"arch\": \"rnn\", \"zz\": 1}", ATTN_IO_CONFIG_REJECT_UNKNOWN, &cfg, &err),
        ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "unknown key \"zz\""), "%s", err.msg);
    /* types and names, all reported at once */
    ck_assert_int_eq(parse_text("{\"arch\": \"transformer\", \"n_heads\": 1.5, \"norm\": \"mid\", "
                                "\"activation\": 3}",
                                0, &cfg, &err),
                     ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "\"n_heads\" must be an integer, got 1.5") &&
                      strstr(err.msg, "\"norm\" is \"mid\"") &&
                      strstr(err.msg, "\"activation\" is not a string"),
                  "%s", err.msg);
    ck_assert_int_eq(parse_text("{\"arch\": \"mamba\"}", 0, &cfg, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "unknown arch \"mamba\""), "%s", err.msg);
    /* a config that parses but does not validate */
    ck_assert_int_eq(parse_text("{\"arch\": \"transformer\", \"n_heads\": 7}", 0, &cfg, &err),
                     ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "f.json: ") && strstr(err.msg, "n_heads"), "%s", err.msg);
}
END_TEST

static Suite *io_common_suite(void) {
    Suite *s = suite_create("io_common");
    TCase *tc = tcase_create("files");
    tcase_add_test(tc, test_write_read_round_trip);
    tcase_add_test(tc, test_write_failures);
    suite_add_tcase(s, tc);
    tc = tcase_create("config");
    tcase_add_test(tc, test_config_keys);
    tcase_add_test(tc, test_config_parse_problems);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite_in_tmp(io_common_suite(), tmp_dir, sizeof tmp_dir, "iocommon");
}
