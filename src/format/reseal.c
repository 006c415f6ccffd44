#include "reseal.h"
#include "checksums.h"
#include "sha.h"
#include "validate.h"
#include "writer.h"
#include "version.h"
#include "../util/fsio.h"
#include "../util/strv.h"
#include "../util/utc.h"
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RESEAL_SCHEMA "fidelity-dataset.reseal.v1"
#define RESEAL_RECEIPT_SCHEMA "fidelity-dataset.reseal-receipt.v1"
#define RESEAL_REASON "validation_subject_private_path"
#define RESEAL_DISCLOSURE "resealed_validation_subject"
#define VALIDATION_SCHEMA "malaiwah.fidelity-structural-validation.v1"
#define MAX_JSON_MEMBER (64u << 20)

/* The publisher's refusal patterns (dshub._PRIVATE_ABSOLUTE_PATHS), bytes. */
static const char *const PRIVATE_PATHS[] = {
    "/home/", "/root/", "/Users/", "/private/", "/tmp/",
    "/var/tmp/", "/workspace/", "/mnt/c/Users/", "file:///",
    ":\\Users\\", ":\\\\Users\\\\",
    "\\/home\\/", "\\/root\\/", "\\/Users\\/", "\\/private\\/",
    "\\/tmp\\/", "\\/workspace\\/",
};
#define N_PRIVATE (sizeof PRIVATE_PATHS / sizeof *PRIVATE_PATHS)

static const char *const TEXT_SUFFIXES[] = {
    ".json", ".jsonl", ".txt", ".md", ".yaml", ".yml", ".csv", ".tsv", ".toml", ".ini", ".cfg", ".receipt",
};

int fd_publish_textual_member(const char *relpath)
{
    const char *slash = strrchr(relpath, '/');
    const char *name = slash ? slash + 1 : relpath;
    size_t n = strlen(name);
    char *low = fd_xstrdup(name);
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)low[i]);
    int hit = !strcmp(low, "checksums.txt") || !strcmp(low, "manifest.json");
    for (size_t i = 0; !hit && i < sizeof TEXT_SUFFIXES / sizeof *TEXT_SUFFIXES; i++) {
        size_t k = strlen(TEXT_SUFFIXES[i]);
        hit = n >= k && !memcmp(low + n - k, TEXT_SUFFIXES[i], k);
    }
    free(low);
    return hit;
}

int fd_has_private_path(const void *p, size_t n, const char **hit)
{
    for (size_t i = 0; i < N_PRIVATE; i++)
        if (memmem(p, n, PRIVATE_PATHS[i], strlen(PRIVATE_PATHS[i]))) {
            if (hit) *hit = PRIVATE_PATHS[i];
            return 1;
        }
    return 0;
}

static int open_regular(const char *path, fd_err *e)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return fd_fail(e, "reseal_refused", "", "%s: %s", path, strerror(errno)), -1;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return fd_fail(e, "reseal_refused", "", "%s is not a regular file", path), -1;
    }
    return fd;
}

int fd_file_has_private_path(const char *root, const char *rel, fd_err *e)
{
    char *full = fd_path_join(root, rel);
    int fd = open_regular(full, e);
    free(full);
    if (fd < 0) return -1;
    enum { CHUNK = 1 << 20, KEEP = 32 };
    char *buf = fd_xmalloc(CHUNK + KEEP);
    size_t have = 0;
    int found = 0;
    for (;;) {
        ssize_t got = read(fd, buf + have, CHUNK);
        if (got < 0) { if (errno == EINTR) continue; found = -1; fd_fail(e, "reseal_refused", "", "%s: %s", rel, strerror(errno)); break; }
        if (got == 0) break;
        have += (size_t)got;
        if (fd_has_private_path(buf, have, NULL)) { found = 1; break; }
        if (have > KEEP) { memmove(buf, buf + have - KEEP, KEEP); have = KEEP; }
    }
    free(buf);
    close(fd);
    return found;
}

