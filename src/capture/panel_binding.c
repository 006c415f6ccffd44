/* fd_resolve_panel (panel_binding.h): the steps of the binding, each over
 * one resolve context: the two documents and the seal, the tree against the
 * artifact contract, every window's arrays, the exact file closure, the
 * suite hashes and the receipt's counts, then the binding document. */
#include "capture/panel_binding_internal.h"
#include "format/npy.h"
#include "format/sha.h"
#include "format/validate_util.h"
#include "util/fsio.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ resolve */

typedef struct selw {
    const char *window;
    uint64_t length;
    int64_t positions;
    char json_sha[65];
} selw;

static int cmp_selw(const void *a, const void *b) { return strcmp(((const selw *)a)->window, ((const selw *)b)->window); }

static int contains(const fd_strv *v, const char *s)
{
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->v[i], s)) return 1;
    return 0;
}

static void add_unique(fd_strv *v, const char *s)
{
    if (!contains(v, s)) fd_strv_push(v, s);
}

static void list_repr(const fd_strv *v, fd_buf *b)
{
    fd_buf_putc(b, '[');
    for (size_t i = 0; i < v->n; i++) fd_buf_printf(b, "%s'%s'", i ? ", " : "", v->v[i]);
    fd_buf_putc(b, ']');
}

/* what the steps of fd_resolve_panel share */
typedef struct rctx {
    const char *root, *role;
    fd_buf panel_raw, receipt_raw;
    jv *panel, *receipt, *tok_receipt;
    int artifact_schema, bind_tok_receipt;
    char declared[65];
    const char *seal_mode;
    artifact *contract;
    size_t n_contract;
    ptree tree;
    tokbind tb;
    fd_strv seen, used;
    selw *sel, *all;
    size_t n_sel, n_all;
    int64_t scored;
    char sel_suite[65];
} rctx;

/* panel.json and panel.receipt.json: schemas, the receipt's seal, its artifact contract */
static int load_documents(rctx *x, fd_err *e)
{
    char *pj = fd_path_join(x->root, "panel.json"), *pr = fd_path_join(x->root, "panel.receipt.json");
    x->panel = pb_json_file(pj, "panel", &x->panel_raw, e);
    if (x->panel) x->receipt = pb_json_file(pr, "panel receipt", &x->receipt_raw, e);
    free(pj);
    free(pr);
    if (!x->panel || !x->receipt) return -1;
    const jv *ps = jv_get(x->panel, "schema"), *rs = jv_get(x->receipt, "schema");
    if (!ps || ps->t != JV_STR || strcmp(ps->u.s.p, PANEL_SCHEMA)) {
        char *r = pb_repr(ps);
        perr(e, "unsupported panel schema %s", r);
        free(r);
        return -1;
    }
    x->artifact_schema = rs && rs->t == JV_STR && !strcmp(rs->u.s.p, ARTIFACT_RECEIPT_SCHEMA);
    if (!x->artifact_schema && !(rs && rs->t == JV_STR && !strcmp(rs->u.s.p, BUILD_RECEIPT_SCHEMA))) {
        char *r = pb_repr(rs);
        perr(e, "unsupported panel receipt schema %s", r);
        free(r);
        return -1;
    }
    if (pb_verify_seal(x->receipt, "panel", x->declared, &x->seal_mode, e)) return -1;
    if (x->artifact_schema && pb_artifact_contract(x->receipt, &x->contract, &x->n_contract, e)) return -1;
    return 0;
}

/* the tree, the listed artifacts in it, panel.json's digest, the tokenizer binding */
static int check_tree(rctx *x, const char *tokenizer_root, fd_err *e)
{
    if (pb_walk(x->root, NULL, 0, &x->tree, e)) return -1;
    qsort(x->tree.f, x->tree.n, sizeof *x->tree.f, pb_cmp_pfile);
    for (size_t i = 0; i < x->n_contract; i++) {
        const pfile *f = pb_tree_get(&x->tree, x->contract[i].rel);
        if (!f) return perr(e, "listed panel artifact is missing: %s", x->contract[i].rel);
        if ((int64_t)f->size != x->contract[i].size || strcmp(f->sha, x->contract[i].sha))
            return perr(e, "listed panel artifact %s fails size/SHA-256", x->contract[i].rel);
    }
    if (x->artifact_schema) {
        const pfile *f = pb_tree_get(&x->tree, "panel.json");
        const char *tp = jv_get_str(x->receipt, "token_panel_artifact_sha256");
        if (!f || !tp || strcmp(f->sha, tp)) return perr(e, "panel.json does not match token_panel_artifact_sha256");
    }
    const jv *rows = jv_get(x->panel, "windows");
    if (!rows || rows->t != JV_ARR || !rows->u.a.n) return perr(e, "panel.windows must be a non-empty array");
    if (pb_tokenizer_binding(x->root, x->receipt, tokenizer_root, &x->tb, &x->tok_receipt, e)) return -1;
    return 0;
}

