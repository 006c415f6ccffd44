/* publish: the Python tool's cmd_publish routing, before any other gate.
 * The qualification's job_contract.execution_kind picks the path: local (and
 * hf-jobs) publish from the verified source tree and refuse the result-archive
 * flags; any other kind (a pod, or a qualification that cannot be read) needs
 * --result-archive with its expected sha256 and byte count, and its three
 * inputs must be one private extraction (_private_publish_inputs).  The pod
 * path itself -- the archive's verification and a pod job.v2 -- is not
 * implemented: it ends in the named refusal pod_publication_unsupported. */
#include "publish_internal.h"
#include "format/json.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUTE_JSON_MAX ((size_t)64 << 20)

/* execution_kind of the job a qualification binds, or "" when the file does
 * not read as one (the Python _publication_kind's None). */
static void publication_kind(const char *path, char kind[64], char why[256])
{
    kind[0] = why[0] = 0;
    fd_buf b = {0};
    fd_err e;
    if (fd_is_file(path) && !fd_read_file(path, ROUTE_JSON_MAX, &b, &e)) {
        jv *q = jv_parse(b.p, b.n, &e);
        const char *k = q && q->t == JV_OBJ ? jv_get_str(jv_get(q, "job_contract"), "execution_kind") : NULL;
        if (k) snprintf(kind, 64, "%s", k);
        if (!q) snprintf(why, 256, " (the qualification does not read as strict JSON: %.200s)", e.msg);
        jv_free(q);
    }
    fd_buf_free(&b);
}

static int refused(const char *code, const char *msg)
{
    printf("REFUSED [%s]: %s\n", code, msg);
    return 3;
}

static int is_link(const char *p)
{
    struct stat st;
    return !lstat(p, &st) && S_ISLNK(st.st_mode);
}

/* _private_publish_inputs: ROOT/dataset, ROOT/receipts/root-qualification.json
 * and ROOT/job.json of one owned, non-symlink, mode-0700 extraction ROOT. */
static int private_inputs(const fd_publish_opts *o)
{
    if (is_link(o->dataset) || is_link(o->qualification) || is_link(o->job))
        return refused("publication_source_invalid", "publication inputs must not be symlinks");
    char ds[PATH_MAX], qp[PATH_MAX], jp[PATH_MAX], want[PATH_MAX + 64];
    int same = realpath(o->dataset, ds) && realpath(o->qualification, qp) && realpath(o->job, jp);
    char *slash = same ? strrchr(ds, '/') : NULL;
    if (slash && slash != ds) {
        size_t n = (size_t)(slash - ds);
        same = !strcmp(slash, "/dataset");
        snprintf(want, sizeof want, "%.*s/" FD_PUB_QUAL_PATH, (int)n, ds);
        same = same && !strcmp(qp, want);
        snprintf(want, sizeof want, "%.*s/job.json", (int)n, ds);
        same = same && !strcmp(jp, want);
        *slash = 0; /* ds is now the extraction root */
    } else same = 0;
    if (!same)
        return refused("publication_source_invalid", "publication inputs must use one canonical verified extraction: "
                                                     "root/dataset, root/receipts/root-qualification.json, root/job.json");
    struct stat st;
    if (lstat(ds, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700)
        return refused("publication_source_invalid",
                       "verified extraction root must be an owned, non-symlink mode-0700 directory");
    return 0;
}

int fd_publish_route(const fd_publish_opts *o)
{
    char kind[64], why[256];
    publication_kind(o->qualification, kind, why);
    int any = o->result_archive || o->archive_sha256 || o->archive_bytes;
    int all = o->result_archive && o->archive_sha256 && o->archive_bytes;
    char msg[768];
    if (!strcmp(kind, "local") || !strcmp(kind, "hf-jobs")) {
        if (!any) return 0;
        snprintf(msg, sizeof msg, "%s qualification uses its verified source tree, not result.tar.gz: drop "
                                  "--result-archive, --expected-archive-sha256 and --expected-archive-bytes", kind);
        return refused("publication_has_no_archive", msg);
    }
    if (!all) {
        snprintf(msg, sizeof msg, "a pod-qualified root publishes from its retrieved result.tar.gz: pass --result-archive, "
                                  "--expected-archive-sha256 and --expected-archive-bytes (only local and hf-jobs "
                                  "qualifications publish without them)%s", why);
        return refused("result_archive_required", msg);
    }
    if (private_inputs(o)) return 3;
    snprintf(msg, sizeof msg, "a %s qualification publishes from a pod's verified result archive; this tool qualifies "
                              "and publishes local roots only (result-archive verification and the pod job.v2 "
                              "contract are not implemented)", *kind ? kind : "unreadable");
    return refused("pod_publication_unsupported", msg);
}
