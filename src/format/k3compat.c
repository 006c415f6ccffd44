/* compat/ emission, key for key and byte for byte as the Python tool's
 * bin/fidelity/k3compat.py::emit writes it: json.dumps(indent=2,
 * sort_keys=True) + "\n" with Python's DEFAULT ensure_ascii=True (unlike the
 * dataset's own members), and the README template verbatim. */
#include "k3compat.h"
#include "../util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const jv_style PRETTY_ASCII = {2, 1, ",", ": "};

static const char README[] =
    "# kimi-k3 compatibility view\n"
    "\n"
    "Three JSON files that let the kimi-k3 comparator read **%s** without a\n"
    "patch. They are inside the seal: `checksums.txt` lists them, and editing one\n"
    "makes the dataset refuse itself.\n"
    "\n"
    "    python3 compare-kimi-k3-hidden-replay.py \\\n"
    "        --suite-manifest  ../compat/suite-manifest.json \\\n"
    "        --reference-dir   ../compat/%s \\\n"
    "        --candidate-dir   <the other dataset>/compat/%s \\\n"
    "        --lm-head         ../%s\n"
    "\n"
    "Nothing here is a second copy of the data. `file` and `token_file` are relative\n"
    "aliases onto the one real tensor and the one real token file. %zu contexts.\n"
    "\n"
    "The normative documents are `../panel/panel.json` and the capture manifest; if\n"
    "the two ever disagree, those win and this view is a bug.\n";

static const char SUITE_NOTE[] =
    "A DERIVED VIEW. The normative panel is ../panel/panel.json; this file exists because `contexts` is an integer "
    "record count there and a record list here (PANEL-D5), which one file cannot spell both ways. token_file entries "
    "are relative to THIS directory and point at the one real copy of each token file.";

static const char COMPAT_NOTE[] =
    "metadata only: `file` and `token_file` are relative aliases onto the one real copy of each tensor and token "
    "file, so the view costs three small JSON files at any panel size.";

static int64_t rec_index(const jv *r)
{
    int64_t i = -1;
    jv_get_i64(r, "index", &i);
    return i;
}

/* sorted(records, key=lambda r: int(r["index"])): stable */
static const jv **sorted_records(const jv *recs, size_t *n, fd_err *e)
{
    *n = 0;
    if (!recs || recs->t != JV_ARR) { fd_fail(e, "bad_schema", "", "records is not a list"); return NULL; }
    const jv **v = fd_xmalloc((recs->u.a.n + 1) * sizeof *v);
    for (size_t i = 0; i < recs->u.a.n; i++) {
        const jv *r = recs->u.a.v[i];
        int64_t x;
        if (jv_get_i64(r, "index", &x)) { free(v); fd_fail(e, "bad_schema", "", "a record has no integer index"); return NULL; }
        size_t j = i;
        while (j > 0 && rec_index(v[j - 1]) > x) { v[j] = v[j - 1]; j--; }
        v[j] = r;
    }
    *n = recs->u.a.n;
    return v;
}

static jv *copy_or_null(const jv *v) { return v ? jv_copy(v) : jv_null(); }

static jv *prefixed(const char *prefix, const char *rel)
{
    if (!rel) return jv_null();
    if (rel[0] == '/') return jv_str(rel);      /* posixpath.join keeps an absolute tail */
    fd_buf b = {0};
    fd_buf_printf(&b, "%s%s", prefix, rel);
    jv *s = jv_strn(b.p, b.n);
    fd_buf_free(&b);
    return s;
}

static int write_json(const char *root, const char *rel, const jv *doc, fd_err *e)
{
    fd_buf b = {0};
    int rc = jv_dump(doc, &PRETTY_ASCII, &b, e);
    if (!rc) {
        fd_buf_putc(&b, '\n');
        char *full = fd_path_join(root, rel), *slash = strrchr(full, '/');
        *slash = 0;
        rc = fd_mkdirs(full, e);
        *slash = '/';
        if (!rc) rc = fd_write_atomic(full, b.p, b.n, e);
        free(full);
    }
    fd_buf_free(&b);
    return rc;
}

