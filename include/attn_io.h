/* attn_io.h -- every file format and all JSON text (src/io/): weights files (attn-weights-v1),
 * checkpoints (attn-checkpoint-v1), the reproduce report, explanations and explain requests.
 * Reading is strict (RFC 8259, size limits checked before allocating); writing goes through a
 * temporary file that is checked and renamed (attn_write_file_atomic).
 *
 *     attn_model *m = NULL;
 *     attn_vocab *vocab = NULL;                     // NULL afterwards: the built-in vocabulary
 *     if (attn_weights_load_json_vocab("weights/lstm-seed1.json", &m, &vocab, &err) != ATTN_OK)
 *         return 1;
 *     ...
 *     attn_weights_save_json(m, false, "out.json", &err);   // floats read back bit for bit
 *     attn_vocab_free(vocab);
 *     attn_model_free(m);
 */
#ifndef ATTN_IO_H
#define ATTN_IO_H

#include "attn_data.h"
#include "attn_explain.h"
#include "attn_kernelset.h"
#include "attn_model.h"
#include "attn_train.h"
#include "attn_util.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits on reading files (src/io/) -------------------------------------------------- *
 * The loaders read only regular files (not FIFOs, devices or directories) of at most
 * attn_io_max_file_bytes() bytes, and create models of at most attn_io_max_params()
 * parameters, checked from the config BEFORE anything is allocated. Each limit has a
 * default and can be raised (or lowered) by an environment variable holding a positive
 * decimal integer. Parsing a JSON number array costs about 40x its size in memory (one
 * cJSON node, 80 bytes, per number; "0,0,0,..." is 2 bytes a value); "data_b64" tensors cost
 * about 1x. So a JSON text of more than attn_io_max_json_values() values (numbers, strings,
 * keys' values, containers: counted by the grammar scan, before any is allocated) is refused:
 * the parse tree stays under ~5.4 GB whatever the file. */
#define ATTN_MAX_FILE_BYTES_DEFAULT ((size_t)1 << 29) /* 512 MiB; env ATTN_MAX_FILE_BYTES */
/* 134,217,728 (512 MiB of float32): a ViT-Base-size encoder (86 M) and the base nn.Transformer
 * (44-65 M) fit with room; a model of that size trains in about 4x its parameter bytes. */
#define ATTN_MAX_PARAMS_DEFAULT      ((size_t)1 << 27) /* env ATTN_MAX_PARAMS */
#define ATTN_MAX_JSON_VALUES_DEFAULT ((size_t)1 << 26) /* 67,108,864; env ATTN_MAX_JSON_VALUES */
/* A safetensors file is mapped, not read: ATTN_MAX_FILE_BYTES does not apply to it; its header
 * (JSON) may have at most this many bytes and its data at most 4 x ATTN_MAX_PARAMS. */
#define ATTN_SAFETENSORS_MAX_HEADER (100 * 1000 * 1000)
size_t attn_io_max_file_bytes(void);
size_t attn_io_max_params(void);
size_t attn_io_max_json_values(void);

/* ---- weights JSON (src/io/) ------------------------------------------------------------ *
 * Format "attn-weights-v1":
 *   {"format": "attn-weights-v1",
 *    "config": {"arch": "rnn"|"lstm"|"gru"|"transformer", "vocab_size": 91, "embed_dim": 16,
 *               "hidden_size": 32, "n_heads": 2, "ffn_dim": 64, "n_layers": 2, "max_len": 81,
 *               "norm": "pre"|"post", "activation": "relu"|"gelu",
 *               "pos": "learned"|"sinusoidal"|"none"|"rope"|"alibi" (absent = learned),
 *               "attn_unscaled": 1 (only when set)},
 *    "tensors": {"<state_dict key>": {"shape": [..], "data": [.. flat, row-major ..]}, ...}}
 * Instead of "data", a tensor may hold "data_b64": the base64 (RFC 4648, "=" padded) of its
 * values as little-endian float32, flat and row-major -- about 5.3 bytes per value instead of
 * about 13, and about 1x the file size in memory to parse instead of about 40x.
 * Config keys that do not apply to an arch may be omitted. A "module." or "_orig_mod." prefix
 * on tensor names is stripped. Floats are written so that they round-trip bit for bit.
 * The JSON is parsed strictly (RFC 8259: no trailing data, no leading zeros, ...); the limits
 * above apply (the parameter count is checked from the config before allocating).
 * Optional "vocab": ["[PAD]", "[CLS]", "word", ...], the model's own vocabulary, token i = row i
 * of embedding.weight. Absent: the built-in course-review vocabulary. Every loader checks it
 * (attn_vocab_create's rules, then attn_vocab_check_config against "config") and fails naming
 * the file and the index at fault. */
attn_status attn_weights_load_json(const char *path, attn_model **out, attn_error *err);
/* How a caller gets the vocabulary of a weights file: as attn_weights_load_json, and *vocab
 * receives the file's "vocab" (the caller's: attn_vocab_free), or NULL when the file has none
 * (then attn_vocab_builtin() applies). Text goes to ids with attn_tokenize_vocab(vocab, ...). */
attn_status attn_weights_load_json_vocab(const char *path, attn_model **out, attn_vocab **vocab,
                                         attn_error *err);
/* As attn_weights_load_json, from buf[0..len) (need not be NUL-terminated); name (may be
 * NULL) is what messages call it. */
attn_status attn_weights_load_json_from_buffer(const char *buf, size_t len, const char *name,
                                               attn_model **out, attn_error *err);
/* Loads tensors from `path` into an existing model (same config); all problems at once. The
 * model stays on the built-in vocabulary: a file with another "vocab" is refused. */
attn_status attn_weights_load_into(attn_model *m, const char *path, attn_error *err);
/* Writes params (or grads, with grads=true) atomically (attn_write_file_atomic). Refuses
 * NaN/Inf (naming the tensor) before writing anything. */
attn_status attn_weights_save_json(const attn_model *m, bool grads, const char *path,
                                   attn_error *err);
typedef enum attn_weights_encoding {
    ATTN_WEIGHTS_TEXT, /* "data": [numbers] (what attn_weights_save_json writes) */
    ATTN_WEIGHTS_B64,  /* "data_b64": "base64 of little-endian float32" */
} attn_weights_encoding;
attn_status attn_weights_save_json_as(const attn_model *m, bool grads, attn_weights_encoding enc,
                                      const char *path, attn_error *err);
/* As attn_weights_save_json_as, with vocab (may be NULL, or the built-in one: no "vocab" is
 * written) as the file's "vocab"; refused (nothing written) unless it fits the model
 * (attn_vocab_check_config). Loading the file back gives the same tokens. */
attn_status attn_weights_save_json_vocab(const attn_model *m, const attn_vocab *vocab, bool grads,
                                         attn_weights_encoding enc, const char *path,
                                         attn_error *err);

/* ---- weights as safetensors (src/io/safetensors.c, safetensors_models.c) ------------------- *
 * [u64 LE header length N][N bytes of JSON][raw little-endian data]; header {"__metadata__":
 * {"format": "attn-weights-v1", "config": "<the config object's JSON text>", "vocab": "<the
 * vocab array's JSON text>" (own vocabulary only), "writer": "attn"}, "<state_dict key>":
 * {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}. Only F32 is read (any
 * other dtype is refused naming the tensor). Read strictly: see docs/weights-format.md. Every
 * weights loader above (attn_weights_load_json, _vocab, attn_weights_load_into) reads this
 * format too, recognised by content (8-byte length, byte 7 zero, then '{'); the JSON savers write
 * it when the path ends in ".safetensors" (grads=false only). */
bool attn_weights_is_safetensors(const char *path); /* by content; false if unreadable */
attn_status attn_weights_load_safetensors(const char *path, attn_model **out, attn_vocab **vocab,
                                          attn_error *err); /* vocab may be NULL */
attn_status attn_weights_save_safetensors(const attn_model *m, const attn_vocab *vocab,
                                          const char *path, attn_error *err);

/* Writes text[0..len) to path atomically: a temporary file with a unique name beside the
 * destination (created O_EXCL), fsync, rename, fsync of the directory; on failure the old file
 * is untouched. A symlink is followed (its target is replaced, the link stays a link); an
 * existing device or FIFO (/dev/null, /dev/full) is written in place, every write checked; a
 * directory or socket is refused. Errors name the file. (src/io/io_common.c) */
attn_status attn_write_file_atomic(const char *path, const char *text, size_t len, attn_error *err);
/* The directory part of path into dir[size] (truncated to fit): "." for a bare name, "/" for a
 * file in the root, else everything before the last '/'. */
void attn_path_dir(const char *path, char *dir, size_t size);

/* The summary `attn reproduce` writes (DIR/reproduce.json), src/io/report_json.c. */
typedef struct attn_report_run {
    attn_arch arch;
    int seed;
    size_t n_params;
    double acc[ATTN_N_TEST_SETS]; /* per set of `sets` below */
    const char *weights;          /* file name of the run's weights */
} attn_report_run;
typedef struct attn_report {
    int epochs, train_size, seeds, eval_batch;
    const char *blas_core;
    const char *set_names[ATTN_N_TEST_SETS]; /* the sets of acc, in its order */
    const attn_report_run *runs;
    int n_runs;
    const attn_kernels_info *kernels; /* the kernels the runs ran on (NULL: not recorded) */
} attn_report;
/* As JSON {"epochs", "train_size", "seeds", "eval_batch", "blas_core", "kernels", "runs":
 * [{"model", "seed", "params", "accuracy": {set: acc}, "weights"}]} (strings escaped by cJSON; one
 * line per run), written with attn_write_file_atomic. */
attn_status attn_report_save_json(const attn_report *r, const char *path, attn_error *err);
/* What a saved report says about how its runs were made: epochs and train_size (-1 where
 * absent) and the OpenBLAS core ("unknown" where absent). */
typedef struct attn_report_header {
    int epochs, train_size;
    char blas_core[64];
    bool has_kernels;          /* false in reports written before the kernels were recorded */
    attn_kernels_info kernels; /* "kernels" (include/attn_kernelset.h) */
} attn_report_header;
attn_status attn_report_peek(const char *path, attn_report_header *h, attn_error *err);

/* ---- explanations as JSON (src/io/explain_json.c) ------------------------------------- */

/* The one JSON string escaper of attn (the explain JSON, the CLI's JSON output and attn serve's
 * answers): s as a string literal, written through put in pieces: quotes and backslashes
 * escaped, bytes below 0x20 and 0x7f as \u00XX, each byte that does not start a valid UTF-8
 * sequence as \ufffd, the rest as is -- the literal is always valid UTF-8 JSON. */
void attn_json_escape(const char *s, void (*put)(const char *text, size_t n, void *user),
                      void *user);
/* attn_json_escape to f. */
void attn_json_write_string(FILE *f, const char *s);

/* ---- the JSON writer (src/io/json_writer.c) ------------------------------------------ */

/* The one way attn writes JSON text outside the document printers: objects, arrays, keys and
 * the ", " and ": " between them are the writer's, strings go through attn_json_escape.
 *     attn_json_writer w;
 *     attn_json_writer_init(&w, NULL);                  // into a growing buffer (or a FILE*)
 *     attn_json_begin_object(&w);
 *     attn_json_key(&w, "seed"), attn_json_int(&w, 1);
 *     attn_json_key(&w, "logits"), attn_json_begin_array(&w);
 *     attn_json_double(&w, 0.25), attn_json_end_array(&w);
 *     attn_json_end_object(&w);                          // {"seed": 1, "logits": [0.25]}
 *     char *text; size_t len;
 *     if (attn_json_writer_take(&w, &text, &len, &err) != ATTN_OK) ...
 * A misuse (a key outside an object, a value where a key is due, an end that does not match
 * its begin, nesting deeper than ATTN_JSON_MAX_DEPTH), a failed allocation or a failed write
 * makes the writer ignore every later call; _take (or _finish) reports the first. */
#define ATTN_JSON_MAX_DEPTH 32
typedef struct attn_json_writer {
    FILE *f;   /* NULL: into buf */
    char *buf; /* NUL-terminated, len bytes */
    size_t len, cap;
    int depth;                              /* open objects and arrays */
    char open[ATTN_JSON_MAX_DEPTH];         /* '{' or '[' */
    const char *lines[ATTN_JSON_MAX_DEPTH]; /* an array of lines: its indent (else NULL) */
    bool first;                             /* no value yet in the innermost container */
    bool keyed;                             /* a key was written; its value is due */
    bool done;                              /* the top-level value is complete */
    attn_status status;                     /* ATTN_OK until the first failure */
    char msg[128];                          /* what failed */
} attn_json_writer;
/* f: write to it (the writer does not close it); NULL: into the writer's buffer. */
void attn_json_writer_init(attn_json_writer *w, FILE *f);
void attn_json_begin_object(attn_json_writer *w);
void attn_json_end_object(attn_json_writer *w);
void attn_json_begin_array(attn_json_writer *w);
void attn_json_end_array(attn_json_writer *w);
void attn_json_key(attn_json_writer *w, const char *key);  /* escaped, then ": " */
void attn_json_string(attn_json_writer *w, const char *s); /* escaped (attn_json_escape) */
void attn_json_int(attn_json_writer *w, long long x);
void attn_json_uint(attn_json_writer *w, unsigned long long x);
void attn_json_double(attn_json_writer *w, double x); /* printf "%.9g" */
void attn_json_float(attn_json_writer *w, float x);   /* "%.9g" of (double)x, printf-free */
void attn_json_fixed(attn_json_writer *w, double x, int decimals); /* printf "%.*f" */
void attn_json_digits(attn_json_writer *w, double x, int digits);  /* printf "%.*g" */
void attn_json_bool(attn_json_writer *w, bool b);
void attn_json_null(attn_json_writer *w);
/* A measured value: printf "%.*g" of x, or null when x is not finite (not measured: no held-out
 * set, a diverged run), never "nan" or "inf", which are not JSON. */
void attn_json_measured(attn_json_writer *w, double x, int digits);
/* A key and its value in one call: attn_json_key, then the value. */
void attn_json_field_string(attn_json_writer *w, const char *key, const char *s);
void attn_json_field_int(attn_json_writer *w, const char *key, long long x);
void attn_json_field_uint(attn_json_writer *w, const char *key, unsigned long long x);
void attn_json_field_double(attn_json_writer *w, const char *key, double x);
void attn_json_field_fixed(attn_json_writer *w, const char *key, double x, int decimals);
void attn_json_field_bool(attn_json_writer *w, const char *key, bool b);
/* An array laid out one element a line, each after indent (not copied: it must live until the
 * array's end): "[\n" indent e0 ",\n" indent e1 "\n]", and "[\n]" when empty -- the layout of
 * `attn vocab --json`. The elements themselves are written as anywhere else. */
void attn_json_begin_array_lines(attn_json_writer *w, const char *indent);
/* attn_json_key, then attn_json_begin_array or _begin_object. */
void attn_json_begin_array_field(attn_json_writer *w, const char *key);
void attn_json_begin_object_field(attn_json_writer *w, const char *key);
/* text[0..n): one complete JSON value written elsewhere (an explanation from
 * attn_explanation_to_json), copied as is. */
void attn_json_raw(attn_json_writer *w, const char *text, size_t n);
/* k as the object attn_kernels_info_write_json writes ({"mode", "openblas", "blas_core",
 * "blas_threads", "cpu_path"}, src/io/kernels_json.c), the same bytes. */
void attn_json_kernels(attn_json_writer *w, const attn_kernels_info *k);
/* A failure of the caller's own while it writes (an allocation): the writer ignores later calls
 * and _take reports s and why. */
void attn_json_writer_fail(attn_json_writer *w, attn_status s, const char *why);
/* ATTN_OK when every call succeeded and every object and array is closed; else the first
 * failure (ATTN_ERR_ARG misuse or unbalanced, ATTN_ERR_NOMEM, ATTN_ERR_IO). Frees the buffer. */
attn_status attn_json_writer_finish(attn_json_writer *w, attn_error *err);
/* As _finish, and hands the buffer over: *out (NUL-terminated, *len bytes; len may be NULL) is
 * the caller's to free; NULL on error. */
attn_status attn_json_writer_take(attn_json_writer *w, char **out, size_t *len, attn_error *err);

/* The object `attn predict --format json` prints for one sentence, without a newline:
 * {"sentence": s (or, for a sentence given as ids, "ids": [ids[0..n_ids)]), "label": 1 if
 * logit > 0 else 0, "probability", "logit"}, the numbers with %.9g. */
void attn_prediction_write_json(FILE *f, const char *sentence, const int *ids, int n_ids,
                                float logit, double probability);

/* The object `attn explain --format json` prints for one sentence (and `attn serve` returns per
 * model), without a newline: {"sentence", "tokens", "logit", "probability", "attention"
 * [layer][head][query][key] (Transformer; with attn_explain_opts.qk then "head_size", "q", "k"
 * [layer][head][position][head_size] and "scores" [layer][head][query][key]),
 * "prefix_probability" (recurrent), "saliency":
 * {"grad_norm", "grad_x_input", "integrated_gradients"}, "ig_steps", "ig_baseline_logit"};
 * floats with %.9g. ids: the sentence's n_words word ids, tokens named by vocab (NULL: the
 * built-in vocabulary). *out (NUL-terminated, *len bytes; len may be NULL) is the caller's to
 * free. */
attn_status attn_explanation_to_json(const attn_vocab *vocab, const char *sentence, const int *ids,
                                     const attn_explanation *e, char **out, size_t *len,
                                     attn_error *err);

/* A request {"sentence": "...", "models": ["rnn", ...]} ("models" optional), parsed strictly
 * (RFC 8259 grammar, no other keys, no \u0000 in strings); names are not checked here. */
#define ATTN_EXPLAIN_REQUEST_MAX_MODELS 8
typedef struct attn_explain_request {
    char *sentence;
    int n_models; /* 0: "models" absent or empty */
    char *models[ATTN_EXPLAIN_REQUEST_MAX_MODELS];
    int ig_steps; /* "ig_steps": integrated-gradient steps 0..ATTN_EXPLAIN_MAX_STEPS (absent: 0,
                   * none) */
    bool qk;      /* "qk": true asks for each head's q, k and scores (attn_explain_opts.qk) */
} attn_explain_request;
/* ATTN_ERR_PARSE (malformed JSON with byte offset, line and column: code
 * ATTN_CODE_MALFORMED_JSON; wrong types; unknown key), ATTN_ERR_VALUE (too many models) or
 * ATTN_ERR_NOMEM; on error *out is empty. */
attn_status attn_explain_request_parse(const char *buf, size_t len, attn_explain_request *out,
                                       attn_error *err);
void attn_explain_request_clear(attn_explain_request *r); /* frees the strings; NULL ok */

/* ---- checkpoints as JSON (src/io/checkpoint_json.c) ----------------------------------- */

/* Format "attn-checkpoint-v1" (JSON): the fields of attn_train_state, floats widened to double
 * (printed with enough digits to read back bit for bit). Written atomically (path.tmp, fflush,
 * fsync, rename): an existing file survives a failure.
 * Resuming: read the configs with attn_checkpoint_peek, create the model and the trainer
 * with them, then attn_trainer_load_checkpoint. A resumed run ends bit-identical to an
 * uninterrupted one. */
attn_status attn_trainer_save_checkpoint(const attn_trainer *t, const char *path, attn_error *err);
/* n_sentences (may be NULL) receives the size of the data the run was trained on. */
attn_status attn_checkpoint_peek(const char *path, attn_model_config *model_cfg,
                                 attn_train_config *train_cfg, int *n_sentences, attn_error *err);
attn_status attn_trainer_load_checkpoint(attn_trainer *t, const char *path, attn_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_IO_H */
