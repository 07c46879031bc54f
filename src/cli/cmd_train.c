/* cmd_train.c -- `attn train`: one model with Adam, progress per epoch, checkpoints and
 * resuming. Each batch is cut into fixed micro-batches of 16 sentences spread over --threads
 * (one BLAS thread per product), so the same command gives bit-identical weights on every run
 * on the same kind of machine, for every thread count. */
#include "cli.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char about[] =
    "Trains one model with Adam (PyTorch's defaults) on the course-review task and writes\n"
    "its weights as attn-weights-v1 JSON. The same command gives bit-identical weights on\n"
    "every run and for every --threads N: each batch is cut into micro-batches of 16\n"
    "sentences whose gradients are summed in a fixed order, whichever thread computes them\n"
    "(docs/numerics.md, \"Threads\").";

static const char notes[] =
    "Held-out set: the generated holdout set of the seed (the training distribution,\n"
    "disjoint from the training set; attn data --set holdout), or with --data the last\n"
    "--holdout sentences of the file. --keep-best 1 writes the weights of the epoch with the\n"
    "best held-out accuracy (ties: the later epoch); 0 those of the last epoch.\n"
    "--epochs 0 writes the initial weights of the seed (or the --init weights) untrained.\n\n"
    "Model options: --embed-dim, --layers and --hidden (rnn/lstm/gru) or --embed-dim, --heads,\n"
    "--ffn-dim, --layers, --norm, --activation, --max-len and --pos (transformer) replace the\n"
    "write-up's sizes (the defaults); an option of the other kind is a usage error.\n\n"
    "--resume continues a checkpointed run with the checkpoint's model and settings; giving\n"
    "--model, a model option, --seed, --batch, --lr, --warmup, --train-size, --holdout,\n"
    "--keep-best or --bucket with a value other than the checkpoint's is a usage error, and\n"
    "so is --data with other data.\n"
    "--epochs N extends the run and must exceed the epochs already done; the result equals\n"
    "an uninterrupted run. A resumed --log keeps one line per epoch the checkpoint holds.\n\n"
    "Vocabulary: the built-in course-review words, unless --vocab-from-data builds one from\n"
    "--data: [PAD], [CLS], [UNK] (ids 0, 1, 2), then every word of the file seen at least\n"
    "--min-count times, the most frequent first, words of equal count in byte order. Rarer\n"
    "words read as [UNK]. The vocabulary goes into the weights file (\"vocab\"), so predict,\n"
    "eval, explain and serve read words with it. --init W.json trains with W's vocabulary\n"
    "(its own, when it has one: then --data is required). Every bad line of --data is\n"
    "reported with its number (the first 20, then the count); nothing is trained.\n\n"
    "Progress (epoch, loss, accuracies, speed, ETA) goes to stderr, one line per epoch. On\n"
    "NaN/Inf the error names the step and tensor, nothing is written and the exit code is 1.";

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

typedef struct train_progress {
    bool tty;
    FILE *log;
    const char *log_path;
    const char *checkpoint;
    attn_trainer *trainer;
    attn_error err; /* a failed checkpoint write */
    bool failed;
} train_progress;

static void train_on_step(int epoch, int step, int steps, void *user) {
    const train_progress *p = user;
    if (!p->tty) return;
    fprintf(stderr, "\repoch %d: step %d/%d\033[K", epoch, step, steps);
    fflush(stderr);
}

/* One JSON line; false (errno set) when it could not be written. */
static bool log_epoch(FILE *log, const attn_epoch_stats *st) {
    bool ok = fprintf(log,
                      "{\"epoch\": %d, \"epochs\": %d, \"steps\": %ld, \"loss\": %.9g, "
                      "\"train_acc\": %.9g, \"holdout_acc\": ",
                      st->epoch, st->epochs, st->steps, st->loss, st->train_acc) >= 0;
    if (isnan(st->holdout_acc))
        ok = fprintf(log, "null") >= 0 && ok;
    else
        ok = fprintf(log, "%.9g", st->holdout_acc) >= 0 && ok;
    ok = fprintf(log, ", \"sentences_per_s\": %.6g, \"elapsed_s\": %.6g, \"eta_s\": %.6g}\n",
                 st->sentences_per_s, st->elapsed_s, st->eta_s) >= 0 &&
         ok;
    return fflush(log) == 0 && ok && !ferror(log);
}

