/* Loading and checking a kimi-k3 artifact directory (k3_artifact.h). */
#include "k3_artifact.h"
#include "compare/side.h"
#include "format/digest.h"
#include "format/safetensors.h"
#include "format/sha.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jv *load_opt(const char *root, const char *rel, fd_err *e, int *bad)
{
    char *p = fd_path_join(root, rel);
    jv *v = NULL;
    if (fd_is_file(p)) {
        v = jv_parse_file(p, e);
        if (!v) *bad = 1;
        else if (v->t != JV_OBJ) {
            fd_fail(e, "k3_bad_artifact", "K3-1", "%s is not a JSON object", p);
            jv_free(v);
            v = NULL;
            *bad = 1;
        }
    }
    free(p);
    return v;
}

static char *dir_of(const char *path)
{
    char *d = fd_xstrdup(path), *s = strrchr(d, '/');
    if (s) *s = 0;
    else { free(d); d = fd_xstrdup("."); }
    return d;
}

/* One declared-or-guessed head file: BF16 2-D, digests checked. */
static int load_head(fd_k3_artifact *a, const char *path, const jv *src, fd_err *e)
{
    const char *want = src ? jv_get_str(src, "tensor_key") : NULL;
    if (!want && src) want = jv_get_str(src, "key");
    fd_st_file st;
    if (fd_st_open(path, &st, e)) return -1;
    const fd_st_tensor *t = want ? fd_st_find(&st, want) : NULL;
    if (!t) t = fd_st_find(&st, "weight");
    if (!t) t = fd_st_find(&st, "lm_head.weight");
    int rc = 0;
    char key[256] = "";
    if (!t || t->ndim != 2 || strcmp(t->dtype, "BF16") || !t->shape[0] || !t->shape[1])
        rc = fd_fail(e, "k3_head_mismatch", "K3-4", "%s: no 2-D BF16 weight tensor (his --lm-head needs one)", path);
    else {
        a->vocab = (int64_t)t->shape[0];
        a->hidden = (int64_t)t->shape[1];
        snprintf(key, sizeof key, "%s", t->name);
    }
    fd_st_close(&st);
    if (rc) return -1;
    const char *file_sha = src ? jv_get_str(src, "file_sha256") : NULL, *raw = src ? jv_get_str(src, "raw_tensor_sha256") : NULL;
    char got[65];
    if (file_sha && fd_is_hex64(file_sha)) {
        if (fd_sha256_file(path, got, e)) return -1;
        if (strcmp(got, file_sha))
            return fd_fail(e, "k3_head_mismatch", "K3-4", "%s: the file hashes to %.16s but the artifact declares file_sha256 %.16s",
                           path, got, file_sha);
    }
    if (fd_read_head(path, key, a->vocab, a->hidden, &a->head, e)) return -1;
    fd_sha256_hex(a->head, (size_t)(a->vocab * a->hidden) * 2, got);
    if (raw && fd_is_hex64(raw) && strcmp(got, raw))
        return fd_fail(e, "k3_head_mismatch", "K3-4", "%s: the head payload hashes to %.16s but the artifact declares "
                       "raw_tensor_sha256 %.16s", path, got, raw);
    return 0;
}

static int find_head(fd_k3_artifact *a, const char *root, const char *override, fd_err *e)
{
    const jv *src = jv_get(a->top, "lm_head");
    if (!src || src->t != JV_OBJ) src = a->head_manifest;
    if (override) return load_head(a, override, src, e);
    const char *declared = src ? jv_get_str(src, "file") : NULL;
    if (declared && !fd_k3_relpath_ok(declared)) return fd_fail(e, "k3_bad_artifact", "K3-4", "lm_head.file is absolute or a URL");
    const char *base = declared ? strrchr(declared, '/') : NULL;
    char *guess[3] = {declared ? fd_path_join(root, declared) : NULL,
                      declared ? fd_path_join(root, "lm-head") : NULL, fd_path_join(root, "lm-head/weight.safetensors")};
    if (guess[1]) { char *g = fd_path_join(guess[1], base ? base + 1 : declared); free(guess[1]); guess[1] = g; }
    int rc = 1;
    for (int i = 0; i < 3 && rc == 1; i++)
        if (guess[i] && fd_is_file(guess[i])) rc = load_head(a, guess[i], src, e);
    for (int i = 0; i < 3; i++) free(guess[i]);
    return rc < 0 ? -1 : 0;
}

