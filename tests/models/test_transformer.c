/* test_transformer.c -- the Transformer encoder model (pre-norm/ReLU default, post-norm and
 * GELU variants): whole-model finite differences, PyTorch golden logits (bit-identical at
 * batch 1) and gradients, padding invariance; and its encoder layer (encoder_layer.c): the
 * [CLS]-only variant against the full layer at the [CLS] rows, and the accumulate contract. */
#include "encoder_layer.h"
#include "models_common.h"

#include <math.h>
#include <string.h>

/* finite differences on a small padded batch (V=7, D=8, NH=2, F=6, L=2); the step is small
 * because a ReLU kink inside +-step would spoil the central difference */
#define FD_STEP 2e-3f
#define FD_ATOL 5e-4
#define FD_RTOL 5e-3
/* a sentence inside a padded batch vs alone: OpenBLAS rounds a GEMM row by its position and the
 * row count; in ULPs of the batch's largest |logit| (mc_padding_invariance), measured at most 35
 * with the SkylakeX, Haswell and Prescott kernel sets, on the AVX2 and the scalar kernels */
#define PAD_MAX_ULP 64u
/* GELU: PyTorch 1.13 runs oneDNN's JIT erf-GELU, which the gelu kernel follows (AVX2 injector).
 * Measured: 240/240 identical, max ULP 0; the bound asserts that measurement. */
#define GELU_MAX_ULP 0

static attn_model *small_model_pos(uint64_t seed, attn_norm norm, attn_activation act,
                                   attn_pos pos) {
    attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    c.pos = pos;
    c.vocab_size = 7;
    c.embed_dim = 8;
    c.n_heads = 2;
    c.ffn_dim = 6;
    c.n_layers = 2;
    c.max_len = MC_T + 1;
    c.norm = norm;
    c.activation = act;
    return tu_model_new(&c, seed);
}

static attn_model *small_model(uint64_t seed, attn_norm norm, attn_activation act) {
    return small_model_pos(seed, norm, act, ATTN_POS_LEARNED);
}

static void fd_variant(attn_norm norm, attn_activation act) {
    attn_model *m = small_model(1, norm, act);
    mc_fd_check_model(m, 21 + (uint64_t)norm * 2 + (uint64_t)act, FD_STEP, FD_ATOL, FD_RTOL);
    attn_model_free(m);
}

START_TEST(test_fd_pre_relu) {
    fd_variant(ATTN_NORM_PRE, ATTN_ACT_RELU);
}
END_TEST
START_TEST(test_fd_post_relu) {
    fd_variant(ATTN_NORM_POST, ATTN_ACT_RELU);
}
END_TEST
START_TEST(test_fd_pre_gelu) {
    fd_variant(ATTN_NORM_PRE, ATTN_ACT_GELU);
}
END_TEST

/* Position schemes: finite differences over every tensor (sinusoidal and none have no
 * pos_embedding; what enters the first layer is checked below). */
START_TEST(test_fd_pos_sinusoidal_none) {
    for (int p = ATTN_POS_SINUSOIDAL; p <= ATTN_POS_NONE; p++) {
        attn_model *m = small_model_pos(3, ATTN_NORM_PRE, ATTN_ACT_GELU, (attn_pos)p);
        ck_assert_int_lt(attn_model_tensor_find(m, "pos_embedding"), 0);
        mc_fd_check_model(m, 40 + (uint64_t)p, FD_STEP, FD_ATOL, FD_RTOL);
        attn_model_free(m);
    }
}
END_TEST

/* Positions inside the attention (rope: rotary q, k; alibi: score bias): finite differences
 * over every tensor, with 2 heads (HS 4; ALiBi slopes of a power of two) and 3 (HS 4, the odd
 * path; ALiBi's interpolated slopes), pre/gelu and post/relu. The batch of 3 runs the full layer
 * and the [CLS]-only one. */
START_TEST(test_fd_pos_rope_alibi) {
    for (int p = ATTN_POS_ROPE; p <= ATTN_POS_ALIBI; p++)
        for (int NH = 2; NH <= 3; NH++) {
            attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
            c.pos = (attn_pos)p;
            c.vocab_size = 7;
            c.embed_dim = 4 * NH;
            c.n_heads = NH;
            c.ffn_dim = 6;
            c.n_layers = 2;
            c.max_len = MC_T + 1;
            c.norm = NH == 2 ? ATTN_NORM_PRE : ATTN_NORM_POST;
            c.activation = NH == 2 ? ATTN_ACT_GELU : ATTN_ACT_RELU;
            attn_model *m = tu_model_new(&c, 11 + (uint64_t)NH);
            ck_assert_int_lt(attn_model_tensor_find(m, "pos_embedding"), 0);
            mc_fd_check_model(m, 50 + (uint64_t)p * 4 + (uint64_t)NH, FD_STEP, FD_ATOL, FD_RTOL);
            attn_model_free(m);
        }
}
END_TEST

