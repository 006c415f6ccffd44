/* One GET against the Hub through libcurl, with the dshub policy:
 * anonymous first and the token only after a 401/403; the Authorization
 * header only to the endpoint's own origin (redirects are followed here, not
 * by libcurl, so every hop is judged); 429/500/502/503/504 and dropped
 * connections retried up to 5 attempts with Retry-After (seconds, capped at
 * 60) or 2**attempt, 300 s in total, each wait announced on stderr; a file
 * download continues from the bytes already on disk with a Range request. */
#include "hub.h"
#include "util/progress.h"
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_ATTEMPTS = 5, MAX_REDIRECTS = 10 };
#define MAX_DELAY 60.0
#define TOTAL_BUDGET 300.0

typedef struct xfer {
    FILE *f;                /* file mode */
    fd_buf *mem;            /* memory mode */
    size_t max;
    long offset;            /* bytes on disk when this response started */
    long status;
    int decided, keep, overflow, range_bad, io_err;
    char retry_after[32], content_range[96];
    const char *label;
    int progress;
    double t0, last;
    curl_off_t got;         /* body bytes kept in this response */
} xfer;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void header_value(const char *line, size_t n, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) || line[nl] != ':') return;
    const char *v = line + nl + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
    size_t l = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
    memcpy(out, v, l);
    out[l] = 0;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud)
{
    xfer *x = ud;
    size_t n = sz * nm;
    if (n > 5 && !strncmp(p, "HTTP/", 5)) { /* a new response (after a 1xx or a redirect) */
        const char *sp = memchr(p, ' ', n);
        x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        x->retry_after[0] = x->content_range[0] = 0;
        x->decided = 0;
    }
    header_value(p, n, "Retry-After", x->retry_after, sizeof x->retry_after);
    header_value(p, n, "Content-Range", x->content_range, sizeof x->content_range);
    return n;
}

/* Decides, at the first body byte, whether this body is the payload. */
static int decide(xfer *x)
{
    x->decided = 1;
    x->keep = x->status == 200 || x->status == 206;
    if (!x->keep || !x->f) return 0;
    if (x->status == 200 && x->offset > 0) { /* the server ignored Range: start over */
        if (ftruncate(fileno(x->f), 0)) { x->io_err = errno; return -1; }
        x->offset = 0;
    }
    if (x->status == 206) {
        long long a = -1;
        if (sscanf(x->content_range, "bytes %lld-", &a) != 1 || a != x->offset) { x->range_bad = 1; return -1; }
    }
    return 0;
}

static size_t on_body(char *p, size_t sz, size_t nm, void *ud)
{
    xfer *x = ud;
    size_t n = sz * nm;
    if (!x->decided && decide(x)) return 0;
    if (!x->keep) return n;
    if (x->mem) {
        if (x->mem->n + n > x->max) { x->overflow = 1; return 0; }
        fd_buf_put(x->mem, p, n);
    } else if (x->max && (uint64_t)x->offset + (uint64_t)x->got + n > x->max) {
        x->overflow = 1;   /* aborted as soon as the body passes the declared size */
        return 0;
    } else if (fwrite(p, 1, n, x->f) != n || fflush(x->f)) { x->io_err = errno; return 0; }
    x->got += (curl_off_t)n;
    return n;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ut, curl_off_t un)
{
    (void)ut; (void)un;
    xfer *x = ud;
    double t = now_s();
    if (!x->progress || t - x->last < 0.5 || !x->keep) return 0;
    x->last = t;
    /* bytes of this file; a resumed part's bytes on disk count, the rate is this response's */
    char what[512];
    snprintf(what, sizeof what, "hub: %s%s", x->label, x->offset ? " (resumed)" : "");
    fd_progress_line(stderr, what, (uint64_t)x->offset + (uint64_t)(dlnow > 0 ? dlnow : 0),
                     dltotal > 0 ? (uint64_t)x->offset + (uint64_t)dltotal : 0, "B", (uint64_t)x->offset,
                     t - x->t0 > 1e-3 ? t - x->t0 : 1e-3, 0);
    return 0;
}

