/* test_weights_json.c -- attn-weights-v1 import/export: bit-exact round trips (including
 * subnormals, -0 and extreme magnitudes), one test per error class (status AND a message that
 * names the file and the tensor), all-or-nothing loading, atomic saving, prefix stripping, and
 * the PyTorch-written golden weight files. */
#include "test_util.h"

#include <float.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_dir[256];

/* ---- helpers ------------------------------------------------------------------------------ */

static const char *tmp_file(const char *name) {
    static char bufs[4][512]; /* rotating, so a few paths can be alive at once */
    static int next;
    char *buf = bufs[next++ % 4];
    snprintf(buf, 512, "%s/%d-%s", tmp_dir, (int)getpid(), name);
    return buf;
}

/* Writes `text` to tmp_file(name) and returns the path. */
static const char *write_tmp(const char *name, const char *text) {
    const char *path = tmp_file(name);
    tu_write_file(path, text, strlen(text));
    return path;
}

/* Loads a weights file that must load. */
static attn_model *load_ok(const char *path) {
    attn_model *m = NULL;
    attn_error err;
    ck_assert_msg(attn_weights_load_json(path, &m, &err) == ATTN_OK, "%s", err.msg);
    return m;
}

static float *param(attn_model *m, const char *name) {
    long i = attn_model_tensor_find(m, name);
    ck_assert_msg(i >= 0, "no tensor %s", name);
    return attn_model_params(m) + attn_model_tensor_offset(m, (size_t)i);
}

/* Saves a model of `arch` (head.bias = 0.5, so the text around it is known) and returns the
 * file's text. */
static char *saved_text(attn_arch arch) {
    attn_model *m = tu_model_default(arch, 11);
    param(m, "head.bias")[0] = 0.5f;
    attn_error err;
    const char *path = tmp_file("base.json");
    ck_assert_msg(attn_weights_save_json(m, false, path, &err) == ATTN_OK, "%s", err.msg);
    attn_model_free(m);
    char *text = tu_read_text(path);
    remove(path);
    return text;
}

/* saved_text(arch) with the first `old` replaced by `rep` (old must occur). */
static char *saved_text_edited(attn_arch arch, const char *old, const char *rep) {
    char *base = saved_text(arch);
    char *edited = tu_replace_once(base, "the saved file", old, rep);
    free(base);
    return edited;
}

/* Writes text to a file, loads it, expects status `want` and every fragment in the message
 * (the fragments list ends with NULL). The path itself is always expected in the message. */
static void expect_load_error(const char *text, size_t len, attn_status want, ...) {
    const char *path = tmp_file("bad.json");
    tu_write_file(path, text, len);
    attn_model *m = (attn_model *)&m; /* must be reset to NULL */
    attn_error err = {.status = ATTN_OK};
    attn_status st = attn_weights_load_json(path, &m, &err);
    remove(path);
    ck_assert_msg(st == want, "status %s, want %s; message: %s", attn_status_str(st),
                  attn_status_str(want), err.msg);
    ck_assert_int_eq(err.status, want);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.msg, path) != NULL, "message does not name the file: %s", err.msg);
    va_list ap;
    va_start(ap, want);
    for (const char *frag; (frag = va_arg(ap, const char *)) != NULL;)
        ck_assert_msg(strstr(err.msg, frag) != NULL, "message lacks \"%s\": %s", frag, err.msg);
    va_end(ap);
}

static void expect_error_after(attn_arch arch, const char *old, const char *rep, attn_status want,
                               const char *frag1, const char *frag2) {
    char *bad = saved_text_edited(arch, old, rep);
    expect_load_error(bad, strlen(bad), want, frag1, frag2, (const char *)NULL);
    free(bad);
}

/* ---- round trips -------------------------------------------------------------------------- */

/* Values that are hard to print: subnormals, -0, extremes, and random bit patterns spanning
 * every finite exponent. */
