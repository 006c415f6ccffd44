#include "qualify.h"
#include "compare/compare.h"
#include "format/paths.h"
#include "format/sha.h"
#include "format/validate.h"
#include "format/version.h"
#include "util/fsio.h"
#include "util/utc.h"
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCHEMA "fidelity.root-qualification-receipt.v1"
#define JOB_SCHEMA "fidelity-c/local-root-job.v1"
#define VALIDATION_SCHEMA "malaiwah.fidelity-structural-validation.v1"
#define JSON_MAX ((size_t)64 << 20)

/* every refusal of this file carries one code */
#define q(e, ...) fd_fail((e), "root_qualification_refused", "", __VA_ARGS__)

static jv *read_json(const char *path, const char *label, fd_err *e)
{
    fd_buf b = {0};
    fd_err r;
    jv *v = NULL;
    if (!fd_is_file(path)) q(e, "%s is not readable strict JSON: %s is not a regular file", label, path);
    else if (fd_read_file(path, JSON_MAX, &b, &r)) q(e, "%s is not readable strict JSON: %s", label, r.msg);
    else if (!(v = jv_parse(b.p, b.n, &r))) q(e, "%s is not readable strict JSON: %s", label, r.msg);
    else if (v->t != JV_OBJ) { q(e, "%s is not a JSON object", label); jv_free(v); v = NULL; }
    fd_buf_free(&b);
    return v;
}

static int file_sha(const char *path, char hex[65], fd_err *e)
{
    fd_err r;
    if (fd_sha256_file(path, hex, &r)) return q(e, "%s: %s", path, r.msg);
    return 0;
}

static jv *copy_or_null(const jv *v) { return v ? jv_copy(v) : jv_null(); }

static const char *sget(const jv *o, const char *block, const char *key)
{
    return jv_get_str(block ? jv_get(o, block) : o, key);
}

static int positive_zero(const jv *v) { return v && v->t == JV_FLOAT && v->u.f == 0.0 && !signbit(v->u.f); }

/* A member path of the dataset: relative, confined, a regular file. */
static char *member(const char *root, const char *rel, const char *owner, fd_err *e)
{
    fd_err r;
    if (!rel || fd_check_relpath(rel, owner, 0, &r)) { q(e, "%s: %s", owner, rel ? r.msg : "absent"); return NULL; }
    char *p = fd_path_join(root, rel);
    if (!fd_is_file(p)) { q(e, "%s: %s is not a regular file", owner, rel); free(p); return NULL; }
    return p;
}

/* _capture_identity: the dataset verifies on its own (tensors recomputed),
 * is a one-run root, and its capture/runtime manifests carry the label. */