static int transient_net(CURLcode c)
{
    return c == CURLE_PARTIAL_FILE || c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR || c == CURLE_GOT_NOTHING ||
           c == CURLE_OPERATION_TIMEDOUT || c == CURLE_HTTP2_STREAM || c == CURLE_HTTP2;
}

static int transient_status(long s) { return s == 429 || s == 500 || s == 502 || s == 503 || s == 504; }

/* dshub._retry_delay; < 0 means give up. */
static double retry_delay(const char *retry_after, int attempt, double spent)
{
    if (attempt >= MAX_ATTEMPTS) return -1;
    double d = -1;
    if (retry_after && *retry_after) {
        char *end;
        double v = strtod(retry_after, &end);
        if (end != retry_after && !*end && v == v && v >= 0) d = v < MAX_DELAY ? v : MAX_DELAY;
    }
    if (d < 0) d = fmin(MAX_DELAY, pow(2.0, attempt));
    return spent + d > TOTAL_BUDGET ? -1 : d;
}

static void wait_s(double d)
{
    struct timespec ts = {(time_t)d, (long)((d - floor(d)) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {}
}

/* one request of cur on h (reset), the token's header only when with_token; the body and headers go to
 * x (its file continued with a Range request); the HTTP status into *status */
static CURLcode perform(CURL *h, const fd_hub_client *c, const char *cur, int with_token, xfer *x, long *status)
{
    struct curl_slist *hd = NULL;
    char *auth = NULL;
    if (with_token) { /* never to another origin, redirect or not */
        size_t n = strlen(c->token) + 32;
        auth = fd_xmalloc(n);
        snprintf(auth, n, "Authorization: Bearer %s", c->token);
        hd = curl_slist_append(hd, auth);
    }
    if (x->f) {
        fseek(x->f, 0, SEEK_END);
        x->offset = ftell(x->f);
    } else x->mem->n = 0;
    x->status = 0;
    x->decided = x->keep = x->overflow = x->range_bad = x->io_err = 0;
    x->got = 0;
    x->t0 = x->last = now_s();
    char range[32];
    snprintf(range, sizeof range, "%ld-", x->offset);
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, cur);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, FD_HUB_USER_AGENT);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 60L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    if (x->f && x->offset > 0) curl_easy_setopt(h, CURLOPT_RANGE, range);
    CURLcode cc = curl_easy_perform(h);
    curl_slist_free_all(hd);
    if (auth) { explicit_bzero(auth, strlen(auth)); free(auth); }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    return cc;
}

/* what the callbacks refused during the transfer (size, write, Content-Range); -1 with e set */
static int transfer_failed(const xfer *x, const char *cur, fd_err *e)
{
    if (x->overflow && x->f) {
        fd_fail(e, "hub_error", "HUB-SIZE", "%s: the body passes the %zu bytes the dataset's manifests declare for "
                "it: transfer aborted", x->label, x->max);
        return -1;
    }
    if (x->overflow) { fd_fail(e, "hub_error", "HUB-HTTP", "%.300s: response exceeds %zu bytes", cur, x->max); return -1; }
    if (x->io_err) { fd_fail(e, "hub_error", "HUB-CACHE", "%s: write failed: %s", x->label, strerror(x->io_err)); return -1; }
    if (x->range_bad) {
        fd_fail(e, "hub_error", "HUB-HTTP", "%.300s: the 206 answer's Content-Range '%s' does not continue at byte %ld",
                cur, x->content_range, x->offset);
        return -1;
    }
    return 0;
}

