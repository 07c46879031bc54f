/* train_seq2seq.c -- `attn train`'s seq2seq half (cmd_train.c parses the one option table and
 * hands over when --model names a seq2seq model, --task is given or --resume names a seq2seq
 * checkpoint): trains the model on its task, then scores it on the four test sets by exact
 * match of greedy decoding (rewrite) or by loss and judged samples (compose). */
#include "attn_seq2seq.h"
#include "cli.h"
#include "train_cli.h" /* the shared options; cli_train_check_lr: the bound both take */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct s2s_args {
    const char *model, *task, *out;
    attn_task task_id;
    uint64_t seed;
    int train_size, test_size, quiet; /* test_size: pairs per test set, 0: none */
    int threads;                      /* --threads (0: ATTN_THREADS, else the cores) */
    int hidden, bidir;                /* GRU models: 0 / -1 = the model's default */
    attn_seq2seq_config mc;
    attn_s2s_train_config tc;
    const char *checkpoint, *resume, *log; /* train_seq2seq_state.c */
    attn_s2s_train_state from;             /* --resume: the checkpoint */
    FILE *log_f;
    bool log_failed;
    char default_out[4096]; /* --out when not given */
} s2s_args;

static bool on_epoch(const attn_s2s_epoch_stats *st, void *user) {
    s2s_args *a = user;
    if (a->log_f && !cli_s2s_log_epoch(a->log_f, st)) a->log_failed = true;
    if (a->quiet) return true;
    if (!isnan(st->holdout_loss)) { /* compose: selected by the held-out loss */
        fprintf(stderr,
                "epoch %d/%d  loss %.4f  held-out loss %.4f  %.0f target tokens/s  (%.1f s)\n",
                st->epoch, st->epochs, st->loss, st->holdout_loss, st->tokens_per_s, st->elapsed_s);
        return true;
    }
    if (isnan(st->holdout_exact)) /* --holdout 0: nothing scored */
        fprintf(stderr,
                "epoch %d/%d  loss %.4f  (no held-out set)  %.0f target tokens/s  (%.1f s)\n",
                st->epoch, st->epochs, st->loss, st->tokens_per_s, st->elapsed_s);
    else
        fprintf(
            stderr,
            "epoch %d/%d  loss %.4f  held-out exact match %.4f  %.0f target tokens/s  (%.1f s)\n",
            st->epoch, st->epochs, st->loss, st->holdout_exact, st->tokens_per_s, st->elapsed_s);
    return true;
}

/* --task and --model into the config (the sizes are in a->mc already); -1 or the exit code. */
static int model_choices(s2s_args *a) {
    attn_error err;
    if (attn_task_from_name(a->task, &a->task_id, &err) != ATTN_OK)
        return cli_usage_error("train", "--task: %s", err.msg);
    attn_seq2seq_config_set_task(&a->mc, a->task_id);
    attn_s2s_arch arch;
    if (attn_s2s_arch_from_name(a->model, &arch, &err) != ATTN_OK)
        return cli_usage_error("train", "--model: %s", err.msg);
    if (arch != ATTN_S2S_TRANSFORMER && a->task_id != ATTN_TASK_REWRITE)
        return cli_usage_error("train",
                               "--task %s is for seq2seq-transformer (the GRU models "
                               "are rewrite models)",
                               a->task);
    const attn_seq2seq_config def = attn_seq2seq_config_default(arch);
    a->mc.arch = arch;
    a->mc.hidden_size = a->hidden > 0 ? a->hidden : def.hidden_size;
    a->mc.bidirectional = a->bidir >= 0 ? a->bidir : def.bidirectional;
    if (arch == ATTN_S2S_TRANSFORMER && (a->hidden > 0 || a->bidir >= 0))
        return cli_usage_error("train", "--hidden and --bidirectional are for seq2seq-gru and "
                                        "seq2seq-attn");
    if (attn_seq2seq_config_validate(&a->mc, &err) != ATTN_OK)
        return cli_usage_error("train", "%s", err.msg);
    return -1;
}

/* compose: the test sets' loss and the judged samples (exact match means little there). */
static int compose_report(uint64_t seed, int test_size, attn_seq2seq *m, const attn_pairs *train) {
    cli_compose_result r;
    char buf[256];
    const int rc = cli_compose_report("train", m, seed, test_size, train, NULL, &r);
    if (rc != CLI_OK) return rc;
    const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR, ATTN_SET_FILL4,
                                             ATTN_SET_FILL8};
    for (int s = 0; s < ATTN_N_TEST_SETS; s++)
        printf("  %-10s loss per target token %.4f  (%d pairs)\n", attn_set_name(sets[s]),
               r.set_loss[s], test_size);
    cli_compose_tally_text(&r.tally, buf, sizeof buf);
    printf("  samples    %s, novel %.1f%%\n", buf,
           100.0 * (double)r.tally.novel / (double)r.tally.samples);
    return CLI_OK;
}