static void fill_hard_values(attn_model *m, uint64_t seed) {
    float *p = attn_model_params(m);
    size_t n = attn_model_n_params(m);
    static const float special[] = {
        -0.0f,           0.0f,        FLT_TRUE_MIN, -FLT_TRUE_MIN,  FLT_MIN,       FLT_MIN * 0.5f,
        1.17549421e-38f, FLT_MAX,     -FLT_MAX,     1e-30f,         3e30f,         0.1f,
        1.0f / 3.0f,     16777217.0f, -1e-40f,      0x1.fffffep-1f, 0x1.000002p0f, 4.2038954e-45f};
    size_t ns = sizeof special / sizeof special[0];
    attn_rng r = attn_rng_seed(seed);
    for (size_t i = 0; i < n; i++) {
        if (i < ns) {
            p[i] = special[i];
            continue;
        }
        uint32_t bits;
        do {
            bits = (uint32_t)attn_rng_next(&r);
        } while (((bits >> 23) & 0xff) == 0xff); /* no NaN/Inf */
        if (i % 3 == 0) bits &= 0x807fffffu;     /* many subnormals */
        memcpy(&p[i], &bits, sizeof bits);
    }
}

static const attn_arch all_archs[] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_TRANSFORMER};

START_TEST(test_round_trip_bit_exact) {
    attn_arch arch = all_archs[_i];
    attn_model *m = tu_model_default(arch, 3);
    fill_hard_values(m, 100 + (uint64_t)_i);
    const char *path = tmp_file("rt.json");
    attn_error err;
    ck_assert_msg(attn_weights_save_json(m, false, path, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(access(tmp_file("rt.json.tmp"), F_OK) != 0, "the .tmp file was left behind");

    attn_model *back = load_ok(path);
    ck_assert_uint_eq(attn_model_n_params(back), attn_model_n_params(m));
    ck_assert(memcmp(attn_model_config_of(back), attn_model_config_of(m),
                     sizeof(attn_model_config)) == 0);
    size_t n = attn_model_n_params(m), same = 0;
    for (size_t i = 0; i < n; i++)
        same += memcmp(&attn_model_params(m)[i], &attn_model_params(back)[i], 4) == 0;
    ck_assert_msg(same == n, "%s: %zu of %zu floats came back bit-identical", attn_arch_name(arch),
                  same, n);

    /* load_into a differently initialised model of the same config gives the same bits. */
    attn_model *into = tu_model_default(arch, 99);
    ck_assert_msg(attn_weights_load_into(into, path, &err) == ATTN_OK, "%s", err.msg);
    ck_assert(memcmp(attn_model_params(into), attn_model_params(m), n * sizeof(float)) == 0);
    remove(path);
    attn_model_free(into);
    attn_model_free(back);
    attn_model_free(m);
}
END_TEST

START_TEST(test_transformer_variants_round_trip) {
    attn_model_config cfg = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    cfg.norm = ATTN_NORM_POST;
    cfg.activation = ATTN_ACT_GELU;
    attn_model *m = tu_model_new(&cfg, 5);
    attn_error err;
    const char *path = tmp_file("post.json");
    ck_assert_msg(attn_weights_save_json(m, false, path, &err) == ATTN_OK, "%s", err.msg);
    attn_model *back = load_ok(path);
    ck_assert_int_eq(attn_model_config_of(back)->norm, ATTN_NORM_POST);
    ck_assert_int_eq(attn_model_config_of(back)->activation, ATTN_ACT_GELU);
    ck_assert_int_lt(attn_model_tensor_find(back, "norm.weight"), 0);
    ck_assert(memcmp(attn_model_params(back), attn_model_params(m),
                     attn_model_n_params(m) * sizeof(float)) == 0);
    remove(path);
    attn_model_free(back);
    attn_model_free(m);
}
END_TEST

/* "pos": written only when not learned (files of learned models read and write as before), read
 * back, and a sinusoidal/none model has no pos_embedding tensor. */
START_TEST(test_pos_round_trip) {
    for (int p = 0; p < ATTN_N_POS; p++) {
        attn_model_config cfg = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
        cfg.pos = (attn_pos)p;
        attn_model *m = tu_model_new(&cfg, 6);
        attn_error err;
        const char *path = tmp_file("pos.json");
        ck_assert_msg(attn_weights_save_json(m, false, path, &err) == ATTN_OK, "%s", err.msg);
        char *text = tu_read_text(path);
        ck_assert_int_eq(strstr(text, "\"pos\"") != NULL, p != ATTN_POS_LEARNED);
        ck_assert_int_eq(strstr(text, "\"pos_embedding\"") != NULL, p == ATTN_POS_LEARNED);
        free(text);
        attn_model *back = load_ok(path);
        ck_assert_int_eq(attn_model_config_of(back)->pos, p);
        ck_assert_uint_eq(attn_model_n_params(back), attn_model_n_params(m));
        ck_assert(memcmp(attn_model_params(back), attn_model_params(m),
                         attn_model_n_params(m) * sizeof(float)) == 0);
        remove(path);
        attn_model_free(back);
        attn_model_free(m);
    }
}
END_TEST

START_TEST(test_config_bad_pos) {
    expect_error_after(ATTN_ARCH_TRANSFORMER, "\"activation\": \"relu\"",
                       "\"activation\": \"relu\", \"pos\": \"xpos\"", ATTN_ERR_VALUE,
                       "\"pos\" is \"xpos\", expected \"learned\", \"sinusoidal\", \"none\", "
                       "\"rope\" or \"alibi\"",
                       NULL);
    /* a learned model's file that says "pos": "sinusoidal" holds a tensor that does not exist */
    expect_error_after(ATTN_ARCH_TRANSFORMER, "\"activation\": \"relu\"",
                       "\"activation\": \"relu\", \"pos\": \"sinusoidal\"", ATTN_ERR_SHAPE,
                       "unexpected tensor \"pos_embedding\"", NULL);
}
END_TEST

/* ---- one test per error class ------------------------------------------------------------- */

START_TEST(test_missing_key) {
    expect_error_after(ATTN_ARCH_RNN, ",\n\"head.bias\": {\"shape\": [1], \"data\": [0.5]}", "",
                       ATTN_ERR_SHAPE, "missing tensor \"head.bias\"", NULL);
}
END_TEST

START_TEST(test_unexpected_key) {
    expect_error_after(ATTN_ARCH_RNN, "\"head.bias\": {",
                       "\"extra.weight\": {\"shape\": [1], \"data\": [1]},\n\"head.bias\": {",
                       ATTN_ERR_SHAPE, "unexpected tensor \"extra.weight\"", NULL);
}
END_TEST

START_TEST(test_wrong_shape) {
    expect_error_after(ATTN_ARCH_LSTM, "\"lstm.weight_ih_l0\": {\"shape\": [128, 16]",
                       "\"lstm.weight_ih_l0\": {\"shape\": [96, 16]", ATTN_ERR_SHAPE,
                       "\"lstm.weight_ih_l0\": expected [128,16], got [96,16]", NULL);
}
END_TEST

START_TEST(test_data_length_mismatch) {
    expect_error_after(ATTN_ARCH_RNN, "\"data\": [0.5]", "\"data\": [0.5, 1]", ATTN_ERR_SHAPE,
                       "\"head.bias\": \"data\" has 2 values", NULL);
}
END_TEST

START_TEST(test_non_number) {
    expect_error_after(ATTN_ARCH_RNN, "\"data\": [0.5]", "\"data\": [\"0.5\"]", ATTN_ERR_VALUE,
                       "\"head.bias\": element 0 is a string", NULL);
}
END_TEST

START_TEST(test_null_value) {
    expect_error_after(ATTN_ARCH_RNN, "\"data\": [0.5]", "\"data\": [null]", ATTN_ERR_VALUE,
                       "\"head.bias\": element 0 is null", NULL);
}
END_TEST

START_TEST(test_nan_literal) {
    expect_error_after(ATTN_ARCH_RNN, "\"data\": [0.5]", "\"data\": [NaN]", ATTN_ERR_PARSE, "NaN",
                       "in tensor \"head.bias\"");
}
END_TEST

START_TEST(test_float_overflow) {
    expect_error_after(ATTN_ARCH_RNN, "\"data\": [0.5]", "\"data\": [1e39]", ATTN_ERR_VALUE,
                       "\"head.bias\": element 0", "Inf");
}
END_TEST

START_TEST(test_config_contradicts_tensors) {
    expect_error_after(ATTN_ARCH_LSTM, "\"hidden_size\": 32", "\"hidden_size\": 24", ATTN_ERR_SHAPE,
                       "\"lstm.weight_ih_l0\": expected [96,16], got [128,16]", "hidden_size 24");
}
END_TEST

START_TEST(test_config_post_norm_has_no_final_norm) {
    expect_error_after(ATTN_ARCH_TRANSFORMER, "\"norm\": \"pre\"", "\"norm\": \"post\"",
                       ATTN_ERR_SHAPE, "unexpected tensor \"norm.weight\"", "norm post");
}
END_TEST

START_TEST(test_config_bad_values) {
    expect_error_after(ATTN_ARCH_RNN, "\"arch\": \"rnn\"", "\"arch\": \"mamba\"", ATTN_ERR_VALUE,
                       "unknown arch \"mamba\"", NULL);
    expect_error_after(ATTN_ARCH_TRANSFORMER, "\"activation\": \"relu\"",
                       "\"activation\": \"swish\", \"depth\": 3", ATTN_ERR_VALUE,
                       "\"activation\" is \"swish\"", "unknown key \"depth\"");
    expect_error_after(ATTN_ARCH_TRANSFORMER, "\"n_heads\": 2", "\"n_heads\": 5", ATTN_ERR_VALUE,
                       "n_heads", NULL);
    expect_error_after(ATTN_ARCH_RNN, "\"arch\": \"rnn\", ", "", ATTN_ERR_VALUE, "missing \"arch\"",
                       NULL);
}
END_TEST

START_TEST(test_config_defaults) {
    /* Only "arch" given: everything else comes from attn_model_config_default. */
    char *tmp = saved_text_edited(ATTN_ARCH_LSTM,
                                  ", \"vocab_size\": 91, \"embed_dim\": 16, "
                                  "\"hidden_size\": 32, \"n_layers\": 1",
                                  "");
    const char *path = write_tmp("defaults.json", tmp);
    attn_model *m = load_ok(path);
    ck_assert_int_eq(attn_model_config_of(m)->hidden_size, 32);
    ck_assert_uint_eq(attn_model_n_params(m), 7889);
    remove(path);
    attn_model_free(m);
    free(tmp);
}
END_TEST

START_TEST(test_unknown_format) {
    expect_error_after(ATTN_ARCH_RNN, "attn-weights-v1", "attn-weights-v2", ATTN_ERR_PARSE,
                       "unknown \"format\" \"attn-weights-v2\"", "attn-weights-v1");
}
END_TEST

START_TEST(test_truncated_file) {
    char *base = saved_text(ATTN_ARCH_TRANSFORMER);
    size_t cut = strlen(base) / 2;
    expect_load_error(base, cut, ATTN_ERR_PARSE, "malformed JSON at byte", "truncated",
                      (const char *)NULL);
    expect_load_error(base, 1, ATTN_ERR_PARSE, "malformed JSON", (const char *)NULL);
    free(base);
}
END_TEST

START_TEST(test_empty_file) {
    expect_load_error("", 0, ATTN_ERR_PARSE, "empty file", (const char *)NULL);
}
END_TEST

START_TEST(test_missing_file) {
    const char *path = tmp_file("does-not-exist.json");
    attn_model *m = NULL;
    attn_error err;
    ck_assert_int_eq(attn_weights_load_json(path, &m, &err), ATTN_ERR_IO);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "cannot open"), "%s", err.msg);
}
END_TEST

