/* error.c -- status strings, error messages and the logging hook. */
#include "attn.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *attn_status_str(attn_status s) {
    switch (s) {
    case ATTN_OK:
        return "ok";
    case ATTN_ERR_NOMEM:
        return "out of memory";
    case ATTN_ERR_IO:
        return "I/O error";
    case ATTN_ERR_PARSE:
        return "parse error";
    case ATTN_ERR_SHAPE:
        return "shape error";
    case ATTN_ERR_VALUE:
        return "value error";
    case ATTN_ERR_ARG:
        return "invalid argument";
    }
    return "unknown status";
}

attn_status attn_errorf(attn_error *err, attn_status s, const char *fmt, ...) {
    if (err) {
        err->status = s;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        attn_error_detail(err, ATTN_CODE_NONE, 0, NULL, NULL);
    }
    return s;
}

attn_status attn_error_detail(attn_error *err, attn_error_code code, int position,
                              const char *token, const char *closest) {
    if (!err) return ATTN_OK;
    err->code = code;
    err->position = position;
    snprintf(err->token, sizeof err->token, "%s", token ? token : "");
    snprintf(err->closest, sizeof err->closest, "%s", closest ? closest : "");
    return err->status;
}

void attn_error_append(attn_error *err, const char *fmt, ...) {
    if (!err) return;
    size_t used = strnlen(err->msg, sizeof err->msg);
    if (used + 3 >= sizeof err->msg) return;
    if (used > 0) {
        memcpy(err->msg + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + used, sizeof err->msg - used, fmt, ap);
    va_end(ap);
}

/* The logging hook: silent until a program installs one. */
static attn_log_fn log_fn = NULL;
static void *log_user = NULL;

void attn_set_log(attn_log_fn fn, void *user) {
    log_fn = fn;
    log_user = user;
}

void attn_log(attn_log_level level, const char *fmt, ...) {
    if (!log_fn) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_fn(level, msg, log_user);
}
