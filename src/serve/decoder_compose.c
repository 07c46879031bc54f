/* decoder_compose.c -- POST /api/compose: n samples of a compose model for "<polarity>
 * <subject>" (attn_seq2seq_sample: temperature, top-p, seeds seed .. seed + n - 1, KV cache),
 * each judged by the committed classifiers (their probability that the sample is positive,
 * batch 1 as attn predict, and whether that agrees with the polarity asked for) and by the
 * grammar (attn_compose_judge: grammatical or not, with the parse's polarity and subject).
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

/* "<polarity> <subject>" as compose's source ids (attn_compose_source: the polarity token,
 * then the subject noun); false after an error answer. */
static bool compose_source(const attn_compose_request *r, int *src, serve_response *rs) {
    char text[64];
    snprintf(text, sizeof text, "%s %s", r->polarity, r->subject[0] ? r->subject : "course");
    attn_error err;
    if (attn_compose_source(text, src, &err) != ATTN_OK) {
        serve_error_response(rs, 400, "bad_request", err.msg);
        return false;
    }
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

/* One sample's judgement by the classifiers, "judges": [...], into w. */
static void judge(serve_app *app, int ctx, const int *out, int n_out, bool positive,
                  attn_json_writer *w) {
    int entries[SERVE_N_ARCH];
    const int n = judges(app, entries);
    bool words = n_out > 0;
    for (int i = 0; i < n_out; i++) words = words && out[i] > 1 && out[i] < ATTN_VOCAB_SIZE;
    attn_json_begin_array_field(w, "judges");
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
        const double p = 1.0 / (1.0 + exp(-(double)logit));
        attn_json_begin_object(w);
        serve_json_model_fields(w, attn_arch_name(en->arch), en->seed);
        attn_json_key(w, "probability");
        ok ? attn_json_double(w, p) : attn_json_null(w);
        attn_json_key(w, "agrees");
        ok ? attn_json_bool(w, (p > 0.5) == positive) : attn_json_null(w);
        attn_json_end_object(w);
    }
    attn_json_end_array(w);
}

/* The grammar's verdict on a sample (attn_compose_judge) into w: grammatical, the parse's
 * polarity and subject and whether they are the ones asked for; "why" when not grammatical. */
static void grammar(const int *out, int n_out, const int *src, attn_json_writer *w) {
    attn_compose_verdict v;
    attn_error err;
    attn_status st = attn_compose_judge(src, out, n_out, &v, &err);
    if (st == ATTN_OK && !v.grammatical)
        st = attn_errorf(&err, ATTN_ERR_VALUE, "not a sentence of the grammar");
    attn_json_begin_object_field(w, "grammar");
    attn_json_field_bool(w, "grammatical", st == ATTN_OK);
    if (st != ATTN_OK) {
        attn_json_field_string(w, "why", err.msg);
    } else {
        attn_json_field_string(w, "label", v.label ? "positive" : "negative");
        attn_json_field_string(w, "subject", attn_vocab_word(v.subject));
        attn_json_field_bool(w, "polarity_ok", v.polarity_ok);
        attn_json_field_bool(w, "subject_ok", v.subject_ok);
    }
    attn_json_end_object(w);
}

/* One sample: its seed, its words joined by spaces, their count and the judgements. */
static void sample_json(serve_app *app, int ctx, uint64_t seed, const int *out, int n_out,
                        const int *src, attn_json_writer *w) {
    sbuf text = {0};
    for (int i = 0; i < n_out; i++) {
        if (i) sb_add(&text, " ");
        sb_add(&text, attn_tgt_vocab_token(out[i]));
    }
    attn_json_begin_object(w);
    attn_json_field_uint(w, "seed", seed);
    attn_json_key(w, "text");
    if (text.failed) attn_json_writer_fail(w, ATTN_ERR_NOMEM, "out of memory");
    attn_json_string(w, text.s ? text.s : "");
    attn_json_field_int(w, "words", n_out);
    judge(app, ctx, out, n_out, src[0] == ATTN_TGT_POSITIVE, w);
    grammar(out, n_out, src, w);
    attn_json_end_object(w);
    sb_free(&text);
}

static void compose(serve_app *app, int ctx, const attn_compose_request *r, int di,
                    serve_response *rs) {
    const serve_entry *dd = &app->entries[di];
    attn_seq2seq *m = serve_decoder_model(app, ctx, di);
    int src[2];
    if (!compose_source(r, src, rs)) return;
    const int max_out =
        dd->s2s.max_tgt_len - 1 < ATTN_S2S_MAX_TGT ? dd->s2s.max_tgt_len - 1 : ATTN_S2S_MAX_TGT;
    char source[64];
    snprintf(source, sizeof source, "%s %s", r->polarity, attn_vocab_word(src[1]));
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    attn_json_begin_object(&w);
    serve_json_model_fields(&w, dd->name, dd->seed);
    attn_json_field_string(&w, "source", source);
    attn_json_begin_array_field(&w, "samples");
    for (int k = 0; k < r->n; k++) {
        const attn_s2s_sampling cfg = {r->temperature, 0, r->top_p, r->seed + (uint64_t)k};
        int out[ATTN_S2S_MAX_TGT], n_out = 0;
        attn_error err;
        if (attn_seq2seq_sample(m, src, 2, max_out, true, &cfg, out, &n_out, NULL, NULL, &err) !=
            ATTN_OK) {
            attn_json_writer_finish(&w, NULL);
            serve_error_response(rs, 500, "compose_failed", err.msg);
            return;
        }
        sample_json(app, ctx, cfg.seed, out, n_out, src, &w);
    }
    attn_json_end_array(&w);
    attn_json_end_object(&w);
    serve_json_answer(rs, 200, &w);
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
    else if (!app->entries[di].compose)
        serve_error_response(rs, 400, "bad_request",
                             "\"model\" must name a compose model (see /api/decoders)");
    else
        compose(app, ctx, &r, di, rs);
}
