/* The verified, resumable fetch of an hf:// dataset into the cache:
 *   <cache>/<owner__name>/<rev>            verified files only
 *   <cache>/<owner__name>/.partial-<rev>/  *.part downloads in progress
 *   <cache>/<owner__name>/.lock-<rev>      flock: one fetch per repo+revision
 * The manifest comes first (schema v1, its own seal), then checksums.txt
 * (bound by seal.checksums_sha256); every listed path is checked before any
 * write; each file is hashed in the staging area and only a match is renamed
 * into place.  A refusal removes the staging area; a killed run leaves it,
 * and the next run continues each .part with a Range request. */
#include "hub.h"
#include "format/checksums.h"
#include "format/json.h"
#include "format/paths.h"
#include "format/safetensors.h"
#include "format/sha.h"
#include "util/fsio.h"
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST "fidelity-dataset.json"
#define DATASET_SCHEMA "malaiwah.fidelity-dataset.v1"
#define SMALL_MAX ((size_t)64 << 20)

static char *default_cache(fd_err *e)
{
    const char *v = getenv("FIDELITY_CACHE");
    if (v && *v) return fd_xstrdup(v);
    fd_buf b = {0};
    if ((v = getenv("XDG_CACHE_HOME")) && *v) fd_buf_printf(&b, "%s/fidelity/datasets", v);
    else if ((v = getenv("HOME")) && *v) fd_buf_printf(&b, "%s/.cache/fidelity/datasets", v);
    else { fd_fail(e, "hub_error", "HUB-CACHE", "no --cache, FIDELITY_CACHE or HOME to place the download"); return NULL; }
    return fd_buf_cstr(&b);
}

