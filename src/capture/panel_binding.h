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
/* ...and *equivalences (when not NULL): the array of what panel.py's
 * ResolvedPanel.tokenizer_equivalences() returns, one record per tokenizer
 * file that verified only through its .reference copy, in file order: a
 * loader-key equivalence (config.json, tokenizer_config.json: name, rule,
 * loader_keys_allowlist, root_sha256, root_bytes, candidate_sha256,
 * candidate_bytes, keys_dropped_from_root, keys_dropped_from_candidate,
 * reason) or per-model provenance (LICENSE, chat_template.jinja: name, rule,
 * root/candidate digests and sizes, reason).  Empty when every file matched
 * byte for byte.  Never part of the binding, which names the root's bytes. */
int fd_resolve_panel_ex(const char *panel_dir, const char *role, const char *tokenizer_root, jv **binding,
                        jv **equivalences, fd_err *e);

/* capture --panel-binding (panel_binding_capture.c): the file's sha256 must
 * be want_sha, its strict JSON must equal the binding of panel_dir resolved
 * now (role, tokenizer files verified under tokenizer_root) and name the
 * receipt P was loaded with; *evidence gets hf_capture.py's runtime record
 * {binding_file, binding_file_sha256, binding, tokenizer_equivalences}.
 * Refusals carry code panel_binding_refused. */
struct fd_panel;
int fd_capture_panel_binding(const char *path, const char *want_sha, const char *panel_dir, const char *role,
                             const char *tokenizer_root, const struct fd_panel *P, jv **evidence, fd_err *e);
/* hf_capture's disclosures of the evidence's tokenizer_equivalences, one per
 * record in order: tokenizer_config_loader_keys_ignored (a loader-key
 * equivalence) or tokenizer_file_provenance_admitted (per-model provenance),
 * severity info, affects_comparability false; NULL when there is none. */
jv *fd_panel_binding_disclosures(const jv *evidence);
/* hf_capture's bind_resolved_panel_tokenizer: the verified binding's
 * tokenizer block (a copy, into *tokenizer) replaces the loader's inferred
 * one, and its receipt's declared (semantic, self-sealed) digest (borrowed
 * from evidence, into *receipt_sha256) becomes panel_receipt_sha256, once its
 * seal mode and both receipt digests are checked and receipt_file_sha256 is
 * the digest of the panel.receipt.json bytes P was loaded with. */
int fd_panel_binding_identity(const jv *evidence, const struct fd_panel *P, jv **tokenizer, const char **receipt_sha256,
                              fd_err *e);

#endif
