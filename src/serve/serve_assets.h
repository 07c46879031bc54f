/* serve_assets.h -- the files `attn serve` serves, embedded at build time by web/embed.cmake
 * (web/ at "/<name>", the PNGs of docs/figures/ at "/figures/<name>"). Library-internal. */
#ifndef ATTN_SERVE_ASSETS_H
#define ATTN_SERVE_ASSETS_H

#include <stddef.h>

typedef struct serve_asset {
    const char *path; /* "/index.html" */
    const char *type; /* Content-Type */
    const unsigned char *data;
    size_t len;
} serve_asset;

extern const serve_asset serve_assets[]; /* serve_n_assets entries, then a zeroed one */
extern const size_t serve_n_assets;

#endif
