/* cmd_reproduce_compose.c -- `attn reproduce --task compose`: the seq2seq-transformer on the
 * compose task for seeds 1..N (cmd_reproduce_seq2seq.c hands over), its samples judged by the
 * grammar parser. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SEEDS 20

typedef struct seed_result {
    cli_compose_result r;
    size_t n_params;
} seed_result;

/* Trains seed s, writes its weights when dir is given, scores it. */
static int run_seed(uint64_t s, int epochs, int train_size, const char *dir, attn_model *classifier,
                    seed_result *out) {
    attn_error err;
    attn_pairs *train = NULL, *held = NULL;
    attn_seq2seq *m = NULL;
    attn_s2s_train_config tc = attn_s2s_train_config_default();
    tc.epochs = epochs;
    tc.seed = s;
    tc.adam.lr = ATTN_COMPOSE_LR;
    attn_seq2seq_config mc = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    attn_seq2seq_config_set_task(&mc, ATTN_TASK_COMPOSE);
    char path[4096] = "";
    if (dir)
        snprintf(path, sizeof path, "%s/compose-seq2seq-transformer-seed%llu.json", dir,
                 (unsigned long long)s);
    attn_status st =
        attn_pairs_generate(ATTN_TASK_COMPOSE, ATTN_SET_TRAIN, train_size, s, &train, &err);
    if (st == ATTN_OK)
        st = attn_pairs_generate(ATTN_TASK_COMPOSE, ATTN_SET_HOLDOUT, tc.holdout, s, &held, &err);
    if (st == ATTN_OK) st = attn_seq2seq_create(&mc, s, &m, &err);
    if (st == ATTN_OK) st = attn_seq2seq_train(m, train, held, &tc, NULL, &err);
    if (st == ATTN_OK && dir) st = attn_seq2seq_save_json(m, false, false, path, &err);
    int rc = st == ATTN_OK ? cli_compose_report("reproduce", m, s, train, classifier, &out->r)
                           : cli_fail("reproduce", &err);
    if (m) out->n_params = attn_seq2seq_n_params(m);
    attn_seq2seq_free(m);
    attn_pairs_free(train);
    attn_pairs_free(held);
    if (rc != CLI_OK) return rc;
    char buf[256];
    cli_compose_tally_text(&out->r.tally, buf, sizeof buf);
    fprintf(stderr, "  compose seq2seq-transformer seed %llu: %s%s%s\n", (unsigned long long)s, buf,
            dir ? " -> " : "", path);
    return CLI_OK;
}

/* "a-b" (or "a" when every seed agrees) of xs[n] with fmt ("%.1f%%", "%.4f"). */
static void range_text(char *buf, size_t size, const double *xs, int n, const char *fmt) {
    double lo = INFINITY, hi = -INFINITY; /* fmin and fmax skip NaN (nothing to measure) */
    for (int i = 0; i < n; i++) lo = fmin(lo, xs[i]), hi = fmax(hi, xs[i]);
    if (lo > hi) {
        snprintf(buf, size, "n/a");
        return;
    }
    char a[32], b[32];
    snprintf(a, sizeof a, fmt, lo);
    snprintf(b, sizeof b, fmt, hi);
    if (strcmp(a, b) == 0)
        snprintf(buf, size, "%s", a);
    else
        snprintf(buf, size, "%s - %s", a, b);
}

static void print_table(const seed_result *r, int seeds, const char *classifier) {
    static const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                    ATTN_SET_FILL4, ATTN_SET_FILL8};
    char buf[96], label[64];
    double xs[MAX_SEEDS];
    printf("Compose (%d seed%s)                       seq2seq-transformer\n", seeds,
           seeds > 1 ? "s" : "");
    for (int k = 0; k < ATTN_N_TEST_SETS; k++) {
        for (int s = 0; s < seeds; s++) xs[s] = r[s].r.set_loss[k];
        range_text(buf, sizeof buf, xs, seeds, "%.4f");
        snprintf(label, sizeof label, "loss per target token, %s", attn_set_name(sets[k]));
        printf("%-40s %s\n", label, buf);
    }
    const char *names[4] = {"samples grammatical", "  with the polarity asked",
                            "  with the subject asked", "  novel (not a training sentence)"};
    for (int q = 0; q < 4; q++) {
        for (int s = 0; s < seeds; s++) {
            const cli_compose_tally *t = &r[s].r.tally;
            const long v = q == 0   ? t->grammatical
                           : q == 1 ? t->polarity
                           : q == 2 ? t->subject
                                    : t->novel;
            xs[s] = 100.0 * (double)v / (double)t->samples;
        }
        range_text(buf, sizeof buf, xs, seeds, "%.1f%%");
        printf("%-40s %s\n", names[q], buf);
    }
    if (classifier) {
        for (int q = 0; q < 2; q++) {
            for (int s = 0; s < seeds; s++) {
                const cli_compose_tally *t = &r[s].r.tally;
                const long of = q ? t->grammatical : t->samples;
                xs[s] = of ? 100.0 * (double)(q ? t->classifier_parse : t->classifier_asked) /
                                 (double)of
                           : NAN;
            }
            range_text(buf, sizeof buf, xs, seeds, "%.1f%%");
            printf("%-40s %s\n",
                   q ? "  classifier agrees with the parse" : "classifier reads the polarity asked",
                   buf);
        }
        printf("%-40s %s\n", "classifier", classifier);
    }
    printf("%-40s %ld per seed (%d per source, temperature 1)\n", "samples", r[0].r.tally.samples,
           CLI_COMPOSE_PER_SOURCE);
    printf("%-40s %zu\n", "parameters", r[0].n_params);
}

