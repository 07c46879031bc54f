/* attn_seq2seq.h -- the generative half of attn (write-up §6): sequence-to-sequence tasks and
 * three encoder-decoder models (a GRU squeezing the source into one vector, a GRU with additive
 * attention, PyTorch's nn.Transformer) with teacher-forced training and generation. attn.h is the
 * umbrella; this header adds the seq2seq API, with attn_seq2seq_ops.h (the decoder's ops) and
 * attn_seq2seq_explain.h (explanations and their JSON), which it includes.
 *
 * Example: rewrite one review into its verdict with a trained model.
 *
 *     attn_error err;
 *     attn_seq2seq *m = NULL;
 *     if (attn_seq2seq_load_json("rewrite.json", &m, &err) != ATTN_OK) { ... err.msg ... }
 *     int src[ATTN_MAX_WORDS], n_src, out[ATTN_S2S_MAX_TGT], n_out;
 *     attn_tokenize("the exam was not very clear", src, ATTN_MAX_WORDS, &n_src, &err);
 *     attn_seq2seq_greedy(m, src, n_src, ATTN_S2S_MAX_TGT, true, out, &n_out, NULL, &err);
 *     // out holds target-vocabulary ids: attn_tgt_vocab_token(out[i]); [EOS] not included
 *     attn_seq2seq_free(m);
 *
 * Dimension letters (besides attn.h's): S source positions, T target positions (teacher
 * forcing: [BOS] + target words), Vs / Vt source / target vocabulary sizes, Le / Ld encoder /
 * decoder layers.
 *
 * Vocabularies (docs/decoder.md):
 *   source: the built-in course-review vocabulary (attn_vocab_builtin(): [PAD], [CLS], the
 *           words); sources are word ids, no [CLS].
 *   target: the source vocabulary's ids unchanged (a copied word keeps its id) followed by four
 *           tokens of the target side only: [BOS] = ATTN_VOCAB_SIZE, [EOS], "positive",
 *           "negative". Id 0 is [PAD] on both sides, the padding a loss ignores.
 *   The compose task reads its sources ("positive exam") in the target vocabulary too.
 */
#ifndef ATTN_SEQ2SEQ_H
#define ATTN_SEQ2SEQ_H

#include "attn.h"
#include "attn_seq2seq_ops.h" /* the decoder's attentions and the seq2seq loss */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the target vocabulary (src/data/rewrite.c) --------------------------------------------- */

#define ATTN_TGT_BOS        (ATTN_VOCAB_SIZE + 0)
#define ATTN_TGT_EOS        (ATTN_VOCAB_SIZE + 1)
#define ATTN_TGT_POSITIVE   (ATTN_VOCAB_SIZE + 2)
#define ATTN_TGT_NEGATIVE   (ATTN_VOCAB_SIZE + 3)
#define ATTN_TGT_VOCAB_SIZE (ATTN_VOCAB_SIZE + 4)

/* "[PAD]", a source word, "[BOS]", "[EOS]", "positive", "negative"; NULL if out of range. */
const char *attn_tgt_vocab_token(int id);
/* -1 if token is not in the target vocabulary. */
int attn_tgt_vocab_id(const char *token);

/* ---- tasks: source/target pairs (src/data/rewrite.c, compose.c, pairs_tsv.c) -------------- */

typedef enum attn_task {
    ATTN_TASK_REWRITE, /* "rewrite": a review -> its verdict (src/data/rewrite.c) */
    ATTN_TASK_COMPOSE, /* "compose": "<polarity> <subject>" -> a review (src/data/compose.c) */
} attn_task;
const char *attn_task_name(attn_task t); /* "rewrite", "compose" */
attn_status attn_task_from_name(const char *name, attn_task *out, attn_error *err);

/* Longest target (words, without [BOS]/[EOS]) of the rewrite task: polarity subject negation
 * adjective. */
#define ATTN_REWRITE_MAX_TGT 4
/* Longest target a seq2seq model generates (words, [EOS] not counted). */
#define ATTN_S2S_MAX_TGT 64

/* n source/target pairs. The sources are exactly attn_data_generate's sentences of (set, n,
 * seed) (src keeps its labels); target i is tgt_ids[tgt_offsets[i] .. + tgt_lengths[i]) in the
 * target vocabulary, and align[j] is the 0-based source position target word j comes from. */
typedef struct attn_pairs {
    attn_task task;
    attn_dataset *src;   /* [n] the sources, owned */
    int *tgt_lengths;    /* [n] target words (no [BOS], no [EOS]) */
    size_t *tgt_offsets; /* [n+1] */
    int *tgt_ids;        /* [tgt_offsets[n]] target vocabulary ids */
    int *align;          /* [tgt_offsets[n]] source position of each target word */
    char **tgt_texts;    /* [n] the targets, single spaces */
} attn_pairs;

