#include "publish.h"
#include "hub.h"
#include "compare/qualify.h"
#include "format/checksums.h"
#include "format/sha.h"
#include "format/validate.h"
#include "format/version.h"
#include "util/fsio.h"
#include "util/strv.h"
#include "util/utc.h"
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define QUAL_SCHEMA "fidelity.root-qualification-receipt.v1"
#define QUAL_PATH "receipts/root-qualification.json"
#define JSON_MAX ((size_t)64 << 20)
#define INLINE_MAX ((uint64_t)1 << 30) /* the inline (non-LFS) commit payload bound */
#define RESP_MAX ((size_t)1 << 20)

typedef struct pub {
    const fd_publish_opts *o;
    char *token;
    const char *endpoint;
} pub;

static int refuse(const pub *p, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(const pub *p, const char *code, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *red = fd_redact(msg, p->token);
    printf("REFUSED [%s]: %s\n", code, red);
    free(red);
    return 3;
}

static jv *read_json(const char *path, fd_err *e)
{
    fd_buf b = {0};
    jv *v = NULL;
    if (!fd_is_file(path)) fd_fail(e, "bad_json", "", "%s is not a regular file", path);
    else if (!fd_read_file(path, JSON_MAX, &b, e)) v = jv_parse(b.p, b.n, e);
    if (v && v->t != JV_OBJ) { jv_free(v); v = NULL; fd_fail(e, "bad_json", "", "%s is not a JSON object", path); }
    fd_buf_free(&b);
    return v;
}

static int canon_sha(const jv *v, char hex[65])
{
    fd_buf b = {0};
    fd_err e;
    int rc = jv_dump(v, &JV_CANON, &b, &e);
    if (!rc) fd_sha256_hex(b.p, b.n, hex);
    fd_buf_free(&b);
    return rc;
}

static int is_true(const jv *v) { return v && v->t == JV_BOOL && v->u.b; }

/* _load_qualification for a local root: the receipt's own seal and key
 * set, its binding to the exact job.json, the recorded canonical capture
 * identity equal to the dataset being published (re-verified here), and the
 * publish repository. */
static int load_qualification(const pub *p, jv **qual, char *msg, size_t cap)
{
    const fd_publish_opts *o = p->o;
    fd_err e;
    jv *q = read_json(o->qualification, &e), *job = NULL, *observed = NULL;
    *qual = NULL;
    int rc = -1;
#define BAD(...) do { snprintf(msg, cap, __VA_ARGS__); goto out; } while (0)
    if (!q) BAD("root qualification receipt is not readable strict JSON: %s", e.msg);
    static const char *const keys[] = {"schema", "receipt_sha256", "qualified_at", "canonical_job_sha256",
                                       "job_file_sha256", "dataset_repository", "destination_repository",
                                       "job_contract", "captures", "comparison", "comparator", "verification",
                                       "reproduction_confirmation"};
    size_t want = sizeof keys / sizeof *keys + (jv_get(q, "local_execution") ? 1 : 0) + (jv_get(q, "hf_execution") ? 1 : 0);
    int all = 1;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) all &= jv_get(q, keys[i]) != NULL;
    if (!all || q->u.o.n != want) BAD("root qualification receipt keys differ from the v1 contract");
    char seal[65];
    const char *schema = jv_get_str(q, "schema"), *claimed = jv_get_str(q, "receipt_sha256");
    if (!schema || strcmp(schema, QUAL_SCHEMA) || jv_seal(q, "receipt_sha256", seal, &e) || !claimed || strcmp(seal, claimed))
        BAD("root qualification receipt schema/seal is invalid");
    if (!(job = read_json(o->job, &e))) BAD("root qualification job.json is invalid: %s", e.msg);
    char jf[65], jc[65];
    if (fd_sha256_file(o->job, jf, &e) || canon_sha(job, jc)) BAD("job.json: %s", e.msg);
    const char *qjf = jv_get_str(q, "job_file_sha256"), *qjc = jv_get_str(q, "canonical_job_sha256");
    if (!qjf || !qjc || strcmp(qjf, jf) || strcmp(qjc, jc)) BAD("root qualification is not bound to the exact job.json");
    const jv *contract = jv_get(q, "job_contract");
    const char *kind = jv_get_str(contract, "execution_kind"), *jkind = jv_get_str(job, "execution_kind");
    if (!kind || strcmp(kind, "local") || !jkind || strcmp(jkind, "local"))
        BAD("publication path does not match the qualification's execution_kind");
    if (!jv_get(q, "local_execution") || !jv_equal(jv_get(q, "local_execution"), jv_get(job, "local_execution")))
        BAD("root qualification local execution evidence is incomplete or differs from the job");
    const jv *caps = jv_get(q, "captures"), *can = jv_get(caps, "canonical"), *rep = jv_get(caps, "repeat");
    const char *d1 = jv_get_str(can, "capture_content_digest"), *d2 = jv_get_str(rep, "capture_content_digest");
    const char *l1 = jv_get_str(can, "process_label"), *l2 = jv_get_str(rep, "process_label");
    const jv *dr = jv_get(q, "dataset_repository");
    if (!d1 || !d2 || !fd_is_hex64(d1) || strcmp(d1, d2) || !l1 || !l2 || !strcmp(l1, l2) || !dr || dr->t != JV_STR ||
        !jv_equal(jv_get(can, "dataset_repository"), dr) || !jv_equal(jv_get(rep, "dataset_repository"), dr) ||
        !jv_equal(jv_get(contract, "dataset_repository"), dr) || !jv_equal(jv_get(contract, "publish_root_to"), jv_get(q, "destination_repository")))
        BAD("root qualification has inconsistent job/capture identities");
    if (!jv_equal(jv_get(q, "destination_repository"), dr))
        BAD("root qualification publication destination differs from dataset identity");
    const jv *conf = jv_get(q, "reproduction_confirmation");
    if (!is_true(jv_get(conf, "two_fresh_processes")) || !is_true(jv_get(conf, "distinct_dataset_roots")) ||
        !is_true(jv_get(conf, "both_independently_verified")) || !is_true(jv_get(conf, "exact_zero_comparison")) ||
        !is_true(jv_get(conf, "canonical_dataset_only")))
        BAD("qualification lacks the required reproduction semantics");
    if (strcmp(dr->u.s.p, o->repo))
        BAD("qualification dataset/destination repositories do not match publish repository '%s'", o->repo);
    if (!(observed = fd_qualify_capture_identity(o->dataset, l1, "publish", &e))) BAD("%s", e.msg);
    jv *recorded = jv_copy(can);
    jv_del(recorded, "imported_from");
    int same = jv_equal(observed, recorded);
    jv_free(recorded);
    if (!same) BAD("qualification canonical capture identity differs from the dataset selected for publication");
#undef BAD
    *qual = q;
    q = NULL;
    rc = 0;
out:
    jv_free(q);
    jv_free(job);
    jv_free(observed);
    return rc;
}

