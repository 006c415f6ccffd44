/* compare --emit-k3-compat: the panel check and the compat/ views of the
 * compared datasets, written into the comparison output (a sealed dataset
 * is never touched).  Each view's aliases are paths relative to the view, so
 * the output folder and the datasets can move together. */
#include "k3summary.h"
#include "format/k3compat.h"
#include "format/sha.h"
#include "util/fsio.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int fd_k3_check_panel(const fd_side *s, const int64_t *shared, size_t n, fd_err *e)
{
    const jv *panel = jv_get(s->manifest, "panel"), *sf = jv_get(jv_get(panel, "scoring_window"), "score_from");
    int64_t L = 0, from = 0;
    if (sf && sf->t == JV_INT) from = sf->u.i;
    if (from != 0)
        return fd_fail(e, "k3_incompatible_panel", "k3", "%s: the panel scores from position %lld; kimi-k3 "
                       "(" FD_K3_COMPATIBLE_WITH ") scores every row 0..context_length-2 of a context, so this "
                       "comparison has no kimi-k3 form (drop --emit-k3-compat)", s->root, (long long)from);
    if (jv_get_i64(panel, "context_length", &L) || L < 2)
        return fd_fail(e, "k3_incompatible_panel", "k3", "%s: the panel has no context_length >= 2", s->root);
    for (size_t i = 0; i < n; i++) {
        const fd_ctx *x = fd_side_find(s, shared[i]);
        if (x && x->rows != L - 1)
            return fd_fail(e, "k3_incompatible_panel", "k3", "%s: context %lld scores %lld rows, not context_length-1 = "
                           "%lld as every kimi-k3 context does", s->root, (long long)x->index, (long long)x->rows,
                           (long long)(L - 1));
    }
    return 0;
}

/* the relative path from directory `from` to `to`, both absolute and canonical */
static char *relpath(const char *from, const char *to)
{
    size_t common = 0;
    for (size_t i = 0;; i++) {
        char a = from[i], b = to[i];
        if ((a == '/' || !a) && (b == '/' || !b)) common = i;
        if (!a || !b || a != b) break;
    }
    fd_buf r = {0};
    for (const char *p = from + common; *p; p++)
        if (*p == '/') fd_buf_printf(&r, "%s..", r.n ? "/" : "");
    const char *rest = to + common;
    if (*rest == '/') rest++;
    if (*rest) fd_buf_printf(&r, "%s%s", r.n ? "/" : "", rest);
    if (!r.n) fd_buf_printf(&r, ".");
    return fd_buf_cstr(&r);
}

static char *capture_dir(const fd_side *s)
{
    const char *mf = jv_get_str(jv_get(s->manifest, "capture"), "manifest_file");
    const char *slash = mf ? strrchr(mf, '/') : NULL;
    fd_buf b = {0};
    fd_buf_printf(&b, "%.*s", slash ? (int)(slash - mf) : 1, slash ? mf : ".");
    return fd_buf_cstr(&b);
}

static const char README[] =
    "# kimi-k3 views of the compared datasets\n"
    "\n"
    "Written by `fidelity compare --emit-k3-compat`. Each folder is a compat/ view of one\n"
    "compared dataset (suite-manifest.json and reference-hidden/ or reference-logits/manifest.json);\n"
    "`token_file` and `file` are relative aliases into the sealed datasets, so move this output\n"
    "together with them. `k3-summary.json` beside each comparison receipt is the kimi-k3-shaped\n"
    "summary of that comparison; the receipt's interop block records its sha256.\n"
    "\n"
    "His comparator on the views (his --lm-head reads the key `weight`; ours is\n"
    "`lm_head.weight`, so re-key the head first; content digest unchanged):\n"
    "\n"
    "    python3 compare-kimi-k3-hidden-replay.py \\\n"
    "        --suite-manifest  reference/suite-manifest.json \\\n"
    "        --reference-%s-dir reference/%.*s \\\n"
    "        --candidate-<hidden|logits>-dir <candidate view>/reference-<hidden|logits> \\\n"
    "        --lm-head <reference head, key weight> --output k3-report.json\n"
    "\n"
    "Back into a dataset: `fidelity adapt --source k3v1 --in <view> --head <its head>`.\n"
    "Check a view: `fidelity verify-k3-compat DATASET --view <view>`.\n";

int fd_k3_write_views(const char *out, const char *final_real, const fd_side *const *sides, const char *const *names,
                      size_t n, fd_k3_view *views, fd_err *e)
{
    char *real = fd_xstrdup(final_real);
    fd_buf st = {0}, fin = {0};
    fd_buf_printf(&st, "%s/.k3-compat-staging-%ld", out, (long)getpid());
    fd_buf_printf(&fin, "%s/k3-compat", out);
    fd_rmtree(st.p);
    int rc = fd_mkdirs(st.p, e) || fd_mkdirs(fin.p, e) ? -1 : 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const fd_side *s = sides[i];
        fd_k3_view *v = &views[i];
        snprintf(v->name, sizeof v->name, "%s", names[i]);
        snprintf(v->kind, sizeof v->kind, "%s", s->logit ? "logits" : "hidden");
        fd_buf where = {0};   /* the view's FINAL place decides its relative aliases */
        fd_buf_printf(&where, "%s/k3-compat/%s", real, names[i]);
        char *rel = relpath(where.p, s->realroot), *cap = capture_dir(s), *dir = fd_path_join(st.p, names[i]);
        const char *name = jv_get_str(jv_get(s->manifest, "dataset"), "name");
        rc = fd_k3compat_emit_view(dir, rel, s->panel_doc, s->capture_doc, cap, name ? name : s->label,
                                   v->manifest_rel, e);
        char *suite = fd_path_join(dir, "suite-manifest.json"), *man = fd_path_join(dir, v->manifest_rel);
        if (!rc) rc = fd_sha256_file(suite, v->suite_sha256, e) || fd_sha256_file(man, v->manifest_sha256, e) ? -1 : 0;
        free(suite); free(man); free(rel); free(cap); free(dir);
        fd_buf_free(&where);
    }
    for (size_t i = 0; i < n && !rc; i++) {   /* complete views only, each replacing its namesake */
        char *from = fd_path_join(st.p, names[i]), *to = fd_path_join(fin.p, names[i]);
        fd_rmtree(to);
        if (rename(from, to)) rc = fd_fail(e, "unwritable", "", "%s: %s", to, strerror(errno));
        free(from);
        free(to);
    }
    if (!rc) {
        fd_buf b = {0};
        const char *mr = views[0].manifest_rel;
        fd_buf_printf(&b, README, views[0].kind, (int)(strchr(mr, '/') - mr), mr);
        char *path = fd_path_join(fin.p, "README.md");
        rc = fd_write_atomic(path, b.p, b.n, e);
        free(path);
        fd_buf_free(&b);
    }
    fd_rmtree(st.p);
    fd_buf_free(&st);
    fd_buf_free(&fin);
    free(real);
    return rc;
}
