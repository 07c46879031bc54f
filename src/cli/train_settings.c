/* train_settings.c -- `attn train`'s model options and the settings of --init and --resume:
 * each option given must apply to the model and agree with the file it continues. */
#include "train_cli.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

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

int cli_train_check_lr(double lr) {
    if (lr > MAX_LR)
        return cli_usage_error("train", "--lr expects a positive number up to %g, got %g", MAX_LR,
                               lr);
    return -1;
}

/* The given model options into *mc (the defaults of its arch), each checked to apply to it;
 * then the sizes against each other and the limits. -1 on success, else the exit code. */
int cli_train_apply_model_options(cli_spec *spec, train_args *a, attn_model_config *mc) {
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
int cli_train_init_settings(cli_spec *spec, train_args *a, attn_model_config *mc) {
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
int cli_train_resume_settings(cli_spec *spec, train_args *a, attn_model_config *mc) {
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

int cli_train_claim_outputs(const char *out, const char *checkpoint, const char *log) {
    int rc = cli_make_parent_dir("train", "--out", out);
    /* a missing directory is reported now, not after hours of training */
    if (rc == CLI_OK) rc = cli_check_dest("train", "--out", out);
    if (rc == CLI_OK && checkpoint) rc = cli_check_dest("train", "--checkpoint", checkpoint);
    if (rc == CLI_OK && log) rc = cli_check_dest("train", "--log", log);
    /* a second run writing the same files is refused before either is touched */
    if (rc == CLI_OK) rc = cli_lock_output("train", "--out", out);
    if (rc == CLI_OK && checkpoint && strcmp(checkpoint, out) != 0)
        rc = cli_lock_output("train", "--checkpoint", checkpoint);
    if (rc == CLI_OK && log && strcmp(log, out) != 0 && (!checkpoint || strcmp(log, checkpoint)))
        rc = cli_lock_output("train", "--log", log);
    return rc;
}