/* the receipt's tokenizer_receipt_sha256 names the bound tokenizer receipt */
static int check_tokenizer_receipt(rctx *x, fd_err *e)
{
    const jv *trs = jv_get(x->receipt, "tokenizer_receipt_sha256");
    x->bind_tok_receipt = trs && trs->t != JV_NULL;
    if (!x->bind_tok_receipt) return 0;
    const char *want;
    if (!x->tb.receipt) return perr(e, "panel receipt binds a different tokenizer receipt");
    if (pb_hex64(trs, "receipt.tokenizer_receipt_sha256", &want, e)) return -1;
    if (strcmp(want, jv_get_str(x->tb.receipt, "declared_receipt_sha256")))
        return perr(e, "panel receipt binds a different tokenizer receipt");
    return 0;
}

/* the token and mask artifacts of a window: by digest, the canonical path preferred */
static int window_artifacts(rctx *x, const char *window, const char *token_sha, const char *mask_sha,
                            const char **token_rel, const char **mask_rel, fd_err *e)
{
    char pt[PATH_MAX], pm[PATH_MAX];
    snprintf(pt, sizeof pt, "arrays/%s.tokens.npy", window);
    snprintf(pm, sizeof pm, "arrays/%s.mask.npy", window);
    const char *only_token = NULL, *pref_mask = NULL;
    size_t n_tok = 0;
    *token_rel = *mask_rel = NULL;
    for (size_t k = 0; k < x->tree.n; k++) {
        const pfile *f = &x->tree.f[k];
        size_t l = strlen(f->rel);
        if (!strcmp(f->sha, token_sha) && l >= 11 && !strcmp(f->rel + l - 11, ".tokens.npy")) {
            n_tok++;
            only_token = f->rel;
            if (!strcmp(f->rel, pt)) *token_rel = f->rel;
        }
        if (!strcmp(f->sha, mask_sha) && l >= 4 && !strcmp(f->rel + l - 4, ".npy")) {
            if (!strcmp(f->rel, pm)) pref_mask = f->rel;
            if (!*mask_rel || strcmp(f->rel, *mask_rel) < 0) *mask_rel = f->rel;
        }
    }
    if (!*token_rel && n_tok == 1) *token_rel = only_token;
    if (pref_mask) *mask_rel = pref_mask;
    if (!*token_rel || !*mask_rel) return perr(e, "window %s cannot resolve its exact token/mask artifacts", window);
    add_unique(&x->used, *token_rel);
    add_unique(&x->used, *mask_rel);
    return 0;
}

/* the token ids' JSON digest; the ids in the pinned tokenizer's range */
static int window_tokens(const rctx *x, const char *window, const npyv *tv, char json_sha[65], fd_err *e)
{
    fd_buf ids = {0};
    fd_buf_putc(&ids, '[');
    int overflow = 0, out_of_range = 0;
    for (uint64_t k = 0; k < tv->count; k++) {
        int64_t v = pb_npy_at(tv, k, &overflow);
        if (v < 0 || v >= x->tb.max_exclusive || overflow) out_of_range = 1;
        fd_buf_printf(&ids, "%s%lld", k ? "," : "", (long long)v);
    }
    fd_buf_putc(&ids, ']');
    fd_sha256_hex(ids.p, ids.n, json_sha);
    fd_buf_free(&ids);
    if (out_of_range) return perr(e, "window %s has token outside pinned tokenizer range", window);
    return 0;
}

