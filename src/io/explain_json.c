/* explain_json.c -- an explanation (attn_explain) as the JSON object `attn explain --format json`
 * prints and `attn serve` returns per model, written here once so the two cannot drift; and the
 * strict parsing of the server's explain request {"sentence": "...", "models": [...],
 * "ig_steps": N}. */
#include "io_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing ----------------------------------------------------------------------------------
 */

void attn_json_escape(const char *s, void (*put)(const char *text, size_t n, void *user),
                      void *user) {
    static const char hex[] = "0123456789abcdef";
    put("\"", 1, user);
    const unsigned char *p = (const unsigned char *)s, *run = p; /* run: bytes copied as they are */
    while (*p) {
        const size_t n = attn_io_utf8_len(p, strnlen((const char *)p, 4));
        char esc[7];
        size_t esc_n = 0;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char)*p, esc_n = 2;
        } else if (*p < 0x20 || *p == 0x7f) {
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[*p >> 4], esc[5] = hex[*p & 15], esc_n = 6;
        } else if (n == 0) {
            memcpy(esc, "\\ufffd", 6), esc_n = 6;
        } else {
            p += n;
            continue;
        }
        if (p > run) put((const char *)run, (size_t)(p - run), user);
        put(esc, esc_n, user);
        run = ++p;
    }
    if (p > run) put((const char *)run, (size_t)(p - run), user);
    put("\"", 1, user);
}

static void put_file(const char *text, size_t n, void *f) {
    fwrite(text, 1, n, f);
}

void attn_json_write_string(FILE *f, const char *s) {
    attn_json_escape(s, put_file, f);
}

void attn_prediction_write_json(FILE *f, const char *sentence, const int *ids, int n_ids,
                                float logit, double probability) {
    if (ids) {
        fputs("{\"ids\": [", f);
        for (int i = 0; i < n_ids; i++) fprintf(f, i ? ", %d" : "%d", ids[i]);
        fputc(']', f);
    } else {
        fputs("{\"sentence\": ", f);
        attn_json_write_string(f, sentence);
    }
    fprintf(f, ", \"label\": %d, \"probability\": %.9g, \"logit\": %.9g}", logit > 0.0f,
            probability, (double)logit);
}

void attn_io_json_floats(FILE *f, const float *a, size_t n) {
    fputc('[', f);
    attn_io_write_floats(f, a, n, ", ");
    fputc(']', f);
}

void attn_io_json_matrix(FILE *f, const float *a, int rows, int cols) {
    fputc('[', f);
    for (int r = 0; r < rows; r++) {
        if (r) fputs(", ", f);
        attn_io_json_floats(f, a + (size_t)r * cols, (size_t)cols);
    }
    fputc(']', f);
}

void attn_io_json_maps(FILE *f, const char *key, const float *a, int L, int NH, int T, int K) {
    fprintf(f, ", \"%s\": [", key);
    for (int l = 0; l < L; l++) {
        fputs(l ? ", [" : "[", f);
        for (int h = 0; h < NH; h++) {
            if (h) fputs(", ", f);
            attn_io_json_matrix(f, a + ((size_t)l * NH + h) * T * K, T, K);
        }
        fputc(']', f);
    }
    fputc(']', f);
}

/* Token i of the displayed axis: [CLS] first for the Transformer. */
static const char *token_name(const attn_vocab *v, const attn_explanation *e, const int *ids,
                              int i) {
    if (e->arch == ATTN_ARCH_TRANSFORMER) return i == 0 ? "[CLS]" : attn_vocab_token(v, ids[i - 1]);
    return attn_vocab_token(v, ids[i]);
}

/* key: a [layer][head][position][cols] array of floats (attention: cols = S keys; q, k:
 * cols = the head size) */
static void write_per_head(FILE *f, const char *key, const attn_explanation *e, const float *a,
                           int cols) {
    attn_io_json_maps(f, key, a, e->n_layers, e->n_heads, e->S, cols);
}

typedef struct explanation_doc {
    const attn_vocab *vocab;
    const char *sentence;
    const int *ids;
    const attn_explanation *e;
} explanation_doc;

/* The explanation JSON of one sentence (attn_io_print_fn; ctx an explanation_doc). */
static bool print_explanation(FILE *f, const void *ctx) {
    const explanation_doc *d = ctx;
    const attn_vocab *vocab = d->vocab;
    const char *sentence = d->sentence;
    const int *ids = d->ids;
    const attn_explanation *e = d->e;
    const int n = e->n_words;
    const int n_tok = e->arch == ATTN_ARCH_TRANSFORMER ? n + 1 : n;
    fprintf(f, "{\"sentence\": ");
    attn_json_write_string(f, sentence);
    fprintf(f, ", \"tokens\": [");
    for (int i = 0; i < n_tok; i++) {
        if (i) fprintf(f, ", ");
        attn_json_write_string(f, token_name(vocab, e, ids, i));
    }
    fprintf(f, "], \"logit\": %.9g, \"probability\": %.9g", (double)e->logit, e->probability);
    if (e->attention) write_per_head(f, "attention", e, e->attention, e->S);
    if (e->scores) { /* opts.qk: what each head's softmax was taken of */
        fprintf(f, ", \"head_size\": %d", e->head_size);
        write_per_head(f, "q", e, e->q, e->head_size);
        write_per_head(f, "k", e, e->k, e->head_size);
        write_per_head(f, "scores", e, e->scores, e->S);
        if (e->score_bias) { /* pos alibi: scores = dot_products + score_bias */
            write_per_head(f, "dot_products", e, e->dot_products, e->S);
            write_per_head(f, "score_bias", e, e->score_bias, e->S);
        }
    }
    if (e->prefix_probability) {
        fprintf(f, ", \"prefix_probability\": [");
        for (int i = 0; i < n; i++) fprintf(f, "%s%.9g", i ? ", " : "", e->prefix_probability[i]);
        fputc(']', f);
    }
    fprintf(f, ", \"saliency\": {\"grad_norm\": ");
    attn_io_json_floats(f, e->grad_norm, n);
    fprintf(f, ", \"grad_x_input\": ");
    attn_io_json_floats(f, e->grad_x_input, n);
    if (e->integrated_gradients) {
        fprintf(f, ", \"integrated_gradients\": ");
        attn_io_json_floats(f, e->integrated_gradients, n);
        fprintf(f, "}, \"ig_steps\": %d, \"ig_baseline_logit\": %.9g}", e->ig_steps,
                (double)e->ig_baseline_logit);
    } else {
        fprintf(f, "}}");
    }
    return true;
}