START_TEST(test_deep_nesting) {
    /* 200,000 open brackets: cJSON's nesting limit must stop it without a stack overflow. */
    size_t n = 200000;
    char *deep = malloc(n + 1);
    ck_assert_ptr_nonnull(deep);
    memset(deep, '[', n);
    deep[n] = '\0';
    expect_load_error(deep, n, ATTN_ERR_PARSE, "malformed JSON", "nest", (const char *)NULL);
    free(deep);
    /* Nesting inside a tensor's data (within the limit) is a non-number. */
    expect_error_after(ATTN_ARCH_RNN, "\"data\": [0.5]", "\"data\": [[[[[[[[0.5]]]]]]]]",
                       ATTN_ERR_VALUE, "\"head.bias\": element 0 is an array", NULL);
}
END_TEST

START_TEST(test_huge_shape) {
    expect_error_after(ATTN_ARCH_RNN, "\"shape\": [1], \"data\": [0.5]",
                       "\"shape\": [1000000000], \"data\": [0.5]", ATTN_ERR_SHAPE,
                       "\"head.bias\": expected [1], got [1000000000]", NULL);
    expect_error_after(ATTN_ARCH_RNN, "\"shape\": [1], \"data\": [0.5]",
                       "\"shape\": [1000000000, 1000000000, 1000000000], \"data\": [0.5]",
                       ATTN_ERR_SHAPE, "got [1000000000,1000000000,1000000000]", NULL);
    expect_error_after(ATTN_ARCH_RNN, "\"shape\": [1], \"data\": [0.5]",
                       "\"shape\": [1e300], \"data\": [0.5]", ATTN_ERR_SHAPE,
                       "\"head.bias\": shape holds a non-integer", NULL);
}
END_TEST

