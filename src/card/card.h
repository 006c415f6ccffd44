/* Cards: YAML front matter read with libyaml, the model card built from
 * comparison receipts (COMPARE.md §6, GEN-* rules) and its check against the
 * receipts it cites (docs/CARDS.md). */
#ifndef FD_CARD_H
#define FD_CARD_H
#include <stddef.h>
#include "format/json.h"
#include "util/buf.h"
#include "util/err.h"

/* One YAML document (block or flow) into a jv tree with PyYAML safe_load's
 * implicit typing (null, bool, int, float, str).  Refuses anchors/aliases,
 * explicit non-core tags, duplicate keys, non-scalar keys, non-finite
 * floats and nesting deeper than 64 (code card_invalid). */
jv *fd_yaml_parse(const char *text, size_t n, fd_err *e);

/* split_card: front matter between a first line "---" and the next "---"
 * line.  *front is NULL (no front matter) or the parsed mapping; *body_off
 * is where the body starts in text. */
int fd_card_split(const char *text, size_t n, jv **front, size_t *body_off, fd_err *e);

typedef struct fd_card_opts {
    const char *const *receipts;   /* comparison receipt files */
    size_t nreceipts;
    const char *model_name;        /* default: candidate weights repository, else dataset id */
    const char *base_model;        /* default: reference weights repository */
    const char *panel_repository;  /* dataset.type; default: the panel id */
    const char *panel_revision;
} fd_card_opts;

/* The `model-index` list and the `x_fidelity` block of these receipts
 * (each seal-checked and valid, all one candidate). */
int fd_card_build(const fd_card_opts *o, jv **model_index, jv **x_fidelity, jv **top, fd_err *e);
/* Merges into an existing card text (NULL: an empty card); GEN-5/6/7. */
int fd_card_render(const char *existing, size_t n, const jv *model_index, const jv *x_fidelity, const jv *top,
                   fd_buf *out, fd_err *e);
/* Re-reads a card and verifies it against the receipts (rebuilt with the
 * card's own name/base/panel inputs): every value equal, GEN-4/7/9, XC-1..3. */
int fd_card_check(const char *card_path, const fd_card_opts *o, fd_err *e);

#endif
