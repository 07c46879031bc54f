/* attn_kernels.h -- the op layer: every op a _forward/_backward pair over plain float* and int
 * dims. bench/ and the write-up's snippets call these directly.
 *
 * Conventions (see include/attn_model.h for the dimension letters):
 *   - Forward:  attn_<op>_forward(out..., saved..., in..., weights..., dims...)
 *   - Backward: attn_<op>_backward(d_in..., d_weights..., d_out, saved/in..., weights..., dims...)
 *     with the d-arguments in the order of the forward arguments they belong to.
 *   - Every backward ACCUMULATES (+=) into its d_ outputs; the caller zeroes them first.
 *     Any d_ pointer may be NULL: that gradient is not wanted.
 *   - Kernels do not allocate, do not fail and return no status. Inputs are validated at the
 *     model/API boundary; ATTN_ASSERT catches programmer errors in debug builds.
 *   - Exactness: on the "avx2" path (see CPU dispatch below) forward kernels follow PyTorch
 *     1.13's CPU arithmetic on an AVX2 machine (docs/numerics.md) so that batch-1
 *     logits are bit-identical; the "scalar" path is plain C and close to it (the bounds are
 *     in tests/kernels).
 */
#ifndef ATTN_KERNELS_H
#define ATTN_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sgemm: the one wrapper every matrix product goes through (src/kernels/sgemm.c) ------ */

/* Call-site tags for the FLOP accountant. Backward tags count the products of backward. */
typedef enum attn_op {
    ATTN_OP_OTHER = 0,
    ATTN_OP_QKV,       /* Transformer q,k,v projection */
    ATTN_OP_QK,        /* scores Q.K^T (n x n) */
    ATTN_OP_AV,        /* attention-weighted values A.V (n x n) */
    ATTN_OP_OUT_PROJ,  /* attention output projection */
    ATTN_OP_FFN_UP,    /* linear1 */
    ATTN_OP_FFN_DOWN,  /* linear2 */
    ATTN_OP_INPUT,     /* RNN/LSTM input projection x.W_ih^T for all steps */
    ATTN_OP_RECURRENT, /* RNN/LSTM h.W_hh^T per step */
    ATTN_OP_HEAD,      /* classifier head */
    ATTN_OP_COUNT
} attn_op;

const char *attn_op_name(attn_op op); /* "qkv", "qk", ... */

/* Multiply-adds per tag, forward and backward, plus call counts. */
typedef struct attn_flop_counts {
    uint64_t fwd_madds[ATTN_OP_COUNT];
    uint64_t bwd_madds[ATTN_OP_COUNT];
    uint64_t calls[ATTN_OP_COUNT];
} attn_flop_counts;

/* Routes counts of the calling thread's sgemm calls into *c (NULL stops counting). The
 * pointer is thread-local: counting in one thread never touches another's counts. */
void attn_flops_set_counter(attn_flop_counts *c);
/* The calling thread's counter (NULL when not counting). */
attn_flop_counts *attn_flops_get_counter(void);

/* Which counter of the accountant a product's multiply-adds go to. */
typedef enum attn_pass { ATTN_PASS_FORWARD = 0, ATTN_PASS_BACKWARD = 1 } attn_pass;

/* Every product has one argument order, as every op: the output first, then the inputs, the
 * dims (rows before columns), the options, and last the accountant's tag and pass.
 * c[m,n] = alpha * op(a)[m,k] . op(b)[k,n] + beta * c[m,n]; row-major, contiguous: a is [m,k]
 * (or [k,m] if trans_a), b is [k,n] (or [n,k] if trans_b). Leading dimensions are derived here
 * and nowhere else. A bias enters as PyTorch's addmm adds it: prefilled into c, beta = 1. */
void attn_sgemm(float *c, const float *a, const float *b, int m, int n, int k, bool trans_a,
                bool trans_b, float alpha, float beta, attn_op tag, attn_pass pass);

/* Named products on attn_sgemm (alpha 1), the way callers should spell them; all row-major and
 * contiguous, c [m,n] = op(a) . op(b) + beta * c (beta 0 overwrites, 1 accumulates):
 *   nn: a [m,k] . b [k,n]     nt: a [m,k] . b[n,k]^T     tn: a[k,m]^T . b [k,n] */
void attn_matmul_nn(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                    attn_op tag, attn_pass pass);
void attn_matmul_nt(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                    attn_op tag, attn_pass pass);
void attn_matmul_tn(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                    attn_op tag, attn_pass pass);

