#include "capture/merge.h"
#include "compare/side.h"
#include "format/digest.h"
#include "format/writer.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shard {
    fd_side s;
    jv *runtime;
    int64_t index, total, first, declared;
} shard;

static const jv *path_get(const jv *v, const char *a, const char *b)
{
    v = jv_get(v, a);
    return b ? jv_get(v, b) : v;
}

static const char *str_or(const jv *v) { return v && v->t == JV_STR ? v->u.s.p : NULL; }

static int read_ids(const char *path, int64_t **ids, size_t *n, fd_err *e)
{
    jv *a = jv_parse_file(path, e);
    if (!a) return -1;
    if (a->t != JV_ARR) { jv_free(a); return fd_fail(e, "bad_schema", "", "%s: not a token id list", path); }
    *ids = fd_xmalloc((a->u.a.n + 1) * sizeof **ids);
    *n = a->u.a.n;
    for (size_t i = 0; i < a->u.a.n; i++) {
        if (a->u.a.v[i]->t != JV_INT) { jv_free(a); free(*ids); *ids = NULL; return fd_fail(e, "bad_schema", "", "%s: a non-integer token id", path); }
        (*ids)[i] = a->u.a.v[i]->u.i;
    }
    jv_free(a);
    return 0;
}

static int open_shard(const char *dir, shard *sh, fd_err *e)
{
    memset(sh, 0, sizeof *sh);
    if (fd_side_open(dir, "shard", 1, 1, &sh->s, e)) return -1;
    const jv *so = path_get(sh->s.manifest, "coverage", "shard_of"), *range = path_get(sh->s.manifest, "coverage", "index_range");
    int64_t stride = 0;
    if (!so || so->t != JV_OBJ || jv_get_i64(so, "index", &sh->index) || jv_get_i64(so, "total", &sh->total) ||
        jv_get_i64(so, "stride", &stride) || stride != 1 || !jv_get_str(so, "panel_suite_token_hash_sha256"))
        return fd_fail(e, "not_a_shard", "", "%s: coverage.shard_of is not a contiguous shard written by fidelity capture", dir);
    if (sh->s.logit) return fd_fail(e, "unsupported_form", "", "%s: a logit-form shard (capture writes hidden form only)", dir);
    jv_get_i64(jv_get(sh->s.manifest, "coverage"), "declared_records", &sh->declared);
    sh->first = range && range->t == JV_ARR && range->u.a.n == 2 && range->u.a.v[0]->t == JV_INT ? range->u.a.v[0]->u.i : -1;
    char *rp = fd_path_join(dir, jv_get_str(jv_get(sh->s.manifest, "runtime"), "file"));
    sh->runtime = jv_parse_file(rp, e);
    free(rp);
    return sh->runtime ? 0 : -1;
}

/* Everything that names the run must be equal across the shards. */
static int same_run(const shard *a, const shard *b, const char *dir, fd_err *e)
{
    static const char *const M[][2] = {
        {"dataset", "id"}, {"dataset", "name"}, {"dataset", "role"}, {"dataset", "author"}, {"dataset", "license"},
        {"dataset", "repository"}, {"runtime", "lane"}, {"runtime", "stack_fingerprint_sha256"}, {"weights", NULL},
        {"scope", NULL}, {"panel", "panel_id"}, {"panel", "repository"}, {"panel", "revision"}, {"panel", "tokenizer"},
        {"panel", "panel_receipt_sha256"}, {"panel", "panel_receipt_file"},
        {"panel", "scoring_window"}, {"panel", "context_length"}, {"head", "tensor_content_sha256"},
        {"capture", "form"}, {"capture", "vocab_size"}, {"capture", "hidden_width"}, {"disclosures", NULL},
        {"generation_sanity_probe", NULL}, {"coverage", "declared_records"}, {"coverage", "subset_detail"}};
    for (size_t i = 0; i < sizeof M / sizeof *M; i++) {
        const jv *x = path_get(a->s.manifest, M[i][0], M[i][1]), *y = path_get(b->s.manifest, M[i][0], M[i][1]);
        if (!x != !y || (x && !jv_equal(x, y)))
            return fd_fail(e, "shard_mismatch", "", "%s: %s%s%s differs from the first shard's", dir, M[i][0], M[i][1] ? "." : "",
                           M[i][1] ? M[i][1] : "");
    }
    static const char *const R[][2] = {{"capture_tool", NULL}, {"weights", NULL}, {"stack_fingerprint", NULL}};
    for (size_t i = 0; i < sizeof R / sizeof *R; i++)
        if (!jv_equal(path_get(a->runtime, R[i][0], R[i][1]), path_get(b->runtime, R[i][0], R[i][1])))
            return fd_fail(e, "shard_mismatch", "", "%s: runtime %s differs from the first shard's", dir, R[i][0]);
    const jv *ra = jv_get(a->s.capture_doc, "run_name"), *rb = jv_get(b->s.capture_doc, "run_name");
    if (!ra || !rb || !jv_equal(ra, rb)) return fd_fail(e, "shard_mismatch", "", "%s: capture run_name differs", dir);
    const char *ha = jv_get_str(path_get(a->s.manifest, "coverage", "shard_of"), "panel_suite_token_hash_sha256");
    const char *hb = jv_get_str(path_get(b->s.manifest, "coverage", "shard_of"), "panel_suite_token_hash_sha256");
    if (strcmp(ha, hb))
        return fd_fail(e, "shard_mismatch", "", "%s: cuts a different panel (shard_of.panel_suite_token_hash_sha256)", dir);
    return 0;
}