static int copy_file(const char *src, const char *dst, fd_err *e)
{
    int in = open_regular(src, e);
    if (in < 0) return -1;
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (out < 0) { close(in); return fd_fail(e, "unwritable", "", "%s: %s", dst, strerror(errno)); }
    enum { CHUNK = 4 << 20 };
    char *buf = fd_xmalloc(CHUNK);
    int rc = 0;
    for (;;) {
        ssize_t got = read(in, buf, CHUNK);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) { rc = fd_fail(e, "unwritable", "", "%s: %s", src, strerror(errno)); break; }
        if (got == 0) break;
        for (ssize_t off = 0; off < got;) {
            ssize_t w = write(out, buf + off, (size_t)(got - off));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) { rc = fd_fail(e, "unwritable", "", "%s: %s", dst, strerror(errno)); break; }
            off += w;
        }
        if (rc) break;
    }
    free(buf);
    close(in);
    if (close(out) && !rc) rc = fd_fail(e, "unwritable", "", "%s: %s", dst, strerror(errno));
    return rc;
}

/* write_json: indent=2, sort_keys, ensure_ascii=False, then "\n". */
static int pretty(const jv *doc, fd_buf *b, fd_err *e)
{
    if (jv_dump(doc, &JV_PRETTY, b, e)) return -1;
    fd_buf_putc(b, '\n');
    return 0;
}

static int write_pretty(const char *root, const char *rel, const jv *doc, char hex[65], fd_err *e)
{
    fd_buf b = {0};
    int rc = pretty(doc, &b, e);
    if (!rc) {
        char *full = fd_path_join(root, rel);
        rc = fd_write_atomic(full, b.p, b.n, e);
        free(full);
        if (!rc && hex) fd_sha256_hex(b.p, b.n, hex);
    }
    fd_buf_free(&b);
    return rc;
}

/* every refusal of this file carries one code */
#define refuse(e, ...) fd_fail((e), "reseal_refused", "", __VA_ARGS__)

/* A full verify with tensors recomputed; the sealed manifest on success. */
static jv *verified(const char *root, const char *label, fd_err *e)
{
    fd_validate_opts o = {.verify_tensors = 1};
    fd_report r;
    fd_validate_dataset(root, &o, &r);
    jv *m = NULL;
    if (r.n_errors)
        refuse(e, "%s does not verify: %s (%s)", label, r.errors[0].message, r.errors[0].rule);
    else {
        const char *status = jv_get_str(jv_get(r.manifest, "dataset"), "structural_status");
        if (!status || strcmp(status, "sealed")) refuse(e, "%s is not sealed", label);
        else m = jv_copy(r.manifest);
    }
    fd_report_free(&r);
    return m;
}

/* Every textual member with a private path, as a Python list repr. */
static int offenders(const char *root, fd_strv *hits, fd_err *e)
{
    fd_strv files = {0};
    if (fd_tree_files(root, &files, e)) return refuse(e, "%s", e->msg);
    int rc = 0;
    for (size_t i = 0; i < files.n && !rc; i++) {
        if (!fd_publish_textual_member(files.v[i])) continue;
        int h = fd_file_has_private_path(root, files.v[i], e);
        if (h < 0) rc = -1;
        else if (h) fd_strv_push(hits, files.v[i]);
    }
    fd_strv_free(&files);
    return rc;
}

static void list_repr(const fd_strv *v, fd_buf *b)
{
    fd_buf_putc(b, '[');
    for (size_t i = 0; i < v->n; i++) fd_buf_printf(b, "%s'%s'", i ? ", " : "", v->v[i]);
    fd_buf_putc(b, ']');
}

static int self_exe_sha(char hex[65], fd_err *e)
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return refuse(e, "cannot resolve the running executable for the receipt's tool identity");
    path[n] = 0;
    if (fd_sha256_file(path, hex, e)) return refuse(e, "cannot hash the running executable: %s", e->msg);
    return 0;
}