/* The BLAS thread count in force (attn_set_num_threads; 1 in the ATTN_NAIVE_GEMM build). */
int attn_num_threads(void);
/* How the linked OpenBLAS runs its threads: "openmp" (Debian's libopenblas0-openmp, which
 * CMakeLists.txt prefers: no lock around its buffers), "pthread", "serial"; "naive" in the
 * ATTN_NAIVE_GEMM build. The same kernels and bits either way; only the speed of products
 * issued from several threads at once differs. Static string. */
const char *attn_blas_threading(void);

/* One batch entry of a batched product (torch.bmm) under ATen's size rule (PyTorch 1.13,
 * aten/src/ATen/native/LinearAlgebra.cpp, bmm_out_or_baddbmm_): a bmm whose
 * contraction * rows * cols is below ATTN_BMM_LOOP_BELOW is not sent to BLAS but computed by a
 * plain loop, per element a float sum from 0 of the rounded products in k order (no FMA);
 * from there on each batch entry is one sgemm. Measured bit for bit against torch.bmm on this
 * build. attn_bmm_is_loop says which, for the shape of the product PYTORCH computes; callers
 * pass it as `loop` (a caller may compute fewer rows than PyTorch, e.g. only the [CLS] query:
 * rows are independent in both paths, so they are bit-identical to those of the whole).
 * Otherwise as attn_matmul_nn/nt/tn: beta 0 overwrites, 1 accumulates (c + the loop's sum);
 * the multiply-adds are counted under tag either way. */
#define ATTN_BMM_LOOP_BELOW 400
bool attn_bmm_is_loop(int rows, int cols, int contraction);
void attn_bmm_nn(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                 bool loop, attn_op tag, attn_pass pass);
void attn_bmm_nt(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                 bool loop, attn_op tag, attn_pass pass);
void attn_bmm_tn(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                 bool loop, attn_op tag, attn_pass pass);

/* OpenBLAS's kernel set picked at run time for this CPU ("SkylakeX", "Haswell", "Zen", ...;
 * openblas_get_corename), "naive" in the ATTN_NAIVE_GEMM build. GEMM rounding, and so
 * bit-identity with goldens made elsewhere, depends on it. Static string. */
const char *attn_blas_corename(void);
/* The kernel set OpenBLAS should have picked, when it did not: OpenBLAS 0.3.21 (Debian 12) falls
 * back to its SSE3 "Prescott" kernels on a CPU it does not recognise (seen on virtualised Intel
 * Xeons with AVX-512), 2-3x slower and rounding unlike every other machine. Returns "SkylakeX"
 * (AVX-512 F/BW/DQ/VL) or "Haswell" (AVX2 + FMA) when the running core is "Prescott", the CPU has
 * those instructions and OPENBLAS_CORETYPE is unset; else NULL. Native kernels
 * (attn_kernels_select, include/attn_kernelset.h) switch to it in-process; pinned kernels run
 * Haswell's on every AVX2+FMA CPU anyway. */
const char *attn_blas_preferred_core(void);

/* Linear layer, PyTorch nn.Linear: y[n,out] = x[n,in] . w[out,in]^T + bias[out].
 * Bias: y is pre-filled with bias, then sgemm with beta = 1 (bit-identical to PyTorch's addmm).
 * bias may be NULL. Backward: d_x += d_y.w, d_w += d_y^T.x, d_bias += sum over rows of d_y. */
void attn_linear_forward(float *y, const float *x, const float *w, const float *bias, int n, int in,
                         int out, attn_op tag);
void attn_linear_backward(float *d_x, float *d_w, float *d_bias, const float *d_y, const float *x,
                          const float *w, int n, int in, int out, attn_op tag);

/* The linear fused with what follows it, the same bits as attn_linear_forward and then the plain
 * op: y = res + linear(x) (a residual; y aliases neither res nor x), and lin = linear(x), act =
 * relu(lin). Up to ATTN_LINEAR_BIAS_AFTER_MAX_IN inputs the bias is added after the product
 * (one k-block of the BLAS: the same single rounding as the pre-filled addmm) in the pass that
 * does the add or the relu, which saves the pre-fill and a pass; above, the plain calls. */
#define ATTN_LINEAR_BIAS_AFTER_MAX_IN 128
void attn_linear_residual_forward(float *y, const float *x, const float *w, const float *bias,
                                  const float *res, int n, int in, int out, attn_op tag);
