/* seq2seq_cli.c -- what several commands share for seq2seq weights: recognising the file, and
 * `attn info` on it (cmd_info.c hands over). */
#include "attn_seq2seq.h"
#include "cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Only a regular file is peeked at: opened without blocking (a FIFO with no writer would block
 * an open or a read forever), then fstat. Anything else is left to the loaders' messages. */
/* Whether the first bytes of the regular file `path` contain `format` (quoted). */
static bool file_starts_with_format(const char *path, const char *format) {
    char head[256] = {0};
    const int fd = path ? open(path, O_RDONLY | O_NONBLOCK) : -1;
    if (fd < 0) return false;
    struct stat st;
    ssize_t n = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = read(fd, head, sizeof head - 1);
    close(fd);
    /* a safetensors file's 8-byte header length holds NUL bytes: search every byte read */
    const size_t len = n > 0 ? (size_t)n : 0, flen = strlen(format);
    for (size_t i = 0; i + flen <= len; i++)
        if (memcmp(head + i, format, flen) == 0) return true;
    return false;
}

bool cli_is_seq2seq_weights(const char *path) {
    return file_starts_with_format(path, "\"attn-seq2seq-weights-v1\"");
}

bool cli_is_seq2seq_checkpoint(const char *path) {
    return file_starts_with_format(path, "\"attn-seq2seq-checkpoint-v1\"");
}

int cli_s2s_thread_models(const char *cmd, attn_seq2seq *m, int threads, attn_seq2seq ***models) {
    *models = calloc((size_t)threads, sizeof **models);
    if (!*models) return cli_runtime_error(cmd, "out of memory");
    (*models)[0] = m;
    attn_error err;
    for (int w = 1; w < threads; w++)
        if (attn_seq2seq_replica(m, &(*models)[w], &err) != ATTN_OK) return cli_fail(cmd, &err);
    return -1;
}

void cli_s2s_thread_models_free(attn_seq2seq **models, int threads) {
    for (int w = 1; models && w < threads; w++) attn_seq2seq_free(models[w]);
    free(models);
}

void cli_s2s_note_off_task(FILE *f, const char *cmd, const int *src, int n, const char *where,
                           int index) {
    attn_parse parse;
    attn_error err;
    if (attn_grammar_parse(src, n, &parse, &err) == ATTN_OK) return;
    cli_message_to(f, cmd,
                   "%s %d: note: %s; the model was trained on sentences of the rewrite task "
                   "only, so its output says little here",
                   where, index, err.msg);
}

attn_status cli_s2s_read_source(attn_task task, const char *text, int *ids, int max_ids, int *n,
                                attn_error *err) {
    if (task != ATTN_TASK_COMPOSE) return attn_tokenize(text, ids, max_ids, n, err);
    if (max_ids < ATTN_COMPOSE_SRC)
        return attn_errorf(err, ATTN_ERR_ARG, "room for %d ids, a compose source has %d", max_ids,
                           ATTN_COMPOSE_SRC);
    *n = ATTN_COMPOSE_SRC;
    return attn_compose_source(text, ids, err);
}

void cli_s2s_source_free(void *state) {
    cli_s2s_source *s = state;
    if (!s) return;
    free(s->src);
    free(s->source);
    free(s);
}

cli_s2s_source *cli_s2s_source_read(const char *cmd, attn_task task, const char *line, bool teacher,
                                    const char *where, int index, FILE *msg) {
    cli_s2s_source *s = calloc(1, sizeof *s);
    if (!s || !(s->source = strdup(line))) {
        cli_message_to(msg, cmd, "%s %d: out of memory", where, index);
        free(s);
        return NULL;
    }
    s->where = where;
    s->index = index;
    if (teacher && !(s->target = strchr(s->source, '\t'))) {
        cli_message_to(msg, cmd, "%s %d: --teacher expects 'source<TAB>target'", where, index);
        cli_s2s_source_free(s);
        return NULL;
    }
    if (s->target) *s->target++ = '\0';
    const int max_ids = (int)(strlen(s->source) / 2 + 1 + ATTN_COMPOSE_SRC);
    s->src = malloc((size_t)max_ids * sizeof *s->src);
    attn_error err;
    if (!s->src ||
        cli_s2s_read_source(task, s->source, s->src, max_ids, &s->n_src, &err) != ATTN_OK) {
        cli_message_to(msg, cmd, "%s %d: %s", where, index, s->src ? err.msg : "out of memory");
        cli_s2s_source_free(s);
        return NULL;
    }
    if (task == ATTN_TASK_REWRITE) cli_s2s_note_off_task(msg, cmd, s->src, s->n_src, where, index);
    return s;
}

