/* test_threads.c -- threads change the speed, never the bytes (attn_threads.h): the pool runs
 * every task once; a training step's gradient is the documented sum of its micro-batches'
 * gradients ((g_0 + g_1) + ... in micro-batch order), recomputed here by hand with plain
 * forward/backward calls; training (every architecture), evaluation and integrated gradients
 * give the same bytes for 1, 2, 3 and 4 threads. */
#include "test_util.h"
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

static attn_pool *pool_of(int n) {
    attn_pool *p = NULL;
    attn_error err;
    if (n == 1) return NULL; /* no pool: the caller's thread */
    ck_assert_msg(attn_pool_create(n, &p, &err) == ATTN_OK, "%s", err.msg);
    return p;
}

typedef struct count_ctx {
    int calls[200];
    int bad_worker;
    int threads;
} count_ctx;

static void count_task(void *vc, int task, int worker) {
    count_ctx *c = vc;
    c->calls[task]++;
    if (worker < 0 || worker >= c->threads) c->bad_worker = 1;
}

START_TEST(test_pool_runs_each_task_once) {
    static const int sizes[] = {0, 1, 2, 3, 17, 200};
    for (int n = 1; n <= 4; n++) {
        attn_pool *p = pool_of(n);
        ck_assert_int_eq(attn_pool_threads(p), n);
        for (int rep = 0; rep < 3; rep++) /* the same pool, job after job */
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                count_ctx c = {.threads = n};
                attn_pool_run(p, sizes[s], count_task, &c);
                for (int i = 0; i < 200; i++)
                    ck_assert_msg(c.calls[i] == (i < sizes[s]),
                                  "%d threads, %d tasks: task %d ran %d times", n, sizes[s], i,
                                  c.calls[i]);
                ck_assert(!c.bad_worker);
            }
        attn_pool_free(p);
    }
    attn_error err;
    attn_pool *p = NULL;
    ck_assert_int_eq(attn_pool_create(0, &p, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_pool_create(ATTN_MAX_THREADS + 1, &p, &err), ATTN_ERR_ARG);
    ck_assert_ptr_null(p);
}
END_TEST

typedef struct many_ctx {
    int *calls;          /* [n] times each task ran (tasks of one run run concurrently) */
    int task0_elsewhere; /* task 0 ran on a worker other than the caller's thread */
    int bad_worker, threads;
} many_ctx;

static void many_task(void *vc, int task, int worker) {
    many_ctx *c = vc;
    __atomic_add_fetch(&c->calls[task], 1, __ATOMIC_RELAXED);
    if (task == 0 && worker != 0) __atomic_store_n(&c->task0_elsewhere, 1, __ATOMIC_RELAXED);
    if (worker < 0 || worker >= c->threads) __atomic_store_n(&c->bad_worker, 1, __ATOMIC_RELAXED);
}

/* Thousands of short runs back to back (the threads claim tasks without a lock, and a thread of
 * one run may still be looking for work when the next is published), and a run of more tasks
 * than one published run holds (65,535): every task once, in every run, and task 0 always on
 * the caller's thread (worker 0: a training step's micro-batch 0 keeps its core). */
START_TEST(test_pool_many_runs) {
    enum { BIG = 70000 };
    int *calls = calloc(BIG, sizeof *calls);
    ck_assert_ptr_nonnull(calls);
    for (int n = 2; n <= 4; n++) {
        attn_pool *p = pool_of(n);
        for (int rep = 0; rep < 20000; rep++) {
            const int tasks = 1 + rep % 5;
            many_ctx c = {calls, 0, 0, n};
            attn_pool_run(p, tasks, many_task, &c);
            for (int i = 0; i < tasks; i++) {
                ck_assert_msg(calls[i] == 1, "%d threads, run %d: task %d ran %d times", n, rep, i,
                              calls[i]);
                calls[i] = 0;
            }
            ck_assert_msg(!c.task0_elsewhere, "%d threads, run %d: task 0 not on the caller", n,
                          rep);
            ck_assert(!c.bad_worker);
        }
        many_ctx c = {calls, 0, 0, n};
        attn_pool_run(p, BIG, many_task, &c);
        for (int i = 0; i < BIG; i++) {
            ck_assert_msg(calls[i] == 1, "%d threads, %d tasks: task %d ran %d times", n, BIG, i,
                          calls[i]);
            calls[i] = 0;
        }
        ck_assert(!c.bad_worker);
        attn_pool_free(p);
    }
    free(calls);
}
END_TEST

