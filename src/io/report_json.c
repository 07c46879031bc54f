/* report_json.c -- the summary of `attn reproduce` (attn_report, attn.h) as JSON, in the layout
 * of the committed weights/reproduce.json (one line per run, accuracies with 6 decimals), with
 * every string (the BLAS core name, weights file names) escaped by cJSON. */
#include "io_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s as a JSON string literal, escaped by cJSON, to f; false when out of memory. */
static bool put_string(FILE *f, const char *s) {
    cJSON *item = cJSON_CreateString(s ? s : "");
    char *text = item ? cJSON_PrintUnformatted(item) : NULL;
    cJSON_Delete(item);
    if (!text) return false;
    fputs(text, f);
    cJSON_free(text);
    return true;
}

static bool put_run(FILE *f, const attn_report *r, const attn_report_run *run, bool last) {
    fprintf(f, "    {\"model\": \"%s\", \"seed\": %d, \"params\": %zu, \"accuracy\": {",
            attn_arch_name(run->arch), run->seed, run->n_params);
    for (int s = 0; s < ATTN_N_TEST_SETS; s++) {
        fputs(s ? ", " : "", f);
        if (!put_string(f, r->set_names[s])) return false;
        fprintf(f, ": %.6f", run->acc[s]);
    }
    fputs("}, \"weights\": ", f);
    if (!put_string(f, run->weights)) return false;
    fprintf(f, "}%s\n", last ? "" : ",");
    return true;
}

static bool print_report(FILE *f, const void *ctx);

attn_status attn_report_save_json(const attn_report *r, const char *path, attn_error *err) {
    if (!r || !path || (r->n_runs > 0 && !r->runs))
        return attn_errorf(err, ATTN_ERR_ARG, "attn_report_save_json: NULL argument");
    return attn_io_print_file(print_report, r, path, err);
}

static bool print_report(FILE *f, const void *ctx) {
    const attn_report *r = ctx;
    fprintf(f,
            "{\n  \"epochs\": %d,\n  \"train_size\": %d,\n  \"seeds\": %d,\n  \"eval_batch\": %d,\n"
            "  \"blas_core\": ",
            r->epochs, r->train_size, r->seeds, r->eval_batch);
    bool ok = put_string(f, r->blas_core);
    if (ok && r->kernels) {
        fputs(",\n  \"kernels\": ", f);
        attn_kernels_info_write_json(f, r->kernels);
    }
    if (ok) fputs(",\n  \"runs\": [\n", f);
    for (int i = 0; i < r->n_runs && ok; i++) ok = put_run(f, r, &r->runs[i], i + 1 == r->n_runs);
    if (ok) fputs("  ]\n}\n", f);
    return ok;
}

attn_status attn_report_peek(const char *path, attn_report_header *h, attn_error *err) {
    memset(h, 0, sizeof *h);
    char *text = NULL;
    size_t len = 0;
    attn_status st = attn_io_read_file(path, &text, &len, err);
    if (st != ATTN_OK) return st;
    cJSON *root = NULL;
    size_t at = 0;
    const char *why = NULL;
    st = attn_io_json_parse(text, len, &root, &at, &why);
    free(text);
    if (st != ATTN_OK)
        return attn_errorf(err, st, "%s: %s at byte %zu", path, why ? why : "malformed JSON", at);
    const cJSON *epochs = cJSON_GetObjectItemCaseSensitive(root, "epochs");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(root, "train_size");
    const cJSON *core = cJSON_GetObjectItemCaseSensitive(root, "blas_core");
    h->epochs = cJSON_IsNumber(epochs) ? epochs->valueint : -1;
    h->train_size = cJSON_IsNumber(size) ? size->valueint : -1;
    snprintf(h->blas_core, sizeof h->blas_core, "%s",
             cJSON_IsString(core) ? core->valuestring : "unknown");
    h->has_kernels =
        attn_io_kernels_from_json(cJSON_GetObjectItemCaseSensitive(root, "kernels"), &h->kernels);
    cJSON_Delete(root);
    return ATTN_OK;
}