static bool train_on_epoch(const attn_epoch_stats *st, void *user) {
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

/* The model of the seed, or of --init: a file with its own vocabulary is loaded as it is (its
 * tensors cannot go into a model on the built-in words). */
static attn_status load_or_create(const attn_model_config *mc, const train_args *a,
                                  attn_model **model, attn_error *err) {
    if (a->init && a->vocab) return attn_weights_load_json(a->init, model, err);
    attn_status st = attn_model_create(mc, a->seed, model, err);
    if (st == ATTN_OK && a->init) st = attn_weights_load_into(*model, a->init, err);
    return st;
}

/* The weights, with the model's own vocabulary when it has one. */
static attn_status save_weights(const attn_model *m, const train_args *a, attn_error *err) {
    if (!a->vocab) return attn_weights_save_json(m, false, a->out, err);
    return attn_weights_save_json_vocab(m, a->vocab, false, ATTN_WEIGHTS_TEXT, a->out, err);
}

/* --epochs 0: the fresh model of the seed (or the --init weights), written untrained. */
static int write_initial_weights(const attn_model_config *mc, const train_args *a) {
    attn_error err = {0};
    attn_model *model = NULL;
    attn_status st = load_or_create(mc, a, &model, &err);
    if (st == ATTN_OK) st = save_weights(model, a, &err);
    attn_model_free(model);
    if (st != ATTN_OK) return cli_fail("train", &err);
    cli_message("train", "wrote %s (initial weights of seed %llu, not trained)", a->out,
                (unsigned long long)a->seed);
    return CLI_OK;
}

/* A setting given with --resume that differs from the checkpoint's: a usage error. */
static int contradiction(const char *opt, const char *given, const char *path, const char *saved) {
    return cli_usage_error("train",
                           "%s %s contradicts the checkpoint %s (%s %s); a resumed run keeps the "
                           "checkpoint's settings",
                           opt, given, path, opt, saved);
}

#define CHECK_INT(opt, mine, theirs)                                                               \
    if (cli_given(spec, opt) && (long long)(mine) != (long long)(theirs)) {                        \
        char g[32], s[32];                                                                         \
        snprintf(g, sizeof g, "%lld", (long long)(mine));                                          \
        snprintf(s, sizeof s, "%lld", (long long)(theirs));                                        \
        return contradiction(opt, g, a->resume, s);                                                \
    }

/* The model options: which field each sets, and the archs it applies to. */
typedef struct model_opt {
    const char *name;
    size_t arg;   /* offset in model_args */
    size_t field; /* offset in attn_model_config */
    bool transformer, recurrent;
} model_opt;

#define MODEL_OPT(name, arg, field, tr, rec)                                                       \
    { name, offsetof(model_args, arg), offsetof(attn_model_config, field), tr, rec }
static const model_opt model_opts[] = {
    MODEL_OPT("--embed-dim", embed_dim, embed_dim, true, true),
    MODEL_OPT("--layers", layers, n_layers, true, true),
    MODEL_OPT("--hidden", hidden, hidden_size, false, true),
    MODEL_OPT("--heads", heads, n_heads, true, false),
    MODEL_OPT("--ffn-dim", ffn_dim, ffn_dim, true, false),
    MODEL_OPT("--max-len", max_len, max_len, true, false),
    MODEL_OPT("--norm", norm, norm, true, false),
    MODEL_OPT("--activation", activation, activation, true, false),
    MODEL_OPT("--pos", pos, pos, true, false),
};
#undef MODEL_OPT
#define N_MODEL_OPTS (sizeof model_opts / sizeof model_opts[0])

/* The value of option o as the user writes it ("gelu", "32"). */
static const char *model_opt_text(cli_spec *spec, const model_opt *o, int v, char *buf, size_t n) {
    const cli_opt *c = cli_opt_find(spec, o->name);
    if (c->type != CLI_OPT_CHOICE) {
        snprintf(buf, n, "%d", v);
        return buf;
    }
    const char *p = c->choices;
    for (int i = 0; i < v && p; i++)
        if ((p = strchr(p, '|'))) p++;
    size_t len = p ? strcspn(p, "|") : 0;
    snprintf(buf, n, "%.*s", (int)len, p ? p : "?");
    return buf;
}

static int *model_arg(model_args *m, const model_opt *o) {
    return (int *)((char *)m + o->arg);
}
static int *config_field(attn_model_config *c, const model_opt *o) {
    return (int *)((char *)c + o->field);
}

/* The given model options into *mc (the defaults of its arch), each checked to apply to it;
 * then the sizes against each other and the limits. -1 on success, else the exit code. */
static int apply_model_options(cli_spec *spec, train_args *a, attn_model_config *mc) {
    const bool tr = mc->arch == ATTN_ARCH_TRANSFORMER;
    for (size_t i = 0; i < N_MODEL_OPTS; i++) {
        const model_opt *o = &model_opts[i];
        if (!cli_given(spec, o->name)) continue;
        if (tr ? !o->transformer : !o->recurrent)
            return cli_usage_error(
                "train", "%s does not apply to --model %s (%s)", o->name, attn_arch_name(mc->arch),
                o->transformer ? "a transformer option" : "an rnn, lstm and gru option");
        *config_field(mc, o) = *model_arg(&a->m, o);
    }
    const int max_layers = tr ? ATTN_TRANSFORMER_MAX_LAYERS : ATTN_RECURRENT_MAX_LAYERS;
    if (mc->n_layers > max_layers)
        return cli_usage_error("train", "--layers %d: a %s has 1..%d layers", mc->n_layers,
                               attn_arch_name(mc->arch), max_layers);
    if (tr && mc->n_heads > mc->embed_dim)
        return cli_usage_error("train", "--heads %d: more heads than --embed-dim %d", mc->n_heads,
                               mc->embed_dim);
    if (tr && mc->embed_dim % mc->n_heads != 0)
        return cli_usage_error("train",
                               "--heads %d does not divide --embed-dim %d (the head "
                               "size is embed-dim / heads)",
                               mc->n_heads, mc->embed_dim);
    attn_error err;
    if (attn_model_config_validate(mc, &err) != ATTN_OK)
        return cli_usage_error("train", "model options: %s", err.msg);
    size_t n = attn_model_config_n_params(mc);
    if (n > attn_io_max_params())
        return cli_usage_error("train",
                               "the model options give %zu parameters, over the limit "
                               "of %zu (ATTN_MAX_PARAMS)",
                               n, attn_io_max_params());
    return -1;
}

/* With --resume: every model option given must equal the checkpoint's model. */
static int check_model_options(cli_spec *spec, train_args *a, attn_model_config *mc) {
    for (size_t i = 0; i < N_MODEL_OPTS; i++) {
        const model_opt *o = &model_opts[i];
        const bool tr = mc->arch == ATTN_ARCH_TRANSFORMER;
        if (!cli_given(spec, o->name)) continue;
        char g[32], s[32];
        if (tr ? !o->transformer : !o->recurrent)
            return cli_usage_error("train", "%s does not apply to the checkpoint's %s model %s",
                                   o->name, attn_arch_name(mc->arch), a->resume);
        const int mine = *model_arg(&a->m, o), theirs = *config_field(mc, o);
        if (mine != theirs)
            return contradiction(o->name, model_opt_text(spec, o, mine, g, sizeof g), a->resume,
                                 model_opt_text(spec, o, theirs, s, sizeof s));
    }
    return -1;
}

/* --init W.json: the model's configuration is the file's (any sizes); --model and the model
 * options, where given, must agree with it. */
static int init_settings(cli_spec *spec, train_args *a, attn_model_config *mc) {
    attn_model *m = NULL;
    attn_error err = {0};
    if (attn_weights_load_json_vocab(a->init, &m, &a->vocab, &err) != ATTN_OK)
        return cli_fail("train", &err);
    *mc = *attn_model_config_of(m);
    attn_model_free(m);
    if (a->vocab && !a->data)
        return cli_usage_error("train",
                               "--init %s has its own vocabulary (%d tokens); generated data "
                               "is in the built-in one: give your sentences with --data FILE.tsv",
                               a->init, attn_vocab_count(a->vocab));
    if (a->model && strcmp(a->model, attn_arch_name(mc->arch)) != 0)
        return cli_usage_error("train", "--model %s contradicts --init %s (a %s model)", a->model,
                               a->init, attn_arch_name(mc->arch));
    for (size_t i = 0; i < N_MODEL_OPTS; i++) {
        const model_opt *o = &model_opts[i];
        if (!cli_given(spec, o->name)) continue;
        const bool tr = mc->arch == ATTN_ARCH_TRANSFORMER;
        if (tr ? !o->transformer : !o->recurrent)
            return cli_usage_error("train", "%s does not apply to the %s model of --init %s",
                                   o->name, attn_arch_name(mc->arch), a->init);
        const int mine = *model_arg(&a->m, o), theirs = *config_field(mc, o);
        char g[32], s[32];
        if (mine != theirs)
            return cli_usage_error("train", "%s %s contradicts --init %s (%s %s)", o->name,
                                   model_opt_text(spec, o, mine, g, sizeof g), a->init, o->name,
                                   model_opt_text(spec, o, theirs, s, sizeof s));
    }
    return -1;
}

/* Takes model and settings from the checkpoint; the options given must agree with them. */
static int resume_settings(cli_spec *spec, train_args *a, attn_model_config *mc) {
    attn_train_config saved;
    int n_saved = 0;
    attn_error err = {0};
    if (attn_checkpoint_peek(a->resume, mc, &saved, &n_saved, &err) != ATTN_OK)
        return cli_fail("train", &err);
    if (a->model && strcmp(a->model, attn_arch_name(mc->arch)) != 0)
        return contradiction("--model", a->model, a->resume, attn_arch_name(mc->arch));
    if (a->init) return cli_usage_error("train", "--init and --resume exclude each other");
    int rc = check_model_options(spec, a, mc);
    if (rc >= 0) return rc;
    if (a->vocab && attn_vocab_count(a->vocab) != mc->vocab_size)
        return cli_usage_error("train",
                               "--vocab-from-data makes %d tokens from %s, the checkpoint %s "
                               "has %d (other data or another --min-count)",
                               attn_vocab_count(a->vocab), a->data, a->resume, mc->vocab_size);
    if (!a->vocab && mc->vocab_size != attn_vocab_size())
        return cli_usage_error("train",
                               "the checkpoint %s has a vocabulary of its own (%d tokens): give "
                               "--data and --vocab-from-data as when it was started",
                               a->resume, mc->vocab_size);
    CHECK_INT("--seed", a->seed, saved.seed);
    CHECK_INT("--warmup", a->cfg.warmup, saved.warmup);
    CHECK_INT("--batch", a->cfg.batch_size, saved.batch_size);
    CHECK_INT("--holdout", a->cfg.holdout, saved.holdout);
    CHECK_INT("--keep-best", a->cfg.keep_best, saved.keep_best);
    CHECK_INT("--bucket", a->cfg.bucket, saved.bucket);
    if (!a->data) CHECK_INT("--train-size", a->train_size, n_saved);
    if (cli_given(spec, "--lr") && a->cfg.adam.lr != saved.adam.lr) {
        char g[32], s[32];
        snprintf(g, sizeof g, "%g", a->cfg.adam.lr);
        snprintf(s, sizeof s, "%g", saved.adam.lr);
        return contradiction("--lr", g, a->resume, s);
    }
    if (cli_given(spec, "--epochs")) {
        if (a->cfg.epochs == 0)
            return cli_usage_error("train", "--epochs 0 writes initial weights; not with --resume");
        saved.epochs = a->cfg.epochs;
    }
    if (!a->data) a->train_size = n_saved; /* the same generated data */
    a->cfg = saved;
    a->seed = saved.seed;
    return -1;
}
#undef CHECK_INT

/* After attn_trainer_load_checkpoint: the run must have epochs left to train. */
static int check_epochs_left(cli_spec *spec, const train_args *a, const attn_trainer *t) {
    int done = attn_trainer_epoch(t);
    if (a->cfg.epochs > done) return -1;
    if (cli_given(spec, "--epochs"))
        return cli_usage_error("train",
                               "--epochs %d: %s has already done %d %s; give more to "
                               "continue the run",
                               a->cfg.epochs, a->resume, done, cli_plural(done, "epoch", "epochs"));
    return cli_usage_error("train",
                           "%s has done all %d %s of its run; give --epochs N > %d to "
                           "continue it",
                           a->resume, done, cli_plural(done, "epoch", "epochs"), done);
}

/* Data, model and trainer (restored from the checkpoint with --resume). */
static int setup(cli_spec *spec, const train_args *a, const attn_model_config *mc,
                 attn_dataset **data, attn_dataset **heldout, attn_model **model,
                 attn_trainer **trainer) {
    attn_error err = {0};
    attn_status st;
    if (a->data) {
        int rc = cli_read_tsv("train", a->data, a->vocab, data);
        if (rc >= 0) return rc;
        st = ATTN_OK;
    } else {
        st = attn_data_generate(ATTN_SET_TRAIN, a->train_size, a->seed, data, &err);
        if (st == ATTN_OK && a->cfg.holdout > 0)
            st = attn_data_generate(ATTN_SET_HOLDOUT, a->cfg.holdout, a->seed, heldout, &err);
    }
    if (st == ATTN_OK && mc->arch == ATTN_ARCH_TRANSFORMER) {
        int longest = 0;
        for (int i = 0; i < (*data)->n; i++)
            if ((*data)->lengths[i] > longest) longest = (*data)->lengths[i];
        if (longest > mc->max_len - 1)
            return cli_usage_error("train",
                                   "--max-len %d takes sentences of up to %d words, the training "
                                   "data has one of %d (give --max-len %d or more)",
                                   mc->max_len, mc->max_len - 1, longest, longest + 1);
    }
    if (st == ATTN_OK) st = load_or_create(mc, a, model, &err);
    if (st == ATTN_OK)
        st = attn_trainer_create_heldout(*model, *data, *heldout, &a->cfg, trainer, &err);
    if (st != ATTN_OK) return cli_fail("train", &err);
    if (!a->resume) return -1;
    if (attn_trainer_load_checkpoint(*trainer, a->resume, &err) != ATTN_OK) {
        if (a->data && err.code == ATTN_CODE_OTHER_DATA)
            return cli_usage_error("train", "--data %s contradicts the checkpoint: %s", a->data,
                                   err.msg);
        return cli_fail("train", &err);
    }
    return check_epochs_left(spec, a, *trainer);
}

static void print_header(const train_args *a, const attn_model_config *mc, const attn_model *m,
                         const attn_dataset *data, const attn_dataset *heldout,
                         const attn_trainer *t) {
    const attn_train_config *c = &a->cfg;
    int todo = c->epochs - attn_trainer_epoch(t);
    fprintf(stderr,
            "attn train: %s, %zu parameters, %d training + %d held-out sentences, %d %s (from "
            "epoch %d of %d), batch %d, lr %g, seed %llu, %d %s\n",
            attn_arch_name(mc->arch), attn_model_n_params(m),
            heldout ? data->n : data->n - c->holdout, c->holdout, todo,
            cli_plural(todo, "epoch", "epochs"), attn_trainer_epoch(t) + 1, c->epochs,
            c->batch_size, c->adam.lr, (unsigned long long)a->seed, a->threads,
            cli_plural(a->threads, "thread", "threads"));
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

/* Opens --log: truncated for a new run; for a resumed one trimmed to the epochs done, then
 * appended to. */
static int open_log(const train_args *a, int done, FILE **log) {
    attn_error err = {0};
    if (a->resume && trim_log(a->log, done, &err) != ATTN_OK) return cli_fail("train", &err);
    if (!(*log = fopen(a->log, a->resume ? "a" : "w")))
        return cli_runtime_error("train", "%s: cannot open: %s", a->log, strerror(errno));
    return -1;
}

/* Trains and writes the weights. */
static int train(cli_spec *spec, train_args *a, const attn_model_config *mc) {
    attn_dataset *data = NULL, *heldout = NULL;
    attn_model *model = NULL;
    attn_trainer *trainer = NULL;
    attn_pool *pool = NULL;
    attn_error err = {0};
    FILE *log = NULL;
    /* bit-identical training for every thread and core count (attn_threads.h) */
    int rc = cli_threads_start("train", &a->threads, &pool);
    if (rc < 0) rc = setup(spec, a, mc, &data, &heldout, &model, &trainer);
    if (rc < 0 && attn_trainer_set_pool(trainer, pool, &err) != ATTN_OK)
        rc = cli_fail("train", &err);
    if (rc < 0 && a->log) rc = open_log(a, attn_trainer_epoch(trainer), &log);
    if (rc >= 0) goto done;
    train_progress prog = {
        isatty(fileno(stderr)) == 1, log, a->log, a->checkpoint, trainer, {0}, false};
    print_header(a, mc, model, data, heldout, trainer);
    attn_train_callbacks cb = {train_on_epoch, train_on_step, &prog};
    attn_status st = attn_trainer_run(trainer, &cb, &err);
    if (st != ATTN_OK && prog.tty) fprintf(stderr, "\n");
    if (st == ATTN_OK && prog.failed) err = prog.err, st = err.status;
    if (st == ATTN_OK && log) {
        FILE *f = log;
        log = NULL;
        if (fclose(f) != 0)
            st = attn_errorf(&err, ATTN_ERR_IO, "%s: closing the log failed: %s", a->log,
                             strerror(errno));
    }
    if (st == ATTN_OK) st = save_weights(model, a, &err);
    if (st != ATTN_OK) {
        rc = cli_fail("train", &err);
        goto done;
    }
    double best_acc = 0.0;
    int best_epoch = attn_trainer_best_epoch(trainer, &best_acc);
    if (best_epoch > 0)
        fprintf(stderr, "attn train: kept epoch %d (best held-out accuracy %.1f%%)\n", best_epoch,
                100.0 * best_acc);
    cli_message("train", "wrote %s", a->out);
    rc = CLI_OK;
done:
    if (log) fclose(log);
    attn_trainer_free(trainer);
    attn_pool_free(pool);
    attn_model_free(model);
    attn_dataset_free(data);
    attn_dataset_free(heldout);
    return rc;
}

/* --vocab-from-data and --min-count: checked, and the vocabulary made from --data. */
static int data_vocab(cli_spec *spec, train_args *a) {
    if (cli_given(spec, "--min-count") && !a->vocab_from_data)
        return cli_usage_error("train", "--min-count goes with --vocab-from-data");
    if (!a->vocab_from_data) return -1;
    if (!a->data) return cli_usage_error("train", "--vocab-from-data needs --data FILE.tsv");
    if (a->init)
        return cli_usage_error("train",
                               "--vocab-from-data and --init exclude each other (--init trains "
                               "with its file's vocabulary)");
    return cli_vocab_from_tsv("train", a->data, a->min_count, &a->vocab);
}

static int run(cli_spec *spec, train_args *a) {
    int rc = data_vocab(spec, a);
    if (rc >= 0) return rc;
    if (a->cfg.adam.lr > MAX_LR)
        return cli_usage_error("train", "--lr expects a positive number up to %g, got %g", MAX_LR,
                               a->cfg.adam.lr);
    attn_model_config mc;
    if (a->resume) {
        if ((rc = resume_settings(spec, a, &mc)) >= 0) return rc;
    } else if (a->init) {
        if ((rc = init_settings(spec, a, &mc)) >= 0) return rc;
        a->cfg.seed = a->seed;
    } else {
        if (!a->model)
            return cli_usage_error("train", "--model (or --resume or --init) is required");
        attn_arch arch;
        attn_error err;
        if (attn_arch_from_name(a->model, &arch, &err) != ATTN_OK)
            return cli_usage_error("train", "--model: %s", err.msg);
        mc = attn_model_config_default(arch);
        if (a->vocab) mc.vocab_size = attn_vocab_count(a->vocab);
        if ((rc = apply_model_options(spec, a, &mc)) >= 0) return rc;
        a->cfg.seed = a->seed;
    }
    char default_out[64];
    if (!a->out) {
        snprintf(default_out, sizeof default_out, "%s-seed%llu.json", attn_arch_name(mc.arch),
                 (unsigned long long)a->seed);
        a->out = default_out;
    }
    /* a missing directory is reported now, not after hours of training */
    if ((rc = cli_check_dest("train", "--out", a->out)) != CLI_OK) return rc;
    if (a->checkpoint && (rc = cli_check_dest("train", "--checkpoint", a->checkpoint)) != CLI_OK)
        return rc;
    if (a->log && (rc = cli_check_dest("train", "--log", a->log)) != CLI_OK) return rc;
    /* a second run writing the same files is refused before either is touched */
    if ((rc = cli_lock_output("train", "--out", a->out)) != CLI_OK) return rc;
    if (a->checkpoint && strcmp(a->checkpoint, a->out) != 0 &&
        (rc = cli_lock_output("train", "--checkpoint", a->checkpoint)) != CLI_OK)
        return rc;
    if (a->log && strcmp(a->log, a->out) != 0 &&
        (!a->checkpoint || strcmp(a->log, a->checkpoint)) &&
        (rc = cli_lock_output("train", "--log", a->log)) != CLI_OK)
        return rc;
    if (a->cfg.epochs == 0) return write_initial_weights(&mc, a);
    return train(spec, a, &mc);
}

/* True when argv asks for a seq2seq model (--task, or --model seq2seq-...): cmd_train_seq2seq.c. */
static bool wants_seq2seq(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--task") == 0 || strncmp(argv[i], "--task=", 7) == 0) return true;
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc &&
            strncmp(argv[i + 1], "seq2seq-", 8) == 0)
            return true;
    }
    return false;
}

