/* kimi-k3 artifact metadata: suite-manifest.json + <tensor dir>/manifest.json. */
#include "k3.h"
#include "format/sha.h"
#include <stdlib.h>
#include <string.h>

#define BAD_SUITE(...) fd_fail(e, "k3_bad_suite", "K3-1", __VA_ARGS__)
#define BAD_TENSORS(...) fd_fail(e, "k3_bad_tensor_manifest", "K3-2", __VA_ARGS__)

int fd_k3_relpath_ok(const char *p)
{
    return p && *p && p[0] != '/' && !strstr(p, "://") && !strchr(p, '\\') && strlen(p) < 4096;
}

/* his record_index: context_index, then window_index, then index */
static int record_index(const jv *r, int64_t *out)
{
    static const char *const keys[] = {"context_index", "window_index", "index"};
    for (int i = 0; i < 3; i++) {
        const jv *v = jv_get(r, keys[i]);
        if (!v) continue;
        if (v->t != JV_INT || v->u.i < 0 || v->u.i > 100000000) return -1;
        *out = v->u.i;
        return 0;
    }
    return -1;
}

static const jv *record_list(const jv *doc)
{
    const jv *l = jv_get(doc, "contexts");
    if (!l) l = jv_get(doc, "windows");
    return l && l->t == JV_ARR ? l : NULL;
}

/* optional string field: absent or null -> NULL; any other type refused */
static int opt_str(const jv *r, const char *key, const char **out)
{
    const jv *v = jv_get(r, key);
    *out = NULL;
    if (!v || v->t == JV_NULL) return 0;
    if (v->t != JV_STR || memchr(v->u.s.p, 0, v->u.s.n) || v->u.s.n > 4096) return -1;
    *out = v->u.s.p;
    return 0;
}

static int suite_row(const jv *r, fd_k3_ctx *c, fd_err *e)
{
    if (!r || r->t != JV_OBJ) return BAD_SUITE("suite-manifest.json: a context is not an object");
    if (record_index(r, &c->index)) return BAD_SUITE("suite-manifest.json: a context has no non-negative integer index");
    c->token_file = jv_get_str(r, "token_file");
    if (!fd_k3_relpath_ok(c->token_file))
        return BAD_SUITE("suite-manifest.json: context %lld: token_file is missing, absolute or a URL", (long long)c->index);
    c->token_sha = jv_get_str(r, "token_ids_json_sha256");
    if (!c->token_sha || !fd_is_hex64(c->token_sha))
        return BAD_SUITE("suite-manifest.json: context %lld: token_ids_json_sha256 is not 64 lowercase hex", (long long)c->index);
    if (opt_str(r, "window_id", &c->window_id) || opt_str(r, "allocation_stratum", &c->allocation_stratum) ||
        opt_str(r, "semantic_class", &c->semantic_class) || opt_str(r, "source_cluster_id", &c->source_cluster_id) ||
        opt_str(r, "partition", &c->partition) || opt_str(r, "domain", &c->domain) ||
        opt_str(r, "source_content_sha256", &c->document_id))
        return BAD_SUITE("suite-manifest.json: context %lld: a descriptive field is neither a string nor null", (long long)c->index);
    const jv *s = jv_get(r, "sentinel");
    if (s && s->t != JV_BOOL && s->t != JV_NULL)
        return BAD_SUITE("suite-manifest.json: context %lld: sentinel is not a boolean", (long long)c->index);
    c->sentinel = s && s->t == JV_BOOL && s->u.b;
    const jv *nt = jv_get(r, "num_tokens");
    c->num_tokens = -1;
    if (nt && nt->t != JV_NULL) {
        if (nt->t != JV_INT || nt->u.i < 2)
            return BAD_SUITE("suite-manifest.json: context %lld: num_tokens is not an integer >= 2", (long long)c->index);
        c->num_tokens = nt->u.i;
    }
    return 0;
}

static int tensor_record(const jv *rec, fd_k3_ctx *c, const char *key, fd_err *e)
{
    const char *k = jv_get_str(rec, "key");
    if (!k || strcmp(k, key))
        return BAD_TENSORS("manifest.json: context %lld: expected tensor key '%s'", (long long)c->index, key);
    const char *t = jv_get_str(rec, "token_ids_json_sha256");
    if (!t || strcmp(t, c->token_sha))
        return fd_fail(e, "k3_token_mismatch", "K3-3", "manifest.json: token hash mismatch for context %lld (the tensor was "
                       "captured on other tokens than the suite names)", (long long)c->index);
    c->file = jv_get_str(rec, "file");
    if (!fd_k3_relpath_ok(c->file))
        return BAD_TENSORS("manifest.json: context %lld: file is missing, absolute or a URL", (long long)c->index);
    const jv *sha = jv_get(rec, "sha256");
    c->file_sha = NULL;
    if (sha && sha->t != JV_NULL) {
        if (sha->t != JV_STR || !fd_is_hex64(sha->u.s.p))
            return BAD_TENSORS("manifest.json: context %lld: sha256 is not 64 lowercase hex", (long long)c->index);
        c->file_sha = sha->u.s.p;
    }
    return 0;
}