/* A task that burns CPU for a while (the measuring pool times it). */
static void busy_task(void *vc, int task, int worker) {
    count_ctx *c = vc;
    c->calls[task]++;
    if (worker < 0 || worker >= c->threads) c->bad_worker = 1;
    volatile double x = 0.0;
    for (int i = 0; i < 200000 * (1 + task % 3); i++) x += 1e-9 * i;
}

/* The measuring pool runs every task once on the caller's thread, names workers of the size it
 * poses as, and its trace adds up: the serial share is the caller's time outside the runs, each
 * run's makespan lies between its longest task and its tasks' sum, and it is at least the sum
 * over the simulated workers. A real pool's trace counts the same tasks. */
START_TEST(test_pool_measuring) {
    for (int n = 1; n <= 4; n++) {
        attn_pool *p = NULL;
        attn_error err;
        ck_assert_msg(attn_pool_create_measuring(n, &p, &err) == ATTN_OK, "%s", err.msg);
        ck_assert_int_eq(attn_pool_threads(p), n);
        attn_pool_trace_start(p);
        count_ctx c = {.threads = n};
        attn_pool_run(p, 7, busy_task, &c);
        attn_pool_run(p, 5, busy_task, &c);
        volatile double x = 0.0; /* serial work between and after the runs */
        for (int i = 0; i < 400000; i++) x += 1e-9 * i;
        const attn_pool_trace t = attn_pool_trace_read(p);
        for (int i = 0; i < 7; i++) ck_assert_int_eq(c.calls[i], 1 + (i < 5));
        ck_assert(!c.bad_worker);
        ck_assert_int_eq(t.runs, 2);
        ck_assert_int_eq(t.tasks, 12);
        ck_assert(t.task_s > 0.0 && t.serial_s > 0.0);
        ck_assert(t.serial_s + t.task_s <= t.caller_s * 1.0001 + 1e-6);
        ck_assert(t.span_s <= t.task_s * 1.0001 && t.span_s >= t.task_s / n * 0.9999);
        if (n == 1) ck_assert(t.span_s >= t.task_s * 0.9999);
        attn_pool_free(p);

        attn_pool *real = pool_of(n);
        attn_pool_trace_start(real);
        count_ctx d = {.threads = n};
        attn_pool_run(real, 7, busy_task, &d);
        const attn_pool_trace u = attn_pool_trace_read(real);
        if (real) {
            ck_assert_int_eq(u.runs, 1);
            ck_assert_int_eq(u.tasks, 7);
            ck_assert(u.task_s > 0.0);
        }
        attn_pool_free(real);
    }
}
END_TEST

/* The step's finite flag (the check folded into the micro-batch sum): true for a clean step,
 * false when the last micro-batch's gradient holds NaNs (a NaN label in sentence 30), on 1
 * thread (one micro-batch per wave: the last add decides) and on 3 (one wave). */
START_TEST(test_step_finite_flag) {
    attn_dataset *d = tu_train_data(64, 11);
    for (int threads = 1; threads <= 3; threads += 2)
        for (int bad = -1; bad < 32; bad += 31) { /* none, sentence 30 */
            attn_set_num_threads(1);
            attn_model *m = tu_model_default(ATTN_ARCH_LSTM, 5);
            attn_batcher *bt = NULL;
            attn_error err;
            ck_assert(attn_batcher_create(d, 0, 64, 32, 1, &bt, &err) == ATTN_OK);
            attn_batch b;
            const float *labels = attn_batcher_fill(bt, 1, &b);
            float lab[32], logits[32], d_logits[32];
            memcpy(lab, labels, sizeof lab);
            if (bad >= 0) lab[bad] = NAN; /* d_logit NaN: that micro-batch's gradients too */
            attn_pool *p = pool_of(threads);
            attn_replicas reps = {0};
            bool finite = bad < 0;
            ck_assert(attn_train_forward_backward(m, &reps, p, &b, lab, logits, d_logits, &finite,
                                                  &err) == ATTN_OK);
            ck_assert_msg(finite == (bad < 0), "%d threads, NaN in sentence %d: finite %d", threads,
                          bad, finite);
            attn_replicas_free(&reps);
            attn_pool_free(p);
            attn_batcher_free(bt);
            attn_model_free(m);
        }
    attn_dataset_free(d);
}
END_TEST