START_TEST(test_all_problems_reported) {
    char *a = saved_text_edited(ATTN_ARCH_LSTM, "\"lstm.weight_hh_l0\": {\"shape\": [128, 32]",
                                "\"lstm.weight_hh_l0\": {\"shape\": [32, 128]");
    char *b = tu_replace_once(a, "the saved file", "\"lstm.bias_ih_l0\"", "\"lstm.bias_ih_l1\"");
    expect_load_error(b, strlen(b), ATTN_ERR_SHAPE, "\"lstm.weight_hh_l0\": expected [128,32]",
                      "unexpected tensor \"lstm.bias_ih_l1\"", "missing tensor \"lstm.bias_ih_l0\"",
                      (const char *)NULL);
    free(b);
    free(a);
}
END_TEST

START_TEST(test_nothing_half_loaded) {
    /* A file whose last tensor is bad must leave load_into's model untouched. */
    char *bad = saved_text_edited(ATTN_ARCH_RNN, "\"data\": [0.5]", "\"data\": [null]");
    const char *path = write_tmp("half.json", bad);
    attn_model *m = tu_model_default(ATTN_ARCH_RNN, 77);
    size_t n = attn_model_n_params(m);
    float *before = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(before);
    memcpy(before, attn_model_params(m), n * sizeof(float));
    attn_error err;
    ck_assert_int_eq(attn_weights_load_into(m, path, &err), ATTN_ERR_VALUE);
    ck_assert(memcmp(before, attn_model_params(m), n * sizeof(float)) == 0);
    /* load_into also refuses a file describing another model. */
    char *other = saved_text(ATTN_ARCH_LSTM);
    tu_write_file(path, other, strlen(other));
    ck_assert_int_eq(attn_weights_load_into(m, path, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "arch \"lstm\""), "%s", err.msg);
    ck_assert(memcmp(before, attn_model_params(m), n * sizeof(float)) == 0);
    remove(path);
    free(other);
    free(before);
    attn_model_free(m);
    free(bad);
}
END_TEST

