/* test_recurrent_cells.c -- the recurrent models' fused elementwise steps (LSTM, GRU) against
 * the separate kernels they replaced, bit for bit, on every CPU path (kernel_paths.h), and the
 * rounding argument that lets the cells add the biases after the products.
 *
 * attn_lstm_cell_forward (one vector pass per row where H is a multiple of the sigmoid's block,
 * with SLEEF's 16-lane functions on an AVX-512F CPU) must give the bits of what lstm.c did
 * before: hw and xw with their biases pre-filled (PyTorch's addmm), p = hw + xw, sigmoid / tanh
 * per H-chunk with the 8-lane kernels, c = (f*c_prev) + (i*g), h = o*tanh(c). And the
 * recurrent core's products without the bias, followed by `+ bias`, must equal the pre-filled
 * products for the shapes the models use (K = E = 16 and K = H = 32 inputs, 32 to 128 outputs,
 * 1 to 256*33 rows), which is what makes the biases movable into the cells. */
#include "kernel_paths.h"
#include "kernels_internal.h"
#include "test_util.h"

#include "attn.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Index of the first element whose bits differ, n if none. Two NaNs count as equal whatever
 * their sign and payload: when both operands of an x86 multiply or add are NaN the result is the
 * first operand's, and which operand C code puts first is the compiler's choice (the -O0 build
 * of the reference above orders some differently from -O2); the inputs hold two NaNs (the
 * special 0x7fc00000 and inf * 0 = 0xffc00000). Every other value must match bit for bit. */
static size_t first_difference(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0 && !(isnan(a[i]) && isnan(b[i]))) return i;
    return n;
}

/* Fills x[n] with values in [-lo, lo], every 13th a special value (zeros, infinities, NaN,
 * large, tiny). */
static void fill(float *x, size_t n, float lo, attn_rng *rng) {
    static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
                                       0x7fc00000u, 0x42c80000u, 0xc2c80000u, 0x00000001u,
                                       0x3f800000u, 0xbf800000u, 0x41100000u, 0xc1100000u};
    for (size_t i = 0; i < n; i++)
        x[i] = i % 13 == 5
                   ? attn_f32_from_bits(special[(i / 13) % (sizeof special / sizeof *special)])
                   : attn_rng_uniform_range(rng, -lo, lo);
}

/* What lstm.c computed before the fused kernel: biases pre-added (the pre-filled products),
 * p = hw + xw, the separate sigmoid/tanh kernels per H-chunk on the path's 8-lane functions,
 * c = (f*c_prev) + (i*g), h = o*tanh(c). */
