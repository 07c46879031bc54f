/* seq2seq.c -- the seq2seq factory: config defaults and validation, the parameter layout from
 * the architecture's spec table, PyTorch-style initialisation, tensor accessors, dispatch with
 * input validation (attn_seq2seq.h). */
#include "seq2seq_internal.h"
#include "seq2seq_transformer.h" /* s2s_impl: the causal-mask setting */

#include <math.h>
#include <stdlib.h>
#include <string.h>

attn_seq2seq_config attn_seq2seq_config_default(attn_s2s_arch arch) {
    attn_seq2seq_config c = {0};
    c.arch = arch;
    c.src_vocab = ATTN_VOCAB_SIZE;
    c.tgt_vocab = ATTN_TGT_VOCAB_SIZE;
    c.d_model = 32;
    c.n_heads = 2;
    c.ffn_dim = 64;
    c.enc_layers = 2;
    c.dec_layers = 2;
    c.max_src_len = ATTN_MAX_WORDS;
    c.max_tgt_len = 16;
    c.norm = ATTN_NORM_PRE;
    c.activation = ATTN_ACT_RELU;
    c.pos = ATTN_POS_LEARNED;
    if (arch == ATTN_S2S_GRU || arch == ATTN_S2S_ATTN) { /* docs/decoder.md: E 32, H 64 */
        c.hidden_size = 64;
        c.bidirectional = arch == ATTN_S2S_ATTN;
    }
    return c;
}

static const char *const ARCH_NAMES[] = {"seq2seq-transformer", "seq2seq-gru", "seq2seq-attn"};
#define N_ARCHS ((int)(sizeof ARCH_NAMES / sizeof ARCH_NAMES[0]))

void attn_seq2seq_config_set_task(attn_seq2seq_config *cfg, attn_task task) {
    const attn_seq2seq_config def = attn_seq2seq_config_default(cfg->arch);
    cfg->task = task;
    cfg->src_vocab = task == ATTN_TASK_COMPOSE ? ATTN_TGT_VOCAB_SIZE : def.src_vocab;
    cfg->max_src_len = task == ATTN_TASK_COMPOSE ? ATTN_COMPOSE_SRC : def.max_src_len;
    cfg->max_tgt_len = task == ATTN_TASK_COMPOSE ? ATTN_COMPOSE_MAX_TGT + 1 : def.max_tgt_len;
}

const char *attn_s2s_arch_name(attn_s2s_arch a) {
    return (unsigned)a < (unsigned)N_ARCHS ? ARCH_NAMES[a] : "unknown";
}

attn_status attn_s2s_arch_from_name(const char *name, attn_s2s_arch *out, attn_error *err) {
    for (int a = 0; name && a < N_ARCHS; a++)
        if (strcmp(name, ARCH_NAMES[a]) == 0) {
            *out = (attn_s2s_arch)a;
            return ATTN_OK;
        }
    return attn_errorf(err, ATTN_ERR_VALUE, "unknown seq2seq model \"%s\" (expected %s)",
                       name ? name : "(null)", "seq2seq-transformer, seq2seq-gru or seq2seq-attn");
}

/* The GRU models' fields (the Transformer's are not used). */
static attn_status rnn_config_validate(const attn_seq2seq_config *cfg, attn_error *err) {
    ATTN_REQUIRE_RANGE(src_vocab, 2, 1 << 20);
    ATTN_REQUIRE_RANGE(tgt_vocab, 3, 1 << 20);
    ATTN_REQUIRE_RANGE(d_model, 1, 1 << 14);
    ATTN_REQUIRE_RANGE(hidden_size, 1, 1 << 14);
    ATTN_REQUIRE_RANGE(bidirectional, 0, cfg->arch == ATTN_S2S_ATTN ? 1 : 0);
    ATTN_REQUIRE_RANGE(max_src_len, 1, 1 << 16);
    ATTN_REQUIRE_RANGE(max_tgt_len, 2, 1 << 16);
    return ATTN_OK;
}

