#include "writer.h"
#include "writer_internal.h"
#include "digest.h"
#include "npy.h"
#include "safetensors.h"
#include "sha.h"
#include "validate.h"
#include "version.h"
#include "checksums.h"
#include "k3compat.h"
#include "../util/fsio.h"
#include "../util/utc.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int fd_lane_valid(const char *lane)
{
    static const char *const lanes[] = {"sealed-ep8", "streaming", "local-mps", "local-cuda-budget", "other"};
    for (size_t i = 0; lane && i < sizeof lanes / sizeof *lanes; i++)
        if (!strcmp(lane, lanes[i])) return 1;
    return 0;
}

fd_dsw *fd_dsw_begin(const char *out, const fd_ds_identity *id, fd_err *e)
{
    if (!id->dataset_id || !id->dataset_name || !id->role || !id->lane) {
        fd_fail(e, "bad_usage", "", "dataset id, name, role and lane are required");
        return NULL;
    }
    if (!fd_lane_valid(id->lane)) {
        fd_fail(e, "bad_usage", "", "lane must be one of %s, not '%.100s'", FD_LANES, id->lane);
        return NULL;
    }
    if (strcmp(id->role, "root") && strcmp(id->role, "quant") && strcmp(id->role, "derived")) {
        fd_fail(e, "bad_usage", "", "role must be root, quant or derived, not '%s'", id->role);
        return NULL;
    }
    if (!id->tokenizer && !id->weights_repository) { /* the schema needs a tokenizer identity */
        fd_fail(e, "bad_usage", "", "a tokenizer block or a weights repository is required (the panel's tokenizer id)");
        return NULL;
    }
    int logit = id->form && !strcmp(id->form, "logit");
    if (id->form && !logit && strcmp(id->form, "hidden")) {
        fd_fail(e, "bad_usage", "", "form must be hidden or logit, not '%s'", id->form);
        return NULL;
    }
    if ((!logit && id->hidden <= 0) || id->hidden < 0 || id->vocab <= 0 || id->context_length <= 1) {
        fd_fail(e, "bad_usage", "", "hidden width, vocab and context length must be positive");
        return NULL;
    }
    struct stat st;
    if (lstat(out, &st) == 0) {
        if (!id->force) {
            fd_fail(e, "destination_exists", "", "%s already exists (pass --force to replace it)", out);
            return NULL;
        }
    }
    fd_dsw *w = fd_xcalloc(1, sizeof *w);
    w->out = fd_xstrdup(out);
    fd_buf t = {0};
    fd_buf_printf(&t, "%s.partial-%ld", out, (long)getpid());
    w->tmp = fd_buf_cstr(&t);
    w->id = *id;
    w->logit = logit;
    if (id->created_utc) snprintf(w->created, sizeof w->created, "%s", id->created_utc);
    else fd_utc_now(w->created, sizeof w->created, "%Y-%m-%dT%H:%M:%SZ");
    if (id->cold_run) snprintf(w->cold_run, sizeof w->cold_run, "%s", id->cold_run);
    else {
        char ts[32];
        fd_utc_now(ts, sizeof ts, "%Y%m%dT%H%M%SZ");
        snprintf(w->cold_run, sizeof w->cold_run, "%s-%ld", ts, (long)getpid());
    }
    w->cap_records = jv_arr();
    w->panel_records = jv_arr();
    fd_rmtree(w->tmp);
    static const char *const dirs[] = {"panel/tokens", "panel/masks", "capture", "head", "runtime", "validation"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char *d = fd_path_join(w->tmp, dirs[i]);
        int rc = fd_mkdirs(d, e);
        free(d);
        if (rc) { fd_dsw_abort(w); return NULL; }
    }
    return w;
}

int fd_dsw_write_rel(fd_dsw *w, const char *rel, const void *p, size_t n, char hex[65], fd_err *e)
{
    char *full = fd_path_join(w->tmp, rel);
    int rc = fd_write_atomic(full, p, n, e);
    free(full);
    if (!rc && hex) fd_sha256_hex(p, n, hex);
    return rc;
}

