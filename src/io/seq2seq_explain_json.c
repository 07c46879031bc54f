/* seq2seq_explain_json.c -- a seq2seq explanation (attn_seq2seq_explain) as the JSON object
 * `attn explain --format json` prints for seq2seq weights and `attn serve`'s POST /api/generate
 * returns, written here once; and the strict parsing of the server's decoder requests
 * (POST /api/generate, POST /api/compose). */
#include "attn_seq2seq.h"
#include "io_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cross-attention of one layer and head, or a mean ([T][S]): layer/head -1 = the mean over
 * the layers/heads (in double, rounded to float once). */
static void alignment(FILE *f, const attn_s2s_explanation *e, int layer, int head) {
    const int T = e->T, S = e->n_src, L = e->n_layers, NH = e->n_heads;
    float *a = malloc((size_t)T * S * sizeof *a);
    if (!a) {
        fputs(", \"alignment\": null", f);
        return;
    }
    int n = 0;
    for (int i = 0; i < T * S; i++) a[i] = 0.0f;
    double *sum = calloc((size_t)T * S, sizeof *sum);
    for (int l = 0; sum && l < L; l++)
        for (int h = 0; h < NH; h++) {
            if ((layer >= 0 && l != layer) || (head >= 0 && h != head)) continue;
            const float *p = e->cross + ((size_t)l * NH + h) * T * S;
            for (int i = 0; i < T * S; i++) sum[i] += p[i];
            n++;
        }
    for (int i = 0; sum && n && i < T * S; i++) a[i] = (float)(sum[i] / n);
    fprintf(f, ", \"alignment_layer\": %d, \"alignment_head\": %d, \"alignment\": ", layer, head);
    attn_io_json_matrix(f, a, T, S);
    free(sum);
    free(a);
}

static void token(FILE *f, int id) {
    const char *t = attn_tgt_vocab_token(id);
    attn_json_write_string(f, t ? t : "?");
}

static void steps(FILE *f, const attn_s2s_explanation *e) {
    const int K = ATTN_S2S_TOP_K;
    fputs(", \"steps\": [", f);
    for (int t = 0; t < e->T; t++) {
        fputs(t ? ", {\"token\": " : "{\"token\": ", f);
        token(f, e->chosen[t]);
        fprintf(f, ", \"id\": %d, \"probability\": %.9g, \"forced\": %s, \"top\": [", e->chosen[t],
                (double)e->chosen_prob[t], t < e->n_prefix ? "true" : "false");
        for (int k = 0; k < K; k++) {
            const int id = e->top_ids[(size_t)t * K + k];
            if (id < 0) break;
            fputs(k ? ", {\"token\": " : "{\"token\": ", f);
            token(f, id);
            fprintf(f, ", \"id\": %d, \"probability\": %.9g}", id,
                    (double)e->top_probs[(size_t)t * K + k]);
        }
        fputs("]}", f);
    }
    fputc(']', f);
}

typedef struct s2s_explanation_doc {
    const char *sentence;
    const int *src;
    const attn_s2s_explanation *e;
    const attn_s2s_json_opts *o;
} s2s_explanation_doc;

/* The explanation JSON of one source (attn_io_print_fn; ctx an s2s_explanation_doc). */
static bool print_s2s_explanation(FILE *f, const void *ctx) {
    const s2s_explanation_doc *d = ctx;
    const char *sentence = d->sentence;
    const int *src = d->src;
    const attn_s2s_explanation *e = d->e;
    const attn_s2s_json_opts *o = d->o;
    fputs("{\"sentence\": ", f);
    attn_json_write_string(f, sentence);
    fprintf(f, ", \"model\": \"%s\", \"tokens\": [", attn_s2s_arch_name(e->arch));
    for (int i = 0; i < e->n_src; i++) {
        if (i) fputs(", ", f);
        token(f, src[i]);
    }
    fputs("], \"output\": \"", f);
    for (int i = 0; i < e->n_out; i++)
        fprintf(f, i ? " %s" : "%s", attn_tgt_vocab_token(e->out[i]));
    fputs("\", \"words\": [", f);
    for (int i = 0; i < e->n_out; i++) {
        if (i) fputs(", ", f);
        token(f, e->out[i]);
    }
    fprintf(f, "], \"ended\": %s, \"prefix\": %d", e->ended ? "true" : "false", e->n_prefix);
    steps(f, e);
    fprintf(f, ", \"n_layers\": %d, \"n_heads\": %d", e->n_layers, e->n_heads);
    if (e->cross && (!o || o->maps)) {
        attn_io_json_maps(f, "cross_attention", e->cross, e->n_layers, e->n_heads, e->T, e->n_src);
        if (e->self)
            attn_io_json_maps(f, "self_attention", e->self, e->n_layers, e->n_heads, e->T, e->T);
    }
    if (e->cross && o && o->alignment) alignment(f, e, o->layer, o->head);
    if (e->grad_norm) {
        fputs(", \"saliency\": {\"grad_norm\": ", f);
        attn_io_json_matrix(f, e->grad_norm, e->T, e->n_src);
        fputs(", \"grad_x_input\": ", f);
        attn_io_json_matrix(f, e->grad_x_input, e->T, e->n_src);
        fputc('}', f);
    }
    fputc('}', f);
    return true;
}