/* rope needs an even head size: the config says so. */
START_TEST(test_rope_odd_head_size_rejected) {
    attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    c.pos = ATTN_POS_ROPE;
    c.embed_dim = 9;
    c.n_heads = 3;
    attn_error err;
    ck_assert_int_ne(attn_model_config_validate(&c, &err), ATTN_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "rope"));
    c.pos = ATTN_POS_ALIBI;
    ck_assert_int_eq(attn_model_config_validate(&c, &err), ATTN_OK);
}
END_TEST

/* An odd number of heads takes PyTorch's Python attention path (bias in the qkv GEMM, q divided
 * by sqrt(HS)): its backward against central differences (D = 9, 3 heads of 3). */
START_TEST(test_fd_odd_heads) {
    attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    c.vocab_size = 7;
    c.embed_dim = 9;
    c.n_heads = 3;
    c.ffn_dim = 5;
    c.n_layers = 2;
    c.max_len = MC_T + 1;
    attn_model *m = tu_model_new(&c, 8);
    mc_fd_check_model(m, 44, FD_STEP, FD_ATOL, FD_RTOL);
    attn_model_free(m);
}
END_TEST

/* What each scheme adds to the embedding row at position s: learned, its parameter row;
 * sinusoidal, sin/cos(s / 10000^(2i/D)) (unscaled, not a parameter); none, nothing. */
START_TEST(test_pos_schemes_first_layer_input) {
    const int ids[3] = {4, 2, 5}, n = 3, D = 8;
    for (int p = 0; p < ATTN_N_POS; p++) {
        attn_model *m = small_model_pos(5, ATTN_NORM_POST, ATTN_ACT_RELU, (attn_pos)p);
        const attn_model_config *c = attn_model_config_of(m);
        size_t learned_n = (size_t)c->max_len * D;
        attn_model *ref = small_model(5, ATTN_NORM_POST, ATTN_ACT_RELU);
        ck_assert_uint_eq(attn_model_n_params(m) + (p == ATTN_POS_LEARNED ? 0 : learned_n),
                          attn_model_n_params(ref));
        attn_model_free(ref);
        attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
        float logit;
        attn_error err;
        ck_assert_int_eq(attn_model_forward(m, &b, &logit, &err), ATTN_OK);
        const float *x = NULL;
        int rows = 0, width = 0;
        ck_assert_int_eq(attn_model_input(m, &x, NULL, &rows, &width, &err), ATTN_OK);
        ck_assert_int_eq(rows, n + 1);
        const float *emb =
            attn_model_params(m) +
            attn_model_tensor_offset(m, (size_t)attn_model_tensor_find(m, "embedding.weight"));
        long pe = attn_model_tensor_find(m, "pos_embedding");
        ck_assert_int_eq(pe >= 0, p == ATTN_POS_LEARNED);
        for (int s = 0; s <= n; s++) {
            const int tok = s == 0 ? ATTN_CLS_ID : ids[s - 1];
            for (int j = 0; j < D; j++) {
                float add = 0.0f;
                if (p == ATTN_POS_LEARNED)
                    add = attn_model_params(
                        m)[attn_model_tensor_offset(m, (size_t)pe) + (size_t)s * D + j];
                else if (p == ATTN_POS_SINUSOIDAL)
                    add = (float)(j % 2 ? cos(s / pow(10000.0, (j - j % 2) / (double)D))
                                        : sin(s / pow(10000.0, (j - j % 2) / (double)D)));
                const float want = p == ATTN_POS_NONE ? emb[tok * D + j] : emb[tok * D + j] + add;
                ck_assert_msg(x[s * D + j] == want, "pos %s row %d col %d: %.9g, want %.9g",
                              attn_pos_name((attn_pos)p), s, j, x[s * D + j], want);
            }
        }
        attn_model_free(m);
    }
}
END_TEST

/* Without positions the words are a set: a reversed sentence gives the same logit (up to the
 * order of the attention sums), with them it does not. */
