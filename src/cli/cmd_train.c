/* cmd_train.c -- `attn train`: one model of either family with Adam, progress per epoch,
 * checkpoints and resuming; one option table and one help for both. The classifiers' run is
 * here, the seq2seq models' in train_seq2seq.c. Each batch is cut into fixed micro-batches of
 * 16 sentences or pairs spread over --threads (one BLAS thread per product), so the same command
 * gives bit-identical weights on every run on the same kind of machine, for every thread count. */
#include "train_cli.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char about[] =
    "Trains one model with Adam (PyTorch's defaults) and writes its weights: a classifier\n"
    "(rnn, lstm, gru, transformer) on the course-review task as attn-weights-v1 JSON, or a\n"
    "seq2seq model (--model seq2seq-..., --task) on a generated task as\n"
    "attn-seq2seq-weights-v1. The same command gives bit-identical weights on every run and\n"
    "for every --threads N: each batch is cut into micro-batches of 16 sentences (or pairs)\n"
    "whose gradients are summed in a fixed order, whichever thread computes them\n"
    "(docs/numerics.md, \"Threads\").";

static const char notes[] =
    "Held-out set: the generated holdout set of the seed (the training distribution,\n"
    "disjoint from the training set; attn data --set holdout), or with --data --holdout N\n"
    "sentences of the file drawn by a shuffle seeded with --seed (the same on every run;\n"
    "docs/own-data.md). After training, the kept weights' held-out accuracy is printed with\n"
    "its 95 % interval (Wilson) and the held-out set's majority-class baseline, and a warning\n"
    "when the interval holds the baseline (not distinguishable from chance). --keep-best 1 writes "
    "the weights of the epoch with the\n"
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
    "NaN/Inf the error names the step and tensor, nothing is written and the exit code is 1.\n\n"
    "Seq2seq models. Options of one family only are refused, exit 2, for the other: --task,\n"
    "--test-size, --bidirectional, --dec-layers, --quiet and --ffn are the seq2seq models';\n"
    "--keep-best, --bucket, --data, --vocab-from-data, --min-count, --init, --warmup and\n"
    "--max-len the classifiers'. Without --out a seq2seq model's weights are not written.\n"
    "Task rewrite: a review sentence -> '<polarity> <subject> [<negation>] <adjective>'\n"
    "(attn data --task rewrite; docs/decoder.md). The training pairs are the train set of\n"
    "--seed, the held-out pairs the holdout set, scored by exact match of greedy decoding\n"
    "after every epoch (the best epoch is kept); at the end the exact match on each test set.\n"
    "seq2seq-transformer is PyTorch's nn.Transformer between embeddings and a head;\n"
    "seq2seq-gru a GRU encoder whose last state starts a GRU decoder; seq2seq-attn a\n"
    "(bidirectional) GRU encoder and a GRU decoder with additive attention (--embed-dim,\n"
    "--hidden, --bidirectional; the Transformer's options do not apply to them). Weights load\n"
    "into tools/seq2seq_models.py with strict=True.\n"
    "Task compose: '<polarity> <subject>' -> a review sentence of the grammar with them\n"
    "(attn data --task compose; seq2seq-transformer only). Many sentences are right, so the\n"
    "epoch kept is the one with the lowest held-out loss (lr 3e-3 by default), and the report\n"
    "is each test set's loss per target token and 25 samples (temperature 1) per source\n"
    "judged by the grammar parser: grammatical, with the polarity and subject asked for, and\n"
    "not a sentence of the training set (novel).\n"
    "--checkpoint writes the whole training state (parameters, Adam's moments and step,\n"
    "epoch, the shuffling generator, the best epoch so far) after every epoch, atomically;\n"
    "--resume continues that run with the checkpoint's model, data and settings (only\n"
    "--epochs, --out, --checkpoint, --log, --quiet and --threads may be given) and ends with\n"
    "the same bytes as an uninterrupted run. --log: {\"epoch\", \"epochs\", \"steps\",\n"
    "\"loss\", \"holdout_exact\", \"holdout_loss\", \"tokens_per_s\", \"elapsed_s\"} per epoch\n"
    "(null where not measured).\n"
    "--threads N: each batch is cut into micro-batches of 16 pairs whose gradients are\n"
    "summed in order, whatever N, so the weights, losses and checkpoints are the same bytes\n"
    "for every N (a run may be resumed with another N). The held-out scoring and the rewrite\n"
    "test sets are decoded on the N threads too, one pair per piece (the same scores for\n"
    "every N); the compose report runs on one thread.";

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
        /* the held-out sentences: the last --holdout of the file shuffled with the seed, so a
         * file sorted by label or topic still gets a fair held-out set */
        st = a->cfg.holdout > 0 ? attn_dataset_shuffle(*data, a->seed, &err) : ATTN_OK;
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