static jv *capture_identity(const char *root, const char *expected_label, const char *label, jv **manifest_out,
                            jv **runtime_out, fd_err *e)
{
    fd_validate_opts o = {.verify_tensors = 1};
    fd_report r;
    fd_validate_dataset(root, &o, &r);
    if (r.n_errors) {
        q(e, "%s dataset does not independently verify (%s)", label, r.errors[0].message);
        fd_report_free(&r);
        return NULL;
    }
    jv *m = jv_copy(r.manifest);
    fd_report_free(&r);
    jv *id = NULL, *cap = NULL, *rt = NULL;
    char *cp = NULL, *rp = NULL, *mp = fd_path_join(root, "fidelity-dataset.json");
    const jv *ds = jv_get(m, "dataset"), *det = jv_get(m, "determinism");
    const char *role = jv_get_str(ds, "role");
    int64_t runs = 0;
    if (!role || strcmp(role, "root")) { q(e, "%s dataset role is %s, not root", label, role ? role : "None"); goto out; }
    if (jv_get_i64(det, "run_count", &runs) || runs != 1) {
        q(e, "%s dataset determinism.run_count is %lld; each public manifest must remain one independent capture", label,
          (long long)runs);
        goto out;
    }
    const char *crel = sget(m, "capture", "manifest_file"), *rrel = sget(m, "runtime", "file");
    if (!crel || !rrel) { q(e, "%s dataset omits its capture/runtime manifest", label); goto out; }
    if (!(cp = member(root, crel, "root qualification/capture", e)) || !(rp = member(root, rrel, "root qualification/runtime", e)))
        goto out;
    char lab[96];
    snprintf(lab, sizeof lab, "%s capture manifest", label);
    if (!(cap = read_json(cp, lab, e))) goto out;
    snprintf(lab, sizeof lab, "%s runtime manifest", label);
    if (!(rt = read_json(rp, lab, e))) goto out;
    const char *run_name = jv_get_str(cap, "run_name"), *cold = sget(rt, "runtime_environment", "cold_run");
    if (!run_name || !cold || strcmp(run_name, expected_label) || strcmp(cold, expected_label)) {
        q(e, "%s process label mismatch: expected '%s', capture run_name=%s, runtime cold_run=%s", label, expected_label,
          run_name ? run_name : "None", cold ? cold : "None");
        goto out;
    }
    char msha[65], csha[65], rsha[65];
    if (file_sha(mp, msha, e) || file_sha(cp, csha, e) || file_sha(rp, rsha, e)) goto out;
    const jv *capture = jv_get(m, "capture"), *runtime = jv_get(m, "runtime"), *panel = jv_get(m, "panel"),
             *weights = jv_get(m, "weights"), *fp = jv_get(rt, "stack_fingerprint");
    id = jv_obj();
    jv_set(id, "process_label", jv_str(expected_label));
    jv_set(id, "dataset_id", copy_or_null(jv_get(ds, "id")));
    jv_set(id, "dataset_name", copy_or_null(jv_get(ds, "name")));
    jv_set(id, "dataset_author", copy_or_null(jv_get(jv_get(ds, "author"), "name")));
    jv_set(id, "dataset_repository", copy_or_null(jv_get(ds, "repository")));
    jv_set(id, "dataset_license", copy_or_null(jv_get(ds, "license")));
    jv_set(id, "dataset_sha256", copy_or_null(jv_get(m, "dataset_sha256")));
    jv_set(id, "dataset_manifest_file_sha256", jv_str(msha));
    jv_set(id, "capture_manifest", jv_str(crel));
    jv_set(id, "capture_manifest_sha256", jv_str(csha));
    jv_set(id, "capture_content_digest", copy_or_null(jv_get(capture, "capture_content_digest")));
    jv_set(id, "capture_form", copy_or_null(jv_get(capture, "form")));
    jv_set(id, "capture_dtype", copy_or_null(jv_get(capture, "dtype")));
    jv_set(id, "runtime_manifest", jv_str(rrel));
    jv_set(id, "runtime_manifest_sha256", jv_str(rsha));
    jv_set(id, "runtime_lane", copy_or_null(jv_get(runtime, "lane")));
    jv_set(id, "runtime_device", copy_or_null(jv_get(fp, "device")));
    jv_set(id, "runtime_engine", copy_or_null(jv_get(fp, "engine")));
    jv_set(id, "runtime_container", copy_or_null(jv_get(rt, "container")));
    jv_set(id, "capture_schedule", copy_or_null(jv_get(jv_get(rt, "capture_tool"), "schedule")));
    jv *p = jv_obj();
    jv_set(p, "panel_id", copy_or_null(jv_get(panel, "panel_id")));
    jv_set(p, "suite_token_hash_sha256", copy_or_null(jv_get(panel, "suite_token_hash_sha256")));
    jv_set(p, "panel_receipt_sha256", copy_or_null(jv_get(panel, "panel_receipt_sha256")));
    jv_set(p, "tokenizer", copy_or_null(jv_get(panel, "tokenizer")));
    jv_set(id, "panel", p);
    jv_set(id, "stack_fingerprint_sha256", copy_or_null(jv_get(runtime, "stack_fingerprint_sha256")));
    jv_set(id, "lane_identity_sha256", copy_or_null(jv_get(runtime, "lane_identity_sha256")));
    jv_set(id, "weights_repository", copy_or_null(jv_get(weights, "repository")));
    jv_set(id, "weights_revision", copy_or_null(jv_get(weights, "revision")));
    jv_set(id, "determinism_run_count", jv_int(1));
out:
    free(cp);
    free(rp);
    free(mp);
    jv_free(cap);
    if (id) { *manifest_out = m; *runtime_out = rt; }
    else { jv_free(m); jv_free(rt); }
    return id;
}

