/* test_util.c -- see test_util.h. */
#include "test_util.h"

#include "kernels_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int32_t float_ordered(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i < 0 ? (int32_t)(INT32_MIN - i) : i; /* map to a monotonic integer line */
}

uint32_t tu_ulp_distance(float a, float b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : UINT32_MAX;
    int64_t d = (int64_t)float_ordered(a) - (int64_t)float_ordered(b);
    if (d < 0) d = -d;
    return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

tu_compare tu_compare_floats(const float *got, const float *want, size_t n) {
    tu_compare c = {0};
    c.n = n;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        double abs_err = fabs(g - w);
        double rel = abs_err / fmax(fabs(w), 1e-30);
        if (isnan(g) != isnan(w)) abs_err = rel = INFINITY;
        uint32_t ulp = tu_ulp_distance(got[i], want[i]);
        if (ulp == 0) c.n_equal++;
        if (abs_err > c.max_abs) c.max_abs = abs_err;
        if (rel > c.max_rel) {
            c.max_rel = rel;
            c.worst = i;
        }
        if (ulp > c.max_ulp) c.max_ulp = ulp;
    }
    return c;
}

void tu_assert_close(const char *what, const float *got, const float *want, size_t n,
                     double rel_tol, double abs_floor) {
    tu_compare c = tu_compare_floats(got, want, n);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++) {
        double err = fabs((double)got[i] - want[i]);
        double scale = fmax(fabs((double)want[i]), abs_floor);
        if (!(err <= rel_tol * scale)) bad = i;
    }
    printf("  %-44s n=%-6zu identical=%zu max_ulp=%u max_rel=%.3g\n", what, n, c.n_equal, c.max_ulp,
           c.max_rel);
    ck_assert_msg(bad == n,
                  "%s: index %zu got %.9g want %.9g (%u ULP); max rel err %.3g > tol %.3g", what,
                  bad, bad < n ? got[bad] : 0.0f, bad < n ? want[bad] : 0.0f,
                  bad < n ? tu_ulp_distance(got[bad], want[bad]) : 0u, c.max_rel, rel_tol);
}

void tu_assert_identical(const char *what, const float *got, const float *want, size_t n) {
    tu_compare c = tu_compare_floats(got, want, n);
    size_t first = n;
    for (size_t i = 0; i < n && first == n; i++)
        if (tu_ulp_distance(got[i], want[i]) != 0) first = i;
    printf("  %-44s identical: %zu/%zu, max ULP: %u\n", what, c.n_equal, n, c.max_ulp);
    ck_assert_msg(first == n,
                  "%s: identical %zu/%zu, max ULP %u; first difference at %zu: got %.9g want "
                  "%.9g",
                  what, c.n_equal, n, c.max_ulp, first, first < n ? got[first] : 0.0f,
                  first < n ? want[first] : 0.0f);
}

void tu_assert_ulp(const char *what, const float *got, const float *want, size_t n,
                   uint32_t max_ulp) {
    tu_compare c = tu_compare_floats(got, want, n);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (tu_ulp_distance(got[i], want[i]) > max_ulp) bad = i;
    printf("  %-44s n=%-6zu identical=%zu max_ulp=%u (bound %u)\n", what, n, c.n_equal, c.max_ulp,
           max_ulp);
    ck_assert_msg(bad == n, "%s: index %zu got %.9g want %.9g is %u ULP off (bound %u)", what, bad,
                  bad < n ? got[bad] : 0.0f, bad < n ? want[bad] : 0.0f,
                  bad < n ? tu_ulp_distance(got[bad], want[bad]) : 0u, max_ulp);
}

/* ---- golden provenance ------------------------------------------------------------------ */

const char *tu_blas_core(void) {
    const char *pretend = getenv("ATTN_TEST_PRETEND_CORE");
    return pretend && pretend[0] ? pretend : attn_blas_corename();
}

bool tu_golden_machine_matches(const char *golden_core) {
    const char *core = tu_blas_core();
    /* the goldens hold PyTorch's AVX2 arithmetic: the scalar kernels are never bit-identical */
    return golden_core && !attn_sgemm_naive && strcmp(core, "naive") != 0 &&
           strcmp(golden_core, core) == 0 && strcmp(attn_cpu_path(), "avx2") == 0;
}