/* The trained model on the held-out sentences (a separate set, or the last `holdout` of data):
 * its accuracy, 95 % interval and majority baseline, and a warning near chance. -1, or the
 * exit code. */
static int heldout_verdict(attn_model *m, const attn_dataset *data, const attn_dataset *heldout,
                           const attn_train_config *c) {
    int holdout = c->holdout;
    const attn_dataset *d = heldout ? heldout : data;
    int first = heldout ? 0 : data->n - holdout, positive = 0;
    for (int i = first; i < first + holdout; i++) positive += d->labels[i] == 1;
    double acc = 0.0;
    attn_error err = {0};
    if (attn_evaluate(m, d, first, holdout, c->eval_batch, &acc, &err) != ATTN_OK)
        return cli_fail("train", &err);
    attn_accuracy_verdict v;
    int correct = (int)lround(acc * holdout);
    if (attn_accuracy_verdict_of(correct, holdout, positive, &v, &err) != ATTN_OK)
        return cli_fail("train", &err);
    char text[128];
    cli_verdict_text(text, sizeof text, &v);
    cli_message("train", "held-out accuracy %.1f %% (%d/%d), %s", 100.0 * v.accuracy, correct,
                holdout, text);
    cli_warn_chance("train", "held-out set", holdout, &v);
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
    int rc = cli_train_threads_start("train", &a->threads, &pool);
    if (rc < 0) rc = setup(spec, a, mc, &data, &heldout, &model, &trainer);
    if (rc < 0 && attn_trainer_set_pool(trainer, pool, &err) != ATTN_OK)
        rc = cli_fail("train", &err);
    if (rc < 0 && a->log)
        rc = cli_train_log_open(a->log, attn_trainer_epoch(trainer), a->resume != NULL, &log);
    if (rc >= 0) goto done;
    train_progress prog = {
        isatty(fileno(stderr)) == 1, log, a->log, a->checkpoint, trainer, {0}, false};
    print_header(a, mc, model, data, heldout, trainer);
    attn_train_callbacks cb = {cli_train_on_epoch, cli_train_on_step, &prog};
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
    if (st == ATTN_OK && cli_mpi_root()) st = save_weights(model, a, &err);
    if (st != ATTN_OK) {
        rc = cli_fail("train", &err);
        goto done;
    }
    double best_acc = 0.0;
    int best_epoch = attn_trainer_best_epoch(trainer, &best_acc);
    if (best_epoch > 0)
        fprintf(stderr, "attn train: kept epoch %d (best held-out accuracy %.1f%%)\n", best_epoch,
                100.0 * best_acc);
    if (a->cfg.holdout > 0 && (rc = heldout_verdict(model, data, heldout, &a->cfg)) >= 0) goto done;
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
    if ((rc = cli_train_check_lr(a->cfg.adam.lr)) >= 0) return rc;
    attn_model_config mc;
    if (a->resume) {
        if ((rc = cli_train_resume_settings(spec, a, &mc)) >= 0) return rc;
    } else if (a->init) {
        if ((rc = cli_train_init_settings(spec, a, &mc)) >= 0) return rc;
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
        if ((rc = cli_train_apply_model_options(spec, a, &mc)) >= 0) return rc;
        a->cfg.seed = a->seed;
    }
    char default_out[64];
    if (!a->out) { /* the git-ignored runs/, where every command writes by default */
        snprintf(default_out, sizeof default_out, "runs/%s-seed%llu.json", attn_arch_name(mc.arch),
                 (unsigned long long)a->seed);
        a->out = default_out;
    }
    /* under mpirun rank 0 alone writes (docs/mpi.md): the others train and write nothing */
    if (!cli_mpi_root()) {
        a->checkpoint = a->log = NULL;
        return a->cfg.epochs == 0 ? CLI_OK : train(spec, a, &mc);
    }
    if ((rc = cli_train_claim_outputs(a->out, a->checkpoint, a->log)) != CLI_OK) return rc;
    if (a->cfg.epochs == 0) return write_initial_weights(&mc, a);
    return train(spec, a, &mc);
}

