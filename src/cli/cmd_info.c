/* cmd_info.c -- `attn info`: what a weights file of either family holds (a seq2seq file:
 * seq2seq_cli.c). */
#include "cli.h"

#include <stdio.h>

static void print_config(const attn_model_config *c) {
    printf("arch         %s\n", attn_arch_name(c->arch));
    printf("vocab_size   %d\n", c->vocab_size);
    printf("embed_dim    %d\n", c->embed_dim);
    if (c->arch == ATTN_ARCH_TRANSFORMER) {
        printf("n_heads      %d\n", c->n_heads);
        printf("ffn_dim      %d\n", c->ffn_dim);
        printf("n_layers     %d\n", c->n_layers);
        printf("max_len      %d\n", c->max_len);
        printf("norm         %s\n", c->norm == ATTN_NORM_PRE ? "pre" : "post");
        printf("activation   %s\n", c->activation == ATTN_ACT_RELU ? "relu" : "gelu");
        printf("pos          %s\n", attn_pos_name(c->pos));
    } else {
        printf("hidden_size  %d\n", c->hidden_size);
        printf("n_layers     %d\n", c->n_layers);
    }
}

int cmd_info(int argc, char **argv) {
    const char *weights = NULL;
    cli_opt opts[] = {
        {"--weights", "FILE", CLI_OPT_STR, &weights, .help = CLI_WEIGHTS_HELP "; required"},
    };
    cli_spec spec = {
        "info",
        "--weights FILE",
        "Shows a weights file: the architecture, its sizes, the tensor table (state_dict\n"
        "name, shape, element count) and the total parameter count; the vocabulary: the\n"
        "file's own \"vocab\" or the built-in one, and its size; the kernels that computed\n"
        "its values. Either family: a classifier (attn-weights-v1: rnn, lstm, gru,\n"
        "transformer) or a seq2seq model (attn-seq2seq-weights-v1: seq2seq-gru, seq2seq-attn,\n"
        "seq2seq-transformer; its source and target vocabularies), each as JSON or\n"
        "safetensors. The file is fully validated first; every problem is reported.",
        NULL,
        NULL,
        opts,
        1};
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    if (!weights) return cli_usage_error("info", "--weights FILE is required");
    if (cli_is_seq2seq_weights(weights)) return cli_info_seq2seq(weights);
    attn_model *m = NULL;
    const attn_vocab *vocab = NULL;
    rc = cli_load_weights("info", weights, &m, &vocab);
    if (rc >= 0) return rc;
    printf("file         %s\n", weights);
    print_config(attn_model_config_of(m));
    char source[64];
    cli_vocab_source(vocab, source, sizeof source);
    printf("vocabulary   %s\n", source);
    cli_print_recorded_kernels(attn_model_kernels(m));
    cli_print_tensor_header(36);
    for (size_t i = 0; i < attn_model_tensor_count(m); i++) {
        int shape[4];
        const int nd = attn_model_tensor_shape(m, i, shape);
        cli_print_tensor_row(36, attn_model_tensor_name(m, i), shape, nd,
                             attn_model_tensor_numel(m, i));
    }
    printf("\ntotal parameters: %zu\n", attn_model_n_params(m));
    attn_model_free(m);
    attn_vocab_free(vocab);
    return CLI_OK;
}
