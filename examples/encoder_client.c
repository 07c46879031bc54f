/* encoder_client.c -- a small program that embeds libattn (include/attn.h): it loads committed
 * weights, classifies a sentence, then runs the model's encoder layers through the embeddable
 * API (attn_encoder.h) on that sentence's input vectors followed by padding positions that a
 * key-padding mask hides, and prints everything as JSON for a check against PyTorch
 * (examples/encoder_check.py, the CTest examples/encoder_torch).
 *
 *     build/examples/encoder_client weights/transformer-seed1.json "the food was not good" 3
 *
 * Output: {"sentence", "logit", "probability", "T", "key_padding": [0/1 x T], "x": [[D] x T],
 * "layers": [{"output": [[D] x T], "attention": [[[T] x T] x NH]} x L], "output": [[D] x T]},
 * floats as %.9g (they read back to the same float). Exit 1 with the library's message on an
 * error, 2 on a usage error. */
#include "attn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "key": [[cols] x rows], or only the array when key is NULL. */
static void print_rows(const char *key, const float *a, int rows, int cols) {
    if (key) printf("\"%s\": ", key);
    printf("[");
    for (int r = 0; r < rows; r++) {
        printf("%s[", r ? ", " : "");
        for (int c = 0; c < cols; c++) printf("%s%.9g", c ? ", " : "", (double)a[r * cols + c]);
        printf("]");
    }
    printf("]");
}

/* The encoder's run on x [T, D] as JSON (after the sentence's fields). */
static void print_run(const attn_encoder *enc, const float *x, const unsigned char *pad, int T) {
    const int D = attn_encoder_width(enc), NH = attn_encoder_n_heads(enc);
    printf(", \"T\": %d, \"key_padding\": [", T);
    for (int t = 0; t < T; t++) printf("%s%d", t ? ", " : "", pad[t]);
    printf("], ");
    print_rows("x", x, T, D);
    printf(", \"layers\": [");
    for (int l = 0; l < attn_encoder_n_layers(enc); l++) {
        printf("%s{", l ? ", " : "");
        print_rows("output", attn_encoder_layer_output(enc, l), T, D);
        printf(", \"attention\": [");
        for (int h = 0; h < NH; h++) {
            printf("%s", h ? ", " : "");
            print_rows(NULL, attn_encoder_attention(enc, l) + (size_t)h * T * T, T, T);
        }
        printf("]}");
    }
    printf("], ");
    print_rows("output", attn_encoder_output(enc), T, D);
}

int main(int argc, char **argv) {
    if (argc != 4 || atoi(argv[3]) < 0) {
        fprintf(stderr, "usage: %s WEIGHTS.json SENTENCE N_PADDING\n", argv[0]);
        return 2;
    }
    const int n_pad = atoi(argv[3]);
    attn_error err;
    attn_model *m = NULL;
    attn_encoder *enc = NULL;
    float *x = NULL;
    unsigned char *pad = NULL;
    int ids[ATTN_MAX_WORDS], n = 0, rows = 0, D = 0;
    float logit = 0.0f;
    const float *x0 = NULL;
    attn_status st = attn_weights_load_json(argv[1], &m, &err);
    if (st == ATTN_OK) st = attn_tokenize(argv[2], ids, ATTN_MAX_WORDS, &n, &err);
    const attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
    if (st == ATTN_OK) st = attn_model_forward(m, &b, &logit, &err);
    /* the classifier's own first-layer input: [CLS] and the words, embedding + positions */
    if (st == ATTN_OK) st = attn_model_input(m, &x0, NULL, &rows, &D, &err);
    const int T = rows + n_pad;
    if (st == ATTN_OK) st = attn_encoder_create(m, T, &enc, &err);
    if (st == ATTN_OK && (!(x = calloc((size_t)T * D, sizeof *x)) || !(pad = calloc(T, 1))))
        st = attn_errorf(&err, ATTN_ERR_NOMEM, "out of memory");
    if (st == ATTN_OK) {
        memcpy(x, x0, (size_t)rows * D * sizeof *x);
        for (int t = rows; t < T; t++) { /* padding rows: some vector the mask must hide */
            pad[t] = 1;
            for (int d = 0; d < D; d++) x[(size_t)t * D + d] = 0.25f * (float)((t + d) % 7 - 3);
        }
        st = attn_encoder_run(enc, x, pad, T, &err);
    }
    if (st == ATTN_OK) {
        printf("{\"sentence\": ");
        attn_json_write_string(stdout, argv[2]);
        printf(", \"ids\": [");
        for (int i = 0; i < n; i++) printf("%s%d", i ? ", " : "", ids[i]);
        printf("], \"logit\": %.9g, \"probability\": %.9g", (double)logit,
               1.0 / (1.0 + exp(-(double)logit)));
        print_run(enc, x, pad, T);
        printf("}\n");
    } else {
        fprintf(stderr, "encoder_client: %s\n", err.msg);
    }
    free(x);
    free(pad);
    attn_encoder_free(enc);
    attn_model_free(m);
    return st == ATTN_OK ? 0 : st == ATTN_ERR_ARG ? 2 : 1;
}
