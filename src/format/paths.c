#include "paths.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fd_starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

int fd_normpath(const char *in, char *out, size_t cap)
{
    size_t n = strlen(in);
    char *tmp = malloc(n + 1);
    const char **seg = malloc((n / 1 + 2) * sizeof *seg);
    if (!tmp || !seg) { free(tmp); free(seg); return -1; }
    memcpy(tmp, in, n + 1);
    int lead = 0;
    while (tmp[lead] == '/') lead++;
    int initial = lead == 2 ? 2 : lead ? 1 : 0; /* POSIX keeps exactly two */
    size_t ns = 0;
    for (char *save = NULL, *t = strtok_r(tmp, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (!strcmp(t, ".")) continue;
        if (!strcmp(t, "..")) {
            if (ns && strcmp(seg[ns - 1], "..")) { ns--; continue; }
            if (initial) continue; /* "/.." is "/" */
        }
        seg[ns++] = t;
    }
    size_t w = 0;
    int rc = 0;
    for (int i = 0; i < initial && w + 1 < cap; i++) out[w++] = '/';
    for (size_t i = 0; i < ns; i++) {
        size_t l = strlen(seg[i]);
        if (w + l + 2 > cap) { rc = -1; break; }
        if (i) out[w++] = '/';
        memcpy(out + w, seg[i], l);
        w += l;
    }
    if (!rc && w == 0) { if (cap < 2) rc = -1; else out[w++] = '.'; }
    if (cap) out[w < cap ? w : cap - 1] = 0;
    free(tmp);
    free(seg);
    return rc;
}

int fd_check_relpath(const char *v, const char *owner, int allow_parent, fd_err *e)
{
    const char *o = owner ? owner : "";
    if (!v || !*v) return fd_fail(e, "path_escape", "PATH-1", "%s: path must be a non-empty string", o);
    const char *slash = strchr(v, '/');
    size_t first = slash ? (size_t)(slash - v) : strlen(v);
    if (v[0] == '/' || v[0] == '\\' || memchr(v, ':', first))
        return fd_fail(e, "path_escape", "PATH-1", "%s: absolute path '%s'", o, v);
    if (strstr(v, "://")) return fd_fail(e, "path_escape", "PATH-1", "%s: URI '%s' is not a dataset path", o, v);
    int has_parent = 0;
    for (const char *p = v; *p;) {
        const char *q = strchr(p, '/');
        size_t l = q ? (size_t)(q - p) : strlen(p);
        if (l == 2 && p[0] == '.' && p[1] == '.') has_parent = 1;
        p += l + (q ? 1 : 0);
        if (!q) break;
    }
    if (has_parent && !allow_parent)
        return fd_fail(e, "path_escape", "PATH-3",
                       "%s: '%s' uses '..'; permitted only under compat/ or on the runtime_manifest field", o, v);
    char norm[4096];
    if (fd_normpath(v, norm, sizeof norm)) return fd_fail(e, "path_escape", "PATH-1", "%s: path too long", o);
    if (!strcmp(norm, ".")) return fd_fail(e, "path_escape", "PATH-1", "%s: '%s' is not a file path", o, v);
    if ((!strcmp(norm, "..") || fd_starts(norm, "../")) && !allow_parent)
        return fd_fail(e, "path_escape", "PATH-1", "%s: '%s' escapes the dataset root", o, v);
    return 0;
}

int fd_join_norm(const char *base, const char *rel, char *out, size_t cap)
{
    size_t bl = strlen(base), rl = strlen(rel);
    char *j = malloc(bl + rl + 2);
    if (!j) return -1;
    if (rel[0] == '/' || !bl) memcpy(j, rel, rl + 1);
    else { memcpy(j, base, bl); j[bl] = '/'; memcpy(j + bl + 1, rel, rl + 1); }
    int rc = fd_normpath(j, out, cap);
    free(j);
    return rc;
}

void fd_dirname(const char *path, char *out, size_t cap)
{
    const char *s = strrchr(path, '/');
    size_t l = s ? (size_t)(s - path) : 0;
    if (l >= cap) l = cap - 1;
    memcpy(out, path, l);
    out[l] = 0;
}

void fd_path_component(const char *s, char *out, size_t cap)
{
    size_t n = 0, lim = cap ? (cap - 1 < 80 ? cap - 1 : 80) : 0;
    if (!cap) return;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p && n < lim; p++) {
        unsigned c = *p;
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                 c == '+' || c == '-';
        out[n] = ok && !(n == 0 && c == '.') ? (char)c : '_';
        n++;
    }
    if (!n && lim) out[n++] = '_';
    out[n] = 0;
}
