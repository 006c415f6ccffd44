/* export --format llamacpp-kld: replays a hidden-form dataset through its
 * own head (the canonical GEMM of docs/NUMERICS.md, the same fp32 logits
 * compare uses) and packs the second half of every window as llama.cpp's
 * base run does, so `llama-perplexity --kl-divergence-base FILE
 * --kl-divergence` can score a llama.cpp candidate against our reference. */
#include "adapt.h"
#include "kld.h"
#include "compare/side.h"
#include "format/json.h"
#include "format/sha.h"
#include "kernels/gemm.h"
#include "util/fsio.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The window's token ids, read from the panel token file (compact JSON). */
static int read_tokens(const fd_side *s, const fd_ctx *c, int64_t n_ctx, int32_t *out, fd_err *e)
{
    const char *rel = c->panel_rec ? jv_get_str(c->panel_rec, "token_file") : NULL;
    if (!rel) return fd_fail(e, "panel_binding", "BIND-1", "context %lld has no panel token file", (long long)c->index);
    char *path = fd_path_join(s->root, rel);
    jv *ids = jv_parse_file(path, e);
    free(path);
    if (!ids) return -1;
    int rc = 0;
    if (ids->t != JV_ARR || (int64_t)ids->u.a.n != n_ctx)
        rc = fd_fail(e, "unsupported_window", "KLD-6", "context %lld holds %zu tokens; a .kld needs every window at the context "
                     "length %lld", (long long)c->index, ids->t == JV_ARR ? ids->u.a.n : 0, (long long)n_ctx);
    for (size_t i = 0; !rc && i < ids->u.a.n; i++) {
        const jv *v = ids->u.a.v[i];
        if (v->t != JV_INT || v->u.i < 0 || v->u.i > INT32_MAX)
            rc = fd_fail(e, "unsupported_window", "KLD-6", "context %lld: token %zu is not an int32 id", (long long)c->index, i);
        else out[i] = (int32_t)v->u.i;
    }
    jv_free(ids);
    return rc;
}

static int put(FILE *f, const void *p, size_t n, const char *path, fd_err *e)
{
    if (fwrite(p, 1, n, f) != n) return fd_fail(e, "unwritable", "", "%s: %s", path, strerror(errno));
    return 0;
}