static jv *int_list(const int64_t *v, size_t n)
{
    jv *a = jv_arr();
    for (size_t i = 0; i < n; i++) jv_push(a, jv_int(v[i]));
    return a;
}

static int add_window(fd_dsw *w, const fd_ds_window *win, const void *payload, fd_err *e)
{
    size_t index = (size_t)w->id.index_base + w->cap_records->u.a.n;
    if (win->n_ids < 2 || win->scored_rows == 0)
        return fd_fail(e, "bad_usage", "", "window %zu: a window needs at least two tokens and one scored row", index);
    char rel[128], tok_sha[65], tok_legacy[65], mask_sha[65], wid[64];
    const char *window_id = win->window_id;
    if (!window_id) { snprintf(wid, sizeof wid, "final-%04zu", index); window_id = wid; }
    /* tokens: compact JSON, so the file sha is the normative token digest */
    fd_buf tb = {0};
    fd_buf_putc(&tb, '[');
    for (size_t i = 0; i < win->n_ids; i++) fd_buf_printf(&tb, i ? ",%lld" : "%lld", (long long)win->ids[i]);
    fd_buf_putc(&tb, ']');
    snprintf(rel, sizeof rel, "panel/tokens/context-%04zu.json", index);
    int rc = fd_dsw_write_rel(w, rel, tb.p, tb.n, tok_sha, e);
    fd_buf_free(&tb);
    if (rc) return -1;
    fd_token_ids_sha256(win->ids, win->n_ids, 1, tok_legacy);
    char tok_rel[128], mask_rel[128];
    snprintf(tok_rel, sizeof tok_rel, "%s", rel);
    /* mask: the upstream bytes verbatim, else numpy's all-ones int64 mask */
    snprintf(mask_rel, sizeof mask_rel, "panel/masks/context-%04zu.npy", index);
    if (win->mask_npy) rc = fd_dsw_write_rel(w, mask_rel, win->mask_npy, win->mask_len, mask_sha, e);
    else {
        fd_buf mb = {0};
        uint64_t shape[1] = {win->n_ids};
        fd_npy_header(&mb, "<i8", shape, 1);
        for (size_t i = 0; i < win->n_ids; i++) { int64_t one = 1; fd_buf_put(&mb, &one, 8); }
        rc = fd_dsw_write_rel(w, mask_rel, mb.p, mb.n, mask_sha, e);
        fd_buf_free(&mb);
    }
    if (rc) return -1;
    /* hidden states (or logits): one single-tensor safetensors file */
    char file[64], content[65], file_sha[65];
    int64_t width = w->logit ? w->id.vocab : w->id.hidden;
    const char *key = w->logit ? "logits" : "hidden_states", *dtype = w->logit ? "F32" : "BF16";
    snprintf(file, sizeof file, w->logit ? "logits_%04zu.safetensors" : "hidden_%04zu.safetensors", index);
    snprintf(rel, sizeof rel, "capture/%s", file);
    char *full = fd_path_join(w->tmp, rel);
    jv *meta = jv_obj();
    jv_set(meta, "capture_role", jv_str(w->logit ? "logits_post_lm_head" : "hidden_states_pre_lm_head"));
    jv_set(meta, "cut_point", jv_str(w->logit ? semantic_point(w) : "after_final_rmsnorm_before_lm_head"));
    jv_set(meta, "window_id", jv_str(window_id));
    jv_set(meta, "cold_run", jv_str(w->cold_run));
    jv_set(meta, "dtype", jv_str(w->logit ? "float32" : "bfloat16"));
    uint64_t shape[2] = {win->scored_rows, (uint64_t)width};
    fd_st_writer sw;
    rc = fd_st_writer_begin(&sw, full, key, dtype, shape, 2, meta, e);
    jv_free(meta);
    if (!rc) rc = fd_st_writer_put(&sw, payload, win->scored_rows * (size_t)width * (w->logit ? 4 : 2), e);
    if (!rc) rc = fd_st_writer_finish(&sw, content, file_sha, e);
    else fd_st_writer_abort(&sw);
    struct stat st;
    if (!rc && stat(full, &st)) rc = fd_fail(e, "unwritable", "", "%s: %s", full, strerror(errno));
    free(full);
    if (rc) return -1;
    w->total_size += st.st_size;

    jv *r = jv_obj();
    jv_set(r, "index", jv_int((int64_t)index));
    jv_set(r, "context_index", jv_int((int64_t)index));
    jv_set(r, "window_index", jv_int((int64_t)index));
    jv_set(r, "window_id", jv_str(window_id));
    jv_set(r, "file", jv_str(file));
    jv_set(r, "key", jv_str(key));
    jv_set(r, "dtype", jv_str(dtype));
    jv_set(r, "shape", int_list((int64_t[]){(int64_t)win->scored_rows, width}, 2));
    jv_set(r, "size_bytes", jv_int(st.st_size));
    jv_set(r, "sha256", jv_str(file_sha));
    jv_set(r, "payload_sha256", jv_str(content));
    jv_set(r, "tensor_content_sha256", jv_str(content));
    jv_set(r, "token_ids_json_sha256", jv_str(tok_sha));
    jv_set(r, "token_ids_sha256_legacy", jv_str(tok_legacy));
    jv_set(r, "attention_mask_sha256", jv_str(mask_sha));
    jv_set(r, "prediction_positions", jv_int((int64_t)win->scored_rows));
    jv_set(r, "scored_rows", jv_int((int64_t)win->scored_rows));
    jv_set(r, "role", str_or_null(win->role));
    jv_set(r, "domain", str_or_null(win->domain));
    jv_set(r, "document_id", str_or_null(win->document_id));
    jv_set(r, "allocation_stratum", str_or_null(win->allocation_stratum));
    jv_set(r, "semantic_class", str_or_null(win->semantic_class));
    jv_set(r, "source_cluster_id", str_or_null(win->source_cluster_id));
    jv_set(r, "elapsed_seconds", jv_float((double)(int64_t)(win->elapsed_seconds * 1000 + 0.5) / 1000));
    jv_set(r, "request_id", jv_null());
    jv_set(r, "raw_chunks_retained", jv_bool(0));
    jv_push(w->cap_records, r);

    jv *p = jv_obj();
    jv_set(p, "index", jv_int((int64_t)index));
    jv_set(p, "context_index", jv_int((int64_t)index));
    jv_set(p, "window_index", jv_int((int64_t)index));
    jv_set(p, "window_id", jv_str(window_id));
    jv_set(p, "token_file", jv_str(tok_rel));
    jv_set(p, "token_ids_json_sha256", jv_str(tok_sha));
    jv_set(p, "token_ids_sha256_legacy", jv_str(tok_legacy));
    size_t k = win->n_ids < 16 ? win->n_ids : 16;
    jv_set(p, "token_ids_first16", int_list(win->ids, k));
    jv_set(p, "token_ids_last16", int_list(win->ids + win->n_ids - k, k));
    jv_set(p, "num_tokens", jv_int((int64_t)win->n_ids));
    jv_set(p, "prediction_positions", jv_int((int64_t)win->scored_rows));
    jv_set(p, "attention_mask_file", jv_str(mask_rel));
    jv_set(p, "attention_mask_sha256", jv_str(mask_sha));
    jv_set(p, "role", str_or_null(win->role));
    jv_set(p, "domain", str_or_null(win->domain));
    jv_set(p, "document_id", str_or_null(win->document_id));
    jv_set(p, "allocation_stratum", str_or_null(win->allocation_stratum));
    jv_set(p, "semantic_class", str_or_null(win->semantic_class));
    jv_set(p, "source_cluster_id", str_or_null(win->source_cluster_id));
    jv_set(p, "partition", str_or_null(win->partition));
    jv_set(p, "sentinel", jv_bool(win->sentinel));
    jv_push(w->panel_records, p);
    return 0;
}

