/* publish: the Hub's HTTP commit API through libcurl (requests, preupload,
 * the LFS batch API, the one NDJSON commit). */
#include "publish_internal.h"
#include "hub.h"
#include "format/json.h"
#include "util/fsio.h"
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RESP_MAX ((size_t)1 << 20)

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
    if (fd_read_file(path, (size_t)FD_PUB_INLINE_MAX, &raw, &e)) { snprintf(msg, cap, "%s", e.msg); return -1; }
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

void fd_pub_repo_url(fd_buf *b, const char *endpoint, const char *fmt, const char *repo)
{
    fd_buf_printf(b, "%s", endpoint);
    while (b->n && b->p[b->n - 1] == '/') b->n--;
    fd_buf_printf(b, fmt, repo);
}

/* ------------------------------------------------------------ uploads */

/* POST /api/datasets/R/preupload/main: the Hub says, per file, regular or lfs. */
int fd_pub_upload_modes(const pub *p, upfile *f, size_t n, char *msg, size_t cap)
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
    fd_pub_repo_url(&url, p->endpoint, "/api/datasets/%s/preupload/main", p->o->repo);
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
int fd_pub_lfs_upload(const pub *p, upfile *f, size_t n, char *msg, size_t cap)
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
    fd_pub_repo_url(&url, p->endpoint, "/datasets/%s.git/info/lfs/objects/batch", p->o->repo);
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

int fd_pub_request(const pub *p, const char *method, const char *url, int with_token, const char *ctype,
                   const void *body, size_t n, long *status, fd_buf *out, char *msg, size_t cap)
{
    return request(p, method, url, with_token, ctype, body, n, status, out, msg, cap);
}

/* ------------------------------------------------------------ the commit */

static void ndjson_line(fd_buf *nd, const char *key, jv *value)
{
    fd_err e;
    jv *line = jv_obj();
    jv_set(line, "key", jv_str(key));
    jv_set(line, "value", value);
    jv_dump(line, &JV_CANON, nd, &e);
    fd_buf_putc(nd, '\n');
    jv_free(line);
}

int fd_pub_commit(const pub *p, const upfile *f, size_t n, const char *head, char revision[41], char *msg, size_t cap)
{
    fd_buf nd = {0}, url = {0}, body = {0};
    fd_err e;
    int rc = -1;
    jv *hv = jv_obj();
    jv_set(hv, "summary", jv_str(p->o->message ? p->o->message : "publish fidelity dataset"));
    jv_set(hv, "description", jv_str(""));
    if (strcmp(head, "absent")) jv_set(hv, "parentCommit", jv_str(head));
    ndjson_line(&nd, "header", hv);
    for (size_t i = 0; i < n; i++) {
        if (f[i].lfs) {
            jv *v = jv_obj();
            jv_set(v, "path", jv_str(f[i].repo_path));
            jv_set(v, "algo", jv_str("sha256"));
            jv_set(v, "oid", jv_str(f[i].sha));
            jv_set(v, "size", jv_int((int64_t)f[i].size));
            ndjson_line(&nd, "lfsFile", v);
        } else if (ndjson_file(&nd, f[i].path, f[i].repo_path, msg, cap)) {
            goto out;
        }
    }
    fd_pub_repo_url(&url, p->endpoint, "/api/datasets/%s/commit/main", p->o->repo);
    long status = 0;
    char why[1024];
    if (request(p, "POST", url.p, 1, "application/x-ndjson", nd.p, nd.n, &status, &body, why, sizeof why)) {
        snprintf(msg, cap, "the commit was not confirmed (%s); nothing is reported as published", why);
        goto out;
    }
    if (status != 200 && status != 201) {
        snprintf(msg, cap, "the commit was not confirmed (HTTP %ld); nothing is reported as published", status);
        goto out;
    }
    jv *cr = jv_parse(body.p, body.n, &e);
    const char *oid = cr ? jv_get_str(cr, "commitOid") : NULL;
    if (oid && strlen(oid) == 40 && strspn(oid, "0123456789abcdef") == 40) {
        snprintf(revision, 41, "%s", oid);
        rc = 0;
    } else snprintf(msg, cap, "one-commit publication did not return an immutable 40-hex revision");
    jv_free(cr);
out:
    fd_buf_free(&nd);
    fd_buf_free(&url);
    fd_buf_free(&body);
    return rc;
}
