/* attn.h -- the public API of libattn.
 *
 * attn trains and runs the three models of "Attention from Scratch" (an Elman RNN, an LSTM and
 * a two-layer pre-norm Transformer encoder with a [CLS] token) on a synthetic course-review
 * sentiment task. Every matrix product goes through OpenBLAS cblas_sgemm.
 *
 * Dimension letters (used in every shape comment of the project):
 *   B  batch (sentences)              T  positions (words; +1 for [CLS] in the Transformer)
 *   V  vocabulary (91)                E  word embedding width of RNN/LSTM (16)
 *   H  RNN/LSTM hidden size (32)      D  Transformer model width (32)
 *   NH attention heads (2)            HS head size (D / NH = 16)
 *   F  feed-forward width (64)        L  encoder layers (2)
 *
 * Conventions:
 *   - Row-major everywhere. A Linear layer stores W as [out, in] (PyTorch nn.Linear) and computes
 *     y = x W^T + b.
 *   - Parameter tensors keep PyTorch layouts and PyTorch state_dict names ("lstm.weight_ih_l0",
 *     gate order i,f,g,o; "layers.0.self_attn.in_proj_weight", packed q,k,v), so importing a
 *     tensor is a memcpy by name.
 *   - Parameters, gradients (and the optimizer's Adam moments) are each one flat float array
 *     with one shared layout; attn_model_tensor_* gives named views into it.
 *
 * Ownership: whoever creates frees. Every attn_X_create has an attn_X_free that accepts NULL.
 * The library never keeps caller pointers beyond a call; outputs go into caller buffers of a
 * documented size or into model-owned buffers valid until the next call on the same model.
 *
 * Errors: every function that can fail returns attn_status and takes a last `attn_error *err`
 * (may be NULL) that receives a message naming the file, tensor or argument at fault. The
 * library never exits and never prints; it logs only through attn_set_log (silent by default).
 *
 * Example: classify one sentence with weights exported from PyTorch.
 *
 *     attn_error err;
 *     attn_model *m = NULL;
 *     if (attn_weights_load_json("weights/lstm-seed1.json", &m, &err) != ATTN_OK) {
 *         fprintf(stderr, "%s\n", err.msg);
 *         return 1;
 *     }
 *     int ids[ATTN_MAX_WORDS], n;
 *     attn_tokenize("the lecture was not very helpful", ids, ATTN_MAX_WORDS, &n, &err);
 *     attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
 *     float logit;
 *     attn_model_forward(m, &b, &logit, &err);     // probability = 1 / (1 + exp(-logit))
 *     attn_model_free(m);
 */
#ifndef ATTN_H
#define ATTN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status, errors, logging ---------------------------------------------------------- */

typedef enum attn_status {
    ATTN_OK = 0,
    ATTN_ERR_NOMEM, /* an allocation failed */
    ATTN_ERR_IO,    /* a file could not be opened, read, written or renamed */
    ATTN_ERR_PARSE, /* malformed JSON or TSV */
    ATTN_ERR_SHAPE, /* a tensor or batch has the wrong shape */
    ATTN_ERR_VALUE, /* NaN/Inf, unknown word, out-of-range id, bad config value */
    ATTN_ERR_ARG,   /* caller misuse detected at the API boundary */
} attn_status;

#define ATTN_ERROR_MSG_MAX 4096
typedef struct attn_error {
    attn_status status;
    char msg[ATTN_ERROR_MSG_MAX];
} attn_error;

