#include "publish_internal.h"
#include "hub.h"
#include "compare/qualify.h"
#include "format/checksums.h"
#include "format/sha.h"
#include "format/validate.h"
#include "format/version.h"
#include "util/fsio.h"
#include "util/strv.h"
#include "util/utc.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define QUAL_SCHEMA "fidelity.root-qualification-receipt.v1"
#define QUAL_PATH FD_PUB_QUAL_PATH
#define JSON_MAX ((size_t)64 << 20)

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

/* ------------------------------------------------------------ the command */

typedef struct run {
    pub p;
    jv *qual, *mj;
    rec local;
    const char *local_sha; /* borrowed from mj */
    uint64_t qual_size;
    upfile *upf;
    size_t n_upf;
    char head[64], revision[41], pq[65];
    char *fetched, *tmpcache;
} run;

/* Every gate that needs no token: the sources, --repo, the qualification
 * against the job and the dataset, the dataset's file records. */
static int check_sources(run *r)
{
    const fd_publish_opts *o = r->p.o;
    struct stat st;
    const char *paths[3][2] = {{o->dataset, "dataset"}, {o->qualification, "qualification"}, {o->job, "job.json"}};
    for (int i = 0; i < 3; i++)
        if (lstat(paths[i][0], &st) || S_ISLNK(st.st_mode))
            return refuse(&r->p, "publication_source_invalid", "%s %s must be a non-symlink path that exists",
                          paths[i][1], paths[i][0]);
    fd_hub_ref ref;
    fd_err e;
    char refs[400];
    snprintf(refs, sizeof refs, "hf://%s", o->repo);
    if (fd_hub_parse_ref(refs, &ref, &e) || strchr(o->repo, '@') || !strchr(o->repo, '/'))
        return refuse(&r->p, "publish_refused", "--repo %s is not an owner/name Hub repository id", o->repo);
    char msg[1536];
    if (load_qualification(&r->p, &r->qual, msg, sizeof msg)) return refuse(&r->p, "qualification_invalid", "%s", msg);
    if (records(o->dataset, &r->local, &e)) return refuse(&r->p, "source_archive_invalid", "%s", e.msg);
    char *mpath = fd_path_join(o->dataset, "fidelity-dataset.json");
    r->mj = read_json(mpath, &e);
    free(mpath);
    r->local_sha = r->mj ? jv_get_str(r->mj, "dataset_sha256") : NULL;
    if (!r->local_sha) return refuse(&r->p, "source_archive_invalid", "the dataset manifest names no dataset_sha256");
    if (stat(o->qualification, &st)) return refuse(&r->p, "qualification_invalid", "%s: %s", o->qualification, strerror(errno));
    r->qual_size = (uint64_t)st.st_size;
    return 0;
}

static void print_dry_run(const run *r)
{
    const fd_publish_opts *o = r->p.o;
    /* the Python tool's: local_execution.device_name, else job_contract.device */
    const char *dev = jv_get_str(jv_get(r->qual, "local_execution"), "device_name");
    if (!dev) dev = jv_get_str(jv_get(r->qual, "job_contract"), "device");
    if (!dev) dev = jv_get_str(jv_get(r->qual, "local_execution"), "device");
    printf("DRY RUN -- nothing uploaded, no token read\n");
    printf("  would publish       %s -> %s (dataset_sha256 %s)\n", o->dataset, o->repo, r->local_sha);
    printf("  files               %zu (%llu bytes) + %s\n", r->local.paths.n, (unsigned long long)r->local.total, QUAL_PATH);
    printf("  execution           local (%s; no pod attestation)\n", dev ? dev : "?");
    printf("  expected HEAD       %s\n", o->expected_head);
}

/* The token, the destination HEAD against --expected-head, and the
 * repository created (public) when it is absent. */