attn_status attn_s2s_explanation_to_json(const char *sentence, const int *src,
                                         const attn_s2s_explanation *e, const attn_s2s_json_opts *o,
                                         char **out, size_t *len, attn_error *err) {
    if (!sentence || !src || !e || !out)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_s2s_explanation_to_json: NULL argument");
    *out = NULL;
    if (o && o->alignment &&
        (o->layer < -1 || o->layer >= e->n_layers || o->head < -1 || o->head >= e->n_heads))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "alignment: layer %d, head %d: the model has %d x %d", o->layer, o->head,
                           e->n_layers, e->n_heads);
    const s2s_explanation_doc doc = {sentence, src, e, o};
    return attn_io_print_string(print_s2s_explanation, &doc, "explanation JSON", out, len, err);
}

/* ---- the decoder requests ------------------------------------------------------------------ */

static attn_status parse_root(const char *buf, size_t len, cJSON **root, attn_error *err) {
    attn_status st = attn_io_parse_request(buf, len, root, err);
    if (st != ATTN_OK) return st;
    if (!cJSON_IsObject(*root)) {
        cJSON_Delete(*root);
        *root = NULL;
        return attn_errorf(err, ATTN_ERR_PARSE, "the request must be a JSON object");
    }
    return ATTN_OK;
}

/* Every key of root is one of allowed (a NULL-terminated list). */
static attn_status only_keys(const cJSON *root, const char *const *allowed, const char *list,
                             attn_error *err) {
    const cJSON *it;
    cJSON_ArrayForEach(it, root) {
        bool ok = false;
        for (int i = 0; allowed[i] && !ok; i++) ok = strcmp(it->string, allowed[i]) == 0;
        if (!ok)
            return attn_errorf(err, ATTN_ERR_PARSE, "unknown key in the request (allowed: %s)",
                               list);
    }
    return ATTN_OK;
}

/* An integer lo..hi at key (absent: *out unchanged). */
static attn_status int_field(const cJSON *root, const char *key, int lo, int hi, int *out,
                             attn_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return ATTN_OK;
    const double d = cJSON_IsNumber(v) ? v->valuedouble : lo - 1.0;
    if (!(d >= lo && d <= hi) || d != floor(d))
        return attn_errorf(err, ATTN_ERR_PARSE, "\"%s\" must be an integer %d..%d", key, lo, hi);
    *out = (int)d;
    return ATTN_OK;
}

static attn_status number_field(const cJSON *root, const char *key, double lo, double hi,
                                double *out, attn_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return ATTN_OK;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return attn_errorf(err, ATTN_ERR_PARSE, "\"%s\" must be a number %g..%g", key, lo, hi);
    *out = v->valuedouble;
    return ATTN_OK;
}

static attn_status string_field(const cJSON *root, const char *key, size_t max, bool required,
                                char *out, attn_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v && !required) return ATTN_OK;
    if (!cJSON_IsString(v) || strlen(v->valuestring) > max)
        return attn_errorf(err, ATTN_ERR_PARSE, "\"%s\" (a string of at most %zu bytes) is %s", key,
                           max, v ? "malformed" : "required");
    memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
    return ATTN_OK;
}

