/* kernels_policy.c -- which kernels a command runs on when nobody says (docs/numerics.md,
 * "Which kernels a command runs on"): native, the kernels OpenBLAS picks for this machine (the
 * ones a stock PyTorch installed here runs, so a user's own work matches it bit for bit and runs
 * at the machine's speed), except where a command's bytes must travel: the committed weights,
 * figures and claims, which every AVX2 machine must give byte for byte, run pinned. The one
 * table below is the rule; $ATTN_KERNELS and --kernels choose otherwise, in that order. */
#include "cli.h"

#include "attn_kernelset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kernels_rule {
    const char *cmd;
    attn_kernels_mode mode;
    const char *why; /* what the command's output is used for */
} kernels_rule;

#define PINNED ATTN_KERNELS_PINNED
#define NATIVE ATTN_KERNELS_NATIVE

static const kernels_rule rules[] = {
    /* bytes that travel: compared with committed files on other machines */
    {"reproduce", PINNED, "its weights are compared with the committed weights/"},
    {"figures", PINNED, "its files are the committed docs/figures/"},
    {"experiment", PINNED, "its verdicts are the write-up's claims (docs/claims.md)"},
    {"attend", PINNED, "its report is the committed docs/figures/s2-attend.md"},
    {"lesson", PINNED, "its reports are docs/figures/s3-scaling.md and s4-positions.md"},
    {"sweep", PINNED, "its points are compared with each other, wherever (mpirun) they ran"},
    /* the user's own work: the machine's speed and its stock PyTorch's bits */
    {"predict", NATIVE, "the user's own work"},
    {"generate", NATIVE, "the user's own work"},
    {"explain", NATIVE, "the user's own work"},
    {"saliency", NATIVE, "the user's own work (the write-up's figure: attn figures)"},
    {"eval", NATIVE, "the user's own work"},
    {"grad", NATIVE, "the user's own work"},
    {"train", NATIVE, "the user's own work"},
    {"serve", NATIVE, "the user's own work"},
    {"flops", NATIVE, "the user's own work"},
    /* no products: the kernels do not enter their output */
    {"data", NATIVE, "no products"},
    {"vocab", NATIVE, "no products"},
    {"info", NATIVE, "no products"},
};

static const kernels_rule *find_rule(const char *cmd) {
    for (size_t i = 0; cmd && i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(rules[i].cmd, cmd) == 0) return &rules[i];
    return NULL;
}

attn_kernels_mode cli_kernels_default(const char *cmd, const char **why) {
    const kernels_rule *r = find_rule(cmd);
    if (why) *why = r ? r->why : "the user's own work";
    return r ? r->mode : NATIVE; /* a command not in the table is the user's own work */
}

/* "kernels: native, predict's default (the user's own work): OpenBLAS 0.3.21 Zen, ..." with
 * ATTN_DEBUG set: what runs before --kernels is read. */
static void log_kernels(const char *source) {
    attn_kernels_info k;
    char text[160];
    attn_kernels_info_get(&k);
    attn_kernels_info_describe(&k, text, sizeof text);
    attn_log(ATTN_LOG_DEBUG, "kernels: %s, %s: %s", k.mode, source, text);
}

void cli_kernels_apply_default(const char *cmd) {
    const char *env = getenv("ATTN_KERNELS");
    if (env && env[0]) { /* chosen by the caller; applied before main (preferred_blas.c) */
        log_kernels("from $ATTN_KERNELS");
        return;
    }
    const char *why;
    attn_kernels_mode mode = cli_kernels_default(cmd, &why);
    /* also for the processes the command starts, so that they run on the same kernels */
    if (setenv("ATTN_KERNELS", attn_kernels_mode_name(mode), 1) != 0 || !attn_kernels_select(mode))
        cli_message(cmd, "warning: %s kernels: not every kernel could be switched",
                    attn_kernels_mode_name(mode));
    char source[160];
    snprintf(source, sizeof source, "%s's default (%s)", cmd, why);
    log_kernels(source);
}

void cli_print_kernels(void) {
    attn_kernels_info k;
    char text[160];
    attn_kernels_info_get(&k);
    attn_kernels_info_describe(&k, text, sizeof text);
    printf("kernels: %s\n", text);
}

void cli_print_recorded_kernels(const attn_kernels_info *k) {
    char text[160] = "none recorded (no attn training computed these values)";
    if (k) attn_kernels_info_describe(k, text, sizeof text);
    printf("kernels      %s\n", text);
}