static int destination(run *r)
{
    const fd_publish_opts *o = r->p.o;
    fd_err e;
    char msg[1536];
    if (fd_hub_token_load(o->token_file, &r->p.token, &e)) return refuse(&r->p, "publish_refused", "%s", e.msg);
    if (!r->p.token) return refuse(&r->p, "publish_refused", "no Hub token: pass --token-file (mode 0600) or set HF_TOKEN");
    long status = 0;
    fd_buf url = {0}, body = {0};
    int rc = 0;
    fd_pub_repo_url(&url, r->p.endpoint, "/api/datasets/%s/revision/main", o->repo);
    if (fd_pub_request(&r->p, "GET", url.p, 1, NULL, NULL, 0, &status, &body, msg, sizeof msg)) {
        rc = refuse(&r->p, "publish_refused", "%s", msg);
        goto out;
    }
    snprintf(r->head, sizeof r->head, "absent");
    if (status == 200) {
        jv *h = jv_parse(body.p, body.n, &e);
        const char *sha = h ? jv_get_str(h, "sha") : NULL;
        int ok = sha && strlen(sha) == 40;
        if (ok) snprintf(r->head, sizeof r->head, "%s", sha);
        jv_free(h);
        if (!ok) { rc = refuse(&r->p, "publish_refused", "the destination HEAD answer names no 40-hex revision"); goto out; }
    } else if (status != 404) {
        rc = refuse(&r->p, "publish_refused", "reading the destination HEAD: HTTP %ld", status);
        goto out;
    }
    if (strcmp(r->head, o->expected_head)) {
        rc = refuse(&r->p, "publish_refused", "destination %s HEAD is %s, not the expected %s; nothing was uploaded",
                    o->repo, r->head, o->expected_head);
        goto out;
    }
    if (!strcmp(r->head, "absent")) {
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
        fd_pub_repo_url(&url, r->p.endpoint, "%s", "/api/repos/create");
        int bad = fd_pub_request(&r->p, "POST", url.p, 1, "application/json", cb.p, cb.n, &status, &body, msg, sizeof msg);
        fd_buf_free(&cb);
        if (bad) rc = refuse(&r->p, "publish_refused", "creating %s: %s", o->repo, msg);
        /* 409: the repository exists without a revision (an earlier, refused
         * attempt created it); its HEAD was read as absent just above */
        else if (status != 200 && status != 201 && status != 409)
            rc = refuse(&r->p, "publish_refused", "creating %s: HTTP %ld", o->repo, status);
    }
out:
    fd_buf_free(&url);
    fd_buf_free(&body);
    return rc;
}

/* Every file and the Hub's upload mode for each (preupload); the LFS
 * objects uploaded and verified; the inline payload bounded. */
static int upload(run *r)
{
    const fd_publish_opts *o = r->p.o;
    fd_err e;
    char msg[1536];
    size_t nf = r->local.paths.n + 1;
    r->upf = fd_xcalloc(nf, sizeof *r->upf);
    r->n_upf = nf;
    for (size_t i = 0; i < r->local.paths.n; i++) {
        r->upf[i].repo_path = r->local.paths.v[i];
        r->upf[i].path = fd_path_join(o->dataset, r->local.paths.v[i]);
        r->upf[i].size = r->local.size[i];
        memcpy(r->upf[i].sha, r->local.sha[i], 65);
    }
    upfile *qf = &r->upf[nf - 1];
    qf->repo_path = QUAL_PATH;
    qf->path = fd_xstrdup(o->qualification);
    qf->size = r->qual_size;
    if (fd_sha256_file(o->qualification, qf->sha, &e)) return refuse(&r->p, "publish_refused", "%s", e.msg);
    if (fd_pub_upload_modes(&r->p, r->upf, nf, msg, sizeof msg)) return refuse(&r->p, "publish_refused", "%s", msg);
    uint64_t inline_total = 0;
    size_t n_lfs = 0;
    for (size_t i = 0; i < nf; i++) {
        if (r->upf[i].lfs) n_lfs++;
        else inline_total += r->upf[i].size;
    }
    if (inline_total > FD_PUB_INLINE_MAX)
        return refuse(&r->p, "publish_refused", "%llu bytes of regular (non-LFS) files exceed the inline commit bound of %llu",
                      (unsigned long long)inline_total, (unsigned long long)FD_PUB_INLINE_MAX);
    if (n_lfs && fd_pub_lfs_upload(&r->p, r->upf, nf, msg, sizeof msg))
        return refuse(&r->p, "publish_refused", "%s; no commit was made, nothing is reported as published", msg);
    return 0;
}