/* the window row's counts against its arrays, the mask's valid shifted pairs */
static int window_counts(const jv *row, const char *window, const npyv *tv, const npyv *mv, const char *json_sha,
                         int64_t *positions, fd_err *e)
{
    if (jv_get(row, "token_ids_json_sha256")) {
        const char *want;
        if (pb_hex64(jv_get(row, "token_ids_json_sha256"), "window token_ids_json_sha256", &want, e)) return -1;
        if (strcmp(want, json_sha)) return perr(e, "window %s token JSON digest mismatch", window);
    }
    if (jv_get(row, "num_tokens")) {
        int64_t nt;
        if (pb_integer(jv_get(row, "num_tokens"), "window num_tokens", 1, &nt, e)) return -1;
        if ((uint64_t)nt != tv->count) return perr(e, "window %s num_tokens disagrees with artifact shape", window);
    }
    if (pb_integer(jv_get(row, "prediction_positions"), "window prediction_positions", 1, positions, e)) return -1;
    if ((uint64_t)*positions > tv->count) return perr(e, "window %s scores more positions than tokens", window);
    if (mv->kind == 'b' && mv->width != 1)
        return perr(e, "boolean mask dtype must have width 1, got %c%c%d", mv->endian, mv->kind, mv->width);
    int64_t valid = 0, prev = 0;
    int overflow = 0;
    for (uint64_t k = 0; k < mv->count; k++) {
        int64_t v = pb_npy_at(mv, k, &overflow);
        if (v != 0 && v != 1) return perr(e, "window %s mask contains a value other than 0 or 1", window);
        if (k && prev == 1 && v == 1) valid++;
        prev = v;
    }
    if (valid != *positions)
        return perr(e, "window %s mask has %lld valid shifted next-token pairs but prediction_positions is %lld", window,
                    (long long)valid, (long long)*positions);
    return 0;
}

/* the arrays of one window checked against its row; recorded in all (and sel for the role) */
static int window_arrays(rctx *x, const jv *row, const char *window, const char *token_sha, const char *mask_sha,
                         const char *token_rel, const char *mask_rel, fd_err *e)
{
    npyv tv, mv;
    if (pb_npy_read(x->root, token_rel, &tv, e)) return -1;
    if (pb_npy_read(x->root, mask_rel, &mv, e)) { fd_buf_free(&tv.raw); return -1; }
    char h1[65], h2[65], json_sha[65];
    fd_sha256_hex(tv.raw.p, tv.raw.n, h1);
    fd_sha256_hex(mv.raw.p, mv.raw.n, h2);
    int64_t positions = 0;
    int rc = -1;
    const char *wrole = jv_get_str(row, "role");
    if (strcmp(h1, token_sha) || strcmp(h2, mask_sha)) perr(e, "window %s artifact digest mismatch", window);
    else if (tv.ndim != 1 || mv.ndim != 1 || tv.shape[0] != mv.shape[0])
        perr(e, "window %s token/mask shapes differ or are not vectors", window);
    else if (tv.kind == 'b') perr(e, "token dtype must be integer, got %c%c%d", tv.endian, tv.kind, tv.width);
    else if (window_tokens(x, window, &tv, json_sha, e) || window_counts(row, window, &tv, &mv, json_sha, &positions, e))
        ;
    else if (!wrole || !*wrole) perr(e, "window %s role is absent", window);
    else {
        x->all[x->n_all].window = window;
        memcpy(x->all[x->n_all].json_sha, json_sha, 65);
        x->n_all++;
        if (!strcmp(wrole, x->role)) {
            selw *s = &x->sel[x->n_sel++];
            s->window = window;
            s->length = tv.count;
            s->positions = positions;
            memcpy(s->json_sha, json_sha, 65);
        }
        rc = 0;
    }
    fd_buf_free(&tv.raw);
    fd_buf_free(&mv.raw);
    return rc;
}

static int check_windows(rctx *x, fd_err *e)
{
    const jv *rows = jv_get(x->panel, "windows");
    x->sel = fd_xcalloc(rows->u.a.n, sizeof *x->sel);
    x->all = fd_xcalloc(rows->u.a.n, sizeof *x->all);
    for (size_t i = 0; i < rows->u.a.n; i++) {
        const jv *row = rows->u.a.v[i];
        if (row->t != JV_OBJ) return perr(e, "panel.windows[%zu] must be an object", i);
        const char *window = jv_get_str(row, "window_id");
        if (!window || !*window || contains(&x->seen, window)) return perr(e, "panel window_id is absent or duplicated");
        fd_strv_push(&x->seen, window);
        const char *token_sha, *mask_sha, *token_rel, *mask_rel;
        if (pb_hex64(jv_get(row, "token_ids_sha256"), "window token_ids_sha256", &token_sha, e) ||
            pb_hex64(jv_get(row, "attention_mask_sha256"), "window attention_mask_sha256", &mask_sha, e))
            return -1;
        if (window_artifacts(x, window, token_sha, mask_sha, &token_rel, &mask_rel, e) ||
            window_arrays(x, row, window, token_sha, mask_sha, token_rel, mask_rel, e))
            return -1;
    }
    return 0;
}