static int cmp_shard(const void *x, const void *y)
{
    const shard *a = x, *b = y;
    return (a->index > b->index) - (a->index < b->index);
}

/* The disjoint contiguous cover 0..declared-1, and the panel it names. */
static int check_cover(shard *sh, size_t n, fd_err *e)
{
    qsort(sh, n, sizeof *sh, cmp_shard);
    if ((int64_t)n != sh[0].total)
        return fd_fail(e, "incomplete_shards", "", "%zu shard(s) given, the shards say there are %lld", n, (long long)sh[0].total);
    int64_t next = 0;
    size_t nrec = 0;
    for (size_t i = 0; i < n; i++) {
        if (sh[i].total != sh[0].total || sh[i].index != (int64_t)i)
            return fd_fail(e, "incomplete_shards", "", "%s: shard %lld of %lld where shard %zu of %lld is due", sh[i].s.root,
                           (long long)sh[i].index, (long long)sh[i].total, i, (long long)sh[0].total);
        if (sh[i].first != next)
            return fd_fail(e, "incomplete_shards", "", "%s: starts at record %lld, expected %lld (a gap or an overlap)",
                           sh[i].s.root, (long long)sh[i].first, (long long)next);
        for (size_t k = 0; k < sh[i].s.n; k++)
            if (sh[i].s.ctx[k].index != next + (int64_t)k || !sh[i].s.ctx[k].panel_rec)
                return fd_fail(e, "incomplete_shards", "", "%s: records are not the contiguous range from %lld", sh[i].s.root,
                               (long long)next);
        next += (int64_t)sh[i].s.n;
        nrec += sh[i].s.n;
    }
    if (next != sh[0].declared)
        return fd_fail(e, "incomplete_shards", "", "the shards hold records 0..%lld of %lld declared", (long long)next - 1,
                       (long long)sh[0].declared);
    char **per = fd_xcalloc(nrec + 1, sizeof *per), suite[65];
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sh[i].s.n; k++) per[at++] = (char *)jv_get_str(sh[i].s.ctx[k].panel_rec, "token_ids_json_sha256");
    fd_suite_token_hash(per, nrec, 0, suite);
    free(per);
    const char *want = jv_get_str(path_get(sh[0].s.manifest, "coverage", "shard_of"), "panel_suite_token_hash_sha256");
    if (strcmp(suite, want))
        return fd_fail(e, "incomplete_shards", "", "the assembled token digests give suite hash %s, the shards name %s", suite, want);
    return 0;
}

/* The writer's own disclosures are regenerated; the rest are the capture's. */
static jv *extra_disclosures(const jv *all)
{
    static const char *const OWN[] = {"no_known_deviations", "reduced_run_count", "generation_sanity_probe_skipped"};
    jv *x = jv_arr();
    for (size_t i = 0; all && all->t == JV_ARR && i < all->u.a.n; i++) {
        const char *code = jv_get_str(all->u.a.v[i], "code");
        int own = 0;
        for (size_t k = 0; k < 3; k++) own |= code && !strcmp(code, OWN[k]);
        if (!own) jv_push(x, jv_copy(all->u.a.v[i]));
    }
    return x;
}

