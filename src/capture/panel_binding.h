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
#include <stddef.h>

#define FD_RESOLVED_PANEL_SCHEMA "malaiwah.resolved-panel.v1"

/* role NULL means "final"; tokenizer_root NULL leaves files_verified false. */
int fd_resolve_panel(const char *panel_dir, const char *role, const char *tokenizer_root, jv **binding, fd_err *e);
/* ...and *equivalences (when not NULL): how many tokenizer files verified
 * only through a .reference copy (loader-key or provenance equivalence). */
int fd_resolve_panel_ex(const char *panel_dir, const char *role, const char *tokenizer_root, jv **binding,
                        size_t *equivalences, fd_err *e);

/* capture --panel-binding (panel_binding_capture.c): the file's sha256 must
 * be want_sha, its strict JSON must equal the binding of panel_dir resolved
 * now (role, tokenizer files verified under tokenizer_root) and name the
 * receipt P was loaded with; *evidence gets hf_capture.py's runtime record
 * {binding_file, binding_file_sha256, binding, tokenizer_equivalences}.
 * Refusals carry code panel_binding_refused. */
struct fd_panel;
int fd_capture_panel_binding(const char *path, const char *want_sha, const char *panel_dir, const char *role,
                             const char *tokenizer_root, const struct fd_panel *P, jv **evidence, fd_err *e);

#endif