/* True when the options ask for a seq2seq model (--task, --model seq2seq-..., or --resume with
 * a seq2seq checkpoint): train_seq2seq.c. */
static bool wants_seq2seq(cli_spec *spec, const train_args *a) {
    return cli_given(spec, "--task") || (a->model && strncmp(a->model, "seq2seq-", 8) == 0) ||
           (a->resume && cli_is_seq2seq_checkpoint(a->resume));
}

/* The options of one family only: the other family refuses them. */
static const char *const classifier_only[] = {"--keep-best",       "--bucket",    "--data",
                                              "--vocab-from-data", "--min-count", "--init",
                                              "--warmup",          "--max-len",   NULL};
static const char *const seq2seq_only[] = {
    "--task", "--test-size", "--bidirectional", "--dec-layers", "--quiet", "--ffn", NULL};

/* The classifiers' run: the table's --train-size takes the seq2seq models' 1; the exit code. */
static int classifier(cli_spec *spec, train_args *a) {
    if (a->train_size < 2)
        return cli_usage_error("train",
                               "--train-size %d: a classifier trains on 2 sentences or "
                               "more",
                               a->train_size);
    return run(spec, a);
}

static const char usage[] =
    "--model rnn|lstm|gru|transformer [OPTIONS]\n"
    "--model NAME --data FILE.tsv --vocab-from-data [--min-count N] [OPTIONS]\n"
    "--init W.json [--data FILE.tsv] [OPTIONS]\n"
    "--resume C.json [--epochs N] [OPTIONS]\n"
    "--model seq2seq-transformer|seq2seq-gru|seq2seq-attn --task rewrite|compose [OPTIONS]";

#define N_RUN_OPTS   22
#define N_MODEL_OPTS 12
#define N_OPTS       (N_RUN_OPTS + N_MODEL_OPTS)

