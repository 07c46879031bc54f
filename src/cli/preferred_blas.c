/* preferred_blas.c -- the kernels attn runs on, chosen before main: pinned (when unset) or
 * native, from ATTN_KERNELS=pinned|native (include/attn_kernelset.h, docs/numerics.md). A
 * constructor, so that the choice is made before any product runs, in-process (OpenBLAS, a
 * dependency, is initialised before it; its kernel table is chosen again, no re-execution).
 * Linked into attn, the test programs and the benchmarks, so all of them run on the same
 * kernels (tools/blas_core.py does the same for PyTorch). attn then selects the command's
 * default unless ATTN_KERNELS is set (src/cli/kernels_policy.c), and the command's --kernels
 * option chooses again later (src/cli/options.c). */
#include "attn.h"
#include "attn_kernelset.h"

#include <stdlib.h>

__attribute__((constructor)) static void attn_use_preferred_blas_core(void) {
    const char *env = getenv("ATTN_KERNELS");
    attn_kernels_mode mode = ATTN_KERNELS_PINNED;
    if (env && env[0] && !attn_kernels_mode_parse(env, &mode))
        attn_log(ATTN_LOG_WARN, "ATTN_KERNELS=%s: unknown (pinned or native); running pinned", env);
    attn_kernels_select(mode);
}
