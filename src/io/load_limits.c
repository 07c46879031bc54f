/* load_limits.c -- the checks every loader makes before it allocates or trusts what a file says
 * (io_internal.h): the parameter count of a config against ATTN_MAX_PARAMS and against the
 * values the file holds, and the training settings and Adam state of a checkpoint (classifier
 * and seq2seq alike) against what the CLI accepts and what Adam can reach. */
#include "io_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

/* The number of float values the "tensors" of root hold ("data" lengths, "data_b64" sizes). */
static size_t declared_values(const cJSON *root) {
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    size_t n = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, tensors) {
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(entry, "data");
        const cJSON *b64 = cJSON_GetObjectItemCaseSensitive(entry, "data_b64");
        if (cJSON_IsArray(data)) n += (size_t)cJSON_GetArraySize(data);
        if (cJSON_IsString(b64)) n += strlen(b64->valuestring) / 4 * 3 / 4;
    }
    return n;
}

/* Below this many parameters a model is created to report each tensor's problem; above it a
 * config that the file's values cannot fill is refused before anything is allocated. */
#define EAGER_CHECK_PARAMS ((size_t)1 << 20)

void attn_io_check_n_params(size_t need, const cJSON *root, attn_io_problems *p) {
    size_t limit = attn_io_max_params();
    if (need > limit) {
        attn_io_problem(p, ATTN_ERR_VALUE,
                        "config: the model would have %zu parameters, over the limit of %zu "
                        "(raise it with the environment variable ATTN_MAX_PARAMS)",
                        need, limit);
        return;
    }
    if (!root) return;
    size_t have = declared_values(root);
    if (need >= EAGER_CHECK_PARAMS && have < need)
        attn_io_problem(p, ATTN_ERR_SHAPE,
                        "config: the model would have %zu parameters but the tensors hold only "
                        "%zu values (config and tensors disagree)",
                        need, have);
}

/* ---- checkpoints ----------------------------------------------------------------------------- */

static attn_status out_of_range(attn_error *err, const char *key, double x, const char *range) {
    return attn_errorf(err, ATTN_ERR_VALUE, "\"%s\" = %g is out of range %s", key, x, range);
}

attn_status attn_io_check_adam(const attn_adam_config *a, attn_error *err) {
    if (!(a->lr > 0.0 && a->lr <= ATTN_IO_MAX_LR))
        return out_of_range(err, "lr", a->lr, "(0, 1000]");
    if (!(a->beta1 >= 0.0 && a->beta1 < 1.0)) return out_of_range(err, "beta1", a->beta1, "[0, 1)");
    if (!(a->beta2 >= 0.0 && a->beta2 < 1.0)) return out_of_range(err, "beta2", a->beta2, "[0, 1)");
    if (!(a->eps > 0.0 && a->eps <= 1.0)) return out_of_range(err, "eps", a->eps, "(0, 1]");
    if (!(a->weight_decay >= 0.0 && a->weight_decay <= ATTN_IO_MAX_WEIGHT_DECAY))
        return out_of_range(err, "weight_decay", a->weight_decay, "[0, 1000]");
    return ATTN_OK;
}

attn_status attn_io_check_run(int epochs, int max_epochs, int batch_size, int max_batch,
                              attn_error *err) {
    if (epochs < 0 || epochs > max_epochs)
        return attn_errorf(err, ATTN_ERR_VALUE, "\"epochs\" = %d is out of range [0, %d]", epochs,
                           max_epochs);
    if (batch_size < 1 || batch_size > max_batch)
        return attn_errorf(err, ATTN_ERR_VALUE, "\"batch_size\" = %d is out of range [1, %d]",
                           batch_size, max_batch);
    return ATTN_OK;
}

attn_status attn_io_check_steps(long adam_step, int epoch, long n_train, const char *what,
                                int batch_size, attn_error *err) {
    long steps = (long)epoch * ((n_train + batch_size - 1) / batch_size);
    if (adam_step != steps)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "\"adam_step\" = %ld, but %d %s of %ld training %s in batches of %d "
                           "take %ld steps",
                           adam_step, epoch, epoch == 1 ? "epoch" : "epochs", n_train, what,
                           batch_size, steps);
    return ATTN_OK;
}

attn_status attn_io_check_moments(const float *m, const float *v, size_t n, attn_error *err) {
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(m[i])) return attn_errorf(err, ATTN_ERR_VALUE, "\"m\"[%zu] is not finite", i);
        if (!(v[i] >= 0.0f) || !isfinite(v[i]))
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "\"v\"[%zu] = %g is negative or not finite (Adam's second moment "
                               "cannot be)",
                               i, (double)v[i]);
    }
    return ATTN_OK;
}

/* ---- the checksum tail -------------------------------------------------------------------- */

#define CRC_TAIL_FORMAT ",\"crc32\":\"0x%08lx\"}\n"

unsigned long attn_io_crc32(const char *text, size_t len) {
    return attn_io_crc32_update(crc32(0L, Z_NULL, 0), text, len);
}

unsigned long attn_io_crc32_update(unsigned long crc, const char *text, size_t len) {
    while (len > 0) { /* zlib takes at most UINT_MAX bytes at a time */
        uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = crc32((uLong)crc, (const Bytef *)text, chunk);
        text += chunk;
        len -= chunk;
    }
    return (unsigned long)crc;
}

size_t attn_io_crc_append(char *text, size_t len) {
    snprintf(text + len, ATTN_IO_CRC_TAIL_LEN + 1, CRC_TAIL_FORMAT, attn_io_crc32(text, len));
    return len + ATTN_IO_CRC_TAIL_LEN;
}

/* Checks the checksum tail of buf[0..len) (see CRC_TAIL_FORMAT). */
attn_status attn_io_crc_check(const char *path, const char *buf, size_t len, attn_error *err) {
    static const char head[] = ",\"crc32\":\"0x";
    const size_t head_len = sizeof head - 1;
    const char *tail = len >= ATTN_IO_CRC_TAIL_LEN ? buf + len - ATTN_IO_CRC_TAIL_LEN : NULL;
    unsigned long stored = 0;
    bool ok =
        tail && memcmp(tail, head, head_len) == 0 && memcmp(tail + head_len + 8, "\"}\n", 3) == 0;
    for (size_t i = 0; ok && i < 8; i++) {
        char c = tail[head_len + i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        ok = d >= 0;
        stored = stored * 16 + (unsigned long)(d < 0 ? 0 : d);
    }
    if (!ok)
        return attn_errorf(err, ATTN_ERR_PARSE,
                           "%s: the file does not end with its checksum "
                           "(,\"crc32\":\"0x<8 hex digits>\"}): truncated, edited or not "
                           "written by attn",
                           path);
    unsigned long actual = attn_io_crc32(buf, len - ATTN_IO_CRC_TAIL_LEN);
    if (actual != stored)
        return attn_errorf(err, ATTN_ERR_PARSE,
                           "%s: checksum mismatch (stored crc32 0x%08lx, content has 0x%08lx): "
                           "the file is corrupt or was edited",
                           path, stored, actual);
    return ATTN_OK;
}
