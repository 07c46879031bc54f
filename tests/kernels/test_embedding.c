/* test_embedding.c -- embedding gather / scatter-add and the elementwise add, on both CPU
 * paths (kernel_paths.h; these kernels are plain C on both, the loop guards against a future
 * vectorised version going untested).
 * Evidence: gathered rows equal table rows exactly, finite differences for d_table with
 * repeated ids and for add's d_a, d_b, and the accumulate contract. */
#include "kernel_paths.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#define FD_STEP 1e-2f
#define FD_ATOL 1e-3
#define FD_RTOL 1e-3

typedef struct emb_ctx {
    int n, D;
    const int *ids;
    float *table, *y;
    const double *r;
} emb_ctx;

static double emb_loss(void *v) {
    emb_ctx *c = v;
    attn_embedding_forward(c->y, c->ids, c->table, c->n, c->D);
    double s = 0;
    for (int i = 0; i < c->n * c->D; i++) s += c->r[i] * c->y[i];
    return s;
}

/* n, D, V */
static const int emb_shapes[][3] = {{1, 1, 1}, {5, 3, 2}, {9, 8, 4}, {17, 5, 6}, {33, 2, 3}};

#define N_EMB_SHAPES ((int)(sizeof emb_shapes / sizeof *emb_shapes))

/* loop index = path * N_EMB_SHAPES + shape */
START_TEST(test_embedding) {
    if (!kp_select(_i / N_EMB_SHAPES)) return;
    const int t = _i % N_EMB_SHAPES;
    const int n = emb_shapes[t][0], D = emb_shapes[t][1], V = emb_shapes[t][2];
    attn_rng rng = attn_rng_seed(40 + (uint64_t)t);
    int *ids = malloc((size_t)n * sizeof *ids);
    float *table = malloc((size_t)V * D * 4), *y = malloc((size_t)n * D * 4);
    float *dy = malloc((size_t)n * D * 4), *dt = malloc((size_t)V * D * 4);
    float *old = malloc((size_t)V * D * 4), *grad = malloc((size_t)V * D * 4);
    double *r = malloc((size_t)n * D * sizeof *r);
    ck_assert(ids && table && y && dy && dt && old && grad && r);
    for (int i = 0; i < n; i++) ids[i] = (int)attn_rng_below(&rng, (uint32_t)V); /* repeats */
    tu_fill_uniform(table, (size_t)V * D, -1, 1, &rng);
    tu_fill_uniform(dy, (size_t)n * D, -1, 1, &rng);
    tu_fill_uniform(dt, (size_t)V * D, -1, 1, &rng);
    memcpy(old, dt, (size_t)V * D * 4);
    for (int i = 0; i < n * D; i++) r[i] = dy[i];
    attn_embedding_forward(y, ids, table, n, D);
    for (int i = 0; i < n; i++)
        ck_assert(memcmp(y + (size_t)i * D, table + (size_t)ids[i] * D, (size_t)D * 4) == 0);
    attn_embedding_backward(dt, dy, ids, n, D);
    for (int i = 0; i < V * D; i++) grad[i] = dt[i] - old[i];
    emb_ctx c = {n, D, ids, table, y, r};
    tu_check_grad("embedding d_table", emb_loss, &c, table, grad, (size_t)V * D, FD_STEP, FD_ATOL,
                  FD_RTOL);
    attn_embedding_backward(NULL, dy, ids, n, D);
    free(ids), free(table), free(y), free(dy), free(dt), free(old), free(grad), free(r);
}
END_TEST

typedef struct add_ctx {
    size_t n;
    float *a, *b, *y;
    const double *r;
} add_ctx;

static double add_loss(void *v) {
    add_ctx *c = v;
    attn_add_forward(c->y, c->a, c->b, c->n);
    double s = 0;
    for (size_t i = 0; i < c->n; i++) s += c->r[i] * c->y[i];
    return s;
}

static const size_t add_lengths[] = {1, 7, 17, 33};
#define N_ADD_LENGTHS ((int)(sizeof add_lengths / sizeof *add_lengths))

/* loop index = path * N_ADD_LENGTHS + length */
START_TEST(test_add) {
    if (!kp_select(_i / N_ADD_LENGTHS)) return;
    const int t = _i % N_ADD_LENGTHS;
    const size_t n = add_lengths[t];
    attn_rng rng = attn_rng_seed(60 + (uint64_t)t);
    float *a = malloc(n * 4), *b = malloc(n * 4), *y = malloc(n * 4), *dy = malloc(n * 4);
    float *da = malloc(n * 4), *db = malloc(n * 4), *ga = malloc(n * 4), *gb = malloc(n * 4);
    float *oa = malloc(n * 4), *ob = malloc(n * 4);
    double *r = malloc(n * sizeof *r);
    ck_assert(a && b && y && dy && da && db && ga && gb && oa && ob && r);
    tu_fill_uniform(a, n, -1, 1, &rng);
    tu_fill_uniform(b, n, -1, 1, &rng);
    tu_fill_uniform(dy, n, -1, 1, &rng);
    tu_fill_uniform(da, n, -1, 1, &rng);
    tu_fill_uniform(db, n, -1, 1, &rng);
    memcpy(oa, da, n * 4), memcpy(ob, db, n * 4);
    for (size_t i = 0; i < n; i++) r[i] = dy[i];
    attn_add_forward(y, a, b, n);
    for (size_t i = 0; i < n; i++) ck_assert(y[i] == a[i] + b[i]);
    /* in place (y aliases a), as residual connections use it */
    float *a2 = malloc(n * 4);
    ck_assert_ptr_nonnull(a2);
    memcpy(a2, a, n * 4);
    attn_add_forward(a2, a2, b, n);
    tu_assert_identical("add in place", a2, y, n);
    attn_add_backward(da, db, dy, n);
    for (size_t i = 0; i < n; i++) ga[i] = da[i] - oa[i], gb[i] = db[i] - ob[i];
    add_ctx c = {n, a, b, y, r};
    tu_check_grad("add d_a", add_loss, &c, a, ga, n, FD_STEP, FD_ATOL, FD_RTOL);
    tu_check_grad("add d_b", add_loss, &c, b, gb, n, FD_STEP, FD_ATOL, FD_RTOL);
    attn_add_backward(NULL, db, dy, n);
    attn_add_backward(da, NULL, dy, n);
    free(a), free(b), free(y), free(dy), free(da), free(db), free(ga), free(gb), free(oa);
    free(ob), free(r), free(a2);
}
END_TEST

static Suite *embedding_suite(void) {
    Suite *s = suite_create("embedding");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_embedding, 0, KP_COUNT * N_EMB_SHAPES);
    tcase_add_loop_test(tc, test_add, 0, KP_COUNT * N_ADD_LENGTHS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(embedding_suite());
}
