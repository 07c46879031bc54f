/* test_task_errors.c -- attn_task_errors: the error a pooled evaluation returns is the one of its
 * lowest-numbered failed task, whichever worker ran it and in whatever order the workers failed
 * (the same error for every thread count). */
#include "test_util.h"

#include "train_internal.h"

#include <string.h>

/* Tasks fail where task % every == at, each with its own message and a status of its own. */
typedef struct fail_ctx {
    attn_task_errors t;
    int every, at;
} fail_ctx;

static attn_status status_of(int task) {
    return task % 2 ? ATTN_ERR_VALUE : ATTN_ERR_ARG;
}

static void fail_task(void *vc, int task, int worker) {
    fail_ctx *c = vc;
    if (task % c->every != c->at) return;
    attn_error e;
    attn_status st = attn_errorf(&e, status_of(task), "task %d", task);
    attn_task_errors_fail(&c->t, worker, task, st, &e);
}

static void run(int threads, int n_tasks, int every, int at, int want) {
    attn_pool *pool = NULL;
    attn_error err = {0};
    ck_assert_int_eq(attn_pool_create(threads, &pool, &err), ATTN_OK);
    fail_ctx c = {.every = every, .at = at};
    ck_assert_int_eq(attn_task_errors_make(&c.t, attn_pool_threads(pool), "evaluate", &err),
                     ATTN_OK);
    attn_pool_run(pool, n_tasks, fail_task, &c);
    attn_error got = {0};
    attn_status st = attn_task_errors_status(&c.t, &got);
    if (want < 0) {
        ck_assert_int_eq(st, ATTN_OK);
    } else {
        char msg[32];
        snprintf(msg, sizeof msg, "task %d", want);
        ck_assert_int_eq(st, status_of(want));
        ck_assert_int_eq(got.status, status_of(want));
        ck_assert_str_eq(got.msg, msg);
    }
    attn_task_errors_free(&c.t);
    attn_pool_free(pool);
}

START_TEST(first_in_task_order) {
    for (int threads = 1; threads <= 4; threads++) {
        run(threads, 100, 7, 3, 3);    /* 3, 10, 17, ... fail: 3 */
        run(threads, 100, 50, 49, 49); /* 49 and 99: 49 */
        run(threads, 5, 7, 6, -1);     /* none of 0..4 */
        run(threads, 0, 1, 0, -1);     /* no tasks */
    }
}
END_TEST

START_TEST(lowest_whatever_the_order) {
    /* workers fail out of task order: a later task's error never replaces an earlier one's */
    attn_task_errors t;
    attn_error err = {0};
    ck_assert_int_eq(attn_task_errors_make(&t, 3, "evaluate", &err), ATTN_OK);
    const int worker[] = {1, 0, 1, 2, 0}, task[] = {10, 12, 4, 15, 5};
    for (int i = 0; i < 5; i++) {
        attn_error e;
        attn_status st = attn_errorf(&e, status_of(task[i]), "task %d", task[i]);
        attn_task_errors_fail(&t, worker[i], task[i], st, &e);
    }
    attn_error got = {0};
    ck_assert_int_eq(attn_task_errors_status(&t, &got), status_of(4));
    ck_assert_str_eq(got.msg, "task 4");
    ck_assert_int_eq(attn_task_errors_status(&t, NULL), status_of(4));
    attn_task_errors_free(&t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("task_errors");
    TCase *tc = tcase_create("task_errors");
    tcase_add_test(tc, first_in_task_order);
    tcase_add_test(tc, lowest_whatever_the_order);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
