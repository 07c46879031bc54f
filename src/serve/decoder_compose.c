/* decoder_compose.c -- POST /api/compose: n samples of a compose model for "<polarity>
 * <subject>" (attn_seq2seq_sample: temperature, top-p, seeds seed .. seed + n - 1, KV cache),
 * each judged by the committed classifiers (their probability that the sample is positive,
 * batch 1 as attn predict, and whether that agrees with the polarity asked for) and by the
 * grammar (attn_grammar_parse: grammatical or not, with the parse's polarity and subject).
 *
 *   {"model"?, "polarity", "subject"?, "temperature"?, "top_p"?, "n"?, "seed"?}
 *   -> {"model", "seed", "source", "samples": [{"seed", "text", "words", "judges": [{"model",
 *       "seed", "probability", "agrees"}], "grammar": {"grammatical", "label", "subject",
 *       "polarity_ok", "subject_ok" | "why"}}]}
 * A sample holding a token outside the classifiers' vocabulary (a polarity token, [BOS]) is
 * judged null. */
#include "decoder_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "<polarity> <subject>" as compose's source ids (the target vocabulary: the polarity token,
 * then the subject noun); false after an error answer. */
static bool compose_source(const attn_compose_request *r, int *src, serve_response *rs) {
    src[0] = strcmp(r->polarity, "positive") == 0 ? ATTN_TGT_POSITIVE : ATTN_TGT_NEGATIVE;
    const char *subject = r->subject[0] ? r->subject : "course";
    const int id = attn_vocab_id(subject);
    if (id < 0 || strcmp(attn_vocab_category(id), "subject") != 0) {
        serve_error_response(rs, 400, "bad_request",
                             "\"subject\" must be a subject noun of the vocabulary (lecture, "
                             "course, teacher, professor, seminar, exam, tutorial, textbook)");
        return false;
    }
    src[1] = id;
    return true;
}

/* The classifiers on the task's vocabulary that judge a sample: the explained seed of each. */
static int judges(const serve_app *app, int *entries) {
    static const attn_arch order[] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_GRU,
                                      ATTN_ARCH_TRANSFORMER};
    int n = 0;
    for (int a = 0; a < 4; a++) {
        const int e = app->explain_entry[order[a]];
        if (e >= 0 && app->entries[e].task_vocab) entries[n++] = e;
    }
    return n;
}

/* One sample's judgement by the classifiers into sb. */
static void judge(serve_app *app, int ctx, const int *out, int n_out, bool positive, sbuf *sb) {
    int entries[SERVE_N_ARCH];
    const int n = judges(app, entries);
    bool words = n_out > 0;
    for (int i = 0; i < n_out; i++) words = words && out[i] > 1 && out[i] < ATTN_VOCAB_SIZE;
    sb_add(sb, ", \"judges\": [");
    for (int k = 0; k < n; k++) {
        const serve_entry *en = &app->entries[entries[k]];
        const int max =
            en->cfg.arch == ATTN_ARCH_TRANSFORMER ? en->cfg.max_len - 1 : ATTN_MAX_WORDS;
        float logit = NAN;
        attn_error err;
        const attn_batch b = {.B = 1, .T = n_out, .ids = out, .lengths = &n_out};
        const bool ok =
            words && n_out <= max &&
            attn_model_forward(serve_model(app, ctx, entries[k]), &b, &logit, &err) == ATTN_OK;
        sb_printf(sb, "%s{\"model\": \"%s\", \"seed\": %d, ", k ? ", " : "",
                  attn_arch_name(en->arch), en->seed);
        if (ok) {
            const double p = 1.0 / (1.0 + exp(-(double)logit));
            sb_printf(sb, "\"probability\": %.9g, \"agrees\": %s}", p,
                      (p > 0.5) == positive ? "true" : "false");
        } else {
            sb_add(sb, "\"probability\": null, \"agrees\": null}");
        }
    }
    sb_add(sb, "]");
}

/* The grammar's verdict on a sample (attn_grammar_parse) into sb: grammatical, the parse's
 * polarity and subject and whether they are the ones asked for; "why" when not grammatical. */
