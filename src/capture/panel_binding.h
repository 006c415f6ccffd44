/* The binding of a sealed token panel to its upstream identity, as the
 * Python tool's panel.resolve_panel computes it (`panel-binding`): the
 * panel tree is checked as an exact sealed file closure (panel.json,
 * panel.receipt.json with its self-blank or legacy field-absent seal, the
 * listed artifacts, every window's token/mask arrays and digests, the suite
 * token hash), the tokenizer files the receipt pins are verified under a
 * tokenizer root, and the result is the `malaiwah.resolved-panel.v1`
 * document with the tree's deterministic ustar archive digest.  Errors carry
 * code panel_unresolvable. */
#ifndef FD_CAPTURE_PANEL_BINDING_H
#define FD_CAPTURE_PANEL_BINDING_H
#include "format/json.h"
#include "util/err.h"

#define FD_RESOLVED_PANEL_SCHEMA "malaiwah.resolved-panel.v1"

/* role NULL means "final"; tokenizer_root NULL leaves files_verified false. */
int fd_resolve_panel(const char *panel_dir, const char *role, const char *tokenizer_root, jv **binding, fd_err *e);

#endif