/* rewrite: target `<polarity> <subject> [<negation>] <first adjective>` of a review sentence
 * ids[n] (source vocabulary) whose label is `label` (1 positive): the core clause's subject, its
 * negation if any, its adjective (intensifiers, fillers and the distractor clause dropped).
 * Alignment: polarity -> the first adjective's position (the word that decides it, with the
 * negation), the others -> their own positions. tgt and align have room for
 * ATTN_REWRITE_MAX_TGT. ATTN_ERR_VALUE when ids is not a sentence of the grammar. */
attn_status attn_rewrite_target(const int *ids, int n, int label, int *tgt, int *align, int *n_tgt,
                                attn_error *err);
/* compose (src/data/compose.c, docs/decoder.md): the source is "<polarity> <subject>" in the
 * TARGET vocabulary (ATTN_TGT_POSITIVE or ATTN_TGT_NEGATIVE, then the subject noun's id), the
 * target a review sentence of the grammar (attn_grammar_parse) with that label and subject:
 * attn_data_generate's sentence i of (set, n, seed), word ids unchanged. Alignment: the subject
 * noun -> 1, the core adjective and the negation (the words that realise the polarity) -> 0,
 * every other word -> -1 (it comes from no source position). src->texts are the sources,
 * src->labels the polarities. */
#define ATTN_COMPOSE_SRC     2  /* source tokens */
#define ATTN_COMPOSE_MAX_TGT 60 /* longest target: the longest generated sentence (fill8) */
/* compose's learning rate in attn train and reproduce (docs/decoder.md: at 1e-3, 10 epochs do
 * not learn the polarity) */
#define ATTN_COMPOSE_LR 3e-3
/* Reads a compose source "positive exam" (white space around and between the two words is
 * free, upper case is lower-cased) into ids[ATTN_COMPOSE_SRC]. ATTN_ERR_VALUE naming what is
 * wrong (not two words, not a polarity, not a subject noun: the message lists them). */
attn_status attn_compose_source(const char *text, int ids[ATTN_COMPOSE_SRC], attn_error *err);
/* A compose output out[n_out] (target ids, [EOS] not included) judged for the source
 * src[ATTN_COMPOSE_SRC]. ATTN_OK when it is a sentence of the grammar, ATTN_ERR_VALUE (err says
 * why) when not; *v filled in both cases. */
typedef struct attn_compose_verdict {
    bool grammatical;
    int label;        /* the parse's polarity (1 positive, 0 negative), -1: not grammatical */
    int subject;      /* the parse's subject noun (its id), -1: not grammatical */
    bool polarity_ok; /* grammatical with the polarity the source asks for */
    bool subject_ok;  /* grammatical with the subject the source asks for */
} attn_compose_verdict;
attn_status attn_compose_judge(const int *src, const int *out, int n_out, attn_compose_verdict *v,
                               attn_error *err);

/* The pairs of `task` for attn_data_generate's (set, n, seed). */
attn_status attn_pairs_generate(attn_task task, attn_set set, int n, uint64_t seed,
                                attn_pairs **out, attn_error *err);
void attn_pairs_free(attn_pairs *p); /* NULL ok */
/* A file of 'source<TAB>target' lines (attn data --task prints them; blank lines skipped) as the
 * pairs of `task` (src/data/pairs_tsv.c): rewrite sources are review sentences (attn_tokenize),
 * compose sources "<polarity> <subject>" (attn_compose_source); targets are words of the target
 * vocabulary ([PAD], [BOS], [EOS] refused), 1..max_tgt of them; sources at most max_src words.
 * align is -1 throughout, rewrite src->labels -1. The first bad line stops the reading: the
 * message names the file and the line. */
attn_status attn_pairs_read_tsv(const char *path, attn_task task, int max_src, int max_tgt,
                                attn_pairs **out, attn_error *err);

/* ---- models (src/models/seq2seq*.c; seq2seq_rnn.c: the GRU models)
 * --------------------------------------------------------- */

typedef enum attn_s2s_arch {
    ATTN_S2S_TRANSFORMER, /* "seq2seq-transformer": nn.Transformer with embeddings and a head */
    ATTN_S2S_GRU,         /* "seq2seq-gru": GRU encoder, its last state starts a GRU decoder */
    ATTN_S2S_ATTN,        /* "seq2seq-attn": GRU encoder, GRU decoder with additive attention */
} attn_s2s_arch;

