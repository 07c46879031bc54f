/* fuzz_serve.c -- libFuzzer harness for the request handler of `attn serve` (serve_handle), the
 * code that sees everything a client sends. Input: "METHOD URI\n" then the body (bytes up to
 * the first space are the method, then up to the first newline the URI; either may be cut or
 * missing). The app holds small models of each kind (written once to a temporary directory),
 * so that explain and the test sets run fast, and two small seq2seq models (a rewrite one and a
 * compose-shaped one) for /api/generate and /api/compose. Checked: no crash, leak or undefined
 * behaviour; the status is an HTTP status with a type and a body; a JSON answer is valid UTF-8
 * without raw control characters (what the user sent is escaped), and an error answer says
 * {"error": {"status": <the status>, ...}}. */
#include "fuzz_common.h"
#include "attn_seq2seq.h"
#include "serve.h"

#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static serve_app *app;
static char dir[64];

static void cleanup(void) {
    serve_app_free(app);
    const char *names[] = {
        "rnn", "lstm", "transformer", "gru", "seq2seq-transformer", "compose-seq2seq-transformer"};
    for (int i = 0; i < 6; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s-seed1.json", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void make_app(void) {
    snprintf(dir, sizeof dir, "/tmp/attn-fuzz-serve-%ld", (long)getpid());
    FUZZ_CHECK(mkdir(dir, 0700) == 0);
    const attn_arch archs[] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_TRANSFORMER};
    for (int i = 0; i < 3; i++) {
        attn_model_config c = fuzz_small_config(archs[i], 0);
        attn_model *m = NULL;
        attn_error err;
        char path[128];
        snprintf(path, sizeof path, "%s/%s-seed1.json", dir, attn_arch_name(archs[i]));
        FUZZ_CHECK(attn_model_create(&c, 1, &m, &err) == ATTN_OK);
        FUZZ_CHECK(attn_weights_save_json(m, false, path, &err) == ATTN_OK);
        attn_model_free(m);
    }
    /* a GRU with a vocabulary of its own: the server reads its sentences with these words */
    static const char *const words[] = {"[PAD]", "the", "film", "was", "not", "good", "bad"};
    attn_model_config c = fuzz_small_config(ATTN_ARCH_GRU, 0);
    c.vocab_size = 7;
    attn_model *m = NULL;
    attn_vocab *v = NULL;
    attn_error err;
    char path[128];
    snprintf(path, sizeof path, "%s/gru-seed1.json", dir);
    FUZZ_CHECK(attn_model_create(&c, 1, &m, &err) == ATTN_OK);
    FUZZ_CHECK(attn_vocab_create(words, 7, &v, &err) == ATTN_OK);
    FUZZ_CHECK(attn_weights_save_json_vocab(m, v, false, ATTN_WEIGHTS_TEXT, path, &err) == ATTN_OK);
    attn_vocab_free(v);
    attn_model_free(m);
    for (int k = 0; k < 2; k++) { /* a rewrite and a compose-shaped seq2seq model, small */
        attn_seq2seq_config sc = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
        sc.src_vocab = k ? ATTN_TGT_VOCAB_SIZE : ATTN_VOCAB_SIZE;
        sc.d_model = 8;
        sc.ffn_dim = 8;
        sc.enc_layers = sc.dec_layers = 1;
        sc.max_tgt_len = 8;
        attn_seq2seq *s2s = NULL;
        snprintf(path, sizeof path, "%s/%s-seed1.json", dir,
                 k ? "compose-seq2seq-transformer" : "seq2seq-transformer");
        FUZZ_CHECK(attn_seq2seq_create(&sc, 1, &s2s, &err) == ATTN_OK);
        FUZZ_CHECK(attn_seq2seq_save_json(s2s, false, true, path, &err) == ATTN_OK);
        attn_seq2seq_free(s2s);
    }
    FUZZ_CHECK(serve_app_create(dir, 1, &app, &err) == ATTN_OK);
    atexit(cleanup);
}

/* Valid UTF-8 without bytes below 0x20 (JSON text as the server writes it). */
static bool clean_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
        if (c < 0x20 || (c >= 0x80 && c < 0xC2) || c > 0xF4 || i + len > n) return false;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80) return false;
        i += len;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!app) make_app();
    char *text = malloc(size + 1);
    FUZZ_CHECK(text);
    memcpy(text, data, size);
    text[size] = '\0';
    /* "METHOD URI\nBODY" */
    char *method = text, *uri = "", *body = "";
    size_t body_len = 0;
    char *sp = memchr(text, ' ', size);
    if (sp) {
        *sp = '\0';
        uri = sp + 1;
        char *nl = memchr(uri, '\n', size - (size_t)(uri - text));
        if (nl) {
            *nl = '\0';
            body = nl + 1;
            body_len = size - (size_t)(body - text);
        }
    }
    const serve_request rq = {method, uri, body, body_len};
    serve_response rs;
    serve_handle(app, 0, &rq, &rs);
    FUZZ_CHECK(rs.status >= 200 && rs.status <= 599 && rs.type && rs.data && rs.len > 0);
    if (rs.api) {
        FUZZ_CHECK(clean_utf8(rs.data, rs.len));
        if (rs.status != 200) {
            char want[40];
            snprintf(want, sizeof want, "{\"error\": {\"status\": %d, ", rs.status);
            FUZZ_CHECK(rs.len > strlen(want) && memcmp(rs.data, want, strlen(want)) == 0);
        }
    }
    serve_response_clear(&rs);
    free(text);
    return 0;
}
