/* fuzz_seq2seq_checkpoint.c -- libFuzzer harness for the seq2seq checkpoint reader
 * (attn-seq2seq-checkpoint-v1, attn_s2s_checkpoint_load). Each input is read twice: as it is
 * (the checksum check in front), and with its last 23 bytes replaced by the checksum of the
 * bytes before them, so that the fields behind the checksum are fuzzed too (a safetensors
 * checkpoint, recognised by content, keeps its checksum in the header: there the second read
 * only damages the data). Checked: no crash, leak or undefined behaviour; a failure gives a
 * message and no arrays; a loaded state has the config's parameter count within
 * ATTN_MAX_PARAMS, finite arrays, v >= 0, Adam settings in range and adam_step = epoch x
 * ceil(n_pairs / batch_size). ATTN_FUZZ_WRITE_SEED=FILE writes the checkpoint of one epoch of a
 * small seq2seq-gru (the seeds of fuzz/corpus/seq2seq_checkpoint; in safetensors when FILE ends
 * in .safetensors). */
#include "fuzz_common.h"

#include "attn_seq2seq.h"

#include <math.h>
#include <string.h>
#include <zlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static attn_status save_state(const attn_s2s_train_state *st, void *user, attn_error *err) {
    return attn_s2s_checkpoint_save(st, user, err);
}

static void write_seed(const char *path) {
    attn_seq2seq_config c = attn_seq2seq_config_default(ATTN_S2S_GRU);
    c.d_model = 2;
    c.hidden_size = 2;
    attn_seq2seq *m = NULL;
    attn_pairs *train = NULL, *held = NULL;
    attn_error err;
    FUZZ_CHECK(attn_seq2seq_create(&c, 1, &m, &err) == ATTN_OK);
    FUZZ_CHECK(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, 12, 1, &train, &err) ==
               ATTN_OK);
    FUZZ_CHECK(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_HOLDOUT, 4, 1, &held, &err) ==
               ATTN_OK);
    attn_s2s_train_config tc = attn_s2s_train_config_default();
    tc.epochs = 1;
    tc.batch_size = 5;
    tc.holdout = 4;
    const attn_s2s_resume rs = {NULL, save_state, (void *)path};
    FUZZ_CHECK(attn_seq2seq_train_resume(m, train, held, &tc, NULL, &rs, &err) == ATTN_OK);
    fprintf(stderr, "wrote %s\n", path);
    exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    attn_set_num_threads(1);
    const char *seed = getenv("ATTN_FUZZ_WRITE_SEED");
    if (seed) write_seed(seed);
    return 0;
}

static void check_state(const attn_s2s_train_state *st) {
    const size_t n = st->n_params;
    FUZZ_CHECK(n > 0 && n == attn_seq2seq_config_n_params(&st->model_cfg));
    FUZZ_CHECK(n <= attn_io_max_params());
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(isfinite(st->params[i]) && isfinite(st->m[i]));
        FUZZ_CHECK(isfinite(st->v[i]) && st->v[i] >= 0.0f);
        if (st->best_params) FUZZ_CHECK(isfinite(st->best_params[i]));
    }
    const attn_s2s_train_config *tc = &st->train_cfg;
    FUZZ_CHECK(tc->adam.lr > 0.0 && tc->adam.lr <= 1e3);
    FUZZ_CHECK(tc->adam.beta1 >= 0.0 && tc->adam.beta1 < 1.0);
    FUZZ_CHECK(tc->adam.beta2 >= 0.0 && tc->adam.beta2 < 1.0);
    FUZZ_CHECK(tc->adam.eps > 0.0 && tc->adam.eps <= 1.0);
    FUZZ_CHECK(tc->batch_size >= 1 && tc->epochs >= st->epoch && st->epoch >= st->best_epoch);
    const long per_epoch = ((long)st->n_pairs + tc->batch_size - 1) / tc->batch_size;
    FUZZ_CHECK(st->adam_step == (long)st->epoch * per_epoch);
    FUZZ_CHECK((st->best_epoch > 0) == (st->best_params != NULL));
}

static void load(const char *path) {
    attn_s2s_train_state st;
    attn_error err;
    attn_status s = attn_s2s_checkpoint_load(path, &st, &err);
    if (s != ATTN_OK) {
        FUZZ_CHECK(err.status == s && err.msg[0] != '\0');
        FUZZ_CHECK(!st.params && !st.m && !st.v && !st.best_params);
        return;
    }
    check_state(&st);
    attn_s2s_train_state_clear(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
    load(fuzz_input_path(bytes, size));
    if (size < 23) return 0;
    uint8_t *fixed = malloc(size + 1);
    FUZZ_CHECK(fixed != NULL);
    memcpy(fixed, bytes, size);
    const size_t body = size - 23; /* ,"crc32":"0x<8 hex>"}\n after the bytes it covers */
    unsigned long crc = crc32(0L, (const Bytef *)fixed, (uInt)body);
    snprintf((char *)fixed + body, 24, ",\"crc32\":\"0x%08lx\"}\n", crc);
    load(fuzz_input_path(fixed, size));
    free(fixed);
    return 0;
}
