/* fuzz_sweep.c -- libFuzzer harness for the sweep grid and --set parser (attn_sweep_create:
 * `attn sweep --grid GRID --set SETTINGS`), for each classifier architecture. The input is GRID,
 * a newline, SETTINGS (no newline: all GRID). Checked: no crash, leak or undefined behaviour; a
 * failure gives a message and no sweep; a sweep has 1..ATTN_SWEEP_MAX_POINTS points, each with
 * a name, and every point's config (checked by attn_sweep_create) is given again and validates. */
#include "fuzz_common.h"

#include "attn_sweep.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_sweep(const attn_sweep *s) {
    const int n = attn_sweep_n_points(s);
    FUZZ_CHECK(n >= 1 && n <= ATTN_SWEEP_MAX_POINTS && s->n_axes >= 1);
    for (int k = 0; k < n && k < 64; k++) { /* the first and last points (a grid may be large) */
        const int point = k < 32 ? k : n - 1 - (k - 32);
        char name[512];
        attn_sweep_point_name(s, point, name, sizeof name);
        FUZZ_CHECK(name[0] != '\0');
        attn_model_config mc;
        attn_train_config tc;
        int train_size = 0;
        attn_error err;
        FUZZ_CHECK(attn_sweep_point_config(s, point, &mc, &tc, &train_size, &err) == ATTN_OK);
        attn_error verr;
        FUZZ_CHECK(attn_model_config_validate(&mc, &verr) == ATTN_OK);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char text[4097];
    memcpy(text, data, size);
    text[size] = '\0';
    if (strlen(text) != size) return 0; /* the command line holds no NUL */
    char *nl = strchr(text, '\n');
    const char *set = "";
    if (nl) {
        *nl = '\0';
        set = nl + 1;
    }
    const attn_arch archs[4] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_GRU,
                                ATTN_ARCH_TRANSFORMER};
    for (int a = 0; a < 4; a++) {
        attn_sweep *s = (attn_sweep *)&s;
        attn_error err;
        attn_status st = attn_sweep_create(archs[a], text, set, &s, &err);
        if (st != ATTN_OK) {
            FUZZ_CHECK(s == NULL && err.status == st && err.msg[0] != '\0');
            continue;
        }
        check_sweep(s);
        attn_sweep_free(s);
    }
    return 0;
}
