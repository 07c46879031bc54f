/* cmd_train.c -- placeholder until its issue lands; replaced by the real subcommands. */
#include "cli.h"
#include <stdio.h>
int cmd_train(int argc, char **argv) { (void)argc; fprintf(stderr, "attn %s: not built yet\n", argv[0]); return CLI_ERROR; }
int cmd_reproduce(int argc, char **argv) { (void)argc; fprintf(stderr, "attn %s: not built yet\n", argv[0]); return CLI_ERROR; }