/* Trains, evaluates and saves; the exit code. */
static int run(s2s_args *a) {
    attn_error err;
    attn_pairs *train = NULL, *held = NULL;
    attn_seq2seq *m = NULL;
    attn_pool *pool = NULL;
    /* the same bytes for every thread count (attn_seq2seq_train_pool) */
    int rc = cli_train_threads_start("train", &a->threads, &pool);
    if (rc >= 0) goto done;
    rc = CLI_OK;
    if (attn_pairs_generate(a->task_id, ATTN_SET_TRAIN, a->train_size, a->seed, &train, &err) !=
            ATTN_OK ||
        (a->tc.holdout > 0 && attn_pairs_generate(a->task_id, ATTN_SET_HOLDOUT, a->tc.holdout,
                                                  a->seed, &held, &err) != ATTN_OK) ||
        attn_seq2seq_create(&a->mc, a->seed, &m, &err) != ATTN_OK) {
        rc = cli_fail("train", &err);
        goto done;
    }
    a->tc.seed = a->seed;
    if (a->log && (rc = cli_train_log_open(a->log, a->from.epoch, a->resume, &a->log_f)) >= 0)
        goto done;
    rc = CLI_OK;
    const attn_s2s_callbacks cb = {on_epoch, a};
    const attn_s2s_resume rs = {a->resume ? &a->from : NULL,
                                a->checkpoint ? cli_s2s_write_checkpoint : NULL,
                                (void *)a->checkpoint};
    if (attn_seq2seq_train_pool(m, train, held, &a->tc, &cb, &rs, pool, &err) != ATTN_OK) {
        rc = cli_fail("train", &err);
        goto done;
    }
    if (a->log_f && (fclose(a->log_f) != 0 || a->log_failed)) {
        a->log_f = NULL;
        rc = cli_runtime_error("train", "%s: writing the log failed", a->log);
        goto done;
    }
    a->log_f = NULL;
    printf("%s on %s: %zu parameters, %d %s\n", attn_s2s_arch_name(a->mc.arch), a->task,
           attn_seq2seq_n_params(m), a->tc.epochs, cli_plural(a->tc.epochs, "epoch", "epochs"));
    const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR, ATTN_SET_FILL4,
                                             ATTN_SET_FILL8};
    if (a->task_id == ATTN_TASK_COMPOSE && a->test_size > 0 &&
        (rc = compose_report(a->seed, a->test_size, m, train)) != CLI_OK)
        goto done;
    for (int s = 0; s < ATTN_N_TEST_SETS && a->task_id == ATTN_TASK_REWRITE && a->test_size > 0;
         s++) {
        attn_pairs *t = NULL;
        attn_s2s_eval ev;
        if (attn_pairs_generate(ATTN_TASK_REWRITE, sets[s], a->test_size, a->seed, &t, &err) !=
                ATTN_OK ||
            attn_seq2seq_evaluate_pool(m, t, 0, t->src->n, pool, &ev, &err) != ATTN_OK) {
            attn_pairs_free(t);
            rc = cli_fail("train", &err);
            goto done;
        }
        printf("  %-10s exact match %.4f  token accuracy %.4f  (%d pairs)\n",
               attn_set_name(sets[s]), ev.exact, ev.token_acc, ev.n);
        attn_pairs_free(t);
    }
    if (a->out) {
        if (attn_seq2seq_save_json(m, false, false, a->out, &err) != ATTN_OK)
            rc = cli_fail("train", &err);
        else
            printf("wrote %s\n", a->out);
    }
done:
    if (a->log_f) fclose(a->log_f);
    attn_s2s_train_state_clear(&a->from);
    attn_seq2seq_free(m);
    attn_pairs_free(train);
    attn_pairs_free(held);
    attn_pool_free(pool);
    return rc;
}

/* --out (by default runs/<model>-seed<S>.json, compose runs/compose-<model>-seed<S>.json, as
 * reproduce names them), --checkpoint and --log claimed before the run; rank 0 alone writes.
 * CLI_OK or the exit code. */
static int claim_outputs(s2s_args *a) {
    if (!cli_mpi_root()) {
        a->out = a->checkpoint = a->log = NULL;
        return CLI_OK;
    }
    if (!a->out) { /* the git-ignored runs/, where every command writes by default */
        snprintf(a->default_out, sizeof a->default_out, "runs/%s%s-seed%llu.json",
                 a->task_id == ATTN_TASK_COMPOSE ? "compose-" : "", attn_s2s_arch_name(a->mc.arch),
                 (unsigned long long)a->seed);
        a->out = a->default_out;
    }
    return cli_train_claim_outputs(a->out, a->checkpoint, a->log);
}

