/* test_hostile_io.c -- the loaders against hostile files, one regression test per defect:
 * only regular files are read (FIFO, /dev/zero) and only up to the size limit; the JSON is
 * parsed strictly (trailing data, leading zeros, other non-JSON numbers); a config's parameter
 * count is checked before anything is allocated; "data_b64" tensors round-trip bit for bit;
 * checkpoints carry a CRC-32 (every single-bit flip is refused) and every field is checked
 * against its range, naming it; parse errors give the byte offset. */
#include "io_internal.h"
#include "test_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char tmp_dir[256];

static const char *tmp_file(const char *name) {
    static char bufs[4][512];
    static int next;
    char *buf = bufs[next++ % 4];
    snprintf(buf, 512, "%s/%s", tmp_dir, name);
    return buf;
}

/* Loads weights from text (len bytes), expects `want` and `frag` in the message. */
static void expect_weights_error(const char *text, size_t len, attn_status want, const char *frag) {
    const char *path = tmp_file("w.json");
    tu_write_file(path, text, len);
    attn_model *m = NULL;
    attn_error err = {.status = ATTN_OK};
    attn_status st = attn_weights_load_json(path, &m, &err);
    remove(path);
    ck_assert_msg(st == want, "status %s, want %s: %s", attn_status_str(st), attn_status_str(want),
                  err.msg);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.msg, path), "message does not name the file: %s", err.msg);
    ck_assert_msg(strstr(err.msg, frag), "message lacks \"%s\": %s", frag, err.msg);
}

/* The text of a saved default model of arch. */
static char *saved_weights(attn_arch arch, attn_weights_encoding enc, size_t *len) {
    attn_model *m = tu_model_default(arch, 3);
    const char *path = tmp_file("saved.json");
    attn_error err;
    ck_assert_msg(attn_weights_save_json_as(m, false, enc, path, &err) == ATTN_OK, "%s", err.msg);
    attn_model_free(m);
    char *text = tu_read_file(path, len);
    remove(path);
    return text;
}

/* ---- reading files ----------------------------------------------------------------------- */

START_TEST(test_read_fifo_refused) {
    const char *path = tmp_file("fifo");
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    attn_model *m = NULL;
    attn_error err;
    /* without O_NONBLOCK the open would block forever: no writer ever comes */
    ck_assert_int_eq(attn_weights_load_json(path, &m, &err), ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "FIFO") &&
                      strstr(err.msg, "only regular files"),
                  "%s", err.msg);
    attn_model_config mc;
    attn_train_config tc;
    ck_assert_int_eq(attn_checkpoint_peek(path, &mc, &tc, NULL, &err), ATTN_ERR_IO);
    remove(path);
}
END_TEST

START_TEST(test_read_dev_zero_refused) {
    const char *path = tmp_file("zero.json");
    ck_assert_int_eq(symlink("/dev/zero", path), 0);
    char *buf = NULL;
    size_t len = 0;
    attn_error err;
    ck_assert_int_eq(attn_io_read_file(path, &buf, &len, &err), ATTN_ERR_IO);
    ck_assert_ptr_null(buf);
    ck_assert_msg(strstr(err.msg, "character device"), "%s", err.msg);
    attn_model *m = NULL;
    ck_assert_int_eq(attn_weights_load_json(path, &m, &err), ATTN_ERR_IO);
    ck_assert_int_eq(attn_io_read_file(tmp_dir, &buf, &len, &err), ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, "a directory"), "%s", err.msg);
    remove(path);
}
END_TEST

START_TEST(test_read_size_limit) {
    ck_assert_uint_eq(attn_io_max_file_bytes(), ATTN_MAX_FILE_BYTES_DEFAULT);
    size_t len = 0;
    char *text = saved_weights(ATTN_ARCH_RNN, ATTN_WEIGHTS_TEXT, &len);
    const char *path = tmp_file("big.json");
    tu_write_file(path, text, len);
    setenv("ATTN_MAX_FILE_BYTES", "1000", 1);
    ck_assert_uint_eq(attn_io_max_file_bytes(), 1000);
    attn_model *m = NULL;
    attn_error err;
    ck_assert_int_eq(attn_weights_load_json(path, &m, &err), ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "limit of 1000 bytes") &&
                      strstr(err.msg, "ATTN_MAX_FILE_BYTES") &&
                      strstr(err.msg, "attn convert IN OUT.safetensors"),
                  "%s", err.msg);
    ck_assert_int_eq(attn_weights_load_json_from_buffer(text, len, "buf", &m, &err), ATTN_ERR_IO);
    setenv("ATTN_MAX_FILE_BYTES", "-3", 1); /* not a positive integer: the default */
    ck_assert_uint_eq(attn_io_max_file_bytes(), ATTN_MAX_FILE_BYTES_DEFAULT);
    unsetenv("ATTN_MAX_FILE_BYTES");
    ck_assert_msg(attn_weights_load_json(path, &m, &err) == ATTN_OK, "%s", err.msg);
    attn_model_free(m);
    remove(path);
    free(text);
}
END_TEST

