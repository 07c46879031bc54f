/* reproduce_cli.h -- what the files of `attn reproduce` share: cmd_reproduce.c parses the one
 * option table and help and runs the classifiers' table; reproduce_rewrite.c and
 * reproduce_compose.c run --task rewrite and --task compose with what it parsed. */
#ifndef ATTN_REPRODUCE_CLI_H
#define ATTN_REPRODUCE_CLI_H

#include "cli.h"

/* attn reproduce is one command (cmd_reproduce.c: one option table and help); --task rewrite
 * and --task compose run their own tables with what it parsed, each task's defaults filled in
 * (models NULL: the task's own). spec says what was given. */
#define CLI_REPRO_MAX_SEEDS     100
#define CLI_REPRO_S2S_MAX_SEEDS 20 /* --task rewrite|compose */
typedef struct cli_repro_args {
    cli_spec *spec;
    int seeds, epochs, train_size, workers, threads, eval_batch, holdout, test_size;
    const char *out, *models, *size, *norm, *classifier; /* out NULL: nothing written */
} cli_repro_args;
/* After a task checked its options: makes --out (out NULL: nothing) and locks it for the run,
 * on rank 0 for every rank. CLI_OK, or the exit code after the message. */
int cli_reproduce_open_out(const cli_repro_args *a);
int cli_reproduce_rewrite(const cli_repro_args *a); /* reproduce_rewrite.c */
int cli_reproduce_compose(const cli_repro_args *a); /* reproduce_compose.c */

#endif
