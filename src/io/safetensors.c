/* safetensors.c -- the safetensors container, both ways, for any model seen through an
 * attn_io_model_view (io_internal.h; the two families' adapters are safetensors_models.c).
 *
 *   [u64 little-endian N][N bytes of JSON header][raw little-endian tensor data]
 *   header: {"__metadata__": {"format": .., "config": .., ["vocab": ..,] "writer": "attn"},
 *            "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
 *
 * Offsets count from the first byte after the header. Only F32 is read: any other dtype is
 * refused naming the tensor. Reading maps the file read-only and checks the whole layout before
 * a value is looked at: header length bounded, the header through the strict JSON parser,
 * every tensor's offsets inside the data, in order, without gap or overlap, its byte size
 * 4 x product(shape), and the last tensor ending at the end of the file. The values are then
 * copied by name into the model's parameters (one flat buffer), or used where they lie:
 * The values are used in place, the mapping becoming the model's parameters (private pages:
 * training writes copies, never the file), when the file holds exactly the model's table in
 * its order from a 64-byte-aligned start on a little-endian machine -- what attn writes;
 * otherwise (PyTorch's safetensors writes its tensors in another order, from a multiple of 8)
 * they are copied by name into the model's own buffer and the mapping is released.
 * The writer is safetensors_save.c. */
#include "io_internal.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- recognising ---------------------------------------------------------------------------- */

bool attn_io_safetensors_head(const unsigned char *head, size_t n) {
    /* JSON text never holds a NUL byte: byte 7 of a header length under 2^56 always is one */
    return n >= 9 && head[7] == 0 && head[8] == '{';
}

bool attn_io_is_safetensors(const char *path) {
    unsigned char head[9];
    const int fd = path ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
    if (fd < 0) return false;
    struct stat sb;
    ssize_t n = 0;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) n = read(fd, head, sizeof head);
    close(fd);
    return n == (ssize_t)sizeof head && attn_io_safetensors_head(head, sizeof head);
}

bool attn_weights_is_safetensors(const char *path) {
    return attn_io_is_safetensors(path);
}

/* ---- reading: the header -------------------------------------------------------------------- */

/* A non-negative integer JSON number below 2^53 into *v. */
static bool get_count(const cJSON *x, unsigned long long *v) {
    if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > 9007199254740992.0 ||
        x->valuedouble != floor(x->valuedouble))
        return false;
    *v = (unsigned long long)x->valuedouble;
    return true;
}

/* One tensor entry of the header into *t; problems name the tensor. */
static void parse_entry(const cJSON *e, attn_io_st_tensor *t, attn_io_problems *p) {
    t->name = e->string;
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsObject(e) || !cJSON_IsString(dtype) || !cJSON_IsArray(shape) ||
        !cJSON_IsArray(offs) || cJSON_GetArraySize(e) != 3) {
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "tensor \"%s\": expected {\"dtype\", \"shape\", \"data_offsets\"} and no "
                        "other key",
                        t->name);
        return;
    }
    if (strcmp(dtype->valuestring, "F32") != 0) {
        attn_io_problem(p, ATTN_ERR_VALUE,
                        "tensor \"%s\": dtype \"%s\" is not supported, attn reads F32 only "
                        "(convert it before saving: tensor.float())",
                        t->name, dtype->valuestring);
        return;
    }
    unsigned long long numel = 1, b = 0, end = 0, dim = 0;
    t->ndim = cJSON_GetArraySize(shape);
    if (t->ndim > ATTN_IO_ST_MAX_NDIM) {
        attn_io_problem(p, ATTN_ERR_SHAPE, "tensor \"%s\": %d dimensions, at most %d", t->name,
                        t->ndim, ATTN_IO_ST_MAX_NDIM);
        return;
    }
    for (int d = 0; d < t->ndim; d++) {
        if (!get_count(cJSON_GetArrayItem(shape, d), &dim) || dim > (1ull << 40)) {
            attn_io_problem(p, ATTN_ERR_SHAPE,
                            "tensor \"%s\": shape[%d] is not an integer in 0..2^40", t->name, d);
            return;
        }
        t->shape[d] = (long long)dim;
        numel = dim == 0 || numel <= (1ull << 50) / dim ? numel * dim : (1ull << 50);
    }
    if (cJSON_GetArraySize(offs) != 2 || !get_count(cJSON_GetArrayItem(offs, 0), &b) ||
        !get_count(cJSON_GetArrayItem(offs, 1), &end) || end < b) {
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "tensor \"%s\": \"data_offsets\" must be [begin, end], integers with "
                        "begin <= end",
                        t->name);
        return;
    }
    t->begin = (size_t)b;
    t->end = (size_t)end;
    t->numel = (size_t)numel;
    if (end - b != 4 * numel)
        attn_io_problem(p, ATTN_ERR_SHAPE,
                        "tensor \"%s\": data_offsets [%llu, %llu] hold %llu bytes, its shape "
                        "needs %llu (4 x %llu F32 values)",
                        t->name, b, end, end - b, 4 * numel, numel);
}

