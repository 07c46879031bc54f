/* fuzz_common.h -- shared by the libFuzzer harnesses in fuzz/: the fuzz input as a file, the
 * small model configs the harnesses load into, and a hard check that survives NDEBUG.
 *
 * The loaders (weights JSON, checkpoint, TSV) take a path today, so each input is written to
 * one per-process file in /dev/shm (tmpfs: no disk I/O) and the loader reads it back. When a
 * loader gains a from-memory variant, its harness changes one line: the call that passes
 * fuzz_input_path(data, size) passes (data, size) instead. */
#ifndef ATTN_FUZZ_COMMON_H
#define ATTN_FUZZ_COMMON_H

#include "attn.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A broken invariant is a finding: abort so libFuzzer keeps the input. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A failed load must say so consistently: the status in err, a message, NUL-terminated. */
static inline void fuzz_check_result(attn_status st, const attn_error *err) {
    if (st == ATTN_OK) return;
    FUZZ_CHECK(err->status == st);
    FUZZ_CHECK(err->msg[0] != '\0');
    FUZZ_CHECK(memchr(err->msg, '\0', sizeof err->msg) != NULL);
}

static char fuzz_path[64];
static int fuzz_fd = -1;

static inline void fuzz_input_cleanup(void) {
    if (fuzz_fd >= 0) close(fuzz_fd);
    if (fuzz_path[0]) unlink(fuzz_path);
}

/* Writes data[0..size) to this process's input file and returns its path. */
static inline const char *fuzz_input_path(const uint8_t *data, size_t size) {
    if (fuzz_fd < 0) {
        const char *dirs[] = {"/dev/shm", "/tmp"};
        for (size_t i = 0; i < 2 && fuzz_fd < 0; i++) {
            snprintf(fuzz_path, sizeof fuzz_path, "%s/attn-fuzz-%ld", dirs[i], (long)getpid());
            fuzz_fd = open(fuzz_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        }
        FUZZ_CHECK(fuzz_fd >= 0);
        atexit(fuzz_input_cleanup);
    }
    FUZZ_CHECK(ftruncate(fuzz_fd, 0) == 0);
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(fuzz_fd, data + done, size - done, (off_t)done);
        FUZZ_CHECK(n > 0);
        done += (size_t)n;
    }
    return fuzz_path;
}

/* Small models of each kind (few parameters: fast to create, short files). The vocabulary is
 * the task's 91 words, so a generated data set fits them. */
static inline attn_model_config fuzz_small_config(attn_arch arch, int variant) {
    attn_model_config c = attn_model_config_default(arch);
    c.embed_dim = 2;
    if (arch == ATTN_ARCH_TRANSFORMER) {
        c.n_heads = 1;
        c.ffn_dim = 2;
        c.n_layers = variant ? 2 : 1;
        c.max_len = 8;
        c.norm = variant ? ATTN_NORM_POST : ATTN_NORM_PRE;
        c.activation = variant ? ATTN_ACT_GELU : ATTN_ACT_RELU;
    } else {
        c.hidden_size = 2;
    }
    return c;
}

#endif
