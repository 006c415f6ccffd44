/* verify-k3-compat: bin/fidelity/k3compat.py::verify, problem for problem,
 * so the view cannot drift into a second, quietly different description of
 * the same bytes.  The messages are the Python tool's. */
#include "k3compat.h"
#include "../util/fsio.h"
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void problem(jv *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(jv *out, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jv_push(out, jv_str(msg));
}

/* int(row.get("context_index", row.get("index"))) */
static int row_index(const jv *row, int64_t *out)
{
    const jv *v = jv_get(row, "context_index");
    if (!v) v = jv_get(row, "index");
    if (!v || v->t != JV_INT) return -1;
    *out = v->u.i;
    return 0;
}

static const jv *by_index(const jv *recs, int64_t index)
{
    for (size_t i = 0; recs && recs->t == JV_ARR && i < recs->u.a.n; i++) {
        int64_t x;
        if (!jv_get_i64(recs->u.a.v[i], "index", &x) && x == index) return recs->u.a.v[i];
    }
    return NULL;
}

static int resolves(const char *dir, const char *rel)
{
    if (!rel) return 0;
    char *p = rel[0] == '/' ? fd_xstrdup(rel) : fd_path_join(dir, rel);
    int ok = fd_is_file(p);
    free(p);
    return ok;
}

static void check_source(const char *root, const char *compat, const char *name, const jv *panel, const jv *capture, jv *out)
{
    char *dir = fd_path_join(compat, name), *path = fd_path_join(dir, "manifest.json");
    fd_err e = {0};
    jv *source = fd_is_file(path) ? jv_parse_file(path, &e) : NULL;
    (void)root;
    if (!source) {
        if (fd_is_file(path)) problem(out, "compat/%s/manifest.json is not readable JSON: %s", name, e.msg);
        goto done;
    }
    if (!jv_equal(jv_get(source, "suite_token_hash_sha256"), jv_get(panel, "suite_token_hash_sha256")))
        problem(out, "compat/%s/manifest.json carries a different suite token hash", name);
    const jv *ctx = jv_get(source, "contexts");
    if (!ctx || ctx->t != JV_ARR) {
        problem(out, "compat/%s/manifest.json `contexts` must be a LIST", name);
        goto done;
    }
    for (size_t i = 0; i < ctx->u.a.n; i++) {
        const jv *row = ctx->u.a.v[i];
        int64_t index;
        if (row_index(row, &index)) { problem(out, "compat/%s record %zu has no integer index", name, i); continue; }
        const jv *real = by_index(jv_get(capture, "records"), index);
        if (!real) { problem(out, "compat/%s record %lld is not in the capture manifest", name, (long long)index); continue; }
        const jv *a = jv_get(row, "sha256"), *b = jv_get(real, "sha256");
        if (!a || !b || !jv_equal(a, b))
            problem(out, "compat/%s record %lld carries a different file digest", name, (long long)index);
        if (!resolves(dir, jv_get_str(row, "file")))
            problem(out, "compat/%s record %lld file '%s' does not resolve", name, (long long)index,
                    jv_get_str(row, "file") ? jv_get_str(row, "file") : "None");
    }
done:
    jv_free(source);
    free(dir);
    free(path);
}

static int names_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int fd_k3compat_verify(const char *root, jv *out, fd_err *e)
{
    char *compat = fd_path_join(root, "compat");
    int rc = fd_k3compat_verify_view(root, compat, out, e);
    free(compat);
    return rc;
}

int fd_k3compat_verify_view(const char *root, const char *view, jv *out, fd_err *e)
{
    char *compat = fd_xstrdup(view), *suite_path = fd_path_join(compat, "suite-manifest.json");
    jv *manifest = NULL, *panel = NULL, *suite = NULL, *capture = NULL;
    int rc = -1;
    if (!fd_is_file(suite_path)) {
        problem(out, "compat/suite-manifest.json is absent");
        rc = 0;
        goto out;
    }
    char *mp = fd_path_join(root, "fidelity-dataset.json");
    manifest = jv_parse_file(mp, e);
    free(mp);
    if (!manifest) goto out;
    const char *panel_rel = jv_get_str(jv_get(manifest, "panel"), "panel_file");
    const char *cap_rel = jv_get_str(jv_get(manifest, "capture"), "manifest_file");
    if (!panel_rel || !cap_rel) { fd_fail(e, "bad_schema", "", "%s: the manifest names no panel or capture file", root); goto out; }
    char *pp = fd_path_join(root, panel_rel), *cp = fd_path_join(root, cap_rel);
    panel = jv_parse_file(pp, e);
    capture = panel ? jv_parse_file(cp, e) : NULL;
    free(pp);
    free(cp);
    if (!panel || !capture) goto out;
    if (!(suite = jv_parse_file(suite_path, e))) goto out;
    rc = 0;
    if (!jv_equal(jv_get(suite, "suite_token_hash_sha256"), jv_get(panel, "suite_token_hash_sha256")))
        problem(out, "compat/suite-manifest.json carries a different suite token hash than panel/panel.json");
    const jv *ctx = jv_get(suite, "contexts"), *precs = jv_get(panel, "records");
    if (!ctx || ctx->t != JV_ARR) {
        problem(out, "compat/suite-manifest.json `contexts` must be a LIST (that is the whole reason this view exists)");
        goto out;
    }
    size_t npanel = precs && precs->t == JV_ARR ? precs->u.a.n : 0;
    if (ctx->u.a.n != npanel) problem(out, "compat lists %zu contexts, the panel has %zu", ctx->u.a.n, npanel);
    for (size_t i = 0; i < ctx->u.a.n; i++) {
        const jv *row = ctx->u.a.v[i];
        int64_t index;
        if (row_index(row, &index)) { problem(out, "compat context %zu has no integer index", i); continue; }
        const jv *real = by_index(precs, index);
        if (!real) { problem(out, "compat context %lld is not in the panel", (long long)index); continue; }
        const jv *a = jv_get(row, "token_ids_json_sha256"), *b = jv_get(real, "token_ids_json_sha256");
        if (!a || !b || !jv_equal(a, b)) problem(out, "compat context %lld carries a different token digest", (long long)index);
        if (!resolves(compat, jv_get_str(row, "token_file")))
            problem(out, "compat context %lld token_file '%s' does not resolve (he joins it onto the suite manifest's own "
                    "directory)", (long long)index, jv_get_str(row, "token_file") ? jv_get_str(row, "token_file") : "None");
    }
    DIR *d = opendir(compat);
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *de; d && (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        names = fd_xrealloc(names, (n + 1) * sizeof *names);
        names[n++] = fd_xstrdup(de->d_name);
    }
    if (d) closedir(d);
    if (n) qsort(names, n, sizeof *names, names_cmp);
    for (size_t i = 0; i < n; i++) {
        check_source(root, compat, names[i], panel, capture, out);
        free(names[i]);
    }
    free(names);
out:
    jv_free(manifest);
    jv_free(panel);
    jv_free(suite);
    jv_free(capture);
    free(compat);
    free(suite_path);
    return rc;
}