static void lstm_reference(const attn_lstm_cell_args *a) {
    const size_t H = (size_t)a->H, G = 4 * H;
    float *p = malloc(G * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (int r = 0; r < a->n; r++) {
        const float *hw = a->hw + (size_t)r * G, *xw = a->xw + (size_t)r * G;
        float *g = a->gates + (size_t)r * a->gates_stride,
              *tc = a->tc + (size_t)r * a->gates_stride;
        float *c = a->c + (size_t)r * H, *h = a->h + (size_t)r * H;
        const float *c_prev = a->c_prev + (size_t)r * H;
        for (size_t k = 0; k < G; k++) {
            float u = hw[k], v = xw[k];
            if (a->b_hh) u = u + a->b_hh[k];
            if (a->b_ih) v = v + a->b_ih[k];
            p[k] = u + v;
        }
        attn_sigmoid_forward(g, p, H);
        attn_sigmoid_forward(g + H, p + H, H);
        attn_tanh_forward(g + 2 * H, p + 2 * H, H);
        attn_sigmoid_forward(g + 3 * H, p + 3 * H, H);
        for (size_t j = 0; j < H; j++) {
            float fc = g[H + j] * c_prev[j];
            float ig = g[j] * g[2 * H + j];
            c[j] = fc + ig;
        }
        attn_tanh_forward(tc, c, H);
        for (size_t j = 0; j < H; j++) h[j] = g[3 * H + j] * tc[j];
    }
    free(p);
}

static const int cell_H[] = {8, 16, 24, 32, 48, 64, 96};
#define N_CELL_H (int)(sizeof cell_H / sizeof *cell_H)

/* loop index = path * N_CELL_H + H index: every bias combination and row count. */
START_TEST(test_lstm_cell_matches_separate_kernels) {
    if (!kp_select(_i / N_CELL_H)) return;
    const int H = cell_H[_i % N_CELL_H];
    const size_t G = 4 * (size_t)H, S = 5 * (size_t)H + 3; /* saved rows with a gap */
    const int rows[] = {1, 5, 37};
    attn_rng rng = attn_rng_seed(0x15c3u + (uint64_t)H);
    size_t checked = 0;
    for (size_t ri = 0; ri < 3; ri++)
        for (int bias = 0; bias < 4; bias++) {
            const int n = rows[ri];
            float *hw = malloc((size_t)n * G * sizeof *hw),
                  *hw2 = malloc((size_t)n * G * sizeof *hw);
            float *xw = malloc((size_t)n * G * sizeof *xw), *b = malloc(2 * G * sizeof *b);
            float *cp = malloc((size_t)n * H * sizeof *cp);
            float *out[2][3];
            for (int k = 0; k < 2; k++) {
                out[k][0] = malloc((size_t)n * S * sizeof(float));
                out[k][1] = malloc((size_t)n * H * sizeof(float));
                out[k][2] = malloc((size_t)n * H * sizeof(float));
                ck_assert(out[k][0] && out[k][1] && out[k][2]);
                memset(out[k][0], 0, (size_t)n * S * sizeof(float));
            }
            ck_assert(hw && hw2 && xw && b && cp);
            fill(hw, (size_t)n * G, 8.0f, &rng);
            fill(xw, (size_t)n * G, 8.0f, &rng);
            fill(b, 2 * G, 1.0f, &rng);
            fill(cp, (size_t)n * H, 4.0f, &rng);
            memcpy(hw2, hw, (size_t)n * G * sizeof *hw);
            attn_lstm_cell_args a = {.n = n,
                                     .H = H,
                                     .hw = hw,
                                     .xw = xw,
                                     .b_hh = bias & 1 ? b : NULL,
                                     .b_ih = bias & 2 ? b + G : NULL,
                                     .c_prev = cp,
                                     .gates = out[0][0],
                                     .tc = out[0][0] + G,
                                     .gates_stride = S,
                                     .c = out[0][1],
                                     .h = out[0][2]};
            /* the reference on the path's own (8-lane) functions, as before this kernel */
            attn_cpu_allow_avx512f(false);
            lstm_reference(&a);
            /* the kernel, with and without the 16-lane functions */
            for (int wide = 0; wide < 2; wide++) {
                attn_cpu_allow_avx512f(wide == 1);
                attn_lstm_cell_args k = a;
                memcpy(hw2, hw, (size_t)n * G * sizeof *hw);
                k.hw = hw2;
                k.gates = out[1][0];
                k.tc = out[1][0] + G;
                k.c = out[1][1];
                k.h = out[1][2];
                memset(out[1][0], 0, (size_t)n * S * sizeof(float));
                attn_lstm_cell_forward(&k);
                for (int r = 0; r < n; r++) {
                    size_t d = first_difference(out[1][0] + (size_t)r * S,
                                                out[0][0] + (size_t)r * S, 5 * (size_t)H);
                    ck_assert_msg(d == 5 * (size_t)H,
                                  "%s H %d n %d bias %d wide %d: row %d saved[%zu] differs",
                                  attn_cpu_path(), H, n, bias, wide, r, d);
                }
                ck_assert_msg(first_difference(out[1][1], out[0][1], (size_t)n * H) ==
                                  (size_t)n * H,
                              "H %d n %d bias %d wide %d: c differs", H, n, bias, wide);
                ck_assert_msg(first_difference(out[1][2], out[0][2], (size_t)n * H) ==
                                  (size_t)n * H,
                              "H %d n %d bias %d wide %d: h differs", H, n, bias, wide);
                checked++;
            }
            attn_cpu_allow_avx512f(true);
            for (int k = 0; k < 2; k++) free(out[k][0]), free(out[k][1]), free(out[k][2]);
            free(hw), free(hw2), free(xw), free(b), free(cp);
        }
    ck_assert_uint_eq(checked, 3 * 4 * 2); /* row counts x bias combinations x widths */
}
END_TEST

/* gru.c's separate-kernel step (the reference of the fused GRU path). */
static void gru_reference(const attn_gru_cell_args *a) {
    const size_t H = (size_t)a->H, G = 3 * H;
    float *p = malloc(G * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (int r = 0; r < a->n; r++) {
        const float *hw = a->hw + (size_t)r * G, *xw = a->xw + (size_t)r * G;
        const float *hp = a->h_prev + (size_t)r * H;
        float *sv = a->saved + (size_t)r * a->saved_stride, *h = a->h + (size_t)r * H;
        for (size_t k = 0; k < G; k++) p[k] = a->b_hh ? hw[k] + a->b_hh[k] : hw[k];
        for (size_t k = 0; k < 2 * H; k++) p[k] = p[k] + (a->b_ih ? xw[k] + a->b_ih[k] : xw[k]);
        attn_sigmoid_forward(sv, p, H);
        attn_sigmoid_forward(sv + H, p + H, H);
        memcpy(sv + 3 * H, p + 2 * H, H * sizeof *p);
        for (size_t j = 0; j < H; j++) {
            const float rh = sv[3 * H + j] * sv[j];
            const float x = a->b_ih ? xw[2 * H + j] + a->b_ih[2 * H + j] : xw[2 * H + j];
            p[2 * H + j] = x + rh;
        }
        attn_tanh_forward(sv + 2 * H, p + 2 * H, H);
        for (size_t j = 0; j < H; j++) {
            const float d = hp[j] - sv[2 * H + j];
            const float dz = d * sv[H + j];
            h[j] = dz + sv[2 * H + j];
        }
    }
    free(p);
}

/* loop index = path * N_CELL_H + H index: the fused GRU step (where there is one: the vector
 * paths with H a multiple of the sigmoid's block; asserted) against gru_reference. */
START_TEST(test_gru_cell_matches_separate_kernels) {
    if (!kp_select(_i / N_CELL_H)) return;
    const int H = cell_H[_i % N_CELL_H];
    const size_t G = 3 * (size_t)H, S = 4 * (size_t)H + 5;
    const bool expect_fused = !kp_scalar() && H % (attn_cpu_aten_avx512() ? 32 : 16) == 0;
    attn_rng rng = attn_rng_seed(0x6e0u + (uint64_t)H);
    const int rows[] = {1, 5, 37};
    for (size_t ri = 0; ri < 3; ri++)
        for (int bias = 0; bias < 4; bias++) {
            const int n = rows[ri];
            float *hw = malloc((size_t)n * G * sizeof *hw),
                  *xw = malloc((size_t)n * G * sizeof *xw);
            float *b = malloc(2 * G * sizeof *b), *hp = malloc((size_t)n * H * sizeof *hp);
            float *sv[2], *h[2];
            for (int k = 0; k < 2; k++) {
                sv[k] = calloc((size_t)n * S, sizeof(float));
                h[k] = calloc((size_t)n * H, sizeof(float));
                ck_assert(sv[k] && h[k]);
            }
            ck_assert(hw && xw && b && hp);
            fill(hw, (size_t)n * G, 8.0f, &rng);
            fill(xw, (size_t)n * G, 8.0f, &rng);
            fill(b, 2 * G, 1.0f, &rng);
            fill(hp, (size_t)n * H, 1.0f, &rng);
            attn_gru_cell_args a = {.n = n,
                                    .H = H,
                                    .hw = hw,
                                    .xw = xw,
                                    .b_hh = bias & 1 ? b : NULL,
                                    .b_ih = bias & 2 ? b + G : NULL,
                                    .h_prev = hp,
                                    .saved = sv[0],
                                    .saved_stride = S,
                                    .h = h[0]};
            attn_cpu_allow_avx512f(false);
            gru_reference(&a);
            for (int wide = 0; wide < 2; wide++) {
                attn_cpu_allow_avx512f(wide == 1);
                attn_gru_cell_args k = a;
                k.saved = sv[1];
                k.h = h[1];
                memset(sv[1], 0, (size_t)n * S * sizeof(float));
                const bool fused = attn_gru_cell_forward_fused(&k);
                ck_assert_int_eq(fused, expect_fused);
                if (!fused) continue;
                for (int r = 0; r < n; r++) {
                    const size_t d = first_difference(sv[1] + (size_t)r * S, sv[0] + (size_t)r * S,
                                                      4 * (size_t)H);
                    ck_assert_msg(d == 4 * (size_t)H,
                                  "%s H %d n %d bias %d wide %d: row %d saved[%zu] differs",
                                  attn_cpu_path(), H, n, bias, wide, r, d);
                }
                ck_assert_msg(first_difference(h[1], h[0], (size_t)n * H) == (size_t)n * H,
                              "H %d n %d bias %d wide %d: h differs", H, n, bias, wide);
            }
            attn_cpu_allow_avx512f(true);
            for (int k = 0; k < 2; k++) free(sv[k]), free(h[k]);
            free(hw), free(xw), free(b), free(hp);
        }
}
END_TEST

static const int rnn_H[] = {1, 5, 8, 20, 32, 33, 64};
#define N_RNN_H (int)(sizeof rnn_H / sizeof *rnn_H)

/* loop index = path * N_RNN_H + H index: attn_rnn_cell_forward (one pass per row, tails at any
 * H) against the sum and one attn_tanh_forward call over all rows on the 8-lane functions (what
 * rnn.c did before), every bias combination, nothing written past the rows. */
START_TEST(test_rnn_cell_matches_separate_kernels) {
    if (!kp_select(_i / N_RNN_H)) return;
    const int H = rnn_H[_i % N_RNN_H];
    attn_rng rng = attn_rng_seed(0x2a0u + (uint64_t)H);
    const int rows[] = {1, 3, 37};
    const float sentinel = attn_f32_from_bits(0x7fc0deadu);
    for (size_t ri = 0; ri < 3; ri++)
        for (int bias = 0; bias < 4; bias++) {
            const int n = rows[ri];
            const size_t nH = (size_t)n * H;
            float *hw = malloc(nH * sizeof *hw), *hw2 = malloc(nH * sizeof *hw);
            float *xw = malloc(nH * sizeof *xw), *b = malloc(2 * (size_t)H * sizeof *b);
            float *want = malloc(nH * sizeof *want), *got = malloc((nH + 1) * sizeof *got);
            ck_assert(hw && hw2 && xw && b && want && got);
            fill(hw, nH, 6.0f, &rng);
            fill(xw, nH, 6.0f, &rng);
            fill(b, 2 * (size_t)H, 1.0f, &rng);
            const float *b_hh = bias & 1 ? b : NULL, *b_ih = bias & 2 ? b + H : NULL;
            attn_cpu_allow_avx512f(false);
            for (size_t r = 0; r < nH; r += (size_t)H)
                for (size_t j = 0; j < (size_t)H; j++) {
                    float u = hw[r + j], v = xw[r + j];
                    if (b_hh) u = u + b_hh[j];
                    if (b_ih) v = v + b_ih[j];
                    hw2[r + j] = u + v;
                }
            attn_tanh_forward(want, hw2, nH);
            for (int wide = 0; wide < 2; wide++) {
                attn_cpu_allow_avx512f(wide == 1);
                memcpy(hw2, hw, nH * sizeof *hw);
                got[nH] = sentinel;
                attn_rnn_cell_forward(got, hw2, xw, b_hh, b_ih, n, H);
                const size_t d = first_difference(got, want, nH);
                ck_assert_msg(d == nH, "%s H %d n %d bias %d wide %d: h[%zu] differs",
                              attn_cpu_path(), H, n, bias, wide, d);
                ck_assert(memcmp(&got[nH], &sentinel, sizeof sentinel) == 0);
            }
            attn_cpu_allow_avx512f(true);
            free(hw), free(hw2), free(xw), free(b), free(want), free(got);
        }
}
END_TEST

/* The bias after a single-k-block product: attn_matmul_nt (beta 0) and then `y + bias` equals
 * attn_linear_forward's pre-filled product bit for bit at the recurrent models' shapes: the
 * input projection (K = E = 16, all T*B rows) and the hh product (K = H = 32, the step's rows),
 * G*H = 32, 96, 128 outputs. And it must NOT hold for a K beyond the k-block, so the check can
 * fail: K = 400 > 320 (Haswell's k-block) differs somewhere. */
START_TEST(test_bias_after_product) {
    attn_rng rng = attn_rng_seed(0xb1a5u);
    const int Ks[] = {16, 32, 400};
    const int Ns[] = {32, 96, 128};
    const int Ms[] = {1, 7, 37, 256, 256 * 9, 256 * 33 + 160};
    for (size_t ki = 0; ki < 3; ki++) {
        size_t differ = 0, total = 0;
        for (size_t ni = 0; ni < 3; ni++)
            for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++) {
                const int K = Ks[ki], N = Ns[ni], M = Ms[mi];
                float *x = malloc((size_t)M * K * sizeof *x),
                      *w = malloc((size_t)N * K * sizeof *w);
                float *bias = malloc((size_t)N * sizeof *bias);
                float *y0 = malloc((size_t)M * N * sizeof *y0),
                      *y1 = malloc((size_t)M * N * sizeof *y1);
                ck_assert(x && w && bias && y0 && y1);
                for (size_t i = 0; i < (size_t)M * K; i++)
                    x[i] = attn_rng_uniform_range(&rng, -3, 3);
                for (size_t i = 0; i < (size_t)N * K; i++)
                    w[i] = attn_rng_uniform_range(&rng, -0.25f, 0.25f);
                for (int i = 0; i < N; i++) bias[i] = attn_rng_uniform_range(&rng, -0.25f, 0.25f);
                attn_linear_forward(y0, x, w, bias, M, K, N, ATTN_OP_INPUT);
                attn_matmul_nt(y1, x, w, M, N, K, 0.0f, ATTN_OP_INPUT, ATTN_PASS_FORWARD);
                for (size_t r = 0; r < (size_t)M; r++)
                    for (size_t j = 0; j < (size_t)N; j++) y1[r * N + j] = y1[r * N + j] + bias[j];
                const size_t n = (size_t)M * N;
                const size_t d = first_difference(y1, y0, n);
                if (K <= ATTN_LINEAR_BIAS_AFTER_MAX_IN)
                    ck_assert_msg(d == n, "M %d N %d K %d: element %zu differs", M, N, K, d);
                for (size_t i = 0; i < n; i++) differ += memcmp(&y0[i], &y1[i], sizeof *y0) != 0;
                total += n;
                free(x), free(w), free(bias), free(y0), free(y1);
            }
        printf("  bias after the product, K = %d: %zu of %zu outputs differ from the pre-fill\n",
               Ks[ki], differ, total);
        if (Ks[ki] > 320 && !attn_sgemm_naive) ck_assert_uint_gt(differ, 0);
    }
}
END_TEST

static Suite *recurrent_cells_suite(void) {
    Suite *s = suite_create("recurrent_cells");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_lstm_cell_matches_separate_kernels, 0, KP_COUNT * N_CELL_H);
    tcase_add_loop_test(tc, test_gru_cell_matches_separate_kernels, 0, KP_COUNT * N_CELL_H);
    tcase_add_loop_test(tc, test_rnn_cell_matches_separate_kernels, 0, KP_COUNT * N_RNN_H);
    tcase_add_test(tc, test_bias_after_product);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(recurrent_cells_suite());
}