/* the tree is exactly the sealed closure: the contract (or the two documents), the windows' arrays, the tokenizer receipt */
static int check_closure(const rctx *x, fd_err *e)
{
    fd_strv expected = {0}, missing = {0}, extra = {0};
    if (x->n_contract)
        for (size_t i = 0; i < x->n_contract; i++) add_unique(&expected, x->contract[i].rel);
    else {
        add_unique(&expected, "panel.json");
        add_unique(&expected, "panel.receipt.json");
    }
    add_unique(&expected, "panel.receipt.json");
    for (size_t i = 0; i < x->used.n; i++) add_unique(&expected, x->used.v[i]);
    if (x->bind_tok_receipt) add_unique(&expected, "tokenizer.receipt.json");
    for (size_t i = 0; i < expected.n; i++)
        if (!pb_tree_get(&x->tree, expected.v[i])) fd_strv_push(&missing, expected.v[i]);
    for (size_t i = 0; i < x->tree.n; i++)
        if (!contains(&expected, x->tree.f[i].rel)) fd_strv_push(&extra, x->tree.f[i].rel);
    int rc = 0;
    if (missing.n || extra.n) {
        fd_strv_sort(&missing);
        fd_strv_sort(&extra);
        fd_buf a = {0}, b = {0};
        list_repr(&missing, &a);
        list_repr(&extra, &b);
        rc = perr(e, "panel root is not the exact sealed file closure; missing=%s extra=%s", a.p, b.p);
        fd_buf_free(&a);
        fd_buf_free(&b);
    }
    fd_strv_free(&expected);
    fd_strv_free(&missing);
    fd_strv_free(&extra);
    return rc;
}

/* the suite token hashes the documents declare (all windows, sorted); the selected role's shape and suite hash */
static int check_suites(rctx *x, fd_err *e)
{
    if (!x->n_sel) return perr(e, "panel has no windows with role '%s'", x->role);
    qsort(x->all, x->n_all, sizeof *x->all, cmp_selw);
    fd_buf suite = {0};
    for (size_t i = 0; i < x->n_all; i++) fd_buf_printf(&suite, "%s%s", i ? "\n" : "", x->all[i].json_sha);
    char all_suite[65];
    fd_sha256_hex(suite.p, suite.n, all_suite);
    fd_buf_free(&suite);
    const jv *docs[2] = {x->panel, x->receipt};
    const char *labels[2] = {"panel", "receipt"};
    for (int k = 0; k < 2; k++) {
        const jv *v = jv_get(docs[k], "suite_token_hash_sha256");
        if (!v || v->t == JV_NULL) continue;
        char lab[64];
        const char *h;
        snprintf(lab, sizeof lab, "%s suite token hash", labels[k]);
        if (pb_hex64(v, lab, &h, e)) return -1;
        if (strcmp(h, all_suite)) return perr(e, "%s suite token hash does not match sorted token artifacts", labels[k]);
    }
    qsort(x->sel, x->n_sel, sizeof *x->sel, cmp_selw);
    for (size_t i = 1; i < x->n_sel; i++)
        if (x->sel[i].length != x->sel[0].length || x->sel[i].positions != x->sel[0].positions)
            return perr(e, "selected role is not shape-homogeneous");
    x->scored = 0;
    for (size_t i = 0; i < x->n_sel; i++) x->scored += x->sel[i].positions;
    fd_buf ss = {0};
    for (size_t i = 0; i < x->n_sel; i++) fd_buf_printf(&ss, "%s%s", i ? "\n" : "", x->sel[i].json_sha);
    fd_sha256_hex(ss.p, ss.n, x->sel_suite);
    fd_buf_free(&ss);
    return 0;
}

