/* cmd_flops.c -- attn flops: the multiply-add breakdown, per attn_sgemm call-site tag, of one
 * forward (or one training step: forward + backward) of a default model on a random batch,
 * counted by the FLOP accountant in attn_sgemm. */
#include "cli.h"

#include "attn_kernels.h"
#include "vit_layer.h"

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

/* ---- one encoder layer of any size (write-up section 8) ------------------------------------- */

#define LAYER_MAX_N 4097 /* 1024 px ViT: 64 x 64 patches + [CLS] */

/* One counted forward of a pre-norm GELU encoder layer (the one bench/flops times) at n tokens;
 * prints the multiply-adds by call site, the write-up's three groups and the n x n share. */
static int layer_counts(int D, int NH, int F, int n) {
    vit_layer L;
    vit_work w;
    const size_t nd = (size_t)n * D;
    float *x = malloc(nd * sizeof *x), *y = malloc(nd * sizeof *y);
    bool ok = x && y && vit_layer_init(&L, D, NH, F, 7);
    bool have_work = ok && vit_work_init(&w, &L, n, VIT_PATH_AUTO);
    if (!have_work) {
        if (ok) vit_layer_free(&L);
        free(x), free(y);
        return cli_runtime_error("flops", "out of memory for a layer of D %d, F %d at n = %d", D, F,
                                 n);
    }
    attn_rng r = attn_rng_seed(11);
    for (size_t i = 0; i < nd; i++) x[i] = attn_rng_uniform_range(&r, -1.0f, 1.0f);
    attn_flop_counts fc = {0};
    attn_flops_set_counter(&fc);
    vit_layer_forward(y, x, &L, &w, n, NULL);
    attn_flops_set_counter(NULL);
    uint64_t want[ATTN_OP_COUNT];
    vit_layer_madds(want, n, D, F);
    bool same = true;
    for (int t = 0; t < ATTN_OP_COUNT; t++) same = same && fc.fwd_madds[t] == want[t];
    const uint64_t proj = fc.fwd_madds[ATTN_OP_QKV] + fc.fwd_madds[ATTN_OP_OUT_PROJ];
    const uint64_t mlp = fc.fwd_madds[ATTN_OP_FFN_UP] + fc.fwd_madds[ATTN_OP_FFN_DOWN];
    const uint64_t nn = fc.fwd_madds[ATTN_OP_QK] + fc.fwd_madds[ATTN_OP_AV];
    const double total = (double)(proj + mlp + nn);
    printf("encoder layer (pre-norm, GELU), d = %d, %d heads, ffn %d, n = %d tokens, batch 1, "
           "forward: multiply-adds counted by attn_sgemm\n\n",
           D, NH, F, n);
    printf("%-10s %16s %8s\n", "tag", "multiply-adds", "share");
    for (int t = 0; t < ATTN_OP_COUNT; t++)
        if (fc.calls[t])
            printf("%-10s %16llu %7.1f%%\n", attn_op_name((attn_op)t),
                   (unsigned long long)fc.fwd_madds[t], 100.0 * (double)fc.fwd_madds[t] / total);
    printf("\nprojections (qkv + out) 4nd^2   %16llu %7.1f%%\n", (unsigned long long)proj,
           100.0 * (double)proj / total);
    printf("mlp (up + down) 2ndf            %16llu %7.1f%%\n", (unsigned long long)mlp,
           100.0 * (double)mlp / total);
    printf("n x n (qk + av) 2n^2d           %16llu %7.1f%%\n", (unsigned long long)nn,
           100.0 * (double)nn / total);
    printf("\nn x n share: %.1f %%%s; counted %s the formulas above.\n(FLOPs = 2 x "
           "multiply-adds)\n",
           100.0 * (double)nn / total, F == 4 * D ? " (= n / (6d + n) at ffn = 4d)" : "",
           same ? "equals" : "DIFFERS FROM");
    vit_work_free(&w);
    vit_layer_free(&L);
    free(x), free(y);
    return same ? CLI_OK
                : cli_runtime_error("flops", "counted multiply-adds differ from 4nd^2, "
                                             "2ndf, 2n^2d");
}

/* The layer options: --vit (ViT-Base: n = 197 and 4097 unless --T) or the sizes. -1: not a
 * layer count (no layer option given), else the exit code. */
