/* io_internal.h -- file and JSON helpers shared by the weights format (attn-weights-v1) and the
 * training checkpoint (attn-checkpoint-v1): whole-file reading, atomic writing, problem
 * collection for messages, and the model config <-> JSON object mapping. Library-internal. */
#ifndef ATTN_IO_INTERNAL_H
#define ATTN_IO_INTERNAL_H

#include "attn.h"

#include <cjson/cJSON.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Reads the whole file into *out (NUL-terminated, caller frees) and its size into *len.
 * Only regular files are read (opened with O_NONBLOCK, so a FIFO does not block, then
 * fstat), of at most attn_io_max_file_bytes(). Errors name the file: ATTN_ERR_IO (cannot open,
 * not a regular file, over the limit, read error), ATTN_ERR_NOMEM. */
attn_status attn_io_read_file(const char *path, char **out, size_t *len, attn_error *err);

/* Parses buf[0..len) as exactly one JSON value (RFC 8259: no leading zeros, no trailing data,
 * nesting at most CJSON_NESTING_LIMIT, strings valid UTF-8 without \u0000, no object with two
 * members of one name). ATTN_ERR_PARSE with *at (byte offset) and *why, or
 * ATTN_ERR_NOMEM (*why says so) when the text is valid but the tree did not fit in memory.
 * Sets no attn_error: the caller names the file. */
attn_status attn_io_json_parse(const char *buf, size_t len, cJSON **out, size_t *at,
                               const char **why);
/* attn_io_read_file then attn_io_json_parse: *out the tree (caller frees) or NULL, the error
 * naming path and, for bad JSON, the byte, line and column; crc: then the checksum tail
 * (attn_io_crc_check), a checkpoint's reading. */
attn_status attn_io_parse_file(const char *path, bool crc, cJSON **out, attn_error *err);
/* attn_io_json_parse of a request body buf[len] (NULL with len 0: empty): the error gives the
 * byte, line and column, and for bad JSON the code ATTN_CODE_MALFORMED_JSON at that byte (the
 * server answers 400 malformed_json by it). */
attn_status attn_io_parse_request(const char *buf, size_t len, cJSON **out, attn_error *err);
/* Length of the valid UTF-8 sequence at p[0..avail) (1..4), 0 if none starts there (a stray
 * continuation byte, an overlong form, a surrogate, beyond U+10FFFF, or cut off by avail). */
size_t attn_io_utf8_len(const unsigned char *p, size_t avail);
/* 1-based line and column of byte `at` of buf. */
void attn_io_text_position(const char *buf, size_t at, int *line, int *col);

/* x as printf("%.9g", (double)x) writes it, byte for byte (float_text.c; about 5x faster):
 * the text of the weights files' and the explain JSON's floats. Returns the length. */
#define ATTN_IO_FLOAT_TEXT_MAX 24
int attn_io_format_float(char out[ATTN_IO_FLOAT_TEXT_MAX], float x);
/* x[0..n) to f, each as attn_io_format_float writes it, sep (under 4,000 bytes) between them;
 * buffered, a few fwrite calls. */
void attn_io_write_floats(FILE *f, const float *x, size_t n, const char *sep);
/* [x, ...] of a[n] (attn_io_write_floats); rows x cols of a as [[...], ...]; and
 * `, "key": ` a [L][NH][T][K] array of such matrices (attention maps per layer and head). */
void attn_io_json_floats(FILE *f, const float *a, size_t n);
void attn_io_json_matrix(FILE *f, const float *a, int rows, int cols);
void attn_io_json_maps(FILE *f, const char *key, const float *a, int L, int NH, int T, int K);

/* Removes the temporaries a killed writer left beside path (stale_temps.c): the files of
 * path's directory named <path's name>.tmp.PID.N.XXXXXX (the atomic writer's pattern: PID,
 * serial number, 6 hex digits) whose PID is no live process; nothing else. Best effort: what
 * cannot be read or removed is left. */
void attn_io_remove_stale_temps(const char *path);

/* ---- whole documents (text_out.c) ------------------------------------------------------- */