/* The blueprint of a seq2seq model. seq2seq-transformer (docs/decoder.md): source embedding +
 * positions -> enc_layers x TransformerEncoderLayer -> encoder.norm = memory; [BOS] + target
 * embedding + positions -> dec_layers x TransformerDecoderLayer (causal self-attention,
 * cross-attention to the memory) -> decoder.norm -> head Linear(D, tgt_vocab).
 * seq2seq-gru / seq2seq-attn (src/models/seq2seq_rnn.c, docs/decoder.md): d_model is the
 * embedding width E of both sides, hidden_size the GRUs' H; n_heads, ffn_dim, enc_layers,
 * dec_layers, norm, activation and pos are not used (and not in their weights files). */
typedef struct attn_seq2seq_config {
    attn_s2s_arch arch;
    int src_vocab, tgt_vocab;   /* Vs (91), Vt (95) */
    int d_model, n_heads;       /* D (32), NH (2) */
    int ffn_dim;                /* F (64) */
    int enc_layers, dec_layers; /* Le (2), Ld (2): 1..ATTN_TRANSFORMER_MAX_LAYERS */
    int max_src_len;            /* source positions (80) */
    int max_tgt_len;            /* decoder positions, [BOS] included (16) */
    attn_norm norm;             /* pre (norm_first=True) or post; both have the final norms */
    attn_activation activation; /* relu or gelu */
    attn_pos pos;               /* learned (default), sinusoidal, none (added to the embeddings),
                                 * rope or alibi (in the self-attentions only; rope: an even
                                 * head size), one scheme for both sides */
    int hidden_size;            /* GRU models: H (64); 0 for the Transformer */
    int bidirectional;          /* seq2seq-attn: 1 (default) = a bidirectional encoder; else 0 */
    attn_task task;             /* what the model was trained on: how generate reads a source */
} attn_seq2seq_config;

attn_seq2seq_config attn_seq2seq_config_default(attn_s2s_arch arch);
/* Sets cfg->task and the sizes that follow from it: rewrite the defaults above; compose
 * src_vocab = ATTN_TGT_VOCAB_SIZE (the polarity tokens), max_src_len = ATTN_COMPOSE_SRC,
 * max_tgt_len = ATTN_COMPOSE_MAX_TGT + 1. */
void attn_seq2seq_config_set_task(attn_seq2seq_config *cfg, attn_task task);
const char *attn_s2s_arch_name(attn_s2s_arch a); /* "seq2seq-transformer", "seq2seq-gru", ... */
/* Fails (ATTN_ERR_VALUE) naming the expected names. */
attn_status attn_s2s_arch_from_name(const char *name, attn_s2s_arch *out, attn_error *err);
/* Checks sizes; the message names the field. */
attn_status attn_seq2seq_config_validate(const attn_seq2seq_config *cfg, attn_error *err);

/* The number of parameters a model of cfg has, computed without allocating anything (0 when
 * cfg is not valid): what the loaders check against ATTN_MAX_PARAMS before creating a model. */
size_t attn_seq2seq_config_n_params(const attn_seq2seq_config *cfg);

typedef struct attn_seq2seq attn_seq2seq; /* opaque; src/models/seq2seq_internal.h */

/* Parameters drawn from seed (PyTorch's initialisers: nn.Transformer's xavier_uniform_ on every
 * matrix, zero attention biases, unit norms, N(0, 1) embeddings, the sinusoid table times 2 for
 * learned positions, nn.Linear's uniform for the rest). */
attn_status attn_seq2seq_create(const attn_seq2seq_config *cfg, uint64_t seed, attn_seq2seq **out,
                                attn_error *err);
/* A model whose parameters come from src (attn_param_source, attn_model.h): for loaders. */
attn_status attn_seq2seq_create_from(const attn_seq2seq_config *cfg, const attn_param_source *src,
                                     attn_seq2seq **out, attn_error *err);
void attn_seq2seq_free(attn_seq2seq *m); /* NULL ok */
const attn_seq2seq_config *attn_seq2seq_config_of(const attn_seq2seq *m);
/* The kernels record of m's parameters, as attn_model_kernels (attn_model.h). */
const attn_kernels_info *attn_seq2seq_kernels(const attn_seq2seq *m);
void attn_seq2seq_set_kernels(attn_seq2seq *m, const attn_kernels_info *k);
size_t attn_seq2seq_n_params(const attn_seq2seq *m);
float *attn_seq2seq_params(attn_seq2seq *m);
/* The gradient of the last attn_seq2seq_backward; NULL before the first. A training step
 * (attn_seq2seq_train) may clear it as Adam reads it (on one process it does): after training
 * it is not the last step's gradient (attn grad computes one on its own). */
