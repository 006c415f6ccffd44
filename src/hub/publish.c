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

typedef struct xreq {
    const jv *headers;      /* extra headers the server handed out (an LFS action), strings only */
    const char *accept;
    FILE *upload;           /* PUT body streamed from this file */
    uint64_t upload_size;
} xreq;

static size_t on_read(char *d, size_t sz, size_t nm, void *ud)
{
    return fread(d, 1, sz * nm, (FILE *)ud);
}

/* One request: no redirect is followed, the token (when asked for) goes
 * only to the endpoint's own origin; an LFS storage URL gets only the
 * headers its action names. */
static int request_x(const pub *p, const char *method, const char *url, int with_token, const char *ctype,
                     const void *body, size_t n, const xreq *x, long *status, fd_buf *out, char *msg, size_t cap);

static int request(const pub *p, const char *method, const char *url, int with_token, const char *ctype,
                   const void *body, size_t n, long *status, fd_buf *out, char *msg, size_t cap)
{
    return request_x(p, method, url, with_token, ctype, body, n, NULL, status, out, msg, cap);
}

static int request_x(const pub *p, const char *method, const char *url, int with_token, const char *ctype,
                     const void *body, size_t n, const xreq *x, long *status, fd_buf *out, char *msg, size_t cap)
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
    char ct[96], ac[96];
    if (ctype) { snprintf(ct, sizeof ct, "Content-Type: %s", ctype); hd = curl_slist_append(hd, ct); }
    if (x && x->accept) { snprintf(ac, sizeof ac, "Accept: %s", x->accept); hd = curl_slist_append(hd, ac); }
    hd = curl_slist_append(hd, "Expect:");
    for (size_t i = 0; x && x->headers && x->headers->t == JV_OBJ && i < x->headers->u.o.n; i++) {
        const jv_member *m = &x->headers->u.o.m[i];
        if (m->v->t != JV_STR || !*m->k || strpbrk(m->k, ":\r\n ") || strpbrk(m->v->u.s.p, "\r\n")) {
            curl_slist_free_all(hd);
            if (auth) { explicit_bzero(auth, strlen(auth)); free(auth); }
            curl_easy_cleanup(h);
            snprintf(msg, cap, "%s: the server handed out an unusable header", url);
            return -1;
        }
        fd_buf hl = {0};
        fd_buf_printf(&hl, "%s: %s", m->k, m->v->u.s.p);
        hd = curl_slist_append(hd, hl.p);
        fd_buf_free(&hl);
    }
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
    } else if (x && x->upload) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, x->upload);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)x->upload_size);
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

/* ------------------------------------------------------------ uploads */

typedef struct upfile {
    const char *repo_path;  /* borrowed */
    char *path;             /* local file */
    uint64_t size;
    char sha[65];
    int lfs;
} upfile;

/* POST /api/datasets/R/preupload/main: the Hub says, per file, regular or lfs. */
static int upload_modes(const pub *p, upfile *f, size_t n, char *msg, size_t cap)
{
    jv *files = jv_arr();
    fd_err e;
    for (size_t i = 0; i < n; i++) {
        unsigned char sample[512];
        FILE *fp = fopen(f[i].path, "rb");
        size_t got = fp ? fread(sample, 1, sizeof sample, fp) : 0;
        if (fp) fclose(fp);
        fd_buf b = {0};
        base64(sample, got, &b);
        jv *o = jv_obj();
        jv_set(o, "path", jv_str(f[i].repo_path));
        jv_set(o, "size", jv_int((int64_t)f[i].size));
        jv_set(o, "sample", jv_strn(b.p ? b.p : "", b.n));
        fd_buf_free(&b);
        jv_push(files, o);
    }
    jv *body = jv_obj();
    jv_set(body, "files", files);
    fd_buf bb = {0}, url = {0}, out = {0};
    jv_dump(body, &JV_CANON, &bb, &e);
    jv_free(body);
    quote_repo_url(&url, p->endpoint, "/api/datasets/%s/preupload/main", p->o->repo);
    long status = 0;
    int rc = request(p, "POST", url.p, 1, "application/json", bb.p, bb.n, &status, &out, msg, cap);
    jv *r = NULL;
    if (!rc && status != 200) { snprintf(msg, cap, "preupload: HTTP %ld", status); rc = -1; }
    if (!rc && !(r = jv_parse(out.p, out.n, &e))) { snprintf(msg, cap, "preupload: %s", e.msg); rc = -1; }
    const jv *rf = r ? jv_get(r, "files") : NULL;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *mode = NULL;
        for (size_t k = 0; rf && rf->t == JV_ARR && k < rf->u.a.n; k++) {
            const char *pp = jv_get_str(rf->u.a.v[k], "path");
            if (pp && !strcmp(pp, f[i].repo_path)) mode = jv_get_str(rf->u.a.v[k], "uploadMode");
        }
        if (!mode || (strcmp(mode, "lfs") && strcmp(mode, "regular"))) {
            snprintf(msg, cap, "preupload names no upload mode for %s", f[i].repo_path);
            rc = -1;
        } else f[i].lfs = !strcmp(mode, "lfs");
    }
    jv_free(r);
    fd_buf_free(&bb);
    fd_buf_free(&url);
    fd_buf_free(&out);
    return rc;
}