/* README.md: the note appended to the card (body.rstrip("\n") + note). */
static int append_card_note(const char *root, const jv *resealed, const char *capture_digest, fd_err *e)
{
    char *path = fd_path_join(root, "README.md");
    if (!fd_is_file(path)) { free(path); return 0; }
    fd_buf body = {0}, out = {0};
    int rc = fd_read_file(path, MAX_JSON_MEMBER, &body, e);
    if (!rc) {
        /* text-mode read: universal newlines */
        for (size_t i = 0; i < body.n; i++) {
            char c = body.p[i];
            if (c == '\r') { fd_buf_putc(&out, '\n'); if (i + 1 < body.n && body.p[i + 1] == '\n') i++; }
            else fd_buf_putc(&out, c);
        }
        while (out.n && out.p[out.n - 1] == '\n') out.n--;
        fd_buf_printf(&out,
                      "\n\n## Re-sealed\n\n"
                      "This tree was re-sealed from `dataset_sha256` `%s` on %s: the validator's "
                      "sealed verdict (`%s`) named the capture's output directory, a private "
                      "absolute path the publisher refuses. Only that one field changed. Every "
                      "tensor, the capture, runtime, panel and head members are byte-identical "
                      "to the original; `capture_content_digest` `%s` is unchanged. The receipt "
                      "is `%s` (`%s`).\n",
                      jv_get_str(resealed, "from_dataset_sha256"), jv_get_str(resealed, "resealed_utc"),
                      FD_RESEAL_VALIDATION_RECORD, capture_digest, FD_RESEAL_RECEIPT_NAME,
                      jv_get_str(resealed, "receipt_sha256"));
        rc = fd_write_atomic(path, out.p, out.n, e);
    }
    fd_buf_free(&body);
    fd_buf_free(&out);
    free(path);
    return rc;
}

static const char *str_or(const jv *o, const char *k, const char *def)
{
    const char *s = jv_get_str(o, k);
    return s ? s : def;
}

static int copy_tree(const char *src, const char *dst, fd_err *e)
{
    fd_strv files = {0};
    if (fd_tree_files(src, &files, e)) return -1;
    int rc = fd_mkdirs(dst, e);
    for (size_t i = 0; i < files.n && !rc; i++) {
        char *from = fd_path_join(src, files.v[i]), *to = fd_path_join(dst, files.v[i]);
        char *slash = strrchr(to, '/');
        if (slash) { *slash = 0; rc = fd_mkdirs(to, e); *slash = '/'; }
        if (!rc) rc = copy_file(from, to, e);
        free(from);
        free(to);
    }
    fd_strv_free(&files);
    return rc;
}

void fd_reseal_plan_free(fd_reseal_plan *plan)
{
    jv_free(plan->receipt);
    free(plan->new_subject);
    memset(plan, 0, sizeof *plan);
}

/* what the steps of fd_reseal share */
typedef struct rsx {
    const char *source, *dataset_id;
    jv *manifest, *record, *rewritten, *receipt, *newm, *m2;
    jv *resealed;              /* borrowed: newm's dataset.resealed */
    fd_strv hits;
    fd_buf rb, canon, recb;    /* the record as read, its rewrite canonical and pretty */
    char when[32];
} rsx;

/* the source: verified, never resealed, its only publisher-refused member the validation record */
static int check_source(rsx *x, fd_err *e)
{
    if (!(x->manifest = verified(x->source, "source dataset", e))) return -1;
    const jv *dataset = jv_get(x->manifest, "dataset");
    x->dataset_id = jv_get_str(dataset, "id");
    const jv *already = jv_get(dataset, "resealed");
    if (already && already->t != JV_NULL)
        return refuse(e, "source was already re-sealed from %s; a reseal is not repeatable",
                      str_or(already, "from_dataset_sha256", "None"));
    if (offenders(x->source, &x->hits, e)) return -1;
    if (x->hits.n != 1 || strcmp(x->hits.v[0], FD_RESEAL_VALIDATION_RECORD)) {
        fd_buf l = {0};
        list_repr(&x->hits, &l);
        refuse(e, "a reseal repairs exactly %s; the source's publisher-refused members are %s",
               FD_RESEAL_VALIDATION_RECORD, l.p ? l.p : "[]");
        fd_buf_free(&l);
        return -1;
    }
    return 0;
}