float *attn_seq2seq_grads(attn_seq2seq *m);
/* Tensors in state_dict order ("src_embedding.weight", "transformer.encoder.layers.0...", ...) */
size_t attn_seq2seq_tensor_count(const attn_seq2seq *m);
const char *attn_seq2seq_tensor_name(const attn_seq2seq *m, size_t i);
int attn_seq2seq_tensor_shape(const attn_seq2seq *m, size_t i, int shape[4]); /* ndim */
size_t attn_seq2seq_tensor_offset(const attn_seq2seq *m, size_t i);
size_t attn_seq2seq_tensor_numel(const attn_seq2seq *m, size_t i);
long attn_seq2seq_tensor_find(const attn_seq2seq *m, const char *name); /* -1 if absent */

/* B pairs, teacher forced: source i is src_ids[i*S .. + src_lengths[i]) (source ids, 1..S
 * words), decoder input i is tgt_ids[i*T .. + tgt_lengths[i]) (target ids, [BOS] first). */
typedef struct attn_s2s_batch {
    int B, S, T;
    const int *src_ids, *src_lengths; /* [B, S], [B] */
    const int *tgt_ids, *tgt_lengths; /* [B, T], [B] */
} attn_s2s_batch;

/* logits [sum_i tgt_lengths[i], Vt]: pair i's rows one after the other, row t the prediction of
 * the word after decoder input t. B = 1 is bit-identical to PyTorch's eval forward (no_grad). */
attn_status attn_seq2seq_forward(attn_seq2seq *m, const attn_s2s_batch *b, float *logits,
                                 attn_error *err);
/* Gradients of the last forward's batch from d_logits (same layout), ACCUMULATED into the
 * model's gradient array (allocated, zeroed, on first use). */
attn_status attn_seq2seq_backward(attn_seq2seq *m, const attn_s2s_batch *b, const float *d_logits,
                                  attn_error *err);
void attn_seq2seq_zero_grad(attn_seq2seq *m);
/* For the causal-mask experiment only (`attn experiment causal-mask`): masked false runs the
 * decoder's self-attention WITHOUT the causal mask in the following forwards (and backwards),
 * so each target position also sees the words after it; true (how every model is created)
 * restores it. A setting of this object alone: not in the config, never saved or loaded, no
 * command option; greedy decoding and sampling refuse while the mask is off (beam search, on
 * the teacher-forced forward, would run unmasked: do not).
 * seq2seq-transformer only (ATTN_ERR_VALUE for other architectures). */
attn_status attn_seq2seq_set_causal_mask(attn_seq2seq *m, bool masked, attn_error *err);
/* Whether the decoder's self-attention is masked (true for every architecture but a
 * seq2seq-transformer after attn_seq2seq_set_causal_mask(m, false)). */
bool attn_seq2seq_causal_mask(const attn_seq2seq *m);

/* A model that reads m's parameters (borrowed: m must outlive it; m's parameter values may
 * change between calls) and owns its gradients, activations and decoding buffers, so that
 * replicas of one model can train and decode at the same time on different threads (the
 * causal-mask setting is copied). Its forward, backward and decoding are m's to the bit. */
attn_status attn_seq2seq_replica(attn_seq2seq *m, attn_seq2seq **out, attn_error *err);
/* Allocates m's gradients (zeroed) if a backward has not yet done so. */
attn_status attn_seq2seq_grads_alloc(attn_seq2seq *m, attn_error *err);
/* A gradient buffer (n_params floats, from malloc) moved between models of one configuration,
 * as attn_model_grads_take/give (attn_threads.h) for classifiers: attn serve's decoder workers
 * explaining one big model share one. take detaches m's buffer and returns it (NULL if it has
 * none; the next backward allocates a fresh one); give frees m's own and makes `grads` (NULL:
 * none) m's, which frees it with m. Its values are the previous holder's: a backward adds. */
float *attn_seq2seq_grads_take(attn_seq2seq *m);
void attn_seq2seq_grads_give(attn_seq2seq *m, float *grads);

/* Greedy decoding of source src[n_src]: from [BOS], the argmax word (ties: the lower id) until
 * [EOS] or max_out words. cache true: one new decoder row per step with a KV cache; false: the
 * decoder recomputed over the whole prefix each step (PyTorch's nn.Transformer loop, bit for
 * bit). out[max_out] receives the words ([EOS] not included), *n_out their count;
 * step_logits (NULL or [max_out + 1, Vt]) each step's logits; *n_steps (may be NULL) the steps
 * taken (n_out + 1 when [EOS] ended it). max_out + 1 <= max_tgt_len. */
attn_status attn_seq2seq_greedy(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                                int *out, int *n_out, float *step_logits, int *n_steps,
                                attn_error *err);
