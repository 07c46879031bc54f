/* cmd_data.c -- placeholder until its issue lands; replaced by the real subcommands. */
#include "cli.h"
#include <stdio.h>
int cmd_data(int argc, char **argv) { (void)argc; fprintf(stderr, "attn %s: not built yet\n", argv[0]); return CLI_ERROR; }
int cmd_vocab(int argc, char **argv) { (void)argc; fprintf(stderr, "attn %s: not built yet\n", argv[0]); return CLI_ERROR; }
