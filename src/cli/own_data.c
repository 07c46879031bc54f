/* own_data.c -- a user's own TSV files for the commands: every bad line on stderr, words read
 * as [UNK] counted in one warning, and the vocabulary attn train builds from a file. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* Every listed bad line ("attn CMD: FILE:N: what"), then how many more there are. */
static void print_bad_lines(const char *cmd, const char *path, const attn_tsv_report *rep) {
    for (int i = 0; i < rep->n_listed; i++)
        cli_message(cmd, "%s:%ld: %s", path, rep->listed[i].line, rep->listed[i].msg);
    if (rep->n_bad > rep->n_listed)
        cli_message(cmd, "%s: ... and %ld more bad lines (%ld in all)", path,
                    rep->n_bad - rep->n_listed, rep->n_bad);
}

/* The message of a failed read: each bad line on its own, or err's message. */
static int tsv_failed(const char *cmd, const char *path, const attn_tsv_report *rep,
                      const attn_error *err) {
    if (rep->n_bad == 0) return cli_fail(cmd, err);
    print_bad_lines(cmd, path, rep);
    return CLI_ERROR;
}

void cli_warn_unknown(const char *cmd, const char *what, long n_words, long n_sentences) {
    if (n_words == 0) return;
    cli_message(cmd, "warning: %s: %ld %s in %ld %s read as [UNK] (not in the vocabulary)", what,
                n_words, n_words == 1 ? "word" : "words", n_sentences,
                n_sentences == 1 ? "sentence" : "sentences");
}

int cli_read_tsv(const char *cmd, const char *path, const attn_vocab *vocab, attn_dataset **out) {
    static attn_tsv_report rep; /* about 5 kB: not on the stack */
    attn_error err = {0};
    if (attn_dataset_read_tsv_report(path, vocab ? vocab : attn_vocab_builtin(), out, &rep, &err) !=
        ATTN_OK)
        return tsv_failed(cmd, path, &rep, &err);
    cli_warn_unknown(cmd, path, rep.n_unk_words, rep.n_unk_lines);
    return -1;
}

int cli_vocab_from_tsv(const char *cmd, const char *path, int min_count, attn_vocab **out) {
    static attn_tsv_report rep;
    attn_error err = {0};
    int n_rare = 0;
    if (attn_vocab_from_tsv(path, min_count, out, &rep, &n_rare, &err) != ATTN_OK)
        return tsv_failed(cmd, path, &rep, &err);
    int n = attn_vocab_count(*out);
    cli_message(cmd,
                "vocabulary of %d tokens from %s: [PAD], [CLS], [UNK] and %d %s seen at least %d "
                "%s%s",
                n, path, n - 3, n - 3 == 1 ? "word" : "words", min_count,
                min_count == 1 ? "time" : "times", n_rare ? "" : " (every word)");
    if (n_rare)
        cli_message(cmd, "%d rarer %s read as [UNK]", n_rare,
                    n_rare == 1 ? "word is" : "words are");
    return -1;
}

void cli_verdict_text(char *buf, size_t size, const attn_accuracy_verdict *v) {
    snprintf(buf, size, "95 %% interval %.1f-%.1f %%, majority-class baseline %.1f %%",
             100.0 * v->lo, 100.0 * v->hi, 100.0 * v->baseline);
}

void cli_warn_chance(const char *cmd, const char *what, int n, const attn_accuracy_verdict *v) {
    if (!v->chance) return;
    cli_message(cmd,
                "warning: %s: not distinguishable from chance: the 95 %% interval holds the "
                "majority-class baseline (%d %s are too few, or the labels do not follow from "
                "the words; docs/own-data.md)",
                what, n, cli_plural(n, "sentence", "sentences"));
}