/* the validation record: sealed, its subject a private path; rewritten with subject dataset:ID and resealed */
static int rewrite_record(rsx *x, fd_reseal_plan *plan, fd_err *e)
{
    char *rpath = fd_path_join(x->source, FD_RESEAL_VALIDATION_RECORD);
    int rrc = fd_read_file(rpath, MAX_JSON_MEMBER, &x->rb, e);
    free(rpath);
    if (rrc || !(x->record = jv_parse(x->rb.p, x->rb.n, e)) || x->record->t != JV_OBJ)
        return refuse(e, "%s is not a readable JSON object%s%s", FD_RESEAL_VALIDATION_RECORD, x->record ? "" : ": ",
                      x->record ? "" : e->msg);
    const char *schema = jv_get_str(x->record, "schema");
    if (!schema || strcmp(schema, VALIDATION_SCHEMA))
        return refuse(e, "validation record schema is %s%s%s", schema ? "'" : "", schema ? schema : "None",
                      schema ? "'" : "");
    char seal[65];
    const char *claimed = jv_get_str(x->record, "receipt_sha256");
    if (jv_seal(x->record, "receipt_sha256", seal, e) || !claimed || strcmp(seal, claimed))
        return refuse(e, "validation record seal does not verify");
    const jv *subj = jv_get(x->record, "subject");
    if (!subj || subj->t != JV_STR || !subj->u.s.n) return refuse(e, "validation record has no subject");
    if (!fd_has_private_path(subj->u.s.p, subj->u.s.n, NULL))
        return refuse(e, "validation record subject '%s' is not a private path; nothing to reseal", subj->u.s.p);
    fd_sha256_hex(subj->u.s.p, subj->u.s.n, plan->original_value_sha);
    fd_buf ns = {0};
    fd_buf_printf(&ns, "dataset:%s", x->dataset_id);
    plan->new_subject = fd_buf_cstr(&ns);
    x->rewritten = jv_copy(x->record);
    jv_set(x->rewritten, "subject", jv_str(plan->new_subject));
    jv_set(x->rewritten, "receipt_sha256", jv_str(""));
    if (jv_seal(x->rewritten, "receipt_sha256", seal, e)) return -1;
    jv_set(x->rewritten, "receipt_sha256", jv_str(seal));
    if (jv_dump(x->rewritten, &JV_CANON, &x->canon, e)) return -1;
    if (fd_has_private_path(x->canon.p, x->canon.n, NULL))
        return refuse(e, "the validation record carries a private path outside its subject; a reseal does not repair that");
    return 0;
}

/* the sealed reseal receipt (RESEAL_RECEIPT_SCHEMA) and its file's sha256 */
static int build_receipt(rsx *x, fd_reseal_plan *plan, char receipt_file[65], fd_err *e)
{
    char from_checksums[65], original_member[65], resealed_member[65], tool_sha[65], seal[65];
    char *p = fd_path_join(x->source, "checksums.txt");
    int hrc = fd_sha256_file(p, from_checksums, e);
    free(p);
    if (hrc) return -1;
    fd_sha256_hex(x->rb.p, x->rb.n, original_member);
    if (pretty(x->rewritten, &x->recb, e)) return -1;
    fd_sha256_hex(x->recb.p, x->recb.n, resealed_member);
    if (self_exe_sha(tool_sha, e)) return -1;
    const jv *capture = jv_get(x->manifest, "capture");
    const char *from_sha = jv_get_str(x->manifest, "dataset_sha256");
    const char *digest = jv_get_str(capture, "capture_content_digest");
    snprintf(plan->from_sha, sizeof plan->from_sha, "%s", from_sha ? from_sha : "");
    snprintf(plan->capture_digest, sizeof plan->capture_digest, "%s", digest ? digest : "");
    fd_utc_now(x->when, sizeof x->when, "%Y-%m-%dT%H:%M:%SZ");

    jv *receipt = x->receipt = jv_obj();
    jv_set(receipt, "schema", jv_str(RESEAL_RECEIPT_SCHEMA));
    jv_set(receipt, "receipt_sha256", jv_str(""));
    jv_set(receipt, "resealed_utc", jv_str(x->when));
    jv_set(receipt, "reason", jv_str(RESEAL_REASON));
    jv_set(receipt, "dataset_id", jv_str(x->dataset_id));
    jv_set(receipt, "from_dataset_sha256", jv_copy(jv_get(x->manifest, "dataset_sha256")));
    jv_set(receipt, "from_checksums_sha256", jv_str(from_checksums));
    const jv *created = jv_get(x->manifest, "created_utc");
    jv_set(receipt, "from_created_utc", created ? jv_copy(created) : jv_null());
    jv_set(receipt, "capture_content_digest", jv_copy(jv_get(capture, "capture_content_digest")));
    const jv *cmf = jv_get(capture, "manifest_file_sha256");
    jv_set(receipt, "capture_manifest_file_sha256", cmf ? jv_copy(cmf) : jv_null());
    jv *mr = jv_arr(), *row = jv_obj();
    jv_set(row, "path", jv_str(FD_RESEAL_VALIDATION_RECORD));
    jv_set(row, "field", jv_str("subject"));
    jv_set(row, "original_sha256", jv_str(original_member));
    jv_set(row, "resealed_sha256", jv_str(resealed_member));
    jv_set(row, "original_value_sha256", jv_str(plan->original_value_sha));
    jv_set(row, "resealed_value", jv_str(plan->new_subject));
    jv_push(mr, row);
    jv_set(receipt, "members_rewritten", mr);
    jv *added = jv_arr();
    jv_push(added, jv_str(FD_RESEAL_RECEIPT_NAME));
    jv_set(receipt, "members_added", added);
    jv *tool = jv_obj();
    jv_set(tool, "file", jv_str("fidelity (" FD_ENGINE_NAME " " FD_VERSION " reseal)"));
    jv_set(tool, "sha256", jv_str(tool_sha));
    jv_set(receipt, "tool", tool);
    if (jv_seal(receipt, "receipt_sha256", seal, e)) return -1;
    jv_set(receipt, "receipt_sha256", jv_str(seal));
    fd_buf tmpb = {0};
    if (pretty(receipt, &tmpb, e)) { fd_buf_free(&tmpb); return -1; }
    fd_sha256_hex(tmpb.p, tmpb.n, receipt_file);
    fd_buf_free(&tmpb);
    return 0;
}