bool tu_golden_exact(const cJSON *golden, const char *file, const char *tolerance) {
    const cJSON *machine = cJSON_GetObjectItemCaseSensitive(golden, "machine");
    const cJSON *core = cJSON_GetObjectItemCaseSensitive(machine, "blas_core");
    const char *golden_core = cJSON_IsString(core) ? core->valuestring : NULL;
    if (tu_golden_machine_matches(golden_core)) {
        printf("  %s: made with OpenBLAS core %s, as this machine: bit-identity required\n", file,
               golden_core);
        return true;
    }
    if (strcmp(attn_cpu_path(), "avx2") != 0)
        printf("  %s: the %s kernels are active (ATTN_CPU or attn_cpu_select), PyTorch's AVX2 "
               "arithmetic is not reproduced: checking within %s instead\n",
               file, attn_cpu_path(), tolerance);
    else if (attn_sgemm_naive)
        printf("  %s: made with OpenBLAS core %s, this build uses the naive GEMM "
               "(ATTN_NAIVE_GEMM): checking within %s instead\n",
               file, golden_core ? golden_core : "(not recorded)", tolerance);
    else
        printf("  %s: golden made with OpenBLAS core %s, this machine runs %s: bit-identity is "
               "not defined across CPU classes; checking within %s instead (io/crosscheck_torch "
               "checks bit-identity against live PyTorch on this machine)\n",
               file, golden_core ? golden_core : "(not recorded)", tu_blas_core(), tolerance);
    return false;
}

void tu_assert_golden(const char *what, const float *got, const float *want, size_t n, bool exact,
                      double rel_tol, double abs_floor) {
    if (exact)
        tu_assert_identical(what, got, want, n);
    else
        tu_assert_close(what, got, want, n, rel_tol, abs_floor);
}

void tu_assert_golden_ulp(const char *what, const float *got, const float *want, size_t n,
                          bool exact, uint32_t other_machine_max_ulp) {
    if (exact)
        tu_assert_identical(what, got, want, n);
    else
        tu_assert_ulp(what, got, want, n, other_machine_max_ulp);
}

void tu_fill_uniform(float *x, size_t n, float lo, float hi, attn_rng *r) {
    for (size_t i = 0; i < n; i++) x[i] = attn_rng_uniform_range(r, lo, hi);
}

/* A ReLU kink inside (x - h, x + h) spoils the central difference; there the analytic gradient is
 * the derivative of the piece x lies on, which a one-sided difference over [x - h, x] or [x, x + h]
 * measures. An element fails the central check but passes as a kink only if its two one-sided
 * differences disagree (a kink is there) and the analytic value matches one of them; at most a
 * quarter of a tensor's elements may pass that way (one unit at a kink shares it with its whole row
 * of weights). */
static bool kink_matches(tu_scalar_fn f, void *ctx, float saved, float h, double fp, double fm,
                         double ana, double lim) {
    double f0 = f(ctx);
    double right = (fp - f0) / ((double)(saved + h) - (double)saved);
    double left = (f0 - fm) / ((double)saved - (double)(saved - h));
    if (fabs(right - left) <= 2.0 * lim) return false; /* no kink: a real mismatch */
    return fmin(fabs(ana - right), fabs(ana - left)) <= 2.0 * lim;
}

void tu_check_grad(const char *what, tu_scalar_fn f, void *ctx, float *x, const float *grad,
                   size_t n, float h, double atol, double rtol) {
    double worst = 0.0;
    const size_t checked = tu_small() && n > 64 ? 64 : n;
    size_t kinks = 0, max_kinks = checked / 4 + 1;
    for (size_t k = 0; k < checked; k++) {
        const size_t i = checked == n ? k : k * (n - 1) / (checked - 1);
        float saved = x[i];
        x[i] = saved + h;
        double fp = f(ctx);
        x[i] = saved - h;
        double fm = f(ctx);
        x[i] = saved;
        /* the step actually taken, in float */
        double step = (double)(saved + h) - (double)(saved - h);
        double num = (fp - fm) / step;
        double ana = grad[i];
        double err = fabs(num - ana);
        double lim = atol + rtol * fmax(fabs(num), fabs(ana));
        if (err > lim && kinks < max_kinks && kink_matches(f, ctx, saved, h, fp, fm, ana, lim)) {
            kinks++;
            continue;
        }
        if (err / lim > worst) worst = err / lim;
        ck_assert_msg(err <= lim, "%s: d[%zu] analytic %.9g vs numeric %.9g (|diff| %.3g > %.3g)",
                      what, i, ana, num, err, lim);
    }
    printf("  %-44s n=%-6zu finite differences ok (%zu checked, worst %.2f of tolerance", what, n,
           checked, worst);
    if (kinks) printf("; %zu at a kink matched a one-sided difference", kinks);
    printf(")\n");
}

const char *tu_source_path(const char *rel) {
    static char buf[4096];
    const char *root = getenv("ATTN_SOURCE_DIR");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : ".", rel);
    return buf;
}

/* ---- files and JSON ------------------------------------------------------------------------ */

char *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

char *tu_read_text(const char *path) {
    char *s = tu_read_file(path, NULL);
    ck_assert_msg(s != NULL, "cannot read %s: %s", path, strerror(errno));
    return s;
}

void tu_write_file(const char *path, const char *text, size_t len) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s: %s", path, strerror(errno));
    if (len) ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    ck_assert_msg(fclose(f) == 0, "cannot write %s: %s", path, strerror(errno));
}