int fd_export_llamacpp_kld(const fd_export_opts *o, char summary[512], fd_err *e)
{
    if (o->window != 16 && o->window != 24) return fd_fail(e, "bad_usage", "", "--kld-window must be 16 or 24");
    struct stat st;
    if (!o->force && lstat(o->out, &st) == 0)
        return fd_fail(e, "destination_exists", "", "%s already exists (pass --force to replace it)", o->out);
    fd_path path;
    if (fd_path_select(o->kernel, &path)) return fd_fail(e, "bad_kernel", "usage", "kernel path '%s' is unknown or unsupported", o->kernel);
    fd_side s;
    if (fd_side_open(o->dataset, "dataset", o->verify_tensors, 0, &s, e)) return -1;
    int rc = 0;
    int64_t n_ctx = 0, score_from = -1;
    jv_get_i64(jv_get(s.manifest, "panel"), "context_length", &n_ctx);
    jv_get_i64(jv_get(jv_get(s.manifest, "panel"), "scoring_window"), "score_from", &score_from);
    int64_t first = n_ctx / 2, rows = n_ctx - 1 - first;
    if (!s.form || strcmp(s.form, "hidden"))
        rc = fd_fail(e, "unsupported_form", "form", "%s is %s form; the exporter replays hidden states through the dataset's head",
                     o->dataset, s.form ? s.form : "null");
    else if (n_ctx < 3 || n_ctx > INT32_MAX || s.vocab > INT32_MAX || (score_from != 0 && score_from != first))
        rc = fd_fail(e, "unsupported_window", "KLD-6", "%s: context length %lld with score_from %lld: a .kld scores positions "
                     "n_ctx/2 .. n_ctx-2, so the dataset must score from 0 or from n_ctx/2", o->dataset, (long long)n_ctx,
                     (long long)score_from);
    for (size_t i = 0; !rc && i < s.n; i++)
        if (s.ctx[i].rows != n_ctx - 1 - score_from)
            rc = fd_fail(e, "unsupported_window", "KLD-6", "context %lld has %lld scored rows, a full window from %lld has %lld",
                         (long long)s.ctx[i].index, (long long)s.ctx[i].rows, (long long)score_from,
                         (long long)(n_ctx - 1 - score_from));
    uint16_t *head = NULL;
    if (!rc && !fd_read_head(s.head_path, s.head_key, s.vocab, s.hidden, &head, e)) {
        char got[65];
        fd_sha256_hex(head, (size_t)s.vocab * (size_t)s.hidden * 2, got);
        if (!s.head_content || strcmp(got, s.head_content))
            rc = fd_fail(e, "head_mismatch", "head", "%s: head bytes do not hash to the manifest's content digest", o->dataset);
    } else if (!rc) rc = -1;
    if (rc) { free(head); fd_side_close(&s); return -1; }

    fd_buf tb = {0};
    fd_buf_printf(&tb, "%s.partial-%ld", o->out, (long)getpid());
    char *tmp = fd_buf_cstr(&tb);
    FILE *f = fopen(tmp, "wb");
    if (!f) rc = fd_fail(e, "unwritable", "", "%s: %s", tmp, strerror(errno));
    int32_t hdr[3] = {(int32_t)n_ctx, (int32_t)s.vocab, (int32_t)s.n};
    if (!rc) rc = put(f, "_logits_", 8, tmp, e);
    if (!rc) rc = put(f, hdr, sizeof hdr, tmp, e);
    int32_t *tok = fd_xmalloc((size_t)n_ctx * 4);
    for (size_t i = 0; i < s.n && !rc; i++) {
        rc = read_tokens(&s, &s.ctx[i], n_ctx, tok, e);
        if (!rc) rc = put(f, tok, (size_t)n_ctx * 4, tmp, e);
    }
    free(tok);
    fd_packed_head ph;
    fd_pack_head(head, (size_t)s.vocab, (size_t)s.hidden, &ph);
    size_t stride = ph.tiles * FD_TILE, nv = (size_t)(2 * ((s.vocab + 1) / 2) + 4);
    uint32_t *hid = fd_xmalloc(ph.kp * 4 + 4);
    float *logits = fd_xmalloc(stride * 4);
    uint16_t *row = fd_xcalloc(nv, 2);
    fd_gemm_fn gemm = fd_gemm_for(path);
    for (size_t i = 0; i < s.n && !rc; i++) {
        fd_map m;
        if (fd_load_ctx(&s.ctx[i], "hidden_states", "BF16", s.hidden, &m, e)) { rc = -1; break; }
        for (int64_t j = 0; j < rows && !rc; j++) {
            int64_t r = first + j - score_from;   /* the row predicting token first+j+1 */
            fd_pack_hidden(m.data + (size_t)r * (size_t)s.hidden * 2, (size_t)s.hidden, hid);
            /* exactly as compare's replay: MXCSR flush only on the fma-emulating paths */
            int mx = path == FD_PATH_AVX2 || path == FD_PATH_AVX512F;
            unsigned csr = mx ? fd_ftz_daz_enter() : 0;
            gemm(hid, 1, ph.kp, ph.w, ph.tiles, logits, stride);
            if (mx) fd_ftz_daz_leave(csr);
            rc = fd_kld_encode_row(s.vocab, logits, o->window, row, e);
            if (!rc) rc = put(f, row, nv * 2, tmp, e);
        }
        fd_unmap(&m);
    }
    free(hid);
    free(logits);
    free(row);
    free(head);
    fd_packed_head_free(&ph);
    if (f && (fflush(f) || fsync(fileno(f))) && !rc) rc = fd_fail(e, "unwritable", "", "%s: %s", tmp, strerror(errno));
    if (f && fclose(f) && !rc) rc = fd_fail(e, "unwritable", "", "%s: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, o->out)) rc = fd_fail(e, "unwritable", "", "%s: %s", o->out, strerror(errno));
    if (rc) unlink(tmp);
    else snprintf(summary, 512, "n_ctx %lld, n_vocab %lld, n_chunk %zu, %lld scored rows per chunk, %d-nat floor",
                  (long long)n_ctx, (long long)s.vocab, s.n, (long long)rows, o->window);
    free(tmp);
    fd_side_close(&s);
    return rc;
}