int cmd_reproduce_compose(int argc, char **argv) {
    int seeds = 1, epochs = 10, train_size = ATTN_TRAIN_DEFAULT_N;
    const char *task = "compose", *out = NULL, *classifier = NULL;
    cli_opt opts[] = {
        {"--task", "NAME", CLI_OPT_STR, &task, .help = "compose"},
        {"--seeds", "N", CLI_OPT_INT, &seeds, 1, MAX_SEEDS, .help = "seeds 1..N"},
        {"--epochs", "N", CLI_OPT_INT, &epochs, 1, ATTN_S2S_MAX_EPOCHS, .help = "epochs per run"},
        {"--train-size", "N", CLI_OPT_INT, &train_size, 2, ATTN_DATA_MAX_N,
         .help = "training pairs per seed"},
        {"--out", "DIR", CLI_OPT_STR, &out, .def = "",
         .help = "write DIR/compose-seq2seq-transformer-seed<S>.json"},
        {"--classifier", "FILE.json", CLI_OPT_STR, &classifier, .def = "",
         .help = "a sentiment classifier's weights (attn train) that judges\nthe samples too"},
    };
    cli_spec spec = CLI_SPEC(
        "reproduce", "--task compose [--seeds N] [--epochs N] [--train-size N] [--out DIR]",
        "Trains the seq2seq-transformer on the compose task ('<polarity> <subject>' -> a\n"
        "review sentence) for seeds 1..N, one after the other on one BLAS thread (lr 3e-3;\n"
        "the epoch kept: the lowest held-out loss), and prints, as the range across seeds, the "
        "loss\n"
        "per target token on the four test sets of each seed and what the grammar parser\n"
        "says of 25 samples per source (2 polarities x 8 subjects) at temperature 1:\n"
        "grammatical, with the polarity and the subject asked for, and novel (not one of the\n"
        "training sentences); with --classifier, the share of samples a trained sentiment\n"
        "classifier reads with the polarity asked for, and of grammatical ones with the\n"
        "parse's label.",
        NULL, "docs/decoder.md describes the task, the parser and the judgement.", opts);
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    if (strcmp(task, "compose") != 0)
        return cli_usage_error("reproduce", "--task: expected compose, got '%s'", task);
    if (out && mkdir(out, 0777) != 0 && errno != EEXIST) {
        cli_message("reproduce", "--out %s: %s", out, strerror(errno));
        return CLI_ERROR;
    }
    attn_model *judge = NULL;
    const attn_vocab *vocab = NULL;
    if (classifier && (rc = cli_load_weights("reproduce", classifier, &judge, &vocab)) >= 0)
        return rc;
    if (judge && !attn_vocab_is_builtin(vocab)) {
        attn_model_free(judge);
        attn_vocab_free(vocab);
        return cli_usage_error("reproduce",
                               "--classifier %s has its own vocabulary; the "
                               "samples are words of the built-in one",
                               classifier);
    }
    attn_set_num_threads(1);
    seed_result r[MAX_SEEDS];
    memset(r, 0, sizeof r);
    rc = CLI_OK;
    for (int s = 0; s < seeds && rc == CLI_OK; s++)
        rc = run_seed((uint64_t)s + 1, epochs, train_size, out, judge, &r[s]);
    if (rc == CLI_OK) print_table(r, seeds, classifier);
    if (rc == CLI_OK) cli_print_kernels();
    attn_model_free(judge);
    attn_vocab_free(vocab);
    return rc;
}
