/* cmd_data.c -- `attn data` (a generated set as TSV on stdout) and `attn vocab` (the
 * vocabulary table, as text or JSON). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void data_usage(void) {
    printf("Usage: attn data [--set NAME] [--n N] [--seed S] [--stats]\n\n"
           "Generates a set of the course-review sentiment task and writes it to stdout as\n"
           "TSV, one 'label<TAB>sentence' line per sentence (label 1 positive, 0 negative).\n\n"
           "Options:\n"
           "  --set NAME  train (default), plain, distractor, fill4, fill8 or holdout\n"
           "  --n N       sentences (default %d for train, %d for the test sets, %d for\n"
           "              holdout)\n"
           "  --seed S    PRNG seed (default 1); the same seed gives the same output everywhere\n"
           "  --stats     print length and core-position statistics to stderr\n\n"
           "Sets: train has 4..59 words with 0..8 filler phrases and mostly a long tail after\n"
           "the core clause; plain has no fillers and no distractor clause; distractor has a\n"
           "distractor clause and no fillers; fill4 and fill8 have exactly 4 and 8 filler\n"
           "phrases (fill8: 42..60 words). holdout follows train's distribution from its own\n"
           "PRNG stream: the held-out slice of attn train and attn reproduce. Test sets and\n"
           "holdout never contain a sentence of the %d-sentence training set of the same\n"
           "seed.\n",
           ATTN_TRAIN_DEFAULT_N, ATTN_TEST_DEFAULT_N, ATTN_HOLDOUT_DEFAULT_N, ATTN_TRAIN_DEFAULT_N);
}

static void vocab_usage(void) {
    printf("Usage: attn vocab [--json]\n\n"
           "Prints the %d-token vocabulary: id, word and category ([PAD] = 0, [CLS] = 1,\n"
           "the %d words = 2..%d).\n\n"
           "Options:\n"
           "  --json  machine-readable: {\"vocab_size\": %d, \"tokens\": [{\"id\", \"word\",\n"
           "          \"category\"}, ...]}\n",
           ATTN_VOCAB_SIZE, ATTN_N_WORDS, ATTN_VOCAB_SIZE - 1, ATTN_VOCAB_SIZE);
}

/* Statistics on the position of the core adjective (the first adjective) for --stats. */
static void print_stats(const attn_dataset *d) {
    int *len = malloc((size_t)d->n * sizeof *len);
    int pos = 0, near_end = 0, minl = 1 << 30, maxl = 0;
    long tail_sum = 0;
    for (int i = 0; i < d->n; i++) {
        const int *ids = d->ids + d->offsets[i];
        int adj = -1;
        for (int t = 0; t < d->lengths[i] && adj < 0; t++) {
            const char *c = attn_vocab_category(ids[t]);
            if (strcmp(c, "positive") == 0 || strcmp(c, "negative") == 0) adj = t;
        }
        int tail = d->lengths[i] - 1 - adj;
        tail_sum += tail;
        if (tail < 8) near_end++;
        pos += d->labels[i];
        if (d->lengths[i] < minl) minl = d->lengths[i];
        if (d->lengths[i] > maxl) maxl = d->lengths[i];
        if (len) len[i] = d->lengths[i];
    }
    int median = 0;
    if (len) {
        /* counting sort is enough: lengths are small */
        int count[ATTN_MAX_WORDS + 2] = {0};
        for (int i = 0; i < d->n; i++) count[len[i] <= ATTN_MAX_WORDS ? len[i] : 0]++;
        int seen = 0;
        for (int l = 0; l <= ATTN_MAX_WORDS; l++) {
            seen += count[l];
            if (2 * seen >= d->n) {
                median = l;
                break;
            }
        }
        free(len);
    }
    fprintf(stderr,
            "attn data: %d sentences, %d positive (%.2f%%), words min %d median %d max %d, "
            "mean words after the core adjective %.1f, core adjective within the last 8 "
            "words: %d (%.2f%%)\n",
            d->n, pos, 100.0 * pos / d->n, minl, median, maxl, (double)tail_sum / d->n, near_end,
            100.0 * near_end / d->n);
}

int cmd_data(int argc, char **argv) {
    const char *cmd = "data";
    if (cli_wants_help(argc, argv)) {
        data_usage();
        return CLI_OK;
    }
    attn_set set = ATTN_SET_TRAIN;
    int n = -1;
    uint64_t seed = 1;
    bool stats = false;
    attn_error err;
    for (int i = 1; i < argc; i++) {
        bool m;
        const char *v;
        if ((v = cli_opt_value(cmd, argc, argv, &i, "--set", &m)) || m) {
            if (!v) return CLI_USAGE;
            if (attn_set_from_name(v, &set, &err) != ATTN_OK)
                return cli_usage_error(cmd, "%s", err.msg);
        } else if ((v = cli_opt_value(cmd, argc, argv, &i, "--n", &m)) || m) {
            if (!v || !cli_parse_int(cmd, "--n", v, 1, ATTN_DATA_MAX_N, &n)) return CLI_USAGE;
        } else if ((v = cli_opt_value(cmd, argc, argv, &i, "--seed", &m)) || m) {
            if (!v || !cli_parse_u64(cmd, "--seed", v, &seed)) return CLI_USAGE;
        } else if (strcmp(argv[i], "--stats") == 0) {
            stats = true;
        } else {
            return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
        }
    }
    if (n < 0)
        n = set == ATTN_SET_TRAIN     ? ATTN_TRAIN_DEFAULT_N
            : set == ATTN_SET_HOLDOUT ? ATTN_HOLDOUT_DEFAULT_N
                                      : ATTN_TEST_DEFAULT_N;

    attn_dataset *d = NULL;
    if (attn_data_generate(set, n, seed, &d, &err) != ATTN_OK) return cli_fail(cmd, &err);
    for (int i = 0; i < d->n; i++) printf("%d\t%s\n", d->labels[i], d->texts[i]);
    if (stats) print_stats(d);
    attn_dataset_free(d);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "attn data: error writing to stdout\n");
        return CLI_ERROR;
    }
    return CLI_OK;
}

int cmd_vocab(int argc, char **argv) {
    const char *cmd = "vocab";
    if (cli_wants_help(argc, argv)) {
        vocab_usage();
        return CLI_OK;
    }
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else
            return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
    int V = attn_vocab_size();
    if (json) {
        /* words are lower-case letters and [PAD]/[CLS]: nothing to escape */
        printf("{\"vocab_size\": %d, \"tokens\": [\n", V);
        for (int id = 0; id < V; id++)
            printf("  {\"id\": %d, \"word\": \"%s\", \"category\": \"%s\"}%s\n", id,
                   attn_vocab_word(id), attn_vocab_category(id), id + 1 < V ? "," : "");
        printf("]}\n");
    } else {
        printf("%-4s %-12s %s\n", "id", "word", "category");
        for (int id = 0; id < V; id++)
            printf("%-4d %-12s %s\n", id, attn_vocab_word(id), attn_vocab_category(id));
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "attn vocab: error writing to stdout\n");
        return CLI_ERROR;
    }
    return CLI_OK;
}