jv *fd_qualify_capture_identity(const char *root, const char *expected_label, const char *label, fd_err *e)
{
    jv *m = NULL, *rt = NULL;
    jv *id = capture_identity(root, expected_label, label, &m, &rt, e);
    jv_free(m);
    jv_free(rt);
    return id;
}

/* _verified_report: a sealed, successful full verify naming this root. */
static jv *verified_report(const char *path, const char *root, const char *label, fd_err *e)
{
    char lab[96];
    snprintf(lab, sizeof lab, "%s verification receipt", label);
    jv *d = read_json(path, lab, e);
    if (!d) return NULL;
    jv *out = NULL;
    char seal[65], fsha[65];
    const char *claimed = jv_get_str(d, "receipt_sha256");
    fd_err r;
    if (jv_seal(d, "receipt_sha256", seal, &r) || !claimed || strcmp(seal, claimed)) {
        q(e, "%s verification receipt seal does not recompute", label);
        goto done;
    }
    const char *schema = jv_get_str(d, "schema"), *status = jv_get_str(d, "structural_status");
    int64_t ec = -1;
    const jv *errs = jv_get(d, "errors");
    if (!schema || strcmp(schema, VALIDATION_SCHEMA) || !status || strcmp(status, "sealed") ||
        jv_get_i64(d, "error_count", &ec) || ec != 0 || !errs || errs->t != JV_ARR || errs->u.a.n) {
        q(e, "%s verification receipt is not a successful full verify", label);
        goto done;
    }
    const char *subject = jv_get_str(d, "subject");
    char *a = subject ? realpath(subject, NULL) : NULL, *b = realpath(root, NULL);
    int same = a && b && !strcmp(a, b);
    free(a);
    free(b);
    if (!same) { q(e, "%s verification receipt names %s, not dataset root %s", label, subject ? subject : "None", root); goto done; }
    if (file_sha(path, fsha, e)) goto done;
    out = jv_obj();
    jv_set(out, "receipt_sha256", jv_str(claimed));
    jv_set(out, "file_sha256", jv_str(fsha));
done:
    jv_free(d);
    return out;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *canon_sha_of(const jv *v, char hex[65])
{
    fd_buf b = {0};
    fd_err r;
    jv_dump(v, &JV_CANON, &b, &r);
    fd_sha256_hex(b.p, b.n, hex);
    fd_buf_free(&b);
    return hex;
}

static int is_safetensors(const char *name)
{
    size_t n = strlen(name);
    return n >= 12 && !strcmp(name + n - 12, ".safetensors");
}

/* Non-zero unless the shard census is exactly one file and it is the only
 * .safetensors file of the directory (the download manifest). */
static int unindexed_single_file(const jv *id, const jv *dl)
{
    const jv *shards = jv_get(id, "shards");
    if (!shards || shards->t != JV_ARR || shards->u.a.n != 1) return 1;
    const char *only = jv_get_str(shards->u.a.v[0], "path");
    for (size_t i = 0; i < dl->u.a.n; i++) {
        const char *name = jv_get_str(dl->u.a.v[i], "path");
        if (name && is_safetensors(name) && (!only || strcmp(name, only))) return 1;
    }
    return 0;
}

/* The job.v2 target fields of the Python tool's _local_model_dir_identity
 * beyond the shard census: the index (null for a single unindexed
 * safetensors file, as job.v2 requires of a local root) and the download
 * manifest, every regular top-level file of the directory by name. */
static int download_identity(const char *dir, jv *id, fd_err *e)
{
    DIR *d = opendir(dir);
    if (!d) return q(e, "--model-dir %s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (n == cap) names = fd_xrealloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
        names[n++] = fd_xstrdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_name);
    jv *dl = jv_arr();
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        char *p = fd_path_join(dir, names[i]);
        struct stat st;
        if (!lstat(p, &st) && S_ISREG(st.st_mode)) {
            jv *row = jv_obj();
            jv_set(row, "path", jv_str(names[i]));
            jv_set(row, "bytes", jv_int((int64_t)st.st_size));
            jv_push(dl, row);
            total += (int64_t)st.st_size;
        }
        free(p);
        free(names[i]);
    }
    free(names);
    char *ip = fd_path_join(dir, "model.safetensors.index.json");
    struct stat is;
    int present = !lstat(ip, &is), indexed = present && S_ISREG(is.st_mode);
    char isha[65], dsha[65];
    int rc = present && !indexed ? q(e, "--model-dir lacks model.safetensors.index.json (a regular file)")
           : indexed ? file_sha(ip, isha, e) : 0;
    free(ip);
    if (!rc && !indexed && unindexed_single_file(id, dl)) /* the Python tool's own wording */
        rc = q(e, "an unindexed local CPU root must contain exactly one complete safetensors file");
    if (rc) { jv_free(dl); return -1; }
    jv_set(id, "index_sha256", indexed ? jv_str(isha) : jv_null());
    jv_set(id, "index_bytes", indexed ? jv_int((int64_t)is.st_size) : jv_null());
    jv_set(id, "index_source", jv_str(indexed ? "model.safetensors.index.json" : "single-safetensors"));
    jv_set(id, "download_manifest_sha256", jv_str(canon_sha_of(dl, dsha)));
    jv_set(id, "download_manifest", dl);
    jv_set(id, "download_bytes_total", jv_int(total));
    return 0;
}