static int get(fd_hub_client *c, const char *url, xfer *x, fd_err *e)
{
    fd_origin ep;
    if (fd_url_origin(c->endpoint, &ep))
        return fd_fail(e, "hub_error", "HUB-HTTP", "HF_ENDPOINT '%.200s' is not an http(s) URL", c->endpoint);
    CURL *h = curl_easy_init();
    if (!h) return fd_fail(e, "hub_error", "HUB-NET", "%s: libcurl did not initialise", url);
    char *cur = fd_xstrdup(url);
    int use_token = 0, attempt = 0, redirects = 0, rc = -1;
    for (;;) {
        fd_origin o;
        if (fd_url_origin(cur, &o) || (strcmp(o.scheme, "http") && strcmp(o.scheme, "https"))) {
            fd_fail(e, "hub_error", "HUB-HTTP", "%.300s: not an http(s) URL", cur);
            break;
        }
        long status = 0;
        CURLcode cc = perform(h, c, cur, use_token && fd_origin_equal(&o, &ep), x, &status);
        if (transfer_failed(x, cur, e)) break;
        double d;
        if (cc != CURLE_OK) {
            if (!transient_net(cc) || (d = retry_delay(NULL, ++attempt, c->retry_spent)) < 0) {
                fd_fail(e, "hub_error", "HUB-NET", "network error for %.300s: %s%s", cur, curl_easy_strerror(cc),
                        transient_net(cc) ? " (retries exhausted)" : "");
                break;
            }
            fprintf(stderr, "hub: network error for %s (%s) after %lld bytes -- transient, waiting %.1fs%s "
                    "(attempt %d of %d)\n", cur, curl_easy_strerror(cc), (long long)(x->offset + x->got), d,
                    x->f ? ", then resuming with a Range request" : "", attempt, MAX_ATTEMPTS);
            wait_s(d);
            c->retry_spent += d;
            continue;
        }
        if (status == 200 || status == 206) { rc = 0; break; }
        if (status >= 300 && status < 400 && status != 304) {
            char *loc = NULL;
            curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &loc);
            if (!loc || ++redirects > MAX_REDIRECTS) {
                fd_fail(e, "hub_error", "HUB-HTTP", "HTTP %ld for %.300s: %s", status, cur,
                        loc ? "too many redirects" : "redirect without a Location");
                break;
            }
            char *next = fd_xstrdup(loc);
            free(cur);
            cur = next;
            continue;
        }
        if (status == 416 && x->f && x->offset > 0) { /* the part is stale: start the file again */
            if (ftruncate(fileno(x->f), 0)) { fd_fail(e, "hub_error", "HUB-CACHE", "%s: %s", x->label, strerror(errno)); break; }
            free(cur);
            cur = fd_xstrdup(url);
            continue;
        }
        if ((status == 401 || status == 403) && c->token && !use_token) { /* anonymous first, then the token */
            use_token = 1;
            free(cur);
            cur = fd_xstrdup(url);
            redirects = 0;
            continue;
        }
        if (transient_status(status) && (d = retry_delay(x->retry_after, ++attempt, c->retry_spent)) >= 0) {
            fprintf(stderr, "hub: HTTP %ld for %s -- transient, waiting %.1fs (attempt %d of %d)\n", status, cur, d,
                    attempt, MAX_ATTEMPTS);
            wait_s(d);
            c->retry_spent += d;
            free(cur);
            cur = fd_xstrdup(url);
            redirects = 0;
            continue;
        }
        fd_fail(e, "hub_error", "HUB-HTTP", "HTTP %ld for %.300s%s", status, cur,
                (status == 401 || status == 403) ? (c->token ? " (with the token)" : " (anonymous; no token available)")
                : transient_status(status) ? " (retries exhausted)" : "");
        break;
    }
    free(cur);
    curl_easy_cleanup(h);
    return rc;
}

int fd_hub_get_mem(fd_hub_client *c, const char *url, size_t max, fd_buf *out, fd_err *e)
{
    xfer x = {.mem = out, .max = max, .label = url};
    int rc = get(c, url, &x, e);
    fd_buf_cstr(out);
    return rc;
}

int fd_hub_get_file(fd_hub_client *c, const char *url, const char *part_path, const char *label, size_t max, fd_err *e)
{
    FILE *f = fopen(part_path, "ab");
    if (!f) return fd_fail(e, "hub_error", "HUB-CACHE", "%s: %s", part_path, strerror(errno));
    xfer x = {.f = f, .label = label, .progress = c->progress, .max = max};
    int rc = get(c, url, &x, e);
    if (fclose(f) && !rc) rc = fd_fail(e, "hub_error", "HUB-CACHE", "%s: %s", part_path, strerror(errno));
    return rc;
}