/* the new manifest: dataset.resealed and the reseal disclosure (sealed when the tree is written) */
static int build_manifest(rsx *x, const fd_reseal_plan *plan, const char *receipt_file, fd_err *e)
{
    jv *resealed = x->resealed = jv_obj();
    jv_set(resealed, "schema", jv_str(RESEAL_SCHEMA));
    jv_set(resealed, "reason", jv_str(RESEAL_REASON));
    jv_set(resealed, "from_dataset_sha256", jv_copy(jv_get(x->manifest, "dataset_sha256")));
    jv_set(resealed, "resealed_utc", jv_str(x->when));
    jv_set(resealed, "receipt", jv_str(FD_RESEAL_RECEIPT_NAME));
    jv_set(resealed, "receipt_sha256", jv_str(receipt_file));
    jv *rw = jv_arr();
    jv_push(rw, jv_str(FD_RESEAL_VALIDATION_RECORD));
    jv_set(resealed, "members_rewritten", rw);
    x->newm = jv_copy(x->manifest);
    jv *nds = jv_get(x->newm, "dataset");
    jv_set(nds, "resealed", resealed);
    jv *disc = jv_get(x->newm, "disclosures");
    if (!disc || disc->t != JV_ARR) return refuse(e, "the source manifest has no disclosures list");
    fd_buf detail = {0};
    fd_buf_printf(&detail,
                  "re-sealed from dataset_sha256 %s: the validator's sealed verdict (%s) named the capture's output "
                  "directory, a private absolute path the publisher refuses; its subject is now 'dataset:%s'. No "
                  "tensor, capture, runtime, panel or head member changed; capture_content_digest %s is unchanged. "
                  "Receipt: %s.",
                  plan->from_sha, FD_RESEAL_VALIDATION_RECORD, x->dataset_id, plan->capture_digest, FD_RESEAL_RECEIPT_NAME);
    jv *d = jv_obj();
    jv_set(d, "code", jv_str(RESEAL_DISCLOSURE));
    jv_set(d, "severity", jv_str("info"));
    jv_set(d, "affects_comparability", jv_bool(0));
    jv_set(d, "detail", jv_str(detail.p));
    fd_buf_free(&detail);
    jv_push(disc, d);
    return 0;
}

/* the resealed tree in tmp: the copy, the rewritten record, the receipt, the card note, checksums, the
 * sealed manifest; verified again (same capture digest, no private path left) */