START_TEST(test_pos_none_ignores_order) {
    const int fwd[4] = {2, 3, 4, 6}, rev[4] = {6, 4, 3, 2}, n = 4;
    for (int p = 0; p < ATTN_N_POS; p++) {
        attn_model *m = small_model_pos(9, ATTN_NORM_PRE, ATTN_ACT_RELU, (attn_pos)p);
        attn_rng r = attn_rng_seed(4);
        mc_perturb(m, 0.5f, &r);
        float a, b;
        attn_error err;
        attn_batch ba = {.B = 1, .T = n, .ids = fwd, .lengths = &n};
        attn_batch bb = {.B = 1, .T = n, .ids = rev, .lengths = &n};
        ck_assert_int_eq(attn_model_forward(m, &ba, &a, &err), ATTN_OK);
        ck_assert_int_eq(attn_model_forward(m, &bb, &b, &err), ATTN_OK);
        if (p == ATTN_POS_NONE)
            ck_assert_msg(fabsf(a - b) <= 1e-5f * (1.0f + fabsf(a)), "none: %g vs %g", a, b);
        else
            ck_assert_msg(fabsf(a - b) > 1e-4f, "%s: order had no effect (%g vs %g)",
                          attn_pos_name((attn_pos)p), a, b);
        attn_model_free(m);
    }
}
END_TEST

START_TEST(test_golden_logits) {
    mc_assert_golden_logits("transformer");
}
END_TEST
START_TEST(test_golden_logits_post) {
    mc_assert_golden_logits("transformer_post");
}
END_TEST

/* weights attn trained (tools/make_golden.py --trained) */
START_TEST(test_golden_logits_trained) {
    mc_assert_golden_logits("trained_transformer");
}
END_TEST

START_TEST(test_golden_logits_gelu) {
    float *got, *want;
    bool exact;
    size_t n = mc_golden_logits("transformer_gelu", &got, &want, &exact);
    if (!exact) { /* another CPU class: the same tolerance as every golden logit */
        tu_assert_close("transformer_gelu golden logits (batch 1)", got, want, n, GOLDEN_LOGIT_REL,
                        GOLDEN_LOGIT_FLOOR);
        free(got);
        free(want);
        return;
    }
    tu_compare c = tu_compare_floats(got, want, n);
    printf("  %-44s identical: %zu/%zu, max ULP: %u\n", "transformer_gelu golden logits (batch 1)",
           c.n_equal, n, c.max_ulp);
    ck_assert_msg(c.max_ulp <= GELU_MAX_ULP, "transformer_gelu: item %zu is %u ULP off (bound %d)",
                  c.worst, c.max_ulp, GELU_MAX_ULP);
    free(got);
    free(want);
}
END_TEST

START_TEST(test_golden_grads) {
    mc_golden_grads("transformer");
}
END_TEST
START_TEST(test_golden_grads_post) {
    mc_golden_grads("transformer_post");
}
END_TEST
START_TEST(test_golden_grads_gelu) {
    mc_golden_grads("transformer_gelu");
}
END_TEST

START_TEST(test_padding_invariance) {
    attn_model *m = tu_model_default(ATTN_ARCH_TRANSFORMER, 3);
    attn_rng rng = attn_rng_seed(9);
    mc_perturb(m, 0.05f, &rng); /* non-zero biases, LayerNorm weights away from 1 */
    mc_padding_invariance(m, PAD_MAX_ULP);
    attn_model_free(m);
}
END_TEST

/* ---- the encoder layer on its own ------------------------------------------------------ */

/* [CLS]-only vs full layer: the same math, different GEMM shapes (rounding), so close. */
#define CLS_REL_TOL 1e-5
/* old + new: one rounding of the sum */
#define ACCUM_REL_TOL 1e-6

enum { EL_B = 3, EL_N = 11 }; /* sentences of 4, 1 and 6 positions */
static const int el_rows[EL_B + 1] = {0, 4, 5, EL_N};

typedef struct el_fixture {
    attn_model_config c;
    attn_encoder_rows r;
    float *mem;             /* every buffer below, carved */
    float *params, *x;      /* [n_params], [N, D] */
    attn_encoder_weights w; /* views into params */
    attn_encoder_acts full, cls;
    attn_encoder_scratch s;
    size_t n_params;
} el_fixture;

static float *el_take(float **p, size_t n) {
    float *q = *p;
    *p += n;
    return q;
}

/* Points w's 12 tensors at consecutive slices of base; returns the floats used. */
static size_t el_weights(attn_encoder_weights *w, float *base, int D, int F) {
    float *p = base;
    w->in_proj_weight = el_take(&p, (size_t)3 * D * D);
    w->in_proj_bias = el_take(&p, (size_t)3 * D);
    w->out_proj_weight = el_take(&p, (size_t)D * D);
    w->out_proj_bias = el_take(&p, (size_t)D);
    w->linear1_weight = el_take(&p, (size_t)F * D);
    w->linear1_bias = el_take(&p, (size_t)F);
    w->linear2_weight = el_take(&p, (size_t)D * F);
    w->linear2_bias = el_take(&p, (size_t)D);
    w->norm1_weight = el_take(&p, (size_t)D);
    w->norm1_bias = el_take(&p, (size_t)D);
    w->norm2_weight = el_take(&p, (size_t)D);
    w->norm2_bias = el_take(&p, (size_t)D);
    return (size_t)(p - base);
}