/* The run's options of both families into opts[N_RUN_OPTS]; the destinations are a's and x's. */
static void run_options(train_args *a, s2s_train_opts *x, cli_opt *opts) {
    const cli_opt table[] = {
        {"--model", "NAME", CLI_OPT_STR, &a->model,
         .help = "rnn, lstm, gru or transformer; required unless --resume or --init;\n"
                 "seq2seq-transformer, seq2seq-gru or seq2seq-attn (the default with --task)"},
        {"--task", "NAME", CLI_OPT_STR, &x->task, .def = "rewrite",
         .help = "seq2seq: rewrite, or compose (seq2seq-transformer)"},
        {"--seed", "S", CLI_OPT_U64, &a->seed,
         .help = "seed of the data, the initialisation and the shuffling"},
        {"--epochs", "N", CLI_OPT_INT, &a->cfg.epochs, 0, MAX_EPOCHS, .def = "20; seq2seq 10",
         .help = "epochs; 0 writes the initial weights"},
        {"--batch", "B", CLI_OPT_INT, &a->cfg.batch_size, 1, MAX_BATCH,
         .help = "sentences (or pairs) per Adam step"},
        {"--lr", "X", CLI_OPT_REAL, &a->cfg.adam.lr,
         .def = "0.001; 0.003 for the seq2seq GRU models and compose",
         .help = "Adam learning rate (at most 1000)"},
        {"--train-size", "N", CLI_OPT_INT, &a->train_size, 1, ATTN_DATA_MAX_N,
         .help = "generated training sentences (or pairs); classifiers 2 or more"},
        {"--holdout", "N", CLI_OPT_INT, &a->cfg.holdout, 0, ATTN_DATA_MAX_N,
         .help = "held-out sentences (or pairs) scored after every epoch; 0 = none"},
        {"--test-size", "N", CLI_OPT_INT, &x->test_size, 0, ATTN_DATA_MAX_N,
         .help = "seq2seq: pairs of each test set scored at the end (0: none; rewrite:\n"
                 "decoded greedily, a base-size model for minutes; compose: their loss, then\n"
                 "the judged samples)"},
        {"--keep-best", "0|1", CLI_OPT_INT, &a->cfg.keep_best, 0, 1,
         .help = "1: write the best held-out epoch's weights; 0: the last's"},
        {"--bucket", "K", CLI_OPT_INT, &a->cfg.bucket, 1, MAX_BATCH,
         .help = "sort chunks of K batches by length; 1 = off"},
        {"--data", "FILE.tsv", CLI_OPT_STR, &a->data,
         .help = "train on a TSV file (label<TAB>sentence)"},
        {"--vocab-from-data", NULL, CLI_OPT_FLAG, &a->vocab_from_data,
         .help = "the model's words are those of --data (see Vocabulary below),\n"
                 "stored in the weights file"},
        {"--min-count", "N", CLI_OPT_INT, &a->min_count, 1, 1000000,
         .help = "with --vocab-from-data: words seen fewer times read as [UNK]"},
        {"--init", "W.json", CLI_OPT_STR, &a->init,
         .help = "start from these weights, e.g. exported from PyTorch; the model and\n"
                 "its configuration come from the file (--model may be omitted)"},
        {"--out", "W.json", CLI_OPT_STR, &a->out,
         .def = "runs/<model>-seed<S>.json; compose runs/compose-<model>-seed<S>.json",
         .help = "where to write the weights (its directory is created; a name ending in\n"
                 ".safetensors writes safetensors)"},
        {"--quiet", NULL, CLI_OPT_FLAG, &x->quiet, .help = "seq2seq: no per-epoch lines on stderr"},
        {"--checkpoint", "C.json", CLI_OPT_STR, &a->checkpoint,
         .help = "save the full training state after every epoch"},
        {"--resume", "C.json", CLI_OPT_STR, &a->resume, .help = "continue a checkpointed run"},
        {"--log", "FILE.jsonl", CLI_OPT_STR, &a->log,
         .help = "one JSON line per epoch with the progress"},
        CLI_THREADS_OPT(&a->threads),
        {"--warmup", "N", CLI_OPT_INT, &a->cfg.warmup, 0, ATTN_MAX_WARMUP,
         .help = "linear learning-rate warm-up over the first N Adam steps: step k\n"
                 "(0-based) uses lr * min(1, (k+1)/N), PyTorch's LambdaLR with that\n"
                 "lambda, stepped after each optimizer step; 0 = off"},
    };
    _Static_assert(sizeof table / sizeof table[0] == N_RUN_OPTS, "N_RUN_OPTS counts the table");
    memcpy(opts, table, sizeof table);
}

