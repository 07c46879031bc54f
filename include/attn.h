/* attn.h -- the public API of libattn.
 *
 * attn trains and runs the three models of "Attention from Scratch" (an Elman RNN, an LSTM and
 * a two-layer pre-norm Transformer encoder with a [CLS] token) and a GRU on a synthetic
 * course-review sentiment task. Every matrix product goes through OpenBLAS cblas_sgemm.
 *
 * This header includes one header per concern, bottom up as the rooms of src/ are layered
 * (docs/architecture.md); include it, or only the ones you use:
 *   attn_util.h     statuses, errors, the log hook, the PRNG               (src/util/)
 *   attn_kernels.h  the ops as forward/backward pairs, CPU dispatch         (src/kernels/)
 *   attn_data.h     vocabularies, the tokenizer, the task's sets, TSV       (src/data/)
 *   attn_model.h    the four models; dimension letters; batch-1 accessors   (src/models/)
 *   attn_train.h    Adam, the trainer, evaluation, the training state       (src/train/)
 *   attn_explain.h  attention maps, prefix probabilities, saliency          (src/explain/)
 *   attn_io.h       weights, checkpoints, reports and all JSON text         (src/io/)
 *   attn_lab.h      lessons, sweeps, observations (+ attn_experiments.h: the write-up's claims
 *                   as experiments; attn_plot.h: charts through gnuplot)    (src/lab/)
 * and beside them: attn_kernelset.h (the pinned OpenBLAS kernels), attn_threads.h (the thread
 * pool and the rule that makes bytes independent of the thread count), attn_own_data.h (your
 * own data and words), attn_attend.h (the §2 calculator), attn_sweep.h (grids of runs),
 * attn_encoder.h (a Transformer's encoder layers on your vectors, with a key-padding mask).
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

#include "attn_util.h"
#include "attn_kernelset.h"
#include "attn_kernels.h"
#include "attn_data.h"
#include "attn_model.h"
#include "attn_train.h"
#include "attn_explain.h"
#include "attn_io.h"
#include "attn_lab.h"
#include "attn_experiments.h"
#include "attn_plot.h"
#include "attn_threads.h"
#include "attn_own_data.h"
#include "attn_attend.h"
#include "attn_sweep.h"
#include "attn_encoder.h"

#endif /* ATTN_H */