/* Prints a document into f; false if it could not (f's error flag is checked as well). */
/* attn_write_file_atomic of the concatenation of spans[0..n), written one after another (the
 * same temporary file, fsync, rename; a device or pipe in place), never joined in memory. */
typedef struct attn_io_span {
    const void *data;
    size_t len;
} attn_io_span;
attn_status attn_io_write_spans_atomic(const char *path, const attn_io_span *spans, size_t n,
                                       attn_error *err);
typedef bool (*attn_io_print_fn)(FILE *f, const void *ctx);
/* print(f, ctx) into a new string *out [*len] (the caller frees it); ATTN_ERR_NOMEM
 * "<what>: out of memory" when it could not be printed. */
attn_status attn_io_print_string(attn_io_print_fn print, const void *ctx, const char *what,
                                 char **out, size_t *len, attn_error *err);
/* print(f, ctx), then attn_write_file_atomic to path; ATTN_ERR_NOMEM "<path>: not written: out of
 * memory formatting it" when it could not be printed. */
attn_status attn_io_print_file(attn_io_print_fn print, const void *ctx, const char *path,
                               attn_error *err);
/* One entry of a weights file's "tensors": "name": {"shape": [..], "data": [..]} (%.9g floats)
 * or "data_b64": "..", then "," unless last, then a newline. */
void attn_io_write_tensor(FILE *f, const char *name, const int *shape, int ndim, const float *x,
                          size_t n, bool b64, bool last);

/* The "format" of a weights file. */
#define ATTN_IO_WEIGHTS_FORMAT "attn-weights-v1"

/* ---- "data_b64" (b64.c): base64 of little-endian float32 ----------------------------------- */

/* Characters of the padded base64 of n_bytes bytes. */
size_t attn_io_b64_len(size_t n_bytes);
/* Decodes text (exactly attn_io_b64_len(4 n) characters) into dst[n]; false with the offending
 * character index in *bad. */
bool attn_io_b64_decode_floats(const char *text, size_t n, float *dst, size_t *bad);
/* Appends the base64 of x[n] (little-endian float32) to f. */
void attn_io_b64_write_floats(FILE *f, const float *x, size_t n);

/* ---- problem collection: the first problem is "path: msg", later ones are appended ------- */

#define ATTN_IO_MAX_PROBLEMS 24 /* beyond this, only a count is reported */

typedef struct attn_io_problems {
    attn_error *err;
    const char *path;
    int n;
    attn_status first;
} attn_io_problems;