/* The model options of both families into opts[N_MODEL_OPTS]. */
static void model_options(train_args *a, s2s_train_opts *x, cli_opt *opts) {
    const cli_opt table[] = {
        {"--embed-dim", "N", CLI_OPT_INT, &a->m.embed_dim, 1, MAX_WIDTH,
         .def = "32 transformer and seq2seq, 16 rnn/lstm/gru",
         .help = "model width D (transformers) or word embedding width E"},
        {"--layers", "N", CLI_OPT_INT, &a->m.layers, 1, ATTN_TRANSFORMER_MAX_LAYERS,
         .def = "2 transformers, 1 rnn/lstm/gru",
         .help = "encoder layers (transformers 1..12) or stacked recurrent layers\n"
                 "(PyTorch num_layers; rnn/lstm/gru 1..8)"},
        {"--dec-layers", "L", CLI_OPT_INT, &x->dec_layers, 1, ATTN_TRANSFORMER_MAX_LAYERS,
         .def = "2", .help = "seq2seq-transformer: decoder layers"},
        {"--hidden", "N", CLI_OPT_INT, &a->m.hidden, 1, MAX_WIDTH, .def = "32; seq2seq GRUs 64",
         .help = "rnn/lstm/gru and the seq2seq GRU models' hidden size H"},
        {"--bidirectional", "0|1", CLI_OPT_INT, &x->bidir, 0, 1, .def = "1",
         .help = "seq2seq-attn: bidirectional encoder"},
        {"--heads", "N", CLI_OPT_INT, &a->m.heads, 1, MAX_WIDTH, .def = "2",
         .help = "transformer attention heads; must divide --embed-dim"},
        {"--ffn-dim", "N", CLI_OPT_INT, &a->m.ffn_dim, 1, 65536, .def = "64",
         .help = "transformer feed-forward width F"},
        {"--ffn", "F", CLI_OPT_INT, &a->m.ffn_dim, 1, 65536, .def = "64",
         .help = "seq2seq: the old name of --ffn-dim, accepted until the next release"},
        {"--max-len", "N", CLI_OPT_INT, &a->m.max_len, 2, 65536, .def = "81",
         .help = "transformer positions including [CLS] (sentences of up to N-1 words)"},
        {"--norm", "pre|post", CLI_OPT_CHOICE, &a->m.norm, .choices = "pre|post",
         .help = "transformer LayerNorm placement (PyTorch norm_first=True for pre)"},
        {"--activation", "relu|gelu", CLI_OPT_CHOICE, &a->m.activation, .choices = "relu|gelu",
         .help = "transformer feed-forward activation (gelu: the erf form)"},
        {"--pos", "P", CLI_OPT_CHOICE, &a->m.pos, .choices = "learned|sinusoidal|none|rope|alibi",
         .help = "transformer positions: a trained table, the fixed sinusoidal\n"
                 "table (not trained, not in the weights file), none, rotary q/k\n"
                 "(rope) or a linear score bias (alibi; seq2seq: rope and alibi in the\n"
                 "self-attentions)"},
    };
    _Static_assert(sizeof table / sizeof table[0] == N_MODEL_OPTS, "N_MODEL_OPTS counts the table");
    memcpy(opts, table, sizeof table);
}

int cmd_train(int argc, char **argv) {
    train_args a = {.seed = 1,
                    .train_size = ATTN_TRAIN_DEFAULT_N,
                    .min_count = 1,
                    .cfg = attn_train_config_default()};
    s2s_train_opts x = {.test_size = ATTN_TEST_DEFAULT_N, .bidir = -1};
    cli_opt opts[N_OPTS];
    run_options(&a, &x, opts);
    model_options(&a, &x, opts + N_RUN_OPTS);
    cli_spec spec = {"train", usage, about, NULL, notes, opts, N_OPTS};
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    const bool seq2seq = rc < 0 && wants_seq2seq(&spec, &a);
    if (rc < 0)
        rc = seq2seq ? cli_refuse_given(&spec, classifier_only, "classifier models")
                     : cli_refuse_given(&spec, seq2seq_only, "seq2seq models");
    if (rc < 0) rc = seq2seq ? cli_train_seq2seq(&spec, &a, &x) : classifier(&spec, &a);
    attn_vocab_free(a.vocab);
    return rc;
}