attn_status attn_seq2seq_config_validate(const attn_seq2seq_config *cfg, attn_error *err) {
    if (cfg->arch == ATTN_S2S_GRU || cfg->arch == ATTN_S2S_ATTN)
        return rnn_config_validate(cfg, err);
    if (cfg->arch != ATTN_S2S_TRANSFORMER)
        return attn_errorf(err, ATTN_ERR_VALUE, "config: unknown seq2seq arch %d", (int)cfg->arch);
    ATTN_REQUIRE_RANGE(src_vocab, 2, 1 << 20);
    ATTN_REQUIRE_RANGE(tgt_vocab, 3, 1 << 20);
    ATTN_REQUIRE_RANGE(d_model, 1, 1 << 14);
    ATTN_REQUIRE_RANGE(n_heads, 1, cfg->d_model);
    if (cfg->d_model % cfg->n_heads != 0)
        return attn_errorf(err, ATTN_ERR_VALUE, "config: d_model %d is not divisible by n_heads %d",
                           cfg->d_model, cfg->n_heads);
    ATTN_REQUIRE_RANGE(ffn_dim, 1, 1 << 16);
    ATTN_REQUIRE_RANGE(enc_layers, 1, ATTN_TRANSFORMER_MAX_LAYERS);
    ATTN_REQUIRE_RANGE(dec_layers, 1, ATTN_TRANSFORMER_MAX_LAYERS);
    ATTN_REQUIRE_RANGE(max_src_len, 1, 1 << 16);
    ATTN_REQUIRE_RANGE(max_tgt_len, 2, 1 << 16);
    if ((unsigned)cfg->task > ATTN_TASK_COMPOSE)
        return attn_errorf(err, ATTN_ERR_VALUE, "config: unknown task %d", (int)cfg->task);
    if ((unsigned)cfg->norm > ATTN_NORM_POST)
        return attn_errorf(err, ATTN_ERR_VALUE, "config: unknown norm %d", (int)cfg->norm);
    if ((unsigned)cfg->activation > ATTN_ACT_GELU)
        return attn_errorf(err, ATTN_ERR_VALUE, "config: unknown activation %d",
                           (int)cfg->activation);
    if ((unsigned)cfg->pos > ATTN_POS_ALIBI)
        return attn_errorf(err, ATTN_ERR_VALUE, "config: unknown pos %d", (int)cfg->pos);
    if (cfg->pos == ATTN_POS_ROPE && (cfg->d_model / cfg->n_heads) % 2 != 0)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "config: pos rope needs an even head size, d_model %d / n_heads %d "
                           "= %d",
                           cfg->d_model, cfg->n_heads, cfg->d_model / cfg->n_heads);
    return ATTN_OK;
}

static const attn_s2s_vt *vt_for(attn_s2s_arch arch) {
    return arch == ATTN_S2S_TRANSFORMER ? &attn_s2s_transformer_vt
           : arch == ATTN_S2S_GRU       ? &attn_s2s_gru_vt
                                        : &attn_s2s_attn_vt;
}

size_t attn_seq2seq_config_n_params(const attn_seq2seq_config *cfg) {
    attn_error err;
    if (!cfg || attn_seq2seq_config_validate(cfg, &err) != ATTN_OK) return 0;
    attn_param_spec specs[ATTN_PARAM_MAX_SPECS];
    return attn_param_table_count(specs, vt_for(cfg->arch)->specs(cfg, specs));
}

ATTN_MODEL_FACTORY(attn_seq2seq, attn_seq2seq, attn_seq2seq_config, "a seq2seq model",
                   "a seq2seq replica")

/* The causal-mask setting lives in the Transformer's impl (the experiment's switch). */
attn_status attn_seq2seq_set_causal_mask(attn_seq2seq *m, bool masked, attn_error *err) {
    if (!m) return attn_errorf(err, ATTN_ERR_ARG, "set_causal_mask: no model");
    if (m->vt != &attn_s2s_transformer_vt)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "set_causal_mask: %s has no causal self-attention mask "
                           "(seq2seq-transformer only)",
                           m->vt->kind);
    ((s2s_impl *)m->impl)->unmasked = !masked;
    return ATTN_OK;
}

bool attn_seq2seq_causal_mask(const attn_seq2seq *m) {
    return m->vt != &attn_s2s_transformer_vt || !((const s2s_impl *)m->impl)->unmasked;
}