/* The anonymous re-download of the committed revision: fully verified, the
 * same file set and digests as the local tree, the same qualification bytes. */
static int verify_published(run *r)
{
    const fd_publish_opts *o = r->p.o;
    fd_err e;
    fd_fetch_opts fo = {.anonymous = 1, .quiet = 1};
    if (o->cache) fo.cache = o->cache;
    else {
        const char *t = getenv("TMPDIR");
        fd_buf tb = {0};
        fd_buf_printf(&tb, "%s/fidelity-publish-XXXXXX", t && *t ? t : "/tmp");
        r->tmpcache = fd_buf_cstr(&tb);
        if (!mkdtemp(r->tmpcache)) {
            free(r->tmpcache);
            r->tmpcache = NULL;
            return refuse(&r->p, "publish_verify_failed", "cannot create a verification cache: %s", strerror(errno));
        }
        fo.cache = r->tmpcache;
    }
    char vref[400];
    snprintf(vref, sizeof vref, "hf://%s@%s", o->repo, r->revision);
    if (fd_hub_fetch(vref, &fo, &r->fetched, NULL, &e)) return refuse(&r->p, "publish_verify_failed", "%s", e.msg);
    fd_validate_opts vo = {.verify_tensors = 1};
    fd_report vr;
    fd_validate_dataset(r->fetched, &vo, &vr);
    const char *psha = vr.manifest ? jv_get_str(vr.manifest, "dataset_sha256") : NULL;
    int vbad = vr.n_errors || !psha || strcmp(psha, r->local_sha);
    char why[1024];
    snprintf(why, sizeof why, "%s", vr.n_errors ? vr.errors[0].message : "the published dataset_sha256 differs from the local one");
    fd_report_free(&vr);
    if (vbad) return refuse(&r->p, "publish_verify_failed", "%s@%s: %s", o->repo, r->revision, why);
    rec pubr = {0};
    if (records(r->fetched, &pubr, &e)) return refuse(&r->p, "publish_verify_failed", "%s", e.msg);
    const rec *l = &r->local;
    int same = pubr.paths.n == l->paths.n;
    for (size_t i = 0; same && i < l->paths.n; i++)
        same = !strcmp(pubr.paths.v[i], l->paths.v[i]) && !strcmp(pubr.sha[i], l->sha[i]) && pubr.size[i] == l->size[i];
    rec_free(&pubr);
    if (!same) return refuse(&r->p, "publish_verify_failed", "the published file set differs from the local dataset");
    fd_hub_client anon = {.endpoint = r->p.endpoint};
    fd_hub_ref vr2;
    fd_buf verify_url = {0}, qb = {0}, lq = {0};
    fd_hub_parse_ref(vref, &vr2, &e);
    fd_hub_resolve_url(r->p.endpoint, &vr2, QUAL_PATH, &verify_url);
    int got = fd_hub_get_mem(&anon, verify_url.p, (size_t)r->qual_size + 1, &qb, &e);
    fd_buf_free(&verify_url);
    if (got) { fd_buf_free(&qb); return refuse(&r->p, "publish_verify_failed", "%s", e.msg); }
    int qsame = !fd_read_file(o->qualification, (size_t)r->qual_size + 1, &lq, &e) && lq.n == qb.n && !memcmp(lq.p, qb.p, qb.n);
    fd_sha256_hex(qb.p, qb.n, r->pq);
    fd_buf_free(&qb);
    fd_buf_free(&lq);
    if (!qsame) return refuse(&r->p, "publish_qualification_mismatch", "published qualification bytes differ from the local receipt");
    return 0;
}