/* attn_seq2seq_greedy with a floor on the length: [EOS] is left out of the argmax (as if its
 * logit were -inf; ties still the lower id) at the first min_out steps, so that the output has
 * at least min_out words and the decoding at least min_out steps (`attn generate --min-len N`:
 * a fixed decode length for timing, min_out = max_out). step_logits are the model's, [EOS]'s
 * included. tools/seq2seq_models.greedy / greedy_cached (min_out) apply the same rule.
 * ATTN_ERR_ARG unless 0 <= min_out <= max_out. attn_seq2seq_greedy is min_out 0. */
attn_status attn_seq2seq_greedy_min(attn_seq2seq *m, const int *src, int n_src, int min_out,
                                    int max_out, bool cache, int *out, int *n_out,
                                    float *step_logits, int *n_steps, attn_error *err);
/* B sources decoded greedily together with the KV cache (attn_seq2seq_greedy_min's rule per
 * source): each source encoded alone (its batch-1 memory), then every step one decoder row per
 * source still decoding, their linear products taken together ([B_live, D] rows), each row's
 * attention over its own cache and memory; a source that chose [EOS] or has max_out words
 * leaves the step (its row no longer computed). Source i = src[i][n_src[i]]; its words in
 * out[i * max_out ..] ([B, max_out]), their count in n_out[i]; step_logits NULL or
 * [B, max_out + 1, Vt] (source i's step s at row i * (max_out + 1) + s); n_steps NULL or [B].
 * A row's tokens equal tools/seq2seq_models.greedy_batch's on the same batch (the same
 * products); against the same source decoded alone (attn_seq2seq_greedy, cache) they agree up
 * to the GEMMs' rounding of [B_live, D] against [1, D] rows. B = 1 is attn_seq2seq_greedy_min
 * with the cache, bit for bit. The GRU models decode their sources one after the other. */
attn_status attn_seq2seq_greedy_batch(attn_seq2seq *m, int B, const int *const *src,
                                      const int *n_src, int min_out, int max_out, int *out,
                                      int *n_out, float *step_logits, int *n_steps,
                                      attn_error *err);

/* seq2seq-attn's alignment of one teacher-forced pair (src/models/seq2seq_rnn.c): alpha
 * [n_dec, n_src], row t the additive attention's softmax over the source at decoder step t,
 * bit-identical to tools/seq2seq_models.AdditiveAttention's. ATTN_ERR_VALUE for other
 * architectures. */
attn_status attn_seq2seq_alignment(attn_seq2seq *m, const int *src, int n_src, const int *dec_in,
                                   int n_dec, float *alpha, attn_error *err);

/* ---- looking inside (src/models/seq2seq_look.c) ------------------------------------------ */

/* Whether m has attention maps, and their sizes: seq2seq-transformer L = dec_layers, NH =
 * n_heads and self-attention maps too; an RNN decoder with attention L = NH = 1 (its
 * alignment), no self-attention; none (false, zeros) for a decoder without attention. */
bool attn_seq2seq_map_shape(const attn_seq2seq *m, int *n_layers, int *n_heads, bool *self);
/* The attention probabilities the teacher-forced forward of one pair (B = 1) used: source
 * src[n_src], decoder input dec_in[n_dec] ([BOS] first). cross [L, NH, n_dec, n_src]; self
 * [L, NH, n_dec, n_dec] (may be NULL; ignored without self-attention). seq2seq-transformer:
 * bit-identical to nn.MultiheadAttention's need_weights=True, average_attn_weights=False.
 * ATTN_ERR_VALUE for an architecture without maps. Overwrites the last forward. */
attn_status attn_seq2seq_maps(attn_seq2seq *m, const int *src, int n_src, const int *dec_in,
                              int n_dec, float *cross, float *self, attn_error *err);
/* E, the width of the source embedding ("src_embedding.weight" [Vs, E]); 0 if none. */
int attn_seq2seq_source_width(const attn_seq2seq *m);
/* x [n_src, E]: the rows entering the encoder's first layer (the embedding row of each word;
 * seq2seq-transformer: plus its position, one float add as the forward does). */
attn_status attn_seq2seq_source_input(const attn_seq2seq *m, const int *src, int n_src, float *x,
                                      attn_error *err);
/* attn_seq2seq_backward of the last forward (B = 1) that also writes d_src [n_src, E] = the
 * gradient with respect to each source position's first-layer input row. ATTN_ERR_VALUE when
 * the architecture's backward does not provide it. */
attn_status attn_seq2seq_backward_source(attn_seq2seq *m, const attn_s2s_batch *b,
                                         const float *d_logits, float *d_src, attn_error *err);

/* ---- training and evaluation (src/train/seq2seq_train.c) ------------------------------------ */