/* One step's forward/backward of a batch of 32 on 3 threads against the rule done by hand:
 * micro-batches of ATTN_MICRO_BATCH consecutive sentences, each from zeroed gradients, d logits
 * with the whole batch's 1/32, summed in micro-batch order. */
START_TEST(test_micro_batch_rule) {
    attn_set_num_threads(1);
    attn_dataset *d = tu_train_data(64, 11);
    for (int arch = 0; arch < 4; arch++) {
        attn_model *m = tu_model_default((attn_arch)arch, 5);
        attn_model *ref = tu_model_default((attn_arch)arch, 5);
        attn_batcher *bt = NULL;
        attn_error err;
        ck_assert(attn_batcher_create(d, 0, 64, 32, 1, &bt, &err) == ATTN_OK);
        attn_batch b;
        const float *labels = attn_batcher_fill(bt, 1, &b);
        ck_assert_int_eq(b.B, 32);
        float logits[32], d_logits[32], want_logits[32], want_d[32] = {0};
        attn_pool *p = pool_of(3);
        attn_replicas reps = {0};
        ck_assert(attn_train_forward_backward(m, &reps, p, &b, labels, logits, d_logits, NULL,
                                              &err) == ATTN_OK);
        const size_t n = attn_model_n_params(ref);
        float *want = calloc(n, sizeof(float));
        ck_assert(want != NULL);
        const int mb = ATTN_MICRO_BATCH;
        ck_assert(32 % mb == 0 && 32 / mb >= 2); /* the test wants several whole micro-batches */
        for (int k = 0; k < 32 / mb; k++) {
            const attn_batch sub = {mb, b.T, b.ids + (size_t)mb * k * b.T, b.lengths + mb * k};
            attn_model_zero_grad(ref);
            ck_assert(attn_model_forward(ref, &sub, want_logits + mb * k, &err) == ATTN_OK);
            attn_bce_backward_rows(want_d + mb * k, 1.0f, want_logits + mb * k, labels + mb * k, mb,
                                   32);
            ck_assert(attn_model_backward(ref, &sub, want_d + mb * k, &err) == ATTN_OK);
            const float *g = attn_model_grads(ref);
            for (size_t i = 0; i < n; i++) want[i] = k == 0 ? g[i] : want[i] + g[i];
        }
        tu_assert_identical("logits", logits, want_logits, 32);
        tu_assert_identical("d_logits", d_logits, want_d, 32);
        ck_assert_msg(memcmp(attn_model_grads(m), want, n * sizeof(float)) == 0,
                      "%s: the step's gradient is not the micro-batch sum", attn_arch_name(arch));
        free(want);
        attn_replicas_free(&reps);
        attn_pool_free(p);
        attn_batcher_free(bt);
        attn_model_free(m);
        attn_model_free(ref);
    }
    attn_dataset_free(d);
}
END_TEST

/* Parameters after 2 epochs (batch 32; the last batch of each epoch, 20 sentences, ends in a
 * short micro-batch), held-out model selection on. */
