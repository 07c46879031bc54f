/* fuzz_checkpoint.c -- libFuzzer harness for the checkpoint loader (attn-checkpoint-v1):
 * attn_checkpoint_peek, then attn_trainer_load_checkpoint into a trainer made once at start
 * (a small RNN on 50 generated sentences, the run that fuzz/corpus/checkpoint/ was saved
 * from: fuzz_checkpoint ATTN_FUZZ_WRITE_SEED=FILE writes it, in safetensors when FILE ends in
 * .safetensors). Checked: no crash, leak or undefined behaviour; a failure gives a message; a
 * loaded state holds finite parameters. */
#include "fuzz_common.h"

#include <string.h>

#define SEED_DATA_N 50

static attn_dataset *data;
static attn_model *model;
static attn_trainer *trainer;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_seed(const char *path) {
    attn_error err;
    FUZZ_CHECK(attn_trainer_run(trainer, NULL, &err) == ATTN_OK);
    FUZZ_CHECK(attn_trainer_save_checkpoint(trainer, path, &err) == ATTN_OK);
    fprintf(stderr, "wrote %s\n", path);
    exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    attn_set_num_threads(1);
    attn_error err;
    FUZZ_CHECK(attn_data_generate(ATTN_SET_TRAIN, SEED_DATA_N, 1, &data, &err) == ATTN_OK);
    attn_model_config mc = fuzz_small_config(ATTN_ARCH_RNN, 0);
    FUZZ_CHECK(attn_model_create(&mc, 1, &model, &err) == ATTN_OK);
    attn_train_config tc = attn_train_config_default();
    tc.epochs = 1;
    tc.holdout = 10;
    tc.batch_size = 8;
    FUZZ_CHECK(attn_trainer_create(model, data, &tc, &trainer, &err) == ATTN_OK);
    const char *seed_out = getenv("ATTN_FUZZ_WRITE_SEED");
    if (seed_out) write_seed(seed_out);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
    const char *path = fuzz_input_path(bytes, size);
    attn_error err;
    attn_model_config mc;
    attn_train_config tc;
    int n = -1;
    attn_status st = attn_checkpoint_peek(path, &mc, &tc, &n, &err); /* buffer API: (bytes, size) */
    if (st == ATTN_OK) {
        attn_error verr;
        FUZZ_CHECK(attn_model_config_validate(&mc, &verr) == ATTN_OK);
    } else {
        FUZZ_CHECK(err.status == st && err.msg[0] != '\0');
    }
    st = attn_trainer_load_checkpoint(trainer, path, &err); /* buffer API: (trainer, bytes, size) */
    if (st == ATTN_OK) {
        attn_error ferr;
        FUZZ_CHECK(attn_model_check_finite(model, false, &ferr) == ATTN_OK);
    } else {
        FUZZ_CHECK(err.status == st && err.msg[0] != '\0');
    }
    return 0;
}