/* "__metadata__": an object of strings; the keys attn reads are kept. */
static void parse_metadata(const cJSON *md, attn_io_st_file *f, attn_io_problems *p) {
    if (!cJSON_IsObject(md)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "\"__metadata__\" must be an object of strings");
        return;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, md) {
        if (!cJSON_IsString(item)) {
            attn_io_problem(p, ATTN_ERR_PARSE, "\"__metadata__\": \"%s\" is not a string",
                            item->string);
            continue;
        }
        if (!strcmp(item->string, "format")) f->format = item->valuestring;
        if (!strcmp(item->string, "config")) f->config = item->valuestring;
        if (!strcmp(item->string, "vocab")) f->vocab = item->valuestring;
        if (!strcmp(item->string, "kernels")) f->kernels = item->valuestring;
    }
}

static int by_begin(const void *a, const void *b) {
    const attn_io_st_tensor *x = *(attn_io_st_tensor *const *)a,
                            *y = *(attn_io_st_tensor *const *)b;
    return x->begin < y->begin   ? -1
           : x->begin > y->begin ? 1
                                 : (x->end > y->end) - (x->end < y->end);
}

/* The tensors in data order: the first at 0, each where the previous ends, the last at the end
 * of the file. */
static void check_layout(const attn_io_st_file *f, attn_io_problems *p) {
    attn_io_st_tensor **order = malloc((f->count ? f->count : 1) * sizeof *order);
    if (!order) {
        attn_io_problem(p, ATTN_ERR_NOMEM, "out of memory for %zu tensors", f->count);
        return;
    }
    for (size_t i = 0; i < f->count; i++) order[i] = &f->tensors[i];
    qsort(order, f->count, sizeof *order, by_begin);
    size_t at = 0;
    for (size_t i = 0; i < f->count; i++) {
        const attn_io_st_tensor *t = order[i];
        if (t->end > f->data_len)
            attn_io_problem(p, ATTN_ERR_PARSE,
                            "tensor \"%s\": data_offsets [%zu, %zu] reach past the end of the "
                            "data (%zu bytes: truncated?)",
                            t->name, t->begin, t->end, f->data_len);
        else if (t->begin > at)
            attn_io_problem(p, ATTN_ERR_PARSE,
                            "tensor \"%s\": a gap of %zu bytes before it (it begins at %zu, the "
                            "previous tensor ends at %zu)",
                            t->name, t->begin - at, t->begin, at);
        else if (t->begin < at)
            attn_io_problem(p, ATTN_ERR_PARSE,
                            "tensor \"%s\": overlaps the previous tensor (it begins at %zu, the "
                            "previous ends at %zu)",
                            t->name, t->begin, at);
        if (t->end > at) at = t->end;
    }
    if (p->n == 0 && at != f->data_len)
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "%zu bytes after the last tensor's data (the tensors end at %zu of %zu)",
                        f->data_len - at, at, f->data_len);
    free(order);
}