typedef struct rec {
    fd_strv paths;
    char (*sha)[65];
    uint64_t *size;
    uint64_t total;
} rec;

static void rec_free(rec *r)
{
    fd_strv_free(&r->paths);
    free(r->sha);
    free(r->size);
}

/* Every file of a dataset tree (checksums.txt and the manifest included). */
static int records(const char *root, rec *r, fd_err *e)
{
    memset(r, 0, sizeof *r);
    if (fd_tree_files(root, &r->paths, e)) return -1;
    fd_strv_push(&r->paths, "checksums.txt");
    fd_strv_push(&r->paths, "fidelity-dataset.json");
    fd_strv_sort(&r->paths);
    r->sha = fd_xcalloc(r->paths.n, sizeof *r->sha);
    r->size = fd_xcalloc(r->paths.n, sizeof *r->size);
    for (size_t i = 0; i < r->paths.n; i++) {
        char *full = fd_path_join(root, r->paths.v[i]);
        struct stat st;
        int bad = lstat(full, &st) || !S_ISREG(st.st_mode) || fd_sha256_file(full, r->sha[i], e);
        if (bad && !*e->msg) fd_fail(e, "missing_file", "", "%s is not a regular file", full);
        free(full);
        if (bad) return -1;
        r->size[i] = (uint64_t)st.st_size;
        r->total += r->size[i];
    }
    return 0;
}

/* ------------------------------------------------------------ HTTP */

typedef struct resp {
    fd_buf *b;
    int overflow;
} resp;

static size_t on_body(char *d, size_t sz, size_t nm, void *ud)
{
    resp *r = ud;
    size_t n = sz * nm;
    if (r->b->n + n > RESP_MAX) { r->overflow = 1; return 0; }
    fd_buf_put(r->b, d, n);
    return n;
}

/* One request to the endpoint: no redirect is followed, the token (when
 * given) goes only to the endpoint's own origin. */