attn_status attn_seq2seq_replica(attn_seq2seq *m, attn_seq2seq **out, attn_error *err) {
    if (!m || !out)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_seq2seq_replica: NULL model or out");
    attn_status st = replica_of(m, out, err);
    if (st == ATTN_OK && !attn_seq2seq_causal_mask(m) &&
        (st = attn_seq2seq_set_causal_mask(*out, false, err)) != ATTN_OK) {
        attn_seq2seq_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- accessors ---------------------------------------------------------------------------- */

const attn_seq2seq_config *attn_seq2seq_config_of(const attn_seq2seq *m) {
    return &m->cfg;
}
ATTN_PARAM_ACCESSORS(attn_seq2seq, attn_seq2seq)

/* ---- forward, backward, generation -------------------------------------------------------- */

static attn_status check_ids(const int *ids, int n, int V, const char *what, int pair,
                             attn_error *err) {
    for (int t = 0; t < n; t++)
        if (ids[t] < 0 || ids[t] >= V)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "batch: pair %d %s token %d has id %d, expected "
                               "0..%d",
                               pair, what, t + 1, ids[t], V - 1);
    return ATTN_OK;
}

static attn_status batch_validate(const attn_seq2seq *m, const attn_s2s_batch *b, attn_error *err) {
    const attn_seq2seq_config *c = &m->cfg;
    if (!b || b->B < 1 || b->S < 1 || b->T < 1 || !b->src_ids || !b->src_lengths || !b->tgt_ids ||
        !b->tgt_lengths)
        return attn_errorf(err, ATTN_ERR_ARG, "batch: need B, S, T >= 1 and the four arrays");
    for (int i = 0; i < b->B; i++) {
        const int S = b->src_lengths[i], T = b->tgt_lengths[i];
        if (S < 1 || S > b->S || S > c->max_src_len)
            return attn_errorf(err, ATTN_ERR_SHAPE,
                               "batch: pair %d has a source of %d words, expected 1..%d", i, S,
                               b->S < c->max_src_len ? b->S : c->max_src_len);
        if (T < 1 || T > b->T || T > c->max_tgt_len)
            return attn_errorf(err, ATTN_ERR_SHAPE,
                               "batch: pair %d has a decoder input of %d tokens, expected 1..%d", i,
                               T, b->T < c->max_tgt_len ? b->T : c->max_tgt_len);
        attn_status st =
            check_ids(b->src_ids + (size_t)i * b->S, S, c->src_vocab, "source", i, err);
        if (st == ATTN_OK)
            st = check_ids(b->tgt_ids + (size_t)i * b->T, T, c->tgt_vocab, "target", i, err);
        if (st != ATTN_OK) return st;
    }
    return ATTN_OK;
}

attn_status attn_seq2seq_forward(attn_seq2seq *m, const attn_s2s_batch *b, float *logits,
                                 attn_error *err) {
    attn_status st = batch_validate(m, b, err);
    if (st != ATTN_OK) return st;
    if (!logits) return attn_errorf(err, ATTN_ERR_ARG, "attn_seq2seq_forward: NULL logits");
    return m->vt->forward(m, b, logits, err);
}

attn_status attn_seq2seq_backward(attn_seq2seq *m, const attn_s2s_batch *b, const float *d_logits,
                                  attn_error *err) {
    if (!d_logits) return attn_errorf(err, ATTN_ERR_ARG, "attn_seq2seq_backward: NULL d_logits");
    attn_status st = attn_seq2seq_grads_alloc(m, err);
    if (st != ATTN_OK) return st;
    m->vt->backward(m, b, d_logits);
    return ATTN_OK;
}

attn_status attn_seq2seq_grads_alloc(attn_seq2seq *m, attn_error *err) {
    bool fresh;
    attn_status st = attn_param_layout_grads(&m->layout, &fresh, err);
    if (st == ATTN_OK && fresh) m->vt->set_grads(m);
    return st;
}

void attn_seq2seq_zero_grad(attn_seq2seq *m) {
    attn_param_layout_zero_grads(&m->layout);
}

attn_status attn_seq2seq_check_decode(const attn_seq2seq *m, const int *src, int n_src, int max_out,
                                      const int *out, const int *n_out, attn_error *err) {
    const attn_seq2seq_config *c = &m->cfg;
    if (!src || !out || !n_out)
        return attn_errorf(err, ATTN_ERR_ARG, "generate: NULL src, out or n_out");
    if (n_src < 1 || n_src > c->max_src_len)
        return attn_errorf(err, ATTN_ERR_SHAPE,
                           "generate: a source of %d words, the model takes 1..%d", n_src,
                           c->max_src_len);
    if (max_out < 0 || max_out + 1 > c->max_tgt_len)
        return attn_errorf(err, ATTN_ERR_ARG, "generate: at most %d output words (max_tgt_len %d)",
                           c->max_tgt_len - 1, c->max_tgt_len);
    if (c->tgt_vocab <= ATTN_TGT_EOS)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "generate: the model's target vocabulary has %d tokens, no [BOS] (id "
                           "%d) and [EOS] (id %d)",
                           c->tgt_vocab, ATTN_TGT_BOS, ATTN_TGT_EOS);
    return check_ids(src, n_src, c->src_vocab, "source", 0, err);
}

/* The greedy chooser: the argmax of x[n] (the first of equal maxima; NaN wins, as
 * torch.argmax), with [EOS] left out of it while fewer than min_out steps were taken (ctx: a
 * greedy_floor, NULL for none). The skipped logit is as if -inf: PyTorch's twin sets it so. */
typedef struct greedy_floor {
    int min_out, steps;
} greedy_floor;

static int choose_argmax(void *ctx, const float *x, int n) {
    greedy_floor *f = ctx;
    const int skip = f && f->steps++ < f->min_out ? ATTN_TGT_EOS : -1; /* [EOS] is never 0 */
    int best = 0;
    for (int j = 1; j < n; j++)
        if (j != skip && !isnan(x[best]) && (x[j] > x[best] || isnan(x[j]))) best = j;
    return best;
}

