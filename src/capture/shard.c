#include "capture/shard.h"
#include "format/validate.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <dirent.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *fd_shard_path(const char *out, size_t r, size_t total)
{
    fd_buf b = {0};
    fd_buf_printf(&b, "%s.shard-%zu-of-%zu", out, r, total);
    return fd_buf_cstr(&b);
}

void fd_shard_clean_partials(const char *path)
{
    char *a = fd_xstrdup(path), *b = fd_xstrdup(path);
    const char *dir = dirname(a), *base = basename(b);
    fd_buf pre = {0};
    fd_buf_printf(&pre, "%s.partial-", base);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, pre.p, pre.n)) continue;
        char *p = fd_path_join(dir, de->d_name);
        fd_rmtree(p);
        free(p);
    }
    if (d) closedir(d);
    fd_buf_free(&pre);
    free(a);
    free(b);
}

jv *fd_shard_of_block(size_t r, size_t total, const char *suite_hash)
{
    jv *s = jv_obj();
    jv_set(s, "index", jv_int((int64_t)r));
    jv_set(s, "total", jv_int((int64_t)total));
    jv_set(s, "stride", jv_int(1));
    jv_set(s, "panel_suite_token_hash_sha256", jv_str(suite_hash));
    return s;
}

static int same_str(const char *a, const char *b) { return a && b && !strcmp(a, b); }

int fd_shard_reusable(const char *path, const fd_shard_expect *x, jv **manifest, fd_err *e)
{
    struct stat st;
    if (lstat(path, &st)) return 0;
    fd_report r;
    fd_validate_opts o = {.verify_tensors = 1, .allow_partial = 1};
    fd_validate_dataset(path, &o, &r);
    if (r.n_errors) {
        fd_fail(e, "destination_exists", "", "%s exists and does not verify ([%s] %s)", path, r.errors[0].code,
                r.errors[0].message);
        fd_report_free(&r);
        return -1;
    }
    const jv *m = r.manifest, *cov = jv_get(m, "coverage"), *ds = jv_get(m, "dataset"), *range = jv_get(cov, "index_range");
    int64_t declared = -1, present = -1, first = -1;
    jv_get_i64(cov, "declared_records", &declared);
    jv_get_i64(cov, "present_records", &present);
    if (range && range->t == JV_ARR && range->u.a.n == 2 && range->u.a.v[0]->t == JV_INT) first = range->u.a.v[0]->u.i;
    const char *why = !jv_get(cov, "shard_of") || !jv_equal(jv_get(cov, "shard_of"), x->shard_of) ? "coverage.shard_of"
                    : declared != x->declared || present != x->count || first != x->first ? "its window range"
                    : !same_str(jv_get_str(ds, "id"), x->dataset_id) ? "dataset.id"
                    : !same_str(jv_get_str(ds, "name"), x->dataset_name) ? "dataset.name"
                    : !same_str(jv_get_str(ds, "role"), x->role) ? "dataset.role"
                    : !same_str(jv_get_str(jv_get(m, "runtime"), "lane"), x->lane) ? "runtime.lane"
                    : !same_str(jv_get_str(jv_get(m, "weights"), "checkpoint_identity_sha256"), x->checkpoint_identity)
                        ? "weights.checkpoint_identity_sha256"
                    : !same_str(jv_get_str(jv_get(m, "scope"), "scope_digest"), x->scope_digest) ? "scope.scope_digest"
                    : NULL;
    if (why) {
        fd_fail(e, "destination_exists", "", "%s exists but is not this run's shard (%s differs)", path, why);
        fd_report_free(&r);
        return -1;
    }
    *manifest = r.manifest;
    r.manifest = NULL;
    fd_report_free(&r);
    return 1;
}
