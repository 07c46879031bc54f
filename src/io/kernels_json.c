/* kernels_json.c -- the kernels record (attn_kernels_info, include/attn_kernelset.h) as JSON:
 * {"mode", "openblas", "blas_core", "blas_threads", "cpu_path"}, the object every artefact
 * holding numbers carries under "kernels" (reproduce.json, checkpoints, weights files,
 * experiment JSON). */
#include "io_internal.h"

#include "attn_kernelset.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void attn_kernels_info_write_json(FILE *f, const attn_kernels_info *k) {
    fputs("{\"mode\": ", f);
    attn_json_write_string(f, k->mode);
    fputs(", \"openblas\": ", f);
    attn_json_write_string(f, k->openblas);
    fputs(", \"blas_core\": ", f);
    attn_json_write_string(f, k->blas_core);
    fprintf(f, ", \"blas_threads\": %d, \"cpu_path\": ", k->blas_threads);
    attn_json_write_string(f, k->cpu_path);
    fputc('}', f);
}

void attn_json_kernels(attn_json_writer *w, const attn_kernels_info *k) {
    attn_json_begin_object(w);
    attn_json_field_string(w, "mode", k->mode);
    attn_json_field_string(w, "openblas", k->openblas);
    attn_json_field_string(w, "blas_core", k->blas_core);
    attn_json_field_int(w, "blas_threads", k->blas_threads);
    attn_json_field_string(w, "cpu_path", k->cpu_path);
    attn_json_end_object(w);
}

cJSON *attn_io_kernels_json(const attn_kernels_info *k) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "mode", k->mode);
    cJSON_AddStringToObject(o, "openblas", k->openblas);
    cJSON_AddStringToObject(o, "blas_core", k->blas_core);
    cJSON_AddNumberToObject(o, "blas_threads", k->blas_threads);
    cJSON_AddStringToObject(o, "cpu_path", k->cpu_path);
    return o;
}

static bool copy_string(const cJSON *o, const char *key, char *dst, size_t n) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(x) || strlen(x->valuestring) >= n) return false;
    memcpy(dst, x->valuestring, strlen(x->valuestring) + 1);
    return true;
}

bool attn_io_kernels_from_json(const cJSON *o, attn_kernels_info *k) {
    memset(k, 0, sizeof *k);
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(o, "blas_threads");
    if (!cJSON_IsObject(o) || !cJSON_IsNumber(threads) || threads->valuedouble < 1 ||
        threads->valuedouble > 1 << 20)
        return false;
    k->blas_threads = threads->valueint;
    return copy_string(o, "mode", k->mode, sizeof k->mode) &&
           copy_string(o, "openblas", k->openblas, sizeof k->openblas) &&
           copy_string(o, "blas_core", k->blas_core, sizeof k->blas_core) &&
           copy_string(o, "cpu_path", k->cpu_path, sizeof k->cpu_path);
}

void attn_io_kernels_note(const char *path, const cJSON *recorded) {
    attn_kernels_info then, now;
    if (!recorded || !attn_io_kernels_from_json(recorded, &then)) return;
    attn_kernels_info_get(&now);
    /* not the thread count: training runs OpenBLAS on one thread per run whatever it records */
    if (strcmp(then.openblas, now.openblas) == 0 &&
        strcasecmp(then.blas_core, now.blas_core) == 0 && strcmp(then.cpu_path, now.cpu_path) == 0)
        return;
    char a[160], b[160];
    attn_kernels_info_describe(&then, a, sizeof a);
    attn_kernels_info_describe(&now, b, sizeof b);
    attn_log(ATTN_LOG_INFO,
             "note: %s was computed with %s; this run uses %s: what follows may differ in the last "
             "bits from a run on the recorded kernels (--kernels pinned|native, docs/numerics.md)",
             path, a, b);
}

void attn_io_kernels_field(FILE *f, const attn_kernels_info *recorded) {
    if (!recorded) return;
    fputs(",\n\"kernels\": ", f);
    attn_kernels_info_write_json(f, recorded);
}

bool attn_io_kernels_read(const cJSON *root, attn_kernels_info *k, attn_io_problems *p) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "kernels");
    if (!o) return false;
    if (attn_io_kernels_from_json(o, k)) return true;
    attn_io_problem(p, ATTN_ERR_PARSE,
                    "\"kernels\": expected the kernels record {\"mode\", \"openblas\", "
                    "\"blas_core\", \"cpu_path\": strings, \"blas_threads\": 1..2^20} "
                    "(docs/numerics.md, \"The record\")");
    return false;
}
