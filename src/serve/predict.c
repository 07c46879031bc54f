/* predict.c -- POST /api/predict: the logit of many sentences at once with each requested
 * model, forward passes only (batch 1, the numbers `attn predict` prints). The page asks it for
 * counterfactuals (every replacement of a word, how each model's probability moves) and for
 * occlusion (the sentence without each word in turn).
 *
 *   POST /api/predict?models=rnn,lstm    body: one sentence a line (UTF-8 text, at most
 *                                        SERVE_MAX_PREDICT_LINES lines; a last empty line is
 *                                        ignored)
 *   -> {"sentences": N, "predictions": [{"model", "seed", "logits": [N], "probabilities": [N]}]}
 * Without models=, the models /api/explain explains by default. positions=zero (the shuffle
 * test of section 4): the Transformer with its learned position vectors set to zero, so it
 * cannot tell where a word is; the RNNs answer as without it (their order is their input). */
#include "serve_internal.h"
#include "attn_own_data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* models=a,b,c into entries (at most ATTN_EXPLAIN_REQUEST_MAX_MODELS); false after an error
 * answer. Absent: the default group's explained models. */
static bool predict_models(const serve_app *app, const char *query, int *entries, int *n,
                           serve_response *rs) {
    char list[128];
    const int given = serve_query_value(query, "models", list, sizeof list);
    *n = 0;
    if (given == 0) {
        static const attn_arch order[] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_GRU,
                                          ATTN_ARCH_TRANSFORMER};
        for (int a = 0; a < SERVE_N_ARCH; a++) {
            const int e = app->explain_entry[order[a]];
            if (e >= 0 && app->entries[e].vocab_group == app->default_group) entries[(*n)++] = e;
        }
        return true;
    }
    for (char *name = given > 0 ? list : NULL, *next; name; name = next) {
        next = strchr(name, ',');
        if (next) *next++ = '\0';
        attn_arch arch;
        const int e =
            attn_arch_from_name(name, &arch, NULL) == ATTN_OK ? app->explain_entry[arch] : -1;
        if (e < 0 || *n == ATTN_EXPLAIN_REQUEST_MAX_MODELS) {
            serve_error_response(rs, 404, "unknown_model",
                                 "models=a,b must name loaded models (see /api/models)");
            return false;
        }
        entries[(*n)++] = e;
    }
    if (given < 0 || *n == 0) {
        serve_error_response(rs, 404, "unknown_model",
                             "models=a,b must name loaded models (see /api/models)");
        return false;
    }
    return true;
}

/* Splits text[0..len) into lines in place (NUL-terminated; \r\n as \n); the count, or -1 when
 * there are more than max or a NUL byte. */
static int split_lines(char *text, size_t len, char **lines, int max) {
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] == '\0') return -1;
        if (i < len && text[i] != '\n') continue;
        if (i == len && start == len && n > 0) break; /* a last empty line */
        size_t end = i;
        if (end > start && text[end - 1] == '\r') end--;
        text[end] = '\0';
        if (n == max) return -1;
        lines[n++] = text + start;
        start = i + 1;
    }
    return n;
}

/* The logit of each line with model entry into logits[n]; false after an error answer. */
static bool predict_lines(serve_app *app, int ctx, int entry, bool no_positions, char **lines,
                          int n, int max_words, float *logits, serve_response *rs) {
    const serve_entry *en = &app->entries[entry];
    attn_model *m = serve_model(app, ctx, entry), *z = NULL;
    if (no_positions && en->arch == ATTN_ARCH_TRANSFORMER) {
        if (!(z = serve_model_without_positions(m, rs))) return false;
        m = z;
    }
    bool ok = false;
    int ids[ATTN_MAX_WORDS];
    for (int i = 0; i < n; i++) {
        attn_error err;
        int n_words = 0;
        int n_unk = 0; /* a word the vocabulary lacks reads as its [UNK], as in attn predict */
        if (attn_tokenize_vocab_unk(en->vocab, lines[i],
                                    attn_vocab_lookup(en->vocab, ATTN_UNK_TOKEN), ids, max_words,
                                    &n_words, &n_unk, &err) != ATTN_OK) {
            serve_tokenize_error(rs, &err, en->vocab, lines[i], attn_arch_name(en->arch), i + 1);
            goto done;
        }
        const attn_batch b = {.B = 1, .T = n_words, .ids = ids, .lengths = &n_words};
        if (attn_model_forward_infer(m, &b, &logits[i], &err) != ATTN_OK) {
            serve_error_response(rs, 503, "predict_failed", err.msg);
            goto done;
        }
    }
    ok = true;
done:
    attn_model_free(z);
    return ok;
}

void serve_api_predict(serve_app *app, int ctx, const serve_request *rq, const char *query,
                       serve_response *rs) {
    int entries[ATTN_EXPLAIN_REQUEST_MAX_MODELS], n_models = 0;
    if (!predict_models(app, query, entries, &n_models, rs)) return;
    char pos[16];
    const int pos_given = serve_query_value(query, "positions", pos, sizeof pos);
    if (pos_given < 0 || (pos_given > 0 && strcmp(pos, "zero") != 0)) {
        serve_error_response(rs, 400, "bad_request",
                             "positions= takes only 'zero' (the Transformer without its "
                             "position vectors)");
        return;
    }
    char *text = malloc(rq->body_len + 1);
    char **lines = malloc(SERVE_MAX_PREDICT_LINES * sizeof *lines);
    float *logits = malloc(SERVE_MAX_PREDICT_LINES * sizeof *logits);
    if (!text || !lines || !logits) {
        serve_error_response(rs, 503, "out_of_memory", "the server is out of memory");
        goto done;
    }
    if (rq->body_len) memcpy(text, rq->body, rq->body_len);
    text[rq->body_len] = '\0';
    const int n = split_lines(text, rq->body_len, lines, SERVE_MAX_PREDICT_LINES);
    if (n < 0) {
        serve_error_response(rs, 400, "bad_request",
                             "the body is one sentence a line, at most 256 lines, no NUL bytes");
        goto done;
    }
    const int max_words = serve_max_words(app, entries, n_models);
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    attn_json_begin_object(&w);
    attn_json_field_int(&w, "sentences", n);
    attn_json_begin_array_field(&w, "predictions");
    for (int k = 0; k < n_models; k++) {
        const serve_entry *en = &app->entries[entries[k]];
        if (!predict_lines(app, ctx, entries[k], pos_given > 0, lines, n, max_words, logits, rs)) {
            attn_json_writer_finish(&w, NULL);
            goto done;
        }
        attn_json_begin_object(&w);
        serve_json_model_fields(&w, attn_arch_name(en->arch), en->seed);
        if (pos_given > 0 && en->arch == ATTN_ARCH_TRANSFORMER)
            attn_json_field_string(&w, "positions", "zero");
        attn_json_begin_array_field(&w, "logits");
        for (int i = 0; i < n; i++) attn_json_float(&w, logits[i]);
        attn_json_end_array(&w);
        attn_json_begin_array_field(&w, "probabilities");
        for (int i = 0; i < n; i++) attn_json_double(&w, 1.0 / (1.0 + exp(-(double)logits[i])));
        attn_json_end_array(&w);
        attn_json_end_object(&w);
    }
    attn_json_end_array(&w);
    attn_json_end_object(&w);
    serve_json_answer(rs, 200, &w);
done:
    free(text);
    free(lines);
    free(logits);
}