/* Out of memory while parsing is reported as such, not as malformed JSON: the address space
 * is limited (in this test's own forked process) to what is in use plus 256 MiB, and a valid
 * 40 MB array of zeros needs about 1.3 GB of cJSON nodes. Not under AddressSanitizer, whose
 * shadow memory needs the address space. */
START_TEST(test_read_oom_reported_as_such) {
#if defined(__SANITIZE_ADDRESS__)
    return;
#else
    size_t n = 20u << 20, len = 2 * n + 1;
    char *text = malloc(len + 1);
    ck_assert_ptr_nonnull(text);
    text[0] = '[';
    for (size_t i = 0; i < n; i++) {
        text[1 + 2 * i] = '0';
        text[2 + 2 * i] = i + 1 < n ? ',' : ']';
    }
    text[len] = '\0';
    FILE *f = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(f);
    unsigned long pages = 0;
    ck_assert_int_eq(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_AS, &rl), 0);
    rl.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (256u << 20);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &rl), 0);
    cJSON *doc = NULL;
    size_t at = 0;
    const char *why = NULL;
    attn_status st = attn_io_json_parse(text, len, &doc, &at, &why);
    ck_assert_msg(st == ATTN_ERR_NOMEM, "status %s: %s", attn_status_str(st), why ? why : "");
    ck_assert_ptr_null(doc);
    ck_assert_msg(strstr(why, "out of memory"), "%s", why);
    free(text);
#endif
}
END_TEST

/* ---- strict JSON ------------------------------------------------------------------------- */