const char *fd_dsw_staging(const fd_dsw *w) { return w->tmp; }

int fd_dsw_add_window(fd_dsw *w, const fd_ds_window *win, const uint16_t *hidden, fd_err *e)
{
    if (w->logit) return fd_fail(e, "bad_usage", "", "a logit-form dataset takes logits, not hidden states");
    return add_window(w, win, hidden, e);
}

int fd_dsw_add_window_logits(fd_dsw *w, const fd_ds_window *win, const float *logits, fd_err *e)
{
    if (!w->logit) return fd_fail(e, "bad_usage", "", "a hidden-form dataset takes hidden states, not logits");
    return add_window(w, win, logits, e);
}

/* head: the whole matrix, or NULL and row() a block of rows at a time */
static int set_head(fd_dsw *w, const uint16_t *head, fd_dsw_head_row_fn row, void *ctx, fd_err *e)
{
    if (w->id.hidden <= 0) return fd_fail(e, "bad_usage", "", "a head needs a positive hidden width");
    char *full = fd_path_join(w->tmp, "head/weight.safetensors");
    uint64_t V = (uint64_t)w->id.vocab, H = (uint64_t)w->id.hidden, shape[2] = {V, H};
    fd_st_writer sw;
    int rc = fd_st_writer_begin(&sw, full, "lm_head.weight", "BF16", shape, 2, NULL, e);
    if (!rc && head) rc = fd_st_writer_put(&sw, head, (size_t)V * (size_t)H * 2, e);
    else if (!rc) {
        enum { BLOCK = 256 };
        uint16_t *buf = fd_xmalloc((size_t)H * BLOCK * 2);
        for (uint64_t r0 = 0; !rc && r0 < V; r0 += BLOCK) {
            uint64_t n = V - r0 < BLOCK ? V - r0 : BLOCK;
            for (uint64_t r = 0; r < n; r++) row(ctx, r0 + r, buf + r * H);
            rc = fd_st_writer_put(&sw, buf, (size_t)(n * H * 2), e);
        }
        free(buf);
    }
    if (!rc) rc = fd_st_writer_finish(&sw, w->head_content_sha, w->head_file_sha, e);
    else fd_st_writer_abort(&sw);
    free(full);
    if (!rc) w->have_head = 1;
    return rc;
}