/* The checkpoint directory the captures ran from, bound to their census. */
static jv *model_dir_identity(const char *dir, const jv *census, const char *config_sha_recorded, fd_err *e)
{
    struct stat st;
    if (lstat(dir, &st) || !S_ISDIR(st.st_mode)) { q(e, "--model-dir %s is not a directory", dir); return NULL; }
    char *cfg = fd_path_join(dir, "config.json");
    char csha[65];
    if (!fd_is_file(cfg)) { free(cfg); q(e, "--model-dir lacks config.json (a regular file)"); return NULL; }
    int rc = file_sha(cfg, csha, e);
    struct stat cs;
    stat(cfg, &cs);
    free(cfg);
    if (rc) return NULL;
    if (config_sha_recorded && strcmp(csha, config_sha_recorded)) {
        q(e, "--model-dir config.json (%.16s) differs from the config the captures recorded (%.16s); this is not the "
             "checkpoint they ran from", csha, config_sha_recorded);
        return NULL;
    }
    jv *shards = jv_arr();
    int64_t total = 0;
    for (size_t i = 0; census && census->t == JV_ARR && i < census->u.a.n; i++) {
        const jv *row = census->u.a.v[i];
        const char *name = jv_get_str(row, "name"), *sha = jv_get_str(row, "sha256");
        int64_t size = -1;
        if (!name || !*name || strchr(name, '/') || !strcmp(name, "..") || !fd_is_hex64(sha) ||
            jv_get_i64(row, "size", &size) || size <= 0) {
            jv_free(shards);
            q(e, "checkpoint census row %zu is noncanonical", i);
            return NULL;
        }
        if (!is_safetensors(name)) continue;
        char *p = fd_path_join(dir, name);
        struct stat ss;
        int ok = !lstat(p, &ss) && S_ISREG(ss.st_mode);
        free(p);
        if (!ok || (int64_t)ss.st_size != size) {
            jv_free(shards);
            q(e, "--model-dir shard %s is %lld bytes; the captures hashed %lld", name, ok ? (long long)ss.st_size : -1LL,
              (long long)size);
            return NULL;
        }
        jv *s = jv_obj();
        jv_set(s, "path", jv_str(name));
        jv_set(s, "bytes", jv_int(size));
        jv_push(shards, s);
        total += size;
    }
    if (!shards->u.a.n) { jv_free(shards); q(e, "the captures' checkpoint census names no shards"); return NULL; }
    jv *id = jv_obj();
    jv_set(id, "config_sha256", jv_str(csha));
    jv_set(id, "config_bytes", jv_int((int64_t)cs.st_size));
    fd_buf b = {0};
    fd_err r;
    jv_dump(shards, &JV_CANON, &b, &r);
    char ssha[65];
    fd_sha256_hex(b.p, b.n, ssha);
    fd_buf_free(&b);
    jv_set(id, "shards", shards);
    jv_set(id, "shard_manifest_sha256", jv_str(ssha));
    jv_set(id, "model_bytes", jv_int(total));
    if (download_identity(dir, id, e)) { jv_free(id); return NULL; }
    return id;
}

