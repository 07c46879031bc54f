/* cmd_vocab.c -- `attn vocab`: the vocabulary table, as text or JSON: the built-in one, or
 * with --weights the vocabulary a weights file carries (its own "vocab", else the built-in). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* The built-in vocabulary has grammatical categories; another one its tokens' kinds. */
static const char *category(const attn_vocab *v, int id) {
    return attn_vocab_is_builtin(v) ? attn_vocab_category(id) : attn_vocab_kind(v, id);
}

static void print_vocab(const attn_vocab *v, bool json) {
    int V = attn_vocab_count(v);
    if (json) {
        attn_json_writer w;
        attn_json_writer_init(&w, stdout);
        attn_json_begin_object(&w);
        attn_json_field_int(&w, "vocab_size", V);
        if (!attn_vocab_is_builtin(v)) attn_json_field_string(&w, "source", "file");
        attn_json_key(&w, "words");
        attn_json_begin_array_lines(&w, "  ");
        for (int id = 0; id < V; id++) {
            attn_json_begin_object(&w);
            attn_json_field_int(&w, "id", id);
            attn_json_field_string(&w, "word", attn_vocab_token(v, id));
            attn_json_field_string(&w, "category", category(v, id));
            attn_json_end_object(&w);
        }
        attn_json_end_array(&w);
        attn_json_end_object(&w);
        attn_json_writer_finish(&w, NULL); /* stdout's errors are reported by cmd_vocab */
        putchar('\n');
    } else {
        printf("%-4s %-12s %s\n", "id", "word", "category");
        for (int id = 0; id < V; id++) {
            printf("%-4d ", id);
            cli_put_escaped(stdout,
                            attn_vocab_token(v, id)); /* no control bytes: belt and braces */
            int len = (int)strlen(attn_vocab_token(v, id));
            printf("%*s %s\n", len < 12 ? 12 - len : 0, "", category(v, id));
        }
    }
}

int cmd_vocab(int argc, char **argv) {
    bool json = false;
    const char *weights = NULL;
    cli_opt opts[] = {
        {"--json", NULL, CLI_OPT_FLAG, &json,
         .help = "machine-readable: {\"vocab_size\": 91, \"words\": [{\"id\", \"word\",\n"
                 "\"category\"}, ...]}"},
        {"--weights", "FILE", CLI_OPT_STR, &weights,
         .help = "the vocabulary of this weights file: its own \"vocab\" (categories are then\n"
                 "the kinds special, word, ids-only; json adds \"source\": \"file\"), else the\n"
                 "built-in one"},
    };
    cli_spec spec = {
        "vocab",
        "[--json] [--weights FILE]",
        "Prints the 91-token vocabulary: id, word and category ([PAD] = 0, [CLS] = 1,\n"
        "the 89 words = 2..90), or with --weights the vocabulary the model reads words with.",
        NULL,
        "Kinds of a file's own vocabulary: special tokens ([...] or <...>) are never produced\n"
        "by the tokenizer; ids-only tokens (an upper-case letter, or a character the tokenizer\n"
        "removes: .,!?;: quotes brackets) are reached by id only (attn predict --ids); the\n"
        "rest are words.",
        opts,
        2};
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    attn_model *m = NULL;
    const attn_vocab *v = attn_vocab_builtin();
    if (weights && (rc = cli_load_weights("vocab", weights, &m, &v)) >= 0) return rc;
    attn_model_free(m);
    print_vocab(v, json);
    attn_vocab_free(v);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "attn vocab: error writing to stdout\n");
        return CLI_ERROR;
    }
    return CLI_OK;
}