typedef struct attn_s2s_train_config {
    int epochs;     /* 10 */
    int batch_size; /* 32 pairs per Adam step */
    int holdout;    /* 500: held-out pairs decoded after every epoch (0 = none) */
    int keep_best;  /* 1: end with the parameters of the best held-out epoch: the highest exact
                       match (rewrite), the lowest held-out loss (compose: many right answers) */
    uint64_t seed;  /* shuffling */
    attn_adam_config adam;
} attn_s2s_train_config;
/* The largest epochs and batch_size a seq2seq run takes (attn train's bounds, and what its
 * checkpoint reader accepts). */
#define ATTN_S2S_MAX_EPOCHS 100000
#define ATTN_S2S_MAX_BATCH  (1 << 16)

typedef struct attn_s2s_epoch_stats {
    int epoch, epochs;    /* 1-based */
    long steps;           /* Adam steps so far */
    double loss;          /* mean cross-entropy per target token over the epoch's batches */
    double holdout_exact; /* exact match of greedy decoding on the held-out pairs (NaN: none) */
    double tokens_per_s;  /* target tokens ([EOS] included) trained per second */
    double elapsed_s;
    double holdout_loss; /* compose: teacher-forced loss per target token on the held-out pairs
                            (NaN: none, or rewrite) */
} attn_s2s_epoch_stats;

/* The training state after an epoch: everything a resumed run needs to end byte-identical to
 * an uninterrupted one (docs/decoder.md, "Checkpoints"). Arrays borrowed from the trainer (or,
 * from attn_s2s_checkpoint_load, owned: attn_s2s_train_state_clear frees them). */
typedef struct attn_s2s_train_state {
    attn_seq2seq_config model_cfg;
    attn_s2s_train_config train_cfg; /* epochs: the run's; the rest must match on resume */
    int n_pairs;                     /* training pairs, and a fingerprint of their ids */
    uint64_t data_fingerprint;
    int epoch;          /* epochs done */
    uint64_t rng_state; /* the shuffling generator after `epoch` shuffles */
    long adam_step;
    size_t n_params;
    float *params, *m, *v; /* [n_params]: the LAST epoch's parameters, Adam's moments */
    int best_epoch;        /* keep_best: the best epoch so far (1-based), 0: none */
    double best_score;     /* its held-out exact match, or minus its held-out loss (compose) */
    float *best_params;    /* [n_params] when best_epoch > 0 */
} attn_s2s_train_state;
void attn_s2s_train_state_clear(attn_s2s_train_state *st); /* frees owned arrays; zeroes */

typedef struct attn_s2s_callbacks {
    bool (*on_epoch)(const attn_s2s_epoch_stats *st, void *user); /* false stops */
    void *user;
} attn_s2s_callbacks;

/* Checkpointing and resuming (attn_seq2seq_train_resume). */
typedef struct attn_s2s_resume {
    const attn_s2s_train_state *from; /* NULL: a new run */
    /* NULL, or called after every epoch (after on_epoch) with the state to checkpoint; a status
     * other than ATTN_OK stops the training with it. */
    attn_status (*on_state)(const attn_s2s_train_state *st, void *user, attn_error *err);
    void *user;
} attn_s2s_resume;

attn_s2s_train_config attn_s2s_train_config_default(void);
/* The learning rate `attn train` and `attn reproduce` give seq2seq-gru and seq2seq-attn (the
 * default's 1e-3 leaves the single-vector GRU at 5-60 % exact match after 10 epochs, seed to
 * seed; docs/decoder.md). The Transformer keeps the default. */
#define ATTN_S2S_RNN_LR 3e-3
/* Teacher-forced training of m on `train` (docs/decoder.md): per epoch a shuffle (seed), batches,
 * cross-entropy over target words and [EOS], Adam; the first cfg->holdout pairs of heldout scored
 * after each epoch: by exact match (rewrite), by attn_seq2seq_loss (compose, train->task).
 * ATTN_ERR_VALUE on a non-finite loss or gradient. */
attn_status attn_seq2seq_train(attn_seq2seq *m, const attn_pairs *train, const attn_pairs *heldout,
                               const attn_s2s_train_config *cfg, const attn_s2s_callbacks *cb,
                               attn_error *err);
/* attn_seq2seq_train with checkpoints: rs->on_state (if any) gets the state after every epoch;
 * with rs->from, the run continues from that state (a checkpoint): m gets its parameters, Adam
 * its moments and step, the shuffling generator is replayed to its epoch (and must land on its
 * rng_state); then epochs from->epoch + 1 .. cfg->epochs run. Refused (ATTN_ERR_VALUE, saying
 * what differs) unless the model config, the batch size, holdout, keep_best, seed and Adam
 * settings and the training pairs are the state's, and from->epoch <= cfg->epochs. rs NULL:
 * attn_seq2seq_train. */
