/* test_seq2seq_mask.c -- attn_seq2seq_set_causal_mask, the switch of the causal-mask experiment:
 * with the mask a decoder row never sees a later word (rows <= i bit-identical when the words
 * after i change), without it every row does; decoding refuses while the mask is off; switching
 * it back gives the first forward's logits bit for bit; other architectures are refused. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <string.h>

#define T 6

static attn_seq2seq *make(void) {
    attn_seq2seq_config c = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    c.d_model = 16;
    c.n_heads = 2;
    c.ffn_dim = 24;
    attn_error err;
    attn_seq2seq *m = NULL;
    ck_assert_msg(attn_seq2seq_create(&c, 3, &m, &err) == ATTN_OK, "%s", err.msg);
    return m;
}

/* Rows of [T, V] logits a and b that are bit-identical, as a bit mask over rows. */
static unsigned same_rows(const float *a, const float *b, int V) {
    unsigned bits = 0;
    for (int t = 0; t < T; t++)
        if (!memcmp(a + (size_t)t * V, b + (size_t)t * V, (size_t)V * sizeof(float)))
            bits |= 1u << t;
    return bits;
}

START_TEST(test_mask_switch) {
    attn_seq2seq *m = make();
    const int V = attn_seq2seq_config_of(m)->tgt_vocab, n_src = 7;
    const int src[7] = {5, 9, 12, 3, 40, 41, 2};
    int dec[T] = {ATTN_TGT_BOS, 11, 22, 33, 44, 55}, alt[T];
    static float first[T * ATTN_TGT_VOCAB_SIZE], a[T * ATTN_TGT_VOCAB_SIZE],
        b[T * ATTN_TGT_VOCAB_SIZE];
    int n = T;
    attn_error err;
    attn_s2s_batch batch = {1, n_src, T, src, &n_src, dec, &n};
    ck_assert(attn_seq2seq_forward(m, &batch, first, &err) == ATTN_OK);
    for (int i = 0; i + 1 < T; i++) {
        memcpy(alt, dec, sizeof alt);
        for (int t = i + 1; t < T; t++) alt[t] = dec[t] + 1;
        const unsigned upto_i = (1u << (i + 1)) - 1;
        for (int masked = 1; masked >= 0; masked--) {
            ck_assert(attn_seq2seq_set_causal_mask(m, masked, &err) == ATTN_OK);
            batch.tgt_ids = dec;
            ck_assert(attn_seq2seq_forward(m, &batch, a, &err) == ATTN_OK);
            batch.tgt_ids = alt;
            ck_assert(attn_seq2seq_forward(m, &batch, b, &err) == ATTN_OK);
            const unsigned same = same_rows(a, b, V);
            /* masked: exactly rows 0..i unchanged; unmasked: every row changed */
            ck_assert_msg(same == (masked ? upto_i : 0u), "i %d masked %d: rows same %#x", i,
                          masked, same);
        }
    }
    /* off: decoding refuses (a value error naming the switch) */
    int out[8], n_out;
    ck_assert_int_eq(attn_seq2seq_greedy(m, src, n_src, 4, true, out, &n_out, NULL, NULL, &err),
                     ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "causal mask is off"), "%s", err.msg);
    ck_assert_int_eq(attn_seq2seq_greedy(m, src, n_src, 4, false, out, &n_out, NULL, NULL, &err),
                     ATTN_ERR_VALUE);
    /* back on: the first forward, bit for bit, and decoding runs */
    ck_assert(attn_seq2seq_set_causal_mask(m, true, &err) == ATTN_OK);
    batch.tgt_ids = dec;
    ck_assert(attn_seq2seq_forward(m, &batch, a, &err) == ATTN_OK);
    ck_assert(memcmp(a, first, (size_t)T * V * sizeof(float)) == 0);
    ck_assert(attn_seq2seq_greedy(m, src, n_src, 4, true, out, &n_out, NULL, NULL, &err) ==
              ATTN_OK);
    ck_assert_int_eq(attn_seq2seq_set_causal_mask(NULL, true, &err), ATTN_ERR_ARG);
    attn_seq2seq_free(m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("models/seq2seq_mask");
    TCase *tc = tcase_create("mask");
    tcase_add_test(tc, test_mask_switch);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