static int add_record(fd_dsw *w, const fd_side *s, const fd_ctx *c, fd_err *e)
{
    const jv *pr = c->panel_rec;
    char *tp = fd_path_join(s->root, jv_get_str(pr, "token_file"));
    char *mp = jv_get_str(pr, "attention_mask_file") ? fd_path_join(s->root, jv_get_str(pr, "attention_mask_file")) : NULL;
    int64_t *ids = NULL;
    size_t nid = 0;
    fd_buf mask = {0};
    fd_map map = {0};
    int rc = read_ids(tp, &ids, &nid, e);
    if (!rc && mp) rc = fd_read_file(mp, (size_t)1 << 30, &mask, e);
    if (!rc) rc = fd_load_ctx(c, "hidden_states", "BF16", s->hidden, &map, e);
    if (!rc) {
        size_t bytes = (size_t)c->rows * (size_t)s->hidden * 2;
        uint16_t *hid = fd_xmalloc(bytes + 2);   /* the mapped payload may sit at an odd offset */
        memcpy(hid, map.data, bytes);
        double secs = 0;
        const jv *es = jv_get(c->rec, "elapsed_seconds");
        if (es && es->t == JV_FLOAT) secs = es->u.f;
        else if (es && es->t == JV_INT) secs = (double)es->u.i;
        fd_ds_window win = {.ids = ids, .n_ids = nid, .mask_npy = mp ? mask.p : NULL, .mask_len = mask.n,
                            .window_id = jv_get_str(c->rec, "window_id"), .role = jv_get_str(c->rec, "role"),
                            .domain = jv_get_str(c->rec, "domain"), .document_id = jv_get_str(c->rec, "document_id"),
                            .scored_rows = (size_t)c->rows,
                            .allocation_stratum = jv_get_str(c->rec, "allocation_stratum"),
                            .semantic_class = jv_get_str(c->rec, "semantic_class"),
                            .source_cluster_id = jv_get_str(c->rec, "source_cluster_id"),
                            .elapsed_seconds = secs};
        rc = fd_dsw_add_window(w, &win, hid, e);
        free(hid);
    }
    fd_unmap(&map);
    fd_buf_free(&mask);
    free(ids);
    free(tp);
    free(mp);
    return rc;
}

/* a bound capture's panel/panel-receipt.json, byte for byte (the shard verified under its checksums) */
static int copy_receipt(const char *dir, fd_dsw *w, fd_err *e)
{
    char *src = fd_path_join(dir, "panel/panel-receipt.json"), *dst = fd_path_join(fd_dsw_staging(w), "panel/panel-receipt.json");
    fd_buf raw = {0};
    int rc = fd_read_file(src, (size_t)256 << 20, &raw, e);
    if (!rc) rc = fd_write_atomic(dst, raw.p, raw.n, e);
    fd_buf_free(&raw);
    free(src);
    free(dst);
    return rc;
}

