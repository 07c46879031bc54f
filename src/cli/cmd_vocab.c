/* cmd_vocab.c -- `attn vocab`: the vocabulary table, as text or JSON. */
#include "cli.h"

#include <stdio.h>

int cmd_vocab(int argc, char **argv) {
    bool json = false;
    cli_opt opts[] = {
        {"--json", NULL, CLI_OPT_FLAG, &json,
         .help = "machine-readable: {\"vocab_size\": 91, \"tokens\": [{\"id\", \"word\",\n"
                 "\"category\"}, ...]}"},
    };
    cli_spec spec = {
        "vocab",
        "[--json]",
        "Prints the 91-token vocabulary: id, word and category ([PAD] = 0, [CLS] = 1,\n"
        "the 89 words = 2..90).",
        NULL,
        NULL,
        opts,
        1};
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    int V = attn_vocab_size();
    if (json) {
        /* words are lower-case letters and [PAD]/[CLS]: nothing to escape */
        printf("{\"vocab_size\": %d, \"tokens\": [\n", V);
        for (int id = 0; id < V; id++)
            printf("  {\"id\": %d, \"word\": \"%s\", \"category\": \"%s\"}%s\n", id,
                   attn_vocab_word(id), attn_vocab_category(id), id + 1 < V ? "," : "");
        printf("]}\n");
    } else {
        printf("%-4s %-12s %s\n", "id", "word", "category");
        for (int id = 0; id < V; id++)
            printf("%-4d %-12s %s\n", id, attn_vocab_word(id), attn_vocab_category(id));
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "attn vocab: error writing to stdout\n");
        return CLI_ERROR;
    }
    return CLI_OK;
}