static void grammar(const int *out, int n_out, const int *src, sbuf *sb) {
    attn_parse p;
    attn_error err;
    bool words = n_out > 0;
    for (int i = 0; i < n_out; i++) words = words && out[i] > 1 && out[i] < ATTN_VOCAB_SIZE;
    attn_status st = words ? attn_grammar_parse(out, n_out, &p, &err)
                           : attn_errorf(&err, ATTN_ERR_VALUE,
                                         "holds a token that is not a word of the vocabulary");
    if (st != ATTN_OK) {
        sb_add(sb, ", \"grammar\": {\"grammatical\": false, \"why\": ");
        sb_json_string(sb, err.msg);
        sb_add(sb, "}");
        return;
    }
    const int label = src[0] == ATTN_TGT_POSITIVE ? 1 : 0;
    sb_printf(sb,
              ", \"grammar\": {\"grammatical\": true, \"label\": \"%s\", \"subject\": \"%s\", "
              "\"polarity_ok\": %s, \"subject_ok\": %s}",
              p.label ? "positive" : "negative", attn_vocab_word(out[p.subject]),
              p.label == label ? "true" : "false", out[p.subject] == src[1] ? "true" : "false");
}

static void compose(serve_app *app, int ctx, const attn_compose_request *r, int di,
                    serve_response *rs) {
    const serve_decoder *dd = &app->decoders->d[di];
    attn_seq2seq *m = serve_decoder_model(app, ctx, di);
    int src[2];
    if (!compose_source(r, src, rs)) return;
    const int max_out =
        dd->cfg.max_tgt_len - 1 < ATTN_S2S_MAX_TGT ? dd->cfg.max_tgt_len - 1 : ATTN_S2S_MAX_TGT;
    sbuf sb = {0};
    sb_add(&sb, "{\"model\": ");
    sb_json_string(&sb, dd->name);
    sb_printf(&sb, ", \"seed\": %d, \"source\": \"%s %s\", \"samples\": [", dd->seed, r->polarity,
              attn_vocab_word(src[1]));
    for (int k = 0; k < r->n; k++) {
        const attn_s2s_sampling cfg = {r->temperature, 0, r->top_p, r->seed + (uint64_t)k};
        int out[ATTN_S2S_MAX_TGT], n_out = 0;
        attn_error err;
        if (attn_seq2seq_sample(m, src, 2, max_out, true, &cfg, out, &n_out, NULL, NULL, &err) !=
            ATTN_OK) {
            sb_free(&sb);
            serve_error_response(rs, 500, "compose_failed", err.msg);
            return;
        }
        sb_printf(&sb, "%s{\"seed\": %llu, \"text\": \"", k ? ", " : "",
                  (unsigned long long)cfg.seed);
        for (int i = 0; i < n_out; i++)
            sb_printf(&sb, i ? " %s" : "%s", attn_tgt_vocab_token(out[i]));
        sb_add(&sb, "\", \"words\": ");
        sb_printf(&sb, "%d", n_out);
        judge(app, ctx, out, n_out, src[0] == ATTN_TGT_POSITIVE, &sb);
        grammar(out, n_out, src, &sb);
        sb_add(&sb, "}");
    }
    sb_add(&sb, "]}");
    serve_json_take(rs, &sb);
}

void serve_api_compose(serve_app *app, int ctx, const serve_request *rq, serve_response *rs) {
    attn_compose_request r;
    attn_error err;
    attn_status st = attn_compose_request_parse(rq->body, rq->body_len, &r, &err);
    if (st != ATTN_OK) {
        serve_request_error(rs, st, &err);
        return;
    }
    const int di = serve_decoder_find(app, r.model, true);
    if (di < 0)
        serve_unknown_decoder(rs, r.model[0] ? r.model : "(default compose model: none loaded)");
    else if (!app->decoders->d[di].compose)
        serve_error_response(rs, 400, "bad_request",
                             "\"model\" must name a compose model (see /api/decoders)");
    else
        compose(app, ctx, &r, di, rs);
}
