/* integrated_gradients.c -- the integrated gradients of attn_explain (attn_explain.h): the
 * midpoint points between the [PAD] baseline and the sentence, their forwards and backwards in
 * chunks spread over the pool's threads, and the gradients summed in point order, so the result
 * is the same for every thread count (attn_threads.h). The rest of the explanation: explain.c. */
#include "explain_internal.h"

#include <stdlib.h>
#include <string.h>

/* Integrated gradients from the baseline xb to x0 (both [rows, D]; they differ in the word
 * rows only, from w0): N midpoint points x_k = xb + (k - 1/2)/N (x0 - xb), run through the model
 * in chunks of ATTN_EXPLAIN_IG_CHUNK consecutive points (attn_model_forward_embedded_batch), the
 * chunks spread over the threads (models[w] is thread w's model: m or a replica of it), a wave
 * of n_models chunks at a time; the points' gradients are summed in double in point order, so
 * the result is the same for every thread count. */
typedef struct ig_ctx {
    attn_model **models;
    void (*extra)(void *ctx); /* run as task 0 of the first wave (NULL: none) */
    void *extra_ctx;
    int n_extra; /* 1 while the wave has the extra task */
    const float *x0, *xb;
    size_t nx;
    int N, T, k0;             /* k0: the wave's first point */
    const int *ids, *lengths; /* [chunk, T], [chunk]: every point is the sentence */
    const float *ones;        /* [chunk] d logit = 1 */
    float *x, *d_x, *logits;  /* per wave slot [chunk, nx], [chunk, nx], [chunk] */
    attn_error *errs;         /* per wave slot */
} ig_ctx;

static void ig_chunk(void *vc, int task, int worker) {
    const ig_ctx *c = vc;
    if (task < c->n_extra) {
        c->extra(c->extra_ctx);
        return;
    }
    const int slot = task - c->n_extra;
    const int chunk = ATTN_EXPLAIN_IG_CHUNK, k0 = c->k0 + slot * chunk;
    const int nb = c->N - k0 < chunk ? c->N - k0 : chunk;
    attn_model *m = c->models[worker];
    attn_error *err = &c->errs[slot];
    float *x = c->x + (size_t)slot * chunk * c->nx, *d_x = c->d_x + (size_t)slot * chunk * c->nx;
    err->status = ATTN_OK;
    if (nb <= 0) return;
    for (int j = 0; j < nb; j++) {
        const float a = ((float)(k0 + j + 1) - 0.5f) / (float)c->N;
        float *xj = x + j * c->nx;
        for (size_t r = 0; r < c->nx; r++) xj[r] = c->xb[r] + a * (c->x0[r] - c->xb[r]);
    }
    const attn_batch bb = {.B = nb, .T = c->T, .ids = c->ids, .lengths = c->lengths};
    attn_status st =
        attn_model_forward_embedded_batch(m, x, nb, c->T, c->logits + (size_t)slot * chunk, err);
    attn_model_zero_grad(m);
    if (st == ATTN_OK) st = attn_model_backward(m, &bb, c->ones, err);
    for (int j = 0; st == ATTN_OK && j < nb; j++)
        st = attn_model_input_grad(m, j, d_x + j * c->nx, err);
    err->status = st;
}

/* sum[r] += the wave's points' d_x[r] in point order, for r in piece `task` of the rows (each
 * element's sum is the same whoever adds it). */
typedef struct sum_ctx {
    double *sum;
    const float *d_x; /* [n_points, nx] */
    size_t nx;
    int n_points, n_pieces;
} sum_ctx;

static void sum_piece(void *vc, int task, int worker) {
    (void)worker;
    const sum_ctx *c = vc;
    const size_t per = (c->nx + (size_t)c->n_pieces - 1) / (size_t)c->n_pieces;
    const size_t lo = (size_t)task * per < c->nx ? (size_t)task * per : c->nx;
    const size_t hi = lo + per < c->nx ? lo + per : c->nx;
    for (int k = 0; k < c->n_points; k++) { /* point order */
        const float *d_x = c->d_x + (size_t)k * c->nx;
        for (size_t r = lo; r < hi; r++) c->sum[r] += d_x[r];
    }
}

