/* flops.c -- the FLOP accountant: every product attn_sgemm and its relatives issue books its
 * m*n*k multiply-adds, under the op it computes (attn_op) and the pass, into the counter the
 * calling thread set (attn_flops_set_counter); attn_op names for the tables. */
#include "kernels_internal.h"

#include "attn.h"

/* ---- FLOP accountant ------------------------------------------------------------------ */

/* Thread-local on purpose: a counter set in one thread never sees another thread's calls. */
static _Thread_local attn_flop_counts *flop_counter;

void attn_flops_set_counter(attn_flop_counts *c) {
    flop_counter = c;
}

attn_flop_counts *attn_flops_get_counter(void) {
    return flop_counter;
}

const char *attn_op_name(attn_op op) {
    switch (op) {
    case ATTN_OP_OTHER:
        return "other";
    case ATTN_OP_QKV:
        return "qkv";
    case ATTN_OP_QK:
        return "qk";
    case ATTN_OP_AV:
        return "av";
    case ATTN_OP_OUT_PROJ:
        return "out_proj";
    case ATTN_OP_FFN_UP:
        return "ffn_up";
    case ATTN_OP_FFN_DOWN:
        return "ffn_down";
    case ATTN_OP_INPUT:
        return "input";
    case ATTN_OP_RECURRENT:
        return "recurrent";
    case ATTN_OP_HEAD:
        return "head";
    case ATTN_OP_COUNT:
        break;
    }
    return "unknown";
}

/* Books one product of m*n*k multiply-adds under `tag` (forward or backward counter). */
void attn_flops_count(attn_op tag, bool backward, int m, int n, int k) {
    ATTN_ASSERT(tag >= 0 && tag < ATTN_OP_COUNT);
    ATTN_ASSERT(m >= 0 && n >= 0 && k >= 0);
    if (!flop_counter) return;
    uint64_t madds = (uint64_t)m * (uint64_t)n * (uint64_t)k;
    if (backward)
        flop_counter->bwd_madds[tag] += madds;
    else
        flop_counter->fwd_madds[tag] += madds;
    flop_counter->calls[tag]++;
}
