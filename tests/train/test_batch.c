/* test_batch.c -- the batcher: each epoch is a permutation; the same PRNG state gives the same
 * order; padding, lengths and labels reproduce the dataset; bucketing sorts each chunk. The
 * dataset is built here (random lengths 1..20), independently of src/data/. */
#include "test_util.h"
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

#define N_SENT 203 /* not a multiple of the batch size */

typedef struct fixture {
    attn_dataset d;
    int labels[N_SENT], lengths[N_SENT];
    size_t offsets[N_SENT + 1];
    int ids[N_SENT * 20];
} fixture;

static fixture *make_data(void) {
    fixture *f = calloc(1, sizeof *f);
    ck_assert(f != NULL);
    attn_rng r = attn_rng_seed(99);
    f->offsets[0] = 0;
    for (int i = 0; i < N_SENT; i++) {
        f->lengths[i] = 1 + (int)attn_rng_below(&r, 20);
        f->labels[i] = (int)attn_rng_below(&r, 2);
        for (int t = 0; t < f->lengths[i]; t++)
            f->ids[f->offsets[i] + t] = 2 + (int)attn_rng_below(&r, ATTN_N_WORDS);
        f->offsets[i + 1] = f->offsets[i] + f->lengths[i];
    }
    f->d.n = N_SENT;
    f->d.labels = f->labels;
    f->d.lengths = f->lengths;
    f->d.offsets = f->offsets;
    f->d.ids = f->ids;
    return f;
}

/* A batcher over sentences [first, first + n) of d that must be valid. */
static attn_batcher *new_batcher(const attn_dataset *d, int first, int n, int batch, int bucket) {
    attn_batcher *b = NULL;
    attn_error err;
    ck_assert_msg(attn_batcher_create(d, first, n, batch, bucket, &b, &err) == ATTN_OK, "%s",
                  err.msg);
    return b;
}

/* Checks every batch against the dataset and that the batches cover [first, first+n) once. */
static void check_epoch(attn_batcher *b, const attn_dataset *d, int first, int n) {
    int *seen = calloc((size_t)d->n, sizeof(int));
    ck_assert(seen != NULL);
    int total = 0, small = 0;
    for (int i = 0; i < b->n_batches; i++) {
        attn_batch batch;
        const float *labels = attn_batcher_fill(b, i, &batch);
        ck_assert(batch.B >= 1 && batch.B <= b->batch_size);
        if (batch.B < b->batch_size) small++;
        int max_len = 0;
        for (int r = 0; r < batch.B; r++) {
            int s = b->order[b->batch_start[i] + r];
            ck_assert(s >= first && s < first + n);
            seen[s]++;
            ck_assert_int_eq(batch.lengths[r], d->lengths[s]);
            ck_assert(labels[r] == (d->labels[s] ? 1.0f : 0.0f));
            for (int t = 0; t < batch.T; t++) {
                int want = t < d->lengths[s] ? d->ids[d->offsets[s] + t] : ATTN_PAD_ID;
                ck_assert_int_eq(batch.ids[(size_t)r * batch.T + t], want);
            }
            if (d->lengths[s] > max_len) max_len = d->lengths[s];
        }
        ck_assert_int_eq(batch.T, max_len); /* padded to the batch's longest sentence */
        total += batch.B;
    }
    ck_assert_int_eq(total, n);
    ck_assert_int_eq(small, n % b->batch_size ? 1 : 0);
    for (int s = 0; s < d->n; s++) ck_assert_int_eq(seen[s], s >= first && s < first + n);
    free(seen);
}

START_TEST(test_sequential) {
    fixture *f = make_data();
    attn_batcher *b = new_batcher(&f->d, 10, 150, 16, 1);
    ck_assert_int_eq(b->n_batches, 10);
    for (int i = 0; i < 150; i++) ck_assert_int_eq(b->order[i], 10 + i);
    check_epoch(b, &f->d, 10, 150);
    attn_batcher_free(b);
    free(f);
}
END_TEST

START_TEST(test_shuffle_deterministic) {
    fixture *f = make_data();
    attn_batcher *a = new_batcher(&f->d, 0, N_SENT, 32, 1);
    attn_batcher *b = new_batcher(&f->d, 0, N_SENT, 32, 1);
    attn_rng ra = attn_rng_seed(5), rb = attn_rng_seed(5);
    int *prev = malloc(N_SENT * sizeof(int));
    ck_assert(prev != NULL);
    for (int epoch = 0; epoch < 3; epoch++) {
        attn_batcher_shuffle(a, &ra);
        attn_batcher_shuffle(b, &rb);
        ck_assert(memcmp(a->order, b->order, N_SENT * sizeof(int)) == 0);
        ck_assert(memcmp(a->batch_start, b->batch_start, a->n_batches * sizeof(int)) == 0);
        if (epoch > 0) ck_assert(memcmp(prev, a->order, N_SENT * sizeof(int)) != 0);
        memcpy(prev, a->order, N_SENT * sizeof(int));
        check_epoch(a, &f->d, 0, N_SENT);
    }
    /* a different seed gives a different order */
    attn_rng rc = attn_rng_seed(6);
    attn_batcher_shuffle(b, &rc);
    ck_assert(memcmp(prev, b->order, N_SENT * sizeof(int)) != 0);
    free(prev);
    attn_batcher_free(a);
    attn_batcher_free(b);
    free(f);
}
END_TEST

START_TEST(test_bucketing) {
    fixture *f = make_data();
    const int B = 8, K = 4;
    attn_batcher *b = new_batcher(&f->d, 0, N_SENT, B, K);
    attn_rng r = attn_rng_seed(11);
    attn_batcher_shuffle(b, &r);
    for (int s = 0; s < N_SENT; s += B * K) {
        int end = s + B * K < N_SENT ? s + B * K : N_SENT;
        for (int i = s + 1; i < end; i++)
            ck_assert(f->lengths[b->order[i - 1]] <= f->lengths[b->order[i]]);
    }
    /* the batch order itself is shuffled: not simply 0, B, 2B, ... */
    int in_order = 1;
    for (int i = 0; i < b->n_batches; i++) in_order &= b->batch_start[i] == i * B;
    ck_assert(!in_order);
    check_epoch(b, &f->d, 0, N_SENT);
    attn_batcher_free(b);
    free(f);
}
END_TEST

START_TEST(test_bad_args) {
    fixture *f = make_data();
    attn_batcher *b = NULL;
    attn_error err;
    ck_assert(attn_batcher_create(&f->d, 200, 10, 8, 1, &b, &err) == ATTN_ERR_ARG);
    ck_assert(b == NULL);
    ck_assert(strstr(err.msg, "batcher") != NULL);
    ck_assert(attn_batcher_create(&f->d, 0, 10, 0, 1, &b, &err) == ATTN_ERR_ARG);
    attn_batcher_free(NULL);
    free(f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("batch");
    tcase_add_test(tc, test_sequential);
    tcase_add_test(tc, test_shuffle_deterministic);
    tcase_add_test(tc, test_bucketing);
    tcase_add_test(tc, test_bad_args);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
