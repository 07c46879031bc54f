/* compose_cli.c -- samples of a compose model judged by the grammar parser (cli.h): what attn
 * train, attn reproduce and attn eval report for the compose task, where exact match means
 * little (many sentences are right answers). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static int cmp_text(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "w1 w2 ..." of target ids out[n] into buf[size]. */
static void words_text(const int *out, int n, char *buf, size_t size) {
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k + 1 < size; i++) {
        const char *w = attn_tgt_vocab_token(out[i]);
        const int wrote = snprintf(buf + k, size - k, "%s%s", i ? " " : "", w ? w : "?");
        if (wrote < 0) break;
        k += (size_t)wrote;
    }
}

/* The classifier's reading of out[n] (review word ids): 1 positive, 0 negative, -1 when it
 * cannot read them (a target-only token, too long) or fails. */
static int classify(attn_model *c, const int *out, int n) {
    const attn_model_config *mc = c ? attn_model_config_of(c) : NULL;
    if (!c || n < 1 || (mc->arch == ATTN_ARCH_TRANSFORMER && n > mc->max_len - 1)) return -1;
    for (int i = 0; i < n; i++)
        if (out[i] < 2 || out[i] >= ATTN_VOCAB_SIZE) return -1;
    attn_batch b = {.B = 1, .T = n, .ids = out, .lengths = &n};
    float logit;
    attn_error err;
    return attn_model_forward(c, &b, &logit, &err) == ATTN_OK ? logit > 0.0f : -1;
}

int cli_compose_samples(const char *cmd, attn_seq2seq *m, int per_source, double temperature,
                        uint64_t seed, const attn_pairs *train, attn_model *classifier,
                        cli_compose_tally *t) {
    memset(t, 0, sizeof *t);
    const char **seen = NULL;
    int n_seen = 0;
    if (train) {
        n_seen = train->src->n;
        seen = malloc((size_t)n_seen * sizeof *seen);
        if (!seen) {
            cli_message(cmd, "out of memory");
            return CLI_ERROR;
        }
        for (int i = 0; i < n_seen; i++) seen[i] = train->tgt_texts[i];
        qsort(seen, (size_t)n_seen, sizeof *seen, cmp_text);
    }
    const int cap = attn_seq2seq_config_of(m)->max_tgt_len - 1;
    const int max_out = cap < ATTN_S2S_MAX_TGT ? cap : ATTN_S2S_MAX_TGT;
    int rc = CLI_OK;
    for (int pol = 0; pol < 2 && rc == CLI_OK; pol++)
        for (int id = 2; id < ATTN_VOCAB_SIZE && rc == CLI_OK; id++) {
            if (strcmp(attn_vocab_category(id), "subject") != 0) continue;
            const int src[ATTN_COMPOSE_SRC] = {pol ? ATTN_TGT_NEGATIVE : ATTN_TGT_POSITIVE, id};
            for (int k = 0; k < per_source && rc == CLI_OK; k++) {
                const attn_s2s_sampling s = {temperature, 0, 1.0, seed + (uint64_t)k};
                int out[ATTN_S2S_MAX_TGT], n_out = 0;
                attn_error err;
                if (attn_seq2seq_sample(m, src, ATTN_COMPOSE_SRC, max_out, true, &s, out, &n_out,
                                        NULL, NULL, &err) != ATTN_OK) {
                    rc = cli_fail(cmd, &err);
                    break;
                }
                attn_compose_verdict v;
                const attn_status st = attn_compose_judge(src, out, n_out, &v, &err);
                if (st != ATTN_OK && st != ATTN_ERR_VALUE) {
                    rc = cli_fail(cmd, &err);
                    break;
                }
                t->samples++;
                t->grammatical += v.grammatical;
                t->polarity += v.polarity_ok;
                t->subject += v.subject_ok;
                const int said = classify(classifier, out, n_out);
                t->classified += said >= 0;
                t->classifier_asked += said == (src[0] == ATTN_TGT_POSITIVE);
                t->classifier_parse += v.grammatical && said == v.label;
                if (seen && v.grammatical) {
                    char text[1024];
                    const char *key = text;
                    words_text(out, n_out, text, sizeof text);
                    t->novel += bsearch(&key, seen, (size_t)n_seen, sizeof *seen, cmp_text) == NULL;
                }
            }
        }
    free(seen);
    return rc;
}

void cli_compose_tally_text(const cli_compose_tally *t, char *buf, size_t size) {
    const double n = t->samples ? (double)t->samples : 1.0;
    snprintf(buf, size,
             "grammatical %.1f%%, polarity as asked %.1f%%, subject as asked %.1f%% (%ld samples)",
             100 * t->grammatical / n, 100 * t->polarity / n, 100 * t->subject / n, t->samples);
}

int cli_compose_report(const char *cmd, attn_seq2seq *m, uint64_t seed, int test_size,
                       const attn_pairs *train, attn_model *classifier, cli_compose_result *r) {
    static const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                    ATTN_SET_FILL4, ATTN_SET_FILL8};
    attn_error err;
    for (int s = 0; s < ATTN_N_TEST_SETS; s++) {
        attn_pairs *p = NULL;
        if (attn_pairs_generate(ATTN_TASK_COMPOSE, sets[s], test_size, seed, &p, &err) != ATTN_OK ||
            attn_seq2seq_loss(m, p, 0, p->src->n, &r->set_loss[s], &err) != ATTN_OK) {
            attn_pairs_free(p);
            return cli_fail(cmd, &err);
        }
        attn_pairs_free(p);
    }
    return cli_compose_samples(cmd, m, CLI_COMPOSE_PER_SOURCE, 1.0, seed, train, classifier,
                               &r->tally);
}