/* The log hook's last message (the library logs only through attn_set_log). */
typedef struct log_capture {
    int n;
    attn_log_level level;
    char msg[1024];
} log_capture;

static void capture_log(attn_log_level level, const char *msg, void *user) {
    log_capture *c = user;
    c->n++;
    c->level = level;
    snprintf(c->msg, sizeof c->msg, "%s", msg);
}

START_TEST(test_prefix_stripping) {
    log_capture logged = {0};
    attn_set_log(capture_log, &logged);
    char *a =
        saved_text_edited(ATTN_ARCH_RNN, "\"embedding.weight\"", "\"module.embedding.weight\"");
    char *b =
        tu_replace_once(a, "the saved file", "\"head.bias\"", "\"_orig_mod.module.head.bias\"");
    const char *path = write_tmp("prefix.json", b);
    attn_model *m = load_ok(path);
    attn_set_log(NULL, NULL);
    /* one log line naming the file and how many names were stripped */
    ck_assert_int_eq(logged.n, 1);
    ck_assert_int_eq(logged.level, ATTN_LOG_INFO);
    ck_assert_msg(strstr(logged.msg, "prefix.json") && strstr(logged.msg, "2 of 7"), "%s",
                  logged.msg);
    ck_assert(param(m, "head.bias")[0] == 0.5f);
    attn_model *ref = tu_model_default(ATTN_ARCH_RNN, 11); /* saved_text's seed */
    ck_assert(memcmp(param(m, "embedding.weight"), param(ref, "embedding.weight"),
                     91 * 16 * sizeof(float)) == 0);
    remove(path);
    attn_model_free(ref);
    attn_model_free(m);
    free(b);
    free(a);
}
END_TEST

