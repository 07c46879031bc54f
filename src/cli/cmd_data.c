/* cmd_data.c -- `attn data`: a generated set of the course-review task as TSV on stdout. */
#include "attn_seq2seq.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char about[] =
    "Generates a set of the course-review sentiment task and writes it to stdout as TSV,\n"
    "one 'label<TAB>sentence' line per sentence (label 1 positive, 0 negative).";

static const char notes[] =
    "Sets: train has 4..59 words with 0..8 filler phrases and mostly a long tail after the\n"
    "core clause; holdout follows train's distribution from its own PRNG stream (the\n"
    "held-out set of attn train and attn reproduce); plain has no fillers and no distractor\n"
    "clause; distractor has a distractor clause and no fillers; fill4 and fill8 have exactly\n"
    "4 and 8 filler phrases (fill8: 42..60 words); all is plain, distractor, fill4 and fill8\n"
    "one after the other. Test sets and holdout never contain a sentence of the\n"
    "8000-sentence training set of the same seed. The same seed gives the same bytes on\n"
    "every machine.";

/* Statistics on the position of the core adjective (the first adjective) for --stats, one
 * line naming the set. */
static void print_stats(const char *set, uint64_t seed, const attn_dataset *d) {
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
            "attn data: %s (seed %llu): %d sentences, %d positive (%.2f%%), words min %d median %d "
            "max %d, "
            "mean words after the core adjective %.1f, core adjective within the last 8 "
            "words: %d (%.2f%%)\n",
            set, (unsigned long long)seed, d->n, pos, 100.0 * pos / d->n, minl, median, maxl,
            (double)tail_sum / d->n, near_end, 100.0 * near_end / d->n);
}

/* The pairs of a seq2seq task as 'source<TAB>target' lines. */
static int print_pairs(attn_task task, attn_set set, int n, uint64_t seed) {
    attn_error err;
    attn_pairs *p = NULL;
    if (attn_pairs_generate(task, set, n, seed, &p, &err) != ATTN_OK) return cli_fail("data", &err);
    for (int i = 0; i < p->src->n; i++) printf("%s\t%s\n", p->src->texts[i], p->tgt_texts[i]);
    attn_pairs_free(p);
    return CLI_OK;
}

int cmd_data(int argc, char **argv) {
    const char *set_name = "train";
    int n = 0;
    uint64_t seed = 1;
    bool stats = false;
    const char *task_name = NULL;
    cli_opt opts[] = {
        {"--task", "NAME", CLI_OPT_STR, &task_name, .def = "",
         .help = "rewrite or compose: 'source<TAB>target' pairs of a seq2seq\ntask "
                 "(docs/decoder.md) instead of 'label<TAB>sentence'"},
        {"--set", "NAME", CLI_OPT_STR, &set_name, .help = CLI_SET_NAMES},
        {"--n", "N", CLI_OPT_INT, &n, 1, ATTN_DATA_MAX_N, .def = "",
         .help =
             "sentences per set; default 8000 for train, 500 for holdout,\n1000 for each test set"},
        {"--seed", "S", CLI_OPT_U64, &seed, .help = "generator seed"},
        {"--stats", NULL, CLI_OPT_FLAG, &stats,
         .help = "print only the length and core-position statistics (to stderr),\n"
                 "not the sentences"},
    };
    cli_spec spec =
        CLI_SPEC("data", "[--task rewrite|compose] [--set NAME] [--n N] [--seed S] [--stats]",
                 about, NULL, notes, opts);
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    attn_set sets[ATTN_N_TEST_SETS];
    int n_sets = 0;
    if (!cli_sets_from_name(set_name, sets, &n_sets))
        return cli_usage_error("data", "--set expects %s, got '%s'", CLI_SET_NAMES, set_name);
    attn_error err;
    attn_task task = ATTN_TASK_REWRITE;
    if (task_name && attn_task_from_name(task_name, &task, &err) != ATTN_OK)
        return cli_usage_error("data", "--task: %s", err.msg);
    if (task_name && stats) return cli_usage_error("data", "--stats is for the sentiment task");
    for (int s = 0; s < n_sets; s++) {
        attn_dataset *d = NULL;
        int size = cli_given(&spec, "--n") ? n : cli_set_default_n(sets[s]);
        if (task_name) { /* a seq2seq task: source<TAB>target lines */
            rc = print_pairs(task, sets[s], size, seed);
            if (rc != CLI_OK) return rc;
            continue;
        }
        if (attn_data_generate(sets[s], size, seed, &d, &err) != ATTN_OK)
            return cli_fail("data", &err);
        for (int i = 0; i < d->n && !stats; i++) printf("%d\t%s\n", d->labels[i], d->texts[i]);
        if (stats) print_stats(attn_set_name(sets[s]), seed, d);
        attn_dataset_free(d);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "attn data: error writing to stdout\n");
        return CLI_ERROR;
    }
    return CLI_OK;
}