void attn_io_problem(attn_io_problems *p, attn_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* ATTN_OK if no problem was reported, else the first problem's status (also in err). */
attn_status attn_io_problems_finish(attn_io_problems *p);

/* ---- limits checked before allocating or trusting a file (load_limits.c) ------------------ */

/* A problem when a config's `need` parameters exceed attn_io_max_params(), or (large models)
 * when root's "tensors" (NULL: not checked) hold fewer values than that: both found before the
 * model is allocated. */
void attn_io_check_n_params(size_t need, const cJSON *root, attn_io_problems *p);

/* Largest Adam hyperparameters a checkpoint may hold (attn train's --lr is at most 1000 too):
 * far beyond any useful run, small enough that one step cannot overflow float32 from a finite
 * state. */
#define ATTN_IO_MAX_LR           1e3
#define ATTN_IO_MAX_WEIGHT_DECAY 1e3
/* The checks both checkpoint kinds make; messages name the field, without the path. Adam:
 * lr in (0, 1000], betas in [0, 1), eps in (0, 1], weight_decay in [0, 1000]. */
attn_status attn_io_check_adam(const attn_adam_config *a, attn_error *err);
/* epochs 0..max_epochs and batch_size 1..max_batch (the CLI's bounds: attn train's --epochs
 * and --batch; a seq2seq checkpoint takes ATTN_S2S_MAX_EPOCHS and _BATCH, attn_seq2seq.h). */
#define ATTN_IO_MAX_EPOCHS 1000000
#define ATTN_IO_MAX_BATCH  (1 << 20)
attn_status attn_io_check_run(int epochs, int max_epochs, int batch_size, int max_batch,
                              attn_error *err);
/* adam_step is exactly epoch x ceil(n_train / batch_size) (one step per batch; `what` names
 * the examples: "sentences", "pairs"). */
attn_status attn_io_check_steps(long adam_step, int epoch, long n_train, const char *what,
                                int batch_size, attn_error *err);
/* Adam's moments as Adam can leave them: m finite, v finite and >= 0. */
attn_status attn_io_check_moments(const float *m, const float *v, size_t n, attn_error *err);

/* The checksum of a checkpoint: its last 23 bytes are ,"crc32":"0x<8 hex digits>"}\n, the CRC-32
 * (zlib) of every byte before them. */
#define ATTN_IO_CRC_TAIL_LEN 23
unsigned long attn_io_crc32(const char *text, size_t len);
/* The CRC-32 of what crc covered followed by text[len] (crc = attn_io_crc32 of the start). */
unsigned long attn_io_crc32_update(unsigned long crc, const char *text, size_t len);
/* Replaces the final '}' (and newline) of text[len] by the tail: text must have room for
 * ATTN_IO_CRC_TAIL_LEN + 1 more bytes; returns the new length. */
size_t attn_io_crc_append(char *text, size_t len);
/* Checks the tail of buf[len] (the message names path and what is wrong). */
attn_status attn_io_crc_check(const char *path, const char *buf, size_t len, attn_error *err);

/* ---- "vocab" (weights_vocab.c) ------------------------------------------------------------ */

/* root's "vocab" into *out (NULL when absent: the built-in vocabulary applies), checked against
 * cfg; messages start with "name: ". */
attn_status attn_io_vocab_load(const char *name, const cJSON *root, const attn_model_config *cfg,
                               attn_vocab **out, attn_error *err);
/* For attn_weights_load_into: a problem when root's "vocab" is bad or not the built-in one. */
void attn_io_vocab_refuse_own(const cJSON *root, const attn_model *m, attn_io_problems *p);
/* ,\n"vocab": [...] for v (nothing for NULL or the built-in vocabulary). */
void attn_io_vocab_write(FILE *f, const attn_vocab *v);

/* ---- model config as a JSON object --------------------------------------------------------- */

/* The integer fields of attn_model_config, in file order, with the archs they apply to
 * (bit 1u << arch). */
typedef struct attn_io_config_int {
    const char *key;
    size_t offset;
    unsigned archs;
} attn_io_config_int;

#define ATTN_IO_N_CONFIG_INTS 7
extern const attn_io_config_int attn_io_config_ints[ATTN_IO_N_CONFIG_INTS];

/* {"arch", the ints, "norm", "activation"} of c; with all_keys false only the keys that apply
 * to c's arch (hidden_size for RNN/LSTM; n_heads, ffn_dim, max_len, norm, activation for the
 * transformer); a transformer's "pos" only when it is not "learned" (absent = learned, so files
 * written before it existed read the same). NULL when out of memory. */
cJSON *attn_io_model_config_to_json(const attn_model_config *c, bool all_keys);

#define ATTN_IO_CONFIG_REQUIRE_ALL    1u /* every integer key must be present */
#define ATTN_IO_CONFIG_REJECT_UNKNOWN 2u /* keys other than the config's are problems */

/* Parses object obj (named `name` in messages, e.g. "config") into *cfg: "arch" is required,
 * absent keys default to attn_model_config_default(arch) unless flags say otherwise, and the
 * result is validated. Every problem goes to p; *cfg is meaningful only if none was added. */
void attn_io_model_config_from_json(const cJSON *obj, const char *name, unsigned flags,
                                    attn_model_config *cfg, attn_io_problems *p);

/* The kernels record as a cJSON object, and back (false for a missing or malformed record);
 * src/io/kernels_json.c. */
struct attn_kernels_info;
cJSON *attn_io_kernels_json(const struct attn_kernels_info *k);
bool attn_io_kernels_from_json(const cJSON *o, struct attn_kernels_info *k);
/* A note through the log hook (not an error) when the record `recorded` of the file `path`
 * (NULL or malformed: a file from before the record, nothing said) names another OpenBLAS
 * version, kernel table or attn path than the ones running: what is computed from it may then
 * differ in the last bits from what the recorded kernels give. */
void attn_io_kernels_note(const char *path, const cJSON *recorded);
/* A weights file's record of the kernels that computed its values: `,\n"kernels": {..}` of
 * recorded (the model's, attn_model_kernels); nothing when NULL (values no attn training
 * computed: an initialisation, a file without a record). */
void attn_io_kernels_field(FILE *f, const struct attn_kernels_info *recorded);
/* root's "kernels" into *k: false when there is none, or (with a problem in p) when it is not a
 * record. */
bool attn_io_kernels_read(const cJSON *root, struct attn_kernels_info *k, attn_io_problems *p);

/* ---- seq2seq config (seq2seq_json.c), shared with the seq2seq checkpoint ------------------ */

struct attn_seq2seq_config;
struct attn_seq2seq;
/* "config": {...} as a weights file holds it (no leading comma). */
void attn_io_s2s_config_write(FILE *f, const struct attn_seq2seq_config *c);
/* The "config" object into *c, every problem reported to p. */
void attn_io_s2s_config_parse(const cJSON *obj, struct attn_seq2seq_config *c, attn_io_problems *p);

/* ---- safetensors (safetensors.c; the families' adapters: safetensors_models.c) ------------- */

/* A model as the container sees it, whichever family: its tensor table over one flat float
 * buffer, and the strings of "__metadata__". */
typedef struct attn_io_tensor_view {
    const char *name; /* state_dict key */
    int ndim, shape[4];
    size_t offset, numel; /* into params */
} attn_io_tensor_view;
typedef struct attn_io_model_view {
    const char *format; /* "attn-weights-v1" or "attn-seq2seq-weights-v1" */
    size_t count;
    attn_io_tensor_view *tensors; /* [count], owned */
    float *params;                /* the model's, not owned */
    char *config;                 /* the config object as the JSON weights write it, owned */
    char *vocab;                  /* the "vocab" array as JSON text, owned, or NULL */
    char *kernels;                /* the kernels record as JSON text, owned, or NULL */
} attn_io_model_view;

/* The view's tensors, in table order, F32, with its metadata; refuses NaN/Inf naming the
 * tensor; written with attn_write_file_atomic. */
attn_status attn_io_safetensors_save(const attn_io_model_view *v, const char *path,
                                     attn_error *err);
/* A "not written" error naming the file and the tensor at x[n]'s first NaN or Inf (the
 * writers of safetensors files, checkpoints and seq2seq JSON weights). */
attn_status attn_io_st_check_finite(const char *path, const char *name, const float *x, size_t n,
                                    attn_error *err);
/* A safetensors file's start into a new *buf[*head_len + body]: the 8-byte little-endian
 * header length, the header print(ctx) writes, spaces up to a 64-byte-aligned data start. */
attn_status attn_io_st_start(attn_io_print_fn print, const void *ctx, const char *path, size_t body,
                             unsigned char **buf, size_t *head_len, attn_error *err);
/* Whether this machine stores floats little-endian, as safetensors does (then the values are
 * copied or used as they are; else byte-swapped). */
bool attn_io_little_endian(void);
/* x[n] as little-endian float32 at dst (a copy on a little-endian machine). */
void attn_io_put_le_floats(unsigned char *dst, const float *x, size_t n);
/* Whether head[0..n) starts a safetensors file: a header length under 2^56 (byte 7 is 0, which
 * JSON text never holds), then '{'. */
bool attn_io_safetensors_head(const unsigned char *head, size_t n);
/* attn_io_safetensors_head of the first bytes of the regular file path. */
bool attn_io_is_safetensors(const char *path);

#define ATTN_IO_ST_MAX_NDIM 8
typedef struct attn_io_st_tensor {
    const char *name; /* into the header tree */
    int ndim;
    long long shape[ATTN_IO_ST_MAX_NDIM];
    size_t begin, end, numel; /* bytes from the start of the data; values */
} attn_io_st_tensor;
typedef struct attn_io_st_file {
    const char *path;
    void *map; /* the whole file, mapped read-only */
    size_t size;
    const unsigned char *data; /* after the header */
    size_t data_len;
    cJSON *header;
    size_t count; /* tensors, in header order */
    attn_io_st_tensor *tensors;
    const char *format, *config, *vocab, *kernels; /* the "__metadata__" strings, or NULL */
} attn_io_st_file;
/* Maps the file and checks everything that does not need the model: header length, strict
 * JSON, dtypes, offsets in order without gap or overlap, sizes = shapes, the data's end = the
 * file's, the data within ATTN_MAX_PARAMS. All problems at once, each naming its tensor. */
attn_status attn_io_st_open(const char *path, attn_io_st_file *f, attn_error *err);
/* attn_io_st_open with the data's bound in float32 values (a checkpoint holds up to four
 * arrays of ATTN_MAX_PARAMS each). */
attn_status attn_io_st_open_limit(const char *path, attn_io_st_file *f, size_t max_values,
                                  attn_error *err);
/* "[a,b]" (shape s[nd]) into buf[size]; returns buf. */
const char *attn_io_shape_text(char *buf, size_t size, int nd, const long long *s);
/* Copies tensor t's values into dst[t->numel] (little-endian float32 on any machine); a
 * problem naming the tensor at its first NaN or Inf. */
void attn_io_st_copy_values(const attn_io_st_file *f, const attn_io_st_tensor *t, float *dst,
                            attn_io_problems *p);
/* Every tensor of v from the file, by name, with v's shape; no other tensor in the file; each
 * value finite. When all match: if src is not NULL and the file holds v's flat buffer exactly
 * (its table in order, 64-byte-aligned, little-endian), *src gets the mapped values and the
 * mapping (f keeps neither: create the model from *src, or release it); otherwise the values
 * are copied into v->params and src->params stays NULL. */
attn_status attn_io_st_fill(attn_io_st_file *f, const attn_io_model_view *v, attn_param_source *src,
                            attn_error *err);
void attn_io_st_close(attn_io_st_file *f); /* unmaps; a zeroed f is fine */

/* m's view over params (m's own or a buffer of its layout); with meta, its metadata too. */
attn_status attn_io_view_of_model(const attn_model *m, const attn_vocab *vocab, float *params,
                                  bool meta, attn_io_model_view *v, attn_error *err);
attn_status attn_io_view_of_s2s(struct attn_seq2seq *m, bool meta, attn_io_model_view *v,
                                attn_error *err);
void attn_io_model_view_free(attn_io_model_view *v); /* a zeroed v is fine */
/* The "tensors" object of a JSON weights file into v->params (weights_json.c): every tensor of
 * v once, with its shape, as "data" numbers or "data_b64", finite float32; names may carry a
 * "module." or "_orig_mod." prefix; `model` names the model in the message of an unknown one. */
void attn_io_json_tensors_load(const attn_io_model_view *v, const cJSON *root, const char *model,
                               attn_io_problems *p);

/* ---- what both families' training checkpoints read alike (checkpoint_fields.c) ----------- */

/* The checkpoint at path, JSON (its checksum checked) or safetensors (by content; then f is left
 * open on its tensors, else f->map is NULL), into *root (caller frees), whose "format" must be
 * `format` (else "path: "format" is not "<format>"<note>"). */
attn_status attn_io_ckpt_open(const char *path, const char *format, const char *note,
                              attn_io_st_file *f, cJSON **root, attn_error *err);
/* Member key of o: an integer (exact as a JSON number) in [lo, hi], a finite number in [lo, hi],
 * "0x" and 16 hex digits; *out untouched after a problem. */
void attn_io_ckpt_long(const cJSON *o, const char *key, long lo, long hi, long *out,
                       attn_io_problems *p);
void attn_io_ckpt_int(const cJSON *o, const char *key, int lo, int hi, int *out,
                      attn_io_problems *p);
void attn_io_ckpt_num(const cJSON *o, const char *key, double lo, double hi, double *out,
                      attn_io_problems *p);
void attn_io_ckpt_u64(const cJSON *o, const char *key, uint64_t *out, attn_io_problems *p);
/* Adam's settings, the members lr, beta1, beta2, eps, weight_decay of a (ranges: the progress). */
void attn_io_ckpt_adam(const cJSON *a, attn_adam_config *c, attn_io_problems *p);
/* A run's progress as a checkpoint records it. */
typedef struct attn_io_ckpt_progress {
    const attn_adam_config *adam;
    int epochs, max_epochs, batch_size, max_batch; /* the settings and the CLI's bounds */
    int epoch, best_epoch;                         /* done; the kept one (0: none) */
    long adam_step, n_train;                       /* steps taken; training examples */
    const char *what;                              /* the examples: "sentences", "pairs" */
    /* the family's own checks of its settings (NULL: none), after Adam's and the bounds */
    attn_status (*settings)(const void *ctx, attn_error *err);
    const void *ctx;
} attn_io_ckpt_progress;
/* attn_io_check_adam, attn_io_check_run, settings, epoch within epochs, attn_io_check_steps,
 * best_epoch within epoch: the first that fails, as a problem. */
void attn_io_ckpt_check_progress(const attn_io_ckpt_progress *r, attn_io_problems *p);

/* ---- training checkpoints in safetensors (checkpoint_safetensors.c) ------------------------ */

/* The arrays of a checkpoint, as tensors of shape [n_params] in this order: "params", "adam.m",
 * "adam.v", "best_params" (only when best_epoch > 0). */
#define ATTN_IO_CKPT_ARRAYS 4
/* Writes a checkpoint of `format` ("attn-checkpoint-v1" or "attn-seq2seq-checkpoint-v1"):
 * state, the JSON checkpoint's document without its arrays and checksum, into "__metadata__",
 * arrays[0..3) (and arrays[3] unless NULL) of n floats as tensors, the file's CRC-32 in the
 * metadata; refuses NaN/Inf naming the array; written with attn_io_write_spans_atomic (on a
 * little-endian machine the arrays straight from the caller's memory, never copied). */
attn_status attn_io_ckpt_st_save(const char *path, const char *format, const char *state,
                                 const float *const arrays[ATTN_IO_CKPT_ARRAYS], size_t n,
                                 attn_error *err);
/* Opens a checkpoint of `format`: the container's checks (attn_io_st_open, data within four
 * times ATTN_MAX_PARAMS values), the header's fixed start, the checksum, exactly the metadata
 * keys format, crc32, state and writer, and *state the parsed "state" object (caller frees;
 * it holds no array). On success f is open (attn_io_st_close it). */
attn_status attn_io_ckpt_st_open(const char *path, const char *format, attn_io_st_file *f,
                                 cJSON **state, attn_error *err);
/* The tensors of open checkpoint f, each of shape [n] (n: the config's count, already checked),
 * best_params exactly when `best`, into out[] (allocated, caller frees; NULL after a problem):
 * every tensor named in its problem, values finite, adam.v >= 0. */
void attn_io_ckpt_st_arrays(const attn_io_st_file *f, size_t n, bool best,
                            float *out[ATTN_IO_CKPT_ARRAYS], attn_io_problems *p);
/* Whether path names a safetensors file by its extension (".safetensors"): how the savers of
 * the JSON weights choose the format to write. */
bool attn_io_wants_safetensors(const char *path);
/* Whether format names a training checkpoint of either family ("attn-checkpoint-v1",
 * "attn-seq2seq-checkpoint-v1", in JSON or safetensors): the weights readers given one say so
 * with ATTN_IO_CKPT_NOT_WEIGHTS (its %s: the format) after the file's name. */
bool attn_io_is_checkpoint_format(const char *format);
#define ATTN_IO_CKPT_NOT_WEIGHTS                                                                   \
    "holds a training checkpoint (\"%s\"), not weights: resume it with attn train --resume; "      \
    "predict, generate, info and the other commands take the weights its run wrote (--out)"
/* attn_weights_load_into for a safetensors file (safetensors_models.c). */
attn_status attn_io_load_into_safetensors(attn_model *m, const char *path, attn_error *err);

/* The config object of a classifier as the JSON weights write it ("config": {...}'s value). */
bool attn_io_model_config_write(FILE *f, const attn_model_config *c);

#endif
