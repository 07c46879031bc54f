/* train_progress.c -- `attn train`'s progress: a line per epoch on stderr (a step counter on a
 * terminal), one JSON line per epoch in --log (trimmed to the checkpoint's epochs on
 * --resume; the opening is shared with seq2seq training), the checkpoint after each epoch. */
#include "train_cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cli_train_on_step(int epoch, int step, int steps, void *user) {
    const train_progress *p = user;
    if (!p->tty) return;
    fprintf(stderr, "\repoch %d: step %d/%d\033[K", epoch, step, steps);
    fflush(stderr);
}

/* One JSON line; false (errno set) when it could not be written. */
static bool log_epoch(FILE *log, const attn_epoch_stats *st) {
    attn_json_writer w;
    attn_json_writer_init(&w, log);
    attn_json_begin_object(&w);
    attn_json_field_int(&w, "epoch", st->epoch);
    attn_json_field_int(&w, "epochs", st->epochs);
    attn_json_field_int(&w, "steps", st->steps);
    attn_json_field_double(&w, "loss", st->loss);
    attn_json_field_double(&w, "train_acc", st->train_acc);
    attn_json_key(&w, "holdout_acc"), attn_json_measured(&w, st->holdout_acc, 9);
    attn_json_key(&w, "sentences_per_s"), attn_json_digits(&w, st->sentences_per_s, 6);
    attn_json_key(&w, "elapsed_s"), attn_json_digits(&w, st->elapsed_s, 6);
    attn_json_key(&w, "eta_s"), attn_json_digits(&w, st->eta_s, 6);
    attn_json_end_object(&w);
    bool ok = attn_json_writer_finish(&w, NULL) == ATTN_OK;
    ok = fputc('\n', log) != EOF && ok;
    return fflush(log) == 0 && ok && !ferror(log);
}

bool cli_train_on_epoch(const attn_epoch_stats *st, void *user) {
    train_progress *p = user;
    char el[32], eta[32], ho[32];
    cli_fmt_duration(el, sizeof el, st->elapsed_s);
    cli_fmt_duration(eta, sizeof eta, st->eta_s);
    if (isnan(st->holdout_acc))
        snprintf(ho, sizeof ho, "-");
    else
        snprintf(ho, sizeof ho, "%.1f%%", 100.0 * st->holdout_acc);
    fprintf(stderr,
            "%sepoch %*d/%d  loss %.4f  train %.1f%%  held-out %s  %.0f sent/s  elapsed %s  "
            "ETA %s%s",
            p->tty ? "\r" : "", st->epochs >= 10 ? 2 : 1, st->epoch, st->epochs, st->loss,
            100.0 * st->train_acc, ho, st->sentences_per_s, el, eta, p->tty ? "\033[K\n" : "\n");
    if (p->log && !log_epoch(p->log, st)) {
        attn_errorf(&p->err, ATTN_ERR_IO, "%s: writing the log failed: %s", p->log_path,
                    strerror(errno));
        p->failed = true;
        return false;
    }
    if (p->checkpoint &&
        attn_trainer_save_checkpoint(p->trainer, p->checkpoint, &p->err) != ATTN_OK) {
        p->failed = true;
        return false;
    }
    return true;
}

/* The epoch number a log line starts with ({"epoch": N, ...}), or 0. */
static int log_line_epoch(const char *line) {
    int e = 0;
    return sscanf(line, "{\"epoch\": %d,", &e) == 1 && e > 0 ? e : 0;
}

/* A resumed run's log keeps one line for each epoch the checkpoint holds (the last such line
 * of each, in epoch order), so epochs trained again after a kill are not logged twice. Only a
 * regular file is rewritten; a missing one is fine. */
static attn_status trim_log(const char *path, int done, attn_error *err) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return ATTN_OK;
    FILE *f = fopen(path, "r");
    if (!f) return attn_errorf(err, ATTN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char **keep = calloc((size_t)done + 1, sizeof *keep);
    char *line = NULL, *text = NULL;
    size_t cap = 0, len = 0;
    attn_status s = keep ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
    while (s == ATTN_OK && getline(&line, &cap, f) >= 0) {
        int e = log_line_epoch(line);
        if (e < 1 || e > done) continue;
        free(keep[e]);
        if (!(keep[e] = strdup(line))) s = attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    }
    if (s == ATTN_OK && ferror(f))
        s = attn_errorf(err, ATTN_ERR_IO, "%s: read error: %s", path, strerror(errno));
    fclose(f);
    FILE *mem = s == ATTN_OK ? open_memstream(&text, &len) : NULL;
    if (s == ATTN_OK && !mem) s = attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    for (int e = 1; mem && e <= done; e++)
        if (keep[e]) fputs(keep[e], mem);
    if (mem && fclose(mem) != 0) s = attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    if (s == ATTN_OK) s = attn_write_file_atomic(path, text, len, err);
    for (int e = 0; keep && e <= done; e++) free(keep[e]);
    free(keep);
    free(line);
    free(text);
    return s;
}

int cli_train_log_open(const char *path, int done, bool resumed, FILE **out) {
    attn_error err = {0};
    if (resumed && trim_log(path, done, &err) != ATTN_OK) return cli_fail("train", &err);
    if (!(*out = fopen(path, resumed ? "a" : "w")))
        return cli_runtime_error("train", "%s: cannot open: %s", path, strerror(errno));
    return -1;
}
