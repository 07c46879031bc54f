/* alloc.c -- zeroed buffers for the large arrays a training step sweeps whole (attn_util.h).
 *
 * A fresh calloc of tens of megabytes is pages the kernel maps on first touch, one 4 KiB fault
 * each -- two where the first touch reads (Adam's moments: m = m * beta1 + ...; a gradient
 * accumulated with beta 1), which maps the shared zero page and then copies it on the write.
 * At the base seq2seq-transformer's 44 M parameters a training call took about 350 k of them
 * (bench/README.md, "Where the base training step goes"). Here such a buffer is populated
 * writable at once (MADV_POPULATE_WRITE, Linux 5.14): the same pages, zeroed by the kernel as
 * before, without a fault for each. Advice only: where it is refused (an older kernel) the buffer
 * is calloc's, faulted on touch as before. Transparent huge pages are not asked for: on the
 * machines measured their first allocation (zeroing, compaction) cost more than the faults they
 * save. The contents are calloc's zeros either way; the values computed in them do not depend on
 * how the pages were mapped. */
#define _DEFAULT_SOURCE /* madvise's MADV_ flags */
#include "attn_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Below this the faults are few (and calloc may hand out reused heap memory, already mapped). */
#define LARGE_BYTES ((size_t)8 << 20)
#define PAGE        ((uintptr_t)4096)

void *attn_calloc_large(size_t n, size_t size) {
    void *p = calloc(n, size);
    if (!p || size == 0 || n < LARGE_BYTES / size) return p;
#ifdef MADV_POPULATE_WRITE
    /* the whole pages inside the buffer (the partial ones at its ends are calloc's neighbours') */
    const uintptr_t lo = (uintptr_t)p, hi = lo + n * size; /* calloc checked n * size */
    const uintptr_t a = (lo + PAGE - 1) & ~(PAGE - 1), b = hi & ~(PAGE - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#endif
    return p;
}

void *attn_malloc_large(size_t n, size_t size) {
    if (size == 0 || n < LARGE_BYTES / size) return malloc(n * size);
    return attn_calloc_large(n, size); /* fresh pages: calloc's zeros cost nothing more */
}