attn_status attn_seq2seq_train_resume(attn_seq2seq *m, const attn_pairs *train,
                                      const attn_pairs *heldout, const attn_s2s_train_config *cfg,
                                      const attn_s2s_callbacks *cb, const attn_s2s_resume *rs,
                                      attn_error *err);

typedef struct attn_s2s_eval {
    int n;            /* pairs */
    double exact;     /* fraction whose greedy output (KV cache) equals the target exactly */
    double token_acc; /* fraction of target positions ([EOS] included) predicted right */
} attn_s2s_eval;
/* Mean cross-entropy per target token (words and [EOS]) of pairs [first, first + n) of p,
 * teacher forced in batches of 32 pairs: compose's held-out measure. */
attn_status attn_seq2seq_loss(attn_seq2seq *m, const attn_pairs *p, int first, int n, double *loss,
                              attn_error *err);
/* Greedy decoding of pairs [first, first + n) of p, scored against their targets. */
attn_status attn_seq2seq_evaluate(attn_seq2seq *m, const attn_pairs *p, int first, int n,
                                  attn_s2s_eval *out, attn_error *err);

/* The same on a pool of threads (src/train/seq2seq_eval_pool.c; attn_threads.h, docs/numerics.md
 * "Threads"): the caller's thread works on m, every other worker on a replica of m made for the
 * call. The results are attn_seq2seq_evaluate's and attn_seq2seq_loss's to the bit for every
 * pool, NULL included: a pair's decoding (or a batch of 32 pairs' loss) is one piece whichever
 * thread runs it; counts are added as integers, batch losses in batch order.
 *   attn_s2s_eval ev;
 *   attn_seq2seq_evaluate_pool(m, held, 0, held->src->n, pool, &ev, &err);   // = evaluate */
attn_status attn_seq2seq_evaluate_pool(attn_seq2seq *m, const attn_pairs *p, int first, int n,
                                       attn_pool *pool, attn_s2s_eval *out, attn_error *err);
attn_status attn_seq2seq_loss_pool(attn_seq2seq *m, const attn_pairs *p, int first, int n,
                                   attn_pool *pool, double *loss, attn_error *err);
/* One pair's greedy decoding (KV cache) against its target: attn_seq2seq_evaluate of that pair
 * alone has exact = exact, token_acc = (double)right / tokens. */
typedef struct attn_s2s_pair_score {
    bool exact; /* the output is the target */
    int right;  /* target positions ([EOS] included) predicted right */
    int tokens; /* target positions: words + 1 */
} attn_s2s_pair_score;
/* scores[n]: pair first + i's score in scores[i] (what `attn eval` sorts by source length). */
attn_status attn_seq2seq_score_pool(attn_seq2seq *m, const attn_pairs *p, int first, int n,
                                    attn_pool *pool, attn_s2s_pair_score *scores, attn_error *err);

/* Training on several threads (src/train/seq2seq_parallel.c, docs/numerics.md "Threads"), with
 * the same bytes for every thread count:
 *
 *     attn_pool *pool = NULL;
 *     attn_pool_create(attn_threads_default(), &pool, &err);
 *     attn_set_num_threads(1);                      // one BLAS thread per product
 *     attn_seq2seq_train_pool(m, train, held, &cfg, &cb, NULL, pool, &err);
 *     attn_pool_free(pool);
 *
 * attn_seq2seq_train_resume with each step's batch cut into micro-batches of ATTN_MICRO_BATCH
 * consecutive pairs (whatever the pool), run on replicas of m over pool's threads, their
 * gradients summed in micro-batch order, Adam by parameter ranges. The pool is borrowed (NULL:
 * the caller's thread) and is not part of the state: a run resumed on another pool ends with the
 * same bytes. attn_seq2seq_train and _resume are this with pool NULL: the same steps. The
 * held-out scoring after each epoch runs on the pool too (attn_seq2seq_evaluate_pool,
 * attn_seq2seq_loss_pool: the same scores for every pool). */
attn_status attn_seq2seq_train_pool(attn_seq2seq *m, const attn_pairs *train,
                                    const attn_pairs *heldout, const attn_s2s_train_config *cfg,
                                    const attn_s2s_callbacks *cb, const attn_s2s_resume *rs,
                                    attn_pool *pool, attn_error *err);

/* Sampling (src/models/seq2seq_sample.c, docs/decoder.md): each step draws the next token from
 * softmax(logits / temperature) restricted to the top_k most probable (0: all) and then to the
 * smallest set whose probability reaches top_p (0 or 1: no limit), with the project's splitmix64
 * generator seeded with `seed` (attn_rng); tools/seq2seq_models.sample draws the same tokens. As
 * attn_seq2seq_greedy otherwise (cache: the KV-cached decoder, else the recomputing one). */