char *tu_replace_once(const char *text, const char *what, const char *old, const char *rep) {
    const char *hit = strstr(text, old);
    ck_assert_msg(hit != NULL, "test setup: %s does not contain \"%s\"", what, old);
    size_t head = (size_t)(hit - text), lo = strlen(old), lr = strlen(rep), lt = strlen(text);
    char *out = malloc(lt - lo + lr + 1);
    ck_assert_ptr_nonnull(out);
    memcpy(out, text, head);
    memcpy(out + head, rep, lr);
    memcpy(out + head + lr, hit + lo, lt - head - lo + 1);
    return out;
}

cJSON *tu_load_json(const char *path) {
    char *text = tu_read_text(path);
    cJSON *j = cJSON_Parse(text);
    free(text);
    ck_assert_msg(j != NULL, "%s is not valid JSON", path);
    return j;
}

cJSON *tu_load_source_json(const char *rel) {
    return tu_load_json(tu_source_path(rel));
}

/* The array o[key] (fails naming key when it is not one) and a malloc'd buffer for its
 * elements of elem_size bytes each; *len gets the element count. */
static void *json_array_buffer(const cJSON *o, const char *key, size_t elem_size,
                               const cJSON **array, size_t *len) {
    *array = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsArray(*array), "JSON key \"%s\" missing or not an array", key);
    *len = (size_t)cJSON_GetArraySize(*array);
    void *buf = malloc((*len ? *len : 1) * elem_size);
    ck_assert_ptr_nonnull(buf);
    return buf;
}

float *tu_json_floats(const cJSON *o, const char *key, size_t *n) {
    const cJSON *a, *e;
    size_t len, i = 0;
    float *v = json_array_buffer(o, key, sizeof *v, &a, &len);
    cJSON_ArrayForEach(e, a) v[i++] = (float)e->valuedouble;
    if (n) *n = len;
    return v;
}

int *tu_json_ints(const cJSON *o, const char *key, size_t *n) {
    const cJSON *a, *e;
    size_t len, i = 0;
    int *v = json_array_buffer(o, key, sizeof *v, &a, &len);
    cJSON_ArrayForEach(e, a) v[i++] = e->valueint;
    if (n) *n = len;
    return v;
}

static const cJSON *json_number(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsNumber(v), "JSON key \"%s\" missing or not a number", key);
    return v;
}

int tu_json_int(const cJSON *o, const char *key) {
    return json_number(o, key)->valueint;
}

double tu_json_double(const cJSON *o, const char *key) {
    return json_number(o, key)->valuedouble;
}

/* ---- models and data ------------------------------------------------------------------------ */

attn_model *tu_model_new(const attn_model_config *c, uint64_t seed) {
    attn_model *m = NULL;
    attn_error err = {0};
    attn_status st = attn_model_create(c, seed, &m, &err);
    ck_assert_msg(st == ATTN_OK && m != NULL, "attn_model_create: %s", err.msg);
    return m;
}

attn_model *tu_model_default(attn_arch arch, uint64_t seed) {
    attn_model_config c = attn_model_config_default(arch);
    return tu_model_new(&c, seed);
}

attn_dataset *tu_train_data(int n, uint64_t seed) {
    attn_dataset *d = NULL;
    attn_error err = {0};
    attn_status st = attn_data_generate(ATTN_SET_TRAIN, n, seed, &d, &err);
    ck_assert_msg(st == ATTN_OK && d != NULL, "attn_data_generate: %s", err.msg);
    return d;
}

attn_trainer *tu_trainer_new(attn_model *m, const attn_dataset *d, const attn_train_config *cfg) {
    attn_trainer *t = NULL;
    attn_error err = {0};
    attn_status st = attn_trainer_create(m, d, cfg, &t, &err);
    ck_assert_msg(st == ATTN_OK && t != NULL, "attn_trainer_create: %s", err.msg);
    return t;
}

bool tu_small(void) {
    const char *small = getenv("ATTN_TEST_SMALL");
    return small && strcmp(small, "1") == 0;
}

int tu_run_suite(Suite *s) {
    /* One kernel path per CTest entry (tests/kernels/kernel_paths.h): a path this machine cannot
     * run is reported as skipped (SKIP_RETURN_CODE 77), not as passed. */
    const char *only = getenv("ATTN_TEST_PATH");
    if (only && *only && !attn_cpu_path_supported(only)) {
        printf("%s kernels: not supported by this CPU or build: skipped\n", only);
        srunner_free(srunner_create(s));
        return 77;
    }
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

void tu_remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char child[1024];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        tu_remove_tree(child);
    }
    closedir(d);
    rmdir(path);
}

int tu_run_suite_in_tmp(Suite *s, char *dir, size_t dir_size, const char *name) {
    snprintf(dir, dir_size, "/tmp/attn_test_%s_XXXXXX", name);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    int rc = tu_run_suite(s);
    tu_remove_tree(dir);
    return rc;
}
