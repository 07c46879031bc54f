/* experiments_decoder.h -- what the decoder experiments (experiments_decoder*.c: causal-mask,
 * kv-cache, parallel-decoder, looking-back, alignment; write-up §6) share: their trained models,
 * the rewrite test sets, ULP distances, and the verdict rules tests/lab/test_verdicts.c feeds. */
#ifndef ATTN_EXPERIMENTS_DECODER_H
#define ATTN_EXPERIMENTS_DECODER_H

#include "attn_seq2seq.h"
#include "experiments_internal.h"

/* The trained seq2seq model `arch` ("seq2seq-transformer", "seq2seq-gru", "seq2seq-attn") of
 * seed: opts->weights_dir/<arch>-seed<S>.json (made by `attn reproduce --task rewrite --out
 * DIR`). With --quick and no such file, a small one trained here (EXP_S2S_QUICK_EPOCHS epochs
 * over EXP_S2S_QUICK_TRAIN pairs: seconds, and far from the full model's accuracy), and
 * *trained_here (may be NULL) says so. Without --quick a missing file is an error naming it. */
#define EXP_S2S_QUICK_EPOCHS 3
#define EXP_S2S_QUICK_TRAIN  3000
attn_status exp_s2s_model(const attn_experiment_opts *o, const char *arch, int seed,
                          attn_seq2seq **out, bool *trained_here, attn_error *err);
/* The four rewrite test sets (plain, distractor, fill4, fill8) of seed, n pairs each. */
attn_status exp_s2s_test_sets(int n, uint64_t seed, attn_pairs *sets[ATTN_N_TEST_SETS],
                              attn_error *err);
void exp_s2s_test_sets_free(attn_pairs *sets[ATTN_N_TEST_SETS]);
/* Source i of p: *n its words. */
const int *exp_pair_source(const attn_pairs *p, int i, int *n);
/* ULPs between two finite floats (0 for equal values, +0 and -0 included). */
uint32_t exp_ulp_distance(float a, float b);

EXP_DECLARE(causal_mask);
EXP_DECLARE(kv_cache);
EXP_DECLARE(parallel_decoder);
EXP_DECLARE(looking_back);
EXP_DECLARE(alignment);

#endif