static int write_merged(const fd_merge_opts *o, shard *sh, size_t n, jv **manifest, fd_err *e)
{
    const jv *m = sh[0].s.manifest, *rt = sh[0].runtime, *ds = jv_get(m, "dataset"), *wt = jv_get(m, "weights");
    fd_ds_identity id = {0};
    id.dataset_id = jv_get_str(ds, "id");
    id.dataset_name = jv_get_str(ds, "name");
    id.role = jv_get_str(ds, "role");
    id.lane = jv_get_str(jv_get(m, "runtime"), "lane");
    id.run_name = jv_get_str(sh[0].s.capture_doc, "run_name");
    id.cold_run = jv_get_str(jv_get(rt, "runtime_environment"), "cold_run");
    id.created_utc = o->created_utc;
    id.author = str_or(path_get(ds, "author", "handle"));
    id.license = jv_get_str(ds, "license");
    id.repository = str_or(jv_get(ds, "repository"));
    id.weights_repository = str_or(jv_get(wt, "repository"));
    id.weights_revision = str_or(jv_get(wt, "revision"));
    id.codec = str_or(jv_get(wt, "codec"));
    const jv *db = jv_get(wt, "declared_bits");
    id.declared_bits = db && db->t != JV_NULL ? db : NULL;
    id.scope = jv_get(m, "scope");
    id.panel_id = jv_get_str(jv_get(m, "panel"), "panel_id");
    id.panel_name = jv_get_str(sh[0].s.panel_doc, "name");
    id.panel_repository = str_or(path_get(m, "panel", "repository"));
    id.panel_revision = str_or(path_get(m, "panel", "revision"));
    id.tokenizer = path_get(m, "panel", "tokenizer");
    id.panel_receipt_sha256 = str_or(path_get(m, "panel", "panel_receipt_sha256"));
    id.panel_receipt_file = str_or(path_get(m, "panel", "panel_receipt_file"));
    id.scoring_window = path_get(m, "panel", "scoring_window");
    id.checkpoint_identity_sha256 = str_or(jv_get(wt, "checkpoint_identity_sha256"));
    id.config_sha256 = str_or(jv_get(wt, "config_sha256"));
    id.checkpoint_files = path_get(rt, "weights", "checkpoint_files");
    const jv *rpb = path_get(rt, "capture_tool", "resolved_panel_binding");
    id.resolved_panel_binding = rpb && rpb->t == JV_OBJ ? rpb : NULL;
    id.stack_fingerprint = jv_get(rt, "stack_fingerprint");
    id.engine = jv_get_str(jv_get(rt, "capture_tool"), "version");
    id.mechanism = jv_get_str(jv_get(rt, "capture_tool"), "mechanism");
    jv *extra = extra_disclosures(jv_get(m, "disclosures"));
    id.extra_disclosures = extra;
    id.generation_sanity_probe = jv_get(m, "generation_sanity_probe");
    id.subset_detail = str_or(path_get(m, "coverage", "subset_detail"));
    const jv *hb = jv_get(m, "head");
    if (jv_get(hb, "tied_word_embeddings") && jv_get(hb, "tied_word_embeddings")->t == JV_BOOL &&
        jv_get(hb, "tied_word_embeddings")->u.b)
        id.head_tied_to = jv_get_str(hb, "source_tensor");
    id.hidden = sh[0].s.hidden;
    id.vocab = sh[0].s.vocab;
    jv_get_i64(sh[0].s.capture_doc, "context_length", &id.context_length);
    id.force = o->force;
    id.form = "hidden";
    int rc = -1;
    uint16_t *head = NULL;
    fd_dsw *w = NULL;
    if (id.panel_receipt_file && strcmp(id.panel_receipt_file, "panel/panel-receipt.json")) {
        fd_fail(e, "not_a_shard", "", "%s: panel.panel_receipt_file is not panel/panel-receipt.json", sh[0].s.root);
        goto out;
    }
    if (!(w = fd_dsw_begin(o->out, &id, e))) goto out;
    if (id.panel_receipt_file && copy_receipt(sh[0].s.root, w, e)) goto out;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sh[i].s.n; k++)
            if (add_record(w, &sh[i].s, &sh[i].s.ctx[k], e)) goto out;
    if (fd_read_head(sh[0].s.head_path, sh[0].s.head_key, id.vocab, id.hidden, &head, e)) goto out;
    if (fd_dsw_set_head(w, head, e)) goto out;
    rc = fd_dsw_finish(w, manifest, e);
    w = NULL;
out:
    if (w) fd_dsw_abort(w);
    free(head);
    jv_free(extra);
    return rc;
}

int fd_merge_shards(const fd_merge_opts *o, jv **manifest, fd_err *e)
{
    if (!o->n) return fd_fail(e, "bad_usage", "", "no shard given");
    shard *sh = fd_xcalloc(o->n, sizeof *sh);
    size_t opened = 0;
    int rc = 0;
    for (size_t i = 0; i < o->n && !rc; i++) {
        rc = open_shard(o->shards[i], &sh[i], e);
        opened = i + 1;
        if (!rc && i) rc = same_run(&sh[0], &sh[i], o->shards[i], e);
    }
    if (!rc) rc = check_cover(sh, o->n, e);
    if (!rc) rc = write_merged(o, sh, o->n, manifest, e);
    for (size_t i = 0; i < opened; i++) {
        fd_side_close(&sh[i].s);
        jv_free(sh[i].runtime);
    }
    free(sh);
    return rc;
}