/* ---- saving ------------------------------------------------------------------------------- */

START_TEST(test_save_refuses_nan_keeps_old_file) {
    attn_model *m = tu_model_default(ATTN_ARCH_RNN, 1);
    const char *path = tmp_file("keep.json");
    char path_copy[512];
    snprintf(path_copy, sizeof path_copy, "%s", path);
    attn_error err;
    ck_assert(attn_weights_save_json(m, false, path_copy, &err) == ATTN_OK);
    char *before = tu_read_text(path_copy);
    param(m, "rnn.weight_hh_l0")[7] = NAN;
    ck_assert_int_eq(attn_weights_save_json(m, false, path_copy, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "rnn.weight_hh_l0") && strstr(err.msg, "NaN"), "%s", err.msg);
    param(m, "rnn.weight_hh_l0")[7] = -INFINITY;
    ck_assert_int_eq(attn_weights_save_json(m, false, path_copy, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "rnn.weight_hh_l0") && strstr(err.msg, "Inf"), "%s", err.msg);
    char *after = tu_read_text(path_copy);
    ck_assert_str_eq(before, after);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path_copy);
    ck_assert_msg(access(tmp, F_OK) != 0, "%s left behind", tmp);
    remove(path_copy);
    free(before);
    free(after);
    attn_model_free(m);
}
END_TEST

START_TEST(test_save_io_errors) {
    attn_model *m = tu_model_default(ATTN_ARCH_RNN, 1);
    attn_error err;
    ck_assert_int_eq(attn_weights_save_json(m, false, "/nonexistent-dir/x.json", &err),
                     ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, "/nonexistent-dir/x.json"), "%s", err.msg);
    /* A directory is refused: no tmp file, the directory stays. */
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_file("dir.json"));
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(attn_weights_save_json(m, false, dir, &err), ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, "is a directory"), "%s", err.msg);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", dir);
    ck_assert(access(tmp, F_OK) != 0);
    rmdir(dir);
    /* No gradients yet. */
    ck_assert_int_eq(attn_weights_save_json(m, true, tmp_file("g.json"), &err), ATTN_ERR_ARG);
    attn_model_free(m);
}
END_TEST

