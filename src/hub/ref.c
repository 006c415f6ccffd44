/* hf:// references and the Hub's resolve URLs. */
#include "hub.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fd_hub_is_ref(const char *s) { return s && !strncmp(s, "hf://", 5); }

static int repo_part_ok(const char *p, size_t n)
{
    if (!n || n > 96 || !isalnum((unsigned char)p[0])) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!(isalnum(c) || c == '.' || c == '_' || c == '-')) return 0;
    }
    return !(n >= 4 && !memcmp(p + n - 4, ".git", 4));
}

/* The revision becomes a cache directory name, so "." and ".." segments and
 * anything outside a conservative alphabet are refused outright. */
static int revision_ok(const char *r)
{
    size_t n = strlen(r);
    if (!n || r[0] == '/' || r[n - 1] == '/') return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)r[i];
        if (!(isalnum(c) || c == '.' || c == '_' || c == '-' || c == '/')) return 0;
    }
    for (const char *p = r; *p;) {
        size_t l = strcspn(p, "/");
        if (!l || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.')) return 0;
        p += l + (p[l] ? 1 : 0);
    }
    return 1;
}

int fd_hub_parse_ref(const char *s, fd_hub_ref *r, fd_err *e)
{
    memset(r, 0, sizeof *r);
    if (!fd_hub_is_ref(s)) return fd_fail(e, "hub_error", "HUB-REF", "'%.200s' is not an hf:// reference", s ? s : "");
    const char *t = s + 5, *at = strrchr(t, '@');
    size_t repo_n = at ? (size_t)(at - t) : strlen(t);
    const char *rev = at ? at + 1 : "main";
    const char *slash = memchr(t, '/', repo_n);
    if (!slash || memchr(slash + 1, '/', repo_n - (size_t)(slash + 1 - t)) || repo_n >= sizeof r->repo ||
        !repo_part_ok(t, (size_t)(slash - t)) || !repo_part_ok(slash + 1, repo_n - (size_t)(slash + 1 - t)))
        return fd_fail(e, "hub_error", "HUB-REF", "'%.200s': the repository must be exact owner/name "
                       "(letters, digits, '.', '_', '-'; each part 1..96, not ending in .git)", s);
    for (size_t i = 0; i + 1 < repo_n; i++)
        if ((t[i] == '-' && t[i + 1] == '-') || (t[i] == '.' && t[i + 1] == '.'))
            return fd_fail(e, "hub_error", "HUB-REF", "'%.200s': the Hub forbids '--' and '..' in a repo id", s);
    if (strlen(rev) >= sizeof r->revision || !revision_ok(rev))
        return fd_fail(e, "hub_error", "HUB-REF", "'%.200s': the revision must be non-empty [A-Za-z0-9._/-] "
                       "without '.' or '..' segments", s);
    memcpy(r->repo, t, repo_n);
    strcpy(r->revision, rev);
    return 0;
}

void fd_hub_resolve_url(const char *endpoint, const fd_hub_ref *r, const char *path, fd_buf *out)
{
    size_t n = strlen(endpoint);
    while (n && endpoint[n - 1] == '/') n--;
    fd_buf_put(out, endpoint, n);
    fd_buf_printf(out, "/datasets/%s/resolve/", r->repo);
    fd_buf_url_quote(out, r->revision, "");
    fd_buf_putc(out, '/');
    fd_buf_url_quote(out, path, "/");
    fd_buf_cstr(out);
}

int fd_url_origin(const char *url, fd_origin *o)
{
    memset(o, 0, sizeof *o);
    const char *sep = strstr(url, "://");
    if (!sep || sep == url || (size_t)(sep - url) >= sizeof o->scheme) return -1;
    for (size_t i = 0; url + i < sep; i++) o->scheme[i] = (char)tolower((unsigned char)url[i]);
    const char *h = sep + 3, *end = h + strcspn(h, "/?#");
    const char *at = NULL;
    for (const char *p = h; p < end; p++) if (*p == '@') at = p;
    if (at) h = at + 1;
    const char *colon = NULL;
    if (*h == '[') { /* IPv6 literal */
        const char *rb = memchr(h, ']', (size_t)(end - h));
        if (!rb) return -1;
        colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
    } else colon = memchr(h, ':', (size_t)(end - h));
    const char *hend = colon ? colon : end;
    if (hend == h || (size_t)(hend - h) >= sizeof o->host) return -1;
    for (size_t i = 0; h + i < hend; i++) o->host[i] = (char)tolower((unsigned char)h[i]);
    if (colon) {
        char *pe;
        long p = strtol(colon + 1, &pe, 10);
        if (pe != end || p <= 0 || p > 65535) return -1;
        o->port = (int)p;
    } else o->port = !strcmp(o->scheme, "https") ? 443 : !strcmp(o->scheme, "http") ? 80 : -1;
    return o->port < 0 ? -1 : 0;
}

int fd_origin_equal(const fd_origin *a, const fd_origin *b)
{
    return !strcmp(a->scheme, b->scheme) && !strcmp(a->host, b->host) && a->port == b->port;
}