void attn_linear_relu_forward(float *lin, float *act, const float *x, const float *w,
                              const float *bias, int n, int in, int out, attn_op tag);

/* ---- elementwise activations (src/kernels/activations.c) ---------------------------------- */

/* y = tanh(x) (avx2: Sleef_tanhf8_u10 on blocks of 8, zero-padded tail; scalar: tanhf). Saves y.
 * Backward: d_x += d_y * (1 - y^2). */
void attn_tanh_forward(float *y, const float *x, size_t n);
void attn_tanh_backward(float *d_x, const float *d_y, const float *y, size_t n);

/* y = 1 / (1 + exp(-x)) (avx2: PyTorch's Sleef exp + AVX division on blocks of 16, glibc tail;
 * scalar: glibc expf). Saves y. Backward: d_x += d_y * y * (1 - y). */
void attn_sigmoid_forward(float *y, const float *x, size_t n);
void attn_sigmoid_backward(float *d_x, const float *d_y, const float *y, size_t n);

/* One LSTM step's elementwise work over n rows (nn.LSTM's cell after the two products):
 * p = (hw + b_hh) + (xw + b_ih) per gate row i, f, g, o (a NULL bias is already in its product:
 * then p = hw + xw); i, f, o = sigmoid, g = tanh, each on its own H-float chunk as
 * attn_sigmoid_forward / attn_tanh_forward would; c = (f*c_prev) + (i*g) with two rounded
 * products; h = o*tanh(c). Writes gates [4H] and tc [H] (= tanh(c)) of row r at r *
 * gates_stride, c and h [n, H]; hw [n, 4H] is scratch (may be overwritten). With H a multiple
 * of the sigmoid's block the vector paths do all of it in one pass per row while the row is in
 * cache; otherwise (and on the scalar path) the separate kernels run: the same bits either way
 * (tests/kernels/test_activations.c). */
typedef struct attn_lstm_cell_args {
    int n, H;
    float *hw;                /* [n, 4H] h.W_hh^T (+ b_hh if b_hh is NULL); scratch */
    const float *xw;          /* [n, 4H] x.W_ih^T (+ b_ih if b_ih is NULL) */
    const float *b_hh, *b_ih; /* [4H] or NULL */
    const float *c_prev;      /* [n, H] */
    float *gates, *tc;        /* rows of gates_stride floats: [4H] i, f, g, o; [H] tanh(c) */
    size_t gates_stride;
    float *c, *h; /* [n, H] */
} attn_lstm_cell_args;
void attn_lstm_cell_forward(const attn_lstm_cell_args *a);

/* One GRU step's elementwise work over n rows in one vector pass per row (nn.GRU's cell after
 * the two products, gru.c's arithmetic): with hw' = hw + b_hh and xw' = xw + b_ih (a NULL bias
 * is already in its product), r = sigmoid(hw'_r + xw'_r), z = sigmoid(hw'_z + xw'_z),
 * n = tanh(xw'_n + hw'_n*r), h = ((h_prev - n)*z) + n; writes saved row r (at r * saved_stride)
 * = r, z, n, hw'_n [4H] and h [n, H]. Returns false, writing nothing, where there is no fused
 * path (the scalar path, or H not a multiple of the sigmoid's block): gru.c then runs the
 * separate kernels, which give the same bits (tests/kernels/test_recurrent_cells.c). */
typedef struct attn_gru_cell_args {
    int n, H;
    const float *hw, *xw;     /* [n, 3H] */
    const float *b_hh, *b_ih; /* [3H] or NULL */
    const float *h_prev;      /* [n, H] */
    float *saved;             /* rows of saved_stride floats */
    size_t saved_stride;
    float *h; /* [n, H] */
} attn_gru_cell_args;
bool attn_gru_cell_forward_fused(const attn_gru_cell_args *a);

/* One Elman RNN step over n rows of H: h = tanh((hw + b_hh) + (xw + b_ih)) (a NULL bias is already
 * in its product: then hw + xw), tanh as attn_tanh_forward; hw [n, H] is scratch. One pass per
 * row on the vector paths, the sum and then attn_tanh_forward on the scalar one: the same bits
 * (tests/kernels/test_recurrent_cells.c). */
void attn_rnn_cell_forward(float *h, float *hw, const float *xw, const float *b_hh,
                           const float *b_ih, int n, int H);

