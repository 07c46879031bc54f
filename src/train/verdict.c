/* verdict.c -- how far an accuracy on n test sentences can be trusted: the majority-class
 * baseline of the set and the Wilson score interval on the accuracy (Wilson 1927; the interval
 * that keeps its coverage on small n and near 0 or 1, unlike the normal approximation). */
#include "attn_train.h"

#include <math.h>

/* z of a two-sided 95 % normal interval: Phi^-1(0.975). */
#define Z95 1.959963984540054

attn_status attn_accuracy_verdict_of(int correct, int n, int n_positive, attn_accuracy_verdict *out,
                                     attn_error *err) {
    if (n <= 0 || correct < 0 || correct > n || n_positive < 0 || n_positive > n)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "accuracy verdict: %d correct and %d positive of %d sentences", correct,
                           n_positive, n);
    double p = (double)correct / n, z2 = Z95 * Z95;
    double denom = 1.0 + z2 / n;
    double centre = (p + z2 / (2.0 * n)) / denom;
    double half = Z95 * sqrt(p * (1.0 - p) / n + z2 / (4.0 * (double)n * n)) / denom;
    int majority = n_positive > n - n_positive ? n_positive : n - n_positive;
    out->accuracy = p;
    out->lo = fmax(0.0, centre - half);
    out->hi = fmin(1.0, centre + half);
    out->baseline = (double)majority / n;
    out->chance = out->lo <= out->baseline;
    return ATTN_OK;
}
