/* cmd_train_seq2seq.c -- `attn train --model seq2seq-transformer|seq2seq-gru|seq2seq-attn --task
 * rewrite`: trains a seq2seq model (cmd_train.c hands over when --model names one or --task is
 * given), then scores it on the four test sets by exact match of greedy decoding. */
#include "attn_seq2seq.h"
#include "cli.h"
#include "train_cli.h" /* cli_train_check_lr: the bound both families take */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char about[] =
    "Trains a seq2seq model on a generated task with Adam (teacher forcing, cross-entropy over\n"
    "the target words and [EOS]), scores the held-out pairs by exact match of greedy decoding\n"
    "after every epoch, then prints the exact match on each test set and writes the weights.";

static const char notes[] =
    "Task rewrite: a review sentence -> '<polarity> <subject> [<negation>] <adjective>'\n"
    "(attn data --task rewrite; docs/decoder.md). The training pairs are the train set of\n"
    "--seed, the held-out pairs the holdout set. seq2seq-transformer is PyTorch's nn.Transformer\n"
    "between embeddings and a head; seq2seq-gru a GRU encoder whose last state starts a GRU\n"
    "decoder; seq2seq-attn a (bidirectional) GRU encoder and a GRU decoder with additive\n"
    "attention (--hidden, --bidirectional; the Transformer's options do not apply to them).\n"
    "Weights load into tools/seq2seq_models.py with strict=True.\n\n"
    "Task compose: '<polarity> <subject>' -> a review sentence of the grammar with them\n"
    "(attn data --task compose). Many sentences are right, so the epoch kept is the one with\n"
    "the lowest held-out loss (lr 3e-3 by default; seq2seq-transformer only), and the report is "
    "each test set's loss\n"
    "per target token and 25 samples (temperature 1) per source judged by the grammar\n"
    "parser: grammatical, with the polarity and subject asked for, and not a sentence of the\n"
    "training set (novel).\n\n"
    "--checkpoint FILE writes the whole training state (parameters, Adam's moments and\n"
    "step, epoch, the shuffling generator, the best epoch so far) after every epoch,\n"
    "atomically; --resume FILE continues that run with the checkpoint's model, data and\n"
    "settings (--epochs may extend it) and ends with the same bytes as an uninterrupted run.\n"
    "--log FILE.jsonl: {\"epoch\", \"epochs\", \"steps\", \"loss\", \"holdout_exact\",\n"
    "\"holdout_loss\", \"tokens_per_s\", \"elapsed_s\"} per epoch (null where not measured); a\n"
    "resumed run keeps one line per epoch the checkpoint holds.\n\n"
    "--threads N: each batch is cut into micro-batches of 16 pairs whose gradients are\n"
    "summed in order, whatever N, so the weights, losses and checkpoints are the same bytes\n"
    "for every N (a run may be resumed with another N; docs/numerics.md, \"Threads\").\n"
    "The held-out scoring and the rewrite test sets are decoded on the N threads too, one pair\n"
    "per piece (the same scores for every N); the compose report runs on one thread.";

static const char *const norm_names[] = {"pre", "post"};
static const char *const act_names[] = {"relu", "gelu"};