int cmd_train(int argc, char **argv) {
    if (wants_seq2seq(argc, argv)) return cmd_train_seq2seq(argc, argv);
    train_args a = {.seed = 1,
                    .train_size = ATTN_TRAIN_DEFAULT_N,
                    .min_count = 1,
                    .cfg = attn_train_config_default()};
    cli_opt opts[] = {
        {"--model", "NAME", CLI_OPT_STR, &a.model,
         .help = "rnn, lstm, gru or transformer; required unless --resume or --init"},
        {"--seed", "S", CLI_OPT_U64, &a.seed,
         .help = "seed of the data, the initialisation and the shuffling"},
        {"--epochs", "N", CLI_OPT_INT, &a.cfg.epochs, 0, MAX_EPOCHS,
         .help = "epochs; 0 writes the initial weights"},
        {"--batch", "B", CLI_OPT_INT, &a.cfg.batch_size, 1, MAX_BATCH,
         .help = "sentences per Adam step"},
        {"--lr", "X", CLI_OPT_REAL, &a.cfg.adam.lr, .help = "Adam learning rate (at most 1000)"},
        {"--train-size", "N", CLI_OPT_INT, &a.train_size, 2, ATTN_DATA_MAX_N,
         .help = "generated training sentences"},
        {"--holdout", "N", CLI_OPT_INT, &a.cfg.holdout, 0, ATTN_DATA_MAX_N,
         .help = "held-out sentences for the held-out accuracy; 0 = none"},
        {"--keep-best", "0|1", CLI_OPT_INT, &a.cfg.keep_best, 0, 1,
         .help = "1: write the best held-out epoch's weights; 0: the last's"},
        {"--bucket", "K", CLI_OPT_INT, &a.cfg.bucket, 1, MAX_BATCH,
         .help = "sort chunks of K batches by length; 1 = off"},
        {"--data", "FILE.tsv", CLI_OPT_STR, &a.data,
         .help = "train on a TSV file (label<TAB>sentence)"},
        {"--vocab-from-data", NULL, CLI_OPT_FLAG, &a.vocab_from_data,
         .help = "the model's words are those of --data (see Vocabulary below),\n"
                 "stored in the weights file"},
        {"--min-count", "N", CLI_OPT_INT, &a.min_count, 1, 1000000,
         .help = "with --vocab-from-data: words seen fewer times read as [UNK]"},
        {"--init", "W.json", CLI_OPT_STR, &a.init,
         .help = "start from these weights, e.g. exported from PyTorch; the model and\n"
                 "its configuration come from the file (--model may be omitted)"},
        {"--out", "W.json", CLI_OPT_STR, &a.out, .def = "<model>-seed<S>.json",
         .help = "where to write the weights"},
        {"--checkpoint", "C.json", CLI_OPT_STR, &a.checkpoint,
         .help = "save the full training state after every epoch"},
        {"--resume", "C.json", CLI_OPT_STR, &a.resume, .help = "continue a checkpointed run"},
        {"--log", "FILE.jsonl", CLI_OPT_STR, &a.log,
         .help = "one JSON line per epoch with the progress"},
        CLI_THREADS_OPT(&a.threads),
        {"--warmup", "N", CLI_OPT_INT, &a.cfg.warmup, 0, ATTN_MAX_WARMUP,
         .help = "linear learning-rate warm-up over the first N Adam steps: step k\n"
                 "(0-based) uses lr * min(1, (k+1)/N), PyTorch's LambdaLR with that\n"
                 "lambda, stepped after each optimizer step; 0 = off"},
        {"--embed-dim", "N", CLI_OPT_INT, &a.m.embed_dim, 1, MAX_WIDTH,
         .def = "32 transformer, 16 rnn/lstm/gru",
         .help = "model width D (transformer) or word embedding width E"},
        {"--layers", "N", CLI_OPT_INT, &a.m.layers, 1, ATTN_TRANSFORMER_MAX_LAYERS,
         .def = "2 transformer, 1 rnn/lstm/gru",
         .help = "encoder layers (transformer 1..12) or stacked recurrent layers\n"
                 "(PyTorch num_layers; rnn/lstm/gru 1..8)"},
        {"--hidden", "N", CLI_OPT_INT, &a.m.hidden, 1, MAX_WIDTH, .def = "32",
         .help = "rnn/lstm/gru hidden size H"},
        {"--heads", "N", CLI_OPT_INT, &a.m.heads, 1, MAX_WIDTH, .def = "2",
         .help = "transformer attention heads; must divide --embed-dim"},
        {"--ffn-dim", "N", CLI_OPT_INT, &a.m.ffn_dim, 1, 65536, .def = "64",
         .help = "transformer feed-forward width F"},
        {"--max-len", "N", CLI_OPT_INT, &a.m.max_len, 2, 65536, .def = "81",
         .help = "transformer positions including [CLS] (sentences of up to N-1 words)"},
        {"--norm", "pre|post", CLI_OPT_CHOICE, &a.m.norm, .choices = "pre|post",
         .help = "transformer LayerNorm placement (PyTorch norm_first=True for pre)"},
        {"--activation", "relu|gelu", CLI_OPT_CHOICE, &a.m.activation, .choices = "relu|gelu",
         .help = "transformer feed-forward activation (gelu: the erf form)"},
        {"--pos", "P", CLI_OPT_CHOICE, &a.m.pos, .choices = "learned|sinusoidal|none|rope|alibi",
         .help = "transformer positions: a trained table, the fixed sinusoidal\n"
                 "table (not trained, not in the weights file), none, rotary q/k\n"
                 "(rope) or a linear score bias (alibi)"},
    };
    cli_spec spec = {"train",
                     "--model rnn|lstm|gru|transformer [OPTIONS]\n"
                     "--model NAME --data FILE.tsv --vocab-from-data [--min-count N] [OPTIONS]\n"
                     "--init W.json [--data FILE.tsv] [OPTIONS]\n"
                     "--resume C.json [--epochs N] [OPTIONS]",
                     about,
                     NULL,
                     notes,
                     opts,
                     (int)(sizeof opts / sizeof opts[0])};
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc < 0) rc = run(&spec, &a);
    attn_vocab_free(a.vocab);
    return rc;
}
