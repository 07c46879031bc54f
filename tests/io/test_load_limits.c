/* test_load_limits.c -- src/io/load_limits.c: every loader computes the parameter count from
 * the config and checks ATTN_MAX_PARAMS before it allocates. A hostile file of a few hundred
 * bytes of each kind (classifier weights, seq2seq weights of the three architectures, both
 * checkpoint kinds, checksums right) asks for 0.8-4.8 G parameters: `attn info` / `attn train
 * --resume` run under a 1 GiB address-space limit (not under AddressSanitizer, whose shadow
 * memory needs the address space) must exit 1 with "over the limit" within a second. And
 * attn_seq2seq_config_n_params, computed without allocating, equals the created model's count;
 * a JSON text of more values than ATTN_MAX_JSON_VALUES is refused before its tree is built. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static char dir[256];

#define S2S_TR_CONFIG                                                                              \
    "{\"arch\":\"seq2seq-transformer\",\"src_vocab\":1048576,\"tgt_vocab\":1048576,"               \
    "\"d_model\":256,\"n_heads\":2,\"ffn_dim\":64,\"enc_layers\":2,\"dec_layers\":2,"              \
    "\"max_src_len\":80,\"max_tgt_len\":16,\"norm\":\"pre\",\"activation\":\"relu\","              \
    "\"pos\":\"learned\"}"
#define CLS_CONFIG                                                                                 \
    "{\"arch\":\"transformer\",\"vocab_size\":1048576,\"embed_dim\":1024,\"hidden_size\":0,"       \
    "\"n_layers\":2,\"n_heads\":2,\"ffn_dim\":64,\"max_len\":64,\"norm\":\"pre\","                 \
    "\"activation\":\"relu\"}"

static const struct {
    const char *name, *command, *text;
    bool crc; /* a checkpoint: the text gets its checksum tail */
} files[] = {
    {"cls.json", "info",
     "{\"format\":\"attn-weights-v1\",\"config\":" CLS_CONFIG ",\"tensors\":{}}", false},
    {"s2s_tr.json", "info",
     "{\"format\":\"attn-seq2seq-weights-v1\",\"config\":" S2S_TR_CONFIG ",\"tensors\":{}}", false},
    {"s2s_gru.json", "info",
     "{\"format\":\"attn-seq2seq-weights-v1\",\"config\":{\"arch\":\"seq2seq-gru\",\"src_vocab\":"
     "91,\"tgt_vocab\":95,\"d_model\":32,\"hidden_size\":16384,\"bidirectional\":0,"
     "\"max_src_len\":80,\"max_tgt_len\":16},\"tensors\":{}}",
     false},
    {"s2s_attn.json", "info",
     "{\"format\":\"attn-seq2seq-weights-v1\",\"config\":{\"arch\":\"seq2seq-attn\",\"src_vocab\":"
     "91,\"tgt_vocab\":95,\"d_model\":32,\"hidden_size\":16384,\"bidirectional\":1,"
     "\"max_src_len\":80,\"max_tgt_len\":16},\"tensors\":{}}",
     false},
    {"ck.json", "train",
     "{\"format\":\"attn-checkpoint-v1\",\"model\":" CLS_CONFIG ",\"train\":{\"adam\":{}}}", true},
    {"s2s_ck.json", "train",
     "{\"format\":\"attn-seq2seq-checkpoint-v1\",\"config\":" S2S_TR_CONFIG ",\"train\":{}}", true},
};
#define N_FILES (sizeof files / sizeof files[0])

/* Writes file i into dir; returns its path (static). */
static const char *write_hostile(size_t i) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
    char text[2048];
    size_t len = strlen(files[i].text);
    ck_assert(len + 32 < sizeof text);
    memcpy(text, files[i].text, len + 1);
    if (files[i].crc) { /* ...} -> ...,"crc32":"0x<crc of the bytes before the comma>"}\n */
        len--;
        unsigned long crc = crc32(0L, (const Bytef *)text, (uInt)len);
        len += (size_t)snprintf(text + len, sizeof text - len, ",\"crc32\":\"0x%08lx\"}\n", crc);
    }
    tu_write_file(path, text, len);
    return path;
}

/* Runs `attn <command> <flag> path` (limited to 1 GiB of address space, env if
 * given: the value of ATTN_MAX_PARAMS); returns the exit code, stderr in err[cap], the seconds
 * taken in *secs. */