static int write_json_new(const char *path, const jv *doc, fd_err *e)
{
    struct stat st;
    if (lstat(path, &st) == 0) return q(e, "%s exists; it is written once", path);
    fd_buf b = {0};
    fd_err r;
    int rc = jv_dump(doc, &JV_PRETTY, &b, &r);
    if (!rc) { fd_buf_putc(&b, '\n'); rc = fd_write_atomic(path, b.p, b.n, &r); }
    fd_buf_free(&b);
    if (rc) return fd_fail(e, "unwritable", "", "%s: %s", path, r.msg);
    return 0;
}

static jv *t_obj5(void)
{
    jv *o = jv_obj();
    static const char *const k[] = {"two_fresh_processes", "distinct_dataset_roots", "both_independently_verified",
                                    "exact_zero_comparison", "canonical_dataset_only"};
    for (int i = 0; i < 5; i++) jv_set(o, k[i], jv_bool(1));
    return o;
}

/* What one qualification reads: both captures, their verify reports, the
 * self-compare receipt, and the checkpoint directory's identity. */
typedef struct qctx {
    const fd_qualify_opts *o;
    jv *m1, *m2, *rt1, *rt2, *first, *repeat, *v1, *v2, *cmp, *target;
    const char *dev; /* borrowed from first */
} qctx;

static void qctx_free(qctx *c)
{
    jv *all[] = {c->m1, c->m2, c->rt1, c->rt2, c->first, c->repeat, c->v1, c->v2, c->cmp, c->target};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) jv_free(all[i]);
}

/* The two cold captures: one dataset id, equal content digests, one
 * stack/lane identity, one checkpoint census that --model-dir matches. */
static int check_captures(qctx *c, fd_err *e)
{
    const fd_qualify_opts *o = c->o;
    if (!(c->first = capture_identity(o->first, o->first_label, "canonical", &c->m1, &c->rt1, e))) return -1;
    if (!(c->repeat = capture_identity(o->repeat, o->repeat_label, "repeat", &c->m2, &c->rt2, e))) return -1;
    const jv *first = c->first, *repeat = c->repeat;
    if (!jv_equal(jv_get(first, "dataset_id"), jv_get(repeat, "dataset_id")))
        return q(e, "both captures must carry one dataset id");
    const char *d1 = jv_get_str(first, "capture_content_digest"), *d2 = jv_get_str(repeat, "capture_content_digest");
    if (!d1 || !d2 || !fd_is_hex64(d1) || strcmp(d1, d2)) return q(e, "the two independently captured content digests differ");
    if (!jv_equal(jv_get(first, "stack_fingerprint_sha256"), jv_get(repeat, "stack_fingerprint_sha256")) ||
        !jv_equal(jv_get(first, "lane_identity_sha256"), jv_get(repeat, "lane_identity_sha256")))
        return q(e, "the two cold captures do not share one runtime stack/lane identity");
    const jv *census1 = jv_get(jv_get(c->rt1, "weights"), "checkpoint_files");
    const jv *census2 = jv_get(jv_get(c->rt2, "weights"), "checkpoint_files");
    if (!census1 || census1->t != JV_ARR || !census1->u.a.n)
        return q(e, "canonical capture records no weights.checkpoint_files census; only a capture that hashed its "
                    "checkpoint can be qualified locally");
    if (!jv_equal(census1, census2))
        return q(e, "the two captures hashed different checkpoint censuses; they did not run from one checkpoint");
    c->dev = jv_get_str(first, "runtime_device");
    if (!c->dev || (strcmp(c->dev, "cpu") && strcmp(c->dev, "cuda")))
        return q(e, "the local root contract binds capture device 'cpu' or 'cuda' exactly; these captures record %s",
                 c->dev ? c->dev : "None");
    if (!(c->target = model_dir_identity(o->model_dir, census1, sget(c->m1, "weights", "config_sha256"), e))) return -1;
    return 0;
}