/* ---- golden files written by tools/make_golden.py (PyTorch) ------------------------------ */

static const struct {
    const char *name;
    attn_arch arch;
    attn_norm norm;
    attn_activation act;
    size_t n_params;
} goldens[] = {
    {"rnn", ATTN_ARCH_RNN, ATTN_NORM_PRE, ATTN_ACT_RELU, 3089},
    {"lstm", ATTN_ARCH_LSTM, ATTN_NORM_PRE, ATTN_ACT_RELU, 7889},
    {"transformer", ATTN_ARCH_TRANSFORMER, ATTN_NORM_PRE, ATTN_ACT_RELU, 22689},
    {"transformer_gelu", ATTN_ARCH_TRANSFORMER, ATTN_NORM_PRE, ATTN_ACT_GELU, 22689},
    {"transformer_post", ATTN_ARCH_TRANSFORMER, ATTN_NORM_POST, ATTN_ACT_RELU, 22689 - 64},
};

START_TEST(test_golden_files_load) {
    const char *kinds[] = {"weights", "grads"};
    for (int k = 0; k < 2; k++) {
        char rel[256];
        snprintf(rel, sizeof rel, "weights/golden/%s.%s.json", goldens[_i].name, kinds[k]);
        attn_model *m = load_ok(tu_source_path(rel));
        const attn_model_config *c = attn_model_config_of(m);
        ck_assert_int_eq(c->arch, goldens[_i].arch);
        ck_assert_uint_eq(attn_model_n_params(m), goldens[_i].n_params);
        if (c->arch == ATTN_ARCH_TRANSFORMER) {
            ck_assert_int_eq(c->norm, goldens[_i].norm);
            ck_assert_int_eq(c->activation, goldens[_i].act);
        }
        /* The goldens perturb every bias: none of them may have come back as all zeros. */
        if (k == 0) {
            float *hb = param(m, "head.bias");
            ck_assert(hb[0] != 0.0f);
        }
        attn_model_free(m);
    }
}
END_TEST

static Suite *weights_json_suite(void) {
    Suite *s = suite_create("io/weights_json");
    TCase *tc = tcase_create("round_trip");
    tcase_add_loop_test(tc, test_round_trip_bit_exact, 0, 3);
    tcase_add_test(tc, test_transformer_variants_round_trip);
    tcase_add_test(tc, test_pos_round_trip);
    tcase_add_test(tc, test_config_bad_pos);
    tcase_add_test(tc, test_prefix_stripping);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_missing_key);
    tcase_add_test(tc, test_unexpected_key);
    tcase_add_test(tc, test_wrong_shape);
    tcase_add_test(tc, test_data_length_mismatch);
    tcase_add_test(tc, test_non_number);
    tcase_add_test(tc, test_null_value);
    tcase_add_test(tc, test_nan_literal);
    tcase_add_test(tc, test_float_overflow);
    tcase_add_test(tc, test_config_contradicts_tensors);
    tcase_add_test(tc, test_config_post_norm_has_no_final_norm);
    tcase_add_test(tc, test_config_bad_values);
    tcase_add_test(tc, test_config_defaults);
    tcase_add_test(tc, test_unknown_format);
    tcase_add_test(tc, test_truncated_file);
    tcase_add_test(tc, test_empty_file);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_huge_shape);
    tcase_add_test(tc, test_all_problems_reported);
    tcase_add_test(tc, test_nothing_half_loaded);
    suite_add_tcase(s, tc);

    tc = tcase_create("save");
    tcase_add_test(tc, test_save_refuses_nan_keeps_old_file);
    tcase_add_test(tc, test_save_io_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("golden");
    tcase_add_loop_test(tc, test_golden_files_load, 0, 5);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite_in_tmp(weights_json_suite(), tmp_dir, sizeof tmp_dir, "io");
}
