/* generate_output.c -- the parts of `attn generate` (cmd_generate.c) that write one source's
 * answer apart from the words: the compose judgement and the teacher-forced logits (--teacher),
 * and the json helpers both use (cli.h). */
#include "attn_seq2seq.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* compose models: the output judged by the grammar parser, on a line after the output. */
void cli_generate_print_judgement(FILE *f, const int *src, const int *out, int n_out) {
    attn_compose_verdict v;
    attn_error err;
    if (attn_compose_judge(src, out, n_out, &v, &err) == ATTN_OK)
        fprintf(f, "  judged: grammatical, %s (asked %s), subject %s (asked %s)\n",
                v.label ? "positive" : "negative",
                src[0] == ATTN_TGT_POSITIVE ? "positive" : "negative", attn_vocab_word(v.subject),
                attn_vocab_word(src[1]));
    else
        fprintf(f, "  judged: not grammatical (%s)\n", err.msg);
}

/* json: the judgement as the "judged" member of the object open in w. */
void cli_generate_json_judgement(attn_json_writer *w, const int *src, const int *out, int n_out) {
    attn_compose_verdict v;
    attn_error err;
    const bool ok = attn_compose_judge(src, out, n_out, &v, &err) == ATTN_OK;
    attn_json_begin_object_field(w, "judged");
    attn_json_field_bool(w, "grammatical", ok);
    if (ok) {
        attn_json_field_string(w, "polarity", v.label ? "positive" : "negative");
        attn_json_field_string(w, "subject", attn_vocab_word(v.subject));
        attn_json_field_bool(w, "polarity_as_asked", v.polarity_ok);
        attn_json_field_bool(w, "subject_as_asked", v.subject_ok);
    } else {
        attn_json_field_string(w, "why", err.msg);
    }
    attn_json_end_object(w);
}

void cli_json_floats(attn_json_writer *w, const float *x, int n) {
    attn_json_begin_array(w);
    for (int j = 0; j < n; j++) attn_json_double(w, (double)x[j]);
    attn_json_end_array(w);
}

/* The target's words as target-vocabulary ids after [BOS] into ids (room for max); -1 count
 * (after the message on msg) on an unknown token. */
static int target_ids(const char *target, int *ids, int max, FILE *msg) {
    char *copy = strdup(target);
    int n = 0;
    if (!copy) return -1;
    ids[n++] = ATTN_TGT_BOS;
    char *save = NULL; /* strtok_r: pieces run on several threads at once */
    for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        const int id = attn_tgt_vocab_id(w);
        if (id < 0 || n >= max) {
            if (id < 0)
                cli_message_to(msg, "generate", "target word '%s' is not in the target vocabulary",
                               w);
            else
                cli_message_to(msg, "generate", "a target of more than %d words", max - 1);
            free(copy);
            return -1;
        }
        ids[n++] = id;
    }
    free(copy);
    return n;
}

/* seq2seq-attn: the "alignment" member, [[..], ..], the attention over the source at each
 * step. */
static bool json_alignment(attn_json_writer *w, FILE *msg, attn_seq2seq *m, const int *src,
                           int n_src, const int *tgt, int T) {
    float *alpha = malloc((size_t)T * n_src * sizeof *alpha);
    attn_error err;
    if (!alpha || attn_seq2seq_alignment(m, src, n_src, tgt, T, alpha, &err) != ATTN_OK) {
        cli_message_to(msg, "generate", "%s", alpha ? err.msg : "out of memory");
        free(alpha);
        return false;
    }
    attn_json_begin_array_field(w, "alignment");
    for (int t = 0; t < T; t++) cli_json_floats(w, alpha + (size_t)t * n_src, n_src);
    attn_json_end_array(w);
    free(alpha);
    return true;
}

/* The object in w ended, with its newline; false (after the message on msg) when the writer
 * failed. */
bool cli_generate_json_done(attn_json_writer *w, FILE *f, FILE *msg) {
    attn_json_end_object(w);
    attn_error err;
    if (attn_json_writer_finish(w, &err) != ATTN_OK) {
        cli_message_to(msg, "generate", "%s", err.msg);
        return false;
    }
    fputc('\n', f);
    return true;
}

bool cli_generate_score_target(FILE *f, FILE *msg, attn_seq2seq *m, const char *source,
                               const char *target, const int *src, int n_src) {
    const attn_seq2seq_config *c = attn_seq2seq_config_of(m);
    int tgt[ATTN_S2S_MAX_TGT + 1];
    const int T = target_ids(target, tgt, ATTN_S2S_MAX_TGT + 1, msg);
    if (T < 0) return false;
    float *logits = malloc((size_t)T * c->tgt_vocab * sizeof *logits);
    attn_error err;
    const attn_s2s_batch b = {1, n_src, T, src, &n_src, tgt, &T};
    if (!logits || attn_seq2seq_forward(m, &b, logits, &err) != ATTN_OK) {
        cli_message_to(msg, "generate", "%s", logits ? err.msg : "out of memory");
        free(logits);
        return false;
    }
    attn_json_writer w;
    attn_json_writer_init(&w, f);
    attn_json_begin_object(&w);
    attn_json_field_string(&w, "source", source);
    attn_json_field_string(&w, "target", target);
    attn_json_begin_array_field(&w, "logits");
    for (int t = 0; t < T; t++)
        cli_json_floats(&w, logits + (size_t)t * c->tgt_vocab, c->tgt_vocab);
    attn_json_end_array(&w);
    const bool ok = (c->arch != ATTN_S2S_ATTN || json_alignment(&w, msg, m, src, n_src, tgt, T)) &&
                    cli_generate_json_done(&w, f, msg);
    free(logits);
    return ok;
}
