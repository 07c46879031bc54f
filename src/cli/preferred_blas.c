/* preferred_blas.c -- run on the OpenBLAS kernels this CPU should have. OpenBLAS 0.3.21 (Debian
 * 12) falls back to its SSE3 "Prescott" kernels on a CPU it does not recognise (seen on
 * virtualised Intel Xeons with AVX-512): 2-3x slower, and rounding unlike every other machine,
 * so the committed weights/ no longer come out byte for byte. attn_blas_preferred_core() names
 * the kernels OpenBLAS should have picked; OpenBLAS reads OPENBLAS_CORETYPE only when it is
 * loaded, so this constructor sets it and executes the program again, before main (OpenBLAS, a
 * dependency, is initialised before it). A set OPENBLAS_CORETYPE -- the user's, or this one -- is
 * never overridden, so it happens at most once. Linked into attn, the test programs and the
 * benchmarks, so all of them run on the same kernels (tools/blas_core.py does the same for
 * PyTorch). */
#include "attn_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void attn_use_preferred_blas_core(void) {
    const char *core = attn_blas_preferred_core();
    if (!core) return;
    static char cmdline[1 << 16]; /* argv as NUL-separated strings */
    static char *args[1024];
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) return;
    const size_t n = fread(cmdline, 1, sizeof cmdline - 1, f);
    const bool whole = feof(f);
    fclose(f);
    int argc = 0;
    for (size_t i = 0; i < n && argc < 1023; i += strlen(cmdline + i) + 1)
        args[argc++] = cmdline + i;
    args[argc] = NULL;
    if (!whole || argc == 0 || argc == 1023 || setenv("OPENBLAS_CORETYPE", core, 1) != 0) return;
    execv("/proc/self/exe", args);
    unsetenv("OPENBLAS_CORETYPE"); /* exec failed: go on with the kernels there are */
}