/* y = x < 0 ? 0 : x (keeps -0 and NaN like PyTorch). Backward: d_x += x > 0 ? d_y : 0. */
void attn_relu_forward(float *y, const float *x, size_t n);
void attn_relu_backward(float *d_x, const float *d_y, const float *x, size_t n);
/* The relu's backward written instead of added, for a first writer: d_x[i] = +0 + (x[i] > 0 ?
 * d_y[i] : 0), the bits of zeroing d_x and calling attn_relu_backward (-0 included), in one
 * branch-free pass; d_x may be d_y (in place). */
void attn_relu_backward_set(float *d_x, const float *d_y, const float *x, size_t n);

/* y = 0.5 x (1 + erf(x / sqrt 2)), erf by oneDNN's approximation on both paths (bit-identical).
 * Backward: d_x += d_y * (Phi(x) + x phi(x)). */
void attn_gelu_forward(float *y, const float *x, size_t n);
void attn_gelu_backward(float *d_x, const float *d_y, const float *x, size_t n);

/* ---- softmax (src/kernels/softmax.c) ----------------------------------------------------- */

/* Row softmax over the first n_valid of cols columns (the rest are masked keys and get
 * probability 0; a row with n_valid == 0 is all zeros). probs, x: [rows, cols].
 * avx2: ATen's vectorised softmax (reduce_all max, Sleef expf8_u10, reduce_all sum, * 1/s);
 * scalar: the same steps with expf and a left-to-right sum.
 * The forward may run in place (probs == x). Backward: d_x += p * (d_p - sum_j p_j d_p_j), from the
 * saved probs only. */
void attn_softmax_forward(float *probs, const float *x, int rows, int cols, int n_valid);
void attn_softmax_backward(float *d_x, const float *d_probs, const float *probs, int rows, int cols,
                           int n_valid);

/* ---- layer norm (src/kernels/layernorm.c) ------------------------------------------------ */

/* y[n,D] = (x - mean) * rstd * gamma + beta over each row, eps = 1e-5, biased variance.
 * avx2: ATen's RowwiseMoments (8-lane Welford) for mean/var; y = fma(fma(x, rstd, -rstd*mean),
 * gamma, beta); scalar: two-pass moments in double, no FMA. Saves mean[n], rstd[n]. Backward
 * accumulates d_x, d_gamma, d_beta. */
void attn_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma,
                            const float *beta, int n, int D);
void attn_layernorm_backward(float *d_x, float *d_gamma, float *d_beta, const float *d_y,
                             const float *x, const float *mean, const float *rstd,
                             const float *gamma, int n, int D);

/* ---- embedding (src/kernels/embedding.c) ------------------------------------------------- */

/* y[n,D] = table[ids[i], :] (gather). Backward: d_table[ids[i], :] += d_y[i, :]. */
void attn_embedding_forward(float *y, const int *ids, const float *table, int n, int D);
void attn_embedding_backward(float *d_table, const float *d_y, const int *ids, int n, int D);

/* ---- elementwise add (residuals, positional embeddings) ---------------------------------- */

/* y = a + b (y may alias a or b). Backward: d_a += d_y, d_b += d_y. */
void attn_add_forward(float *y, const float *a, const float *b, size_t n);
/* y[n] = 0.0f + a: what attn_add_forward onto a zeroed y writes, bit for bit (-0 becomes +0),
 * without the zeroing pass. */
void attn_add_onto_zero(float *y, const float *a, size_t n);
void attn_add_backward(float *d_a, float *d_b, const float *d_y, size_t n);

/* ---- loss (src/kernels/loss.c) ----------------------------------------------------------- */

/* Mean binary cross-entropy on logits (PyTorch BCEWithLogitsLoss, stable form):
 * loss = mean_b [ max(z,0) - z*y + log1p(exp(-|z|)) ], z = logits[B], y = labels[B] in {0,1}.
 * Backward: d_logits[b] += d_loss * (sigmoid(z_b) - y_b) / B  (the 1/B is the mean's). */
double attn_bce_forward(const float *logits, const float *labels, int B);
void attn_bce_backward(float *d_logits, float d_loss, const float *logits, const float *labels,
                       int B);
/* Rows [0, n) of a batch of B (n <= B): the same floats attn_bce_backward writes for them, so
 * a batch's d_logits can be made piece by piece (micro-batches, attn_threads.h). */
void attn_bce_backward_rows(float *d_logits, float d_loss, const float *logits, const float *labels,
                            int n, int B);