static float *train_with(attn_arch arch, const attn_dataset *d, int threads, int *best_epoch) {
    attn_model *m = tu_model_default(arch, 3);
    attn_train_config cfg = attn_train_config_default();
    cfg.epochs = 2;
    cfg.holdout = 37;
    cfg.eval_batch = 16;
    attn_trainer *t = tu_trainer_new(m, d, &cfg);
    attn_pool *p = pool_of(threads);
    attn_error err;
    ck_assert(attn_trainer_set_pool(t, p, &err) == ATTN_OK);
    ck_assert_msg(attn_trainer_run(t, NULL, &err) == ATTN_OK, "%s", err.msg);
    *best_epoch = attn_trainer_best_epoch(t, NULL);
    const size_t n = attn_model_n_params(m);
    float *out = malloc(n * sizeof(float));
    ck_assert(out != NULL);
    memcpy(out, attn_model_params(m), n * sizeof(float));
    attn_trainer_free(t);
    attn_pool_free(p);
    attn_model_free(m);
    return out;
}

START_TEST(test_training_same_for_every_thread_count) {
    attn_set_num_threads(1);
    attn_dataset *d = tu_train_data(37 + 3 * 32 + 20, 4);
    for (int arch = 0; arch < 4; arch++) {
        attn_model *probe = tu_model_default((attn_arch)arch, 3);
        const size_t n = attn_model_n_params(probe);
        int best1, best;
        float *one = train_with((attn_arch)arch, d, 1, &best1);
        ck_assert_msg(memcmp(one, attn_model_params(probe), n * sizeof(float)) != 0,
                      "training changed nothing");
        for (int threads = 2; threads <= 4; threads++) {
            float *p = train_with((attn_arch)arch, d, threads, &best);
            ck_assert_msg(memcmp(p, one, n * sizeof(float)) == 0,
                          "%s: weights after %d threads differ from 1 thread",
                          attn_arch_name((attn_arch)arch), threads);
            ck_assert_int_eq(best, best1);
            free(p);
        }
        printf("%s: weights after 2 epochs identical for 1, 2, 3, 4 threads\n",
               attn_arch_name((attn_arch)arch));
        free(one);
        attn_model_free(probe);
    }
    attn_dataset_free(d);
}
END_TEST

START_TEST(test_evaluate_same_for_every_thread_count) {
    attn_set_num_threads(1);
    attn_dataset *d = tu_train_data(203, 8);
    static const int batches[] = {1, 7, 256};
    for (int arch = 0; arch < 4; arch++) {
        attn_model *m = tu_model_default((attn_arch)arch, 9);
        for (int i = 0; i < 3; i++) {
            double want, got;
            attn_error err;
            ck_assert(attn_evaluate(m, d, 0, d->n, batches[i], &want, &err) == ATTN_OK);
            for (int threads = 2; threads <= 4; threads++) {
                attn_pool *p = pool_of(threads);
                ck_assert(attn_evaluate_pool(m, d, 0, d->n, batches[i], p, &got, &err) == ATTN_OK);
                ck_assert_msg(got == want, "batch %d, %d threads: %.9f, 1 thread %.9f", batches[i],
                              threads, got, want);
                attn_pool_free(p);
            }
        }
        attn_model_free(m);
    }
    attn_dataset_free(d);
}
END_TEST

/* Equal bytes, or both absent. */
static void assert_same_bytes(const char *what, const void *a, const void *b, size_t bytes) {
    ck_assert_msg((a == NULL) == (b == NULL), "%s: present in one explanation only", what);
    ck_assert_msg(!a || memcmp(a, b, bytes) == 0, "%s differ", what);
}

static void assert_same_explanation(const attn_explanation *a, const attn_explanation *b, int n) {
    ck_assert(memcmp(&a->logit, &b->logit, sizeof a->logit) == 0);
    ck_assert(memcmp(&a->probability, &b->probability, sizeof a->probability) == 0);
    assert_same_bytes("grad_norm", a->grad_norm, b->grad_norm, (size_t)n * sizeof(float));
    assert_same_bytes("grad_x_input", a->grad_x_input, b->grad_x_input, (size_t)n * sizeof(float));
    assert_same_bytes("integrated_gradients", a->integrated_gradients, b->integrated_gradients,
                      (size_t)n * sizeof(float));
    if (a->integrated_gradients)
        ck_assert(memcmp(&a->ig_baseline_logit, &b->ig_baseline_logit, sizeof(float)) == 0);
    ck_assert_int_eq(a->n_layers, b->n_layers);
    ck_assert_int_eq(a->n_heads, b->n_heads);
    ck_assert_int_eq(a->S, b->S);
    assert_same_bytes("attention", a->attention, b->attention,
                      (size_t)a->n_layers * a->n_heads * a->S * a->S * sizeof(float));
    assert_same_bytes("prefix_logit", a->prefix_logit, b->prefix_logit, (size_t)n * sizeof(float));
    assert_same_bytes("prefix_probability", a->prefix_probability, b->prefix_probability,
                      (size_t)n * sizeof(double));
}

