/* cross_entropy.c -- mean cross-entropy over rows of logits with an ignored label, as PyTorch's
 * nn.CrossEntropyLoss(ignore_index=ignore) (reduction "mean": the sum over the rows whose label
 * is not `ignore`, divided by their count). The seq2seq loss (attn_seq2seq_ops.h).
 *
 *   loss = (1/n) sum_{r: y_r != ignore} [ logsumexp(z_r) - z_r[y_r] ]
 *   d z_r += d_loss * (softmax(z_r) - onehot(y_r)) / n   (rows with y_r == ignore get nothing)
 *
 * Computed in double (stable: the row maximum subtracted). Not bit-identical to PyTorch's
 * log_softmax + nll_loss (training bits are attn's own; the logits are what is exact). */
#include "attn_seq2seq_ops.h"
#include "kernels_internal.h"

#include <math.h>

/* log sum_j exp(z_j) of one row, in double. */
static double logsumexp(const float *z, int V) {
    double m = z[0], s = 0.0;
    for (int j = 1; j < V; j++) m = z[j] > m ? z[j] : m;
    for (int j = 0; j < V; j++) s += exp((double)z[j] - m);
    return m + log(s);
}

static int counted(const int *labels, int rows, int ignore) {
    int n = 0;
    for (int r = 0; r < rows; r++) n += labels[r] != ignore;
    return n;
}

double attn_cross_entropy_forward(const float *logits, const int *labels, int rows, int V,
                                  int ignore) {
    const int n = counted(labels, rows, ignore);
    if (n == 0) return NAN; /* PyTorch: 0/0 */
    double sum = 0.0;
    for (int r = 0; r < rows; r++) {
        if (labels[r] == ignore) continue;
        const float *z = logits + (size_t)r * V;
        ATTN_ASSERT(labels[r] >= 0 && labels[r] < V);
        sum += logsumexp(z, V) - (double)z[labels[r]];
    }
    return sum / n;
}

/* d[V] += scale * (softmax(z) - onehot(label)), softmax(z)_j = exp(z_j - lse). */
static void row_gradient(float *d, const float *z, int V, int label, double lse, double scale) {
    for (int j = 0; j < V; j++)
        d[j] += (float)(scale * (exp((double)z[j] - lse) - (j == label ? 1.0 : 0.0)));
}

void attn_cross_entropy_backward(float *d_logits, float d_loss, const float *logits,
                                 const int *labels, int rows, int V, int ignore) {
    const int n = counted(labels, rows, ignore);
    if (n == 0) return;
    const double scale = (double)d_loss / n;
    for (int r = 0; r < rows; r++) {
        if (labels[r] == ignore) continue;
        const float *z = logits + (size_t)r * V;
        row_gradient(d_logits + (size_t)r * V, z, V, labels[r], logsumexp(z, V), scale);
    }
}

/* The rows of a micro-batch that is part of a larger mean: the same row terms and gradient as
 * attn_cross_entropy_forward_backward, scaled by d_loss / n_mean (the whole batch's count), and
 * the rows' loss SUM returned, so the caller adds the parts in its own order. */
double attn_cross_entropy_sum_forward_backward(float *d_logits, float d_loss, const float *logits,
                                               const int *labels, int rows, int V, int ignore,
                                               int n_mean) {
    ATTN_ASSERT(n_mean >= 1);
    const double scale = (double)d_loss / n_mean;
    double sum = 0.0;
    for (int r = 0; r < rows; r++) {
        if (labels[r] == ignore) continue;
        const float *z = logits + (size_t)r * V;
        ATTN_ASSERT(labels[r] >= 0 && labels[r] < V);
        const double lse = logsumexp(z, V);
        sum += lse - (double)z[labels[r]];
        row_gradient(d_logits + (size_t)r * V, z, V, labels[r], lse, scale);
    }
    return sum;
}

/* The whole mean: the sum over the counted rows, divided by their count. */
double attn_cross_entropy_forward_backward(float *d_logits, float d_loss, const float *logits,
                                           const int *labels, int rows, int V, int ignore) {
    const int n = counted(labels, rows, ignore);
    if (n == 0) return NAN;
    return attn_cross_entropy_sum_forward_backward(d_logits, d_loss, logits, labels, rows, V,
                                                   ignore, n) /
           n;
}