START_TEST(test_json_strict_grammar) {
    static const struct {
        const char *text;
        const char *why; /* NULL: valid */
        size_t at;
    } cases[] = {
        {"[007]", "leading zero", 1},
        {"[-01]", "leading zero", 1},
        {"[1.]", "no digit after '.'", 3},
        {"[.5]", "unexpected character", 1},
        {"[+1]", "unexpected character", 1},
        {"[1e]", "exponent", 3},
        {"[-]", "'-' without digits", 2},
        {"[1,]", "unexpected character", 3},
        {"{\"a\":1,}", "expected a string key", 7},
        {"{\"a\" 1}", "expected ':'", 5},
        {"[1 2]", "expected ',' or ']'", 3},
        {"\"\\x\"", "bad escape", 2},
        {"\"\\ud800\"", "high surrogate", 7},
        {"\"\\udc00\"", "lone low surrogate", 7},
        {"\"a\tb\"", "control character", 2},
        {"[1] x", "trailing data", 4},
        {"[1][1]", "trailing data", 3},
        {"[tru]", "unexpected character", 1},
        {"[1", "unexpected end", 2},
        {"", "unexpected end", 0},
        {"[NaN]", "unexpected character", 1},
        {"[0.1234567890123456789012345678901234567890123456789012345678901234]", "longer than 63",
         1},
        /* strings are valid UTF-8 (RFC 8259 §8.1): stray, overlong, surrogate, too large, cut */
        {"[\"a\x80\"]", "invalid UTF-8", 3},
        {"[\"\xc0\xaf\"]", "invalid UTF-8", 2},
        {"[\"\xed\xa0\x80\"]", "invalid UTF-8", 2},
        {"[\"\xf4\x90\x80\x80\"]", "invalid UTF-8", 2},
        {"[\"\xe2\x82\"]", "invalid UTF-8", 2},
        {"{\"caf\xe9\": 1}", "invalid UTF-8", 5},
        /* no two members of one object share a name (I-JSON), compared after unescaping; the
         * position is the later key's; the first such object in text order is named */
        {"{\"a\": 1, \"b\": 2, \"a\": 3}", "duplicate key", 17},
        {"{\"a\": 1, \"\\u0061\": 2}", "duplicate key", 9},
        {"[{\"x\": {\"c\": 1, \"c\": 2}}, {\"x\": 1, \"x\": 2}]", "duplicate key", 16},
        {"{\"a\": {\"a\": 1}, \"b\": [{\"a\": 1}, {\"a\": 2}], \"c\": {\"d\": 1, \"e\": 2}}", NULL,
         0},
        {"[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]", NULL, 0},
        {" [true, false, null, -0.5e+10, 0, 1E-3, \"\\u00e9\\ud83d\\ude00\"] \n", NULL, 0},
        {"{\"a\": {\"b\": []}, \"c\": {}}", NULL, 0},
        /* a key twice in one object (after unescaping) is refused; in two objects it is not */
        {"{\"a\": 1, \"b\": 2, \"a\" : 3}", "duplicate key in an object", 17},
        {"[{\"x\": {\"k\": 1, \"k\": 1}}]", "duplicate key in an object", 16},
        {"{\"a\": 1, \"\\u0061\": 2}", "duplicate key in an object", 9},
        {"{\"a\": {\"a\": 1}, \"b\": {\"a\": 2}}", NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *doc = NULL;
        size_t at = 99;
        const char *why = NULL;
        attn_status st = attn_io_json_parse(cases[i].text, strlen(cases[i].text), &doc, &at, &why);
        if (!cases[i].why) {
            ck_assert_msg(st == ATTN_OK && doc, "case %zu (%s): %s", i, cases[i].text, why);
            cJSON_Delete(doc);
            continue;
        }
        ck_assert_msg(st == ATTN_ERR_PARSE && !doc, "case %zu (%s) accepted", i, cases[i].text);
        ck_assert_msg(strstr(why, cases[i].why), "case %zu: \"%s\" lacks \"%s\"", i, why,
                      cases[i].why);
        ck_assert_msg(at == cases[i].at, "case %zu: at %zu, want %zu", i, at, cases[i].at);
    }
    /* NUL then garbage after the value */
    cJSON *doc = NULL;
    size_t at = 0;
    const char *why = NULL;
    ck_assert_int_eq(attn_io_json_parse("[1]\0xyz", 7, &doc, &at, &why), ATTN_ERR_PARSE);
    ck_assert_uint_eq(at, 3);
    /* nesting: cJSON's limit is allowed, one more is refused before cJSON sees it */
    char deep[2 * CJSON_NESTING_LIMIT + 3];
    for (int n = CJSON_NESTING_LIMIT; n <= CJSON_NESTING_LIMIT + 1; n++) {
        memset(deep, '[', (size_t)n);
        memset(deep + n, ']', (size_t)n);
        attn_status st = attn_io_json_parse(deep, 2 * (size_t)n, &doc, &at, &why);
        ck_assert_int_eq(st, n == CJSON_NESTING_LIMIT ? ATTN_OK : ATTN_ERR_PARSE);
        cJSON_Delete(doc);
    }
}
END_TEST

START_TEST(test_weights_trailing_data) {
    size_t len = 0;
    char *text = saved_weights(ATTN_ARCH_LSTM, ATTN_WEIGHTS_TEXT, &len);
    char *bad = malloc(2 * len + 16);
    ck_assert_ptr_nonnull(bad);
    memcpy(bad, text, len);
    memcpy(bad + len, "xyz", 3);
    expect_weights_error(bad, len + 3, ATTN_ERR_PARSE, "trailing data");
    memcpy(bad + len, text, len); /* a second copy */
    expect_weights_error(bad, 2 * len, ATTN_ERR_PARSE, "trailing data");
    memcpy(bad + len, "\0\0garbage", 9);
    expect_weights_error(bad, len + 9, ATTN_ERR_PARSE, "trailing data");
    char want[64];
    snprintf(want, sizeof want, "at byte %zu", len);
    expect_weights_error(bad, len + 9, ATTN_ERR_PARSE, want);
    free(bad);
    free(text);
}
END_TEST

START_TEST(test_weights_leading_zero_number) {
    const char *text = "{\"format\": \"attn-weights-v1\", \"config\": {\"arch\": \"rnn\", "
                       "\"vocab_size\": 091}, \"tensors\": {}}";
    expect_weights_error(text, strlen(text), ATTN_ERR_PARSE, "leading zero");
    char frag[32];
    snprintf(frag, sizeof frag, "at byte %zu", (size_t)(strstr(text, "091") - text));
    expect_weights_error(text, strlen(text), ATTN_ERR_PARSE, frag);
}
END_TEST

START_TEST(test_weights_negative_shape_says_negative) {
    size_t len = 0;
    char *text = saved_weights(ATTN_ARCH_RNN, ATTN_WEIGHTS_TEXT, &len);
    char *bad = tu_replace_once(text, "weights", "\"head.bias\": {\"shape\": [1]",
                                "\"head.bias\": {\"shape\": [-1]");
    expect_weights_error(bad, strlen(bad), ATTN_ERR_SHAPE, "shape holds a negative number");
    free(bad);
    free(text);
}
END_TEST

/* ---- parameter count before allocation --------------------------------------------------- */

START_TEST(test_config_huge_vocab_rejected_before_alloc) {
    /* the 119-byte file: 1048576 x 512 embedding = 537M parameters, no tensors */
    const char *text = "{\"format\": \"attn-weights-v1\", \"config\": {\"arch\": \"rnn\", "
                       "\"vocab_size\": 1048576, \"embed_dim\": 512}, \"tensors\": {}}";
    attn_model_config c = attn_model_config_default(ATTN_ARCH_RNN);
    c.vocab_size = 1048576;
    c.embed_dim = 512;
    size_t need = attn_model_config_n_params(&c);
    ck_assert_uint_gt(need, ATTN_MAX_PARAMS_DEFAULT);
    char frag[128];
    snprintf(frag, sizeof frag, "%zu parameters, over the limit of %zu", need,
             (size_t)ATTN_MAX_PARAMS_DEFAULT);
    expect_weights_error(text, strlen(text), ATTN_ERR_VALUE, frag);
    expect_weights_error(text, strlen(text), ATTN_ERR_VALUE, "ATTN_MAX_PARAMS");
    /* with the limit raised, the tensors (none) still disagree before anything is allocated:
     * 537M parameters (2 GB) would make the allocation below fail or be slow; the message
     * comes from the check before it */
    setenv("ATTN_MAX_PARAMS", "100000000000", 1);
    expect_weights_error(text, strlen(text), ATTN_ERR_SHAPE, "the tensors hold only 0 values");
    unsetenv("ATTN_MAX_PARAMS");
    /* the same config in a checkpoint's model block */
    attn_model_config mc;
    attn_train_config tc;
    const char *ck = "{\"format\":\"attn-checkpoint-v1\",\"model\":{\"arch\":\"rnn\","
                     "\"vocab_size\":1048576,\"embed_dim\":4096,\"hidden_size\":32,\"n_heads\":2,"
                     "\"ffn_dim\":64,\"n_layers\":1,\"max_len\":81,\"norm\":\"pre\","
                     "\"activation\":\"relu\"},\"train\":{\"adam\":{}}";
    char file[1024];
    snprintf(file, sizeof file, "%s", ck);
    size_t n = strlen(file);
    unsigned long crc = crc32(0L, (const Bytef *)file, (uInt)n);
    snprintf(file + n, sizeof file - n, ",\"crc32\":\"0x%08lx\"}\n", crc);
    const char *path = tmp_file("huge-ck.json");
    tu_write_file(path, file, strlen(file));
    attn_error err;
    ck_assert_int_eq(attn_checkpoint_peek(path, &mc, &tc, NULL, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "over the limit") && strstr(err.msg, "model"), "%s", err.msg);
    remove(path);
}
END_TEST

START_TEST(test_max_params_env) {
    size_t len = 0;
    char *text = saved_weights(ATTN_ARCH_TRANSFORMER, ATTN_WEIGHTS_TEXT, &len);
    setenv("ATTN_MAX_PARAMS", "1000", 1);
    expect_weights_error(text, len, ATTN_ERR_VALUE, "over the limit of 1000");
    unsetenv("ATTN_MAX_PARAMS");
    attn_model *m = NULL;
    attn_error err;
    ck_assert_msg(attn_weights_load_json_from_buffer(text, len, NULL, &m, &err) == ATTN_OK, "%s",
                  err.msg);
    ck_assert_uint_eq(attn_model_n_params(m), attn_model_config_n_params(attn_model_config_of(m)));
    attn_model_free(m);
    free(text);
}
END_TEST

/* ---- data_b64 ---------------------------------------------------------------------------- */

START_TEST(test_b64_roundtrip_bit_exact) {
    static const attn_arch archs[] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_TRANSFORMER};
    attn_arch arch = archs[_i];
    attn_model *m = tu_model_default(arch, 17);
    float *p = attn_model_params(m);
    size_t n = attn_model_n_params(m);
    static const float special[] = {-0.0f, FLT_TRUE_MIN, -FLT_MAX, FLT_MAX, FLT_MIN, 0.1f};
    attn_rng r = attn_rng_seed(5);
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        do {
            bits = (uint32_t)attn_rng_next(&r);
        } while (((bits >> 23) & 0xff) == 0xff);
        memcpy(&p[i], &bits, sizeof bits);
        if (i < sizeof special / sizeof special[0]) p[i] = special[i];
    }
    const char *b64 = tmp_file("b64.json"), *txt = tmp_file("txt.json");
    attn_error err;
    ck_assert_msg(attn_weights_save_json_as(m, false, ATTN_WEIGHTS_B64, b64, &err) == ATTN_OK, "%s",
                  err.msg);
    ck_assert(attn_weights_save_json(m, false, txt, &err) == ATTN_OK);
    attn_model *back = NULL;
    ck_assert_msg(attn_weights_load_json(b64, &back, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_uint_eq(attn_model_n_params(back), n);
    ck_assert(memcmp(attn_model_params(back), p, n * sizeof(float)) == 0);
    /* the compact file is less than half the text one, and holds no "data" arrays */
    size_t lb = 0, lt = 0;
    char *tb = tu_read_file(b64, &lb), *tt = tu_read_file(txt, &lt);
    ck_assert_msg(2 * lb < lt, "b64 %zu bytes, text %zu", lb, lt);
    ck_assert(strstr(tb, "\"data_b64\": \"") && !strstr(tb, "\"data\""));
    /* load_into reads it too */
    attn_model *into = tu_model_default(arch, 1);
    ck_assert_msg(attn_weights_load_into(into, b64, &err) == ATTN_OK, "%s", err.msg);
    ck_assert(memcmp(attn_model_params(into), p, n * sizeof(float)) == 0);
    free(tb);
    free(tt);
    attn_model_free(into);
    attn_model_free(back);
    attn_model_free(m);
    remove(b64);
    remove(txt);
}
END_TEST

/* Known vectors: 1.0f = 00 00 80 3f (little-endian) = "AACAPw==". */
START_TEST(test_b64_known_vector_and_errors) {
    attn_model *m = tu_model_default(ATTN_ARCH_RNN, 3);
    attn_model_params(
        m)[attn_model_tensor_offset(m, (size_t)attn_model_tensor_find(m, "head.bias"))] = 1.0f;
    const char *path = tmp_file("kv.json");
    attn_error err;
    ck_assert(attn_weights_save_json_as(m, false, ATTN_WEIGHTS_B64, path, &err) == ATTN_OK);
    attn_model_free(m);
    char *text = tu_read_text(path);
    remove(path);
    const char *hb = "\"head.bias\": {\"shape\": [1], \"data_b64\": \"AACAPw==\"}";
    ck_assert_msg(strstr(text, hb), "%s", text + strlen(text) - 80);
    static const struct {
        const char *rep;
        attn_status st;
        const char *frag;
    } bad[] = {
        {"\"head.bias\": {\"shape\": [1], \"data_b64\": \"AACAP===\"}", ATTN_ERR_PARSE,
         "character 5 is not base64"},
        {"\"head.bias\": {\"shape\": [1], \"data_b64\": \"AAC*Pw==\"}", ATTN_ERR_PARSE,
         "character 3 is not base64"},
        {"\"head.bias\": {\"shape\": [1], \"data_b64\": \"AACAPw\"}", ATTN_ERR_SHAPE,
         "has 6 characters, shape [1] needs 8"},
        {"\"head.bias\": {\"shape\": [1], \"data_b64\": \"AADAfw==\"}", ATTN_ERR_VALUE,
         "element 0 is NaN"},
        {"\"head.bias\": {\"shape\": [1], \"data_b64\": \"AACAfw==\"}", ATTN_ERR_VALUE,
         "element 0 is Inf"},
        {"\"head.bias\": {\"shape\": [1], \"data_b64\": \"AACAPw==\", \"data\": [1]}",
         ATTN_ERR_PARSE, "\"data_b64\": \"..\"}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *t = tu_replace_once(text, "b64 weights", hb, bad[i].rep);
        expect_weights_error(t, strlen(t), bad[i].st, bad[i].frag);
        free(t);
    }
    free(text);
}
END_TEST

START_TEST(test_weights_from_buffer_not_nul_terminated) {
    size_t len = 0;
    char *text = saved_weights(ATTN_ARCH_RNN, ATTN_WEIGHTS_B64, &len);
    char *copy = malloc(len); /* exactly len bytes: no NUL after them (ASan checks) */
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, text, len);
    attn_model *m = NULL;
    attn_error err;
    ck_assert_msg(attn_weights_load_json_from_buffer(copy, len, "mem", &m, &err) == ATTN_OK, "%s",
                  err.msg);
    attn_model_free(m);
    /* cut short: an error naming the buffer, with the offset */
    ck_assert_int_eq(attn_weights_load_json_from_buffer(copy, len / 2, "mem", &m, &err),
                     ATTN_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "mem: malformed JSON at byte"), "%s", err.msg);
    ck_assert_ptr_null(m);
    free(copy);
    free(text);
}
END_TEST