/* Integrated-gradient chunks per wave (one pool run each, then the wave's sum): one thread takes
 * one chunk at a time; several take every chunk in one wave when the points' inputs and input
 * gradients fit in IG_ONE_WAVE_BYTES (fewer runs to wait for), else one chunk per thread. */
#define IG_ONE_WAVE_BYTES (8u << 20)
int attn_explain_ig_wave(int n_chunks, int threads, size_t nx) {
    if (threads <= 1) return 1;
    if (2.0 * n_chunks * ATTN_EXPLAIN_IG_CHUNK * (double)nx * sizeof(float) <= IG_ONE_WAVE_BYTES)
        return n_chunks;
    return threads < n_chunks ? threads : n_chunks;
}

attn_status attn_explain_integrated_gradients(attn_model **models, attn_pool *pool,
                                              const attn_batch *b, const float *x0, const float *xb,
                                              int rows, int D, int w0, void (*extra)(void *),
                                              void *extra_ctx, attn_explanation *e,
                                              attn_error *err) {
    const int N = e->ig_steps, chunk = ATTN_EXPLAIN_IG_CHUNK;
    const int n_chunks = (N + chunk - 1) / chunk, threads = attn_pool_threads(pool);
    const int W = attn_explain_ig_wave(n_chunks, threads, (size_t)rows * D); /* chunks per wave */
    const size_t nx = (size_t)rows * D, T = (size_t)b->T, per = (size_t)W * chunk;
    ig_ctx c = {models,
                extra,
                extra_ctx,
                extra ? 1 : 0,
                x0,
                xb,
                nx,
                N,
                b->T,
                0,
                malloc((size_t)chunk * T * sizeof(int)),
                malloc(chunk * sizeof(int)),
                malloc(chunk * sizeof(float)),
                malloc(per * nx * sizeof(float)),
                malloc(per * nx * sizeof(float)),
                malloc(per * sizeof(float)),
                calloc((size_t)W, sizeof(attn_error))};
    int *ids = (int *)c.ids, *lengths = (int *)c.lengths;
    float *ones = (float *)c.ones;
    double *sum = calloc(nx, sizeof(double));
    attn_status st = ids && lengths && ones && c.x && c.d_x && c.logits && c.errs && sum
                         ? ATTN_OK
                         : attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    for (int j = 0; st == ATTN_OK && j < chunk; j++) {
        ones[j] = 1.0f;
        lengths[j] = b->T;
        memcpy(ids + j * T, b->ids, T * sizeof(int)); /* only pick embedding gradient rows */
    }
    for (c.k0 = 0; st == ATTN_OK && c.k0 < N; c.k0 += W * chunk) {
        const int slots = (N - c.k0 + chunk - 1) / chunk < W ? (N - c.k0 + chunk - 1) / chunk : W;
        attn_pool_run(pool, c.n_extra + slots, ig_chunk, &c);
        c.n_extra = 0;
        for (int s = 0; st == ATTN_OK && s < slots; s++)
            if (c.errs[s].status != ATTN_OK) {
                if (err) *err = c.errs[s];
                st = c.errs[s].status;
            }
        sum_ctx sc = {sum, c.d_x, nx, N - c.k0 < W * chunk ? N - c.k0 : W * chunk, threads};
        if (st == ATTN_OK) attn_pool_run(pool, sc.n_pieces, sum_piece, &sc);
    }
    for (int i = 0; st == ATTN_OK && i < e->n_words; i++) {
        double s = 0.0;
        for (int j = 0; j < D; j++) {
            const size_t r = (size_t)(w0 + i) * D + j;
            s += ((double)x0[r] - xb[r]) * (sum[r] / N);
        }
        e->integrated_gradients[i] = (float)s;
    }
    free(ids);
    free(lengths);
    free(ones);
    free(c.x);
    free(c.d_x);
    free(c.logits);
    free(c.errs);
    free(sum);
    return st;
}