static int read_tokens(fd_k3_artifact *a, const char *root, size_t i, fd_err *e)
{
    const fd_k3_ctx *c = &a->k.ctx[i];
    fd_k3_window *w = &a->win[i];
    char *p = fd_path_join(root, c->token_file);
    jv *ids = jv_parse_file(p, e);
    int rc = ids ? 0 : -1;
    if (!rc && ids->t != JV_ARR) rc = fd_fail(e, "k3_bad_tokens", "K3-3", "%s: not a JSON integer array", p);
    if (!rc) {
        w->n_ids = ids->u.a.n;
        w->ids = fd_xmalloc((w->n_ids + 1) * sizeof *w->ids);
        for (size_t j = 0; j < w->n_ids && !rc; j++) {
            const jv *v = ids->u.a.v[j];
            if (v->t != JV_INT || v->u.i < 0 || (a->vocab > 0 && v->u.i >= a->vocab))
                rc = fd_fail(e, "k3_bad_tokens", "K3-3", "%s: entry %zu is not a token id in [0, %lld)", p, j, (long long)a->vocab);
            else w->ids[j] = v->u.i;
        }
    }
    jv_free(ids);
    char hex[65];
    if (!rc && (int64_t)w->n_ids != a->k.context_length)
        rc = fd_fail(e, "k3_bad_tokens", "K3-3", "%s: %zu tokens, the suite's context_length is %lld", p, w->n_ids,
                     (long long)a->k.context_length);
    if (!rc && c->num_tokens >= 0 && c->num_tokens != (int64_t)w->n_ids)
        rc = fd_fail(e, "k3_bad_tokens", "K3-3", "%s: %zu tokens, the suite declares num_tokens %lld", p, w->n_ids, (long long)c->num_tokens);
    if (!rc) {
        fd_token_ids_sha256(w->ids, w->n_ids, 0, hex);
        if (strcmp(hex, c->token_sha))
            rc = fd_fail(e, "k3_token_mismatch", "K3-3", "%s: token file hash mismatch for context %zu (compact preimage %.16s, "
                         "declared %.16s)", p, i, hex, c->token_sha);
    }
    free(p);
    return rc;
}

static int check_tensor(fd_k3_artifact *a, const char *tdir, size_t i, fd_err *e)
{
    const fd_k3_ctx *c = &a->k.ctx[i];
    fd_k3_window *w = &a->win[i];
    w->tensor_path = fd_path_join(tdir, c->file);
    if (!fd_is_file(w->tensor_path)) return fd_fail(e, "missing_file", "K3-2", "%s: missing tensor file recorded by the manifest", w->tensor_path);
    char hex[65];
    if (c->file_sha) {
        if (fd_sha256_file(w->tensor_path, hex, e)) return -1;
        if (strcmp(hex, c->file_sha))
            return fd_fail(e, "k3_file_digest_mismatch", "K3-2", "%s: tensor file hash mismatch (%.16s, declared %.16s)",
                           w->tensor_path, hex, c->file_sha);
    }
    fd_st_file st;
    if (fd_st_open(w->tensor_path, &st, e)) return -1;
    const fd_st_tensor *t = fd_st_find(&st, a->logit ? "logits" : "hidden_states");
    int rc = 0;
    int64_t want_rows = a->k.context_length - 1;
    if (!t || t->ndim != 2) rc = fd_fail(e, "k3_bad_tensor", "K3-2", "%s: no 2-D %s tensor", w->tensor_path, a->logit ? "logits" : "hidden_states");
    else if (a->logit ? strcmp(t->dtype, "BF16") && strcmp(t->dtype, "F32") : strcmp(t->dtype, "BF16"))
        rc = fd_fail(e, "k3_bad_tensor", "K3-2", "%s: dtype %s (expected BF16%s)", w->tensor_path, t->dtype, a->logit ? " or F32" : "");
    else if ((int64_t)t->shape[0] != want_rows)
        rc = fd_fail(e, "k3_bad_tensor", "K3-2", "%s: %llu rows; every position after the first of a %lld-token context is "
                     "scored (score_from 0), so %lld are expected", w->tensor_path, (unsigned long long)t->shape[0],
                     (long long)a->k.context_length, (long long)want_rows);
    else {
        int64_t width = (int64_t)t->shape[1], *ref = a->logit ? &a->vocab : &a->hidden;
        if (a->logit && !a->head && *ref <= 0) *ref = width;
        if (width != *ref || width < 1)
            rc = fd_fail(e, "k3_bad_tensor", "K3-2", "%s: width %lld, expected %lld", w->tensor_path, (long long)width, (long long)*ref);
        if (!rc && !a->logit && a->k.hidden_width > 0 && width != a->k.hidden_width)
            rc = fd_fail(e, "k3_bad_tensor", "K3-2", "%s: width %lld, the manifest declares hidden_width %lld", w->tensor_path,
                         (long long)width, (long long)a->k.hidden_width);
        snprintf(w->dtype, sizeof w->dtype, "%s", t->dtype);
        w->rows = want_rows;
        if (a->logit && !strcmp(t->dtype, "BF16")) a->logit_bf16 = 1;
    }
    fd_st_close(&st);
    return rc;
}