int cli_info_seq2seq(const char *path) {
    attn_error err;
    attn_seq2seq *m = NULL;
    if (attn_seq2seq_load_json(path, &m, &err) != ATTN_OK) return cli_fail("info", &err);
    const attn_seq2seq_config *c = attn_seq2seq_config_of(m);
    printf("file         %s\narch         %s\n", path, attn_s2s_arch_name(c->arch));
    if (c->arch == ATTN_S2S_GRU || c->arch == ATTN_S2S_ATTN) {
        printf("src_vocab    %d\ntgt_vocab    %d\nembed_dim    %d\nhidden_size  %d\n", c->src_vocab,
               c->tgt_vocab, c->d_model, c->hidden_size);
        printf("bidirectional %d\nmax_src_len  %d\nmax_tgt_len  %d\n", c->bidirectional,
               c->max_src_len, c->max_tgt_len);
    } else {
        printf("src_vocab    %d\ntgt_vocab    %d\nd_model      %d\nn_heads      %d\n", c->src_vocab,
               c->tgt_vocab, c->d_model, c->n_heads);
        printf("ffn_dim      %d\nenc_layers   %d\ndec_layers   %d\nmax_src_len  %d\n", c->ffn_dim,
               c->enc_layers, c->dec_layers, c->max_src_len);
        printf("max_tgt_len  %d\nnorm         %s\nactivation   %s\npos          %s\n",
               c->max_tgt_len, c->norm == ATTN_NORM_PRE ? "pre" : "post",
               c->activation == ATTN_ACT_GELU ? "gelu" : "relu", attn_pos_name(c->pos));
    }
    if (c->task != ATTN_TASK_REWRITE) printf("task         %s\n", attn_task_name(c->task));
    cli_print_recorded_kernels(attn_seq2seq_kernels(m));
    cli_print_tensor_header(56);
    for (size_t i = 0; i < attn_seq2seq_tensor_count(m); i++) {
        int shape[4];
        const int nd = attn_seq2seq_tensor_shape(m, i, shape);
        cli_print_tensor_row(56, attn_seq2seq_tensor_name(m, i), shape, nd,
                             attn_seq2seq_tensor_numel(m, i));
    }
    printf("\ntotal parameters: %zu\n", attn_seq2seq_n_params(m));
    attn_seq2seq_free(m);
    return CLI_OK;
}

/* Exact match and token accuracy of greedy decoding per set (or file) and by source length
 * (10-word buckets over every set given): `attn eval` on seq2seq weights. Compose models add
 * the teacher-forced loss per target token (exact match means little there). */
#define EVAL_BUCKETS 8 /* 1-10, ..., 61-70, 71+ words */
typedef struct eval_buckets {
    long pairs[EVAL_BUCKETS], exact[EVAL_BUCKETS];
    double tok[EVAL_BUCKETS], toks[EVAL_BUCKETS];
    int rows; /* sets scored */
} eval_buckets;

/* Scores p (one row named `name`) on the pool, adding to the buckets. Each pair's counts come
 * from attn_seq2seq_score_pool (one pair per piece); the sums below run in pair order over
 * the serial path's values (a pair's token accuracy right / tokens times its tokens), so the
 * output is the same for every thread count. */
