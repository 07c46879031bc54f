/* attn_own_data.h -- your own data and your own words (src/data/tsv.c): a vocabulary built
 * from a labelled TSV file, unknown words as [UNK], and a TSV reader that reports every bad
 * line. Include it beside attn.h.
 *
 *   attn_vocab *v = NULL;
 *   attn_tsv_report rep;
 *   if (attn_vocab_from_tsv("my.tsv", 2, &v, &rep, &err) != ATTN_OK) ...   // rep lists bad lines
 *   attn_dataset *d = NULL;
 *   if (attn_dataset_read_tsv_report("my.tsv", v, &d, &rep, &err) != ATTN_OK) ...
 *   // rep.n_unk_words words of the file became [UNK] (seen fewer than 2 times)
 *
 * A TSV file holds "label<TAB>sentence" lines: label 0 (negative) or 1 (positive), a sentence
 * the tokenizer reads (attn_tokenize: lower-cased, .,!?;: quotes and brackets removed, split on
 * white space) of 1..ATTN_MAX_WORDS words. Blank lines are skipped; CR LF line ends are fine.
 */
#ifndef ATTN_OWN_DATA_H
#define ATTN_OWN_DATA_H

#include "attn.h"

#include <stdbool.h>

/* The token unknown words become where a vocabulary has it. */
#define ATTN_UNK_TOKEN "[UNK]"

/* attn_tokenize_vocab, except that with unk_id >= 0 a word v does not hold (or one that is not
 * of kind "word") becomes unk_id, counted in *n_unk (may be NULL), instead of an error. With
 * unk_id < 0 it is attn_tokenize_vocab. */
attn_status attn_tokenize_vocab_unk(const attn_vocab *v, const char *sentence, int unk_id, int *ids,
                                    int max_ids, int *n_ids, int *n_unk, attn_error *err);

/* The tokenizer's words of a sentence, without a vocabulary: lower-cased, .,!?;: quotes and
 * brackets removed, split on white space; a word longer than ATTN_VOCAB_TOKEN_MAX bytes is cut
 * to that. words[0..*n) point into buf[size] (size > strlen(sentence) is always enough). Fails
 * (ATTN_ERR_VALUE) on an empty sentence or more than max_words words (codes as attn_tokenize). */
attn_status attn_tokenize_words(const char *sentence, char *buf, size_t size, const char **words,
                                int max_words, int *n, attn_error *err);

/* What a TSV reader saw: every bad line counted, the first ATTN_TSV_LISTED listed with its
 * 1-based line number and what is wrong with it ("bad label '2'; expected 0 (negative) or 1
 * (positive)"). */
#define ATTN_TSV_LISTED  20
#define ATTN_TSV_MSG_MAX 256
typedef struct attn_tsv_report {
    long n_lines;       /* lines read, blank ones included */
    long n_bad;         /* bad lines (all of them) */
    int n_listed;       /* min(n_bad, ATTN_TSV_LISTED) */
    attn_status status; /* of the first bad line: ATTN_ERR_PARSE (format) or ATTN_ERR_VALUE */
    struct {
        long line;
        char msg[ATTN_TSV_MSG_MAX];
    } listed[ATTN_TSV_LISTED];
    long n_unk_words, n_unk_lines; /* words read as [UNK], and the sentences holding them */
} attn_tsv_report;

/* Reads the file with vocabulary v. Unknown words become [UNK] when v has the token
 * ATTN_UNK_TOKEN (counted in rep), else each is a bad line. On bad lines: nothing in *out,
 * every one counted in rep (may be NULL) and err names the file, the first bad line and the
 * count ("my.tsv:3: missing tab ...; 12 bad lines in all"). */
attn_status attn_dataset_read_tsv_report(const char *path, const attn_vocab *v, attn_dataset **out,
                                         attn_tsv_report *rep, attn_error *err);

/* The vocabulary of a TSV file's sentences, deterministic:
 *   ids 0, 1, 2: [PAD], [CLS], [UNK];
 *   then every word the tokenizer reads in the file at least min_count (>= 1) times, the most
 *   frequent first, words of equal count in byte order (strcmp).
 * Words that cannot be tokens (over ATTN_VOCAB_TOKEN_MAX bytes, invalid UTF-8, control
 * characters, "<...>" which is a special token's form) are left out: they read as [UNK].
 * Bad lines (format: tab, label, empty sentence) are reported as attn_dataset_read_tsv_report
 * does, and nothing is made. *n_rare (may be NULL): distinct words left out for min_count. */
attn_status attn_vocab_from_tsv(const char *path, int min_count, attn_vocab **out,
                                attn_tsv_report *rep, int *n_rare, attn_error *err);

#endif
