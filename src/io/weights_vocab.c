/* weights_vocab.c -- the optional "vocab" of attn-weights-v1 (include/attn.h): the JSON array
 * read into an attn_vocab (the checks are src/data's attn_vocab_create and
 * attn_vocab_check_config; here only what JSON adds: an array, of strings), and written back,
 * one escaped JSON string per token. src/data knows no JSON; this file is the bridge.
 */
#include "io_internal.h"

#include <cjson/cJSON.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading ------------------------------------------------------------------------------------
 */

/* Reads root's "vocab" array into *out (NULL when absent: the built-in vocabulary applies) and
 * checks it against the model's config. Every token is copied by attn_vocab_create. */
attn_status attn_io_vocab_load(const char *name, const cJSON *root, const attn_model_config *cfg,
                               attn_vocab **out, attn_error *err) {
    *out = NULL;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "vocab");
    if (!arr) return ATTN_OK;
    if (!cJSON_IsArray(arr))
        return attn_errorf(err, ATTN_ERR_PARSE,
                           "%s: \"vocab\" must be an array of strings ([\"[PAD]\", \"[CLS]\", "
                           "\"word\", ...])",
                           name);
    int n = cJSON_GetArraySize(arr);
    if (n < 2 || n > ATTN_VOCAB_MAX_TOKENS)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: \"vocab\" has %d tokens; expected 2..%d", name,
                           n, ATTN_VOCAB_MAX_TOKENS);
    const char **words = malloc((size_t)n * sizeof *words);
    if (!words) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory for the vocab", name);
    int i = 0;
    const cJSON *item;
    attn_status st = ATTN_OK;
    cJSON_ArrayForEach(item, arr) {
        if (!cJSON_IsString(item)) {
            st = attn_errorf(err, ATTN_ERR_PARSE, "%s: \"vocab\"[%d] is %s, expected a string",
                             name, i,
                             cJSON_IsNumber(item) ? "a number"
                             : cJSON_IsNull(item) ? "null"
                             : cJSON_IsBool(item) ? "a boolean"
                                                  : "an array or object");
            break;
        }
        words[i++] = item->valuestring;
    }
    attn_vocab *v = NULL;
    attn_error verr;
    if (st == ATTN_OK && (st = attn_vocab_create(words, n, &v, &verr)) != ATTN_OK)
        attn_errorf(err, st, "%s: %s", name, verr.msg);
    free(words);
    if (st == ATTN_OK && (st = attn_vocab_check_config(v, cfg, &verr)) != ATTN_OK) {
        attn_errorf(err, st, "%s: %s", name, verr.msg);
        attn_vocab_free(v);
        return st;
    }
    *out = v;
    return st;
}

/* attn_weights_load_into keeps the model on the built-in vocabulary: a file whose "vocab" is
 * another one is refused (its ids would mean other words), a bad one too. */
void attn_io_vocab_refuse_own(const cJSON *root, const attn_model *m, attn_io_problems *p) {
    attn_vocab *v = NULL;
    attn_error verr;
    if (attn_io_vocab_load(p->path, root, attn_model_config_of(m), &v, &verr) != ATTN_OK) {
        size_t skip = strlen(p->path); /* attn_io_vocab_load's messages start with "path: " */
        bool prefixed = strncmp(verr.msg, p->path, skip) == 0 && verr.msg[skip] == ':';
        attn_io_problem(p, verr.status, "%s", prefixed ? verr.msg + skip + 2 : verr.msg);
        return;
    }
    if (!v) return;
    const attn_vocab *b = attn_vocab_builtin();
    bool same = attn_vocab_count(v) == attn_vocab_count(b);
    for (int id = 0; same && id < attn_vocab_count(b); id++)
        same = strcmp(attn_vocab_token(v, id), attn_vocab_token(b, id)) == 0;
    if (!same)
        attn_io_problem(p, ATTN_ERR_VALUE,
                        "\"vocab\": the file has its own vocabulary of %d tokens; loading its "
                        "tensors into a model on the built-in vocabulary would give its ids other "
                        "words (attn_weights_load_json_vocab reads both)",
                        attn_vocab_count(v));
    attn_vocab_free(v);
}

/* ---- writing ------------------------------------------------------------------------------------
 */

static void write_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20) /* attn_vocab_create refuses these; escaped all the same */
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

/* ,\n"vocab": ["[PAD]", "[CLS]", ...] (nothing for NULL or the built-in vocabulary). */
void attn_io_vocab_write(FILE *f, const attn_vocab *v) {
    if (!v || attn_vocab_is_builtin(v)) return;
    fprintf(f, ",\n\"vocab\": [");
    for (int id = 0; id < attn_vocab_count(v); id++) {
        if (id) fputs(", ", f);
        write_json_string(f, attn_vocab_token(v, id));
    }
    fputc(']', f);
}