/* ---- checkpoints ------------------------------------------------------------------------- */

static attn_dataset *ck_data;
static attn_model *ck_model;
static attn_trainer *ck_trainer;
static char *ck_text; /* a checkpoint after 2 of 3 epochs */
static size_t ck_len;

static bool stop_after_two(const attn_epoch_stats *st, void *user) {
    (void)user;
    return st->epoch < 2;
}

static void ck_setup(void) {
    attn_set_num_threads(1);
    ck_data = tu_train_data(80, 5);
    attn_train_config cfg = attn_train_config_default();
    cfg.epochs = 3;
    cfg.holdout = 16;
    cfg.batch_size = 16;
    cfg.seed = 42;
    ck_model = tu_model_default(ATTN_ARCH_RNN, 9);
    ck_trainer = tu_trainer_new(ck_model, ck_data, &cfg);
    attn_error err;
    /* two epochs, then the state as a file */
    attn_train_callbacks cb = {.on_epoch = stop_after_two};
    ck_assert(attn_trainer_run(ck_trainer, &cb, &err) == ATTN_OK);
    ck_assert_int_eq(attn_trainer_epoch(ck_trainer), 2);
    const char *path = tmp_file("ck.json");
    ck_assert_msg(attn_trainer_save_checkpoint(ck_trainer, path, &err) == ATTN_OK, "%s", err.msg);
    ck_text = tu_read_file(path, &ck_len);
    remove(path);
}