typedef struct s2s_args {
    const char *model, *task, *out, *norm, *act, *pos;
    attn_task task_id;
    uint64_t seed;
    int train_size, test_size, quiet; /* test_size: pairs per rewrite test set, 0: none */
    int threads;                      /* --threads (0: ATTN_THREADS, else the cores) */
    int hidden, bidir;                /* GRU models: 0 / -1 = the model's default */
    attn_seq2seq_config mc;
    attn_s2s_train_config tc;
    const char *checkpoint, *resume, *log; /* train_seq2seq_state.c */
    attn_s2s_train_state from;             /* --resume: the checkpoint */
    FILE *log_f;
    bool log_failed;
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

static int parse_choices(s2s_args *a) {
    int i;
    for (i = 0; i < 2 && strcmp(a->norm, norm_names[i]); i++) continue;
    if (i == 2) return cli_usage_error("train", "--norm expects pre or post, got '%s'", a->norm);
    a->mc.norm = i ? ATTN_NORM_POST : ATTN_NORM_PRE;
    for (i = 0; i < 2 && strcmp(a->act, act_names[i]); i++) continue;
    if (i == 2)
        return cli_usage_error("train", "--activation expects relu or gelu, got '%s'", a->act);
    a->mc.activation = i ? ATTN_ACT_GELU : ATTN_ACT_RELU;
    const int p = attn_pos_from_name(a->pos);
    if (p < 0)
        return cli_usage_error(
            "train", "--pos expects learned, sinusoidal, none, rope or alibi, got '%s'", a->pos);
    a->mc.pos = (attn_pos)p;
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
static int compose_report(uint64_t seed, attn_seq2seq *m, const attn_pairs *train) {
    cli_compose_result r;
    char buf[256];
    const int rc = cli_compose_report("train", m, seed, train, NULL, &r);
    if (rc != CLI_OK) return rc;
    const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR, ATTN_SET_FILL4,
                                             ATTN_SET_FILL8};
    for (int s = 0; s < ATTN_N_TEST_SETS; s++)
        printf("  %-10s loss per target token %.4f  (%d pairs)\n", attn_set_name(sets[s]),
               r.set_loss[s], ATTN_TEST_DEFAULT_N);
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
    printf("%s on %s: %zu parameters, %d epochs\n", attn_s2s_arch_name(a->mc.arch), a->task,
           attn_seq2seq_n_params(m), a->tc.epochs);
    const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR, ATTN_SET_FILL4,
                                             ATTN_SET_FILL8};
    if (a->task_id == ATTN_TASK_COMPOSE && (rc = compose_report(a->seed, m, train)) != CLI_OK)
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

/* --out, --checkpoint and --log checked before the run; rank 0 alone writes. */
static int check_dests(s2s_args *a) {
    if (!cli_mpi_root()) a->out = a->checkpoint = a->log = NULL;
    if (a->out && cli_check_dest("train", "--out", a->out) != CLI_OK) return CLI_ERROR;
    if (a->checkpoint && cli_check_dest("train", "--checkpoint", a->checkpoint) != CLI_OK)
        return CLI_ERROR;
    if (a->log && cli_check_dest("train", "--log", a->log) != CLI_OK) return CLI_ERROR;
    return CLI_OK;
}

int cmd_train_seq2seq(int argc, char **argv) {
    s2s_args a = {.model = "seq2seq-transformer",
                  .task = "rewrite",
                  .norm = "pre",
                  .act = "relu",
                  .pos = "learned",
                  .seed = 1,
                  .train_size = ATTN_TRAIN_DEFAULT_N,
                  .test_size = ATTN_TEST_DEFAULT_N,
                  .bidir = -1,
                  .mc = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER),
                  .tc = attn_s2s_train_config_default()};
    bool quiet = false;
    cli_opt opts[] = {
        {"--model", "NAME", CLI_OPT_STR, &a.model,
         .help = "seq2seq-transformer, seq2seq-gru or seq2seq-attn"},
        {"--task", "NAME", CLI_OPT_STR, &a.task,
         .help = "rewrite, or compose (seq2seq-transformer)"},
        {"--seed", "S", CLI_OPT_U64, &a.seed, .help = "seed of the data, init and shuffling"},
        {"--epochs", "N", CLI_OPT_INT, &a.tc.epochs, 0, 100000, .help = "epochs"},
        {"--batch", "B", CLI_OPT_INT, &a.tc.batch_size, 1, 1 << 16, .help = "pairs per step"},
        {"--lr", "X", CLI_OPT_REAL, &a.tc.adam.lr, .help = "Adam learning rate (at most 1000)",
         .def = "0.001; 0.003 for the GRU models and compose"},
        {"--train-size", "N", CLI_OPT_INT, &a.train_size, 1, ATTN_DATA_MAX_N,
         .help = "training pairs"},
        {"--holdout", "N", CLI_OPT_INT, &a.tc.holdout, 0, ATTN_DATA_MAX_N,
         .help = "held-out pairs scored after every epoch (0: none)"},
        {"--test-size", "N", CLI_OPT_INT, &a.test_size, 0, ATTN_DATA_MAX_N,
         .help = "pairs of each rewrite test set scored at the end (0: none; a base-size model "
                 "decodes them for minutes)"},
        {"--embed-dim", "D", CLI_OPT_INT, &a.mc.d_model, 1, 1 << 14,
         .help = "model width (GRU models: the embedding width)"},
        {"--hidden", "H", CLI_OPT_INT, &a.hidden, 1, 1 << 14, .def = "64",
         .help = "GRU models: hidden size"},
        {"--bidirectional", "0|1", CLI_OPT_INT, &a.bidir, 0, 1, .def = "1",
         .help = "seq2seq-attn: bidirectional encoder"},
        {"--heads", "H", CLI_OPT_INT, &a.mc.n_heads, 1, 1 << 14, .help = "attention heads"},
        {"--ffn-dim", "F", CLI_OPT_INT, &a.mc.ffn_dim, 1, 1 << 16, .help = "feed-forward width"},
        {"--ffn", "F", CLI_OPT_INT, &a.mc.ffn_dim, 1, 1 << 16,
         .help = "the old name of --ffn-dim, accepted until the next release"},
        {"--layers", "L", CLI_OPT_INT, &a.mc.enc_layers, 1, ATTN_TRANSFORMER_MAX_LAYERS,
         .help = "encoder layers"},
        {"--dec-layers", "L", CLI_OPT_INT, &a.mc.dec_layers, 1, ATTN_TRANSFORMER_MAX_LAYERS,
         .help = "decoder layers"},
        {"--norm", "pre|post", CLI_OPT_STR, &a.norm, .help = "LayerNorm placement"},
        {"--activation", "relu|gelu", CLI_OPT_STR, &a.act, .help = "feed-forward activation"},
        {"--pos", "NAME", CLI_OPT_STR, &a.pos,
         .help = "learned, sinusoidal, none, rope or alibi (rope, alibi: in the self-attentions)"},
        {"--out", "FILE.json", CLI_OPT_STR, &a.out, .help = "write the weights here"},
        {"--quiet", NULL, CLI_OPT_FLAG, &quiet, .help = "no per-epoch lines on stderr"},
        {"--checkpoint", "FILE", CLI_OPT_STR, &a.checkpoint,
         .help = "write the training state here after every epoch"},
        {"--resume", "FILE", CLI_OPT_STR, &a.resume,
         .help = "continue the run of this checkpoint (its model,\ndata and settings)"},
        {"--log", "FILE.jsonl", CLI_OPT_STR, &a.log, .help = "one JSON line per epoch"},
        CLI_THREADS_OPT(&a.threads),
    };
    cli_spec spec = CLI_SPEC("train",
                             "--model seq2seq-transformer|seq2seq-gru|seq2seq-attn --task "
                             "rewrite|compose [OPTIONS]",
                             about, NULL, notes, opts);
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    a.quiet = quiet;
    if (check_dests(&a) != CLI_OK) return CLI_ERROR;
    if (a.resume) { /* the checkpoint's model, data and settings */
        rc = cli_s2s_resume_setup(&spec, a.resume, &a.from, &a.mc, &a.tc, &a.train_size, &a.seed);
        a.task_id = a.mc.task;
        a.task = attn_task_name(a.task_id);
    } else {
        rc = parse_choices(&a);
        if (rc < 0) rc = cli_train_check_lr(a.tc.adam.lr);
        if (rc < 0 && a.task_id == ATTN_TASK_COMPOSE && !cli_given(&spec, "--lr"))
            a.tc.adam.lr = ATTN_COMPOSE_LR;
        else if (rc < 0 && a.mc.arch != ATTN_S2S_TRANSFORMER && !cli_given(&spec, "--lr"))
            a.tc.adam.lr = ATTN_S2S_RNN_LR;
    }
    return rc >= 0 ? rc : run(&a);
}
