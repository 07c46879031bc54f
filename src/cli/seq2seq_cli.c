/* seq2seq_cli.c -- what several commands share for seq2seq weights: recognising the file, and
 * `attn info` on it (cmd_info.c hands over). */
#include "attn_seq2seq.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

bool cli_is_seq2seq_weights(const char *path) {
    char head[256] = {0};
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return false;
    const size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    return strstr(head, "\"attn-seq2seq-weights-v1\"") != NULL;
}

int cli_info_seq2seq(const char *path) {
    attn_error err;
    attn_seq2seq *m = NULL;
    if (attn_seq2seq_load_json(path, &m, &err) != ATTN_OK) return cli_fail("info", &err);
    const attn_seq2seq_config *c = attn_seq2seq_config_of(m);
    printf("file         %s\narch         %s\n", path, attn_s2s_arch_name(c->arch));
    printf("src_vocab    %d\ntgt_vocab    %d\nd_model      %d\nn_heads      %d\n", c->src_vocab,
           c->tgt_vocab, c->d_model, c->n_heads);
    printf("ffn_dim      %d\nenc_layers   %d\ndec_layers   %d\nmax_src_len  %d\n", c->ffn_dim,
           c->enc_layers, c->dec_layers, c->max_src_len);
    printf("max_tgt_len  %d\nnorm         %s\nactivation   %s\npos          %s\n", c->max_tgt_len,
           c->norm == ATTN_NORM_PRE ? "pre" : "post",
           c->activation == ATTN_ACT_GELU ? "gelu" : "relu", attn_pos_name(c->pos));
    printf("\n%-56s %-10s %8s\n", "tensor", "shape", "numel");
    for (size_t i = 0; i < attn_seq2seq_tensor_count(m); i++) {
        int shape[4];
        char s[64];
        const int nd = attn_seq2seq_tensor_shape(m, i, shape);
        if (nd == 1)
            snprintf(s, sizeof s, "[%d]", shape[0]);
        else
            snprintf(s, sizeof s, "[%d,%d]", shape[0], shape[1]);
        printf("%-56s %-10s %8zu\n", attn_seq2seq_tensor_name(m, i), s,
               attn_seq2seq_tensor_numel(m, i));
    }
    printf("\ntotal parameters: %zu\n", attn_seq2seq_n_params(m));
    attn_seq2seq_free(m);
    return CLI_OK;
}
