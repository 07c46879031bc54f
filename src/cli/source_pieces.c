/* source_pieces.c -- sources whose work falls into several independent pieces (attn generate
 * --samples N: one piece per draw), computed on a pool and printed in input order, the bytes of
 * a serial run (cli.h, cli_run_pieces_pool).
 *
 * Sources are read one after the other and prepared on the reading thread; their pieces fill a
 * block of at most BLOCK pieces (and BLOCK sources), which the pool computes, each piece
 * printing into memory of its own; then the block's sources are written out in order: each
 * source's messages from reading it, then its pieces' output, up to and including its first
 * failed piece. A source with more pieces than a block holds goes on in the next block, so the
 * memory held is bounded by the block, not by the input. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 512

typedef struct src_rec {
    void *state;        /* from prepare; NULL when it failed */
    int n_pieces, next; /* pieces in all, pieces handed to a block so far */
    int done;           /* pieces written out */
    bool failed;
    char *msg; /* what preparing it said (stderr), written before its first piece */
    size_t msg_len;
} src_rec;

typedef struct piece {
    int src, k; /* the block's source, the piece's number in it */
    bool ok;
    char *out, *msg; /* what it printed: stdout, stderr */
    size_t out_len, msg_len;
} piece;

typedef struct block {
    const cli_piece_spec *s;
    src_rec src[BLOCK];
    piece pc[BLOCK];
    int n_src, n_pc;
    int failed, n; /* sources failed, sources read */
} block;

static void piece_task(void *ctx, int i, int worker) {
    block *b = ctx;
    piece *p = &b->pc[i];
    FILE *out = open_memstream(&p->out, &p->out_len), *msg = open_memstream(&p->msg, &p->msg_len);
    p->ok = out && msg && b->s->compute(b->s->ctx, worker, b->src[p->src].state, p->k, out, msg);
    if (out) fclose(out);
    if (msg) fclose(msg);
    if (!out || !msg) { /* nothing to say it with but stderr's own words, later */
        free(p->out), free(p->msg);
        p->out = p->msg = NULL;
        p->out_len = p->msg_len = 0;
    }
}

static void put(const char *bytes, size_t n, FILE *f) {
    if (n) fwrite(bytes, 1, n, f);
}

/* Writes source r out as far as this block goes; true when it is finished. */
static bool emit_source(block *b, src_rec *r, int first_pc) {
    if (r->msg) {
        put(r->msg, r->msg_len, stderr);
        free(r->msg);
        r->msg = NULL;
    }
    for (int i = first_pc; i < b->n_pc && b->pc[i].src == (int)(r - b->src); i++) {
        piece *p = &b->pc[i];
        if (!r->failed) {
            put(p->out, p->out_len, stdout);
            put(p->msg, p->msg_len, stderr);
            if (!p->ok && !p->out && !p->msg) cli_message(b->s->cmd, "out of memory");
            r->failed = !p->ok;
            r->done++;
        }
        free(p->out), free(p->msg);
    }
    return r->failed || r->done == r->n_pieces;
}

/* Computes the block's pieces, writes its sources out in order; an unfinished last source
 * becomes the next block's first. */
static void flush(block *b, attn_pool *pool) {
    attn_pool_run(pool, b->n_pc, piece_task, b);
    int first_pc = 0, carry = -1;
    for (int j = 0; j < b->n_src; j++) {
        src_rec *r = &b->src[j];
        const bool finished = emit_source(b, r, first_pc);
        while (first_pc < b->n_pc && b->pc[first_pc].src == j) first_pc++;
        if (finished) { /* a failed source's later pieces are never handed out */
            b->failed += r->failed || !r->state;
            if (r->state) b->s->release(r->state);
        } else {
            carry = j;
        }
    }
    if (carry >= 0) b->src[0] = b->src[carry];
    b->n_src = carry >= 0;
    b->n_pc = 0;
}

/* Reads one source (prepared, or refused with msg) into the blocks. */
static void feed(block *b, attn_pool *pool, src_rec r) {
    if (b->n_src == BLOCK) flush(b, pool);
    b->n++;
    b->src[b->n_src++] = r;
    for (;;) {
        src_rec *s = &b->src[b->n_src - 1];
        if (s->next == s->n_pieces) return;
        if (b->n_pc == BLOCK) {
            flush(b, pool);
            if (b->n_src == 0) return; /* it failed: its other pieces are never computed */
            continue;
        }
        b->pc[b->n_pc++] = (piece){.src = b->n_src - 1, .k = s->next++};
    }
}

/* prepare's call, its messages kept for the source's turn */
static src_rec prepared(const cli_piece_spec *s, const char *text, const char *where, int index) {
    src_rec r = {0};
    FILE *msg = open_memstream(&r.msg, &r.msg_len);
    if (msg) r.state = s->prepare(s->ctx, text, where, index, &r.n_pieces, msg);
    if (msg) fclose(msg);
    if (!msg) r.msg = NULL;
    if (!r.state) r.n_pieces = 0;
    r.failed = !r.state;
    return r;
}

/* A NUL line: refused, never prepared (as cli_run_sentences). */
static src_rec refused(const char *cmd, int line_no) {
    src_rec r = {.failed = true};
    FILE *msg = open_memstream(&r.msg, &r.msg_len);
    if (msg) {
        cli_message_to(msg, cmd, "line %d: NUL byte in line", line_no);
        fclose(msg);
    } else {
        r.msg = NULL;
    }
    return r;
}

int cli_run_pieces_pool(const cli_piece_spec *s, char **args, int n_args, attn_pool *pool) {
    block *b = calloc(1, sizeof *b);
    if (!b) {
        fprintf(stderr, "attn %s: out of memory\n", s->cmd);
        return CLI_ERROR;
    }
    b->s = s;
    for (int i = 0; i < n_args; i++) feed(b, pool, prepared(s, args[i], "sentence", i + 1));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int line_no = 0;
    while (n_args == 0 && (len = getline(&line, &cap, stdin)) >= 0) {
        line_no++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (strlen(line) != (size_t)len) /* as the TSV reader: never a cut line */
            feed(b, pool, refused(s->cmd, line_no));
        else if (strspn(line, " \t") != (size_t)len) /* blank lines are skipped */
            feed(b, pool, prepared(s, line, "line", line_no));
    }
    free(line);
    while (b->n_src > 0) flush(b, pool);
    const int failed = b->failed, n = b->n;
    free(b);
    return cli_lines_finish(s->cmd, s->verb, failed, n);
}
