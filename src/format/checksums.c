#include "checksums.h"
#include "paths.h"
#include "sha.h"
#include "json.h"
#include "../util/buf.h"
#include "../util/fsio.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const CRED_FILES[] = {".hf_token", "hf_token", ".env", ".netrc", ".npmrc",
    ".git-credentials", "id_rsa", "id_ed25519", "credentials.json", "service-account.json", NULL};
static const char *const CRED_DIRS[] = {".secrets", ".ssh", ".aws", ".gnupg", ".git", NULL};
static const char *const CRED_SUFFIXES[] = {".pem", ".key", ".p12", ".pfx", NULL};

static int in_list(const char *s, size_t n, const char *const *list)
{
    for (; *list; list++)
        if (strlen(*list) == n && !memcmp(*list, s, n)) return 1;
    return 0;
}

int fd_looks_like_credential(const char *rel)
{
    const char *name = rel;
    for (const char *p = rel; *p;) {
        const char *q = strchr(p, '/');
        if (!q) { name = p; break; }
        if (in_list(p, (size_t)(q - p), CRED_DIRS)) return 1;
        p = q + 1;
    }
    size_t nl = strlen(name);
    if (in_list(name, nl, CRED_FILES) || in_list(name, nl, CRED_DIRS)) return 1;
    for (const char *const *s = CRED_SUFFIXES; *s; s++) {
        size_t sl = strlen(*s);
        if (nl >= sl && !strcmp(name + nl - sl, *s)) return 1;
    }
    return 0;
}

/* Strict UTF-8 as Python's decoder: no overlongs, surrogates or > U+10FFFF. */
static int valid_utf8n(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        int k = fd_utf8_len(p, end);
        if (!k) return 0;
        p += k;
    }
    return 1;
}

static int valid_utf8(const char *s) { return valid_utf8n(s, strlen(s)); }

static int walk(const char *root, const char *rel, fd_strv *out, int depth, fd_err *e)
{
    if (depth > 64) return fd_fail(e, "path_escape", "PATH-4", "%s: directory nesting deeper than 64", root);
    char *dir = *rel ? fd_path_join(root, rel) : fd_xstrdup(root);
    DIR *d = opendir(dir);
    if (!d) {
        int rc = fd_fail(e, "unreadable", "", "%s: %s", dir, strerror(errno));
        free(dir);
        return rc;
    }
    fd_strv names = {0};
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) fd_strv_push(&names, de->d_name);
    closedir(d);
    fd_strv_sort(&names);
    int rc = 0;
    /* Python's os.walk checks sibling directories for symlinks before files. */
    for (int pass = 0; pass < 2 && !rc; pass++) {
        for (size_t i = 0; i < names.n && !rc; i++) {
            char *r = *rel ? fd_path_join(rel, names.v[i]) : fd_xstrdup(names.v[i]);
            char *full = fd_path_join(dir, names.v[i]);
            struct stat st;
            if (lstat(full, &st)) rc = fd_fail(e, "unreadable", "", "%s: %s", full, strerror(errno));
            else if (!valid_utf8(r)) rc = fd_fail(e, "path_escape", "PATH-1", "%s: file name is not UTF-8", full);
            else if (S_ISLNK(st.st_mode)) {
                if (pass == 1 || (stat(full, &st) == 0 && S_ISDIR(st.st_mode)))
                    rc = fd_fail(e, "symlink", "PATH-4", "symlink '%s' under %s (PATH-4)", r, root);
            } else if (S_ISDIR(st.st_mode)) {
                if (pass == 1) rc = walk(root, r, out, depth + 1, e);
            } else if (pass == 1) {
                int excluded = !*rel && (!strcmp(r, "checksums.txt") || !strcmp(r, "fidelity-dataset.json"));
                if (!S_ISREG(st.st_mode))
                    rc = fd_fail(e, "unreadable", "PATH-4", "'%s' under %s is not a regular file", r, root);
                else if (excluded) ;
                else if (fd_looks_like_credential(r))
                    rc = fd_fail(e, "credential_in_tree", "PATH-5",
                                 "'%s' is under the dataset root; sealing it would hash a secret into "
                                 "checksums.txt and publishing would disclose it", r);
                else fd_strv_push(out, r);
            }
            free(r);
            free(full);
        }
    }
    fd_strv_free(&names);
    free(dir);
    return rc;
}