static jv *suite_doc(const jv *panel, const jv **recs, size_t n, const char *tok_prefix, const char *note)
{
    jv *s = jv_obj(), *ctx = jv_arr();
    for (size_t i = 0; i < n; i++) {
        jv *row = jv_copy(recs[i]);
        jv_set(row, "context_index", jv_int(rec_index(recs[i])));
        jv_set(row, "window_index", jv_int(rec_index(recs[i])));
        jv_set(row, "token_file", prefixed(tok_prefix, jv_get_str(recs[i], "token_file")));
        jv_push(ctx, row);
    }
    jv_set(s, "kind", jv_str("malaiwah fidelity panel, kimi-k3 compatibility view"));
    jv_set(s, "format_version", jv_int(1));
    jv_set(s, "x_malaiwah_note", jv_str(note));
    jv_set(s, "x_malaiwah_panel_id", copy_or_null(jv_get(panel, "panel_id")));
    jv_set(s, "x_malaiwah_normative_panel", prefixed(tok_prefix, "panel/panel.json"));
    jv_set(s, "context_count", jv_int((int64_t)n));
    jv_set(s, "context_length", copy_or_null(jv_get(panel, "context_length")));
    jv_set(s, "scored_positions_per_context", copy_or_null(jv_get(panel, "positions_per_context")));
    jv_set(s, "total_scored_positions", copy_or_null(jv_get(panel, "scored_positions_total")));
    jv_set(s, "suite_token_hash_sha256", copy_or_null(jv_get(panel, "suite_token_hash_sha256")));
    jv_set(s, "tokenizer", copy_or_null(jv_get(panel, "tokenizer")));
    jv_set(s, "contexts", ctx);
    return s;
}

static jv *source_doc(const jv *panel, const jv *cap, const char *prefix, const char *dataset_name,
                      const jv **recs, size_t n)
{
    jv *s = jv_obj(), *ctx = jv_arr();
    fd_buf note = {0};
    fd_buf_printf(&note, "A DERIVED VIEW of %smanifest.json, which is the normative capture manifest and the one the seal "
                  "covers. `file` entries are relative aliases: there is exactly one copy of each tensor.", prefix);
    for (size_t i = 0; i < n; i++) {
        jv *row = jv_copy(recs[i]);
        jv_set(row, "context_index", jv_int(rec_index(recs[i])));
        jv_set(row, "window_index", jv_int(rec_index(recs[i])));
        jv_set(row, "file", prefixed(prefix, jv_get_str(recs[i], "file")));
        jv_push(ctx, row);
    }
    const char *run = jv_get_str(cap, "run_name");
    const jv *all = jv_get(cap, "records");
    jv_set(s, "kind", jv_str("malaiwah fidelity capture, kimi-k3 compatibility view"));
    jv_set(s, "format_version", jv_int(1));
    jv_set(s, "x_malaiwah_note", jv_strn(note.p, note.n));
    fd_buf_free(&note);
    jv_set(s, "run_name", jv_str(run && *run ? run : dataset_name));
    jv_set(s, "semantic_point", copy_or_null(jv_get(cap, "semantic_point")));
    jv_set(s, "tensor_key", copy_or_null(jv_get(cap, "tensor_key")));
    jv_set(s, "context_length", copy_or_null(jv_get(cap, "context_length")));
    jv_set(s, "hidden_width", copy_or_null(jv_get(cap, "hidden_width")));
    jv_set(s, "scored_rows_per_context", all && all->u.a.n ? copy_or_null(jv_get(all->u.a.v[0], "scored_rows")) : jv_null());
    jv_set(s, "suite_token_hash_sha256", copy_or_null(jv_get(panel, "suite_token_hash_sha256")));
    jv_set(s, "total_size_bytes", copy_or_null(jv_get(cap, "total_size_bytes")));
    jv_set(s, "contexts", ctx);
    return s;
}

/* The two JSON documents of a view under dir; tok_prefix leads from dir to
 * the dataset root, cap_prefix from dir/<subdir> to the capture folder. */