static void parse_header(attn_io_st_file *f, const char *text, size_t n, attn_io_problems *p) {
    size_t at = 0;
    const char *why = NULL;
    attn_status st = attn_io_json_parse(text, n, &f->header, &at, &why);
    if (st != ATTN_OK) {
        char key[72] = ""; /* the string at the error (a duplicate key: the tensor's name) */
        size_t k = 0;
        if (at < n && text[at] == '"')
            while (k + 1 < sizeof key && at + 1 + k < n && text[at + 1 + k] != '"') {
                key[k] = text[at + 1 + k];
                k++;
            }
        key[k] = '\0';
        attn_io_problem(p, st, "the safetensors header (JSON) is malformed at byte %zu: %s%s%s%s",
                        at, why, k ? " (\"" : "", key, k ? "\")" : "");
        return;
    }
    if (!cJSON_IsObject(f->header)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "the safetensors header is not a JSON object");
        return;
    }
    f->count = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, f->header) f->count += strcmp(e->string, "__metadata__") != 0;
    f->tensors = calloc(f->count ? f->count : 1, sizeof *f->tensors);
    if (!f->tensors) {
        attn_io_problem(p, ATTN_ERR_NOMEM, "out of memory for %zu tensors", f->count);
        return;
    }
    size_t i = 0;
    cJSON_ArrayForEach(e, f->header) {
        if (strcmp(e->string, "__metadata__") == 0)
            parse_metadata(e, f, p);
        else
            parse_entry(e, &f->tensors[i++], p);
    }
    if (p->n == 0) check_layout(f, p);
}

/* ---- reading: the file ---------------------------------------------------------------------- */