/* role final: the receipt's parameters and final_* counts agree with the selection */
static int check_receipt_counts(const rctx *x, fd_err *e)
{
    if (strcmp(x->role, "final")) return 0;
    const jv *params = jv_get(x->receipt, "parameters");
    struct { const char *k; int64_t v; } checks[] = {
        {"context_length", (int64_t)x->sel[0].length}, {"prediction_positions_per_window", x->sel[0].positions},
        {"scored_positions_total", x->scored}, {"windows_total", (int64_t)x->n_sel}};
    for (size_t i = 0; params && params->t == JV_OBJ && i < 4; i++) {
        if (!jv_get(params, checks[i].k)) continue;
        char lab[96];
        int64_t v;
        snprintf(lab, sizeof lab, "receipt.parameters.%s", checks[i].k);
        if (pb_integer(jv_get(params, checks[i].k), lab, 0, &v, e)) return -1;
        if (v != checks[i].v) return perr(e, "receipt.parameters.%s disagrees with selected role", checks[i].k);
    }
    struct { const char *k; int64_t v; } fin[] = {{"final_windows", (int64_t)x->n_sel}, {"final_prediction_positions", x->scored}};
    for (size_t i = 0; i < 2; i++) {
        if (!jv_get(x->receipt, fin[i].k)) continue;
        char lab[96];
        int64_t v;
        snprintf(lab, sizeof lab, "receipt.%s", fin[i].k);
        if (pb_integer(jv_get(x->receipt, fin[i].k), lab, 0, &v, e)) return -1;
        if (v != fin[i].v) return perr(e, "receipt.%s disagrees with selected role", fin[i].k);
    }
    return 0;
}

static jv *tokenizer_json(const tokbind *tb)
{
    jv *tk = jv_obj(), *files = jv_arr();
    jv_set(tk, "id", jv_str(tb->repository));
    jv_set(tk, "repository", jv_str(tb->repository));
    jv_set(tk, "revision", jv_str(tb->revision));
    jv_set(tk, "vocab_size", jv_int(tb->vocab));
    jv_set(tk, "maximum_token_id_exclusive", jv_int(tb->max_exclusive));
    jv_set(tk, "identity_sha256", jv_str(tb->identity));
    for (size_t i = 0; i < tb->n_files; i++) {
        jv *f = jv_obj();
        jv_set(f, "name", jv_str(tb->files[i].name));
        jv_set(f, "bytes", jv_int(tb->files[i].size));
        jv_set(f, "sha256", jv_str(tb->files[i].sha));
        jv_push(files, f);
    }
    jv_set(tk, "files", files);
    jv_set(tk, "files_verified", jv_bool(tb->verified));
    jv_set(tk, "receipt", tb->receipt ? jv_copy(tb->receipt) : jv_null());
    return tk;
}

/* the content: the tree's manifest and its ustar archive digest */
static jv *content_json(const rctx *x, fd_err *e)
{
    char archive_sha[65], manifest_sha[65];
    uint64_t archive_bytes;
    if (pb_ustar_digest(x->root, &x->tree, archive_sha, &archive_bytes, e)) return NULL;
    jv *manifest = jv_arr();
    for (size_t i = 0; i < x->tree.n; i++) {
        jv *r = jv_obj();
        jv_set(r, "path", jv_str(x->tree.f[i].rel));
        jv_set(r, "bytes", jv_int((int64_t)x->tree.f[i].size));
        jv_set(r, "sha256", jv_str(x->tree.f[i].sha));
        jv_push(manifest, r);
    }
    pb_sha_canonical(manifest, 0, manifest_sha);
    jv *cb = jv_obj(), *ar = jv_obj();
    jv_set(cb, "manifest", manifest);
    jv_set(cb, "manifest_sha256", jv_str(manifest_sha));
    jv_set(ar, "format", jv_str("ustar"));
    jv_set(ar, "compression", jv_str("none"));
    jv_set(ar, "algorithm", jv_str(ARCHIVE_ALGORITHM));
    jv_set(ar, "bytes", jv_int((int64_t)archive_bytes));
    jv_set(ar, "sha256", jv_str(archive_sha));
    jv_set(cb, "archive", ar);
    return cb;
}

