/* The `compat/` tree: a kimi-k3 view of a v1 dataset (the Python tool's
 * bin/fidelity/k3compat.py, spec §12.3; docs/ADAPTERS.md).  Three files,
 * pure metadata, written BEFORE the seal so checksums.txt lists them:
 *   compat/suite-manifest.json             the panel with `contexts` as a LIST
 *   compat/reference-hidden|logits/manifest.json   the capture records as `contexts`
 *   compat/README.md
 * `token_file` and `file` are relative aliases onto the one real copy. */
#ifndef FD_K3COMPAT_H
#define FD_K3COMPAT_H
#include "json.h"

/* Writes the three files under root/compat/ from the (unsealed or sealed)
 * panel/panel.json and capture/manifest.json documents, and returns the
 * keys k3compat.emit adds to the manifest's interop block through *interop
 * (a new object the caller owns).  head_rel NULL: "head/weight.safetensors". */
int fd_k3compat_emit(const char *root, const jv *panel_doc, const jv *capture_doc, const char *capture_rel,
                     const char *head_rel, const char *dataset_name, jv **interop, fd_err *e);

/* The same two JSON documents (no README) as a view OUTSIDE the dataset, in
 * dir (created): dataset_rel leads from dir to the dataset root (no trailing
 * slash), so token_file = dataset_rel/<token_file> and file =
 * ../dataset_rel/<capture_rel>/<file>.  Used by compare --emit-k3-compat.
 * manifest_rel receives "reference-hidden/manifest.json" or
 * "reference-logits/manifest.json". */
int fd_k3compat_emit_view(const char *dir, const char *dataset_rel, const jv *panel_doc, const jv *capture_doc,
                          const char *capture_rel, const char *dataset_name, char manifest_rel[128], fd_err *e);

/* k3compat.verify: re-checks a dataset's compat/ tree against panel/panel.json
 * and the capture manifest (suite token hash, per-record token and file
 * digests, every relative alias resolves).  Problems are appended to
 * *problems (a JSON array of strings the caller owns); -1 only when the
 * dataset itself cannot be read. */
int fd_k3compat_verify(const char *root, jv *problems, fd_err *e);
/* The same checks on a view at `view` (aliases resolved from there). */
int fd_k3compat_verify_view(const char *root, const char *view, jv *problems, fd_err *e);

#endif
