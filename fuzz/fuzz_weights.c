/* fuzz_weights.c -- libFuzzer harness for the weights JSON loader (attn-weights-v1):
 * attn_weights_load_json (the model comes from the file's config) and attn_weights_load_into
 * (into an existing model of fixed config). Checked: no crash, leak or undefined behaviour;
 * a failure leaves a message and no model; a loaded model holds only finite numbers.
 * ATTN_FUZZ_WRITE_SEED=DIR fuzz_weights writes the fixed models' weights (small seeds) to DIR. */
#include "fuzz_common.h"

#include <string.h>

#define N_INTO 4
static attn_model *into[N_INTO]; /* rnn, lstm, transformer pre/relu, transformer post/gelu */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const attn_arch archs[N_INTO] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_TRANSFORMER,
                                     ATTN_ARCH_TRANSFORMER};
    for (int i = 0; i < N_INTO; i++) {
        attn_model_config c = fuzz_small_config(archs[i], i == 3);
        attn_error err;
        FUZZ_CHECK(attn_model_create(&c, 1, &into[i], &err) == ATTN_OK);
    }
    const char *seed_dir = getenv("ATTN_FUZZ_WRITE_SEED"); /* the small seeds of the corpus */
    if (seed_dir) {
        const char *names[N_INTO] = {"rnn", "lstm", "transformer", "transformer_post_gelu"};
        for (int i = 0; i < N_INTO; i++) {
            char path[512];
            snprintf(path, sizeof path, "%s/small_%s.json", seed_dir, names[i]);
            attn_error err;
            FUZZ_CHECK(attn_weights_save_json(into[i], false, path, &err) == ATTN_OK);
            fprintf(stderr, "wrote %s\n", path);
        }
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_input_path(data, size);
    attn_error err;

    attn_model *m = NULL;
    attn_status st = attn_weights_load_json(path, &m, &err); /* buffer API: (data, size, ...) */
    fuzz_check_result(st, &err);
    FUZZ_CHECK((st == ATTN_OK) == (m != NULL));
    if (m) {
        attn_error ferr;
        FUZZ_CHECK(attn_model_check_finite(m, false, &ferr) == ATTN_OK);
        attn_model_free(m);
    }

    /* into one of the fixed models; the size picks which, so each is reached */
    attn_model *t = into[size % N_INTO];
    st = attn_weights_load_into(t, path, &err); /* buffer API: (t, data, size, ...) */
    fuzz_check_result(st, &err);
    if (st == ATTN_OK) {
        attn_error ferr;
        FUZZ_CHECK(attn_model_check_finite(t, false, &ferr) == ATTN_OK);
    }
    return 0;
}
