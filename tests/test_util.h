/* test_util.h -- shared test helpers: tensor comparison (abs, rel, ULP, worst index), golden
 * provenance (bit-identity only on the machine class a golden was made on), a
 * finite-difference checker, random fills, paths. Run a test under gdb with CK_FORK=no. */
#ifndef ATTN_TEST_UTIL_H
#define ATTN_TEST_UTIL_H

#include "attn.h"
#include "attn_kernels.h"

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Check's ck_assert_msg (behind every ck_assert_*) marks the place of each assertion that
 * passes, one write to the test's result file apiece (hundreds of thousands in the per-sentence
 * and per-element loops), so that a test that crashes names the last assertion it passed. Under
 * AddressSanitizer a crash prints its own stack, so the sanitizer build marks nothing: the same
 * assertions, the same message when one fails. */
#if defined(__SANITIZE_ADDRESS__)
#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                                                   \
    ((expr)                                                                                        \
         ? (void)0                                                                                 \
         : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", ##__VA_ARGS__))
#endif

/* ULP distance between two floats (0 for equal values incl. +0/-0; UINT32_MAX if either NaN). */
uint32_t tu_ulp_distance(float a, float b);

typedef struct tu_compare {
    double max_abs, max_rel;
    uint32_t max_ulp;
    size_t worst;   /* index of the largest relative error */
    size_t n_equal; /* bit-identical elements (same value; +0 == -0) */
    size_t n;
} tu_compare;

tu_compare tu_compare_floats(const float *got, const float *want, size_t n);

/* Fails (ck_assert_msg) naming `what`, the worst index, got, want, and the ULP distance when
 * the max relative error exceeds rel_tol (elements with |want| < abs_floor are judged on
 * absolute error against rel_tol * abs_floor). Prints a one-line report on success. */
void tu_assert_close(const char *what, const float *got, const float *want, size_t n,
                     double rel_tol, double abs_floor);
/* Requires every element bit-identical; on failure reports identical count and max ULP. */
void tu_assert_identical(const char *what, const float *got, const float *want, size_t n);

/* Requires every element within max_ulp ULP; prints a one-line report. */
void tu_assert_ulp(const char *what, const float *got, const float *want, size_t n,
                   uint32_t max_ulp);

/* ---- golden provenance ------------------------------------------------------------------
 * PyTorch goldens (weights/golden/kernels.json, *.logits.json, *.grad_batch.json) record where
 * they were made in a top-level "machine" object: {"blas_core": openblas_get_corename() of
 * torch's OpenBLAS, "torch": version, "cpu_capability": ATen's}. Bit-identity with PyTorch is
 * defined only on the same CPU class (docs/numerics.md), so a
 * golden test requires it only when the golden's blas_core equals this machine's
 * (attn_blas_corename(), never "naive"); otherwise it prints why and checks a stated tolerance
 * instead. io/crosscheck_torch stays bit-identical against live PyTorch on any machine.
 *
 * Test-only override: ATTN_TEST_PRETEND_CORE=<name> replaces attn_blas_corename() in this
 * decision (e.g. ATTN_TEST_PRETEND_CORE=Haswell exercises the tolerance path on this machine).
 * OPENBLAS_CORETYPE=<name> instead changes the kernels OpenBLAS really runs. */
struct cJSON;

/* This machine's core for the decision: $ATTN_TEST_PRETEND_CORE if set, else
 * attn_blas_corename(). */
const char *tu_blas_core(void);
/* True iff golden_core (may be NULL: not recorded) names this machine's core and the build
 * is not ATTN_NAIVE_GEMM. */
bool tu_golden_machine_matches(const char *golden_core);
/* Reads golden's "machine"."blas_core" (file names the golden in messages) and returns
 * tu_golden_machine_matches() of it. On a mismatch prints one line saying where the golden
 * was made, what this machine runs, and `tolerance`, the check used instead. */
bool tu_golden_exact(const struct cJSON *golden, const char *file, const char *tolerance);
/* exact ? tu_assert_identical : tu_assert_close(rel_tol, abs_floor). */
void tu_assert_golden(const char *what, const float *got, const float *want, size_t n, bool exact,
                      double rel_tol, double abs_floor);
/* exact ? tu_assert_identical : tu_assert_ulp(other_machine_max_ulp) (elementwise kernels). */
void tu_assert_golden_ulp(const char *what, const float *got, const float *want, size_t n,
                          bool exact, uint32_t other_machine_max_ulp);

/* Fills x[n] with uniform values in [lo, hi) from the project PRNG. */
void tu_fill_uniform(float *x, size_t n, float lo, float hi, attn_rng *r);

/* Finite differences. f(ctx) returns a scalar loss in double computed from the current
 * contents of x (float). For each of x's n elements, the central difference
 * (f(x+h) - f(x-h)) / 2h is compared with grad[i]; fails naming `what` and the index when
 * |num - ana| > atol + rtol * max(|num|, |ana|). In the sanitizer build (tu_small) a tensor of
 * more than 64 elements has 64 of them checked, evenly spread, the first and last included (the
 * same forward and backward code runs; the release stage checks every element). */
typedef double (*tu_scalar_fn)(void *ctx);
void tu_check_grad(const char *what, tu_scalar_fn f, void *ctx, float *x, const float *grad,
                   size_t n, float h, double atol, double rtol);

/* Absolute path of a file in the source tree ($ATTN_SOURCE_DIR/rel); static buffer. */
const char *tu_source_path(const char *rel);

/* ---- files and JSON -------------------------------------------------------------------------
 * Every tu_ function below that does not return NULL fails the test (ck_assert) naming the
 * file or key at fault. */

/* The kernels' PyTorch golden file (tools/make_golden.py), relative to the source tree. */
#define TU_KERNELS_GOLDEN "weights/golden/kernels.json"

/* Whole file as a malloc'd NUL-terminated string, or NULL if it cannot be opened or read;
 * *len (may be NULL) gets its size in bytes. */
char *tu_read_file(const char *path, size_t *len);
/* tu_read_file that fails the test when the file cannot be read. */
char *tu_read_text(const char *path);
/* Writes len bytes of text to path (created or truncated). */
void tu_write_file(const char *path, const char *text, size_t len);
/* A malloc'd copy of text with the first occurrence of old replaced by rep; fails naming
 * `what` (the text's origin) when old does not occur. */
char *tu_replace_once(const char *text, const char *what, const char *old, const char *rep);

/* Parses the JSON file at path (caller cJSON_Delete()s); fails when it cannot be read or is
 * not JSON. */
struct cJSON *tu_load_json(const char *path);
/* tu_load_json of tu_source_path(rel), e.g. a golden file under weights/golden/. */
struct cJSON *tu_load_source_json(const char *rel);
/* The number array o[key] as a malloc'd float buffer (never NULL; caller frees); *n (may be
 * NULL) gets its length. Fails naming key when o[key] is not an array. */
float *tu_json_floats(const struct cJSON *o, const char *key, size_t *n);
/* The same as ints (valueint). */
int *tu_json_ints(const struct cJSON *o, const char *key, size_t *n);
/* The number o[key]; fails naming key when it is missing or not a number. */
int tu_json_int(const struct cJSON *o, const char *key);
double tu_json_double(const struct cJSON *o, const char *key);

/* ---- models and data ------------------------------------------------------------------------ */

/* attn_model_create(c, seed); fails with attn's message on error. */
attn_model *tu_model_new(const attn_model_config *c, uint64_t seed);
/* tu_model_new of attn_model_config_default(arch). */
attn_model *tu_model_default(attn_arch arch, uint64_t seed);
/* attn_data_generate(ATTN_SET_TRAIN, n, seed); fails with attn's message on error. */
attn_dataset *tu_train_data(int n, uint64_t seed);
/* attn_trainer_create(m, d, cfg); fails with attn's message on error. */
attn_trainer *tu_trainer_new(attn_model *m, const attn_dataset *d, const attn_train_config *cfg);

/* True in the sanitizer build (ATTN_TEST_SMALL=1 in the environment CTest gives the tests, from
 * the CMake option ATTN_TEST_SMALL, default ATTN_SANITIZE): a test whose cost is the number of
 * sentences or seeds it checks takes fewer of them there, with the same assertions; the release
 * stage runs the full sizes (docs/testing.md). */
bool tu_small(void);

/* Runs a suite with CK_NORMAL output; returns the process exit code (0 iff all passed). */
int tu_run_suite(Suite *s);
/* tu_run_suite inside a fresh folder /tmp/attn_test_<name>_XXXXXX, written to dir (the tests
 * build their paths from it), removed with everything in it afterwards; 1 if it cannot be made. */
int tu_run_suite_in_tmp(Suite *s, char *dir, size_t dir_size, const char *name);
/* Removes path, and everything under it if it is a folder. */
void tu_remove_tree(const char *path);

#endif