static void ck_teardown(void) {
    attn_trainer_free(ck_trainer);
    attn_model_free(ck_model);
    attn_dataset_free(ck_data);
    free(ck_text);
}

/* Rewrites the checksum tail of an edited checkpoint text (23 bytes, see checkpoint_json.c). */
static void rechecksum(char *text) {
    size_t len = strlen(text);
    unsigned long crc = crc32(0L, (const Bytef *)text, (uInt)(len - 23));
    snprintf(text + len - 23, 24, ",\"crc32\":\"0x%08lx\"}\n", crc);
}

/* Loads text (len bytes) as a checkpoint; returns the status, message in err. */
static attn_status ck_load(const char *text, size_t len, attn_error *err) {
    const char *path = tmp_file("edited.json");
    tu_write_file(path, text, len);
    attn_status st = attn_trainer_load_checkpoint(ck_trainer, path, err);
    attn_model_config mc;
    attn_train_config tc;
    attn_error perr;
    attn_status pst = attn_checkpoint_peek(path, &mc, &tc, NULL, &perr);
    /* peek checks everything but the arrays: it may accept only what load accepts */
    if (st == ATTN_OK) ck_assert_msg(pst == ATTN_OK, "%s", perr.msg);
    remove(path);
    return st;
}

/* ck_text with the first element of array `key` replaced by `value`. */
static char *edit_first_element(const char *key, const char *value) {
    char head[64];
    snprintf(head, sizeof head, "\"%s\":[", key);
    const char *at = strstr(ck_text, head);
    ck_assert_ptr_nonnull(at);
    at += strlen(head);
    size_t pre = (size_t)(at - ck_text), old = strcspn(at, ",]"), rest = strlen(at + old);
    char *t = malloc(pre + strlen(value) + rest + 1);
    ck_assert_ptr_nonnull(t);
    memcpy(t, ck_text, pre);
    strcpy(t + pre, value);
    strcpy(t + pre + strlen(value), at + old);
    return t;
}