static int request(const pub *p, const char *method, const char *url, int with_token, const char *ctype,
                   const void *body, size_t n, long *status, fd_buf *out, char *msg, size_t cap)
{
    fd_origin ep, u;
    if (fd_url_origin(p->endpoint, &ep) || fd_url_origin(url, &u)) { snprintf(msg, cap, "%s: not an http(s) URL", url); return -1; }
    CURL *h = curl_easy_init();
    if (!h) { snprintf(msg, cap, "libcurl did not initialise"); return -1; }
    struct curl_slist *hd = NULL;
    char *auth = NULL;
    if (with_token && p->token && fd_origin_equal(&ep, &u)) {
        size_t an = strlen(p->token) + 32;
        auth = fd_xmalloc(an);
        snprintf(auth, an, "Authorization: Bearer %s", p->token);
        hd = curl_slist_append(hd, auth);
    }
    char ct[96];
    if (ctype) { snprintf(ct, sizeof ct, "Content-Type: %s", ctype); hd = curl_slist_append(hd, ct); }
    hd = curl_slist_append(hd, "Expect:");
    resp r = {out, 0};
    out->n = 0;
    const char *to = getenv("FIDELITY_HUB_TIMEOUT");
    long timeout = to && *to ? strtol(to, NULL, 10) : 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, FD_HUB_USER_AGENT);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 60L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, timeout > 0 ? timeout : 120L);
    if (timeout > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
    }
    CURLcode cc = curl_easy_perform(h);
    *status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(hd);
    if (auth) { explicit_bzero(auth, strlen(auth)); free(auth); }
    curl_easy_cleanup(h);
    if (r.overflow) { snprintf(msg, cap, "%s %s: response exceeds %zu bytes", method, url, (size_t)RESP_MAX); return -1; }
    if (cc != CURLE_OK) { snprintf(msg, cap, "%s %s: %s", method, url, curl_easy_strerror(cc)); return -1; }
    return 0;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void base64(const unsigned char *p, size_t n, fd_buf *out)
{
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        char q[4] = {B64[v >> 18 & 63], B64[v >> 12 & 63], i + 1 < n ? B64[v >> 6 & 63] : '=', i + 2 < n ? B64[v & 63] : '='};
        fd_buf_put(out, q, 4);
    }
}

static int ndjson_file(fd_buf *nd, const char *path, const char *repo_path, char *msg, size_t cap)
{
    fd_buf raw = {0};
    fd_err e;
    if (fd_read_file(path, (size_t)INLINE_MAX, &raw, &e)) { snprintf(msg, cap, "%s", e.msg); return -1; }
    jv *v = jv_obj(), *line = jv_obj();
    jv_set(v, "path", jv_str(repo_path));
    jv_set(v, "encoding", jv_str("base64"));
    fd_buf b = {0};
    base64((const unsigned char *)raw.p, raw.n, &b);
    jv_set(v, "content", jv_strn(b.p ? b.p : "", b.n));
    jv_set(line, "key", jv_str("file"));
    jv_set(line, "value", v);
    jv_dump(line, &JV_CANON, nd, &e);
    fd_buf_putc(nd, '\n');
    jv_free(line);
    fd_buf_free(&b);
    fd_buf_free(&raw);
    return 0;
}

static void quote_repo_url(fd_buf *b, const char *endpoint, const char *fmt, const char *repo)
{
    fd_buf_printf(b, "%s", endpoint);
    while (b->n && b->p[b->n - 1] == '/') b->n--;
    fd_buf_printf(b, fmt, repo);
}

/* ------------------------------------------------------------ the command */

