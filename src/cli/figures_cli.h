/* figures_cli.h -- what the files of `attn figures` share: the run's state, the chart helper
 * (PNG, SVG and a line in index.md) and the sections drawn outside cmd_figures.c (the table:
 * figures_table.c; s7: figures_observations.c). */
#ifndef ATTN_FIGURES_CLI_H
#define ATTN_FIGURES_CLI_H

#include "attn_lab.h"
#include "attn_plot.h"
#include "cli.h"

/* the section sign, for the Markdown headings */
#define SECT  "\xc2\xa7"
#define OBS_N 300 /* sentences per test set for the observations (--quick: 30) */

typedef struct figs {
    const char *wdir, *out;
    const char *models; /* --models LIST, NULL: the three and the GRU where its weights are */
    bool gru;           /* the GRU is one of them: its probability curves beside the RNN's */
    int n_obs;          /* sentences per test set for the observations */
    int n_sal;          /* sentences per s1 curve */
    FILE *index;        /* index.md, being written (a temporary name) */
    /* --decoder-weights (NULL: wdir), --quick, --decoder-only */
    const char *s2s_wdir;
    bool quick, decoder_only;
    attn_error err;
} figs;

typedef attn_status (*chart_fn)(const void *ctx, const char *path, attn_error *err);

/* OUT/stem.png and OUT/stem.svg by fn, and a line in index.md: a heading, the picture, the
 * explanation. CLI_OK or the exit code after the message. */
int cli_figures_chart(figs *f, const char *stem, const char *heading, const char *line, chart_fn fn,
                      const void *ctx);
/* OUT/stem.ext into buf[n]. */
void cli_figures_path(char *buf, size_t n, const figs *f, const char *stem, const char *ext);
/* The committed weights DIR/model-seedS.json; CLI_OK or the exit code. */
int cli_figures_load(figs *f, const char *model, int seed, attn_model **m);

/* The sections: the table's accuracies; s7's example sentences and the observations. */
int cli_figures_table(figs *f);
int cli_figures_examples(figs *f);
int cli_figures_observations(figs *f);

#endif