/* Loads ck_text with old replaced by rep ("[key": the first element of array key replaced),
 * checksum fixed: expects want and frag. */
static void expect_ck_error(const char *old, const char *rep, attn_status want, const char *frag) {
    char *t = old[0] == '[' ? edit_first_element(old + 1, rep)
                            : tu_replace_once(ck_text, "checkpoint", old, rep);
    rechecksum(t);
    attn_error err;
    attn_status st = ck_load(t, strlen(t), &err);
    ck_assert_msg(st == want, "%s -> %s: status %s, want %s: %s", old, rep, attn_status_str(st),
                  attn_status_str(want), err.msg);
    ck_assert_msg(strstr(err.msg, frag), "%s -> %s: message lacks \"%s\": %s", old, rep, frag,
                  err.msg);
    free(t);
}

START_TEST(test_checkpoint_loads_and_ends_with_crc) {
    attn_error err;
    ck_assert_msg(ck_load(ck_text, ck_len, &err) == ATTN_OK, "%s", err.msg);
    ck_assert(ck_len > 23 && strncmp(ck_text + ck_len - 23, ",\"crc32\":\"0x", 12) == 0);
    unsigned long crc = crc32(0L, (const Bytef *)ck_text, (uInt)(ck_len - 23));
    ck_assert_uint_eq(crc, strtoul(ck_text + ck_len - 11, NULL, 16));
}
END_TEST

