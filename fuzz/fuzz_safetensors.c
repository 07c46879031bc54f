/* fuzz_safetensors.c -- libFuzzer harness for the safetensors reader (src/io/safetensors.c):
 * attn_weights_load_safetensors and attn_seq2seq_load_safetensors (the model comes from the
 * file's "__metadata__" config) and attn_weights_load_into (an existing model of fixed config),
 * all through the JSON loaders' entry points, which recognise the format by content. Checked:
 * no crash, leak or undefined behaviour; a failure leaves a message and no model; a loaded model
 * holds only finite numbers. ATTN_FUZZ_WRITE_SEED=DIR writes the small seeds to DIR. */
#include "attn_seq2seq.h"
#include "fuzz_common.h"

#include <math.h>
#include <string.h>

#define N_INTO 3
static attn_model *into[N_INTO]; /* rnn, lstm, transformer */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_seeds(const char *dir) {
    const char *names[N_INTO] = {"rnn", "lstm", "transformer"};
    char path[512];
    attn_error err;
    for (int i = 0; i < N_INTO; i++) {
        snprintf(path, sizeof path, "%s/small_%s.safetensors", dir, names[i]);
        FUZZ_CHECK(attn_weights_save_safetensors(into[i], NULL, path, &err) == ATTN_OK);
    }
    const char *words[] = {"[PAD]", "[CLS]", "a\"b", "c"};
    attn_vocab *v = NULL;
    attn_model_config c = fuzz_small_config(ATTN_ARCH_GRU, 0);
    c.vocab_size = 4;
    attn_model *m = NULL;
    FUZZ_CHECK(attn_vocab_create(words, 4, &v, &err) == ATTN_OK);
    FUZZ_CHECK(attn_model_create(&c, 1, &m, &err) == ATTN_OK);
    snprintf(path, sizeof path, "%s/small_gru_vocab.safetensors", dir);
    FUZZ_CHECK(attn_weights_save_safetensors(m, v, path, &err) == ATTN_OK);
    attn_model_free(m);
    attn_vocab_free(v);
    attn_seq2seq_config sc = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    sc.d_model = 2, sc.n_heads = 1, sc.ffn_dim = 2, sc.enc_layers = 1, sc.dec_layers = 1;
    sc.max_src_len = 4, sc.max_tgt_len = 4;
    attn_seq2seq *s = NULL;
    FUZZ_CHECK(attn_seq2seq_create(&sc, 1, &s, &err) == ATTN_OK);
    snprintf(path, sizeof path, "%s/small_seq2seq.safetensors", dir);
    FUZZ_CHECK(attn_seq2seq_save_safetensors(s, path, &err) == ATTN_OK);
    attn_seq2seq_free(s);
    fprintf(stderr, "wrote the seeds to %s\n", dir);
    exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const attn_arch archs[N_INTO] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_TRANSFORMER};
    for (int i = 0; i < N_INTO; i++) {
        attn_model_config c = fuzz_small_config(archs[i], 0);
        attn_error err;
        FUZZ_CHECK(attn_model_create(&c, 1, &into[i], &err) == ATTN_OK);
    }
    const char *seed_dir = getenv("ATTN_FUZZ_WRITE_SEED");
    if (seed_dir) write_seeds(seed_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_input_path(data, size);
    attn_error err;
    attn_model *m = NULL;
    attn_vocab *v = NULL;
    attn_status st = attn_weights_load_json_vocab(path, &m, &v, &err);
    fuzz_check_result(st, &err);
    FUZZ_CHECK((st == ATTN_OK) == (m != NULL));
    if (m) {
        attn_error ferr;
        FUZZ_CHECK(attn_model_check_finite(m, false, &ferr) == ATTN_OK);
        attn_model_free(m);
    }
    attn_vocab_free(v);

    attn_seq2seq *s = NULL;
    st = attn_seq2seq_load_json(path, &s, &err);
    fuzz_check_result(st, &err);
    FUZZ_CHECK((st == ATTN_OK) == (s != NULL));
    if (s) {
        const float *p = attn_seq2seq_params(s);
        for (size_t i = 0; i < attn_seq2seq_n_params(s); i++) FUZZ_CHECK(isfinite(p[i]));
        attn_seq2seq_free(s);
    }

    attn_model *t = into[size % N_INTO];
    st = attn_weights_load_into(t, path, &err);
    fuzz_check_result(st, &err);
    return 0;
}
