/* attn_train.h -- training (src/train/): Adam exactly as torch.optim.Adam, the trainer (batching,
 * length buckets, mean BCE, model selection on a held-out slice), evaluation, and the training
 * state a checkpoint holds (written and read by attn_io.h). The loss op itself is in
 * attn_kernels.h (attn_bce_forward, attn_bce_backward).
 *
 *     attn_train_config tc = attn_train_config_default();
 *     attn_trainer *t = NULL;
 *     if (attn_trainer_create_heldout(m, train_set, heldout_set, &tc, &t, &err) == ATTN_OK)
 *         attn_trainer_run(t, NULL, &err);             // m now holds the best epoch's weights
 *     attn_trainer_free(t);
 */
#ifndef ATTN_TRAIN_H
#define ATTN_TRAIN_H

#include "attn_data.h"
#include "attn_model.h"
#include "attn_util.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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
 * starts with `source` (the file st came from); other data than the checkpoint's has the code
 * ATTN_CODE_OTHER_DATA. */
attn_status attn_trainer_set_state(attn_trainer *t, const attn_train_state *st, const char *source,
                                   attn_error *err);

/* ---- honest accuracy (src/train/verdict.c) ---------------------------------------------- *
 * An accuracy on a small test set says little by itself: 21 of 40 is 52.5 %, and its 95 %
 * interval runs from 37.5 % to 67.0 %. The verdict puts it beside the majority-class baseline
 * (what always answering the commoner label scores) and says whether the interval rules the
 * baseline out. */
typedef struct attn_accuracy_verdict {
    double accuracy; /* correct / n */
    double lo, hi;   /* Wilson score 95 % interval on the accuracy, in [0, 1] */
    double baseline; /* majority-class share: max(n_positive, n - n_positive) / n */
    bool chance;     /* lo <= baseline: not distinguishable from always answering one label */
} attn_accuracy_verdict;
/* The verdict of `correct` right answers on n sentences of which n_positive are positive. Fails
 * (ATTN_ERR_VALUE) unless 0 <= correct, n_positive <= n and n > 0. A pure function. */
attn_status attn_accuracy_verdict_of(int correct, int n, int n_positive, attn_accuracy_verdict *out,
                                     attn_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_TRAIN_H */