START_TEST(test_explain_same_for_every_thread_count) {
    attn_set_num_threads(1);
    const int ids[] = {5, 9, 14, 3, 22, 7, 30, 11, 4};
    const int n = (int)(sizeof ids / sizeof ids[0]);
    static const int steps[] = {64, 40, 5}; /* 40: a last chunk of 8; 5: one short chunk */
    for (int arch = 0; arch < 4; arch++) {
        attn_model *m = tu_model_default((attn_arch)arch, 2);
        for (int s = 0; s < 3; s++) {
            const attn_explain_opts o = {.ig_steps = steps[s]};
            attn_explanation *one = NULL, *e = NULL;
            attn_error err;
            ck_assert_msg(attn_explain(m, ids, n, &o, &one, &err) == ATTN_OK, "%s", err.msg);
            for (int threads = 2; threads <= 4; threads++) {
                attn_pool *p = pool_of(threads);
                ck_assert(attn_explain_pool(m, ids, n, &o, p, &e, &err) == ATTN_OK);
                assert_same_explanation(e, one, n);
                attn_explanation_free(e);
                attn_pool_free(p);
            }
            attn_explanation_free(one);
        }
        attn_model_free(m);
    }
}
END_TEST

/* An explainer reused over sentences of different lengths, one after the other (its replicas
 * keep buffers sized by earlier sentences), with and without integrated gradients, on 1, 2 and 3
 * threads and on a measuring pool: each explanation equals attn_explain's. */
START_TEST(test_explainer_reused) {
    attn_set_num_threads(1);
    const int ids[] = {5, 9, 14, 3, 22, 7, 30, 11, 4, 8, 12, 6};
    static const int lengths[] = {12, 3, 9, 1, 12};
    static const int steps[] = {64, ATTN_EXPLAIN_NO_IG, 17, 64, 33};
    for (int arch = 0; arch < 4; arch += 2) { /* rnn and transformer */
        attn_model *m = tu_model_default((attn_arch)arch, 4);
        for (int threads = 1; threads <= 4; threads++) {
            attn_error err;
            attn_pool *p = NULL;
            if (threads == 4)
                ck_assert(attn_pool_create_measuring(2, &p, &err) == ATTN_OK);
            else
                p = pool_of(threads);
            attn_explainer *x = NULL;
            ck_assert(attn_explainer_create(m, p, &x, &err) == ATTN_OK);
            for (int i = 0; i < 5; i++) {
                const attn_explain_opts o = {.ig_steps = steps[i]};
                attn_explanation *one = NULL, *e = NULL;
                ck_assert(attn_explain(m, ids, lengths[i], &o, &one, &err) == ATTN_OK);
                ck_assert_msg(attn_explainer_run(x, ids, lengths[i], &o, &e, &err) == ATTN_OK, "%s",
                              err.msg);
                assert_same_explanation(e, one, lengths[i]);
                attn_explanation_free(e);
                attn_explanation_free(one);
            }
            attn_explainer_free(x);
            attn_pool_free(p);
        }
        attn_model_free(m);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_pool_runs_each_task_once);
    tcase_add_test(tc, test_pool_many_runs);
    tcase_add_test(tc, test_pool_measuring);
    tcase_add_test(tc, test_micro_batch_rule);
    tcase_add_test(tc, test_step_finite_flag);
    tcase_add_test(tc, test_training_same_for_every_thread_count);
    tcase_add_test(tc, test_evaluate_same_for_every_thread_count);
    tcase_add_test(tc, test_explain_same_for_every_thread_count);
    tcase_add_test(tc, test_explainer_reused);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