int fd_k3_artifact_load(const char *root, const char *head, int64_t limit, fd_k3_artifact *a, fd_err *e)
{
    memset(a, 0, sizeof *a);
    if (!fd_is_dir(root)) return fd_fail(e, "missing_file", "", "%s: not a directory", root);
    char *sp = fd_path_join(root, "suite-manifest.json");
    static const char *const tensor_dirs[][2] = {{"reference-hidden/manifest.json", "h"}, {"ref/manifest.json", "l"},
                                                 {"reference-logits/manifest.json", "l"}};
    char *tp = NULL, *tdir = NULL;
    int bad = 0, rc = -1;
    if (!fd_is_file(sp)) {
        fd_fail(e, "not_k3_artifact", "K3-1", "no suite-manifest.json under %s; this is not a kimi-k3 artifact", root);
        goto out;
    }
    for (int i = 0; i < 3 && !tp; i++) {
        char *p = fd_path_join(root, tensor_dirs[i][0]);
        if (fd_is_file(p)) { tp = p; a->logit = tensor_dirs[i][1][0] == 'l'; }
        else free(p);
    }
    if (!tp) {
        fd_fail(e, "k3_no_tensors", "K3-2", "%s has neither reference-hidden/manifest.json nor ref/manifest.json: a sealed dataset "
                "is made of tensor bytes (the Python tool writes only a translation report then; not implemented here)", root);
        goto out;
    }
    tdir = dir_of(tp);
    if (!(a->suite = jv_parse_file(sp, e)) || !(a->tensors = jv_parse_file(tp, e))) goto out;
    if (fd_k3_parse(a->suite, a->tensors, a->logit, &a->k, e)) goto out;
    a->top = load_opt(root, "manifest.json", e, &bad);
    if (!bad) a->runtime = load_opt(root, "capture-runtime.json", e, &bad);
    if (!bad) a->validation = load_opt(root, "validation/artifact-validation.json", e, &bad);
    if (!bad) a->head_manifest = load_opt(root, "lm-head/manifest.json", e, &bad);
    if (bad) goto out;
    a->checkpoint = jv_get(a->top, "checkpoint");
    if (!a->checkpoint || a->checkpoint->t != JV_OBJ) a->checkpoint = jv_get(a->runtime, "checkpoint");
    if (a->checkpoint && a->checkpoint->t != JV_OBJ) a->checkpoint = NULL;
    if (fd_sha256_file(sp, a->suite_sha, e) || fd_sha256_file(tp, a->tensor_manifest_sha, e)) goto out;
    char *mp = fd_path_join(root, "manifest.json");
    int top_rc = a->top ? fd_sha256_file(mp, a->top_sha, e) : 0;
    free(mp);
    if (top_rc || find_head(a, root, head, e)) goto out;
    if (!a->logit && !a->head) {
        fd_fail(e, "k3_head_missing", "K3-4", "%s: no lm-head/weight.safetensors (or manifest lm_head.file) and no --head: a "
                "hidden-form dataset ships its head (HEAD-4); a declared-but-absent head is not implemented", root);
        goto out;
    }
    /* the suite aggregate over every declared per-record digest (his "\n" preimage) */
    char **per = fd_xmalloc(a->k.n * sizeof *per), agg[65];
    for (size_t i = 0; i < a->k.n; i++) per[i] = (char *)a->k.ctx[i].token_sha;
    fd_suite_token_hash(per, a->k.n, 0, agg);
    free(per);
    if (strcmp(agg, a->k.suite_hash)) {
        fd_fail(e, "k3_suite_hash_mismatch", "K3-3", "suite-manifest.json: the per-context token digests aggregate to %.16s, "
                "the suite declares %.16s", agg, a->k.suite_hash);
        goto out;
    }
    a->n_use = limit > 0 && (size_t)limit < a->k.n ? (size_t)limit : a->k.n;
    a->win = fd_xcalloc(a->n_use, sizeof *a->win);
    for (size_t i = 0; i < a->n_use; i++)
        if (check_tensor(a, tdir, i, e) || read_tokens(a, root, i, e)) goto out;
    rc = 0;
out:
    free(sp);
    free(tp);
    free(tdir);
    if (rc) fd_k3_artifact_free(a);
    return rc;
}

void fd_k3_artifact_free(fd_k3_artifact *a)
{
    for (size_t i = 0; a->win && i < a->n_use; i++) {
        free(a->win[i].ids);
        free(a->win[i].tensor_path);
    }
    free(a->win);
    free(a->head);
    fd_k3_free(&a->k);
    jv_free(a->suite);
    jv_free(a->tensors);
    jv_free(a->top);
    jv_free(a->runtime);
    jv_free(a->validation);
    jv_free(a->head_manifest);
    memset(a, 0, sizeof *a);
}