attn_status attn_explanation_to_json(const attn_vocab *vocab, const char *sentence, const int *ids,
                                     const attn_explanation *e, char **out, size_t *len,
                                     attn_error *err) {
    if (!vocab) vocab = attn_vocab_builtin();
    if (!sentence || !ids || !e || !out)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_explanation_to_json: NULL argument");
    *out = NULL;
    for (int i = 0; i < e->n_words; i++)
        if (!attn_vocab_token(vocab, ids[i]))
            return attn_errorf(err, ATTN_ERR_ARG,
                               "attn_explanation_to_json: id %d at word %d "
                               "is not in the vocabulary",
                               ids[i], i);
    const explanation_doc doc = {vocab, sentence, ids, e};
    return attn_io_print_string(print_explanation, &doc, "explanation JSON", out, len, err);
}

/* ---- the explain request ----------------------------------------------------------------------
 */

void attn_explain_request_clear(attn_explain_request *r) {
    if (!r) return;
    free(r->sentence);
    for (int i = 0; i < r->n_models; i++) free(r->models[i]);
    memset(r, 0, sizeof *r);
}

static attn_status request_models(const cJSON *arr, attn_explain_request *r, attn_error *err) {
    if (!cJSON_IsArray(arr))
        return attn_errorf(err, ATTN_ERR_PARSE, "\"models\" must be an array of model names");
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (r->n_models == ATTN_EXPLAIN_REQUEST_MAX_MODELS)
            return attn_errorf(err, ATTN_ERR_VALUE, "\"models\" names more than %d models",
                               ATTN_EXPLAIN_REQUEST_MAX_MODELS);
        if (!cJSON_IsString(it) || strlen(it->valuestring) > 32)
            return attn_errorf(err, ATTN_ERR_PARSE,
                               "\"models\"[%d] must be a model name (a string of at most 32 "
                               "characters)",
                               r->n_models);
        if (!(r->models[r->n_models] = strdup(it->valuestring)))
            return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
        r->n_models++;
    }
    return ATTN_OK;
}

static attn_status request_fields(const cJSON *root, attn_explain_request *r, attn_error *err) {
    if (!cJSON_IsObject(root))
        return attn_errorf(err, ATTN_ERR_PARSE, "the request must be a JSON object");
    const cJSON *it;
    cJSON_ArrayForEach(it, root) {
        if (strcmp(it->string, "sentence") != 0 && strcmp(it->string, "models") != 0 &&
            strcmp(it->string, "ig_steps") != 0 && strcmp(it->string, "qk") != 0)
            return attn_errorf(err, ATTN_ERR_PARSE,
                               "unknown key in the request (allowed: \"sentence\", \"models\", "
                               "\"ig_steps\", \"qk\")");
    }
    const cJSON *qk = cJSON_GetObjectItemCaseSensitive(root, "qk");
    if (qk) {
        if (!cJSON_IsBool(qk))
            return attn_errorf(err, ATTN_ERR_PARSE, "\"qk\" must be true or false");
        r->qk = cJSON_IsTrue(qk);
    }
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(root, "ig_steps");
    if (steps) {
        const double d = cJSON_IsNumber(steps) ? steps->valuedouble : -1.0;
        if (!(d >= 0.0 && d <= ATTN_EXPLAIN_MAX_STEPS) || d != (double)(int)d)
            return attn_errorf(err, ATTN_ERR_PARSE,
                               "\"ig_steps\" must be an integer 0..%d (0: no integrated gradients)",
                               ATTN_EXPLAIN_MAX_STEPS);
        r->ig_steps = (int)d;
    }
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "sentence");
    if (!cJSON_IsString(s))
        return attn_errorf(err, ATTN_ERR_PARSE, "\"sentence\" (a string) is required");
    if (!(r->sentence = strdup(s->valuestring)))
        return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "models");
    return m ? request_models(m, r, err) : ATTN_OK;
}

attn_status attn_explain_request_parse(const char *buf, size_t len, attn_explain_request *out,
                                       attn_error *err) {
    if (!out || (!buf && len))
        return attn_errorf(err, ATTN_ERR_ARG, "attn_explain_request_parse: NULL argument");
    memset(out, 0, sizeof *out);
    cJSON *root = NULL;
    attn_status st = attn_io_parse_request(buf, len, &root, err);
    if (st != ATTN_OK) return st;
    st = request_fields(root, out, err); /* \u0000 was refused by the grammar check */
    cJSON_Delete(root);
    if (st != ATTN_OK) attn_explain_request_clear(out);
    return st;
}