typedef struct attn_s2s_sampling {
    double temperature; /* > 0 */
    int top_k;          /* >= 0 */
    double top_p;       /* 0..1 */
    uint64_t seed;
} attn_s2s_sampling;
attn_status attn_seq2seq_sample(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                                const attn_s2s_sampling *cfg, int *out, int *n_out,
                                float *step_logits, int *n_steps, attn_error *err);

/* Beam search of width k (1..ATTN_S2S_MAX_BEAM) on the recomputing decoder (src/models/
 * seq2seq_beam.c, docs/decoder.md): hypotheses scored by the sum of log-probabilities (double),
 * the best k candidates kept per step (ties: hypothesis, then token id), finished ones ranked by
 * the length-normalised score sum / (words + 1). out[max_out] receives the best one's words,
 * *score (may be NULL) its normalised score. */
#define ATTN_S2S_MAX_BEAM 64
attn_status attn_seq2seq_beam(attn_seq2seq *m, const int *src, int n_src, int max_out, int k,
                              int *out, int *n_out, double *score, attn_error *err);

/* ---- weights files (src/io/seq2seq_json.c) ------------------------------------------------ *
 * {"format": "attn-seq2seq-weights-v1", "config": {"arch", "src_vocab", "tgt_vocab", "d_model",
 * "n_heads", "ffn_dim", "enc_layers", "dec_layers", "max_src_len", "max_tgt_len", "norm",
 * "activation", "pos" [, "task": "compose"]} (seq2seq-gru / seq2seq-attn: {"arch", "src_vocab",
 * "tgt_vocab", "d_model", "hidden_size", "bidirectional", "max_src_len", "max_tgt_len"}),
 * "tensors": {state_dict key: {"shape", "data" | "data_b64"}}}; "task" is written for compose
 * models only (the GRU models are trained on rewrite), absent means rewrite; floats
 * %.9g or base64 of little-endian float32. Written atomically; read strictly (every key and
 * tensor exactly once, exact shapes, finite values; all problems reported, naming the file).
 * A classifier's file (attn-weights-v1) is refused as such. */
attn_status attn_seq2seq_save_json(attn_seq2seq *m, bool grads, bool b64, const char *path,
                                   attn_error *err);
attn_status attn_seq2seq_load_json(const char *path, attn_seq2seq **out, attn_error *err);
/* The same model as safetensors (include/attn_io.h's layout, "format" attn-seq2seq-weights-v1 in
 * "__metadata__"). attn_seq2seq_load_json reads either format, recognised by content;
 * attn_seq2seq_save_json writes safetensors when the path ends in ".safetensors" (no grads). */
attn_status attn_seq2seq_save_safetensors(attn_seq2seq *m, const char *path, attn_error *err);
attn_status attn_seq2seq_load_safetensors(const char *path, attn_seq2seq **out, attn_error *err);

/* ---- seq2seq checkpoints (src/io/seq2seq_checkpoint_json.c) ------------------------------- *
 * {"format": "attn-seq2seq-checkpoint-v1", "config": {as in a weights file}, "train": {"epochs",
 * "batch_size", "holdout", "keep_best", "seed": "0x..", "adam": {"lr", "beta1", "beta2", "eps",
 * "weight_decay"}}, "n_pairs", "data_fingerprint": "0x..", "epoch", "rng_state": "0x..",
 * "adam_step", "n_params", "best_epoch", "best_score", "params", "m", "v" [, "best_params"],
 * "crc32": "0x.."}: float arrays as base64 of little-endian float32, doubles %.17g, so
 * everything reads back bit for bit; "crc32" (the last 23 bytes) is the CRC-32 of every byte
 * before it, as in a classifier's checkpoint. Written atomically; read strictly (the checksum,
 * every key once, the parameter count the config's and within ATTN_MAX_PARAMS before any
 * array is allocated, the settings within what attn train accepts and Adam can reach: lr in
 * (0, 1000], betas in [0, 1), eps in (0, 1], epochs <= 100000, batch_size <= 65536, adam_step
 * = epoch x ceil(n_pairs / batch_size), v >= 0; all problems named with the file). */
attn_status attn_s2s_checkpoint_save(const attn_s2s_train_state *st, const char *path,
                                     attn_error *err);
attn_status attn_s2s_checkpoint_load(const char *path, attn_s2s_train_state *st, attn_error *err);

#ifdef __cplusplus
}
#endif

/* what a model did with one source, and its JSON (after the models it explains) */
#include "attn_seq2seq_explain.h"

#endif /* ATTN_SEQ2SEQ_H */