int fd_tree_files(const char *root, fd_strv *out, fd_err *e)
{
    if (walk(root, "", out, 0, e)) { fd_strv_free(out); return -1; }
    fd_strv_sort(out);
    return 0;
}

/* Python str.splitlines() boundaries over UTF-8: \n \r \r\n \v \f \x1c-\x1e,
 * U+0085, U+2028, U+2029.  Returns the length of the break at p (0 if none). */
static size_t line_break(const unsigned char *p, const unsigned char *end)
{
    if (*p == '\r') return (p + 1 < end && p[1] == '\n') ? 2 : 1;
    if (*p == '\n' || *p == '\v' || *p == '\f' || (*p >= 0x1c && *p <= 0x1e)) return 1;
    if (end - p >= 2 && p[0] == 0xC2 && p[1] == 0x85) return 2;
    if (end - p >= 3 && p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) return 3;
    return 0;
}

/* Python str.isspace() for the code points a line can hold. */
static size_t py_space(const unsigned char *p, const unsigned char *end)
{
    if (*p == ' ' || *p == '\t' || (*p >= 0x1c && *p <= 0x1f)) return 1;
    if (end - p >= 2 && p[0] == 0xC2 && (p[1] == 0x85 || p[1] == 0xA0)) return 2;
    if (end - p >= 3) {
        unsigned cp = (p[0] & 0x0Fu) << 12 | (p[1] & 0x3Fu) << 6 | (p[2] & 0x3Fu);
        if ((p[0] & 0xF0) == 0xE0 && (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x202F ||
                                      cp == 0x205F || cp == 0x3000))
            return 3;
    }
    return 0;
}

static int cmp_pair(const void *a, const void *b)
{
    return strcmp(((char *const *)a)[0], ((char *const *)b)[0]);
}

int fd_checksums_parse(const char *text, size_t n, fd_checksums *out, fd_err *e)
{
    memset(out, 0, sizeof *out);
    const unsigned char *p = (const unsigned char *)text, *end = p + n;
    if (memchr(text, 0, n)) return fd_fail(e, "seal_failed", "SEAL-2", "checksums.txt contains a NUL byte");
    if (!valid_utf8n(text, n)) return fd_fail(e, "seal_failed", "SEAL-2", "checksums.txt is not UTF-8");
    char **pairs = NULL;
    size_t np = 0, cap = 0;
    int lineno = 0, rc = 0;
    while (p < end && !rc) {
        const unsigned char *s = p;
        size_t br = 0;
        while (p < end && !(br = line_break(p, end))) p++;
        size_t len = (size_t)(p - s);
        p += br;
        lineno++;
        const unsigned char *q = s;
        while (q < s + len) { size_t k = py_space(q, s + len); if (!k) break; q += k; }
        if (q == s + len) continue; /* blank line */
        if (len < 67 || s[64] != ' ' || s[65] != ' ') {
            rc = fd_fail(e, "seal_failed", "SEAL-2", "checksums.txt line %d is not `<sha256>  <path>`", lineno);
            break;
        }
        char digest[65], *path = fd_xstrndup((const char *)s + 66, len - 66);
        memcpy(digest, s, 64);
        digest[64] = 0;
        fd_err pe;
        if (!fd_is_hex64(digest))
            rc = fd_fail(e, "seal_failed", "SEAL-2", "checksums.txt line %d: bad digest", lineno);
        else if (fd_check_relpath(path, "checksums.txt", 0, &pe))
            rc = fd_fail(e, "seal_failed", "SEAL-2",
                         "checksums.txt line %d names a path that does not stay inside the dataset root (%s)",
                         lineno, pe.msg);
        if (rc) { free(path); break; }
        if (np == cap) { cap = cap ? cap * 2 : 64; pairs = fd_xrealloc(pairs, cap * 2 * sizeof *pairs); }
        pairs[2 * np] = path;
        pairs[2 * np + 1] = fd_xstrdup(digest);
        np++;
    }
    if (!rc && np) {
        qsort(pairs, np, 2 * sizeof *pairs, cmp_pair);
        for (size_t i = 1; i < np && !rc; i++)
            if (!strcmp(pairs[2 * i], pairs[2 * i - 2]))
                rc = fd_fail(e, "seal_failed", "SEAL-2", "checksums.txt lists '%s' twice", pairs[2 * i]);
    }
    for (size_t i = 0; i < np; i++) {
        if (!rc) {
            fd_strv_push(&out->paths, pairs[2 * i]);
            fd_strv_push(&out->digests, pairs[2 * i + 1]);
        }
        free(pairs[2 * i]);
        free(pairs[2 * i + 1]);
    }
    free(pairs);
    return rc;
}