static int write_tree(rsx *x, const fd_reseal_plan *plan, const char *tmp, fd_err *e)
{
    if (copy_tree(x->source, tmp, e)) return -1;
    char *vpath = fd_path_join(tmp, FD_RESEAL_VALIDATION_RECORD);
    int wrc = fd_write_atomic(vpath, x->recb.p, x->recb.n, e);
    free(vpath);
    if (wrc) return -1;
    if (write_pretty(tmp, FD_RESEAL_RECEIPT_NAME, x->receipt, NULL, e)) return -1;
    if (append_card_note(tmp, x->resealed, plan->capture_digest, e)) return -1;
    char cks[65], seal[65];
    if (fd_checksums_write(tmp, cks, e)) return -1;
    const jv *anchor = jv_get(jv_get(x->manifest, "seal"), "external_anchor");
    jv_set(x->newm, "seal", fd_dataset_seal_block(cks, anchor));
    jv_set(x->newm, "dataset_sha256", jv_str(""));
    if (jv_seal(x->newm, "dataset_sha256", seal, e)) return -1;
    jv_set(x->newm, "dataset_sha256", jv_str(seal));
    if (write_pretty(tmp, "fidelity-dataset.json", x->newm, NULL, e)) return -1;
    if (!(x->m2 = verified(tmp, "re-sealed dataset", e))) return -1;
    const char *d2 = jv_get_str(jv_get(x->m2, "capture"), "capture_content_digest");
    if (!d2 || strcmp(d2, plan->capture_digest)) return refuse(e, "capture_content_digest changed across the reseal");
    if (strcmp(str_or(x->m2, "dataset_sha256", ""), seal)) return refuse(e, "re-sealed manifest does not match the tree");
    fd_strv_free(&x->hits);
    if (offenders(tmp, &x->hits, e)) return -1;
    if (x->hits.n) {
        fd_buf l = {0};
        list_repr(&x->hits, &l);
        refuse(e, "re-sealed tree still carries private paths in %s", l.p);
        fd_buf_free(&l);
        return -1;
    }
    return 0;
}

int fd_reseal(const char *source, const char *out, int dry_run, fd_reseal_plan *plan, fd_err *e)
{
    memset(plan, 0, sizeof *plan);
    struct stat st;
    if (out && lstat(out, &st) == 0) return refuse(e, "output %s already exists", out);
    int rc = -1;
    rsx x;
    memset(&x, 0, sizeof x);
    x.source = source;
    char *tmp = NULL, receipt_file[65];
    if (check_source(&x, e) || rewrite_record(&x, plan, e) || build_receipt(&x, plan, receipt_file, e) ||
        build_manifest(&x, plan, receipt_file, e))
        goto done;
    if (!dry_run) {
        fd_buf tb = {0};
        fd_buf_printf(&tb, "%s.partial-%ld", out, (long)getpid());
        tmp = fd_buf_cstr(&tb);
        fd_rmtree(tmp);
        if (write_tree(&x, plan, tmp, e)) goto done;
        if (rename(tmp, out)) { fd_fail(e, "unwritable", "", "%s: %s", out, strerror(errno)); goto done; }
        free(tmp);
        tmp = NULL;
    }
    plan->receipt = jv_copy(x.receipt);
    jv_set(plan->receipt, "resealed_dataset_sha256", dry_run ? jv_null() : jv_copy(jv_get(x.newm, "dataset_sha256")));
    jv_set(plan->receipt, "resealed_checksums_sha256",
           dry_run ? jv_null() : jv_copy(jv_get(jv_get(x.newm, "seal"), "checksums_sha256")));
    jv_set(plan->receipt, "output", jv_null());
    rc = 0;
done:
    if (tmp) { fd_rmtree(tmp); free(tmp); }
    fd_strv_free(&x.hits);
    fd_buf_free(&x.rb);
    fd_buf_free(&x.canon);
    fd_buf_free(&x.recb);
    jv_free(x.manifest);
    jv_free(x.record);
    jv_free(x.rewritten);
    jv_free(x.receipt);
    jv_free(x.newm);
    jv_free(x.m2);
    if (rc) fd_reseal_plan_free(plan);
    return rc;
}
