/* test_gru.c -- the GRU model: whole-model finite differences, PyTorch golden logits
 * (bit-identical at batch 1) and gradients, padding invariance. The tests themselves are shared
 * with test_rnn.c and test_lstm.c (recurrent_tests.h). */
#include "recurrent_tests.h"

int main(void) {
    return mc_recurrent_main(ATTN_ARCH_GRU);
}