/* Both verify reports, and the forced exact self-compare of canonical then repeat. */
static int check_comparison(qctx *c, fd_err *e)
{
    const fd_qualify_opts *o = c->o;
    if (!(c->v1 = verified_report(o->first_verify, o->first, "canonical", e))) return -1;
    if (!(c->v2 = verified_report(o->repeat_verify, o->repeat, "repeat", e))) return -1;
    if (!(c->cmp = read_json(o->comparison, "comparison receipt", e))) return -1;
    const jv *cmp = c->cmp;
    if (fd_validate_receipt(cmp, NULL, NULL)) return q(e, "comparison receipt does not validate");
    const char *kind = jv_get_str(cmp, "comparison_kind");
    if (!kind || strcmp(kind, "reproduction_confirmation")) return q(e, "comparison is not a reproduction confirmation");
    const jv *metric = jv_get(cmp, "metric"), *top1 = jv_get(cmp, "top1_agreement");
    const char *mname = jv_get_str(metric, "name");
    if (!mname || strcmp(mname, "mean_tokenwise_kld") || !positive_zero(jv_get(metric, "value")) ||
        !positive_zero(jv_get(jv_get(cmp, "kl"), "max")) || !top1 || top1->t != JV_FLOAT || top1->u.f != 1.0)
        return q(e, "comparison must have positive mean_kld=0.0, max_kld=0.0, and top-1 agreement=1.0");
    if (!jv_equal(jv_get(jv_get(cmp, "reference"), "dataset_sha256"), jv_get(c->first, "dataset_sha256")) ||
        !jv_equal(jv_get(jv_get(cmp, "candidate"), "dataset_sha256"), jv_get(c->repeat, "dataset_sha256")))
        return q(e, "comparison sides do not bind canonical then repeat dataset");
    const char *l1 = sget(cmp, "reference", "label"), *l2 = sget(cmp, "candidate", "label");
    if (!l1 || !l2 || strcmp(l1, o->first_label) || strcmp(l2, o->repeat_label))
        return q(e, "comparison process labels do not match the captures");
    const jv *sc = jv_get(cmp, "self_compare");
    static const char *const flags[] = {"capture_content_digest_equal", "weights_identity_equal", "asserted_exact_zero",
                                        "force_compute_agreed"};
    for (int i = 0; i < 4; i++) {
        const jv *f = jv_get(sc, flags[i]);
        if (!f || f->t != JV_BOOL || !f->u.b) return q(e, "comparison lacks forced exact reproduction-confirmation semantics");
    }
    if (!jv_get_str(jv_get(cmp, "comparator"), "estimator_backend")) return q(e, "comparison names no estimator backend");
    return 0;
}

