/* test_util.c -- see test_util.h. */
#include "test_util.h"

#include "kernels_internal.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    printf("  %-44s n=%-6zu identical=%zu max_ulp=%u max_rel=%.3g\n", what, n, c.n_equal,
           c.max_ulp, c.max_rel);
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
    printf("  %-44s n=%-6zu identical=%zu max_ulp=%u (bound %u)\n", what, n, c.n_equal,
           c.max_ulp, max_ulp);
    ck_assert_msg(bad == n, "%s: index %zu got %.9g want %.9g is %u ULP off (bound %u)", what,
                  bad, bad < n ? got[bad] : 0.0f, bad < n ? want[bad] : 0.0f,
                  bad < n ? tu_ulp_distance(got[bad], want[bad]) : 0u, max_ulp);
}

/* ---- golden provenance ------------------------------------------------------------------ */

const char *tu_blas_core(void) {
    const char *pretend = getenv("ATTN_TEST_PRETEND_CORE");
    return pretend && pretend[0] ? pretend : attn_blas_corename();
}

bool tu_golden_machine_matches(const char *golden_core) {
    const char *core = tu_blas_core();
    return golden_core && !attn_sgemm_naive && strcmp(core, "naive") != 0 &&
           strcmp(golden_core, core) == 0;
}

bool tu_golden_exact(const cJSON *golden, const char *file, const char *tolerance) {
    const cJSON *machine = cJSON_GetObjectItemCaseSensitive(golden, "machine");
    const cJSON *core = cJSON_GetObjectItemCaseSensitive(machine, "blas_core");
    const char *golden_core = cJSON_IsString(core) ? core->valuestring : NULL;
    if (tu_golden_machine_matches(golden_core)) {
        printf("  %s: made with OpenBLAS core %s, as this machine: bit-identity required\n",
               file, golden_core);
        return true;
    }
    if (attn_sgemm_naive)
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

void tu_assert_golden(const char *what, const float *got, const float *want, size_t n,
                      bool exact, double rel_tol, double abs_floor) {
    if (exact)
        tu_assert_identical(what, got, want, n);
    else
        tu_assert_close(what, got, want, n, rel_tol, abs_floor);
}

void tu_fill_uniform(float *x, size_t n, float lo, float hi, attn_rng *r) {
    for (size_t i = 0; i < n; i++) x[i] = attn_rng_uniform_range(r, lo, hi);
}

void tu_check_grad(const char *what, tu_scalar_fn f, void *ctx, float *x, const float *grad,
                   size_t n, float h, double atol, double rtol) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
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
        if (err / lim > worst) worst = err / lim;
        ck_assert_msg(err <= lim, "%s: d[%zu] analytic %.9g vs numeric %.9g (|diff| %.3g > %.3g)",
                      what, i, ana, num, err, lim);
    }
    printf("  %-44s n=%-6zu finite differences ok (worst %.2f of tolerance)\n", what, n, worst);
}

const char *tu_source_path(const char *rel) {
    static char buf[4096];
    const char *root = getenv("ATTN_SOURCE_DIR");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : ".", rel);
    return buf;
}

int tu_run_suite(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
