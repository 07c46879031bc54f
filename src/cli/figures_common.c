/* figures_common.c -- what every part of `attn figures` shares (figures_cli.h): the output
 * paths, a chart as PNG + SVG with its index.md entry, and loading a model of the weights
 * directory. cmd_figures.c (the command and its small sections), figures_table.c and
 * figures_observations.c use them. */
#include "figures_cli.h"

#include <stdio.h>

void cli_figures_path(char *buf, size_t n, const figs *f, const char *stem, const char *ext) {
    snprintf(buf, n, "%s/%s.%s", f->out, stem, ext);
}

/* stem.png and stem.svg, and a line in index.md: a heading, the picture, the explanation. */
int cli_figures_chart(figs *f, const char *stem, const char *heading, const char *line, chart_fn fn,
                      const void *ctx) {
    static const char *const ext[] = {"png", "svg"};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        cli_figures_path(path, sizeof path, f, stem, ext[i]);
        if (fn(ctx, path, &f->err) != ATTN_OK) return cli_fail("figures", &f->err);
    }
    fprintf(f->index, "### %s\n\n![%s](%s.png)\n\n%s ([SVG](%s.svg))\n\n", heading, heading, stem,
            line, stem);
    return CLI_OK;
}

int cli_figures_load(figs *f, const char *model, int seed, attn_model **m) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-seed%d.json", f->wdir, model, seed);
    return attn_weights_load_json(path, m, &f->err) == ATTN_OK ? CLI_OK
                                                               : cli_fail("figures", &f->err);
}