static int write_docs(const char *dir, const jv *panel_doc, const jv *capture_doc, const char *tok_prefix,
                      const char *cap_prefix, const char *suite_note, const char *dataset_name, char rel[128], fd_err *e)
{
    const char *form = jv_get_str(capture_doc, "form");
    int hidden = !form || !strcmp(form, "hidden");
    size_t np = 0, nc = 0;
    const jv **precs = sorted_records(jv_get(panel_doc, "records"), &np, e);
    if (!precs) return -1;
    const jv **crecs = sorted_records(jv_get(capture_doc, "records"), &nc, e);
    if (!crecs) { free(precs); return -1; }
    jv *suite = suite_doc(panel_doc, precs, np, tok_prefix, suite_note);
    jv *source = source_doc(panel_doc, capture_doc, cap_prefix, dataset_name, crecs, nc);
    snprintf(rel, 128, "%s/manifest.json", hidden ? "reference-hidden" : "reference-logits");
    int rc = write_json(dir, "suite-manifest.json", suite, e);
    if (!rc) rc = write_json(dir, rel, source, e);
    jv_free(suite);
    jv_free(source);
    free(precs);
    free(crecs);
    return rc;
}

int fd_k3compat_emit(const char *root, const jv *panel_doc, const jv *capture_doc, const char *capture_rel,
                     const char *head_rel, const char *dataset_name, jv **interop, fd_err *e)
{
    char rel[128], cap_prefix[256];
    snprintf(cap_prefix, sizeof cap_prefix, "../../%s/", capture_rel);
    char *compat = fd_path_join(root, "compat");
    int rc = write_docs(compat, panel_doc, capture_doc, "../", cap_prefix, SUITE_NOTE, dataset_name, rel, e);
    free(compat);
    if (!rc) {
        const jv *precs = jv_get(panel_doc, "records");
        fd_buf b = {0};
        const char *subdir = strncmp(rel, "reference-hidden", 16) ? "reference-logits" : "reference-hidden";
        fd_buf_printf(&b, README, dataset_name, subdir, subdir, head_rel ? head_rel : "head/weight.safetensors",
                      precs && precs->t == JV_ARR ? precs->u.a.n : (size_t)0);
        char *full = fd_path_join(root, "compat/README.md");
        rc = fd_write_atomic(full, b.p, b.n, e);
        free(full);
        fd_buf_free(&b);
    }
    if (rc) return -1;
    jv *u = jv_obj(), *files = jv_arr();
    char full_rel[160];
    snprintf(full_rel, sizeof full_rel, "compat/%s", rel);
    jv_push(files, jv_str("compat/suite-manifest.json"));
    jv_push(files, jv_str(full_rel));
    jv_push(files, jv_str("compat/README.md"));
    jv_set(u, "k3_compat_emitted", jv_bool(1));
    jv_set(u, "k3_compat_files", files);
    jv_set(u, "k3_compat_tensor_bytes_duplicated", jv_int(0));
    jv_set(u, "k3_compat_note", jv_str(COMPAT_NOTE));
    *interop = u;
    return 0;
}

int fd_k3compat_emit_view(const char *dir, const char *dataset_rel, const jv *panel_doc, const jv *capture_doc,
                          const char *capture_rel, const char *dataset_name, char manifest_rel[128], fd_err *e)
{
    fd_buf tok = {0}, cap = {0}, note = {0};
    fd_buf_printf(&tok, "%s/", dataset_rel);
    fd_buf_printf(&cap, "../%s/%s/", dataset_rel, capture_rel);
    fd_buf_printf(&note, "A DERIVED VIEW written by `fidelity compare --emit-k3-compat` outside the dataset. The normative "
                  "panel is %spanel/panel.json; token_file entries are relative to THIS directory and point at the one "
                  "real copy of each token file inside the sealed dataset.", tok.p);
    int rc = write_docs(dir, panel_doc, capture_doc, tok.p, cap.p, note.p, dataset_name, manifest_rel, e);
    fd_buf_free(&tok);
    fd_buf_free(&cap);
    fd_buf_free(&note);
    return rc;
}