/* "prefix": an array of target tokens (strings) */
static attn_status prefix_field(const cJSON *root, attn_generate_request *r, attn_error *err) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prefix");
    if (!p) return ATTN_OK;
    if (!cJSON_IsArray(p))
        return attn_errorf(err, ATTN_ERR_PARSE, "\"prefix\" must be an array of target words");
    const cJSON *it;
    cJSON_ArrayForEach(it, p) {
        if (r->n_prefix == ATTN_S2S_MAX_TGT)
            return attn_errorf(err, ATTN_ERR_VALUE, "\"prefix\" holds more than %d words",
                               ATTN_S2S_MAX_TGT);
        const int id = cJSON_IsString(it) ? attn_tgt_vocab_id(it->valuestring) : -1;
        if (id <= ATTN_PAD_ID || id == ATTN_TGT_BOS || id == ATTN_TGT_EOS)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "\"prefix\"[%d] is not a word of the target vocabulary",
                               r->n_prefix);
        r->prefix[r->n_prefix++] = id;
    }
    return ATTN_OK;
}

attn_status attn_generate_request_parse(const char *buf, size_t len, attn_generate_request *r,
                                        attn_error *err) {
    if (!r || (!buf && len))
        return attn_errorf(err, ATTN_ERR_ARG, "attn_generate_request_parse: NULL argument");
    memset(r, 0, sizeof *r);
    r->layer = r->head = -1;
    cJSON *root = NULL;
    attn_status st = parse_root(buf, len, &root, err);
    static const char *const keys[] = {"model", "text", "prefix", "layer", "head", "maps", NULL};
    if (st == ATTN_OK)
        st = only_keys(root, keys, "\"model\", \"text\", \"prefix\", \"layer\", \"head\", \"maps\"",
                       err);
    if (st == ATTN_OK) st = string_field(root, "model", 63, false, r->model, err);
    if (st == ATTN_OK) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "text");
        if (!cJSON_IsString(t))
            st = attn_errorf(err, ATTN_ERR_PARSE, "\"text\" (a string) is required");
        else if (!(r->text = strdup(t->valuestring)))
            st = attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    }
    if (st == ATTN_OK) st = prefix_field(root, r, err);
    if (st == ATTN_OK) st = int_field(root, "layer", -1, 63, &r->layer, err);
    if (st == ATTN_OK) st = int_field(root, "head", -1, 63, &r->head, err);
    if (st == ATTN_OK) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "maps");
        if (m && !cJSON_IsBool(m))
            st = attn_errorf(err, ATTN_ERR_PARSE, "\"maps\" must be true or false");
        r->maps = m && cJSON_IsTrue(m);
    }
    cJSON_Delete(root);
    if (st != ATTN_OK) attn_generate_request_clear(r);
    return st;
}

void attn_generate_request_clear(attn_generate_request *r) {
    if (!r) return;
    free(r->text);
    r->text = NULL;
}

attn_status attn_compose_request_parse(const char *buf, size_t len, attn_compose_request *r,
                                       attn_error *err) {
    if (!r || (!buf && len))
        return attn_errorf(err, ATTN_ERR_ARG, "attn_compose_request_parse: NULL argument");
    memset(r, 0, sizeof *r);
    r->temperature = 1.0;
    r->top_p = 0.9;
    r->n = 4;
    r->seed = 1;
    cJSON *root = NULL;
    attn_status st = parse_root(buf, len, &root, err);
    static const char *const keys[] = {"model", "polarity", "subject", "temperature",
                                       "top_p", "n",        "seed",    NULL};
    if (st == ATTN_OK)
        st = only_keys(root, keys,
                       "\"model\", \"polarity\", \"subject\", \"temperature\", \"top_p\", \"n\", "
                       "\"seed\"",
                       err);
    if (st == ATTN_OK) st = string_field(root, "model", 63, false, r->model, err);
    if (st == ATTN_OK) st = string_field(root, "polarity", 15, true, r->polarity, err);
    if (st == ATTN_OK) st = string_field(root, "subject", 31, false, r->subject, err);
    if (st == ATTN_OK) st = number_field(root, "temperature", 0.01, 100.0, &r->temperature, err);
    if (st == ATTN_OK) st = number_field(root, "top_p", 0.0, 1.0, &r->top_p, err);
    if (st == ATTN_OK) st = int_field(root, "n", 1, ATTN_COMPOSE_MAX_SAMPLES, &r->n, err);
    int seed = 1;
    if (st == ATTN_OK) st = int_field(root, "seed", 0, 1 << 30, &seed, err);
    r->seed = (uint64_t)seed;
    if (st == ATTN_OK && strcmp(r->polarity, "positive") != 0 &&
        strcmp(r->polarity, "negative") != 0)
        st = attn_errorf(err, ATTN_ERR_PARSE, "\"polarity\" must be \"positive\" or \"negative\"");
    cJSON_Delete(root);
    return st;
}