/* Maps path read-only into f->map [f->size]; only a regular file of at least 8 bytes. */
static attn_status map_file(const char *path, attn_io_st_file *f, attn_error *err) {
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return attn_errorf(err, ATTN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    attn_status st = ATTN_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = attn_errorf(err, ATTN_ERR_IO, "%s: not a regular file; only regular files are read",
                         path);
    else if (sb.st_size < 8)
        st = attn_errorf(err, ATTN_ERR_PARSE,
                         "%s: %lld bytes, too short for a safetensors file (8-byte header "
                         "length first)",
                         path, (long long)sb.st_size);
    if (st == ATTN_OK) {
        f->size = (size_t)sb.st_size;
        /* private and writable: a model using the values in place may train them (copy on
         * write); the file is never written */
        f->map = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (f->map == MAP_FAILED) {
            f->map = NULL;
            st = attn_errorf(err, ATTN_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
        }
    }
    close(fd);
    return st;
}

static attn_status open_file(const char *path, attn_io_st_file *f, size_t max_values, bool weights,
                             attn_error *err);

attn_status attn_io_st_open(const char *path, attn_io_st_file *f, attn_error *err) {
    return open_file(path, f, attn_io_max_params(), true, err);
}

attn_status attn_io_st_open_limit(const char *path, attn_io_st_file *f, size_t max_values,
                                  attn_error *err) {
    return open_file(path, f, max_values, false, err);
}

/* The checkpoint format (attn_io_is_checkpoint_format) whose fixed start
 * (checkpoint_safetensors.c) the header text[n] begins with, into name[cap]; false if none. */
static bool checkpoint_start(const char *text, size_t n, char *name, size_t cap) {
    static const char start[] = "{\"__metadata__\":{\"format\":\"";
    const size_t s = sizeof start - 1;
    if (n <= s || memcmp(text, start, s) != 0) return false;
    const char *end = memchr(text + s, '"', n - s);
    const size_t len = end ? (size_t)(end - (text + s)) : cap;
    if (len >= cap) return false;
    memcpy(name, text + s, len);
    name[len] = '\0';
    return attn_io_is_checkpoint_format(name);
}

/* weights: a weights reader's (a training checkpoint over its limit is named as one: its
 * arrays are 3-4 times the model's size). */
static attn_status open_file(const char *path, attn_io_st_file *f, size_t max_values, bool weights,
                             attn_error *err) {
    memset(f, 0, sizeof *f);
    f->path = path;
    attn_status st = map_file(path, f, err);
    if (st != ATTN_OK) return st;
    const unsigned char *b = f->map;
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--) n = n << 8 | b[k];
    attn_io_problems p = {err, path, 0, ATTN_OK};
    if (n > ATTN_SAFETENSORS_MAX_HEADER)
        attn_io_problem(&p, ATTN_ERR_VALUE,
                        "the safetensors header length %llu is over the limit of %d bytes",
                        (unsigned long long)n, ATTN_SAFETENSORS_MAX_HEADER);
    else if (n > f->size - 8)
        attn_io_problem(&p, ATTN_ERR_PARSE,
                        "the safetensors header length %llu reaches past the end of the file (%zu "
                        "bytes: truncated?)",
                        (unsigned long long)n, f->size);
    else {
        f->data = b + 8 + n;
        f->data_len = f->size - 8 - (size_t)n;
        char ckpt[64];
        const bool is_ckpt =
            weights && checkpoint_start((const char *)b + 8, (size_t)n, ckpt, sizeof ckpt);
        if (f->data_len / 4 > max_values && is_ckpt)
            attn_io_problem(&p, ATTN_ERR_VALUE, ATTN_IO_CKPT_NOT_WEIGHTS, ckpt);
        else if (f->data_len / 4 > max_values)
            attn_io_problem(&p, ATTN_ERR_VALUE,
                            "%zu bytes of tensor data: over the limit of %zu values (%zu "
                            "parameters; raise it with the environment variable ATTN_MAX_PARAMS)",
                            f->data_len, max_values, attn_io_max_params());
        else
            parse_header(f, (const char *)b + 8, (size_t)n, &p);
    }
    st = attn_io_problems_finish(&p);
    if (st != ATTN_OK) attn_io_st_close(f);
    return st;
}

void attn_io_st_close(attn_io_st_file *f) {
    if (f->map) munmap(f->map, f->size);
    cJSON_Delete(f->header);
    free(f->tensors);
    memset(f, 0, sizeof *f);
}

/* ---- reading: into a model ------------------------------------------------------------------ */

const char *attn_io_shape_text(char *buf, size_t size, int nd, const long long *s) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < nd && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ",%lld" : "%lld", s[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

/* Whether file tensor t has the view tensor w's shape. */
static bool same_shape(const attn_io_st_tensor *t, const attn_io_tensor_view *w) {
    if (t->ndim != w->ndim) return false;
    for (int d = 0; d < w->ndim; d++)
        if (t->shape[d] != w->shape[d]) return false;
    return true;
}

/* The first non-finite value of tensor t's values x, into p. */
static void check_finite_values(const float *x, const attn_io_st_tensor *t, attn_io_problems *p) {
    for (size_t j = 0; j < t->numel; j++)
        if (!isfinite(x[j])) {
            attn_io_problem(p, ATTN_ERR_VALUE, "tensor \"%s\": element %zu is %s, not finite",
                            t->name, j, isnan(x[j]) ? "NaN" : "Inf");
            return;
        }
}

void attn_io_st_copy_values(const attn_io_st_file *f, const attn_io_st_tensor *t, float *dst,
                            attn_io_problems *p) {
    const unsigned char *src = f->data + t->begin;
    if (attn_io_little_endian())
        memcpy(dst, src, t->numel * 4);
    else
        for (size_t j = 0; j < t->numel; j++) {
            uint32_t u = 0;
            for (int k = 3; k >= 0; k--) u = u << 8 | src[4 * j + (size_t)k];
            memcpy(&dst[j], &u, 4);
        }
    check_finite_values(dst, t, p);
}

/* file_of[i]: the file's tensor for v's tensor i, every name and shape checked into p. */
static void match_tensors(const attn_io_st_file *f, const attn_io_model_view *v, long *file_of,
                          attn_io_problems *p) {
    for (size_t i = 0; i < v->count; i++) file_of[i] = -1;
    for (size_t k = 0; k < f->count; k++) {
        const attn_io_st_tensor *t = &f->tensors[k];
        size_t i = 0;
        while (i < v->count && strcmp(v->tensors[i].name, t->name) != 0) i++;
        if (i == v->count) {
            attn_io_problem(p, ATTN_ERR_SHAPE,
                            "unexpected tensor \"%s\" (the config has no such parameter)", t->name);
            continue;
        }
        file_of[i] = (long)k;
        if (!same_shape(t, &v->tensors[i])) {
            char got[128], want[128];
            long long w[4];
            for (int d = 0; d < v->tensors[i].ndim; d++) w[d] = v->tensors[i].shape[d];
            attn_io_problem(p, ATTN_ERR_SHAPE, "tensor \"%s\": shape %s, the config needs %s",
                            t->name, attn_io_shape_text(got, sizeof got, t->ndim, t->shape),
                            attn_io_shape_text(want, sizeof want, v->tensors[i].ndim, w));
        }
    }
    for (size_t i = 0; i < v->count; i++)
        if (file_of[i] < 0)
            attn_io_problem(p, ATTN_ERR_SHAPE, "missing tensor \"%s\"", v->tensors[i].name);
}

/* Whether the matched file holds v's flat buffer as it is: its table in order at v's offsets,
 * from a 64-byte-aligned start, little-endian. */
static bool in_place(const attn_io_st_file *f, const attn_io_model_view *v, const long *file_of) {
    if (!attn_io_little_endian() || (uintptr_t)f->data % 64 != 0) return false;
    for (size_t i = 0; i < v->count; i++)
        if (file_of[i] != (long)i || f->tensors[i].begin != 4 * v->tensors[i].offset) return false;
    return true;
}

typedef struct st_mapping {
    void *map;
    size_t size;
} st_mapping;

static void release_mapping(void *owner) {
    st_mapping *m = owner;
    munmap(m->map, m->size);
    free(m);
}

/* The mapping from f to *src: the model created from it owns it; f no longer does. */
static attn_status hand_over(attn_io_st_file *f, attn_param_source *src, attn_error *err) {
    st_mapping *m = malloc(sizeof *m);
    if (!m) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", f->path);
    *m = (st_mapping){f->map, f->size};
    *src = (attn_param_source){(float *)(void *)(uintptr_t)f->data, release_mapping, m};
    f->map = NULL; /* attn_io_st_close leaves it */
    return ATTN_OK;
}

attn_status attn_io_st_fill(attn_io_st_file *f, const attn_io_model_view *v, attn_param_source *src,
                            attn_error *err) {
    attn_io_problems p = {err, f->path, 0, ATTN_OK};
    if (src) *src = (attn_param_source){0};
    long *file_of = malloc((v->count ? v->count : 1) * sizeof *file_of);
    if (!file_of) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", f->path);
    match_tensors(f, v, file_of, &p);
    const bool use_in_place = p.n == 0 && src && in_place(f, v, file_of);
    for (size_t i = 0; i < v->count && p.n == 0; i++) {
        const attn_io_st_tensor *t = &f->tensors[file_of[i]];
        if (use_in_place)
            check_finite_values((const float *)(const void *)(f->data + t->begin), t, &p);
        else
            attn_io_st_copy_values(f, t, v->params + v->tensors[i].offset, &p);
    }
    free(file_of);
    attn_status st = attn_io_problems_finish(&p);
    if (st == ATTN_OK && use_in_place) st = hand_over(f, src, err);
    return st;
}