static void el_acts(attn_encoder_acts *a, float **p, const el_fixture *f, int n_out,
                    size_t n_probs) {
    const size_t N = EL_N, D = (size_t)f->c.embed_dim, F = (size_t)f->c.ffn_dim;
    memset(a, 0, sizeof *a);
    a->n1 = el_take(p, N * D), a->mean1 = el_take(p, N), a->rstd1 = el_take(p, N);
    a->qkv = el_take(p, 3 * N * D), a->x_cls = el_take(p, EL_B * D);
    a->q = el_take(p, N * D), a->k = el_take(p, N * D), a->v = el_take(p, N * D);
    a->probs = el_take(p, n_probs), a->ctx = el_take(p, N * D);
    a->att = el_take(p, n_out * D), a->r1 = el_take(p, n_out * D), a->n2 = el_take(p, n_out * D);
    a->mean2 = el_take(p, n_out), a->rstd2 = el_take(p, n_out);
    a->ff1 = el_take(p, n_out * F), a->act = el_take(p, n_out * F), a->r2 = el_take(p, n_out * D);
    a->out = f->c.norm == ATTN_NORM_PRE ? a->r2 : a->n2;
}

static void el_setup(el_fixture *f, attn_norm norm, attn_activation act) {
    memset(f, 0, sizeof *f);
    f->c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    f->c.embed_dim = 8, f->c.n_heads = 2, f->c.ffn_dim = 6, f->c.norm = norm;
    f->c.activation = act;
    f->r = (attn_encoder_rows){EL_B, EL_N, el_rows};
    const size_t D = 8, F = 6, N = EL_N;
    f->n_params = 4 * D * D + 3 * D + D + 2 * F * D + F + D + 4 * D; /* el_weights' slices */
    const size_t probs_full = attn_encoder_probs_size(&f->c, &f->r, false);
    const size_t probs_cls = attn_encoder_probs_size(&f->c, &f->r, true);
    const size_t total = 1 << 14; /* enough for everything carved below (asserted) */
    f->mem = calloc(total, sizeof(float));
    ck_assert_ptr_nonnull(f->mem);
    float *p = f->mem;
    f->params = el_take(&p, f->n_params);
    ck_assert_uint_eq(el_weights(&f->w, f->params, (int)D, (int)F), f->n_params);
    f->x = el_take(&p, N * D);
    el_acts(&f->full, &p, f, EL_N, probs_full);
    el_acts(&f->cls, &p, f, EL_B, probs_cls);
    attn_encoder_scratch *s = &f->s;
    s->d_r1 = el_take(&p, N * D), s->d_r2 = el_take(&p, N * D), s->d_n2 = el_take(&p, N * D);
    s->d_n1 = el_take(&p, N * D), s->d_att = el_take(&p, N * D), s->d_ctx = el_take(&p, N * D);
    s->d_q = el_take(&p, N * D), s->d_k = el_take(&p, N * D), s->d_v = el_take(&p, N * D);
    s->d_qkv = el_take(&p, 3 * N * D), s->d_x_cls = el_take(&p, N * D);
    s->d_ff1 = el_take(&p, N * F), s->d_act = el_take(&p, N * F);
    s->attn_work = el_take(&p, attn_attention_backward_work_size(6, 6));
    ck_assert((size_t)(p - f->mem) <= total);
    attn_rng rng = attn_rng_seed(77 + (uint64_t)norm * 2 + (uint64_t)act);
    tu_fill_uniform(f->params, f->n_params, -0.6f, 0.6f, &rng);
    for (size_t i = 0; i < D; i++) f->w.norm1_weight[i] += 1.0f, f->w.norm2_weight[i] += 1.0f;
    tu_fill_uniform(f->x, N * D, -1.5f, 1.5f, &rng);
}

/* The [CLS]-only layer's outputs and gradients equal the full layer's restricted to the
 * [CLS] rows (the full layer's d_out is zero elsewhere), pre and post norm. */
