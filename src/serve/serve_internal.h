/* serve_internal.h -- the app's state shared by the server's files, from the bottom up:
 * responses.c (what every endpoint answers with), registry.c (the models of both
 * families and the precomputed answers), api.c, predict.c, decoder_compose.c and decoder_api.c (the
 * endpoints), app.c (the router). Each uses only files before it. Library-internal. */
#ifndef ATTN_SERVE_INTERNAL_H
#define ATTN_SERVE_INTERNAL_H

#include "attn_io.h"
#include "attn_seq2seq.h"
#include "sbuf.h"
#include "serve.h"

#include <pthread.h>

#define SERVE_N_ARCH       4  /* rnn, lstm, transformer, gru (attn_arch) */
#define SERVE_MAX_SETS     6  /* attn_set values */
#define SERVE_MAX_DECODERS 16 /* seq2seq model names (the lowest seed of each is served) */
#define SERVE_MAX_ENTRY    (SERVE_N_ARCH * SERVE_MAX_SEEDS + SERVE_MAX_DECODERS)

/* The families of a weights directory, in the order registry.c lists (and loads) them. */
typedef enum serve_family { SERVE_SEQ2SEQ, SERVE_CLASSIFIER } serve_family;

/* One served model: DIR/<name>-seed<seed>.json (either format, recognised by content). */
typedef struct serve_entry {
    serve_family family;
    char name[64]; /* the arch ("rnn") or the file's stem ("seq2seq-transformer") */
    int seed;
    size_t n_params;
    /* classifiers */
    attn_arch arch;
    attn_model_config cfg;
    const attn_vocab *vocab; /* the file's own "vocab" (owned) or attn_vocab_builtin() */
    bool task_vocab; /* vocab holds the task's tokens in the task's order: test sets apply */
    int vocab_group; /* entries with equal vocabularies share a group, 0..n_groups-1 */
    /* seq2seq models */
    attn_seq2seq_config s2s;
    bool compose; /* compose-*: the source is "<polarity> <subject>" */
} serve_entry;

struct serve_app {
    int n_entries;
    serve_entry entries[SERVE_MAX_ENTRY]; /* the seq2seq models by name (the lowest seed of
                                           * each), then the classifiers by arch (rnn, lstm, gru,
                                           * transformer) and seed */
    int explain_entry[SERVE_N_ARCH];      /* the lowest seed of each arch, or -1 */
    int n_ctx;
    void **models;     /* [n_ctx][n_entries]: context c's copy of entry i (c > 0: replicas) */
    int n_groups;      /* distinct vocabularies */
    int default_group; /* explained without "models": the task's vocabulary if loaded, else 0 */
    char *vocab_json[SERVE_MAX_ENTRY]; /* the /api/vocab answer of each group */
    size_t vocab_len[SERVE_MAX_ENTRY];
    char *models_json, *figures_json, *decoders_json;
    size_t models_len, figures_len, decoders_len;
    char summary[1024];
    pthread_mutex_t cache_lock;
    /* a model with more than SERVE_KEEP_GRADS bytes of gradients: one buffer, lent to one
     * explaining worker at a time (serve_explain_begin/end, serve_decoder_explain_begin/end);
     * NULL before the first */
    pthread_mutex_t grads_lock[SERVE_MAX_ENTRY];
    float *shared_grads[SERVE_MAX_ENTRY];
    char *set_cache[SERVE_MAX_ENTRY][SERVE_MAX_SETS]; /* the /api/sets answers, once computed */
    size_t set_cache_len[SERVE_MAX_ENTRY][SERVE_MAX_SETS];
};

/* The decoder endpoints (decoder_api.c): /api/decoders, /api/generate and /api/compose answered
 * (true) or rq left to the caller (false). */
bool serve_decoder_is_heavy(const char *uri);
bool serve_decoder_route(serve_app *app, int ctx, const serve_request *rq, size_t path_len,
                         serve_response *rs);

/* The entry of (arch, seed), or -1. */
int serve_find_entry(const serve_app *app, attn_arch arch, int seed);
attn_model *serve_model(serve_app *app, int ctx, int entry);
/* Gradient memory each worker may keep for its explains of one classifier: a model with more (a
 * ViT-Base-size encoder: 340 MB) has one gradient buffer for all workers, lent to one explain
 * of it at a time, so that the server holds at most one such buffer per model (none while it
 * only predicts) instead of one per worker; smaller models' explains run side by side. */
#define SERVE_KEEP_GRADS ((size_t)64 << 20)
/* Context ctx's model of classifier `entry`, to explain with until serve_explain_end. */
attn_model *serve_explain_begin(serve_app *app, int ctx, int entry);
void serve_explain_end(serve_app *app, int ctx, int entry);

/* The value of key in a query string "a=1&b=2" into out (at most n-1 bytes, %XX and '+'
 * decoded): 1, or 0 if absent, -1 if too long or badly encoded. */
int serve_query_value(const char *query, const char *key, char *out, size_t n);

/* The tokenizer's error for sentence read with vocab as an answer: 400 unknown_word with
 * "position", "word", "nearest", "place" (the class of words its place takes, or null),
 * "model" (and "line" when line > 0), "unknown_count" and "unknown_words" (each unknown word of
 * the sentence so: attn_vocab_suggest); too_long, empty_sentence or bad_sentence. */
void serve_tokenize_error(serve_response *rs, const attn_error *err, const attn_vocab *vocab,
                          const char *sentence, const char *model, int line);
/* The most words every one of the entries takes. */
int serve_max_words(const serve_app *app, const int *entries, int n);

/* The endpoints (api.c, predict.c). */
void serve_api_predict(serve_app *app, int ctx, const serve_request *rq, const char *query,
                       serve_response *rs);
void serve_api_vocab(serve_app *app, const char *query, serve_response *rs);
void serve_api_explain(serve_app *app, int ctx, const serve_request *rq, serve_response *rs);
void serve_api_sets(serve_app *app, int ctx, const char *name, const char *query,
                    serve_response *rs);
/* positions.c: GET /api/positions; a new model equal to the learned-positions Transformer m with
 * its position table zeroed (the caller frees it), or NULL after an error answer in rs. */
void serve_api_positions(serve_app *app, int ctx, const char *query, serve_response *rs);
attn_model *serve_model_without_positions(const attn_model *m, serve_response *rs);
/* rs answers 200 with the JSON text json[0..len) (copied). */
void serve_json_copy(serve_response *rs, const char *json, size_t len);
/* rs answers status with w's text (taken); on w's failure 503 out_of_memory and false. */
bool serve_json_answer(serve_response *rs, int status, attn_json_writer *w);
/* "model": model, "seed": seed -- the two fields that name a model in every answer. */
void serve_json_model_fields(attn_json_writer *w, const char *model, int seed);

#endif