/* The LFS batch API, then each upload action (PUT, streamed, with only the
 * headers the action names: never the token) and its verify action. */
static int lfs_upload(const pub *p, upfile *f, size_t n, char *msg, size_t cap)
{
    jv *objs = jv_arr(), *tr = jv_arr();
    fd_err e;
    for (size_t i = 0; i < n; i++) {
        if (!f[i].lfs) continue;
        jv *o = jv_obj();
        jv_set(o, "oid", jv_str(f[i].sha));
        jv_set(o, "size", jv_int((int64_t)f[i].size));
        jv_push(objs, o);
    }
    jv_push(tr, jv_str("basic"));
    jv *body = jv_obj();
    jv_set(body, "operation", jv_str("upload"));
    jv_set(body, "transfers", tr);
    jv_set(body, "hash_algo", jv_str("sha256"));
    jv_set(body, "objects", objs);
    fd_buf bb = {0}, url = {0}, out = {0};
    jv_dump(body, &JV_CANON, &bb, &e);
    jv_free(body);
    quote_repo_url(&url, p->endpoint, "/datasets/%s.git/info/lfs/objects/batch", p->o->repo);
    xreq lx = {.accept = "application/vnd.git-lfs+json"};
    long status = 0;
    int rc = request_x(p, "POST", url.p, 1, "application/vnd.git-lfs+json", bb.p, bb.n, &lx, &status, &out, msg, cap);
    jv *r = NULL;
    if (!rc && status != 200) { snprintf(msg, cap, "LFS batch: HTTP %ld", status); rc = -1; }
    if (!rc && !(r = jv_parse(out.p, out.n, &e))) { snprintf(msg, cap, "LFS batch: %s", e.msg); rc = -1; }
    const jv *ro = r ? jv_get(r, "objects") : NULL;
    for (size_t k = 0; !rc && ro && ro->t == JV_ARR && k < ro->u.a.n; k++) {
        const jv *ob = ro->u.a.v[k], *act = jv_get(ob, "actions");
        const char *oid = jv_get_str(ob, "oid");
        if (jv_get(ob, "error")) { snprintf(msg, cap, "LFS batch refused object %s", oid ? oid : "?"); rc = -1; break; }
        const jv *up = jv_get(act, "upload"), *ver = jv_get(act, "verify");
        if (!up) continue; /* the Hub has it already */
        const upfile *uf = NULL;
        for (size_t i = 0; oid && i < n; i++)
            if (f[i].lfs && !strcmp(f[i].sha, oid)) uf = &f[i];
        const char *href = jv_get_str(up, "href");
        if (!uf || !href) { snprintf(msg, cap, "LFS batch answered an object it was not asked for"); rc = -1; break; }
        FILE *fp = fopen(uf->path, "rb");
        if (!fp) { snprintf(msg, cap, "%s: %s", uf->path, strerror(errno)); rc = -1; break; }
        xreq ux = {.headers = jv_get(up, "header"), .upload = fp, .upload_size = uf->size};
        rc = request_x(p, "PUT", href, 0, NULL, NULL, 0, &ux, &status, &out, msg, cap);
        fclose(fp);
        if (!rc && (status < 200 || status > 299)) {
            snprintf(msg, cap, "the LFS upload of %s was not accepted (HTTP %ld)", uf->repo_path, status);
            rc = -1;
        }
        if (!rc && ver && jv_get_str(ver, "href")) {
            jv *vb = jv_obj();
            jv_set(vb, "oid", jv_str(uf->sha));
            jv_set(vb, "size", jv_int((int64_t)uf->size));
            fd_buf vbb = {0};
            jv_dump(vb, &JV_CANON, &vbb, &e);
            jv_free(vb);
            xreq vx = {.headers = jv_get(ver, "header"), .accept = "application/vnd.git-lfs+json"};
            rc = request_x(p, "POST", jv_get_str(ver, "href"), 0, "application/vnd.git-lfs+json", vbb.p, vbb.n, &vx,
                           &status, &out, msg, cap);
            fd_buf_free(&vbb);
            if (!rc && (status < 200 || status > 299)) {
                snprintf(msg, cap, "the LFS verify of %s failed (HTTP %ld)", uf->repo_path, status);
                rc = -1;
            }
        }
    }
    jv_free(r);
    fd_buf_free(&bb);
    fd_buf_free(&url);
    fd_buf_free(&out);
    return rc;
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
    upfile *upf = NULL;
    size_t n_upf = 0;
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

    /* the files and the Hub's upload mode for each (preupload): small text
     * files inline, the rest through LFS */
    size_t nf = local.paths.n + 1;
    upf = fd_xcalloc(nf, sizeof *upf);
    n_upf = nf;
    for (size_t i = 0; i < local.paths.n; i++) {
        upf[i].repo_path = local.paths.v[i];
        upf[i].path = fd_path_join(o->dataset, local.paths.v[i]);
        upf[i].size = local.size[i];
        memcpy(upf[i].sha, local.sha[i], 65);
    }
    upf[nf - 1].repo_path = QUAL_PATH;
    upf[nf - 1].path = fd_xstrdup(o->qualification);
    upf[nf - 1].size = (uint64_t)qs.st_size;
    if (fd_sha256_file(o->qualification, upf[nf - 1].sha, &e)) { rc = refuse(&p, "publish_refused", "%s", e.msg); goto done; }
    if (upload_modes(&p, upf, nf, msg, sizeof msg)) { rc = refuse(&p, "publish_refused", "%s", msg); goto done; }
    uint64_t inline_total = 0;
    size_t n_lfs = 0;
    for (size_t i = 0; i < nf; i++) {
        if (upf[i].lfs) n_lfs++;
        else inline_total += upf[i].size;
    }
    if (inline_total > INLINE_MAX) {
        rc = refuse(&p, "publish_refused", "%llu bytes of regular (non-LFS) files exceed the inline commit bound of %llu",
                    (unsigned long long)inline_total, (unsigned long long)INLINE_MAX);
        goto done;
    }
    if (n_lfs && lfs_upload(&p, upf, nf, msg, sizeof msg)) {
        rc = refuse(&p, "publish_refused", "%s; no commit was made, nothing is reported as published", msg);
        goto done;
    }

    /* one commit: the header, every file (inline or by its LFS oid), the qualification */
    jv *hv = jv_obj(), *hl = jv_obj();
    jv_set(hv, "summary", jv_str(o->message ? o->message : "publish fidelity dataset"));
    jv_set(hv, "description", jv_str(""));
    if (strcmp(head, "absent")) jv_set(hv, "parentCommit", jv_str(head));
    jv_set(hl, "key", jv_str("header"));
    jv_set(hl, "value", hv);
    jv_dump(hl, &JV_CANON, &nd, &e);
    fd_buf_putc(&nd, '\n');
    jv_free(hl);
    for (size_t i = 0; i < nf; i++) {
        if (upf[i].lfs) {
            jv *v = jv_obj(), *line = jv_obj();
            jv_set(v, "path", jv_str(upf[i].repo_path));
            jv_set(v, "algo", jv_str("sha256"));
            jv_set(v, "oid", jv_str(upf[i].sha));
            jv_set(v, "size", jv_int((int64_t)upf[i].size));
            jv_set(line, "key", jv_str("lfsFile"));
            jv_set(line, "value", v);
            jv_dump(line, &JV_CANON, &nd, &e);
            fd_buf_putc(&nd, '\n');
            jv_free(line);
        } else if (ndjson_file(&nd, upf[i].path, upf[i].repo_path, msg, sizeof msg)) {
            rc = refuse(&p, "publish_refused", "%s", msg);
            goto done;
        }
    }
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
    for (size_t i = 0; i < n_upf; i++) free(upf[i].path);
    free(upf);
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