int fd_dsw_set_head(fd_dsw *w, const uint16_t *head, fd_err *e)
{
    return set_head(w, head, NULL, NULL, e);
}

int fd_dsw_set_head_rows(fd_dsw *w, fd_dsw_head_row_fn row, void *ctx, fd_err *e)
{
    return set_head(w, NULL, row, ctx, e);
}

/* Writes a sealed sub-document (pretty JSON + "\n") and returns its file sha. */
static int write_sealed(fd_dsw *w, const char *rel, jv *doc, const char *field, char hex[65], fd_err *e)
{
    char seal[65];
    if (field) {
        if (jv_seal(doc, field, seal, e)) return -1;
        jv_set(doc, field, jv_str(seal));
    }
    fd_buf b = {0};
    int rc = jv_dump(doc, &JV_PRETTY, &b, e);
    if (!rc) { fd_buf_putc(&b, '\n'); rc = fd_dsw_write_rel(w, rel, b.p, b.n, hex, e); }
    fd_buf_free(&b);
    return rc;
}

jv *fd_dataset_seal_block(const char *checksums_sha, const jv *external_anchor)
{
    jv *s = fd_dsw_seal_block(checksums_sha);
    if (external_anchor) jv_set(s, "external_anchor", jv_copy(external_anchor));
    return s;
}

