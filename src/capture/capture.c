#include "capture/capture.h"
#include "format/scoring_window.h"
#include "capture/panel.h"
#include "capture/qscope.h"
#include "engine/config.h"
#include "engine/model.h"
#include "capture/probe.h"
#include "capture/schedule.h"
#include "capture/shard.h"
#include "engine/weights.h"
#include "format/digest.h"
#include "format/sha.h"
#include "format/writer.h"
#include "mpi/dist.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int fd_checkpoint_identity(const char *dir, char hex[65], char config_sha[65], jv **files_out, fd_err *e)
{
    DIR *d = opendir(dir);
    if (!d) return fd_fail(e, "missing_file", "", "%s: not a readable directory", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        int st = l > 12 && !strcmp(de->d_name + l - 12, ".safetensors");
        if (!st && strcmp(de->d_name, "config.json")) continue;
        if (n == cap) names = fd_xrealloc(names, (cap = cap ? 2 * cap : 8) * sizeof *names);
        names[n++] = fd_xstrdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    jv *files = jv_arr();
    int rc = 0, have_cfg = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        char *p = fd_path_join(dir, names[i]), h[65];
        struct stat sb;
        if (!fd_is_file(p) || stat(p, &sb)) rc = fd_fail(e, "unreadable", "", "%s: not a regular file", p);
        else rc = fd_sha256_file(p, h, e);
        if (!rc) {
            jv *f = jv_obj();
            jv_set(f, "name", jv_str(names[i]));
            jv_set(f, "sha256", jv_str(h));
            jv_set(f, "size", jv_int((int64_t)sb.st_size));
            jv_push(files, f);
            if (!strcmp(names[i], "config.json")) { memcpy(config_sha, h, 65); have_cfg = 1; }
        }
        free(p);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    if (!rc && !have_cfg) rc = fd_fail(e, "missing_file", "", "%s: no config.json", dir);
    if (!rc) {
        jv *doc = jv_obj();
        jv_set(doc, "algorithm", jv_str(FD_CKPT_ALGORITHM));
        jv_set(doc, "files", jv_copy(files));
        fd_buf b = {0};
        rc = jv_dump(doc, &JV_CANON, &b, e);
        if (!rc) fd_sha256_hex(b.p, b.n, hex);
        fd_buf_free(&b);
        jv_free(doc);
    }
    if (rc) { jv_free(files); return -1; }
    *files_out = files;
    return 0;
}

jv *fd_capture_scope_load(const char *path, fd_err *e)
{
    jv *doc = jv_parse_file(path, e);
    if (!doc) return NULL;
    static const char *const KEEP[] = {"policy", "head_policy", "kv_cache_dtype", "assignments"};
    jv *s = jv_obj();
    for (int i = 0; i < 4; i++) {
        jv *v = jv_get(doc, KEEP[i]);
        if (!v) {
            fd_fail(e, "bad_scope", "", "%s: scope document has no %s", path, KEEP[i]);
            jv_free(doc); jv_free(s);
            return NULL;
        }
        jv_set(s, KEEP[i], jv_copy(v));
    }
    jv_free(doc);
    fd_buf d = {0};
    if (fd_scope_digest(s, &d, e)) { fd_buf_free(&d); jv_free(s); fd_err_prefix(e, path); return NULL; }
    jv_set(s, "scope_digest", jv_strn(d.p, d.n));
    fd_buf_free(&d);
    return s;
}

static int mask_all_ones(const fd_panel_window *pw, fd_err *e)
{
    static const char *const MD[] = {"<i8", "<i4", "|b1", "|u1", NULL};
    const char *descr;
    uint64_t cnt;
    const unsigned char *data;
    if (fd_panel_npy_1d(pw->mask_npy, pw->mask_len, MD, pw->mask_file, &descr, &cnt, &data, e)) return -1;
    size_t wdt = !strcmp(descr, "<i8") ? 8 : !strcmp(descr, "<i4") ? 4 : 1;
    if (cnt != pw->n_ids) return fd_fail(e, "bad_panel", "", "%s: mask length differs from the token count", pw->mask_file);
    for (uint64_t i = 0; i < cnt; i++) {
        int nz = 0;
        for (size_t b = 0; b < wdt; b++) nz |= data[i * wdt + b] != 0;
        if (!nz)
            return fd_fail(e, "unsupported_mask", "", "%s: window %s has padding (mask 0 at %llu); the C forward "
                           "implements unpadded windows only", pw->mask_file, pw->window_id, (unsigned long long)i);
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* What a quantized checkpoint's capture discloses: the dequantization is
 * weight-only (FP8Linear's dynamic activation quantization and NVFP4
 * input_scale are not applied); input_scale tensors are recorded by count,
 * range and the sha256 of their F32 bytes in name order. */
/* The tokenizer identity of a model directory, by content, never by path
 * (docs/CAPTURE.md "Tokenizer identity"), so a quantized copy of the
 * checkpoint elsewhere keeps it:
 *   tokenizer.json present      local/tokenizer-<sha256(tokenizer.json), 16 hex>
 *   else other tokenizer files  local/tokenizer-files-<16 hex of sha256 over
 *                               "name\0sha256hex\n" of each file present, in
 *                               the fixed order of TOK_FILES>
 *   else none at all            local/no-tokenizer-vocab-<vocab_size>: all
 *                               that is known is the id space the panel's
 *                               ids were checked against */
static int tokenizer_identity(const char *model, int64_t vocab, char *out, size_t cap, fd_err *e)
{
    static const char *const TOK_FILES[] = {"tokenizer.model", "vocab.json", "merges.txt", "vocab.txt",
                                            "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"};
    char *tp = fd_path_join(model, "tokenizer.json"), th[65];
    int rc = 0;
    if (fd_is_file(tp)) {
        if (fd_sha256_file(tp, th, e)) rc = -1;
        else snprintf(out, cap, "local/tokenizer-%.16s", th);
        free(tp);
        return rc;
    }
    free(tp);
    fd_sha *h = fd_sha_new();
    size_t n = 0;
    for (size_t i = 0; i < sizeof TOK_FILES / sizeof *TOK_FILES && !rc; i++) {
        char *p = fd_path_join(model, TOK_FILES[i]);
        if (fd_is_file(p)) {
            if (fd_sha256_file(p, th, e)) rc = -1;
            else {
                fd_sha_update(h, TOK_FILES[i], strlen(TOK_FILES[i]) + 1);
                fd_sha_update(h, th, 64);
                fd_sha_update(h, "\n", 1);
                n++;
            }
        }
        free(p);
    }
    char d[65];
    fd_sha_final_hex(h, d);
    if (rc) return -1;
    if (n) snprintf(out, cap, "local/tokenizer-files-%.16s", d);
    else snprintf(out, cap, "local/no-tokenizer-vocab-%lld", (long long)vocab);
    return 0;
}

/* Tensors the engine uses at the precision stored (fp32 when F32 on disk):
 * the ones transformers keeps in fp32 (_keep_in_fp32_modules_strict of
 * glm_moe_dsa / glm5_next).  Every other F32 tensor is cast to bf16 as
 * from_pretrained(dtype=bfloat16) casts it. */
static int used_as_stored(const char *name)
{
    static const char *const suf[] = {".mlp.gate.weight", ".e_score_correction_bias", "_conv1d.weight", ".conv1d.weight",
                                      ".dt_bias", ".A_log", ".hc_attn_base", ".hc_attn_scale", ".hc_ffn_base",
                                      ".hc_ffn_scale",
                                      /* quantization companions: not weights of the forward */
                                      ".weight_scale_inv", ".weight_scale", ".weight_scale_2", ".input_scale"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof suf / sizeof *suf; i++) {
        size_t k = strlen(suf[i]);
        if (n >= k && !strcmp(name + n - k, suf[i])) return 1;
    }
    return !strncmp(name, "model.visual.", 13); /* the vision tower: never run by a text capture */
}

/* F32 tensors rounded to bf16 (issue 16.6: never without a disclosure):
 * NULL when there is none. */
static jv *f32_cast_disclosure(const fd_weights *W)
{
    size_t n = 0;
    fd_buf b = {0};
    for (size_t i = 0; i < W->n; i++) {
        const fd_tensor *t = &W->t[i];
        int ign = 0; /* MTP layers past num_hidden_layers: never loaded */
        for (size_t j = 0; j < W->ignored.n && !ign; j++) ign = !strcmp(W->ignored.v[j], t->name);
        if (ign || t->qfmt != FD_Q_NONE || strcmp(t->dtype, "F32") || used_as_stored(t->name)) continue;
        if (n < 8) fd_buf_printf(&b, "%s%s", n ? ", " : "", t->name);
        n++;
    }
    if (!n) { fd_buf_free(&b); return NULL; }
    fd_buf d = {0};
    fd_buf_printf(&d, "%zu F32 tensor%s of the checkpoint rounded to bf16 (nearest even) before use, as transformers' "
                  "from_pretrained(dtype=bfloat16) casts every parameter it does not keep in fp32: %.*s%s. Parameters "
                  "transformers keeps in fp32 (the router weight and bias, KDA conv1d / dt_bias / A_log, mHC base / scale) "
                  "are used as stored", n, n == 1 ? "" : "s", (int)b.n, b.p, n > 8 ? ", ..." : "");
    fd_buf_free(&b);
    jv *x = jv_obj();
    jv_set(x, "code", jv_str("f32_weights_cast_to_bf16"));
    jv_set(x, "severity", jv_str("caveat"));
    jv_set(x, "affects_comparability", jv_bool(1));
    jv_set(x, "detail", jv_strn(d.p, d.n));
    fd_buf_free(&d);
    return x;
}

static jv *quant_disclosures(const fd_weights *W)
{
    jv *d = jv_arr(), *x = jv_obj();
    fd_buf b = {0};
    char codec[64];
    fd_q_codec(&W->q, codec, sizeof codec);
    if (W->q.kind == FD_Q_FP8_BLOCK)
        fd_buf_printf(&b, "%zu FP8 e4m3 weights (%s, weight_block_size [%d,%d], activation_scheme %s) dequantized to "
                      "bf16 as fp32(e4m3) * weight_scale_inv rounded to nearest even (transformers Fp8Dequantize); "
                      "the dynamic per-group activation quantization of FP8Linear is not applied: a weight-only capture",
                      W->nquant, codec, W->q.bm, W->q.bn, W->q.activation_scheme[0] ? W->q.activation_scheme : "(absent)");
    else
        fd_buf_printf(&b, "%zu NVFP4 weights (%s) dequantized to bf16 as e2m1 * (fp32(weight_scale) * weight_scale_2) "
                      "rounded to nearest even (ModelOpt NVFP4QTensor.dequantize); activations stay bf16: a weight-only "
                      "capture", W->nquant, codec);
    jv_set(x, "code", jv_str("weight_only_dequantization"));
    jv_set(x, "severity", jv_str("caveat"));
    jv_set(x, "affects_comparability", jv_bool(1));
    jv_set(x, "detail", jv_strn(b.p, b.n));
    jv_push(d, x);
    size_t n = 0;
    float lo = 0, hi = 0;
    fd_sha *h = fd_sha_new();
    for (size_t i = 0; i < W->n; i++) {
        const fd_tensor *t = W->t[i].qfmt == FD_Q_NVFP4 ? W->t[i].iscale : NULL;
        if (!t) continue;
        float v;
        fd_err re;
        if (fd_weights_read(W, t, &v, 4, &re)) v = NAN; /* a shard that went away: recorded as such */
        fd_sha_update(h, t->name, strlen(t->name) + 1);
        fd_sha_update(h, &v, 4);
        lo = n && lo < v ? lo : v;
        hi = n && hi > v ? hi : v;
        n++;
    }
    char hex[65];
    fd_sha_final_hex(h, hex);
    if (n) {
        b.n = 0;
        fd_buf_printf(&b, "%zu NVFP4 input_scale tensors (activation scales for W4A4 serving, range %.9g..%.9g, sha256 "
                      "of name NUL + F32 bytes in name order %s) are recorded and not applied", n, (double)lo, (double)hi, hex);
        jv *y = jv_obj();
        jv_set(y, "code", jv_str("activation_scales_not_applied"));
        jv_set(y, "severity", jv_str("caveat"));
        jv_set(y, "affects_comparability", jv_bool(1));
        jv_set(y, "detail", jv_strn(b.p, b.n));
        jv_push(d, y);
    }
    fd_buf_free(&b);
    return d;
}

/* Peak resident set (getrusage ru_maxrss) against the checkpoint's bytes:
 * mapped weight pages count in RSS, so a capture that never builds a bf16
 * copy of a quantized model peaks near the checkpoint size plus activations. */
static int write_memory_report(const char *path, const fd_weights *W, const jv *files, size_t windows,
                               size_t max_tokens, fd_err *e)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int64_t ck = 0, v;
    for (size_t i = 0; files && i < files->u.a.n; i++)
        if (!jv_get_i64(files->u.a.v[i], "size", &v)) ck += v;
    jv *m = jv_obj();
    jv_set(m, "schema", jv_str("fidelity.capture-memory.v1"));
    jv_set(m, "peak_rss_bytes", jv_int((int64_t)ru.ru_maxrss * 1024));
    jv_set(m, "checkpoint_bytes", jv_int(ck));
    jv_set(m, "quantized_weight_bytes", jv_int((int64_t)W->qbytes));
    jv_set(m, "quantized_weights", jv_int((int64_t)W->nquant));
    jv_set(m, "windows", jv_int((int64_t)windows));
    jv_set(m, "max_window_tokens", jv_int((int64_t)max_tokens));
    fd_buf b = {0};
    int rc = jv_dump(m, &JV_PRETTY, &b, e);
    fd_buf_putc(&b, '\n');
    if (!rc) rc = fd_write_atomic(path, b.p, b.n, e);
    fd_buf_free(&b);
    jv_free(m);
    return rc;
}

/* The whole panel's suite token hash (shard_of names the panel it cuts). */
static void panel_suite_hash(const fd_panel *P, char hex[65])
{
    char **per = fd_xcalloc(P->n + 1, sizeof *per);
    for (size_t i = 0; i < P->n; i++) {
        per[i] = fd_xmalloc(65);
        fd_token_ids_sha256(P->w[i].ids, P->w[i].n_ids, 0, per[i]);
    }
    fd_suite_token_hash(per, P->n, 0, hex);
    for (size_t i = 0; i < P->n; i++) free(per[i]);
    free(per);
}

/* Test builds only (make mpi's -testhooks binary): a rank that dies by
 * SIGKILL after writing K windows, leaving its writer's .partial directory. */
static void test_die_hook(size_t written, const fd_capture_shard *s)
{
#ifdef FD_TEST_HOOKS
    const char *k = getenv("FIDELITY_TEST_DIE_AFTER_WINDOWS"), *r = getenv("FIDELITY_TEST_DIE_RANK");
    if (s && k && written == (size_t)atol(k) && (!r || atoi(r) == s->rank)) raise(SIGKILL);
#else
    (void)written;
    (void)s;
#endif
}

static int capture_impl(const fd_capture_opts *o, fd_capture_shard *sh, jv **manifest, fd_err *e);

int fd_capture_run(const fd_capture_opts *o, jv **manifest, fd_err *e) { return capture_impl(o, NULL, manifest, e); }

int fd_capture_run_shard(const fd_capture_opts *o, fd_capture_shard *s, jv **manifest, fd_err *e)
{
    s->path = NULL;
    s->reused = s->idle = 0;
    *manifest = NULL;
    if (s->ranks < 1 || s->rank < 0 || s->rank >= s->ranks)
        return fd_fail(e, "bad_usage", "", "rank %d of %d is not a shard", s->rank, s->ranks);
    return capture_impl(o, s, manifest, e);
}

/* One capture's state, shared by the steps of capture_impl. */
typedef struct cap {
    const fd_capture_opts *o;
    fd_capture_shard *sh;
    fd_mm mm;
    fd_glm_config c;
    fd_weights W;
    fd_panel P;
    int mm_open, wopen, popen_, lo;
    jv *scope, *files, *probe, *disc, *dbits, *shard_of, *swin;
    fd_panel_window *all_w;         /* a shard narrows P to its windows; restored before the free */
    size_t all_n, lo_w;
    const char *dest;
    uint16_t **pre;                 /* layer-outer: every window's rows, computed before the writer starts */
    double *pre_s;
    char codec[64], ck[65], cfg[65], repo[512], pid[600], engine[200];
    fd_dsw *dw;
    uint16_t *hid;
    const fd_tensor *head;
} cap;

static int check_opts(const fd_capture_opts *o, const fd_capture_shard *sh, fd_err *e)
{
    struct stat sb;
    if (!sh && !o->force && lstat(o->out, &sb) == 0)
        return fd_fail(e, "destination_exists", "", "%s already exists (pass --force to replace it)", o->out);
    if (o->weights_revision && (strlen(o->weights_revision) != 40 || strspn(o->weights_revision, "0123456789abcdef") != 40))
        return fd_fail(e, "bad_usage", "", "--weights-revision must be the weights' exact lowercase 40-hex commit");
    if (o->repository) {
        const char *sl = strchr(o->repository, '/');
        if (!sl || sl == o->repository || !sl[1] || strchr(sl + 1, '/') || strpbrk(o->repository, " @:\\"))
            return fd_fail(e, "bad_usage", "", "--repository must be an owner/name Hub dataset id");
    }
    if (o->schedule && strcmp(o->schedule, "layer-outer") && strcmp(o->schedule, "window-outer"))
        return fd_fail(e, "bad_usage", "", "--schedule must be window-outer or layer-outer, not %s", o->schedule);
    return 0;
}

/* The scope: a quantized checkpoint's own (refused as a root, or against a
 * --scope-file that says otherwise), else --scope-file; the disclosures. */
static int read_scope(cap *x, fd_err *e)
{
    const fd_capture_opts *o = x->o;
    if (o->scope_file && !(x->scope = fd_capture_scope_load(o->scope_file, e))) return -1;
    if (x->W.q.kind != FD_Q_NONE) {
        /* the checkpoint says which format each tensor has: the scope is read from it */
        jv *derived = fd_qscope_derive(&x->W, &x->c);
        if (!strcmp(o->role, "root")) {
            fd_fail(e, "quantized_root", "", "%s: the checkpoint is quantized (%s); a root is native, capture it with --role quant",
                    o->model, x->W.q.source);
            jv_free(derived);
            return -1;
        }
        if (x->scope && strcmp(jv_get_str(x->scope, "scope_digest"), jv_get_str(derived, "scope_digest"))) {
            fd_fail(e, "scope_mismatch", "", "%s: --scope-file says %s but the checkpoint's tensors say %s", o->scope_file,
                    jv_get_str(x->scope, "scope_digest"), jv_get_str(derived, "scope_digest"));
            jv_free(derived);
            return -1;
        }
        jv_free(x->scope);
        x->scope = derived;
        x->disc = quant_disclosures(&x->W);
        x->dbits = jv_int(fd_q_bits(x->W.q.kind));
        fd_q_codec(&x->W.q, x->codec, sizeof x->codec);
    } else if (strcmp(o->role, "root") && !x->scope)
        return fd_fail(e, "bad_usage", "", "role %s needs --scope-file (the checkpoint has no quantization_config)", o->role);
    jv *f32d = f32_cast_disclosure(&x->W);
    if (f32d) {
        if (!x->disc) x->disc = jv_arr();
        jv_push(x->disc, f32d);
    }
    return 0;
}

/* config, checkpoint (lazily for layer-outer), the head, the scope, the identity */
static int open_model(cap *x, fd_err *e)
{
    const fd_capture_opts *o = x->o;
    if (fd_mm_init(&x->mm, o->kernel, o->threads, o->order, e)) return -1;
    x->mm_open = 1;
    if (fd_glm_config_load(o->model, &x->c, e)) return -1;
    x->lo = o->schedule && !strcmp(o->schedule, "layer-outer");
    if ((x->lo ? fd_weights_open_lazy : fd_weights_open)(o->model, &x->W, e)) return -1;
    x->wopen = 1;
    if (fd_weights_check(&x->W, &x->c, e)) return -1;
    char embed[128];
    fd_arch_prefix(x->c.arch, "embed_tokens", embed, sizeof embed - 8);
    strcat(embed, "weight");
    const fd_tensor *head = fd_weights_get(&x->W, x->c.tie_word_embeddings ? embed : "lm_head.weight");
    if (!head || head->ndim != 2 || head->shape[1] != (uint64_t)x->c.hidden_size)
        return fd_fail(e, "checkpoint_mismatch", "", "%s: no usable lm_head weight", o->model);
    if (strcmp(head->dtype, "BF16"))
        return fd_fail(e, "lossy_cast", "", "%s: lm_head is %s, not BF16 (a cast would be lossy)", o->model, head->dtype);
    x->head = head;
    if (read_scope(x, e)) return -1;
    return fd_checkpoint_identity(o->model, x->ck, x->cfg, &x->files, e);
}

/* The panel, narrowed to the shard's windows under MPI; *done set when the
 * shard is idle or its dataset is reused (manifest set). */
static int load_panel(cap *x, jv **manifest, int *done, fd_err *e)
{
    const fd_capture_opts *o = x->o;
    fd_capture_shard *sh = x->sh;
    fd_panel *P = &x->P;
    if (fd_panel_load(o->panel, o->panel_role ? o->panel_role : "final", o->windows, x->c.vocab_size, P, e)) return -1;
    x->popen_ = 1;
    if (!P->n) return fd_fail(e, "bad_panel", "", "%s: no window with role %s", o->panel, o->panel_role ? o->panel_role : "final");
    for (size_t i = 0; i < P->n; i++)
        if (mask_all_ones(&P->w[i], e)) return -1;
    if (!sh) return 0;
    size_t total = (size_t)sh->ranks < P->n ? (size_t)sh->ranks : P->n, hi_w;
    if ((size_t)sh->rank >= total) { sh->idle = 1; *done = 1; return 0; }
    fd_dist_range(P->n, sh->rank, (int)total, &x->lo_w, &hi_w);
    char suite[65];
    panel_suite_hash(P, suite);
    x->shard_of = fd_shard_of_block((size_t)sh->rank, total, suite);
    sh->path = fd_shard_path(o->out, (size_t)sh->rank, total);
    x->dest = sh->path;
    fd_shard_clean_partials(x->dest);
    jv *native = x->scope ? NULL : fd_native_scope();
    fd_shard_expect ex = {x->shard_of, (int64_t)x->lo_w, (int64_t)(hi_w - x->lo_w), (int64_t)P->n, o->dataset_id,
                          o->dataset_name, o->role, o->lane, x->ck, jv_get_str(x->scope ? x->scope : native, "scope_digest")};
    int reuse = fd_shard_reusable(x->dest, &ex, manifest, e);
    jv_free(native);
    if (reuse == 1) { sh->reused = 1; *done = 1; return 0; }
    if (reuse < 0 && !o->force) return -1;
    x->all_w = P->w;
    x->all_n = P->n;
    P->w += x->lo_w;
    P->n = hi_w - x->lo_w;
    return 0;
}

/* The memory pre-flight, then the generation sanity probe: one extra
 * window, before the panel loop (window-outer) or as window N+1 of the same
 * pass (layer-outer, FORMAT §6, which also computes every window's rows
 * here); a refusal here writes nothing. */
static int preflight_and_probe(cap *x, fd_err *e)
{
    const fd_capture_opts *o = x->o;
    fd_mem_estimate me;
    if (fd_memory_preflight(&x->W, &x->c, &x->P, x->lo, o->memory_limit, &me, e)) return -1;
    if (o->progress)
        fprintf(stderr, "{\"stage\":\"memory_preflight\",\"schedule\":\"%s\",\"estimate_bytes\":%llu,\"limit_bytes\":%llu}\n",
                x->lo ? "layer-outer" : "window-outer", (unsigned long long)me.total, (unsigned long long)me.limit);
    fd_probe_opts po = {o->sanity_prompt, o->sanity_expect, o->no_sanity_check};
    if (x->lo) {
        fd_probe_plan pp;
        if (fd_probe_prepare(&po, o->model, &pp, e)) return -1;
        x->pre = fd_xcalloc(x->P.n + 1, sizeof *x->pre);
        x->pre_s = fd_xcalloc(x->P.n + 1, sizeof *x->pre_s);
        int lr = fd_layer_outer(&x->mm, &x->W, &x->c, &x->P, &pp, x->head->name, x->pre, x->pre_s, &x->probe, o->progress, e);
        if (!lr && !x->probe) { x->probe = pp.skipped; pp.skipped = NULL; }
        fd_probe_plan_free(&pp);
        if (lr) return -1;
    } else if (fd_probe_run(&po, o->model, &x->mm, &x->W, &x->c, x->head, &x->probe, e)) return -1;
    if (o->progress) {
        const char *st = jv_get_str(x->probe, "status");
        fprintf(stderr, "{\"stage\":\"sanity_probe\",\"status\":\"%s\"}\n", st ? st : "?");
    }
    return 0;
}

/* --declared-bits (for checkpoints that do not say it themselves) and --score-from */
static int declared_and_scored(cap *x, fd_ds_identity *id, fd_err *e)
{
    const fd_capture_opts *o = x->o;
    if (o->declared_bits > 0) {
        jv *d = x->dbits;
        double have = !d ? 0 : d->t == JV_INT ? (double)d->u.i : d->t == JV_FLOAT ? d->u.f : 0;
        if (have > 0 && have != o->declared_bits)
            return fd_fail(e, "declared_bits_mismatch", "", "--declared-bits %g contradicts the checkpoint's %g bits",
                           o->declared_bits, have);
        jv_free(x->dbits);
        x->dbits = jv_float(o->declared_bits);
    }
    if (o->score_from && o->emit_k3_compat)
        return fd_fail(e, "k3_incompatible_panel", "", "--emit-k3-compat with --score-from %zu: kimi-k3 scores every row 0..L-2 "
                       "of a context, so a windowed capture has no kimi-k3 view", o->score_from);
    if (o->score_from) { /* --score-from N: rows N .. L-2 of each window (a windowed panel, PANEL-D3) */
        for (size_t i = 0; i < x->P.n; i++)
            if (x->P.w[i].n_ids < o->score_from + 2)
                return fd_fail(e, "bad_score_from", "", "--score-from %zu leaves window %s (%zu tokens) no scored row",
                               o->score_from, x->P.w[i].window_id, x->P.w[i].n_ids);
        x->swin = fd_scoring_window_block((int64_t)o->score_from, (int64_t)x->P.context_length,
                                          (int64_t)(x->all_w ? x->all_n : x->P.n));
        id->scoring_window = x->swin;
    }
    return 0;
}

/* The dataset's identity block (its strings live in x). */
static int fill_identity(cap *x, fd_ds_identity *id, fd_err *e)
{
    const fd_capture_opts *o = x->o;
    if (o->weights_repository) snprintf(x->repo, sizeof x->repo, "%s", o->weights_repository);
    else if (x->P.receipt_tokenizer_id) snprintf(x->repo, sizeof x->repo, "%s", x->P.receipt_tokenizer_id);
    else if (tokenizer_identity(o->model, x->c.vocab_size, x->repo, sizeof x->repo, e)) return -1;
    id->dataset_id = o->dataset_id;
    id->dataset_name = o->dataset_name;
    id->role = o->role;
    id->lane = o->lane;
    id->run_name = o->run_name ? o->run_name : o->cold_run;
    id->cold_run = o->cold_run ? o->cold_run : x->sh ? x->sh->run_stamp : NULL;
    id->shard_of = x->shard_of;
    id->index_base = (int64_t)x->lo_w;
    id->declared_records = x->sh ? (int64_t)x->all_n : 0;
    id->weights_repository = x->repo;
    id->weights_revision = o->weights_revision;
    id->repository = o->repository;
    id->scope = x->scope;
    if (declared_and_scored(x, id, e)) return -1;
    id->extra_disclosures = x->disc;
    id->declared_bits = x->dbits;
    id->codec = x->codec[0] ? x->codec : NULL;
    /* the dataset schema wants panel ids spelled "panel--..."; a declared id
     * without that prefix is recorded with it prepended */
    snprintf(x->pid, sizeof x->pid, "%s%s", strncmp(x->P.panel_id, "panel--", 7) ? "panel--" : "", x->P.panel_id);
    id->panel_id = x->pid;
    id->panel_name = x->P.name;
    id->checkpoint_identity_sha256 = x->ck;
    id->config_sha256 = x->cfg;
    id->checkpoint_files = x->files;
    /* the architecture the forward ran: the config's model_type */
    snprintf(x->engine, sizeof x->engine, "fidelity C forward: %s, transformers 5.16 rounding points, eager attention, "
             "bf16 products in the %s order", x->c.arch->info.model_type, fd_order_name(o->order));
    id->engine = x->engine;
    id->hidden = x->c.hidden_size;
    id->vocab = (int64_t)x->head->shape[0];
    id->context_length = (int64_t)x->P.context_length;
    id->force = o->force;
    id->emit_k3_compat = o->emit_k3_compat;
    id->generation_sanity_probe = x->probe;
    return 0;
}

/* every window's rows into the writer (window-outer: the forward runs here) */
static int write_windows(cap *x, fd_err *e)
{
    const fd_capture_opts *o = x->o;
    size_t H = (size_t)x->c.hidden_size;
    for (size_t i = 0; i < x->P.n; i++) {
        const fd_panel_window *pw = &x->P.w[i];
        double t0 = now_s();
        if (x->pre) {
            x->hid = x->pre[i];
            x->pre[i] = NULL;
        } else {
            x->hid = fd_xmalloc(pw->n_ids * H * 2 + 2);
            if (fd_forward_hidden(&x->mm, &x->W, &x->c, pw->ids, pw->n_ids, x->hid, e)) return -1;
        }
        fd_ds_window win;
        fd_panel_ds_window(pw, &win);
        size_t rows = pw->n_ids - 1; /* all-ones mask: causal = rows 0..L-2 */
        if (rows != pw->prediction_positions)
            return fd_fail(e, "bad_panel", "", "window %s: %zu scored rows but %zu prediction positions", pw->window_id,
                           rows, pw->prediction_positions);
        win.scored_rows = rows - o->score_from;
        win.elapsed_seconds = x->pre ? x->pre_s[i] : now_s() - t0;
        if (fd_dsw_add_window(x->dw, &win, x->hid + o->score_from * H, e)) return -1;
        free(x->hid);
        x->hid = NULL;
        test_die_hook(i + 1, x->sh);
        if (o->progress)
            fprintf(stderr, "{\"stage\":\"window\",\"window_id\":\"%s\",\"rows\":%zu,\"seconds\":%.3f}\n", pw->window_id,
                    rows, win.elapsed_seconds);
    }
    return 0;
}

/* The head, then the checkpoint hashed again: the weights were read through
 * mmap, so the files must hash as they did before, or nothing is sealed (a
 * page that vanished is SIGBUS, a named refusal: fd_sigbus_refuses). */
static int head_and_recheck(cap *x, fd_err *e)
{
    const fd_tensor *head = x->head;
    /* the head straight from the mapping (no second copy of a vocabulary
     * matrix: layer-outer under a tight limit), copied only when misaligned */
    uint16_t *hb = ((uintptr_t)head->data & 1) ? fd_xmalloc(head->nbytes + 2) : NULL;
    if (hb) memcpy(hb, head->data, head->nbytes);
    int hr = fd_dsw_set_head(x->dw, hb ? hb : (const uint16_t *)head->data, e);
    free(hb);
    if (hr) return -1;
    char ck2[65], cfg2[65];
    jv *files2 = NULL;
    int changed = fd_checkpoint_identity(x->o->model, ck2, cfg2, &files2, e);
    jv_free(files2);
    if (changed) return -1;
    if (strcmp(ck2, x->ck))
        return fd_fail(e, "checkpoint_changed", "", "%s: the checkpoint files changed while the capture read them (their "
                       "digests before and after the forward differ): nothing was sealed", x->o->model);
    return 0;
}

static void cap_free(cap *x)
{
    if (x->mm_open) fd_mm_free(&x->mm);
    if (x->dw) fd_dsw_abort(x->dw);
    free(x->hid);
    for (size_t i = 0; x->pre && i < x->P.n; i++) free(x->pre[i]);
    free(x->pre);
    free(x->pre_s);
    if (x->all_w) { x->P.w = x->all_w; x->P.n = x->all_n; }
    if (x->popen_) fd_panel_free(&x->P);
    jv_free(x->shard_of);
    if (x->wopen) fd_weights_close(&x->W);
    fd_glm_config_free(&x->c);
    jv_free(x->scope);
    jv_free(x->files);
    jv_free(x->probe);
    jv_free(x->disc);
    jv_free(x->dbits);
    jv_free(x->swin);
}

static int capture_impl(const fd_capture_opts *o, fd_capture_shard *sh, jv **manifest, fd_err *e)
{
    if (check_opts(o, sh, e)) return -1;
    cap *x = fd_xcalloc(1, sizeof *x);
    x->o = o;
    x->sh = sh;
    x->dest = o->out;
    int rc = -1, done = 0;
    fd_ds_identity id = {0};
    if (open_model(x, e) || load_panel(x, manifest, &done, e)) goto out;
    if (done) { rc = 0; goto out; } /* an idle shard, or a shard whose dataset is reused */
    if (preflight_and_probe(x, e) || fill_identity(x, &id, e)) goto out;
    if (!(x->dw = fd_dsw_begin(x->dest, &id, e))) goto out;
    if (write_windows(x, e) || head_and_recheck(x, e)) goto out;
    rc = fd_dsw_finish(x->dw, manifest, e);
    x->dw = NULL;
    if (!rc && o->memory_report) {
        size_t mt = 0;
        for (size_t i = 0; i < x->P.n; i++) mt = x->P.w[i].n_ids > mt ? x->P.w[i].n_ids : mt;
        rc = write_memory_report(o->memory_report, &x->W, x->files, x->P.n, mt, e);
    }
out:
    cap_free(x);
    free(x);
    return rc;
}