/* ---- Adam's elementwise update (src/kernels/adam_update.c) ------------------------------- */
/* The float scalars of one torch.optim.Adam step (src/train/adam.c rounds them from doubles). */
typedef struct attn_adam_scalars {
    float b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, neg_step_size, eps, wd;
} attn_adam_scalars;
/* For i < n: g = grads[i] (+ wd * params[i] when wd != 0, an fma); m = fma(g, 1-b1, m*b1);
 * v = fma((1-b2)*g, g, v*b2); params += neg_step_size * m / (sqrt(v) / bc2_sqrt + eps). Every
 * operation correctly rounded, so the AVX2 path (8 lanes) and the plain one give the same bits. */
void attn_adam_update(float *params, float *m, float *v, const float *grads, size_t n,
                      const attn_adam_scalars *s);
/* The same update, and grads[i] = +0 once read, in the same pass (a training step whose next
 * backward starts from zero gradients needs no zeroing sweep of its own). */
void attn_adam_update_zero_grads(float *params, float *m, float *v, float *grads, size_t n,
                                 const attn_adam_scalars *s);

/* ---- attention, all heads, forward and backward (src/kernels/attention.c) ----------------- */

/* out_h[n_q,HS] = softmax(q_h.k_h^T) . v_h for h < NH, over the first n_valid of n_k keys (the
 * rest are masked and get probability 0; n_valid == 0 gives zeros). q_h is already scaled by
 * 1/sqrt(HS). Head h of q, k, v, out (and of d_q, d_k, d_v, d_out) starts at h * head_stride:
 * head_stride = n*HS for a head-major [NH, n, HS] tensor, N*HS for a sentence packed at some
 * row of an [NH, N, HS] batch (q/out and k/v share the stride).
 * probs: NULL, or [NH, n_q, n_k] where the forward keeps the probabilities (for backward, or
 * to look at the attention maps); each row sums to 1 over the valid keys.
 * Paths, one entry point: with probs == NULL and n_k > ATTN_ATTENTION_BLOCKED_ABOVE the
 * blocked online softmax (never an n_q x n_k matrix); otherwise the naive one (scores =
 * q.k^T, ATen softmax, probs.v: bit-identical to PyTorch's per-head bmm path).
 * work: attn_attention_forward_work_size(n_q, n_k) floats when probs == NULL (may be NULL
 * otherwise); attn_attention_backward_work_size(n_q, n_k) floats for backward.
 * Backward needs the kept probs and ACCUMULATES into d_q, d_k, d_v (any may be NULL). */
void attn_attention_forward(float *out, float *probs, const float *q, const float *k,
                            const float *v, int NH, int n_q, int n_k, int HS, int n_valid,
                            size_t head_stride, float *work);
/* The same with an additive score bias: softmax(q_h.k_h^T + bias_h), bias [NH, n_q, n_k]
 * (contiguous, head after head; NULL = none, exactly attn_attention_forward). Each score is
 * rounded once, then bias added in float (PyTorch: `torch.bmm(q, k^T) + bias`). A bias needs
 * the naive path: probs, or work of n_q * n_k floats with n_k <= ATTN_ATTENTION_BLOCKED_ABOVE.
 * attn_attention_backward is unchanged (the bias is a constant). */
void attn_attention_forward_bias(float *out, float *probs, const float *q, const float *k,
                                 const float *v, const float *bias, int NH, int n_q, int n_k,
                                 int HS, int n_valid, size_t head_stride, float *work);
void attn_attention_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                             const float *probs, const float *q, const float *k, const float *v,
                             int NH, int n_q, int n_k, int HS, int n_valid, size_t head_stride,
                             float *work);
/* The naive path on operands whose heads sit side by side in each row (the layout of an
 * in-projection's output [n, 3D] and of the concatenated heads [n, D]): head h, row r of x at
 * x + h*HS + r*ld_x (d_q, d_k, d_v share q's, k's, v's ld; ld_x >= NH*HS). The same products
 * with the same shapes as copying the heads apart first, so the same bits. probs are required
 * ([NH, n_q, n_k], kept for backward); HS == 1 needs ld_out == 1 (forward) and ld_q == 1
 * (backward). Forward ACCUMULATES too: the scores add to probs and the heads to out, which the
 * caller zeroes (one memset of a whole batch instead of one per head and row; the sums start at
 * +0 and are never -0, so the same bits). Backward ACCUMULATES into d_q, d_k, d_v (any may be
 * NULL). */