const char *fd_checksums_get(const fd_checksums *c, const char *path)
{
    long i = fd_strv_find(&c->paths, path);
    return i < 0 ? NULL : c->digests.v[i];
}

void fd_checksums_free(fd_checksums *c)
{
    fd_strv_free(&c->paths);
    fd_strv_free(&c->digests);
}

int fd_checksums_write(const char *root, char hex[65], fd_err *e)
{
    fd_strv files = {0};
    if (fd_tree_files(root, &files, e)) return -1;
    fd_buf text = {0};
    int rc = 0;
    for (size_t i = 0; i < files.n && !rc; i++) {
        char *full = fd_path_join(root, files.v[i]);
        char d[65];
        rc = fd_sha256_file(full, d, e);
        if (!rc) fd_buf_printf(&text, "%s  %s\n", d, files.v[i]);
        free(full);
    }
    if (!rc) {
        char *path = fd_path_join(root, "checksums.txt");
        rc = fd_write_atomic(path, text.p ? text.p : "", text.n, e);
        if (!rc) fd_sha256_hex(text.p ? text.p : "", text.n, hex);
        free(path);
    }
    fd_buf_free(&text);
    fd_strv_free(&files);
    return rc;
}

int fd_checksums_verify(const char *root, int allow_partial, fd_err *e)
{
    char *path = fd_path_join(root, "checksums.txt");
    fd_buf text = {0};
    fd_checksums listed = {0};
    fd_strv present = {0};
    int rc = 0;
    if (!fd_is_file(path)) rc = fd_fail(e, "seal_failed", "SEAL-1(c)", "checksums.txt is missing");
    else if (fd_read_file(path, (size_t)1 << 30, &text, e)) rc = -1;
    else if (fd_checksums_parse(text.p, text.n, &listed, e)) rc = -1;
    else if (fd_tree_files(root, &present, e)) rc = -1;
    if (rc) goto done;
    fd_buf names = {0};
    size_t count = 0;
    for (size_t i = 0; i < present.n; i++)
        if (!fd_checksums_get(&listed, present.v[i]) && count++ < 5)
            fd_buf_printf(&names, "%s'%s'", count > 1 ? ", " : "", present.v[i]);
    if (count) {
        rc = fd_fail(e, "unlisted_file", "SEAL-2", "%zu file(s) present but not in checksums.txt: [%s]",
                     count, names.p);
        fd_buf_free(&names);
        goto done;
    }
    for (size_t i = 0; i < listed.paths.n; i++) {
        const char *p = listed.paths.v[i];
        if (fd_strv_find(&present, p) >= 0 || (allow_partial && fd_starts(p, "capture/"))) continue;
        if (count++ < 5) fd_buf_printf(&names, "%s'%s'", count > 1 ? ", " : "", p);
    }
    if (count) {
        rc = fd_fail(e, "missing_file", "SEAL-2", "%zu listed file(s) absent: [%s]%s", count, names.p,
                     allow_partial ? "" : " (--allow-partial covers capture tensors only)");
        fd_buf_free(&names);
        goto done;
    }
    int capture_bad = 0;
    for (size_t i = 0; i < listed.paths.n && !rc; i++) {
        char *full = fd_path_join(root, listed.paths.v[i]);
        char d[65];
        if (fd_is_file(full)) {
            if (fd_sha256_file(full, d, e)) rc = -1;
            else if (strcmp(d, listed.digests.v[i])) {
                if (count++ < 5) fd_buf_printf(&names, "%s'%s'", count > 1 ? ", " : "", listed.paths.v[i]);
                capture_bad |= fd_starts(listed.paths.v[i], "capture/");
            }
        }
        free(full);
    }
    if (!rc && count)
        rc = fd_fail(e, capture_bad ? "tensor_mismatch" : "seal_failed", "SEAL-2",
                     "%zu file(s) do not match checksums.txt: [%s]", count, names.p);
    fd_buf_free(&names);
done:
    fd_checksums_free(&listed);
    fd_strv_free(&present);
    fd_buf_free(&text);
    free(path);
    return rc;
}