static int layer_mode(cli_spec *spec, bool vit, int D, int NH, int F, int n, const char *model) {
    const bool sizes = cli_given(spec, "--embed-dim") || cli_given(spec, "--heads") ||
                       cli_given(spec, "--ffn-dim");
    if (!vit && !sizes) return -1;
    if (model || cli_given(spec, "--batch") || cli_given(spec, "--train"))
        return cli_usage_error("flops", "--vit and the layer sizes count one encoder layer: not "
                                        "with --model, --batch or --train");
    if (vit && sizes)
        return cli_usage_error("flops", "--vit fixes d = 768, 12 heads, ffn 3072: give either "
                                        "--vit or --embed-dim, --heads and --ffn-dim");
    if (vit) D = 768, NH = 12, F = 3072;
    if (D % NH != 0)
        return cli_usage_error("flops", "--heads %d does not divide --embed-dim %d", NH, D);
    if (n > LAYER_MAX_N)
        return cli_usage_error("flops", "--T %d: a layer takes n = 1..%d tokens", n, LAYER_MAX_N);
    attn_set_num_threads(1);
    if (!vit || cli_given(spec, "--T")) return layer_counts(D, NH, F, n);
    int rc = layer_counts(D, NH, F, 197); /* 224 px: 14 x 14 patches + [CLS] */
    if (rc == CLI_OK) printf("\n");
    return rc == CLI_OK ? layer_counts(D, NH, F, LAYER_MAX_N) : rc;
}

/* One forward (and backward with train) of model arch on B random full-length sentences of T
 * words with the FLOP counter on; prints the counts. CLI_OK or the exit code. */
static int count_model(attn_arch arch, int B, int T, bool train) {
    const char *cmd = "flops";
    attn_error err = {0};
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

int cmd_flops(int argc, char **argv) {
    const char *cmd = "flops", *model_name = NULL;
    int T = 12, B = 1, D = 32, NH = 2, F = 64;
    bool train = false, vit = false;
    cli_opt opts[] = {
        {"--model", "NAME", CLI_OPT_STR, &model_name,
         .help = "rnn, lstm, gru or transformer (a whole model)"},
        {"--T", "N", CLI_OPT_INT, &T, 1, LAYER_MAX_N,
         .help = "words per sentence (1..80) with --model; tokens n (1..4097)\n"
                 "with --vit or the layer sizes"},
        {"--vit", NULL, CLI_OPT_FLAG, &vit,
         .help = "one ViT-Base encoder layer (d 768, 12 heads, ffn 3072) at\n"
                 "n = 197 (224 px) and n = 4097 (1024 px), or at --T"},
        {"--embed-dim", "D", CLI_OPT_INT, &D, 1, 4096, .help = "one encoder layer of width D"},
        {"--heads", "H", CLI_OPT_INT, &NH, 1, 4096, .help = "its heads (divide D)"},
        {"--ffn-dim", "F", CLI_OPT_INT, &F, 1, 16384, .help = "its feed-forward width"},
        {"--batch", "B", CLI_OPT_INT, &B, 1, 4096, .help = "sentences per forward pass"},
        {"--train", NULL, CLI_OPT_FLAG, &train,
         .help = "count a training step (forward + backward), not just a forward"},
    };
    cli_spec spec = CLI_SPEC(
        cmd,
        "--model rnn|lstm|gru|transformer [--T N] [--batch B] [--train]\n"
        "--vit [--T N]\n"
        "--embed-dim D --heads H --ffn-dim F --T N",
        "Counts the multiply-adds of every matrix product of a default model (random\n"
        "weights, a random batch of B sentences of T words) by call site, with shares; or of\n"
        "one Transformer encoder layer of any size (pre-norm, GELU, batch 1), as in the\n"
        "write-up's section 8: `attn flops --vit` gives the n x n products' share of a\n"
        "ViT-Base layer at 224 px (n = 197) and 1024 px (n = 4097).",
        NULL,
        "The layer's counts are those of one forward through the engine's own encoder layer\n"
        "(the blocked attention above 1024 tokens), checked against 4nd^2 (projections),\n"
        "2ndf (MLP) and 2n^2d (the n x n products). bench/flops times the same layer.",
        opts);
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc >= 0) return prc;
    if ((prc = layer_mode(&spec, vit, D, NH, F, T, model_name)) >= 0) return prc;
    if (!model_name)
        return cli_usage_error(cmd, "--model (or --vit, or --embed-dim, --heads and --ffn-dim) is "
                                    "required");
    if (T > ATTN_MAX_WORDS)
        return cli_usage_error(cmd, "--T %d: a sentence has 1..%d words", T, ATTN_MAX_WORDS);
    attn_error err = {0};
    attn_arch arch;
    if (attn_arch_from_name(model_name, &arch, &err) != ATTN_OK)
        return cli_usage_error(cmd, "%s", err.msg);

    return count_model(arch, B, T, train);
}
