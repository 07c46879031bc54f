/* loss.c -- mean binary cross-entropy on logits (PyTorch BCEWithLogitsLoss, reduction mean),
 * in the numerically stable form that never evaluates exp of a large positive number.
 * The loss is a double; backward ACCUMULATES into d_logits.
 */
#include "kernels_internal.h"

#include <math.h>

/* loss = (1/B) sum_b [ max(z,0) - z*y + log1p(exp(-|z|)) ], z = logits[B], y = labels[B]. */
double attn_bce_forward(const float *logits, const float *labels, int B) {
    double sum = 0.0;
    for (int b = 0; b < B; b++) {
        double z = logits[b], y = labels[b];
        sum += fmax(z, 0.0) - z * y + log1p(exp(-fabs(z)));
    }
    return B > 0 ? sum / B : 0.0;
}

/* d_logits[b] += d_loss * (sigmoid(z_b) - y_b) / B: dL_b/dz = sigmoid(z) - y, and the 1/B is
 * the mean's backward. sigmoid in double, stable for either sign of z. */
void attn_bce_backward(float *d_logits, float d_loss, const float *logits, const float *labels,
                       int B) {
    attn_bce_backward_rows(d_logits, d_loss, logits, labels, B, B);
}

/* The first n rows of the above for a batch of B: the divisor stays the whole batch's. */
void attn_bce_backward_rows(float *d_logits, float d_loss, const float *logits, const float *labels,
                            int n, int B) {
    if (!d_logits) return;
    for (int b = 0; b < n; b++) {
        double z = logits[b];
        double sig = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
        d_logits[b] += (float)((double)d_loss * (sig - labels[b]) / B);
    }
}