/* The local job contract, derived from the captures' evidence. */
static jv *local_job(const qctx *c)
{
    const jv *first = c->first, *ds = jv_get(c->m1, "dataset"), *fp = jv_get(c->rt1, "stack_fingerprint");
    const char *author = jv_get_str(jv_get(ds, "author"), "name");
    const char *measurer = c->o->measurer ? c->o->measurer : author;
    jv *job = jv_obj();
    jv_set(job, "schema", jv_str(JOB_SCHEMA));
    jv_set(job, "role", jv_str("root"));
    jv_set(job, "execution_kind", jv_str("local"));
    jv_set(job, "lane", copy_or_null(jv_get(first, "runtime_lane")));
    jv_set(job, "cold_runs", jv_int(2));
    jv_set(job, "measurer", measurer ? jv_str(measurer) : jv_null());
    jv *target = jv_copy(c->target);
    jv_set(target, "repo_id", copy_or_null(jv_get(first, "weights_repository")));
    jv_set(target, "revision", copy_or_null(jv_get(first, "weights_revision")));
    jv_set(target, "requested_revision", copy_or_null(jv_get(first, "weights_revision")));
    jv_set(target, "path", jv_null());
    const char *dt = jv_get_str(first, "capture_dtype");
    int bf16 = dt && !strcmp(dt, "BF16");
    jv_set(target, "surface", bf16 ? jv_str("native-bf16") : jv_null());
    jv_set(target, "codec", bf16 ? jv_str("bf16") : jv_null());
    jv_set(target, "bits", bf16 ? jv_int(16) : jv_null());
    jv_set(job, "target", target);
    jv *capj = jv_obj();
    jv_set(capj, "dataset_id", copy_or_null(jv_get(first, "dataset_id")));
    jv_set(capj, "dataset_name", copy_or_null(jv_get(first, "dataset_name")));
    jv_set(capj, "dataset_repository", copy_or_null(jv_get(first, "dataset_repository")));
    jv_set(capj, "publish_root_to", copy_or_null(jv_get(first, "dataset_repository")));
    jv_set(capj, "form", copy_or_null(jv_get(first, "capture_form")));
    jv_set(capj, "dtype", copy_or_null(jv_get(first, "capture_dtype")));
    jv_set(capj, "device", jv_str(c->dev));
    jv_set(capj, "engine", copy_or_null(jv_get(first, "runtime_engine")));
    jv_set(capj, "schedule", copy_or_null(jv_get(first, "capture_schedule")));
    jv_set(capj, "panel", jv_copy(jv_get(first, "panel")));
    jv_set(capj, "replay", jv_copy(jv_get(c->cmp, "comparator")));
    jv *proto = jv_obj();
    jv_set(proto, "schedule", jv_str("two-fresh-process-qualification"));
    jv_set(proto, "fresh_processes", jv_int(2));
    jv_set(proto, "run_count_per_process", jv_int(1));
    jv_set(proto, "exact_self_comparison", jv_bool(1));
    jv_set(capj, "root_protocol", proto);
    jv_set(job, "capture", capj);
    jv *local = jv_obj();
    jv_set(local, "device", jv_str(c->dev));
    jv_set(local, "engine", copy_or_null(jv_get(fp, "engine")));
    jv_set(local, "stack_fingerprint_sha256", copy_or_null(jv_get(first, "stack_fingerprint_sha256")));
    jv_set(local, "pod_attestation", jv_null());
    jv_set(local, "note", jv_str("captured on hardware the author controls with the fidelity C engine; no provider, no pod "
                                 "attestation, no container pin"));
    jv_set(job, "local_execution", local);
    jv_set(job, "produced_by", jv_str(FD_ENGINE_NAME " " FD_VERSION " qualify-root --local"));
    return job;
}

/* The sealed v1 qualification receipt bound to JOB (its canonical and its
 * file sha256, the file being JOB pretty-printed plus a newline). */