static void check_cls_layer(attn_norm norm, attn_activation act) {
    el_fixture f;
    el_setup(&f, norm, act);
    const int D = f.c.embed_dim;
    attn_encoder_forward(&f.full, f.x, &f.w, &f.c, &f.r);
    attn_encoder_cls_forward(&f.cls, f.x, &f.w, &f.c, &f.r);
    float full_cls[EL_B * 8], d_out_cls[EL_B * 8], d_out_full[EL_N * 8] = {0};
    attn_rng rng = attn_rng_seed(5);
    tu_fill_uniform(d_out_cls, (size_t)EL_B * D, -1.0f, 1.0f, &rng);
    for (int i = 0; i < EL_B; i++) {
        memcpy(full_cls + i * D, f.full.out + el_rows[i] * D, (size_t)D * sizeof(float));
        memcpy(d_out_full + el_rows[i] * D, d_out_cls + i * D, (size_t)D * sizeof(float));
    }
    tu_assert_close("cls-only layer output vs full at [CLS]", f.cls.out, full_cls, (size_t)EL_B * D,
                    CLS_REL_TOL, 1.0);
    float *d_w_full = calloc(f.n_params, sizeof(float)),
          *d_w_cls = calloc(f.n_params, sizeof(float));
    float d_x_full[EL_N * 8] = {0}, d_x_cls[EL_N * 8] = {0};
    ck_assert(d_w_full && d_w_cls);
    attn_encoder_weights dwf, dwc;
    el_weights(&dwf, d_w_full, D, f.c.ffn_dim);
    el_weights(&dwc, d_w_cls, D, f.c.ffn_dim);
    attn_encoder_backward(d_x_full, &dwf, d_out_full, &f.full, f.x, &f.w, &f.c, &f.r, &f.s);
    attn_encoder_cls_backward(d_x_cls, &dwc, d_out_cls, &f.cls, f.x, &f.w, &f.c, &f.r, &f.s);
    tu_assert_close("cls-only d_x vs full", d_x_cls, d_x_full, (size_t)EL_N * D, CLS_REL_TOL, 1.0);
    tu_assert_close("cls-only d_w vs full", d_w_cls, d_w_full, f.n_params, CLS_REL_TOL, 1.0);
    /* running the full backward again: d_w accumulates (doubles), d_x is written (the same bits,
     * whatever d_x held: here the first result plus one) */
    float want_x[EL_N * 8];
    float *want_w = malloc(f.n_params * sizeof(float));
    ck_assert_ptr_nonnull(want_w);
    memcpy(want_x, d_x_full, (size_t)EL_N * D * sizeof(float));
    for (int i = 0; i < EL_N * D; i++) d_x_full[i] += 1.0f;
    for (size_t i = 0; i < f.n_params; i++) want_w[i] = 2.0f * d_w_full[i];
    attn_encoder_backward(d_x_full, &dwf, d_out_full, &f.full, f.x, &f.w, &f.c, &f.r, &f.s);
    tu_assert_identical("layer d_x written", d_x_full, want_x, (size_t)EL_N * D);
    tu_assert_close("layer d_w accumulates", d_w_full, want_w, f.n_params, ACCUM_REL_TOL, 1.0);
    free(d_w_full), free(d_w_cls), free(want_w), free(f.mem);
}

START_TEST(test_cls_layer_pre) {
    check_cls_layer(ATTN_NORM_PRE, ATTN_ACT_RELU);
}
END_TEST
START_TEST(test_cls_layer_post_gelu) {
    check_cls_layer(ATTN_NORM_POST, ATTN_ACT_GELU);
}
END_TEST

int main(void) {
    Suite *s = suite_create("models/transformer");
    TCase *tc = tcase_create("transformer");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fd_pre_relu);
    tcase_add_test(tc, test_fd_post_relu);
    tcase_add_test(tc, test_fd_pre_gelu);
    tcase_add_test(tc, test_fd_pos_sinusoidal_none);
    tcase_add_test(tc, test_fd_odd_heads);
    tcase_add_test(tc, test_fd_pos_rope_alibi);
    tcase_add_test(tc, test_rope_odd_head_size_rejected);
    tcase_add_test(tc, test_pos_schemes_first_layer_input);
    tcase_add_test(tc, test_pos_none_ignores_order);
    tcase_add_test(tc, test_golden_logits);
    tcase_add_test(tc, test_golden_logits_post);
    tcase_add_test(tc, test_golden_logits_trained);
    tcase_add_test(tc, test_golden_logits_gelu);
    tcase_add_test(tc, test_golden_grads);
    tcase_add_test(tc, test_golden_grads_post);
    tcase_add_test(tc, test_golden_grads_gelu);
    tcase_add_test(tc, test_padding_invariance);
    tcase_add_test(tc, test_cls_layer_pre);
    tcase_add_test(tc, test_cls_layer_post_gelu);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