int fd_publish(const fd_publish_opts *o)
{
    pub p = {.o = o};
    const char *ep = getenv("HF_ENDPOINT");
    p.endpoint = ep && *ep ? ep : FD_HUB_DEFAULT_ENDPOINT;
    struct stat st;
    const char *paths[3][2] = {{o->dataset, "dataset"}, {o->qualification, "qualification"}, {o->job, "job.json"}};
    for (int i = 0; i < 3; i++)
        if (lstat(paths[i][0], &st) || S_ISLNK(st.st_mode))
            return refuse(&p, "publication_source_invalid", "%s %s must be a non-symlink path that exists", paths[i][1],
                          paths[i][0]);
    fd_hub_ref ref;
    fd_err e;
    char refs[400];
    snprintf(refs, sizeof refs, "hf://%s", o->repo);
    if (fd_hub_parse_ref(refs, &ref, &e) || strchr(o->repo, '@') || !strchr(o->repo, '/'))
        return refuse(&p, "publish_refused", "--repo %s is not an owner/name Hub repository id", o->repo);
    char msg[1536];
    jv *qual = NULL;
    if (load_qualification(&p, &qual, msg, sizeof msg)) return refuse(&p, "qualification_invalid", "%s", msg);
    int rc = 3;
    rec local = {0};
    fd_buf nd = {0}, url = {0}, body = {0}, verify_url = {0};
    jv *mj = NULL, *doc = NULL;
    char *fetched = NULL, *tmpcache = NULL;
    if (records(o->dataset, &local, &e)) { rc = refuse(&p, "source_archive_invalid", "%s", e.msg); goto done; }
    char *mpath = fd_path_join(o->dataset, "fidelity-dataset.json");
    mj = read_json(mpath, &e);
    free(mpath);
    const char *local_sha = mj ? jv_get_str(mj, "dataset_sha256") : NULL;
    if (!local_sha) { rc = refuse(&p, "source_archive_invalid", "the dataset manifest names no dataset_sha256"); goto done; }
    struct stat qs;
    stat(o->qualification, &qs);
    if (o->dry_run) {
        printf("DRY RUN -- nothing uploaded, no token read\n");
        printf("  would publish       %s -> %s (dataset_sha256 %s)\n", o->dataset, o->repo, local_sha);
        printf("  files               %zu (%llu bytes) + %s\n", local.paths.n, (unsigned long long)local.total, QUAL_PATH);
        printf("  execution           local (%s; no pod attestation)\n",
               jv_get_str(jv_get(qual, "local_execution"), "device") ? jv_get_str(jv_get(qual, "local_execution"), "device") : "?");
        printf("  expected HEAD       %s\n", o->expected_head);
        rc = 0;
        goto done;
    }
    if (local.total + (uint64_t)qs.st_size > INLINE_MAX) {
        rc = refuse(&p, "publish_refused", "%llu bytes exceed the inline commit bound of %llu bytes (LFS uploads are not "
                    "implemented in this build)", (unsigned long long)local.total, (unsigned long long)INLINE_MAX);
        goto done;
    }
    if (fd_hub_token_load(o->token_file, &p.token, &e)) { rc = refuse(&p, "publish_refused", "%s", e.msg); goto done; }
    if (!p.token) { rc = refuse(&p, "publish_refused", "no Hub token: pass --token-file (mode 0600) or set HF_TOKEN"); goto done; }

    /* the destination HEAD, against --expected-head */
    long status = 0;
    quote_repo_url(&url, p.endpoint, "/api/datasets/%s/revision/main", o->repo);
    if (request(&p, "GET", url.p, 1, NULL, NULL, 0, &status, &body, msg, sizeof msg)) {
        rc = refuse(&p, "publish_refused", "%s", msg);
        goto done;
    }
    char head[64] = "absent";
    if (status == 200) {
        jv *h = jv_parse(body.p, body.n, &e);
        const char *sha = h ? jv_get_str(h, "sha") : NULL;
        int ok = sha && strlen(sha) == 40;
        if (ok) snprintf(head, sizeof head, "%s", sha);
        jv_free(h);
        if (!ok) { rc = refuse(&p, "publish_refused", "the destination HEAD answer names no 40-hex revision"); goto done; }
    } else if (status != 404) {
        rc = refuse(&p, "publish_refused", "reading the destination HEAD: HTTP %ld", status);
        goto done;
    }
    if (strcmp(head, o->expected_head)) {
        rc = refuse(&p, "publish_refused", "destination %s HEAD is %s, not the expected %s; nothing was uploaded", o->repo,
                    head, o->expected_head);
        goto done;
    }
    if (!strcmp(head, "absent")) {
        jv *c = jv_obj();
        const char *slash = strchr(o->repo, '/');
        jv_set(c, "type", jv_str("dataset"));
        jv_set(c, "organization", jv_strn(o->repo, (size_t)(slash - o->repo)));
        jv_set(c, "name", jv_str(slash + 1));
        jv_set(c, "private", jv_bool(0));
        fd_buf cb = {0};
        jv_dump(c, &JV_CANON, &cb, &e);
        jv_free(c);
        url.n = 0;
        quote_repo_url(&url, p.endpoint, "%s", "/api/repos/create");
        int r = request(&p, "POST", url.p, 1, "application/json", cb.p, cb.n, &status, &body, msg, sizeof msg);
        fd_buf_free(&cb);
        if (r) { rc = refuse(&p, "publish_refused", "creating %s: %s", o->repo, msg); goto done; }
        /* 409: the repository exists without a revision (an earlier, refused attempt created it);
         * its HEAD was read as absent just above */
        if (status != 200 && status != 201 && status != 409) {
            rc = refuse(&p, "publish_refused", "creating %s: HTTP %ld", o->repo, status);
            goto done;
        }
    }

    /* one commit: the header, every dataset file, the qualification */
    jv *hv = jv_obj(), *hl = jv_obj();
    jv_set(hv, "summary", jv_str(o->message ? o->message : "publish fidelity dataset"));
    jv_set(hv, "description", jv_str(""));
    if (strcmp(head, "absent")) jv_set(hv, "parentCommit", jv_str(head));
    jv_set(hl, "key", jv_str("header"));
    jv_set(hl, "value", hv);
    jv_dump(hl, &JV_CANON, &nd, &e);
    fd_buf_putc(&nd, '\n');
    jv_free(hl);
    for (size_t i = 0; i < local.paths.n; i++) {
        char *full = fd_path_join(o->dataset, local.paths.v[i]);
        int r = ndjson_file(&nd, full, local.paths.v[i], msg, sizeof msg);
        free(full);
        if (r) { rc = refuse(&p, "publish_refused", "%s", msg); goto done; }
    }
    if (ndjson_file(&nd, o->qualification, QUAL_PATH, msg, sizeof msg)) { rc = refuse(&p, "publish_refused", "%s", msg); goto done; }
    url.n = 0;
    quote_repo_url(&url, p.endpoint, "/api/datasets/%s/commit/main", o->repo);
    if (request(&p, "POST", url.p, 1, "application/x-ndjson", nd.p, nd.n, &status, &body, msg, sizeof msg)) {
        rc = refuse(&p, "publish_refused", "the commit was not confirmed (%s); nothing is reported as published", msg);
        goto done;
    }
    if (status != 200 && status != 201) {
        rc = refuse(&p, "publish_refused", "the commit was not confirmed (HTTP %ld); nothing is reported as published", status);
        goto done;
    }
    jv *cr = jv_parse(body.p, body.n, &e);
    const char *oid = cr ? jv_get_str(cr, "commitOid") : NULL;
    char revision[41] = "";
    int ok = oid && strlen(oid) == 40 && strspn(oid, "0123456789abcdef") == 40;
    if (ok) snprintf(revision, sizeof revision, "%s", oid);
    jv_free(cr);
    if (!ok) { rc = refuse(&p, "publish_refused", "one-commit publication did not return an immutable 40-hex revision"); goto done; }
    printf("published %s -> %s@%s (dataset_sha256 %s)\n", o->dataset, o->repo, revision, local_sha);
    printf("stream-verifying exact public bytes at the immutable revision...\n");
    fflush(stdout);

    /* the anonymous re-download of that revision, verified */
    fd_fetch_opts fo = {.anonymous = 1, .quiet = 1};
    if (o->cache) fo.cache = o->cache;
    else {
        const char *t = getenv("TMPDIR");
        fd_buf tb = {0};
        fd_buf_printf(&tb, "%s/fidelity-publish-XXXXXX", t && *t ? t : "/tmp");
        tmpcache = fd_buf_cstr(&tb);
        if (!mkdtemp(tmpcache)) { rc = refuse(&p, "publish_verify_failed", "cannot create a verification cache: %s", strerror(errno)); free(tmpcache); tmpcache = NULL; goto done; }
        fo.cache = tmpcache;
    }
    char vref[400];
    snprintf(vref, sizeof vref, "hf://%s@%s", o->repo, revision);
    if (fd_hub_fetch(vref, &fo, &fetched, NULL, &e)) { rc = refuse(&p, "publish_verify_failed", "%s", e.msg); goto done; }
    fd_validate_opts vo = {.verify_tensors = 1};
    fd_report vr;
    fd_validate_dataset(fetched, &vo, &vr);
    const char *psha = vr.manifest ? jv_get_str(vr.manifest, "dataset_sha256") : NULL;
    int vbad = vr.n_errors || !psha || strcmp(psha, local_sha);
    char why[1024];
    snprintf(why, sizeof why, "%s", vr.n_errors ? vr.errors[0].message : "the published dataset_sha256 differs from the local one");
    fd_report_free(&vr);
    if (vbad) { rc = refuse(&p, "publish_verify_failed", "%s@%s: %s", o->repo, revision, why); goto done; }
    rec pubr = {0};
    if (records(fetched, &pubr, &e)) { rc = refuse(&p, "publish_verify_failed", "%s", e.msg); goto done; }
    int same = pubr.paths.n == local.paths.n;
    for (size_t i = 0; same && i < local.paths.n; i++)
        same = !strcmp(pubr.paths.v[i], local.paths.v[i]) && !strcmp(pubr.sha[i], local.sha[i]) && pubr.size[i] == local.size[i];
    rec_free(&pubr);
    if (!same) { rc = refuse(&p, "publish_verify_failed", "the published file set differs from the local dataset"); goto done; }
    fd_hub_client anon = {.endpoint = p.endpoint};
    fd_hub_ref vr2;
    fd_hub_parse_ref(vref, &vr2, &e);
    fd_hub_resolve_url(p.endpoint, &vr2, QUAL_PATH, &verify_url);
    fd_buf qb = {0}, lq = {0};
    if (fd_hub_get_mem(&anon, verify_url.p, (size_t)qs.st_size + 1, &qb, &e)) {
        fd_buf_free(&qb);
        rc = refuse(&p, "publish_verify_failed", "%s", e.msg);
        goto done;
    }
    int qsame = !fd_read_file(o->qualification, (size_t)qs.st_size + 1, &lq, &e) && lq.n == qb.n && !memcmp(lq.p, qb.p, qb.n);
    char pq[65];
    fd_sha256_hex(qb.p, qb.n, pq);
    fd_buf_free(&qb);
    fd_buf_free(&lq);
    if (!qsame) { rc = refuse(&p, "publish_qualification_mismatch", "published qualification bytes differ from the local receipt"); goto done; }
    printf("the immutable published dataset and qualification verify\n");
    if (o->receipt) {
        char when[32], qf[65], seal[65];
        fd_utc_now(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ");
        fd_sha256_file(o->qualification, qf, &e);
        doc = jv_obj();
        jv_set(doc, "schema", jv_str("fidelity.publish-root-receipt.v2"));
        jv_set(doc, "receipt_sha256", jv_str(""));
        jv_set(doc, "repository", jv_str(o->repo));
        jv_set(doc, "revision", jv_str(revision));
        jv_set(doc, "revision_immutable", jv_bool(1));
        jv_set(doc, "private", jv_bool(0));
        jv_set(doc, "dataset_sha256", jv_str(local_sha));
        jv_set(doc, "published_dataset_sha256", jv_str(local_sha));
        jv_set(doc, "qualification_receipt_sha256", jv_copy(jv_get(qual, "receipt_sha256")));
        jv_set(doc, "qualification_file_sha256", jv_str(qf));
        jv_set(doc, "published_qualification_file_sha256", jv_str(pq));
        jv_set(doc, "published_at", jv_str(when));
        jv_set(doc, "verified_after_publish", jv_bool(1));
        jv_set(doc, "verified_anonymously", jv_bool(1));
        jv_set(doc, "verified_revision", jv_str(revision));
        jv_set(doc, "result_archive_sha256", jv_null());
        jv_set(doc, "result_archive_bytes", jv_null());
        jv_set(doc, "publication_source", jv_str("local-dataset-tree"));
        jv_set(doc, "execution_kind", jv_str("local"));
        jv_set(doc, "local_execution", jv_copy(jv_get(qual, "local_execution")));
        jv_set(doc, "hf_execution", jv_null());
        jv_seal(doc, "receipt_sha256", seal, &e);
        jv_set(doc, "receipt_sha256", jv_str(seal));
        fd_buf rb = {0};
        jv_dump(doc, &JV_PRETTY, &rb, &e);
        fd_buf_putc(&rb, '\n');
        int wr = fd_write_atomic(o->receipt, rb.p, rb.n, &e);
        fd_buf_free(&rb);
        if (wr) { rc = refuse(&p, "unwritable", "%s (the dataset IS published at %s@%s)", e.msg, o->repo, revision); goto done; }
        printf("publish receipt written to %s (immutable revision %s)\n", o->receipt, revision);
    }
    rc = 0;
done:
    if (tmpcache) { fd_rmtree(tmpcache); free(tmpcache); }
    if (p.token) { explicit_bzero(p.token, strlen(p.token)); free(p.token); }
    rec_free(&local);
    fd_buf_free(&nd);
    fd_buf_free(&url);
    fd_buf_free(&body);
    fd_buf_free(&verify_url);
    jv_free(qual);
    jv_free(mj);
    jv_free(doc);
    free(fetched);
    return rc;
}