static jv *qualification_receipt(const qctx *c, const jv *job, fd_err *e)
{
    const jv *first = c->first, *cmp = c->cmp, *comparator = jv_get(cmp, "comparator");
    fd_buf jb = {0}, pj = {0};
    fd_err r;
    jv_dump(job, &JV_CANON, &jb, &r);
    char job_sha[65], job_file_sha[65], when[32], csha[65];
    fd_sha256_hex(jb.p, jb.n, job_sha);
    fd_buf_free(&jb);
    jv_dump(job, &JV_PRETTY, &pj, &r);
    fd_buf_putc(&pj, '\n');
    fd_sha256_hex(pj.p, pj.n, job_file_sha);
    fd_buf_free(&pj);
    fd_utc_now(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ");
    if (file_sha(c->o->comparison, csha, e)) return NULL;
    jv *receipt = jv_obj();
    jv_set(receipt, "schema", jv_str(SCHEMA));
    jv_set(receipt, "receipt_sha256", jv_str(""));
    jv_set(receipt, "qualified_at", jv_str(when));
    jv_set(receipt, "canonical_job_sha256", jv_str(job_sha));
    jv_set(receipt, "job_file_sha256", jv_str(job_file_sha));
    jv_set(receipt, "dataset_repository", copy_or_null(jv_get(first, "dataset_repository")));
    jv_set(receipt, "destination_repository", copy_or_null(jv_get(first, "dataset_repository")));
    jv *contract = jv_obj();
    jv_set(contract, "execution_kind", jv_str("local"));
    jv_set(contract, "role", jv_str("root"));
    jv_set(contract, "dataset_id", copy_or_null(jv_get(first, "dataset_id")));
    jv_set(contract, "dataset_repository", copy_or_null(jv_get(first, "dataset_repository")));
    jv_set(contract, "publish_root_to", copy_or_null(jv_get(first, "dataset_repository")));
    jv_set(contract, "device", jv_str(c->dev));
    jv_set(contract, "lane", copy_or_null(jv_get(first, "runtime_lane")));
    jv_set(contract, "container_image_reference", jv_null());
    jv_set(contract, "container_image_digest", jv_null());
    jv_set(receipt, "job_contract", contract);
    jv *caps = jv_obj();
    jv_set(caps, "canonical", jv_copy(first));
    jv_set(caps, "repeat", jv_copy(c->repeat));
    jv_set(receipt, "captures", caps);
    const char *base = strrchr(c->o->comparison, '/');
    jv *cj = jv_obj();
    jv_set(cj, "path", jv_str(base ? base + 1 : c->o->comparison));
    jv_set(cj, "file_sha256", jv_str(csha));
    jv_set(cj, "receipt_sha256", copy_or_null(jv_get(cmp, "receipt_sha256")));
    jv_set(cj, "comparison_kind", jv_str("reproduction_confirmation"));
    jv_set(cj, "mean_kld", jv_float(0.0));
    jv_set(cj, "max_kld", jv_float(0.0));
    jv_set(cj, "top1_agreement", jv_float(1.0));
    jv_set(receipt, "comparison", cj);
    jv *cp = jv_obj();
    static const char *const ck[] = {"device", "replay_backend", "estimator_backend", "accumulation_dtype", "vocab_chunk"};
    for (int i = 0; i < 5; i++) jv_set(cp, ck[i], copy_or_null(jv_get(comparator, ck[i])));
    jv_set(cp, "force_compute_agreed", jv_bool(1));
    jv_set(receipt, "comparator", cp);
    jv *ver = jv_obj();
    jv_set(ver, "canonical", jv_copy(c->v1));
    jv_set(ver, "repeat", jv_copy(c->v2));
    jv_set(receipt, "verification", ver);
    jv_set(receipt, "reproduction_confirmation", t_obj5());
    jv_set(receipt, "local_execution", jv_copy(jv_get(job, "local_execution")));
    char seal[65];
    if (jv_seal(receipt, "receipt_sha256", seal, &r)) { q(e, "%s", r.msg); jv_free(receipt); return NULL; }
    jv_set(receipt, "receipt_sha256", jv_str(seal));
    return receipt;
}

static char *default_job_path(const fd_qualify_opts *o)
{
    if (o->job_out) return fd_xstrdup(o->job_out);
    char *dup = fd_xstrdup(o->out), *slash = strrchr(dup, '/'), *job_path;
    if (slash) { *slash = 0; job_path = fd_path_join(dup, "job.json"); }
    else job_path = fd_xstrdup("job.json");
    free(dup);
    return job_path;
}

int fd_qualify_root_local(const fd_qualify_opts *o, jv **receipt_out, jv **job_out, char **job_path_out, fd_err *e)
{
    *receipt_out = *job_out = NULL;
    *job_path_out = NULL;
    struct stat st;
    if (lstat(o->out, &st) == 0) return q(e, "--out %s exists; a qualification receipt is written once", o->out);
    char *job_path = default_job_path(o);
    if (lstat(job_path, &st) == 0) { q(e, "--job-out %s exists; a local job contract is written once", job_path); free(job_path); return -1; }
    int rc = -1;
    qctx c = {.o = o};
    jv *job = NULL, *receipt = NULL;
    if (check_captures(&c, e) || check_comparison(&c, e)) goto done;
    job = local_job(&c);
    if (!(receipt = qualification_receipt(&c, job, e))) goto done;
    if (write_json_new(job_path, job, e)) goto done;
    if (write_json_new(o->out, receipt, e)) { unlink(job_path); goto done; }
    *receipt_out = receipt;
    *job_out = job;
    *job_path_out = job_path;
    receipt = job = NULL;
    job_path = NULL;
    rc = 0;
done:
    qctx_free(&c);
    jv_free(job);
    jv_free(receipt);
    free(job_path);
    return rc;
}
