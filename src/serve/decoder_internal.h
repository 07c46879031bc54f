/* decoder_internal.h -- the decoder half of the server (decoder_api.c, decoder_compose.c): the
 * seq2seq models of the weights directory and their endpoints. Library-internal. */
#ifndef ATTN_SERVE_DECODER_INTERNAL_H
#define ATTN_SERVE_DECODER_INTERNAL_H

#include "attn_seq2seq.h"
#include "serve_internal.h"

#define SERVE_MAX_DECODERS 16 /* seq2seq model names (the lowest seed of each is served) */

typedef struct serve_decoder {
    char name[64]; /* the file name without -seed<S>.json: "seq2seq-transformer" */
    int seed;
    attn_seq2seq_config cfg;
    size_t n_params;
    bool compose; /* compose-*: the source is "<polarity> <subject>" */
} serve_decoder;

struct serve_decoders {
    int n, n_ctx;
    serve_decoder d[SERVE_MAX_DECODERS];
    attn_seq2seq **models; /* [n_ctx][n] */
    char *json;            /* the /api/decoders answer */
    size_t json_len;
};

/* The decoder named name (""; the first rewrite model, or the first compose one), or -1. */
int serve_decoder_find(const serve_app *app, const char *name, bool compose);
attn_seq2seq *serve_decoder_model(serve_app *app, int ctx, int i);
/* A request parse error as 400 malformed_json / bad_request (503 out of memory). */
void serve_request_error(serve_response *rs, attn_status st, const attn_error *err);
void serve_unknown_decoder(serve_response *rs, const char *name);

void serve_api_generate(serve_app *app, int ctx, const serve_request *rq, serve_response *rs);
void serve_api_compose(serve_app *app, int ctx, const serve_request *rq, serve_response *rs);

#endif
