/* kernel_paths.h -- the kernel tests run once per CPU path of the vectorised kernels
 * (attn_cpu_select): path 0 is "scalar" (plain C, every machine), path 1 "avx2". A path this
 * CPU or build cannot run is skipped with a printed line. */
#ifndef ATTN_KERNEL_PATHS_H
#define ATTN_KERNEL_PATHS_H

#include "test_util.h"

#include <stdio.h>

#define KP_COUNT 2
static const char *const kp_names[KP_COUNT] = {"scalar", "avx2"};

/* Makes path p active; false when this machine cannot run it (the caller returns: skipped). */
static inline bool kp_select(int p) {
    ck_assert_int_ge(p, 0);
    ck_assert_int_lt(p, KP_COUNT);
    if (!attn_cpu_path_supported(kp_names[p])) {
        printf("  %s kernels: not supported by this CPU or build, skipped\n", kp_names[p]);
        return false;
    }
    ck_assert(attn_cpu_select(kp_names[p]));
    ck_assert_str_eq(attn_cpu_path(), kp_names[p]);
    return true;
}

/* True while the scalar kernels are active. */
static inline bool kp_scalar(void) {
    return attn_cpu_path()[0] == 's';
}

#endif