START_TEST(test_checkpoint_bitflip_crc) {
    /* 200 single-bit flips spread over the file: each one is refused */
    char *t = malloc(ck_len);
    ck_assert_ptr_nonnull(t);
    attn_rng r = attn_rng_seed(13);
    for (int k = 0; k < 200; k++) {
        memcpy(t, ck_text, ck_len);
        size_t at = attn_rng_below(&r, (uint32_t)ck_len);
        t[at] ^= (char)(1u << attn_rng_below(&r, 8));
        attn_error err;
        attn_status st = ck_load(t, ck_len, &err);
        ck_assert_msg(st != ATTN_OK, "flip at byte %zu accepted", at);
    }
    /* the message of a flip in a number */
    memcpy(t, ck_text, ck_len);
    char *ep = strstr(t, "\"epoch\":2");
    ck_assert_ptr_nonnull(ep);
    ep[8] = '3';
    attn_error err;
    ck_assert_int_eq(ck_load(t, ck_len, &err), ATTN_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "checksum mismatch"), "%s", err.msg);
    /* no checksum at all */
    memcpy(t, ck_text, ck_len);
    memcpy(t + ck_len - 23, "}\n", 2);
    ck_assert_int_eq(ck_load(t, ck_len - 21, &err), ATTN_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "does not end with its checksum"), "%s", err.msg);
    free(t);
}
END_TEST

START_TEST(test_checkpoint_trailing_data) {
    char *t = malloc(2 * ck_len + 8);
    ck_assert_ptr_nonnull(t);
    memcpy(t, ck_text, ck_len);
    memcpy(t + ck_len, "xyz", 3);
    attn_error err;
    ck_assert_int_eq(ck_load(t, ck_len + 3, &err), ATTN_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "trailing data"), "%s", err.msg);
    memcpy(t + ck_len, ck_text, ck_len);
    ck_assert_int_eq(ck_load(t, 2 * ck_len, &err), ATTN_ERR_PARSE);
    memcpy(t + ck_len, "\0junk", 5);
    ck_assert_int_eq(ck_load(t, ck_len + 5, &err), ATTN_ERR_PARSE);
    free(t);
}
END_TEST

START_TEST(test_checkpoint_parse_error_offset) {
    char *t = tu_replace_once(ck_text, "checkpoint", "\"epoch\":", "\"epoch\"");
    const char *at = strstr(t, "\"epoch\"") + 7;
    char frag[64];
    snprintf(frag, sizeof frag, "malformed JSON at byte %zu", (size_t)(at - t));
    attn_error err;
    ck_assert_int_eq(ck_load(t, strlen(t), &err), ATTN_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, frag) && strstr(err.msg, "expected ':'"), "%s", err.msg);
    free(t);
    expect_ck_error("\"epoch\":2", "\"epoch\":02", ATTN_ERR_PARSE, "leading zero");
}
END_TEST

START_TEST(test_checkpoint_epoch_overflow) {
    expect_ck_error("\"epoch\":2", "\"epoch\":2147483647", ATTN_ERR_VALUE,
                    "\"epoch\" = 2147483647 is out of range [0, 3]");
    expect_ck_error("\"epoch\":2", "\"epoch\":-1", ATTN_ERR_VALUE, "\"epoch\"");
}
END_TEST

