/* cmd_convert.c -- `attn convert IN OUT`: weights between JSON and safetensors, either family. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TO_AUTO, TO_SAFETENSORS, TO_JSON, TO_JSON_B64 };

static const char about[] =
    "Converts a weights file (a classifier's attn-weights-v1: rnn, lstm, gru, transformer;\n"
    "or a seq2seq model's attn-seq2seq-weights-v1: seq2seq-gru, seq2seq-attn,\n"
    "seq2seq-transformer) between JSON and safetensors. The input's format and family are\n"
    "recognised by its content, not its name; it is fully validated first. The values are\n"
    "copied bit for bit: JSON -> safetensors -> JSON gives the same JSON bytes, and converting\n"
    "the same file twice gives the same bytes. OUT is written atomically (a temporary file,\n"
    "fsync, rename).";
static const char notes[] = "--to auto writes safetensors from JSON and JSON (\"data\" numbers) "
                            "from safetensors.\n"
                            "Format: docs/weights-format.md.\n";

/* to: TO_SAFETENSORS, TO_JSON or TO_JSON_B64. */
static int convert_classifier(const char *in, const char *out, int to) {
    attn_model *m = NULL;
    attn_vocab *vocab = NULL;
    attn_error err;
    if (attn_weights_load_json_vocab(in, &m, &vocab, &err) != ATTN_OK)
        return cli_fail("convert", &err);
    attn_status st = to == TO_SAFETENSORS
                         ? attn_weights_save_safetensors(m, vocab, out, &err)
                         : attn_weights_save_json_vocab(
                               m, vocab, false,
                               to == TO_JSON_B64 ? ATTN_WEIGHTS_B64 : ATTN_WEIGHTS_TEXT, out, &err);
    attn_vocab_free(vocab);
    attn_model_free(m);
    return st == ATTN_OK ? CLI_OK : cli_fail("convert", &err);
}

static int convert_seq2seq(const char *in, const char *out, int to) {
    attn_seq2seq *m = NULL;
    attn_error err;
    if (attn_seq2seq_load_json(in, &m, &err) != ATTN_OK) return cli_fail("convert", &err);
    attn_status st = to == TO_SAFETENSORS
                         ? attn_seq2seq_save_safetensors(m, out, &err)
                         : attn_seq2seq_save_json(m, false, to == TO_JSON_B64, out, &err);
    attn_seq2seq_free(m);
    return st == ATTN_OK ? CLI_OK : cli_fail("convert", &err);
}

static int convert(const char *in, const char *out, int to) {
    if (to == TO_AUTO) to = attn_weights_is_safetensors(in) ? TO_JSON : TO_SAFETENSORS;
    const size_t len = strlen(out), ext = strlen(".safetensors");
    if (to != TO_SAFETENSORS && len > ext && strcmp(out + len - ext, ".safetensors") == 0)
        return cli_usage_error("convert", "OUT %s ends in .safetensors but --to is JSON", out);
    if (cli_check_dest("convert", "OUT", out) != CLI_OK) return CLI_ERROR;
    int rc =
        cli_is_seq2seq_weights(in) ? convert_seq2seq(in, out, to) : convert_classifier(in, out, to);
    if (rc == CLI_OK)
        fprintf(stderr, "attn convert: wrote %s (%s)\n", out,
                to == TO_SAFETENSORS ? "safetensors"
                : to == TO_JSON      ? "JSON"
                                     : "JSON, data_b64");
    return rc;
}

int cmd_convert(int argc, char **argv) {
    int to = TO_AUTO;
    cli_opt opts[] = {
        {"--to", "F", CLI_OPT_CHOICE, &to, .choices = "auto|safetensors|json|json-b64",
         .help = "the output format (json-b64: JSON with \"data_b64\" tensors)"},
    };
    cli_spec spec = CLI_SPEC("convert", "IN OUT [--to F]", about, "IN OUT", notes, opts);
    char **pos = NULL;
    int n = 0, rc = cli_parse_operands(&spec, argc, argv, &pos, &n);
    if (rc < 0 && n != 2) rc = cli_usage_error("convert", "expected two files, IN and OUT");
    if (rc >= 0) {
        free(pos);
        return rc;
    }
    const char *in = pos[0], *out = pos[1];
    rc = convert(in, out, to);
    free(pos);
    return rc;
}