const char *attn_status_str(attn_status s);
/* Fills err (if non-NULL) and returns s, so call sites read: return attn_errorf(err, ...); */
attn_status attn_errorf(attn_error *err, attn_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends "; <more>" to an existing message (used by loaders that report all problems). */
void attn_error_append(attn_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum attn_log_level { ATTN_LOG_DEBUG, ATTN_LOG_INFO, ATTN_LOG_WARN } attn_log_level;
typedef void (*attn_log_fn)(attn_log_level level, const char *msg, void *user);
/* The only process-wide setting of the library besides the BLAS thread count. */
void attn_set_log(attn_log_fn fn, void *user);
/* What library code calls to tell something that is not an error (e.g. a loader reading an
 * older or wrapped file); dropped unless a hook is installed. */
void attn_log(attn_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets OpenBLAS's thread count (exact mode and training use 1). */
void attn_set_num_threads(int n);

/* ---- PRNG: splitmix64 (Steele, Lea, Flood 2014), a value the caller owns ---------------- */

typedef struct attn_rng {
    uint64_t state;
} attn_rng;

attn_rng attn_rng_seed(uint64_t seed);
uint64_t attn_rng_next(attn_rng *r);              /* next 64 random bits */
uint32_t attn_rng_below(attn_rng *r, uint32_t n); /* uniform in [0, n), unbiased; n > 0 */
double attn_rng_uniform(attn_rng *r);             /* uniform in [0, 1), 53 bits */
float attn_rng_uniform_range(attn_rng *r, float lo, float hi);
double attn_rng_normal(attn_rng *r);               /* N(0,1), Box-Muller (no cached state) */
void attn_rng_shuffle(attn_rng *r, int *a, int n); /* Fisher-Yates */

/* ---- vocabulary, tokenizer, the course-review task (src/data/) -------------------------- */

#define ATTN_PAD_ID     0
#define ATTN_CLS_ID     1
#define ATTN_N_WORDS    89
#define ATTN_VOCAB_SIZE 91 /* [PAD], [CLS], 89 words */
#define ATTN_MAX_WORDS  80 /* the Transformer has 81 positions including [CLS] */

int attn_vocab_size(void);               /* 91 */
const char *attn_vocab_word(int id);     /* "[PAD]", "[CLS]", words; NULL if out of range */
const char *attn_vocab_category(int id); /* "special", "subject", "positive", ... */
int attn_vocab_id(const char *word);     /* -1 if unknown */

/* Lower-cases, strips .,!?;: quotes (" ' ` and typographic ones) and brackets ()[]{}, and splits
 * on white space. Fails (ATTN_ERR_VALUE) on an unknown word (naming it, its 1-based position
 * and the closest vocabulary word), on an empty sentence, and on more than max_ids words.
 * ids: [max_ids]. */
attn_status attn_tokenize(const char *sentence, int *ids, int max_ids, int *n_ids, attn_error *err);

/* ---- vocabulary objects: the built-in one and a weights file's own (src/data/) ---------- *
 * An attn_vocab maps token ids 0..n-1 to tokens and back. attn_vocab_builtin() is the
 * course-review vocabulary above (static: attn_vocab_free ignores it); attn_vocab_create makes
 * one from a word list, e.g. the "vocab" array of a weights file (attn_weights_load_json_vocab).
 * attn_vocab_create checks (ATTN_ERR_VALUE, naming the index and the token):
 *   - 2 <= n <= ATTN_VOCAB_MAX_TOKENS (the largest vocab_size a model config takes);
 *   - words[0] is "[PAD]": every model pads batches with id 0;
 *   - every token is 1..ATTN_VOCAB_TOKEN_MAX bytes of valid UTF-8 without white space (ASCII
 *     or Unicode: a token is one word) and without control characters (U+0000..U+001F,
 *     U+007F..U+009F);
 *   - no token occurs twice.
 * The rules that depend on the model -- n equals the config's vocab_size; the Transformer needs
 * "[CLS]" at id 1 (it prepends id 1 itself); RNN, LSTM and GRU take any token at id 1 -- are
 * attn_vocab_check_config's.
 * Kinds: "special" tokens ("[...]" or "<...>": [PAD], [CLS], [UNK], <unk>) are never produced
 * by the tokenizer; "ids-only" tokens, holding an upper-case ASCII letter or a character the
 * tokenizer removes (.,!?;: quotes, brackets), cannot come out of it either and are reached by
 * id only (attn predict --ids); every other token is a "word". */
#define ATTN_VOCAB_MAX_TOKENS (1 << 20) /* 1,048,576 */
#define ATTN_VOCAB_TOKEN_MAX  64        /* bytes per token */

typedef struct attn_vocab attn_vocab; /* opaque; src/data/data_internal.h */

const attn_vocab *attn_vocab_builtin(void);
/* Copies words[0..n) (the caller keeps its strings). */
attn_status attn_vocab_create(const char *const *words, int n, attn_vocab **out, attn_error *err);
void attn_vocab_free(const attn_vocab *v); /* NULL and the built-in one are ignored */
bool attn_vocab_is_builtin(const attn_vocab *v);
int attn_vocab_count(const attn_vocab *v);                 /* tokens, ids 0..count-1 */
const char *attn_vocab_token(const attn_vocab *v, int id); /* NULL if out of range */
/* "special", "word" or "ids-only" (see Kinds); NULL if out of range. */
const char *attn_vocab_kind(const attn_vocab *v, int id);
/* The id of exactly this token (a hash lookup), -1 if absent. */
int attn_vocab_lookup(const attn_vocab *v, const char *token);
/* The word (kind "word") closest to `word` by edit distance, ties to the lower id; NULL when
 * the vocabulary has no word. */
const char *attn_vocab_closest(const attn_vocab *v, const char *word);
/* v fits a model of cfg: count == vocab_size and, for the Transformer, "[CLS]" at id 1. */
struct attn_model_config; /* below, with the models */
attn_status attn_vocab_check_config(const attn_vocab *v, const struct attn_model_config *cfg,
                                    attn_error *err);
/* attn_tokenize with vocabulary v: words are looked up in v (only tokens of kind "word"
 * match); an unknown word is named with the closest word of v. attn_tokenize(s, ...) is
 * attn_tokenize_vocab(attn_vocab_builtin(), s, ...). */
attn_status attn_tokenize_vocab(const attn_vocab *v, const char *sentence, int *ids, int max_ids,
                                int *n_ids, attn_error *err);

typedef enum attn_set {
    ATTN_SET_TRAIN,
    ATTN_SET_PLAIN,
    ATTN_SET_DISTRACTOR,
    ATTN_SET_FILL4,
    ATTN_SET_FILL8,
    ATTN_SET_HOLDOUT, /* the training distribution, its own PRNG stream: the held-out slice */
} attn_set;
#define ATTN_N_TEST_SETS     4        /* plain, distractor, fill4, fill8 */
#define ATTN_TRAIN_DEFAULT_N 8000     /* sentences in the training set */
#define ATTN_TEST_DEFAULT_N  1000     /* sentences in each test set */
#define ATTN_DATA_MAX_N      10000000 /* largest n attn_data_generate accepts */
/* sentences in the held-out set (ATTN_SET_HOLDOUT), the trainer's default holdout */
#define ATTN_HOLDOUT_DEFAULT_N 500

const char *attn_set_name(attn_set s);
attn_status attn_set_from_name(const char *name, attn_set *out, attn_error *err);

/* A labelled set of sentences. Owned by the library; free with attn_dataset_free. */
typedef struct attn_dataset {
    int n;           /* sentences */
    int *labels;     /* [n] 1 = positive, 0 = negative */
    int *lengths;    /* [n] words */
    size_t *offsets; /* [n+1] start of sentence i in ids */
    int *ids;        /* [offsets[n]] word ids, sentences concatenated, no [CLS] */
    char **texts;    /* [n] the sentences, lower case, single spaces */
} attn_dataset;

/* Deterministic generator: the same (set, n, seed) gives the same sentences on every machine.
 * Test sets and the held-out set never contain a sentence of the default-size training set
 * of the same seed. */
attn_status attn_data_generate(attn_set set, int n, uint64_t seed, attn_dataset **out,
                               attn_error *err);
/* n sentences of min_words..max_words words (8 <= min <= max <= ATTN_GEN_LENGTHS_MAX_WORDS):
 * the task's core clause (and distractor) with as many filler phrases (with replacement) as the
 * length needs; its own PRNG stream (the default sets are unchanged); src/data/generator.c. */
#define ATTN_GEN_LENGTHS_MAX_WORDS 240
attn_status attn_data_generate_lengths(int n, uint64_t seed, int min_words, int max_words,
                                       attn_dataset **out, attn_error *err);
/* Reads "label<TAB>sentence" lines. Errors name the file and line. */
attn_status attn_dataset_read_tsv(const char *path, attn_dataset **out, attn_error *err);
/* attn_dataset_read_tsv with vocabulary v (texts are rebuilt from v's tokens). */
attn_status attn_dataset_read_tsv_vocab(const char *path, const attn_vocab *v, attn_dataset **out,
                                        attn_error *err);
void attn_dataset_free(attn_dataset *d);

/* ---- models (src/models/) --------------------------------------------------------------- */

/* ATTN_ARCH_GRU comes last so the three models of the write-up keep their numbers. */
typedef enum attn_arch {
    ATTN_ARCH_RNN,
    ATTN_ARCH_LSTM,
    ATTN_ARCH_TRANSFORMER,
    ATTN_ARCH_GRU /* nn.GRU (gates r, z, n), the recurrent models' sizes */
} attn_arch;
typedef enum attn_norm { ATTN_NORM_PRE, ATTN_NORM_POST } attn_norm;
typedef enum attn_activation { ATTN_ACT_RELU, ATTN_ACT_GELU } attn_activation;
/* How the Transformer learns where a word is (docs/transformer-positions.md). A new scheme adds
 * a value here, a name in attn_pos_name and a case in transformer.c's positions functions. */
typedef enum attn_pos {
    ATTN_POS_LEARNED,    /* "learned": pos_embedding [max_len, D], a trained parameter (default) */
    ATTN_POS_SINUSOIDAL, /* "sinusoidal": the fixed sin/cos table (Vaswani et al., base 10000,
                          * unscaled), not trained and not a tensor of the weights file */
    ATTN_POS_NONE,       /* "none": no position information at all */
    ATTN_POS_ROPE,       /* "rope": rotary q and k per head (GPT-NeoX halves, base 10000) */
    ATTN_POS_ALIBI,      /* "alibi": score bias -slope_h * |i - j| (Press et al. 2022) */
} attn_pos;
#define ATTN_N_POS                  5
#define ATTN_TRANSFORMER_MAX_LAYERS 12 /* n_layers of a transformer: 1..12 */
#define ATTN_RECURRENT_MAX_LAYERS   8  /* n_layers of rnn/lstm/gru (num_layers): 1..8 */

/* The blueprint. Defaults (attn_model_config_default) are the write-up's models. */
typedef struct attn_model_config {
    attn_arch arch;
    int vocab_size;  /* V = 91 */
    int embed_dim;   /* E (rnn/lstm: 16) or D (transformer: 32) */
    int hidden_size; /* H (rnn/lstm: 32); unused by the transformer */
    int n_heads;     /* NH (transformer: 2) */
    int ffn_dim;     /* F (transformer: 64) */
    int n_layers;    /* L (transformer: 2; rnn/lstm: 1) */
    int max_len;     /* positions incl. [CLS] (transformer: 81) */
    attn_norm norm;  /* transformer: pre (norm_first=True) has a final "norm"; post has none */
    attn_activation activation; /* transformer FFN: relu (default) or gelu (erf form) */
    attn_pos pos;               /* transformer positions: learned (default), sinusoidal, none */
    /* transformer: 0 (default) scores q.k / sqrt(d_k) as PyTorch does; 1 leaves out the
     * 1/sqrt(d_k) (the `scaling` experiment; not a PyTorch option). JSON: "attn_unscaled": 1
     * only when set. */
    int attn_unscaled;
} attn_model_config;

attn_model_config attn_model_config_default(attn_arch arch);
const char *attn_arch_name(attn_arch a); /* "rnn", "lstm", "transformer", "gru" */
const char *attn_pos_name(attn_pos p);   /* "learned", "sinusoidal", "none", "rope", "alibi" */
/* -1 when name is not a position scheme. */
int attn_pos_from_name(const char *name);
attn_status attn_arch_from_name(const char *name, attn_arch *out, attn_error *err);
/* Checks sizes (positive, D divisible by NH, ...); the message names the field. */
attn_status attn_model_config_validate(const attn_model_config *cfg, attn_error *err);
/* The number of parameters a model of a valid cfg has, without creating it. */
size_t attn_model_config_n_params(const attn_model_config *cfg);

typedef struct attn_model attn_model; /* opaque; src/models/model_internal.h */

/* A padded batch, batch-first like PyTorch. Sentence b has lengths[b] >= 1 words in
 * ids[b*T .. b*T + lengths[b]); the rest is ATTN_PAD_ID. The Transformer prepends [CLS]
 * itself, so T <= max_len - 1 for it. RNN/LSTM read the hidden state after word lengths[b]. */
typedef struct attn_batch {
    int B, T;
    const int *ids;     /* [B, T] */
    const int *lengths; /* [B] */
} attn_batch;

/* Creates a model with parameters initialised as PyTorch initialises the reference modules,
 * drawn from attn_rng seeded with `seed`. */
attn_status attn_model_create(const attn_model_config *cfg, uint64_t seed, attn_model **out,
                              attn_error *err);
void attn_model_free(attn_model *m);
const attn_model_config *attn_model_config_of(const attn_model *m);

/* logits: [B], one logit per sentence (probability = sigmoid(logit)). Keeps the activations
 * needed by attn_model_backward. Grows the activation arena as needed. */
attn_status attn_model_forward(attn_model *m, const attn_batch *b, float *logits, attn_error *err);
/* Back-propagates d_logits [B] through the last forward (same batch) and ACCUMULATES into the
 * gradient buffer (allocated on first use; ATTN_ERR_NOMEM if that fails). */
attn_status attn_model_backward(attn_model *m, const attn_batch *b, const float *d_logits,
                                attn_error *err);
void attn_model_zero_grad(attn_model *m); /* memset of the gradient buffer */

size_t attn_model_n_params(const attn_model *m);
float *attn_model_params(attn_model *m); /* [n_params] */
float *attn_model_grads(attn_model *m);  /* [n_params] or NULL before the first backward */
/* The same, read-only, for code that only reads a model (exporters). */
const float *attn_model_params_const(const attn_model *m);
const float *attn_model_grads_const(const attn_model *m);
size_t attn_model_tensor_count(const attn_model *m);
const char *attn_model_tensor_name(const attn_model *m, size_t i); /* state_dict key */
/* shape: [4], returns the number of dims; the tensor's element count is the shape product. */
int attn_model_tensor_shape(const attn_model *m, size_t i, int shape[4]);
size_t attn_model_tensor_offset(const attn_model *m, size_t i); /* into params and grads */
size_t attn_model_tensor_numel(const attn_model *m, size_t i);
/* Index of a tensor by state_dict key, or -1. */
long attn_model_tensor_find(const attn_model *m, const char *name);
/* ATTN_ERR_VALUE naming the first tensor (and index) holding NaN/Inf in params (or grads). */
attn_status attn_model_check_finite(const attn_model *m, bool grads, attn_error *err);

/* ---- limits on reading files (src/io/) -------------------------------------------------- *
 * The loaders read only regular files (not FIFOs, devices or directories) of at most
 * attn_io_max_file_bytes() bytes, and create models of at most attn_io_max_params()
 * parameters, checked from the config BEFORE anything is allocated. Each limit has a
 * default and can be raised (or lowered) by an environment variable holding a positive
 * decimal integer. Parsing a JSON number array costs about 40x its size in memory (one
 * cJSON node per number); "data_b64" tensors cost about 1x. */
#define ATTN_MAX_FILE_BYTES_DEFAULT ((size_t)1 << 29) /* 512 MiB; env ATTN_MAX_FILE_BYTES */
#define ATTN_MAX_PARAMS_DEFAULT     ((size_t)1 << 26) /* 67,108,864; env ATTN_MAX_PARAMS */
size_t attn_io_max_file_bytes(void);
size_t attn_io_max_params(void);

/* ---- looking inside a model: batch-1 accessors (src/models/) and attn_explain (src/explain/) -- *
 * "The first layer's input" x of a sentence of n words: RNN/LSTM, the n embedding rows fed to the
 * cell, [n, E]; Transformer, x0 = embedding + pos_embedding of [CLS] and the n words, [n+1, D]
 * ([CLS] row first). The accessors read the buffers of the model's last forward/backward (valid
 * until the next call on the model) and fail (ATTN_ERR_ARG) unless that forward had B = 1. */

/* Forward of one sentence from its first-layer input vectors x (layout above) instead of ids:
 * with x the rows attn_model_forward builds, the logit is the same float. A following
 * attn_model_backward takes a batch of the same shape (B = 1, T = lengths[0] = n_words); its ids
 * only choose the embedding rows that receive the input gradient. */
attn_status attn_model_forward_embedded(attn_model *m, const float *x, int n_words, float *logit,
                                        attn_error *err);
/* The same for B sentences of n_words words each at once: x [B, rows, width] (each sentence's
 * rows as above, one sentence after the other), logits [B]. A following attn_model_backward takes
 * a batch of B sentences of length n_words; attn_model_input_grad then reads each one's
 * d logit / d x. (A batch rounds differently from B batch-1 forwards: OpenBLAS rounds a GEMM
 * row by the row count. Batch 1 is the exact mode.) */
attn_status attn_model_forward_embedded_batch(attn_model *m, const float *x, int B, int n_words,
                                              float *logits, attn_error *err);
/* d_x [rows, width] = d loss / d x of sentence i of the last forward_embedded(_batch) and the
 * backward after it (ATTN_ERR_ARG if the batch has no sentence i). */
attn_status attn_model_input_grad(const attn_model *m, int i, float *d_x, attn_error *err);
/* RNN/LSTM/GRU: logits[p] = the logit attn_model_forward gives the prefix ids[0..p] at batch 1,
 * p = 0..n_words-1, bit for bit, in one pass: the head on the hidden state after each word,
 * except that a step is run again where the prefix's own input GEMM rounds a row differently
 * (OpenBLAS may round a row by the row count; measured up to 9 ULP). ATTN_ERR_ARG for the
 * Transformer (each prefix is its own forward there). Overwrites the activation buffers. */
attn_status attn_model_prefix_logits(attn_model *m, const int *ids, int n_words, float *logits,
                                     attn_error *err);
/* x (the last batch-1 forward's first-layer input, *n_rows x *width) and d_x (d loss / d x of the
 * last backward after it; garbage before one). Either pointer may be NULL. */
attn_status attn_model_input(const attn_model *m, const float **x, const float **d_x, int *n_rows,
                             int *width, attn_error *err);
/* Transformer: layer `layer`'s attention probabilities of the last batch-1 forward, the ones it
 * used: *probs [NH, S, S] (head, query, key), S = n_words + 1 ([CLS] first). */
attn_status attn_model_attention_probs(const attn_model *m, int layer, const float **probs, int *S,
                                       attn_error *err);

/* What attn_explain computes for one sentence. Saliency is over the n_words words (the
 * Transformer's [CLS] row is a constant, not a word of the sentence: it gets none), with x_i
 * the first-layer input row of word i and g_i = d logit / d x_i at x:
 *   grad_norm[i]            = |g_i|_2
 *   grad_x_input[i]         = sum_j g_ij x_ij
 *   integrated_gradients[i] = sum_j (x_ij - x'_ij) * mean_k g_ij(x' + (k - 1/2)/N (x - x')),
 *                             k = 1..N (the midpoint rule, N = ig_steps), with the baseline
 *                             x' = the first-layer input of the same number of [PAD] words
 *                             (RNN/LSTM: the [PAD] embedding row; Transformer: [PAD] embedding +
 *                             the word's position; [CLS] keeps its row). Completeness:
 *                             sum_i integrated_gradients[i] ~ logit - ig_baseline_logit,
 *                             within 1 % on short random sentences but far off where the logit
 *                             flips sharply along the path (trained LSTM on long sentences:
 *                             more steps do not help; measured in the README).
 * (A zero baseline was tried first: the pre-norm Transformer's LayerNorm of a*x_i jumps near
 * a = 0, which 64 midpoint steps cannot resolve; completeness missed 1 % by far.) */
#define ATTN_EXPLAIN_IG_STEPS  64
#define ATTN_EXPLAIN_IG_BATCH  64   /* IG points per batched forward/backward */
#define ATTN_EXPLAIN_NO_IG     (-1) /* ig_steps: skip integrated gradients */
#define ATTN_EXPLAIN_MAX_STEPS 4096
typedef struct attn_explain_opts {
    int ig_steps; /* N in 1..ATTN_EXPLAIN_MAX_STEPS; 0 = ATTN_EXPLAIN_IG_STEPS;
                   * ATTN_EXPLAIN_NO_IG = none (integrated_gradients NULL, ig_steps 0) */
} attn_explain_opts;

typedef struct attn_explanation {
    attn_arch arch;
    int n_words;
    float logit;                 /* the same float as attn_model_forward of the sentence */
    double probability;          /* 1 / (1 + exp(-logit)) in double, as attn predict prints it */
    int n_layers, n_heads, S;    /* Transformer: attention's sizes (S = n_words + 1); else 0 */
    float *attention;            /* [n_layers, n_heads, S, S] (layer, head, query, key) or NULL */
    float *prefix_logit;         /* RNN/LSTM: [n_words] logit of words 0..i, as a forward of
                                  * that prefix gives it (attn predict); else NULL */
    double *prefix_probability;  /* RNN/LSTM: [n_words] its probability; else NULL */
    float *grad_norm;            /* [n_words] */
    float *grad_x_input;         /* [n_words] */
    float *integrated_gradients; /* [n_words], or NULL when not asked for */
    int ig_steps;                /* N used (0: none) */
    float ig_baseline_logit;     /* the logit at the baseline x' */
} attn_explanation;

/* Explains sentence ids[0..n_words) (no [CLS]) with m. opts may be NULL (defaults). The logit,
 * attention, saliency and prefixes come from batch-1 passes (exact mode: the floats attn predict
 * computes); the ig_steps integrated-gradient points run ATTN_EXPLAIN_IG_BATCH at a time
 * (attn_model_forward_embedded_batch), so they round as a batch does. Overwrites m's gradient
 * buffer (left zeroed). *out is the caller's: attn_explanation_free. */
attn_status attn_explain(attn_model *m, const int *ids, int n_words, const attn_explain_opts *opts,
                         attn_explanation **out, attn_error *err);
void attn_explanation_free(attn_explanation *e);

/* ---- weights JSON (src/io/) ------------------------------------------------------------ *
 * Format "attn-weights-v1":
 *   {"format": "attn-weights-v1",
 *    "config": {"arch": "rnn"|"lstm"|"transformer", "vocab_size": 91, "embed_dim": 16,
 *               "hidden_size": 32, "n_heads": 2, "ffn_dim": 64, "n_layers": 2, "max_len": 81,
 *               "norm": "pre"|"post", "activation": "relu"|"gelu",
 *               "pos": "learned"|"sinusoidal"|"none" (absent = learned)},
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

/* Writes text[0..len) to path atomically: a temporary file with a unique name beside the
 * destination (created O_EXCL), fsync, rename, fsync of the directory; on failure the old file
 * is untouched. A symlink is followed (its target is replaced, the link stays a link); an
 * existing device or FIFO (/dev/null, /dev/full) is written in place, every write checked; a
 * directory or socket is refused. Errors name the file. (src/io/io_common.c) */
attn_status attn_write_file_atomic(const char *path, const char *text, size_t len, attn_error *err);

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
} attn_report;
/* As JSON {"epochs", "train_size", "seeds", "eval_batch", "blas_core", "runs": [{"model",
 * "seed", "params", "accuracy": {set: acc}, "weights"}]} (strings escaped by cJSON; one line
 * per run), written with attn_write_file_atomic. */
attn_status attn_report_save_json(const attn_report *r, const char *path, attn_error *err);
/* What a saved report says about how its runs were made: epochs and train_size (-1 where
 * absent) and the OpenBLAS core ("unknown" where absent). */
typedef struct attn_report_header {
    int epochs, train_size;
    char blas_core[64];
} attn_report_header;
attn_status attn_report_peek(const char *path, attn_report_header *h, attn_error *err);

/* ---- explanations as JSON (src/io/explain_json.c) ------------------------------------- */

/* s as a JSON string literal to f: quotes and backslashes escaped, control bytes as \u00XX,
 * the rest as is (words and messages are UTF-8 already). The explain JSON and the CLI's JSON
 * output write their strings with it. */
void attn_json_write_string(FILE *f, const char *s);

/* The object `attn explain --format json` prints for one sentence (and `attn serve` returns per
 * model), without a newline: {"sentence", "tokens", "logit", "probability", "attention"
 * [layer][head][query][key] (Transformer), "prefix_probability" (recurrent), "saliency":
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
} attn_explain_request;
/* ATTN_ERR_PARSE (malformed JSON with byte offset, line and column; wrong types; unknown key),
 * ATTN_ERR_VALUE (too many models) or ATTN_ERR_NOMEM; on error *out is empty. */
attn_status attn_explain_request_parse(const char *buf, size_t len, attn_explain_request *out,
                                       attn_error *err);
void attn_explain_request_clear(attn_explain_request *r); /* frees the strings; NULL ok */

/* ---- Adam (src/train/adam.c), exactly torch.optim.Adam --------------------------------- *
 * Follows PyTorch 1.13's CPU single-tensor path bit for bit (see adam.c). The hyperparameters
 * are doubles because PyTorch's are Python floats: 1e-3 and (double)1e-3f are different. */

typedef struct attn_adam_config {
    double lr, beta1, beta2, eps, weight_decay;
} attn_adam_config;
typedef struct attn_adam {
    attn_adam_config cfg;
    size_t n;  /* parameters */
    long step; /* steps taken */
    float *m;  /* [n] first moment (PyTorch exp_avg) */
    float *v;  /* [n] second moment (PyTorch exp_avg_sq) */
} attn_adam;

attn_adam_config attn_adam_config_default(void); /* lr 1e-3, betas 0.9/0.999, eps 1e-8, wd 0 */
/* cfg may be NULL (defaults). Fails on lr/eps/wd < 0 or betas outside [0, 1). */
attn_status attn_adam_create(size_t n, const attn_adam_config *cfg, attn_adam **out,
                             attn_error *err);
/* One step over params[n] with grads[n]; increments opt->step first (PyTorch's order). */
void attn_adam_step(attn_adam *opt, float *params, const float *grads);
void attn_adam_free(attn_adam *opt);

/* ---- BCE loss on logits, mean over the batch (the op is in attn_kernels.h) -------------- */

/* ---- training (src/train/) -------------------------------------------------------------- *
 * Held-out slice (reported after every epoch): with attn_trainer_create_heldout and a
 * separate held-out set (what the CLI does for generated data: ATTN_SET_HOLDOUT), all training
 * sentences are trained on and the set's first `holdout` sentences (default 500) are held out;
 * with attn_trainer_create, the training data is split: its first n - holdout sentences are
 * trained on, its LAST `holdout` sentences are held out.
 * Model selection (keep_best, default on, needs holdout > 0): the trainer keeps a copy of the
 * parameters of the epoch with the best held-out accuracy (ties: the later epoch) and, when
 * the last epoch is done, puts them back into the model, so the run returns the best epoch's
 * parameters (before the last epoch's on_epoch callback). A checkpoint then still holds the
 * last epoch's parameters as `params` (and the best ones as `best_params`), so that extending
 * the run continues exactly where an uninterrupted longer run would be.
 * Each epoch shuffles the training sentences with the project PRNG (seeded from cfg.seed, the
 * state carried from epoch to epoch), cuts the permutation into chunks of bucket*batch_size
 * sentences, sorts each chunk by length (stable), forms batches of batch_size consecutive
 * sentences (the last batch may be smaller) and shuffles the batch order. bucket = 1 turns
 * length bucketing off. Each step: zero_grad, forward, mean BCE, backward, NaN/Inf check of
 * the loss and every gradient, Adam step.
 * Determinism: the same model, data and config give bit-identical weights when the BLAS runs
 * on one thread (attn_set_num_threads(1)); the CLI does so and parallelises across runs. */

#define ATTN_MAX_WARMUP 100000000 /* largest warm-up (Adam steps) */
typedef struct attn_train_config {
    int epochs;     /* 20 */
    int batch_size; /* 32 */
    int bucket;     /* 8: sort chunks of bucket*batch_size sentences by length; 1 = off */
    int holdout;    /* 500: sentences of the held-out slice (0 = none) */
    int keep_best;  /* 1: end with the best held-out epoch's parameters; 0: the last's */
    int eval_batch; /* 256: batch size for the held-out evaluation */
    uint64_t seed;  /* shuffling (and init, when the model was created from it) */
    attn_adam_config adam;
    /* 0: off. N > 0: linear learning-rate warm-up, PyTorch's LambdaLR with
     * lambda(step) = min(1, (step + 1) / N) stepped after every Adam step: Adam step k (0-based)
     * uses lr * min(1, (k + 1) / N), computed in double as Python does. */
    int warmup;
} attn_train_config;

typedef struct attn_epoch_stats {
    int epoch, epochs;       /* 1-based */
    long steps;              /* Adam steps so far */
    double loss;             /* mean training loss over the epoch */
    double train_acc;        /* fraction correct during the epoch (before each update) */
    double holdout_acc;      /* on the held-out slice (NaN if none) */
    double sentences_per_s;  /* training sentences per second in this epoch */
    double elapsed_s, eta_s; /* since attn_trainer_run started; estimate for the rest */
} attn_epoch_stats;

typedef struct attn_train_callbacks {
    /* Called after every epoch; return false to stop (attn_trainer_run returns ATTN_OK). */
    bool (*on_epoch)(const attn_epoch_stats *st, void *user);
    /* Called every 16 steps within an epoch for progress display (may be NULL). */
    void (*on_step)(int epoch, int step, int steps, void *user);
    void *user;
} attn_train_callbacks;

/* The full training state that a checkpoint captures: the model (not owned), Adam, the
 * shuffling PRNG, the epoch counter and the config. */
typedef struct attn_trainer attn_trainer;

attn_train_config attn_train_config_default(void);
/* Checks epochs >= 1, batch_size >= 1, bucket >= 1, 0 <= holdout < n, ... */
attn_status attn_train_config_validate(const attn_train_config *cfg, int n_sentences,
                                       attn_error *err);

/* Borrows model and data (both must outlive the trainer). The data is copied into padded
 * batches as needed; nothing is kept beyond its pointers. */
attn_status attn_trainer_create(attn_model *model, const attn_dataset *data,
                                const attn_train_config *cfg, attn_trainer **out, attn_error *err);
/* As attn_trainer_create, but with a separate held-out set (may be NULL: the split above):
 * all of data is trained on and the held-out slice is heldout's first cfg.holdout sentences
 * (0 <= cfg.holdout <= heldout->n). Both are borrowed. */
attn_status attn_trainer_create_heldout(attn_model *model, const attn_dataset *data,
                                        const attn_dataset *heldout, const attn_train_config *cfg,
                                        attn_trainer **out, attn_error *err);
void attn_trainer_free(attn_trainer *t);
/* Trains the remaining epochs (cfg.epochs minus the epochs done). On NaN/Inf, returns
 * ATTN_ERR_VALUE naming the step, epoch and tensor; params are then unusable. */
attn_status attn_trainer_run(attn_trainer *t, const attn_train_callbacks *cb, attn_error *err);
int attn_trainer_epoch(const attn_trainer *t);  /* epochs completed */
long attn_trainer_steps(const attn_trainer *t); /* Adam steps taken */
const attn_train_config *attn_trainer_config(const attn_trainer *t);
const attn_adam *attn_trainer_adam(const attn_trainer *t);
/* The epoch (1-based) whose parameters model selection holds so far, 0 if none (keep_best
 * off or no held-out slice); *acc (may be NULL) receives its held-out accuracy. */
int attn_trainer_best_epoch(const attn_trainer *t, double *acc);

/* Fraction of `d`'s sentences [first, first + n) classified correctly (logit > 0 means
 * positive), batch_size sentences per forward (1 = exact mode, bit-identical to PyTorch). */
attn_status attn_evaluate(attn_model *m, const attn_dataset *d, int first, int n, int batch_size,
                          double *accuracy, attn_error *err);

/* ---- checkpoints: the training state (src/train/checkpoint.c) as JSON (src/io/) --------- *
 * The state a checkpoint captures, as values and borrowed arrays. The trainer gives it out and
 * takes it back; src/io/checkpoint_json.c writes and reads it as "attn-checkpoint-v1". */
typedef struct attn_train_state {
    attn_model_config model_cfg;
    attn_train_config train_cfg;
    int n_sentences;             /* the training data's size ... */
    uint64_t data_fingerprint;   /* ... and FNV-1a hash over its labels, lengths and ids */
    bool holdout_separate;       /* held-out slice from a separate set (not split off the data) */
    int epoch;                   /* epochs completed */
    uint64_t rng_state;          /* the shuffling PRNG */
    long adam_step;              /* Adam steps taken */
    size_t n_params;             /* length of each array below */
    const float *params, *m, *v; /* [n_params] the last epoch's parameters (also after model
                                    selection put the best ones back), Adam's moments */
    int best_epoch;              /* model selection: epoch of best_params, 0 = none */
    double best_acc;             /* its held-out accuracy (0 when best_epoch is 0) */
    const float *best_params;    /* [n_params] when best_epoch > 0, else NULL */
} attn_train_state;

/* Points *st at t's current state (arrays owned by t and its model, valid until either
 * changes). Fails (ATTN_ERR_VALUE, naming the tensor) when a parameter is NaN or Inf. */
attn_status attn_trainer_get_state(const attn_trainer *t, attn_train_state *st, attn_error *err);
/* Checks that st fits t -- the same model config and parameter count, batch size, bucket,
 * holdout, seed and keep_best, the same data and way of holding out, a best_epoch that fits
 * epoch -- and copies it into t and its model. On error nothing changes and the message
 * starts with `source` (the file st came from). */
attn_status attn_trainer_set_state(attn_trainer *t, const attn_train_state *st, const char *source,
                                   attn_error *err);

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
#endif /* ATTN_H */
