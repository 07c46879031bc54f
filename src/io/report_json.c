/* report_json.c -- the summary of `attn reproduce` (attn_report, attn.h) as JSON, built with
 * cJSON so that every string (the BLAS core name, weights file names) is escaped. Accuracies
 * are written with 6 decimals, as the committed weights/reproduce.json has them. */
#include "io_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* {"model", "seed", "params", "accuracy": {...}, "weights"}; NULL when out of memory. */
static cJSON *run_json(const attn_report *r, const attn_report_run *run) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    bool ok = cJSON_AddStringToObject(o, "model", attn_arch_name(run->arch)) &&
              cJSON_AddNumberToObject(o, "seed", run->seed) &&
              cJSON_AddNumberToObject(o, "params", (double)run->n_params);
    cJSON *acc = ok ? cJSON_AddObjectToObject(o, "accuracy") : NULL;
    ok = acc != NULL;
    for (int s = 0; s < ATTN_N_TEST_SETS && ok; s++) {
        char num[32];
        snprintf(num, sizeof num, "%.6f", run->acc[s]);
        ok = cJSON_AddRawToObject(acc, attn_set_name(r->sets[s]), num) != NULL;
    }
    if (ok) ok = cJSON_AddStringToObject(o, "weights", run->weights ? run->weights : "") != NULL;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *report_json(const attn_report *r) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    bool ok = cJSON_AddNumberToObject(root, "epochs", r->epochs) &&
              cJSON_AddNumberToObject(root, "train_size", r->train_size) &&
              cJSON_AddNumberToObject(root, "seeds", r->seeds) &&
              cJSON_AddNumberToObject(root, "eval_batch", r->eval_batch) &&
              cJSON_AddStringToObject(root, "blas_core", r->blas_core ? r->blas_core : "");
    cJSON *runs = ok ? cJSON_AddArrayToObject(root, "runs") : NULL;
    ok = runs != NULL;
    for (int i = 0; i < r->n_runs && ok; i++) {
        cJSON *run = run_json(r, &r->runs[i]);
        ok = run && cJSON_AddItemToArray(runs, run);
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

attn_status attn_report_save_json(const attn_report *r, const char *path, attn_error *err) {
    if (!r || !path || !r->sets || (r->n_runs > 0 && !r->runs))
        return attn_errorf(err, ATTN_ERR_ARG, "attn_report_save_json: NULL argument");
    cJSON *root = report_json(r);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    size_t len = text ? strlen(text) : 0;
    char *doc = text ? malloc(len + 2) : NULL; /* the file ends with a newline */
    if (doc) {
        memcpy(doc, text, len);
        memcpy(doc + len, "\n", 2);
    }
    cJSON_free(text);
    if (!doc) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory printing", path);
    attn_status s = attn_io_write_atomic(path, doc, len + 1, err);
    free(doc);
    return s;
}