static int cmp_ctx(const void *a, const void *b)
{
    int64_t x = ((const fd_k3_ctx *)a)->index, y = ((const fd_k3_ctx *)b)->index;
    return x < y ? -1 : x > y;
}

int fd_k3_parse(const jv *suite, const jv *tensors, int logit, fd_k3 *k, fd_err *e)
{
    memset(k, 0, sizeof *k);
    k->logit = logit;
    if (!suite || suite->t != JV_OBJ) return BAD_SUITE("suite-manifest.json is not a JSON object");
    if (!tensors || tensors->t != JV_OBJ) return BAD_TENSORS("the tensor directory's manifest.json is not a JSON object");
    const jv *rows = record_list(suite);
    if (!rows || !rows->u.a.n) return BAD_SUITE("suite-manifest.json carries neither contexts[] nor windows[] as a non-empty list");
    if (jv_get_i64(suite, "context_length", &k->context_length) || k->context_length < 2 || k->context_length > 10000000)
        return BAD_SUITE("suite-manifest.json: context_length is not an integer >= 2");
    k->suite_hash = jv_get_str(suite, "suite_token_hash_sha256");
    if (!k->suite_hash || !fd_is_hex64(k->suite_hash))
        return BAD_SUITE("suite-manifest.json: suite_token_hash_sha256 is not 64 lowercase hex");
    const char *th = jv_get_str(tensors, "suite_token_hash_sha256");
    if (!th || strcmp(th, k->suite_hash))
        return fd_fail(e, "k3_suite_hash_mismatch", "K3-3", "manifest.json: suite token hash mismatch (the tensors were "
                       "captured on another suite)");
    const jv *recs = record_list(tensors);
    if (!recs) return BAD_TENSORS("manifest.json has no contexts or windows list");
    const jv *cc = jv_get(suite, "context_count");
    if (!cc) cc = jv_get(suite, "window_count");
    k->declared = (int64_t)rows->u.a.n;
    if (cc && cc->t == JV_INT && cc->u.i >= (int64_t)rows->u.a.n && cc->u.i <= 100000000) k->declared = cc->u.i;
    const jv *hw = jv_get(tensors, "hidden_width");
    k->hidden_width = -1;
    if (hw && hw->t != JV_NULL) {
        if (hw->t != JV_INT || hw->u.i < 1 || hw->u.i > 1 << 20) return BAD_TENSORS("manifest.json: hidden_width is not a positive integer");
        k->hidden_width = hw->u.i;
    }
    const jv *sp = jv_get(tensors, "semantic_point");
    if (sp && sp->t != JV_NULL && sp->t != JV_STR) return BAD_TENSORS("manifest.json: semantic_point is not a string");
    k->semantic_point = sp && sp->t == JV_STR ? sp->u.s.p : NULL;
    k->run_name = jv_get_str(tensors, "run_name");

    k->n = rows->u.a.n;
    k->ctx = fd_xcalloc(k->n, sizeof *k->ctx);
    for (size_t i = 0; i < k->n; i++)
        if (suite_row(rows->u.a.v[i], &k->ctx[i], e)) goto bad;
    qsort(k->ctx, k->n, sizeof *k->ctx, cmp_ctx);
    for (size_t i = 0; i < k->n; i++)
        if (k->ctx[i].index != (int64_t)i) {
            BAD_SUITE("suite-manifest.json: context indices are not 0..%zu without gaps or duplicates (index %lld at "
                      "position %zu); a dataset's record index is its panel position", k->n - 1, (long long)k->ctx[i].index, i);
            goto bad;
        }
    /* his validate_source_manifest: unique indices, every suite context present */
    char *seen = fd_xcalloc(k->n, 1);
    const char *key = logit ? "logits" : "hidden_states";
    int rc = 0;
    for (size_t i = 0; i < recs->u.a.n && !rc; i++) {
        const jv *r = recs->u.a.v[i];
        int64_t x;
        if (!r || r->t != JV_OBJ || record_index(r, &x)) rc = BAD_TENSORS("manifest.json: a record has no non-negative integer index");
        else if (x >= (int64_t)k->n) continue;   /* not in the suite: his reader ignores it too */
        else if (seen[x]) rc = BAD_TENSORS("manifest.json: duplicate context index %lld", (long long)x);
        else {
            seen[x] = 1;
            rc = tensor_record(r, &k->ctx[x], key, e);
        }
    }
    for (size_t i = 0; i < k->n && !rc; i++)
        if (!seen[i]) rc = BAD_TENSORS("manifest.json: context %zu is absent", i);
    free(seen);
    if (rc) goto bad;
    return 0;
bad:
    fd_k3_free(k);
    return -1;
}

void fd_k3_free(fd_k3 *k)
{
    free(k->ctx);
    k->ctx = NULL;
    k->n = 0;
}
