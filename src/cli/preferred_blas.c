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

/* argv of this process from /proc/self/cmdline (NUL-separated): the pointers and, from argv[0]
 * on, the strings are two malloc'd blocks; NULL if it cannot be read. Any length. */
static char **own_argv(void) {
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *text = malloc(cap);
    for (size_t got = 1; text && got > 0; n += got) {
        if (n + 1 >= cap) {
            char *bigger = realloc(text, cap *= 2);
            if (!bigger) {
                free(text);
                text = NULL;
                break;
            }
            text = bigger;
        }
        got = fread(text + n, 1, cap - 1 - n, f);
    }
    fclose(f);
    if (!text) return NULL;
    text[n] = '\0';
    size_t argc = 0;
    for (size_t i = 0; i < n; i += strlen(text + i) + 1) argc++;
    char **argv = argc ? malloc((argc + 1) * sizeof *argv) : NULL;
    if (!argv) {
        free(text);
        return NULL;
    }
    argc = 0;
    for (size_t i = 0; i < n; i += strlen(text + i) + 1) argv[argc++] = text + i;
    argv[argc] = NULL;
    return argv;
}

__attribute__((constructor)) static void attn_use_preferred_blas_core(void) {
    const char *core = attn_blas_preferred_core();
    if (!core) return;
    char **argv = own_argv();
    if (!argv || setenv("OPENBLAS_CORETYPE", core, 1) != 0) {
        if (argv) free(argv[0]);
        free(argv);
        return;
    }
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"); /* exec failed: go on with the kernels there are */
    free(argv[0]);
    free(argv);
}
