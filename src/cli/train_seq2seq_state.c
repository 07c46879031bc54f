/* train_seq2seq_state.c -- checkpoints, --resume and --log for `attn train` on seq2seq models
 * (train_seq2seq.c calls these): a checkpoint after every epoch (written atomically), a run
 * continued from one, and one JSON line per epoch in the log. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Options a resumed run may be given: everything else is the checkpoint's. */
static const char *const resume_opts[] = {"--resume", "--epochs", "--out",    "--checkpoint",
                                          "--log",    "--quiet",  "--threads"};

int cli_s2s_resume_setup(cli_spec *spec, const char *path, attn_s2s_train_state *from,
                         attn_seq2seq_config *mc, attn_s2s_train_config *tc, int *train_size,
                         uint64_t *seed) {
    for (int i = 0; i < spec->n_opts; i++) {
        bool ok = !spec->opts[i].given;
        for (size_t k = 0; k < sizeof resume_opts / sizeof resume_opts[0] && !ok; k++)
            ok = strcmp(spec->opts[i].name, resume_opts[k]) == 0;
        if (!ok)
            return cli_usage_error("train",
                                   "%s does not go with --resume: a resumed run keeps the "
                                   "checkpoint's model, data and settings (only --epochs, "
                                   "--out, --checkpoint, --log, --quiet and --threads may be "
                                   "given)",
                                   spec->opts[i].name);
    }
    attn_error err;
    if (attn_s2s_checkpoint_load(path, from, &err) != ATTN_OK) return cli_fail("train", &err);
    const int epochs = cli_given(spec, "--epochs") ? tc->epochs : from->train_cfg.epochs;
    if (epochs < from->epoch) {
        const int done = from->epoch;
        attn_s2s_train_state_clear(from);
        return cli_usage_error("train", "--epochs %d: %s has done %d epochs already", epochs, path,
                               done);
    }
    *mc = from->model_cfg;
    *tc = from->train_cfg;
    tc->epochs = epochs;
    *train_size = from->n_pairs;
    *seed = from->train_cfg.seed;
    return -1;
}

/* ---- the log (opened by cli_train_log_open, train_progress.c) ------------------------------- */

static void put_number(attn_json_writer *w, const char *key, double x) {
    attn_json_key(w, key);
    attn_json_measured(w, x, 9);
}

bool cli_s2s_log_epoch(FILE *f, const attn_s2s_epoch_stats *st) {
    attn_json_writer w;
    attn_json_writer_init(&w, f);
    attn_json_begin_object(&w);
    attn_json_field_int(&w, "epoch", st->epoch);
    attn_json_field_int(&w, "epochs", st->epochs);
    attn_json_field_int(&w, "steps", st->steps);
    put_number(&w, "loss", st->loss);
    put_number(&w, "holdout_exact", st->holdout_exact);
    put_number(&w, "holdout_loss", st->holdout_loss);
    put_number(&w, "tokens_per_s", st->tokens_per_s);
    put_number(&w, "elapsed_s", st->elapsed_s);
    attn_json_end_object(&w);
    bool ok = attn_json_writer_finish(&w, NULL) == ATTN_OK;
    ok = fputc('\n', f) != EOF && ok;
    return fflush(f) == 0 && ok && !ferror(f);
}

attn_status cli_s2s_write_checkpoint(const attn_s2s_train_state *st, void *user, attn_error *err) {
    return attn_s2s_checkpoint_save(st, (const char *)user, err);
}
