/* cmd_flops.c -- attn flops: the multiply-add breakdown, per attn_sgemm call-site tag, of one
 * forward (or one training step: forward + backward) of a default model on a random batch,
 * counted by the FLOP accountant in attn_sgemm. */
#include "cli.h"

#include "attn_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The table of multiply-adds per call site. */
static void print_counts(const attn_flop_counts *fc, attn_arch arch, int B, int T, bool train) {
    uint64_t total = 0, fwd = 0;
    for (int t = 0; t < ATTN_OP_COUNT; t++) {
        total += fc->fwd_madds[t] + fc->bwd_madds[t];
        fwd += fc->fwd_madds[t];
    }
    printf("%s, default config, batch %d x %d words, %s: multiply-adds by call site\n\n",
           attn_arch_name(arch), B, T, train ? "training step (forward + backward)" : "forward");
    printf("%-10s %7s %14s %14s %14s %8s\n", "tag", "calls", "forward", "backward", "total",
           "share");
    for (int t = 0; t < ATTN_OP_COUNT; t++) {
        const uint64_t tt = fc->fwd_madds[t] + fc->bwd_madds[t];
        if (!fc->calls[t]) continue;
        printf("%-10s %7llu %14llu %14llu %14llu %7.1f%%\n", attn_op_name((attn_op)t),
               (unsigned long long)fc->calls[t], (unsigned long long)fc->fwd_madds[t],
               (unsigned long long)fc->bwd_madds[t], (unsigned long long)tt,
               total ? 100.0 * (double)tt / (double)total : 0.0);
    }
    printf("%-10s %7s %14llu %14llu %14llu %7.1f%%\n", "total", "", (unsigned long long)fwd,
           (unsigned long long)(total - fwd), (unsigned long long)total, 100.0);
    if (arch == ATTN_ARCH_TRANSFORMER && total) {
        const uint64_t nn = fc->fwd_madds[ATTN_OP_QK] + fc->fwd_madds[ATTN_OP_AV] +
                            fc->bwd_madds[ATTN_OP_QK] + fc->bwd_madds[ATTN_OP_AV];
        printf("\nn x n products (qk + av): %.1f%% of the multiply-adds (n = %d positions incl. "
               "[CLS])\n",
               100.0 * (double)nn / (double)total, T + 1);
    }
    printf("(FLOPs = 2 x multiply-adds)\n");
}

int cmd_flops(int argc, char **argv) {
    const char *cmd = "flops", *model_name = NULL;
    int T = 12, B = 1;
    bool train = false;
    cli_opt opts[] = {
        {"--model", "NAME", CLI_OPT_STR, &model_name,
         .help = "rnn, lstm, gru or transformer; required"},
        {"--T", "N", CLI_OPT_INT, &T, 1, ATTN_MAX_WORDS, .help = "words per sentence"},
        {"--batch", "B", CLI_OPT_INT, &B, 1, 4096, .help = "sentences per forward pass"},
        {"--train", NULL, CLI_OPT_FLAG, &train,
         .help = "count a training step (forward + backward), not just a forward"},
    };
    cli_spec spec = {
        cmd,
        "--model rnn|lstm|gru|transformer [--T N] [--batch B] [--train]",
        "Counts the multiply-adds of every matrix product of a default model (random\n"
        "weights, a random batch of B sentences of T words) by call site, with shares.",
        NULL,
        NULL,
        opts,
        4};
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc >= 0) return prc;
    if (!model_name)
        return cli_usage_error(cmd, "--model is required (rnn, lstm, gru or transformer)");
    attn_error err = {0};
    attn_arch arch;
    if (attn_arch_from_name(model_name, &arch, &err) != ATTN_OK)
        return cli_usage_error(cmd, "%s", err.msg);

    attn_model_config cfg = attn_model_config_default(arch);
    attn_model *m = NULL;
    if (attn_model_create(&cfg, 1, &m, &err) != ATTN_OK) return cli_fail(cmd, &err);
    int *ids = malloc((size_t)B * T * sizeof *ids), *lengths = malloc((size_t)B * sizeof *lengths);
    float *logits = malloc((size_t)B * sizeof *logits),
          *d_logits = malloc((size_t)B * sizeof *d_logits);
    float *labels = malloc((size_t)B * sizeof *labels);
    int rc = CLI_OK;
    if (!ids || !lengths || !logits || !d_logits || !labels) {
        attn_errorf(&err, ATTN_ERR_NOMEM, "out of memory for a batch of %d x %d", B, T);
        rc = cli_fail(cmd, &err);
        goto done;
    }
    attn_rng r = attn_rng_seed(1);
    for (int b = 0; b < B; b++) {
        lengths[b] = T; /* full-length sentences: the counts are the formulas' */
        labels[b] = (float)attn_rng_below(&r, 2);
        for (int t = 0; t < T; t++)
            ids[(size_t)b * T + t] = ATTN_CLS_ID + 1 + (int)attn_rng_below(&r, ATTN_N_WORDS);
    }
    attn_batch batch = {.B = B, .T = T, .ids = ids, .lengths = lengths};

    attn_flop_counts fc = {0};
    attn_flops_set_counter(&fc);
    attn_status st = attn_model_forward(m, &batch, logits, &err);
    if (st == ATTN_OK && train) {
        memset(d_logits, 0, (size_t)B * sizeof *d_logits);
        attn_bce_backward(d_logits, 1.0f, logits, labels, B);
        attn_model_zero_grad(m);
        st = attn_model_backward(m, &batch, d_logits, &err);
    }
    attn_flops_set_counter(NULL);
    if (st != ATTN_OK) {
        rc = cli_fail(cmd, &err);
        goto done;
    }

    print_counts(&fc, arch, B, T, train);
done:
    free(ids), free(lengths), free(logits), free(d_logits), free(labels);
    attn_model_free(m);
    return rc;
}