/* The shared options, where given, over the seq2seq defaults (train_args' model options are 0
 * until given; their choices' indexes are the enums' values). */
static s2s_args from_options(cli_spec *spec, const train_args *t, const s2s_train_opts *x) {
    s2s_args a = {.model = t->model ? t->model : "seq2seq-transformer",
                  .task = x->task ? x->task : "rewrite",
                  .out = t->out,
                  .seed = t->seed,
                  .train_size = t->train_size,
                  .test_size = x->test_size,
                  .quiet = x->quiet,
                  .threads = t->threads,
                  .hidden = t->m.hidden,
                  .bidir = x->bidir,
                  .mc = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER),
                  .tc = attn_s2s_train_config_default(),
                  .checkpoint = t->checkpoint,
                  .resume = t->resume,
                  .log = t->log};
    if (cli_given(spec, "--embed-dim")) a.mc.d_model = t->m.embed_dim;
    if (cli_given(spec, "--heads")) a.mc.n_heads = t->m.heads;
    if (cli_given(spec, "--ffn-dim") || cli_given(spec, "--ffn")) a.mc.ffn_dim = t->m.ffn_dim;
    if (cli_given(spec, "--layers")) a.mc.enc_layers = t->m.layers;
    if (cli_given(spec, "--dec-layers")) a.mc.dec_layers = x->dec_layers;
    if (cli_given(spec, "--norm")) a.mc.norm = (attn_norm)t->m.norm;
    if (cli_given(spec, "--activation")) a.mc.activation = (attn_activation)t->m.activation;
    if (cli_given(spec, "--pos")) a.mc.pos = (attn_pos)t->m.pos;
    if (cli_given(spec, "--epochs")) a.tc.epochs = t->cfg.epochs;
    if (cli_given(spec, "--batch")) a.tc.batch_size = t->cfg.batch_size;
    if (cli_given(spec, "--lr")) a.tc.adam.lr = t->cfg.adam.lr;
    if (cli_given(spec, "--holdout")) a.tc.holdout = t->cfg.holdout;
    return a;
}

/* What a seq2seq run takes (ATTN_S2S_MAX_EPOCHS, _BATCH) within the shared table's ranges: -1
 * or the exit code. */
static int check_ranges(const s2s_args *a) {
    if (a->tc.epochs > ATTN_S2S_MAX_EPOCHS)
        return cli_usage_error("train", "--epochs %d: a seq2seq model trains 0..%d epochs",
                               a->tc.epochs, ATTN_S2S_MAX_EPOCHS);
    if (a->tc.batch_size > ATTN_S2S_MAX_BATCH)
        return cli_usage_error("train", "--batch %d: a seq2seq batch holds 1..%d pairs",
                               a->tc.batch_size, ATTN_S2S_MAX_BATCH);
    return -1;
}

int cli_train_seq2seq(cli_spec *spec, const train_args *t, const s2s_train_opts *x) {
    s2s_args a = from_options(spec, t, x);
    int rc = check_ranges(&a);
    if (rc >= 0) return rc;
    if (a.resume) { /* the checkpoint's model, data and settings */
        rc = cli_s2s_resume_setup(spec, a.resume, &a.from, &a.mc, &a.tc, &a.train_size, &a.seed);
        a.task_id = a.mc.task;
        a.task = attn_task_name(a.task_id);
    } else {
        rc = model_choices(&a);
        /* the GRU models' config has no such keys: a given value would be dropped */
        static const char *const transformer_only[] = {"--heads",      "--ffn-dim",    "--ffn",
                                                       "--layers",     "--dec-layers", "--norm",
                                                       "--activation", "--pos",        NULL};
        if (rc < 0 && a.mc.arch != ATTN_S2S_TRANSFORMER)
            rc = cli_refuse_given(spec, transformer_only, "seq2seq-transformer");
        if (rc < 0) rc = cli_train_check_lr(a.tc.adam.lr);
        if (rc < 0 && a.task_id == ATTN_TASK_COMPOSE && !cli_given(spec, "--lr"))
            a.tc.adam.lr = ATTN_COMPOSE_LR;
        else if (rc < 0 && a.mc.arch != ATTN_S2S_TRANSFORMER && !cli_given(spec, "--lr"))
            a.tc.adam.lr = ATTN_S2S_RNN_LR;
    }
    if (rc < 0 && (rc = claim_outputs(&a)) == CLI_OK) rc = -1;
    return rc >= 0 ? rc : run(&a);
}
