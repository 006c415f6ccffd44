#include "capture/resume.h"
#include "format/digest.h"
#include "format/json.h"
#include "format/safetensors.h"
#include "format/sha.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *entry(const fd_resume *r, size_t index, const char *ext)
{
    fd_buf p = {0};
    fd_buf_printf(&p, "%s/window-%04zu.%s", r->dir, index, ext);
    return fd_buf_cstr(&p);
}

int fd_resume_open(fd_resume *r, const char *out, int resume, fd_err *e)
{
    memset(r, 0, sizeof *r);
    fd_buf d = {0};
    fd_buf_printf(&d, "%s.resume", out);
    r->dir = fd_buf_cstr(&d);
    r->resume = resume;
    struct stat sb;
    if (!lstat(r->dir, &sb) && !S_ISDIR(sb.st_mode))
        return fd_fail(e, "unwritable", "", "%s: the capture journal's place is not a directory", r->dir);
    if (!resume) fd_rmtree(r->dir);
    return fd_mkdirs(r->dir, e);
}

static int mismatch(const fd_resume_key *k, const char *path, const char *why, fd_err *e)
{
    return fd_fail(e, "resume_mismatch", "", "%s: window %s (%zu) of the interrupted capture %s; refused (capture without "
                   "--resume starts afresh)", path, k->window_id, k->index, why);
}

int fd_resume_load(fd_resume *r, const fd_resume_key *k, uint16_t *scored, double *seconds, fd_err *e)
{
    if (!r->resume) return 0;
    char *jp = entry(r, k->index, "json"), *tp = entry(r, k->index, "safetensors");
    int rc = 0;
    jv *j = NULL;
    fd_st_file f = {0};
    int opened = 0;
    if (!fd_is_file(jp)) goto out; /* never recorded: computed */
    rc = -1;
    if (!(j = jv_parse_file(jp, e))) goto out;
    char tok[65];
    fd_token_ids_sha256(k->ids, k->n_ids, 0, tok);
    int64_t sf = -1, rows = -1, hid = -1;
    jv_get_i64(j, "score_from", &sf);
    jv_get_i64(j, "rows", &rows);
    jv_get_i64(j, "hidden", &hid);
    const char *want_sha = jv_get_str(j, "content_sha256");
    const jv *secs = jv_get(j, "elapsed_seconds");
    struct { const char *field, *want; } s[] = {{"window_id", k->window_id}, {"tokens_sha256", tok},
                                                {"checkpoint_identity_sha256", k->checkpoint_identity},
                                                {"gemm_order", k->order}};
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        const char *got = jv_get_str(j, s[i].field);
        if (!got || strcmp(got, s[i].want)) {
            char why[160];
            snprintf(why, sizeof why, "was recorded with another %s", s[i].field);
            mismatch(k, jp, why, e);
            goto out;
        }
    }
    if (sf != (int64_t)k->score_from || rows != (int64_t)k->rows || hid != (int64_t)k->hidden || !want_sha ||
        strlen(want_sha) != 64 || !secs || !jv_is_num(secs)) {
        mismatch(k, jp, "was recorded with another shape or score_from, or its record is incomplete", e);
        goto out;
    }
    if (fd_st_open(tp, &f, e)) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg);
        fd_fail(e, "resume_mismatch", "", "capture journal: %s", why);
        goto out;
    }
    opened = 1;
    size_t n = (k->rows - k->score_from) * k->hidden * 2;
    const fd_st_tensor *t = fd_st_find(&f, "hidden_states");
    if (f.n != 1 || !t || strcmp(t->dtype, "BF16") || t->ndim != 2 || t->shape[0] != k->rows - k->score_from ||
        t->shape[1] != k->hidden || t->end - t->start != n) {
        mismatch(k, tp, "holds another tensor than its record", e);
        goto out;
    }
    struct stat st;
    fd_err oe = {0};
    int fd = fd_open_regular(tp, 1, &st, &oe); /* no symlink */
    int ok = fd >= 0 && pread(fd, scored, n, (off_t)(8 + f.header_len + t->start)) == (ssize_t)n;
    if (fd >= 0) close(fd);
    if (!ok) { fd_fail(e, "resume_mismatch", "", "%s: unreadable%s%s", tp, oe.msg[0] ? ": " : "", oe.msg); goto out; }
    char got[65];
    fd_sha256_hex(scored, n, got);
    if (strcmp(got, want_sha)) { mismatch(k, tp, "does not hash to its recorded content_sha256", e); goto out; }
    *seconds = secs->t == JV_FLOAT ? secs->u.f : (double)secs->u.i;
    r->taken++;
    rc = 1;
out:
    if (opened) fd_st_close(&f);
    jv_free(j);
    free(jp);
    free(tp);
    return rc;
}

int fd_resume_save(const fd_resume *r, const fd_resume_key *k, const char *staged, const uint16_t *scored,
                   double seconds, fd_err *e)
{
    char *jp = entry(r, k->index, "json"), *tp = entry(r, k->index, "safetensors");
    unlink(jp); /* the record goes first: a file without its record is never taken */
    unlink(tp);
    int rc = 0;
    if (link(staged, tp)) { /* another file system: a copy */
        fd_buf b = {0};
        rc = fd_read_file(staged, (size_t)1 << 40, &b, e) || fd_write_atomic(tp, b.p, b.n, e) ? -1 : 0;
        fd_buf_free(&b);
    }
    char tok[65], sha[65];
    fd_token_ids_sha256(k->ids, k->n_ids, 0, tok);
    fd_sha256_hex(scored, (k->rows - k->score_from) * k->hidden * 2, sha);
    jv *j = jv_obj();
    jv_set(j, "window_id", jv_str(k->window_id));
    jv_set(j, "tokens_sha256", jv_str(tok));
    jv_set(j, "checkpoint_identity_sha256", jv_str(k->checkpoint_identity));
    jv_set(j, "gemm_order", jv_str(k->order));
    jv_set(j, "score_from", jv_int((int64_t)k->score_from));
    jv_set(j, "rows", jv_int((int64_t)k->rows));
    jv_set(j, "hidden", jv_int((int64_t)k->hidden));
    jv_set(j, "content_sha256", jv_str(sha));
    jv_set(j, "elapsed_seconds", jv_float(seconds));
    fd_buf b = {0};
    if (!rc) rc = jv_dump(j, &JV_PRETTY, &b, e);
    if (!rc) rc = fd_write_atomic(jp, b.p, b.n, e);
    fd_buf_free(&b);
    jv_free(j);
    free(jp);
    free(tp);
    return rc;
}

void fd_resume_finish(fd_resume *r)
{
    if (r->dir) fd_rmtree(r->dir);
}

void fd_resume_free(fd_resume *r)
{
    free(r->dir);
    r->dir = NULL;
}
