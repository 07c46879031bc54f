/* fuzz_seq2seq_weights.c -- libFuzzer harness for the seq2seq weights loader
 * (attn-seq2seq-weights-v1, attn_seq2seq_load_json). Checked: no crash, leak or undefined
 * behaviour; a failure gives a message and no model; a loaded model has the parameter count
 * its config gives without allocating (attn_seq2seq_config_n_params), within ATTN_MAX_PARAMS,
 * and only finite parameters. ATTN_FUZZ_WRITE_SEED=DIR writes small models of the three
 * architectures (and a compose Transformer) to DIR: the seeds of fuzz/corpus/seq2seq_weights. */
#include "fuzz_common.h"

#include "attn_seq2seq.h"

#include <math.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small models of each architecture (few parameters: short files). */
static attn_seq2seq_config small_config(int which) {
    const attn_s2s_arch arch = which == 1   ? ATTN_S2S_GRU
                               : which == 2 ? ATTN_S2S_ATTN
                                            : ATTN_S2S_TRANSFORMER;
    attn_seq2seq_config c = attn_seq2seq_config_default(arch);
    if (which == 3) attn_seq2seq_config_set_task(&c, ATTN_TASK_COMPOSE);
    c.d_model = 2;
    c.max_src_len = which == 3 ? c.max_src_len : 6;
    c.max_tgt_len = which == 3 ? 8 : 4;
    if (arch == ATTN_S2S_TRANSFORMER) {
        c.n_heads = 1;
        c.ffn_dim = 2;
        c.enc_layers = c.dec_layers = 1;
        c.pos = which == 3 ? ATTN_POS_SINUSOIDAL : ATTN_POS_LEARNED;
    } else {
        c.hidden_size = 2;
    }
    return c;
}

static void write_seeds(const char *dir) {
    const char *names[4] = {"transformer", "gru", "attn", "compose_transformer"};
    for (int i = 0; i < 4; i++) {
        attn_seq2seq_config c = small_config(i);
        attn_seq2seq *m = NULL;
        attn_error err;
        FUZZ_CHECK(attn_seq2seq_create(&c, 1, &m, &err) == ATTN_OK);
        char path[512];
        snprintf(path, sizeof path, "%s/small_%s.json", dir, names[i]);
        FUZZ_CHECK(attn_seq2seq_save_json(m, false, i == 1, path, &err) == ATTN_OK);
        fprintf(stderr, "wrote %s\n", path);
        attn_seq2seq_free(m);
    }
    exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    attn_set_num_threads(1);
    const char *seed_dir = getenv("ATTN_FUZZ_WRITE_SEED");
    if (seed_dir) write_seeds(seed_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
    attn_seq2seq *m = (attn_seq2seq *)&m;
    attn_error err;
    attn_status st = attn_seq2seq_load_json(fuzz_input_path(bytes, size), &m, &err);
    if (st != ATTN_OK) {
        FUZZ_CHECK(m == NULL && err.status == st && err.msg[0] != '\0');
        return 0;
    }
    const size_t n = attn_seq2seq_n_params(m);
    FUZZ_CHECK(n == attn_seq2seq_config_n_params(attn_seq2seq_config_of(m)));
    FUZZ_CHECK(n > 0 && n <= attn_io_max_params());
    const float *p = attn_seq2seq_params(m);
    for (size_t i = 0; i < n; i++) FUZZ_CHECK(isfinite(p[i]));
    attn_seq2seq_free(m);
    return 0;
}