static attn_status check_min_out(int min_out, int max_out, attn_error *err) {
    if (min_out < 0 || min_out > max_out)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "generate: at least %d output words asked for, expected 0..%d (the "
                           "most words asked for)",
                           min_out, max_out);
    return ATTN_OK;
}

attn_status attn_seq2seq_greedy(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                                int *out, int *n_out, float *step_logits, int *n_steps,
                                attn_error *err) {
    return attn_seq2seq_greedy_min(m, src, n_src, 0, max_out, cache, out, n_out, step_logits,
                                   n_steps, err);
}

attn_status attn_seq2seq_greedy_min(attn_seq2seq *m, const int *src, int n_src, int min_out,
                                    int max_out, bool cache, int *out, int *n_out,
                                    float *step_logits, int *n_steps, attn_error *err) {
    attn_status st = attn_seq2seq_check_decode(m, src, n_src, max_out, out, n_out, err);
    if (st == ATTN_OK) st = check_min_out(min_out, max_out, err);
    if (st != ATTN_OK) return st;
    greedy_floor floor = {min_out, 0};
    const attn_s2s_chooser argmax = {choose_argmax, &floor};
    return m->vt->decode(m, src, n_src, max_out, cache, &argmax, out, n_out, step_logits, n_steps,
                         err);
}

attn_status attn_seq2seq_greedy_batch(attn_seq2seq *m, int B, const int *const *src,
                                      const int *n_src, int min_out, int max_out, int *out,
                                      int *n_out, float *step_logits, int *n_steps,
                                      attn_error *err) {
    if (B < 1 || !src || !n_src || !out || !n_out)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "generate: a batch of %d sources (at least 1), or NULL src, n_src, "
                           "out or n_out",
                           B);
    attn_status st = check_min_out(min_out, max_out, err);
    for (int i = 0; st == ATTN_OK && i < B; i++) {
        st = attn_seq2seq_check_decode(m, src[i], n_src[i], max_out, out, n_out, err);
        if (st != ATTN_OK) attn_error_append(err, "source %d of the batch", i);
    }
    if (st != ATTN_OK) return st;
    greedy_floor *floor = malloc((size_t)B * sizeof *floor);
    attn_s2s_chooser *ch = malloc((size_t)B * sizeof *ch);
    if (!floor || !ch) {
        free(floor);
        free(ch);
        return attn_errorf(err, ATTN_ERR_NOMEM, "generate: out of memory for a batch of %d", B);
    }
    for (int i = 0; i < B; i++) {
        floor[i] = (greedy_floor){min_out, 0};
        ch[i] = (attn_s2s_chooser){choose_argmax, &floor[i]};
    }
    const size_t per = (size_t)(max_out + 1) * m->cfg.tgt_vocab;
    if (m->vt->decode_batch)
        st = m->vt->decode_batch(m, B, src, n_src, max_out, ch, out, n_out, step_logits, n_steps,
                                 err);
    else /* one source at a time: its decoder's step is one row anyway */
        for (int i = 0; st == ATTN_OK && i < B; i++)
            st = m->vt->decode(
                m, src[i], n_src[i], max_out, true, &ch[i], out + (size_t)i * max_out, &n_out[i],
                step_logits ? step_logits + i * per : NULL, n_steps ? &n_steps[i] : NULL, err);
    free(floor);
    free(ch);
    return st;
}

attn_status attn_seq2seq_decode_recompute(attn_seq2seq *m, const int *src, int n_src, int max_out,
                                          const attn_s2s_chooser *ch, int *out, int *n_out,
                                          float *step_logits, int *n_steps, attn_error *err) {
    const int Vt = m->cfg.tgt_vocab;
    int *prefix = malloc((size_t)(max_out + 1) * sizeof *prefix);
    float *logits = malloc((size_t)(max_out + 1) * Vt * sizeof *logits);
    attn_status st =
        prefix && logits ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "generate: out of memory");
    int n = 0, steps = 0;
    if (prefix) prefix[0] = ATTN_TGT_BOS;
    while (st == ATTN_OK && n < max_out) {
        const int T = n + 1;
        const attn_s2s_batch b = {1, n_src, T, src, &n_src, prefix, &T};
        st = m->vt->forward(m, &b, logits, err);
        if (st != ATTN_OK) break;
        const float *last = logits + (size_t)n * Vt;
        if (step_logits) memcpy(step_logits + (size_t)steps * Vt, last, (size_t)Vt * sizeof(float));
        steps++;
        const int next = ch->choose(ch->ctx, last, Vt);
        if (next == ATTN_TGT_EOS) break;
        out[n++] = next;
        prefix[n] = next;
    }
    *n_out = n;
    if (n_steps) *n_steps = steps;
    free(prefix);
    free(logits);
    return st;
}