START_TEST(test_checkpoint_field_ranges) {
    static const struct {
        const char *old, *rep;
        attn_status st;
        const char *frag;
    } cases[] = {
        {"\"lr\":0.001", "\"lr\":1e300", ATTN_ERR_VALUE, "\"lr\" = 1e+300 is out of range"},
        {"\"lr\":0.001", "\"lr\":-0.001", ATTN_ERR_VALUE, "\"lr\""},
        {"\"eps\":1e-08", "\"eps\":0", ATTN_ERR_VALUE, "\"eps\" = 0 is out of range"},
        {"\"beta1\":0.9", "\"beta1\":1", ATTN_ERR_VALUE, "\"beta1\""},
        {"\"weight_decay\":0", "\"weight_decay\":-1", ATTN_ERR_VALUE, "\"weight_decay\""},
        {"\"adam_step\":8", "\"adam_step\":1e300", ATTN_ERR_PARSE, "\"adam_step\""},
        {"\"adam_step\":8", "\"adam_step\":9", ATTN_ERR_VALUE, "\"adam_step\" = 9"},
        {"\"adam_step\":8", "\"adam_step\":4503599627370496", ATTN_ERR_VALUE,
         "\"adam_step\" = 4503599627370496"},
        {"\"lr\":0.001", "\"lr\":1e30", ATTN_ERR_VALUE, "\"lr\" = 1e+30 is out of range (0, 1000]"},
        {"\"batch_size\":16", "\"batch_size\":1073741824", ATTN_ERR_VALUE,
         "\"batch_size\" = 1073741824 is out of range [1, 1048576]"},
        {"\"epochs\":3", "\"epochs\":1073741824", ATTN_ERR_VALUE,
         "\"epochs\" = 1073741824 is out of range [0, 1000000]"},
        {"\"n_sentences\":80", "\"n_sentences\":10000000", ATTN_ERR_VALUE, "\"adam_step\""},
        {"\"n_sentences\":80", "\"n_sentences\":-5", ATTN_ERR_VALUE,
         "\"n_sentences\" = -5 is out of range"},
        {"\"n_sentences\":80", "\"n_sentences\":10000001", ATTN_ERR_VALUE, "\"n_sentences\""},
        {"\"holdout\":16", "\"holdout\":10000000", ATTN_ERR_VALUE, "holdout"},
        {"\"batch_size\":16", "\"batch_size\":0", ATTN_ERR_VALUE, "batch_size"},
        {"\"best_acc\":", "\"best_acc\":2,\"x\":", ATTN_ERR_VALUE, "\"best_acc\" = 2"},
        /* "[key": the first element of array key */
        {"[v", "-1e-30", ATTN_ERR_VALUE, "\"v\"[0] = -1e-30 is negative"},
        {"[params", "1e39", ATTN_ERR_VALUE, "\"params\"[0] = 1e+39 overflows float32"},
        {"[m", "-3.5e38", ATTN_ERR_VALUE, "\"m\"[0]"},
        {"[best_params", "4.1e39", ATTN_ERR_VALUE, "\"best_params\"[0]"},
        {"\"holdout_separate\":false", "\"holdout_separate\":0", ATTN_ERR_PARSE,
         "\"holdout_separate\""},
        /* the shared fields (checkpoint_fields.c): "0x" and exactly 16 hex digits, as written */
        {"\"rng_state\":\"0x", "\"rng_state\":\"0x1", ATTN_ERR_PARSE, "\"rng_state\" is malformed"},
        {"\"seed\":\"0x", "\"seed\":\"0X", ATTN_ERR_PARSE, "\"seed\" is malformed"},
        {"\"best_epoch\":", "\"best_epoch\":1.5,\"x\":", ATTN_ERR_PARSE,
         "\"best_epoch\" is not an integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_ck_error(cases[i].old, cases[i].rep, cases[i].st, cases[i].frag);
}
END_TEST

int main(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/attn_test_hostile_%ld", (long)getpid());
    mkdir(tmp_dir, 0700);
    Suite *s = suite_create("io/hostile");
    TCase *tc = tcase_create("files");
    tcase_add_test(tc, test_read_fifo_refused);
    tcase_add_test(tc, test_read_dev_zero_refused);
    tcase_add_test(tc, test_read_size_limit);
    tcase_add_test(tc, test_read_oom_reported_as_such);
    suite_add_tcase(s, tc);
    tc = tcase_create("strict");
    tcase_add_test(tc, test_json_strict_grammar);
    tcase_add_test(tc, test_weights_trailing_data);
    tcase_add_test(tc, test_weights_leading_zero_number);
    tcase_add_test(tc, test_weights_negative_shape_says_negative);
    suite_add_tcase(s, tc);
    tc = tcase_create("limits");
    tcase_add_test(tc, test_config_huge_vocab_rejected_before_alloc);
    tcase_add_test(tc, test_max_params_env);
    suite_add_tcase(s, tc);
    tc = tcase_create("b64");
    tcase_add_loop_test(tc, test_b64_roundtrip_bit_exact, 0, 3);
    tcase_add_test(tc, test_b64_known_vector_and_errors);
    tcase_add_test(tc, test_weights_from_buffer_not_nul_terminated);
    suite_add_tcase(s, tc);
    tc = tcase_create("checkpoint");
    tcase_add_unchecked_fixture(tc, ck_setup, ck_teardown);
    tcase_add_test(tc, test_checkpoint_loads_and_ends_with_crc);
    tcase_add_test(tc, test_checkpoint_bitflip_crc);
    tcase_add_test(tc, test_checkpoint_trailing_data);
    tcase_add_test(tc, test_checkpoint_parse_error_offset);
    tcase_add_test(tc, test_checkpoint_epoch_overflow);
    tcase_add_test(tc, test_checkpoint_field_ranges);
    suite_add_tcase(s, tc);
    int failed = tu_run_suite(s);
    rmdir(tmp_dir);
    return failed ? 1 : 0;
}