static int run_attn(const char *command, const char *path, const char *env, char *err, size_t cap,
                    double *secs) {
    const char *bin = getenv("ATTN_BINARY");
    ck_assert_ptr_nonnull(bin);
    char err_path[512];
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fflush(stdout); /* or the child's exit would print the buffer again */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
#if !defined(__SANITIZE_ADDRESS__)
        struct rlimit rl = {(rlim_t)1 << 30, (rlim_t)1 << 30};
        if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(120);
#endif
        if (env) setenv("ATTN_MAX_PARAMS", env, 1);
        if (!freopen(err_path, "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(121);
        const char *flag = strcmp(command, "info") == 0 ? "--weights" : "--resume";
        execl(bin, bin, command, flag, path, (char *)NULL);
        _exit(122);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    size_t n = 0;
    char *text = tu_read_file(err_path, &n);
    snprintf(err, cap, "%s", text ? text : "");
    free(text);
    ck_assert_msg(WIFEXITED(status), "%s %s: killed by signal %d", command, path,
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return WEXITSTATUS(status);
}

START_TEST(test_hostile_files_refused_before_allocating) {
    for (size_t i = 0; i < N_FILES; i++) {
        const char *path = write_hostile(i);
        char err[4096];
        double secs = 0;
        int rc = run_attn(files[i].command, path, NULL, err, sizeof err, &secs);
        printf("%-14s %4zu bytes: exit %d in %.3f s\n", files[i].name, strlen(files[i].text), rc,
               secs);
        ck_assert_msg(rc == 1, "%s: exit %d: %s", files[i].name, rc, err);
        char limit[64];
        snprintf(limit, sizeof limit, "over the limit of %zu", (size_t)ATTN_MAX_PARAMS_DEFAULT);
        ck_assert_msg(strstr(err, limit) && strstr(err, "ATTN_MAX_PARAMS"), "%s: %s", files[i].name,
                      err);
        ck_assert_msg(secs < 1.0, "%s took %.3f s", files[i].name, secs);
    }
}
END_TEST

/* The committed seq2seq weights under a limit of 1000 parameters: refused, named. */
START_TEST(test_committed_seq2seq_weights_over_a_small_limit) {
    static const char *const names[] = {"seq2seq-transformer", "seq2seq-gru", "seq2seq-attn"};
    for (int i = 0; i < 3; i++) {
        char rel[128], err[4096];
        snprintf(rel, sizeof rel, "weights/%s-seed1.json", names[i]);
        double secs = 0;
        int rc = run_attn("info", tu_source_path(rel), "1000", err, sizeof err, &secs);
        ck_assert_msg(rc == 1 && strstr(err, "over the limit of 1000"), "%s: exit %d: %s", rel, rc,
                      err);
        rc = run_attn("info", tu_source_path(rel), NULL, err, sizeof err, &secs);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", rel, rc, err);
    }
}
END_TEST

START_TEST(test_config_n_params_without_allocating) {
    for (int a = 0; a < 3; a++) {
        attn_seq2seq_config c = attn_seq2seq_config_default((attn_s2s_arch)a);
        attn_seq2seq *m = NULL;
        attn_error err;
        ck_assert_int_eq(attn_seq2seq_create(&c, 1, &m, &err), ATTN_OK);
        ck_assert_uint_eq(attn_seq2seq_config_n_params(&c), attn_seq2seq_n_params(m));
        ck_assert_uint_gt(attn_seq2seq_n_params(m), 1000);
        attn_seq2seq_free(m);
        c.d_model = 0; /* not valid: 0 */
        ck_assert_uint_eq(attn_seq2seq_config_n_params(&c), 0);
    }
    /* the hostile transformer: counted, never created (2 x 2^20 x 256 embeddings alone) */
    attn_seq2seq_config c = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    c.src_vocab = c.tgt_vocab = 1 << 20;
    c.d_model = 256;
    ck_assert_uint_gt(attn_seq2seq_config_n_params(&c), (size_t)3 << 28);
}
END_TEST

/* The JSON reader counts the values while it checks the grammar and refuses more than
 * ATTN_MAX_JSON_VALUES before building a tree, naming the binary format; the same files load
 * under the default. */
START_TEST(test_json_values_bounded_before_parsing) {
    char cls[512], s2s[512]; /* tu_source_path's buffer is reused */
    snprintf(cls, sizeof cls, "%s", tu_source_path("weights/rnn-seed1.json"));
    snprintf(s2s, sizeof s2s, "%s", tu_source_path("weights/seq2seq-gru-seed1.json"));
    attn_error err;
    attn_model *m = NULL;
    attn_seq2seq *q = NULL;
    setenv("ATTN_MAX_JSON_VALUES", "1000", 1);
    ck_assert_int_eq(attn_weights_load_json(cls, &m, &err), ATTN_ERR_NOMEM);
    ck_assert_msg(strstr(err.msg, cls) && strstr(err.msg, "ATTN_MAX_JSON_VALUES") &&
                      strstr(err.msg, "safetensors (attn convert)"),
                  "%s", err.msg);
    ck_assert_int_eq(attn_seq2seq_load_json(s2s, &q, &err), ATTN_ERR_NOMEM);
    ck_assert_msg(strstr(err.msg, s2s) && strstr(err.msg, "ATTN_MAX_JSON_VALUES") &&
                      !strstr(err.msg, "malformed"),
                  "%s", err.msg);
    unsetenv("ATTN_MAX_JSON_VALUES");
    ck_assert_msg(attn_weights_load_json(cls, &m, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_seq2seq_load_json(s2s, &q, &err) == ATTN_OK, "%s", err.msg);
    attn_model_free(m);
    attn_seq2seq_free(q);
}
END_TEST

int main(void) {
    Suite *s = suite_create("load_limits");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_hostile_files_refused_before_allocating);
    tcase_add_test(tc, test_committed_seq2seq_weights_over_a_small_limit);
    tcase_add_test(tc, test_config_n_params_without_allocating);
    tcase_add_test(tc, test_json_values_bounded_before_parsing);
    suite_add_tcase(s, tc);
    return tu_run_suite_in_tmp(s, dir, sizeof dir, "load_limits");
}