/* the malaiwah.resolved-panel.v1 document */
static jv *binding_json(const rctx *x, fd_err *e)
{
    jv *cb = content_json(x, e);
    if (!cb) return NULL;
    char panel_sha[65], receipt_sha[65];
    fd_sha256_hex(x->panel_raw.p, x->panel_raw.n, panel_sha);
    fd_sha256_hex(x->receipt_raw.p, x->receipt_raw.n, receipt_sha);
    jv *pid = NULL;
    if (py_truthy(jv_get(x->panel, "panel_id"))) pid = jv_copy(jv_get(x->panel, "panel_id"));
    else if (py_truthy(jv_get(x->receipt, "panel_id"))) pid = jv_copy(jv_get(x->receipt, "panel_id"));
    else {
        char d[96];
        snprintf(d, sizeof d, "panel-artifact-sha256:%s", panel_sha);
        pid = jv_str(d);
    }
    jv *pname = py_truthy(jv_get(x->panel, "name")) ? jv_copy(jv_get(x->panel, "name"))
              : py_truthy(jv_get(x->receipt, "panel_name")) ? jv_copy(jv_get(x->receipt, "panel_name")) : jv_copy(pid);
    jv *b = jv_obj(), *pb = jv_obj(), *rb = jv_obj();
    jv_set(b, "schema", jv_str(FD_RESOLVED_PANEL_SCHEMA));
    jv_set(pb, "id", pid);
    jv_set(pb, "name", pname);
    jv_set(pb, "role", jv_str(x->role));
    jv_set(pb, "contexts", jv_int((int64_t)x->n_sel));
    jv_set(pb, "context_length", jv_int((int64_t)x->sel[0].length));
    jv_set(pb, "positions_per_context", jv_int(x->sel[0].positions));
    jv_set(pb, "scored_positions_total", jv_int(x->scored));
    jv_set(pb, "suite_token_hash_sha256", jv_str(x->sel_suite));
    jv_set(pb, "file", jv_str("panel.json"));
    jv_set(pb, "bytes", jv_int((int64_t)x->panel_raw.n));
    jv_set(pb, "sha256", jv_str(panel_sha));
    jv_set(b, "panel", pb);
    jv_set(rb, "file", jv_str("panel.receipt.json"));
    jv_set(rb, "bytes", jv_int((int64_t)x->receipt_raw.n));
    jv_set(rb, "declared_receipt_sha256", jv_str(x->declared));
    jv_set(rb, "receipt_seal_mode", jv_str(x->seal_mode));
    jv_set(rb, "receipt_file_sha256", jv_str(receipt_sha));
    jv_set(b, "receipt", rb);
    jv_set(b, "tokenizer", tokenizer_json(&x->tb));
    jv_set(b, "content", cb);
    return b;
}

int fd_resolve_panel(const char *panel_dir, const char *role, const char *tokenizer_root, jv **binding, fd_err *e)
{
    return fd_resolve_panel_ex(panel_dir, role, tokenizer_root, binding, NULL, e);
}

int fd_resolve_panel_ex(const char *panel_dir, const char *role, const char *tokenizer_root, jv **binding,
                        jv **equivalences, fd_err *e)
{
    *binding = NULL;
    if (equivalences) *equivalences = NULL;
    if (!role) role = "final";
    char *root = realpath(panel_dir, NULL);
    struct stat st;
    if (!root || stat(root, &st) || !S_ISDIR(st.st_mode) || !*role) {
        free(root);
        return perr(e, "panel root must be a directory and role must be non-empty");
    }
    rctx x;
    memset(&x, 0, sizeof x);
    x.root = root;
    x.role = role;
    int rc = -1;
    if (!load_documents(&x, e) && !check_tree(&x, tokenizer_root, e) && !check_tokenizer_receipt(&x, e) &&
        !check_windows(&x, e) && !check_closure(&x, e) && !check_suites(&x, e) && !check_receipt_counts(&x, e) &&
        (*binding = binding_json(&x, e)))
        rc = 0;
    if (!rc && equivalences) {
        *equivalences = x.tb.equivalences ? x.tb.equivalences : jv_arr();
        x.tb.equivalences = NULL;
    }
    free(root);
    fd_buf_free(&x.panel_raw);
    fd_buf_free(&x.receipt_raw);
    jv_free(x.panel);
    jv_free(x.receipt);
    jv_free(x.tok_receipt);
    pb_artifacts_free(x.contract, x.n_contract);
    pb_tree_free(&x.tree);
    pb_tokfiles_free(x.tb.files, x.tb.n_files);
    jv_free(x.tb.receipt);
    jv_free(x.tb.equivalences);
    fd_strv_free(&x.seen);
    fd_strv_free(&x.used);
    free(x.sel);
    free(x.all);
    return rc;
}
