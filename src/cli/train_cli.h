/* train_cli.h -- what the files of `attn train` share (cmd_train.c: the command, its one option
 * table, and the classifiers' run; train_seq2seq.c: the seq2seq models' run; train_settings.c: the
 * model options, --init and --resume against the options given; train_progress.c: the progress
 * lines, the --log and the checkpoint after each epoch). */
#ifndef ATTN_TRAIN_CLI_H
#define ATTN_TRAIN_CLI_H

#include "cli.h"

/* The ranges a checkpoint may hold (attn_train_config_validate, attn_model_config_validate and
 * the checkpoint reader's largest lr), so that train takes exactly what --resume takes. */
#define MAX_EPOCHS 1000000
#define MAX_BATCH  (1 << 20) /* --batch and --bucket */
#define MAX_LR     1e3
#define MAX_WIDTH  (1 << 14) /* --embed-dim, --hidden, --heads (at most embed-dim) */

/* The model options; 0 (or the first choice) until given. The choices' indexes are the enums'
 * values (attn_norm, attn_activation, attn_pos). */
typedef struct model_args {
    int embed_dim, heads, ffn_dim, layers, hidden, max_len;
    int norm, activation, pos;
} model_args;

typedef struct train_args {
    const char *model, *data, *init, *out, *checkpoint, *resume, *log;
    uint64_t seed;
    int train_size;
    int threads; /* --threads (0 until resolved) */
    bool vocab_from_data;
    int min_count;
    attn_vocab *vocab; /* the model's own words (--vocab-from-data, --init's), NULL: built-in */
    attn_train_config cfg;
    model_args m;
} train_args;

/* The options only the seq2seq models take (the others are train_args'). */
typedef struct s2s_train_opts {
    const char *task; /* NULL: rewrite */
    int test_size;    /* pairs of each rewrite test set scored at the end; 0: none */
    int bidir;        /* seq2seq-attn's encoder; -1: the model's default */
    int dec_layers;
    bool quiet; /* no per-epoch lines */
} s2s_train_opts;

typedef struct train_progress {
    bool tty;
    FILE *log;
    const char *log_path;
    const char *checkpoint;
    attn_trainer *trainer;
    attn_error err; /* a failed checkpoint write */
    bool failed;
} train_progress;

/* The given model options into *mc (the defaults of its arch), each checked to apply to it;
 * then the sizes against each other and the limits. -1 on success, else the exit code. */
int cli_train_apply_model_options(cli_spec *spec, train_args *a, attn_model_config *mc);
/* Before any work (rank 0): --out's directory made, --out, --checkpoint and --log (NULL: not
 * given) writable, and each locked for the run, so that a second run writing the same files is
 * refused before either is touched. CLI_OK, or the exit code after the message. */
int cli_train_claim_outputs(const char *out, const char *checkpoint, const char *log);
/* --lr above MAX_LR (what a checkpoint may hold) refused, for both families' train: -1 or the
 * exit code. */
int cli_train_check_lr(double lr);
/* --init W.json: the model's configuration is the file's; --model and the model options, where
 * given, must agree with it. -1 or the exit code. */
int cli_train_init_settings(cli_spec *spec, train_args *a, attn_model_config *mc);
/* --resume: the model and settings are the checkpoint's; the options given must agree with
 * them. -1 or the exit code. */
int cli_train_resume_settings(cli_spec *spec, train_args *a, attn_model_config *mc);

/* attn train on a seq2seq model (train_seq2seq.c): t's options where given (spec says which)
 * over the model's defaults, then the run; the exit code. */
int cli_train_seq2seq(cli_spec *spec, const train_args *t, const s2s_train_opts *x);

/* The trainer's callbacks (user: a train_progress): a step counter on a terminal; per epoch a
 * progress line on stderr, the --log line and the checkpoint (false stops the run, the error
 * in the progress). */
void cli_train_on_step(int epoch, int step, int steps, void *user);
bool cli_train_on_epoch(const attn_epoch_stats *st, void *user);

#endif
