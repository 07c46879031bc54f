/* plot_files.h -- the gnuplot driver's temporary files and its run of gnuplot (plot_files.c),
 * for the charts of plot.c. */
#ifndef ATTN_PLOT_FILES_H
#define ATTN_PLOT_FILES_H

#include "attn_plot.h"

#include <stdio.h>

/* All beside the destination, named PATH.<stem>.tmpXXXXXX: a run killed half-way leaves
 * names that `attn figures` recognises and removes (nothing in TMPDIR). */
typedef struct plot_files {
    char *data, *script, *log;
    char *out_tmp;
    FILE *data_f, *script_f;
} plot_files;

/* The four temporary files beside path, data and script open for writing. */
attn_status plot_files_open(plot_files *f, const char *path, attn_error *err);
/* When st is ATTN_OK, gnuplot runs the script and its checked chart replaces path; then every
 * temporary file is removed. Returns st or the run's status. */
attn_status plot_finish(plot_files *f, const char *path, attn_status st, attn_error *err);
bool plot_ends_with(const char *s, const char *suffix);

#endif
