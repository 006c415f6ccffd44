/* compare --emit-k3-compat inside write_outputs: the views once, then per
 * candidate k3-summary.json in the staging folder and the receipt's interop
 * block naming its sha256 (so the receipt seal covers the summary, and the
 * summary names tokenwise-kld.npy's sha256).  Included by compare.c (it
 * shares cand_run). */

#include "compare_internal.h"
#include "format/sha.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const jv_style K3_JSON = {2, 1, ",", ": "};   /* his json.dumps(indent=2, sort_keys=True) */

static void k3_dir_name(const fd_cmp_opts *o, size_t i, const char *label, char *out, size_t n)
{
    if (o->ncand == 1) snprintf(out, n, "candidate");
    else {
        char comp[81];
        fd_path_component(label, comp, sizeof comp);   /* a label never leaves OUT/k3-compat */
        snprintf(out, n, "%02zu-%.70s", i + 1, comp);
    }
}

fd_k3_view *fd_cmp_k3_views(const fd_cmp_opts *o, const char *stage, const char *final_real, const fd_side *ref,
                            const cand_run *cr, fd_err *e)
{
    size_t n = o->ncand + 1;
    const fd_side **sides = fd_xcalloc(n, sizeof *sides);
    char **names = fd_xcalloc(n, sizeof *names);
    fd_k3_view *v = fd_xcalloc(n, sizeof *v);
    sides[0] = ref;
    names[0] = fd_xstrdup("reference");
    for (size_t i = 0; i < o->ncand; i++) {
        char name[96];
        k3_dir_name(o, i, cr[i].side.label, name, sizeof name);
        sides[i + 1] = &cr[i].side;
        names[i + 1] = fd_xstrdup(name);
    }
    if (fd_k3_write_views(stage, final_real, sides, (const char *const *)names, n, v, e)) { free(v); v = NULL; }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    free(sides);
    return v;
}

static jv *k3_comparator(const fd_cmp_opts *o, const fd_side *ref, const cand_run *c)
{
    jv *k = jv_obj();
    const fd_side *hside = !ref->logit ? ref : !c->side.logit ? &c->side : NULL;
    const char *head_file = hside && !c->g.head_substituted ? jv_get_str(jv_get(hside->manifest, "head"), "file_sha256") : NULL;
    jv_set(k, "bf16_reduced_precision_reduction", jv_bool(0));
    jv_set(k, "deterministic_algorithms", jv_bool(1));
    jv_set(k, "device", jv_str(c->compute ? "cpu" : "none"));
    jv_set(k, "lm_head_file_sha256", head_file ? jv_str(head_file) : jv_null());
    jv_set(k, "position_block", jv_int((int64_t)(o->position_block ? o->position_block : FD_CMP_POSITION_BLOCK)));
    jv_set(k, "source_file_hashes_verified", jv_bool(0));
    jv_set(k, "tf32", jv_bool(0));
    jv_set(k, "two_pass_full_vocabulary", jv_bool(0));
    jv_set(k, "vocab_chunk", o->vocab_chunk ? jv_int((int64_t)o->vocab_chunk) : jv_null());
    jv_set(k, "x_fidelity_estimator", jv_str(c->compute ? "fidelity-c:online_chunked_fp64 (full vocabulary, one pass)"
                                                         : "hash_proof (SC-1: every position +0.0)"));
    jv_set(k, "x_fidelity_tensor_content_digests_verified", jv_bool(o->verify_tensors));
    return k;
}

static jv *k3_view_ref(const char *views_rel, const fd_k3_view *v)
{
    jv *o = jv_obj();
    char p[512];
    snprintf(p, sizeof p, "%s/%s", views_rel, v->name);
    jv_set(o, "path", jv_str(p));
    jv_set(o, "kind", jv_str(v->kind));
    jv_set(o, "manifest", jv_str(v->manifest_rel));
    jv_set(o, "manifest_sha256", jv_str(v->manifest_sha256));
    jv_set(o, "suite_manifest_sha256", jv_str(v->suite_sha256));
    return o;
}

/* Writes staging/k3-summary.json and returns the receipt's interop block. */
jv *fd_cmp_k3_emit_summary(const fd_cmp_opts *o, const fd_side *ref, const cand_run *c, size_t i, const fd_k3_view *views,
                           const size_t *matches, const char *staging, const char *np_sha, size_t np_bytes, fd_err *e)
{
    const char *views_rel = o->ncand == 1 ? "k3-compat" : "../k3-compat";
    size_t nctx = c->g.nshared;
    const fd_ctx **ctx = fd_xcalloc(nctx + 1, sizeof *ctx);
    for (size_t k = 0; k < nctx; k++) ctx[k] = fd_side_find(ref, c->g.shared[k]);
    double *js0 = o->js && !(c->compute && c->r.js) ? fd_xcalloc(c->npos + 1, sizeof *js0) : NULL; /* SC-1: zeros */
    fd_k3_summary_in in = {c->kl, o->js ? (js0 ? js0 : c->r.js) : NULL, c->npos, nctx, ctx, matches, &views[0],
                           &views[i + 1], ref->label, c->side.label, views_rel, np_sha, np_bytes,
                           k3_comparator(o, ref, c)};
    jv *sum = fd_k3_summary(&in), *iop = NULL;
    fd_buf b = {0};
    char sha[65];
    int rc = jv_dump(sum, &K3_JSON, &b, e);
    if (!rc) {
        fd_buf_putc(&b, '\n');
        char *path = fd_path_join(staging, "k3-summary.json");
        rc = fd_write_atomic(path, b.p, b.n, e);
        free(path);
        fd_sha256_hex(b.p, b.n, sha);
    }
    if (!rc) {
        jv *cw = jv_arr(), *ks = jv_obj(), *vw = jv_obj();
        iop = jv_obj();
        jv_push(cw, jv_str(FD_K3_COMPATIBLE_WITH));
        jv_set(iop, "compatible_with", cw);
        jv_set(iop, "k3_compat_emitted", jv_bool(1));
        jv_set(ks, "path", jv_str("k3-summary.json"));
        jv_set(ks, "bytes", jv_int((int64_t)b.n));
        jv_set(ks, "sha256", jv_str(sha));
        jv_set(iop, "k3_summary", ks);
        jv_set(vw, "reference", k3_view_ref(views_rel, &views[0]));
        jv_set(vw, "candidate", k3_view_ref(views_rel, &views[i + 1]));
        jv_set(iop, "k3_compat_views", vw);
        jv_set(iop, "k3_compat_note", jv_str("k3-summary.json is shaped like the --output of compare-kimi-k3-hidden-"
                                             "replay.py and computed from this receipt's tokenwise values; the views are "
                                             "compat/ trees of the two datasets written into the comparison output "
                                             "(docs/ADAPTERS.md)"));
    }
    fd_buf_free(&b);
    jv_free(sum);
    free(js0);
    free(ctx);
    return iop;
}