static int eval_pairs(attn_seq2seq *m, const attn_pairs *p, const char *name, attn_pool *pool,
                      eval_buckets *b) {
    attn_error err;
    if (b->rows++ == 0) /* the header once the first set is read */
        printf("%-10s %6s  %-11s  %s%s\n", "set", "pairs", "exact match", "token accuracy",
               p->task == ATTN_TASK_COMPOSE ? "  loss per token" : "");
    attn_s2s_pair_score *s = malloc((size_t)p->src->n * sizeof *s);
    if (!s) return cli_runtime_error("eval", "out of memory");
    if (attn_seq2seq_score_pool(m, p, 0, p->src->n, pool, s, &err) != ATTN_OK) {
        free(s);
        return cli_fail("eval", &err);
    }
    long exact = 0;
    double right = 0, tokens = 0;
    for (int i = 0; i < p->src->n; i++) {
        const int len = p->src->lengths[i], k = len > 70 ? 7 : (len - 1) / 10;
        const double toks = p->tgt_lengths[i] + 1;
        const double token_acc = (double)s[i].right / (double)s[i].tokens; /* toks == tokens */
        exact += s[i].exact;
        right += token_acc * toks;
        tokens += toks;
        b->pairs[k]++, b->exact[k] += s[i].exact, b->tok[k] += token_acc * toks;
        b->toks[k] += toks;
    }
    free(s);
    printf("%-10s %6d  %-11.4f  %.4f", name, p->src->n, (double)exact / p->src->n, right / tokens);
    if (p->task == ATTN_TASK_COMPOSE) {
        double loss = 0.0;
        if (attn_seq2seq_loss_pool(m, p, 0, p->src->n, pool, &loss, &err) != ATTN_OK) {
            putchar('\n');
            return cli_fail("eval", &err);
        }
        printf("          %.4f", loss);
    }
    putchar('\n');
    return CLI_OK;
}

int cli_eval_seq2seq(const char *path, const attn_set *sets, int n_sets, int n, uint64_t seed,
                     const char *data, int threads) {
    attn_error err;
    attn_seq2seq *m = NULL;
    attn_pool *pool = NULL;
    if (attn_seq2seq_load_json(path, &m, &err) != ATTN_OK) return cli_fail("eval", &err);
    int rc = cli_threads_start("eval", &threads, &pool); /* the same output for every N */
    if (rc >= 0) {
        attn_seq2seq_free(m);
        return rc;
    }
    const attn_seq2seq_config *c = attn_seq2seq_config_of(m);
    eval_buckets b;
    memset(&b, 0, sizeof b);
    rc = CLI_OK;
    for (int s = 0; s < (data ? 1 : n_sets) && rc == CLI_OK; s++) {
        attn_pairs *p = NULL;
        const int size = n > 0 ? n : cli_set_default_n(sets[s]);
        const int max_out =
            c->max_tgt_len - 1 < ATTN_S2S_MAX_TGT ? c->max_tgt_len - 1 : ATTN_S2S_MAX_TGT;
        if ((data ? attn_pairs_read_tsv(data, c->task, c->max_src_len, max_out, &p, &err)
                  : attn_pairs_generate(c->task, sets[s], size, seed, &p, &err)) != ATTN_OK)
            rc = cli_fail("eval", &err);
        else
            rc = eval_pairs(m, p, data ? data : attn_set_name(sets[s]), pool, &b);
        attn_pairs_free(p);
    }
    if (rc == CLI_OK) {
        printf("\n%-10s %6s  %-11s  %s\n", "words", "pairs", "exact match", "token accuracy");
        for (int k = 0; k < EVAL_BUCKETS; k++) {
            if (!b.pairs[k]) continue;
            char label[16];
            if (k == 7)
                snprintf(label, sizeof label, "71+");
            else
                snprintf(label, sizeof label, "%d-%d", 10 * k + 1, 10 * k + 10);
            printf("%-10s %6ld  %-11.4f  %.4f\n", label, b.pairs[k],
                   (double)b.exact[k] / b.pairs[k], b.tok[k] / b.toks[k]);
        }
    }
    attn_seq2seq_free(m);
    attn_pool_free(pool);
    return rc;
}