/* The sealed fidelity.publish-root-receipt.v2 (--receipt). */
static int write_receipt(const run *r)
{
    const fd_publish_opts *o = r->p.o;
    fd_err e;
    char when[32], qf[65], seal[65];
    fd_utc_now(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ");
    fd_sha256_file(o->qualification, qf, &e);
    jv *doc = jv_obj();
    jv_set(doc, "schema", jv_str("fidelity.publish-root-receipt.v2"));
    jv_set(doc, "receipt_sha256", jv_str(""));
    jv_set(doc, "repository", jv_str(o->repo));
    jv_set(doc, "revision", jv_str(r->revision));
    jv_set(doc, "revision_immutable", jv_bool(1));
    jv_set(doc, "private", jv_bool(0));
    jv_set(doc, "dataset_sha256", jv_str(r->local_sha));
    jv_set(doc, "published_dataset_sha256", jv_str(r->local_sha));
    jv_set(doc, "qualification_receipt_sha256", jv_copy(jv_get(r->qual, "receipt_sha256")));
    jv_set(doc, "qualification_file_sha256", jv_str(qf));
    jv_set(doc, "published_qualification_file_sha256", jv_str(r->pq));
    jv_set(doc, "published_at", jv_str(when));
    jv_set(doc, "verified_after_publish", jv_bool(1));
    jv_set(doc, "verified_anonymously", jv_bool(1));
    jv_set(doc, "verified_revision", jv_str(r->revision));
    jv_set(doc, "result_archive_sha256", jv_null());
    jv_set(doc, "result_archive_bytes", jv_null());
    jv_set(doc, "publication_source", jv_str("local-dataset-tree"));
    jv_set(doc, "execution_kind", jv_str("local"));
    jv_set(doc, "local_execution", jv_copy(jv_get(r->qual, "local_execution")));
    jv_set(doc, "hf_execution", jv_null());
    jv_seal(doc, "receipt_sha256", seal, &e);
    jv_set(doc, "receipt_sha256", jv_str(seal));
    fd_buf rb = {0};
    jv_dump(doc, &JV_PRETTY, &rb, &e);
    fd_buf_putc(&rb, '\n');
    jv_free(doc);
    int wr = fd_write_atomic(o->receipt, rb.p, rb.n, &e);
    fd_buf_free(&rb);
    if (wr) return refuse(&r->p, "unwritable", "%s (the dataset IS published at %s@%s)", e.msg, o->repo, r->revision);
    printf("publish receipt written to %s (immutable revision %s)\n", o->receipt, r->revision);
    return 0;
}

int fd_publish(const fd_publish_opts *o)
{
    run r = {.p = {.o = o}};
    const char *ep = getenv("HF_ENDPOINT");
    r.p.endpoint = ep && *ep ? ep : FD_HUB_DEFAULT_ENDPOINT;
    char msg[1536];
    int rc = check_sources(&r);
    if (rc) goto done;
    if (o->dry_run) { print_dry_run(&r); goto done; }
    if ((rc = destination(&r)) || (rc = upload(&r))) goto done;
    if (fd_pub_commit(&r.p, r.upf, r.n_upf, r.head, r.revision, msg, sizeof msg)) {
        rc = refuse(&r.p, "publish_refused", "%s", msg);
        goto done;
    }
    printf("published %s -> %s@%s (dataset_sha256 %s)\n", o->dataset, o->repo, r.revision, r.local_sha);
    printf("stream-verifying exact public bytes at the immutable revision...\n");
    fflush(stdout);
    if ((rc = verify_published(&r))) goto done;
    printf("the immutable published dataset and qualification verify\n");
    if (o->receipt) rc = write_receipt(&r);
done:
    if (r.tmpcache) { fd_rmtree(r.tmpcache); free(r.tmpcache); }
    if (r.p.token) { explicit_bzero(r.p.token, strlen(r.p.token)); free(r.p.token); }
    for (size_t i = 0; i < r.n_upf; i++) free(r.upf[i].path);
    free(r.upf);
    rec_free(&r.local);
    jv_free(r.qual);
    jv_free(r.mj);
    free(r.fetched);
    return rc;
}