/* A directory we own: created if absent, never a symlink. */
static int own_dir(const char *p, fd_err *e)
{
    struct stat st;
    if (lstat(p, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return 0;
        return fd_fail(e, "hub_error", "HUB-CACHE", "%s: exists and is not a directory (symlinks are never followed)", p);
    }
    if (mkdir(p, 0755) && errno != EEXIST) return fd_fail(e, "hub_error", "HUB-CACHE", "%s: %s", p, strerror(errno));
    return 0;
}

/* mkdir -p for the directories of rel under root, refusing any symlink. */
static int own_parents(const char *root, const char *rel, fd_err *e)
{
    fd_buf p = {0};
    fd_buf_puts(&p, root);
    int rc = 0;
    for (const char *s = rel, *slash; !rc && (slash = strchr(s, '/')); s = slash + 1) {
        fd_buf_putc(&p, '/');
        fd_buf_put(&p, s, (size_t)(slash - s));
        rc = own_dir(fd_buf_cstr(&p), e);
    }
    fd_buf_free(&p);
    return rc;
}

static char *joinf(const char *a, const char *b, const char *suffix)
{
    fd_buf p = {0};
    fd_buf_printf(&p, "%s/%s%s", a, b, suffix ? suffix : "");
    return fd_buf_cstr(&p);
}

/* Every listed path relative, inside, and not one of the two root files. */
static int check_listing(const fd_checksums *c, const char *cks_name, const char *ref, fd_err *e)
{
    for (size_t i = 0; i < c->paths.n; i++) {
        const char *p = c->paths.v[i];
        char norm[4096];
        fd_err pe;
        if (fd_check_relpath(p, "checksums.txt", 0, &pe) || fd_normpath(p, norm, sizeof norm) ||
            fd_starts(norm, "..") || norm[0] == '/' || !strcmp(norm, ".") || strcmp(norm, p))
            return fd_fail(e, "hub_error", "HUB-PATH", "%s: checksums.txt lists '%.300s', which does not stay inside "
                           "the download directory. Nothing was written.", ref, p);
        if (!strcmp(p, MANIFEST) || !strcmp(p, cks_name))
            return fd_fail(e, "hub_error", "HUB-PATH", "%s: checksums.txt lists '%s', which it must not cover. "
                           "Nothing was written.", ref, p);
    }
    return 0;
}

/* Removes files of an earlier fetch at this revision that the listing no
 * longer names (they would be unlisted_file); symlinks are removed, never
 * followed. */
static void drop_unlisted(const char *root, const char *rel, const fd_checksums *keep, const char *cks)
{
    char *dir = rel[0] ? joinf(root, rel, NULL) : fd_xstrdup(root);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        fd_buf r = {0};
        fd_buf_printf(&r, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        char *full = joinf(root, r.p, NULL);
        struct stat st;
        if (lstat(full, &st) == 0) {
            if (S_ISDIR(st.st_mode)) drop_unlisted(root, r.p, keep, cks);
            else if (strcmp(r.p, MANIFEST) && strcmp(r.p, cks) && !fd_checksums_get(keep, r.p)) unlink(full);
        }
        free(full);
        fd_buf_free(&r);
    }
    if (d) closedir(d);
    free(dir);
}

typedef struct run {
    const fd_fetch_opts *o;
    fd_hub_client c;
    fd_hub_ref ref;
    char *dsdir, *staging;
    fd_fetch_stats *st;
    /* what the manifests declare about sizes (docs/HUB.md) */
    jv *capdoc;               /* the verified capture manifest, once fetched */
    char capdir[1024];        /* its directory, "capture" */
    const char *head_file;
    uint64_t head_max, other_max;
} run;

/* The most bytes rel may have: a capture tensor its record's size_bytes, the
 * head what its shape allows, anything else 64 MiB plus the declared total. */
static size_t declared_max(const run *r, const char *rel)
{
    const jv *recs = jv_get(r->capdoc, "records");
    size_t cl = strlen(r->capdir);
    if (recs && recs->t == JV_ARR && cl && !strncmp(rel, r->capdir, cl) && rel[cl] == '/')
        for (size_t i = 0; i < recs->u.a.n; i++) {
            const char *f = jv_get_str(recs->u.a.v[i], "file");
            int64_t sz;
            if (f && !strcmp(f, rel + cl + 1) && !jv_get_i64(recs->u.a.v[i], "size_bytes", &sz) && sz >= 0)
                return (size_t)sz;
        }
    if (r->head_file && !strcmp(rel, r->head_file)) return (size_t)r->head_max;
    return (size_t)r->other_max;
}

static int fetch_one(run *r, const char *rel, const char *want, fd_err *e)
{
    char *target = joinf(r->dsdir, rel, NULL), *part = joinf(r->staging, rel, ".part");
    int rc = -1;
    struct stat sb;
    if (lstat(target, &sb) == 0) {
        char have[65];
        if (!S_ISREG(sb.st_mode)) {
            fd_fail(e, "hub_error", "HUB-CACHE", "%s: a cached entry is not a regular file", target);
            goto out;
        }
        if (!fd_sha256_file(target, have, e) && !strcmp(have, want)) { r->st->reused++; rc = 0; goto out; }
        unlink(target);
    }
    if (own_parents(r->staging, rel, e)) goto out;
    if (lstat(part, &sb) == 0) {
        if (!S_ISREG(sb.st_mode)) { fd_fail(e, "hub_error", "HUB-CACHE", "%s: not a regular file", part); goto out; }
        if (sb.st_size > 0) {
            r->st->resumed++;
            fprintf(stderr, "hub: resuming %s from byte %lld\n", rel, (long long)sb.st_size);
        }
    }
    fd_buf url = {0};
    fd_hub_resolve_url(r->c.endpoint, &r->ref, rel, &url);
    int g = fd_hub_get_file(&r->c, url.p, part, rel, declared_max(r, rel), e);
    fd_buf_free(&url);
    if (g) goto out;
    char got[65];
    if (fd_sha256_file(part, got, e)) goto out;
    if (strcmp(got, want)) {
        unlink(part);
        fd_fail(e, "hub_error", "HUB-DIGEST", "hf://%s@%s: %s does not match the digest its own checksums.txt lists "
                "(listed %.16s..., downloaded %.16s...). Nothing was written for this file.",
                r->ref.repo, r->ref.revision, rel, want, got);
        goto out;
    }
    if (own_parents(r->dsdir, rel, e)) goto out;
    if (rename(part, target)) { fd_fail(e, "hub_error", "HUB-CACHE", "%s: %s", target, strerror(errno)); goto out; }
    r->st->downloaded++;
    rc = 0;
out:
    free(target);
    free(part);
    return rc;
}

static int fetch_locked(run *r, const char *s, fd_err *e)
{
    int rc = -1;
    fd_buf mb = {0}, cb = {0}, url = {0};
    jv *m = NULL;
    fd_checksums listed = {0};
    fd_hub_resolve_url(r->c.endpoint, &r->ref, MANIFEST, &url);
    if (fd_hub_get_mem(&r->c, url.p, SMALL_MAX, &mb, e)) goto out;
    fd_err pe;
    if (!(m = jv_parse(mb.p, mb.n, &pe)) || m->t != JV_OBJ) {
        fd_fail(e, "hub_error", "HUB-SCHEMA", "%s: %s is not a JSON object%s%s", s, MANIFEST, m ? "" : ": ", m ? "" : pe.msg);
        goto out;
    }
    const char *schema = jv_get_str(m, "schema");
    if (!schema || strcmp(schema, DATASET_SCHEMA)) {
        fd_fail(e, "hub_error", "HUB-SCHEMA", "%s is not a %s (schema %.80s)", s, DATASET_SCHEMA, schema ? schema : "None");
        goto out;
    }
    char seal[65];
    const char *claimed = jv_get_str(m, "dataset_sha256");
    if (jv_seal(m, "dataset_sha256", seal, &pe) || !claimed || strcmp(seal, claimed)) {
        fd_fail(e, "hub_error", "HUB-SEAL", "%s: the manifest's dataset_sha256 does not recompute. Nothing was written.", s);
        goto out;
    }
    if (own_dir(r->dsdir, e)) goto out;
    char *mpath = joinf(r->dsdir, MANIFEST, NULL);
    if (r->o->manifest_only) {
        rc = fd_write_atomic(mpath, mb.p, mb.n, e);
        free(mpath);
        goto out;
    }
    free(mpath);
    const jv *sealb = jv_get(m, "seal");
    const char *cks = jv_get_str(sealb, "checksums_file"), *cks_sha = jv_get_str(sealb, "checksums_sha256");
    if (!cks) cks = "checksums.txt";
    char norm[4096];
    if (fd_check_relpath(cks, "seal.checksums_file", 0, &pe) || fd_normpath(cks, norm, sizeof norm) ||
        strcmp(norm, cks) || strchr(cks, '/') || !strcmp(cks, MANIFEST)) {
        fd_fail(e, "hub_error", "HUB-PATH", "%s: seal.checksums_file '%.200s' does not stay inside the dataset root. "
                "Nothing was written.", s, cks);
        goto out;
    }
    if (!cks_sha || !fd_is_hex64(cks_sha)) {
        fd_fail(e, "hub_error", "HUB-SEAL", "%s: the manifest has no seal.checksums_sha256", s);
        goto out;
    }
    url.n = 0;
    fd_hub_resolve_url(r->c.endpoint, &r->ref, cks, &url);
    if (fd_hub_get_mem(&r->c, url.p, SMALL_MAX, &cb, e)) goto out;
    char got[65];
    fd_sha256_hex(cb.p, cb.n, got);
    if (strcmp(got, cks_sha)) {
        fd_fail(e, "hub_error", "HUB-SEAL", "%s: %s does not match seal.checksums_sha256 (listed %.16s..., downloaded "
                "%.16s...). Nothing was written.", s, cks, cks_sha, got);
        goto out;
    }
    if (fd_checksums_parse(cb.p, cb.n, &listed, &pe)) {
        fd_fail(e, "hub_error", "HUB-PATH", "%s: %s is refused before any write (%s). Nothing was written.", s, cks, pe.msg);
        goto out;
    }
    if (check_listing(&listed, cks, s, e)) goto out;
    if (own_dir(r->staging, e)) goto out;
    {   /* size bounds: every body is cut off at what the manifests declare */
        const jv *cap = jv_get(m, "capture"), *head = jv_get(m, "head");
        int64_t total = 0, v = 0, hdim = 0;
        jv_get_i64(cap, "total_size_bytes", &total);
        jv_get_i64(cap, "vocab_size", &v);
        jv_get_i64(cap, "hidden_width", &hdim);
        r->other_max = (uint64_t)SMALL_MAX + (total > 0 ? (uint64_t)total : 0);
        r->head_file = jv_get_str(head, "file");
        r->head_max = 8 + (uint64_t)FD_ST_MAX_HEADER +
                      (v > 0 && hdim > 0 && v < ((int64_t)1 << 31) && hdim < ((int64_t)1 << 31) ? (uint64_t)v * (uint64_t)hdim * 4 : 0);
        const char *cm = jv_get_str(cap, "manifest_file");
        if (cm) {
            fd_dirname(cm, r->capdir, sizeof r->capdir);
            for (size_t i = 0; i < listed.paths.n; i++)   /* the capture manifest first: it declares the tensor sizes */
                if (!strcmp(listed.paths.v[i], cm)) {
                    if (fetch_one(r, cm, listed.digests.v[i], e)) goto out;
                    char *cp = joinf(r->dsdir, cm, NULL);
                    r->capdoc = jv_parse_file(cp, e);
                    free(cp);
                    if (!r->capdoc) goto out;
                    break;
                }
        }
    }
    for (size_t i = 0; i < listed.paths.n; i++) {
        const char *rel = listed.paths.v[i];
        if (r->capdoc && !strcmp(rel, jv_get_str(jv_get(m, "capture"), "manifest_file"))) continue;
        if (r->o->allow_partial && fd_starts(rel, "capture/") && strcmp(rel, "capture/manifest.json")) continue;
        if (fetch_one(r, rel, listed.digests.v[i], e)) goto out;
    }
    drop_unlisted(r->dsdir, "", &listed, cks);
    char *cpath = joinf(r->dsdir, cks, NULL), *mp = joinf(r->dsdir, MANIFEST, NULL);
    rc = fd_write_atomic(cpath, cb.p, cb.n, e) || fd_write_atomic(mp, mb.p, mb.n, e) ? -1 : 0;
    free(cpath);
    free(mp);
out:
    /* nothing unverified stays behind a refusal (a killed run keeps its .part files) */
    if (r->staging) fd_rmtree(r->staging);
    jv_free(r->capdoc);
    r->capdoc = NULL;
    fd_checksums_free(&listed);
    jv_free(m);
    fd_buf_free(&mb);
    fd_buf_free(&cb);
    fd_buf_free(&url);
    return rc;
}

int fd_hub_fetch(const char *s, const fd_fetch_opts *o, char **root, fd_fetch_stats *st, fd_err *e)
{
    fd_fetch_stats ign = {0};
    run r = {.o = o, .st = st ? st : &ign};
    memset(r.st, 0, sizeof *r.st);
    *root = NULL;
    char *token = NULL, *cache = NULL, *base = NULL, *lock = NULL;
    int rc = -1, lfd = -1;
    if (fd_hub_parse_ref(s, &r.ref, e) || (!o->anonymous && fd_hub_token_load(o->token_file, &token, e))) goto out;
    const char *ep = getenv("HF_ENDPOINT");
    r.c.endpoint = ep && *ep ? ep : FD_HUB_DEFAULT_ENDPOINT;
    r.c.token = token;
    r.c.progress = o->progress;
    if (!(cache = o->cache ? fd_xstrdup(o->cache) : default_cache(e))) goto out;
    if (fd_mkdirs(cache, e)) { fd_err_prefix(e, "cache"); goto out; }
    /* one directory per repo AND revision; '/' in a revision becomes %2F */
    fd_buf b = {0}, rev = {0};
    for (const char *p = r.ref.revision; *p; p++) { if (*p == '/') fd_buf_puts(&rev, "%2F"); else fd_buf_putc(&rev, *p); }
    fd_buf_printf(&b, "%s/", cache);
    for (const char *p = r.ref.repo; *p; p++) { if (*p == '/') fd_buf_puts(&b, "__"); else fd_buf_putc(&b, *p); }
    base = fd_buf_cstr(&b);
    fd_buf_cstr(&rev);
    r.dsdir = joinf(base, rev.p, NULL);
    r.staging = joinf(base, ".partial-", rev.p);
    lock = joinf(base, ".lock-", rev.p);
    fd_buf_free(&rev);
    if (own_dir(base, e)) goto out;
    if ((lfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0 || flock(lfd, LOCK_EX)) {
        fd_fail(e, "hub_error", "HUB-CACHE", "%s: cannot lock: %s", lock, strerror(errno));
        goto out;
    }
    rc = fetch_locked(&r, s, e);
out:
    if (lfd >= 0) close(lfd);
    if (rc && token) { /* belt and braces: no message leaves with the token in it */
        char *red = fd_redact(e->msg, token);
        snprintf(e->msg, sizeof e->msg, "%s", red);
        free(red);
    }
    if (!rc) { *root = r.dsdir; r.dsdir = NULL; }
    if (token) { explicit_bzero(token, strlen(token)); free(token); }
    free(cache);
    free(base);
    free(lock);
    free(r.dsdir);
    free(r.staging);
    return rc;
}

int fd_hub_resolve_arg(const char *arg, const fd_fetch_opts *o, char **local, fd_err *e)
{
    if (!fd_hub_is_ref(arg)) { *local = fd_xstrdup(arg); return 0; }
    return fd_hub_fetch(arg, o, local, NULL, e);
}
