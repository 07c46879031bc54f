/* decoder_internal.h -- the decoder half of the server (decoder_api.c, decoder_compose.c): the
 * seq2seq models of the weights directory and their endpoints. Library-internal. */
#ifndef ATTN_SERVE_DECODER_INTERNAL_H
#define ATTN_SERVE_DECODER_INTERNAL_H

#include "serve_internal.h"

/* The entry of the seq2seq model named name, or for "" the default rewrite (compose false) or
 * compose model: the seq2seq-transformer one where loaded, else the first by name; -1 if none. */
int serve_decoder_find(const serve_app *app, const char *name, bool compose);
attn_seq2seq *serve_decoder_model(serve_app *app, int ctx, int i);
/* Context ctx's model of seq2seq `entry`, to explain (saliency: a backward) with until
 * serve_decoder_explain_end: a model with more than SERVE_KEEP_GRADS bytes of gradients gets the
 * one buffer its workers share, as serve_explain_begin/end do for a classifier. */
attn_seq2seq *serve_decoder_explain_begin(serve_app *app, int ctx, int entry);
void serve_decoder_explain_end(serve_app *app, int ctx, int entry);
/* A request parse error as 400 malformed_json / bad_request (503 out of memory). */
void serve_request_error(serve_response *rs, attn_status st, const attn_error *err);
void serve_unknown_decoder(serve_response *rs, const char *name);

void serve_api_generate(serve_app *app, int ctx, const serve_request *rq, serve_response *rs);
void serve_api_compose(serve_app *app, int ctx, const serve_request *rq, serve_response *rs);

#endif