int fd_dsw_finish(fd_dsw *w, jv **manifest_out, fd_err *e)
{
    int rc = -1;
    jv *manifest = NULL, *panel_doc = NULL, *runtime_doc = NULL, *head_doc = NULL, *cap_doc = NULL, *val = NULL;
    size_t n = w->cap_records->u.a.n;
    if (!n) { fd_fail(e, "bad_usage", "", "a dataset needs at least one window"); goto out; }
    if (!w->have_head && !w->logit) { fd_fail(e, "bad_usage", "", "the head (lm_head.weight) was not written"); goto out; }
    char panel_sha[65], runtime_sha[65], cap_sha[65], cks_sha[65], seal[65];
    char content_digest[65];
    if (fd_capture_content_digest(w->cap_records, content_digest, e)) goto out;
    jv *coverage = fd_dsw_coverage_block(w);
    panel_doc = fd_dsw_panel_binding_doc(w);
    runtime_doc = fd_dsw_runtime_doc_new(w);
    head_doc = fd_dsw_head_doc_new(w);
    cap_doc = fd_dsw_capture_doc_new(w, coverage, content_digest);
    manifest = fd_dsw_top_manifest(w, panel_doc, runtime_doc, coverage, content_digest);
    if (w->id.emit_k3_compat) { /* before the card and the seal: checksums.txt lists compat/ */
        jv *upd = NULL;
        if (fd_k3compat_emit(w->tmp, panel_doc, cap_doc, "capture", w->have_head ? "head/weight.safetensors" : NULL,
                             w->id.dataset_name, &upd, e)) goto out;
        jv *iop = jv_get(manifest, "interop");
        for (size_t i = 0; i < upd->u.o.n; i++) jv_set(iop, upd->u.o.m[i].k, jv_copy(upd->u.o.m[i].v));
        jv_free(upd);
    }
    /* 1. payload files exist; README first */
    if (fd_dsw_write_card(w, manifest, e)) goto out;
    /* 2-5. sub-manifests in seal-chain order */
    if (write_sealed(w, "panel/panel.json", panel_doc, "receipt_sha256", panel_sha, e)) goto out;
    jv_set(jv_get(manifest, "panel"), "panel_file_sha256", jv_str(panel_sha));
    if (write_sealed(w, "runtime/capture-runtime.json", runtime_doc, "receipt_sha256", runtime_sha, e)) goto out;
    jv_set(jv_get(manifest, "runtime"), "file_sha256", jv_str(runtime_sha));
    if (write_sealed(w, "head/head.json", head_doc, "receipt_sha256", NULL, e)) goto out;
    jv_set(cap_doc, "runtime_manifest_sha256", jv_str(runtime_sha));
    if (write_sealed(w, "capture/manifest.json", cap_doc, "receipt_sha256", cap_sha, e)) goto out;
    jv_set(jv_get(manifest, "capture"), "manifest_file_sha256", jv_str(cap_sha));
    /* 6. the pre-seal validator verdict (structural checks that need no seal) */
    val = fd_dsw_validation_doc(w);
    if (write_sealed(w, "validation/structural-validation.json", val, "receipt_sha256", NULL, e)) goto out;
    /* 7-8. checksums, then the self-sealed manifest */
    if (fd_checksums_write(w->tmp, cks_sha, e)) goto out;
    jv_set(manifest, "seal", fd_dsw_seal_block(cks_sha));
    if (jv_seal(manifest, "dataset_sha256", seal, e)) goto out;
    jv_set(manifest, "dataset_sha256", jv_str(seal));
    if (write_sealed(w, "fidelity-dataset.json", manifest, NULL, NULL, e)) goto out;
    /* into place: only now does a sealed directory appear under the real name */
    struct stat st;
    if (lstat(w->out, &st) == 0 && w->id.force && fd_rmtree(w->out)) {
        fd_fail(e, "unwritable", "", "%s: cannot remove the existing destination", w->out);
        goto out;
    }
    if (rename(w->tmp, w->out)) { fd_fail(e, "unwritable", "", "%s: %s", w->out, strerror(errno)); goto out; }
    rc = 0;
out:
    if (rc) fd_rmtree(w->tmp);
    if (!rc && manifest_out) { *manifest_out = manifest; manifest = NULL; }
    jv_free(manifest);
    jv_free(panel_doc);
    jv_free(runtime_doc);
    jv_free(head_doc);
    jv_free(cap_doc);
    jv_free(val);
    jv_free(w->cap_records);
    jv_free(w->panel_records);
    free(w->out);
    free(w->tmp);
    free(w);
    return rc;
}

void fd_dsw_abort(fd_dsw *w)
{
    if (!w) return;
    fd_rmtree(w->tmp);
    jv_free(w->cap_records);
    jv_free(w->panel_records);
    free(w->out);
    free(w->tmp);
    free(w);
}
