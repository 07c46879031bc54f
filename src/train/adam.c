/* adam.c -- Adam over flat buffers, exactly torch.optim.Adam (PyTorch 1.13, CPU).
 *
 * PyTorch 1.13 defaults to the single-tensor path (foreach=False) on CPU,
 * torch/optim/adam.py _single_tensor_adam. Per step t (Python floats are doubles):
 *   m = m * beta1 + (1 - beta1) * g          mul_(beta1).add_(g, alpha=1-beta1)
 *   v = v * beta2 + (1 - beta2) * g * g      mul_(beta2).addcmul_(g, g, value=1-beta2)
 *   bc1 = 1 - beta1^t, bc2 = 1 - beta2^t     (double, once per step)
 *   denom = sqrt(v) / sqrt(bc2) + eps
 *   p = p + (-lr / bc1) * m / denom          addcdiv_(m, denom, value=-step_size)
 * ATen applies each double scalar to a float tensor as a float (rounded once), and its
 * AVX2 kernels (compiled with contraction) fuse two steps: add_ with alpha is
 * fma(g, alpha, m) and addcmul is fma(value * g, g, v). Both were confirmed bit for bit
 * against tools/golden_adam.py (tests/train/test_adam.c). Weight decay, when non-zero, is
 * PyTorch's L2 form g = g + wd * p (add with alpha, also an fma).
 */
#include "attn.h"
#include "train_internal.h"

#include <math.h>
#include <stdlib.h>

attn_adam_config attn_adam_config_default(void) {
    attn_adam_config c = {
        .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.0};
    return c;
}

attn_status attn_adam_create(size_t n, const attn_adam_config *cfg, attn_adam **out,
                             attn_error *err) {
    *out = NULL;
    attn_adam_config c = cfg ? *cfg : attn_adam_config_default();
    if (!(c.lr >= 0.0) || !(c.beta1 >= 0.0 && c.beta1 < 1.0) ||
        !(c.beta2 >= 0.0 && c.beta2 < 1.0) || !(c.eps >= 0.0) || !(c.weight_decay >= 0.0) ||
        !isfinite(c.lr) || !isfinite(c.eps) || !isfinite(c.weight_decay))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "adam: invalid hyperparameters lr %g, betas %g/%g, eps %g, "
                           "weight_decay %g (need lr, eps, wd >= 0 and betas in [0, 1))",
                           c.lr, c.beta1, c.beta2, c.eps, c.weight_decay);
    attn_adam *a = calloc(1, sizeof *a);
    if (!a) return attn_errorf(err, ATTN_ERR_NOMEM, "adam: out of memory");
    a->cfg = c;
    a->n = n;
    a->m = attn_calloc_large(n ? n : 1, sizeof(float)); /* read and written every step */
    a->v = attn_calloc_large(n ? n : 1, sizeof(float));
    if (!a->m || !a->v) {
        attn_adam_free(a);
        return attn_errorf(err, ATTN_ERR_NOMEM, "adam: out of memory for 2 x %zu moments", n);
    }
    *out = a;
    return ATTN_OK;
}

void attn_adam_free(attn_adam *opt) {
    if (!opt) return;
    free(opt->m);
    free(opt->v);
    free(opt);
}

attn_adam_scalars attn_adam_next(attn_adam *opt) {
    opt->step++;
    /* The hyperparameters are Python floats (doubles) in PyTorch, as in our config. */
    const double beta1 = opt->cfg.beta1, beta2 = opt->cfg.beta2, lr = opt->cfg.lr;
    const double t = (double)opt->step;
    const double bias_correction1 = 1.0 - pow(beta1, t);
    const double bias_correction2 = 1.0 - pow(beta2, t);
    /* Each scalar is rounded to float once, as ATen does when applying it to a float tensor. */
    const float b1 = (float)beta1, one_minus_b1 = (float)(1.0 - beta1);
    const float b2 = (float)beta2, one_minus_b2 = (float)(1.0 - beta2);
    const float bc2_sqrt = (float)sqrt(bias_correction2);
    const float neg_step_size = (float)(-(lr / bias_correction1));
    const float eps = (float)opt->cfg.eps, wd = (float)opt->cfg.weight_decay;
    const attn_adam_scalars s = {b1,       one_minus_b1,  b2,  one_minus_b2,
                                 bc2_sqrt, neg_step_size, eps, wd};
    return s;
}

/* params[n] -= step_size * m / (sqrt(v)/sqrt(bc2) + eps), with m, v updated from grads[n]. */
void attn_adam_step(attn_adam *opt, float *params, const float *grads) {
    const attn_adam_scalars s = attn_adam_next(opt);
    /* the elementwise part is a kernel: 8 lanes on AVX2 CPUs, the same bits (attn_kernels.h) */
    attn_adam_update(params, opt->m, opt->v, grads, opt->n, &s);
}
