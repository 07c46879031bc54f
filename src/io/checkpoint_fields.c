/* checkpoint_fields.c -- what the training checkpoints of both families (checkpoint_json.c,
 * seq2seq_checkpoint_json.c) read alike: the document (JSON with its checksum, or a safetensors
 * checkpoint's "state") and its "format", the typed members (integers in a range, finite
 * numbers, "0x" + 16 hex digits), Adam's settings, and the checks of a run's progress (Adam's
 * reach, the CLI's epochs and batch bounds, one Adam step per batch, epoch and best epoch within
 * the run). Every problem goes to an attn_io_problems, naming the member; a missing or mistyped
 * member is ATTN_ERR_PARSE, a value out of its range ATTN_ERR_VALUE. */
#include "io_internal.h"

#include <math.h>
#include <string.h>

attn_status attn_io_ckpt_open(const char *path, const char *format, const char *note,
                              attn_io_st_file *f, cJSON **root, attn_error *err) {
    *root = NULL;
    memset(f, 0, sizeof *f); /* f->map stays NULL for a JSON checkpoint */
    attn_status s = attn_io_is_safetensors(path) ? attn_io_ckpt_st_open(path, format, f, root, err)
                                                 : attn_io_parse_file(path, true, root, err);
    if (s != ATTN_OK) return s;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(*root, "format");
    if (cJSON_IsString(fmt) && strcmp(fmt->valuestring, format) == 0) return ATTN_OK;
    cJSON_Delete(*root);
    *root = NULL;
    attn_io_st_close(f);
    return attn_errorf(err, ATTN_ERR_PARSE, "%s: \"format\" is not \"%s\"%s", path, format, note);
}

void attn_io_ckpt_long(const cJSON *o, const char *key, long lo, long hi, long *out,
                       attn_io_problems *p) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    const double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(d) || d != floor(d) || fabs(d) > 0x1p53) /* exact as a JSON number */
        attn_io_problem(p, ATTN_ERR_PARSE, "\"%s\" %s, expected an integer %ld..%ld", key,
                        v ? "is not an integer" : "is missing", lo, hi);
    else if (d < (double)lo || d > (double)hi)
        attn_io_problem(p, ATTN_ERR_VALUE, "\"%s\" = %.17g is out of range [%ld, %ld]", key, d, lo,
                        hi);
    else
        *out = (long)d;
}

void attn_io_ckpt_int(const cJSON *o, const char *key, int lo, int hi, int *out,
                      attn_io_problems *p) {
    long x = 0;
    const int before = p->n;
    attn_io_ckpt_long(o, key, lo, hi, &x, p);
    if (p->n == before) *out = (int)x;
}

void attn_io_ckpt_num(const cJSON *o, const char *key, double lo, double hi, double *out,
                      attn_io_problems *p) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        attn_io_problem(p, ATTN_ERR_PARSE, "\"%s\" %s, expected a number", key,
                        v ? "is not a finite number" : "is missing");
    else if (!(v->valuedouble >= lo && v->valuedouble <= hi))
        attn_io_problem(p, ATTN_ERR_VALUE, "\"%s\" = %g is out of range [%g, %g]", key,
                        v->valuedouble, lo, hi);
    else
        *out = v->valuedouble;
}

void attn_io_ckpt_u64(const cJSON *o, const char *key, uint64_t *out, attn_io_problems *p) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
    bool ok = s && strlen(s) == 18 && s[0] == '0' && s[1] == 'x';
    uint64_t x = 0;
    for (int i = 2; ok && i < 18; i++) {
        const char c = s[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        ok = d >= 0;
        x = x * 16 + (uint64_t)(d < 0 ? 0 : d);
    }
    if (!ok)
        attn_io_problem(p, ATTN_ERR_PARSE, "\"%s\" %s, expected \"0x\" and 16 hex digits", key,
                        v ? "is malformed" : "is missing");
    else
        *out = x;
}

void attn_io_ckpt_adam(const cJSON *a, attn_adam_config *c, attn_io_problems *p) {
    attn_io_ckpt_num(a, "lr", -HUGE_VAL, HUGE_VAL, &c->lr, p);
    attn_io_ckpt_num(a, "beta1", -HUGE_VAL, HUGE_VAL, &c->beta1, p);
    attn_io_ckpt_num(a, "beta2", -HUGE_VAL, HUGE_VAL, &c->beta2, p);
    attn_io_ckpt_num(a, "eps", -HUGE_VAL, HUGE_VAL, &c->eps, p);
    attn_io_ckpt_num(a, "weight_decay", -HUGE_VAL, HUGE_VAL, &c->weight_decay, p);
}

void attn_io_ckpt_check_progress(const attn_io_ckpt_progress *r, attn_io_problems *p) {
    attn_error e;
    if (attn_io_check_adam(r->adam, &e) != ATTN_OK ||
        attn_io_check_run(r->epochs, r->max_epochs, r->batch_size, r->max_batch, &e) != ATTN_OK ||
        (r->settings && r->settings(r->ctx, &e) != ATTN_OK)) {
        attn_io_problem(p, e.status, "%s", e.msg);
        return;
    }
    if (r->epoch < 0 || r->epoch > r->epochs)
        attn_io_problem(p, ATTN_ERR_VALUE, "\"epoch\" = %d is out of range [0, %d]", r->epoch,
                        r->epochs);
    else if (attn_io_check_steps(r->adam_step, r->epoch, r->n_train, r->what, r->batch_size, &e) !=
             ATTN_OK)
        attn_io_problem(p, e.status, "%s", e.msg);
    else if (r->best_epoch < 0 || r->best_epoch > r->epoch)
        attn_io_problem(p, ATTN_ERR_VALUE, "\"best_epoch\" = %d is out of range [0, %d]",
                        r->best_epoch, r->epoch);
}