void attn_attention_forward_rows(float *out, int ld_out, float *probs, const float *q, int ld_q,
                                 const float *k, int ld_k, const float *v, int ld_v,
                                 const float *bias, int NH, int n_q, int n_k, int HS, int n_valid);
void attn_attention_backward_rows(float *d_q, float *d_k, float *d_v, const float *d_out,
                                  int ld_out, const float *probs, const float *q, int ld_q,
                                  const float *k, int ld_k, const float *v, int ld_v, int NH,
                                  int n_q, int n_k, int HS, int n_valid, float *work);
size_t attn_attention_forward_work_size(int n_q, int n_k);
size_t attn_attention_backward_work_size(int n_q, int n_k);
/* Key sequences longer than this take the blocked path (forward without probs). */
#define ATTN_ATTENTION_BLOCKED_ABOVE 1024

/* ---- attention of one head, memory-frugal (src/kernels/attention_blocked.c) ------------- */

/* out[n_q,hs] = softmax(q.k^T) . v over the first n_valid of n_k keys (the rest are masked;
 * n_valid == 0 gives zeros). q [n_q,hs] is already scaled by 1/sqrt(hs); k, v [n_k,hs]. It
 * never materialises the n_q x n_k matrix: online softmax over key tiles (Milakov &
 * Gimelshein 2018; the FlashAttention schedule). For each tile of `tile` queries it walks the valid
 * keys in tiles of `tile`: S = q_t.k_t^T (tag QK), running row max m and sum l, partial output
 * rescaled by exp(m_old - m_new) and accumulated with S.v_t (tag AV); the end divides by l.
 * Multiply-adds: n_q*n_valid*hs per tag. work: at least attn_attention_blocked_work_size(tile)
 * floats; extra memory O(tile^2), independent of n. */
void attn_attention_blocked_forward(float *out, const float *q, const float *k, const float *v,
                                    int n_q, int n_k, int hs, int n_valid, float *work, int tile);
/* Floats the blocked forward needs in `work`: tile*tile (score tile) + 2*tile (m, l). */
size_t attn_attention_blocked_work_size(int tile);
/* One share of it, for a caller with threads of its own (the thread count is its parameter):
 * part p (0 <= p < parts) computes query tiles p, p + parts, p + 2 parts, ... of `tile` rows;
 * once every part has run, out is bit for bit attn_attention_blocked_forward's. Re-entrant: it
 * starts no thread and changes no process-wide setting (its products run on the BLAS threads
 * in force). work: attn_attention_blocked_work_size(tile) floats of the part's own. */
void attn_attention_blocked_forward_part(float *out, const float *q, const float *k, const float *v,
                                         int n_q, int n_k, int hs, int n_valid, float *work,
                                         int tile, int part, int parts);
#define ATTN_ATTENTION_TILE 256 /* default tile: a 256 KiB score tile (measured best, n = 4097) */

/* ---- CPU dispatch: which kernel implementations run (src/kernels/cpu.c) ----------------- */

/* The vectorised kernels (tanh, sigmoid and gelu forward, softmax and layernorm forward and
 * backward) exist as: "scalar", plain C that states the math and runs on any CPU (PyTorch 1.13
 * with ATEN_CPU_CAPABILITY=default); "avx2", AVX2+FMA intrinsics (x86-64 only) bit-identical to
 * PyTorch 1.13 on an AVX2 machine; and "avx512", the avx2 kernels except softmax and sigmoid,
 * which follow ATen's 16-lane avx512 arithmetic (runs on any AVX2+FMA CPU; never chosen by auto).
 * Every other kernel is plain C for all. The path is process-wide and chosen on first use:
 * ATTN_CPU=scalar|avx2|avx512|auto in the environment, else auto (avx2 iff the CPU has AVX2 and
 * FMA). ATTN_CPU=avx2/avx512 without AVX2+FMA, or an unknown value, logs a warning through the
 * log hook (attn_set_log) and runs the automatic choice: kernels cannot fail. */

/* The active path: "scalar", "avx2" or "avx512" (static string). */
const char *attn_cpu_path(void);
/* True iff this build and CPU can run the path `name` ("scalar", "avx2", "avx512", "auto"). */
bool attn_cpu_path_supported(const char *name);
/* Makes `name` ("scalar", "avx2", "avx512", or "auto"/NULL) the active path. Returns false,
 * leaving the path unchanged and logging why, for an unknown name or a path this CPU/build
 * cannot run. Kernel calls running concurrently may still use the old path. */
bool attn_cpu_select(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_KERNELS_H */
