#include "capture/capture.h"
#include "engine/gguf_model.h"
#include "capture/capture_meta.h"
#include "format/scoring_window.h"
#include "capture/panel.h"
#include "capture/panel_binding.h"
#include "capture/qscope.h"
#include "engine/config.h"
#include "engine/model.h"
#include "capture/probe.h"
#include "capture/resume.h"
#include "capture/schedule.h"
#include "capture/shard.h"
#include "engine/weights.h"
#include "format/digest.h"
#include "format/sha.h"
#include "format/writer.h"
#include "mpi/dist.h"
#include "util/buf.h"
#include "util/fsio.h"
#include "util/progress.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

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
    jv *scope, *files, *probe, *disc, *dbits, *shard_of, *swin, *binding;
    jv *btok;                       /* --panel-binding: the binding's tokenizer block (the manifest's) */
    const char *breceipt;           /* ...and its receipt's declared digest (borrowed from binding) */
    fd_panel_window *all_w;         /* a shard narrows P to its windows; restored before the free */
    size_t all_n, lo_w;
    const char *dest;
    uint16_t **pre;                 /* layer-outer: every window's rows, computed before the writer starts */
    double *pre_s;
    char codec[64], ck[65], cfg[65], repo[512], pid[600], engine[200], tied[160];
    fd_resume jr;   /* window-outer, one process: the --resume journal */
    fd_dsw *dw;
    uint16_t *hid;
    const fd_tensor *head;
    fd_tensor headq;   /* a quantized head (MLX lm_head / tied embedding) dequantized whole, bf16 */
    uint16_t *headbuf;
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
    if (!o->panel_binding != !o->panel_binding_sha256 || (o->panel_tokenizer_root && !o->panel_binding))
        return fd_fail(e, "bad_usage", "", "--panel-binding and --panel-binding-sha256 go together (the sha256 "
                       "`fidelity panel-binding` printed); --panel-tokenizer-root needs them");
    if (o->author && (!*o->author || strlen(o->author) > 96 || strspn(o->author, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != strlen(o->author) ||
                      strchr("_.-", o->author[0])))
        return fd_fail(e, "bad_usage", "", "--author must be an HF handle ([A-Za-z0-9][A-Za-z0-9_.-]{0,95})");
    if (o->panel_binding_sha256 && (strlen(o->panel_binding_sha256) != 64 ||
                                    strspn(o->panel_binding_sha256, "0123456789abcdef") != 64))
        return fd_fail(e, "bad_usage", "", "--panel-binding-sha256 must be a lowercase 64-hex sha256");
    if (o->resume && (sh || (o->schedule && !strcmp(o->schedule, "layer-outer"))))
        return fd_fail(e, "bad_usage", "", "--resume continues a window-outer capture in one process (a layer-outer "
                       "pass computes every window at once; under mpirun a sealed shard is reused whole)");
    return 0;
}

/* The declared bits of a checkpoint without a quantization_config (an RTN
 * copy of `quantize`) from its --scope-file: the largest bits_per_weight of
 * the quantized assignments (as a mixed quantization_config declares its
 * largest); NULL when none is quantized. */
static jv *scope_bits(const jv *scope)
{
    const jv *as = jv_get(scope, "assignments");
    int64_t best = 0, b;
    for (size_t i = 0; as && as->t == JV_ARR && i < as->u.a.n; i++) {
        const char *t = jv_get_str(as->u.a.v[i], "treatment");
        if (t && !strcmp(t, "quantized") && !jv_get_i64(as->u.a.v[i], "bits_per_weight", &b) && b > best) best = b;
    }
    return best > 0 ? jv_int(best) : NULL;
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
        x->disc = fd_capture_quant_disclosures(&x->W);
        x->dbits = jv_int(fd_qconfig_bits(&x->W.q));
        fd_q_codec(&x->W.q, x->codec, sizeof x->codec);
        if (x->W.gguf) { /* the predominant ggml type's nominal bits (docs/QUANT-FORMATS.md "GGUF") */
            jv_free(x->dbits);
            x->dbits = jv_float(x->W.gnominal);
            snprintf(x->codec, sizeof x->codec, "gguf-%s", x->W.gmajor);
        }
    } else if (strcmp(o->role, "root") && !x->scope)
        return fd_fail(e, "bad_usage", "", "role %s needs --scope-file (the checkpoint has no quantization_config)", o->role);
    else if (x->scope && strcmp(o->role, "root"))
        x->dbits = scope_bits(x->scope);
    jv *f32d = fd_capture_f32_cast_disclosure(&x->W), *gsd = fd_capture_gguf_stored_disclosure(&x->W);
    if (f32d) {
        if (!x->disc) x->disc = jv_arr();
        jv_push(x->disc, f32d);
    }
    if (gsd) {
        if (!x->disc) x->disc = jv_arr();
        jv_push(x->disc, gsd);
    }
    return 0;
}

/* The checkpoint identity: a directory's files, or a GGUF set's files and
 * the config its metadata implies. */
static int identity(const cap *x, char ck[65], char cfg[65], jv **files, fd_err *e)
{
    if (!x->W.gguf) return fd_checkpoint_identity(x->o->model, ck, cfg, files, e);
    if (fd_gguf_identity(&x->W, files, cfg, e)) return -1;
    return fd_checkpoint_files_digest(*files, ck, e);
}

/* config, checkpoint (lazily for layer-outer), the head, the scope, the identity */
static int open_model(cap *x, fd_err *e)
{
    const fd_capture_opts *o = x->o;
    if (fd_mm_init(&x->mm, o->kernel, o->threads, o->order, e)) return -1;
    x->mm_open = 1;
    x->lo = o->schedule && !strcmp(o->schedule, "layer-outer");
    if (fd_gguf_is_model(o->model)) { /* a GGUF file (or a split set's first): config and views from it */
        if (fd_gguf_model_open(o->model, &x->c, &x->W, e)) return -1;
        x->wopen = 1;
    } else {
        if (fd_glm_config_load(o->model, &x->c, e)) return -1;
        if ((x->lo ? fd_weights_open_lazy : fd_weights_open)(o->model, &x->W, e)) return -1;
        x->wopen = 1;
        if (fd_weights_check(&x->W, &x->c, e)) return -1;
    }
    if (fd_weights_check_finite(&x->W, e)) return -1;
    char embed[128];
    fd_arch_prefix(x->c.arch, "embed_tokens", embed, sizeof embed - 8);
    strcat(embed, "weight");
    const fd_tensor *head = fd_weights_get(&x->W, x->c.tie_word_embeddings ? embed : "lm_head.weight");
    if (head && head->qfmt == FD_Q_MLX && head->ndim == 2 && head->lshape[1] == (uint64_t)x->c.hidden_size) {
        /* mlx-lm quantizes the head too: decoded whole to bf16 once (the dataset stores the head as bf16), as a
         * quantized GGUF head is; the decode is the Linear's (fd_tensor_row_bf16) */
        uint64_t V = head->lshape[0], K = head->lshape[1];
        x->headbuf = fd_xmalloc(V * K * 2 + 2);
        for (uint64_t r = 0; r < V; r++) fd_tensor_row_bf16(head, r, K, x->headbuf + r * K);
        x->headq = *head;
        x->headq.data = x->headbuf;
        x->headq.nbytes = V * K * 2;
        x->headq.qfmt = FD_Q_NONE;
        x->headq.shape[1] = K;
        snprintf(x->headq.dtype, sizeof x->headq.dtype, "BF16");
        head = &x->headq;
    }
    if (!head || head->ndim != 2 || head->shape[1] != (uint64_t)x->c.hidden_size)
        return fd_fail(e, "checkpoint_mismatch", "", "%s: no usable lm_head weight", o->model);
    if (strcmp(head->dtype, "BF16"))
        return fd_fail(e, "lossy_cast", "", "%s: lm_head is %s, not BF16 (a cast would be lossy)", o->model, head->dtype);
    x->head = head;
    if (read_scope(x, e)) return -1;
    return identity(x, x->ck, x->cfg, &x->files, e);
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
    if (o->panel_binding &&
        fd_capture_panel_binding(o->panel_binding, o->panel_binding_sha256, o->panel, o->panel_role ? o->panel_role : "final",
                                 o->panel_tokenizer_root ? o->panel_tokenizer_root : o->model, P, &x->binding, e))
        return -1;
    if (x->binding) { /* hf_capture: the binding's identities, its equivalences' disclosures first among ours */
        if (fd_panel_binding_identity(x->binding, P, &x->btok, &x->breceipt, e)) return -1;
        jv *bd = fd_panel_binding_disclosures(x->binding);
        for (size_t i = 0; bd && x->disc && i < x->disc->u.a.n; i++) jv_push(bd, jv_copy(x->disc->u.a.v[i]));
        if (bd) {
            jv_free(x->disc);
            x->disc = bd;
        }
    }
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
    else if (x->W.gguf) fd_gguf_tokenizer_identity(&x->W, x->c.vocab_size, x->repo, sizeof x->repo);
    else if (fd_capture_tokenizer_identity(o->model, x->c.vocab_size, x->repo, sizeof x->repo, e)) return -1;
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
    id->author = o->author;
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
    id->resolved_panel_binding = x->binding;
    if (x->binding) {
        id->tokenizer = x->btok;
        id->panel_receipt_sha256 = x->breceipt;
        id->panel_receipt_file = "panel/panel-receipt.json";
    }
    /* the architecture the forward ran: the config's model_type */
    snprintf(x->engine, sizeof x->engine, "fidelity C forward: %s, transformers 5.16 rounding points, eager attention, "
             "bf16 products in the %s order", x->c.arch->info.model_type, fd_order_name(o->order));
    id->engine = x->engine;
    id->hidden = x->c.hidden_size;
    id->vocab = (int64_t)x->head->shape[0];
    if (x->c.tie_word_embeddings) { /* the head shipped is the embedding tensor itself */
        snprintf(x->tied, sizeof x->tied, "%s", x->head->name);
        id->head_tied_to = x->tied;
    }
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
    double start = now_s();
    int journal = !x->sh && !x->pre; /* window-outer in one process */
    if (journal && fd_resume_open(&x->jr, x->dest, o->resume, e)) return -1;
    for (size_t i = 0; i < x->P.n; i++) {
        const fd_panel_window *pw = &x->P.w[i];
        double t0 = now_s(), taken_s = -1;
        size_t rows = pw->n_ids - 1; /* all-ones mask: causal = rows 0..L-2 */
        if (rows != pw->prediction_positions)
            return fd_fail(e, "bad_panel", "", "window %s: %zu scored rows but %zu prediction positions", pw->window_id,
                           rows, pw->prediction_positions);
        fd_resume_key key = {i, pw->window_id, pw->ids, pw->n_ids, x->ck, fd_order_name(o->order), o->score_from, rows, H};
        if (x->pre) {
            x->hid = x->pre[i];
            x->pre[i] = NULL;
        } else {
            x->hid = fd_xcalloc(pw->n_ids * H + 1, 2);
            int got = journal ? fd_resume_load(&x->jr, &key, x->hid + o->score_from * H, &taken_s, e) : 0;
            if (got < 0) return -1;
            if (!got && fd_forward_hidden(&x->mm, &x->W, &x->c, pw->ids, pw->n_ids, x->hid, e)) return -1;
        }
        fd_ds_window win;
        fd_panel_ds_window(pw, &win);
        win.scored_rows = rows - o->score_from;
        /* a NaN or infinity in the hidden states is refused here, by window,
         * before it reaches a statistic, a digest or the writer */
        for (size_t k = o->score_from * H; k < rows * H; k++)
            if ((x->hid[k] & 0x7f80u) == 0x7f80u)
                return fd_fail(e, "non_finite", "", "window %s: hidden_states position %zu, column %zu is %s (the forward "
                               "of %s produced a non-finite hidden state; refused, nothing written)", pw->window_id, k / H,
                               k % H, x->hid[k] & 0x7fu ? "NaN" : "infinite", o->model);
        win.elapsed_seconds = x->pre ? x->pre_s[i] : taken_s >= 0 ? taken_s : now_s() - t0;
        if (fd_dsw_add_window(x->dw, &win, x->hid + o->score_from * H, e)) return -1;
        if (journal && taken_s < 0) {
            char staged[1100];
            snprintf(staged, sizeof staged, "%s/capture/hidden_%04zu.safetensors", fd_dsw_staging(x->dw), i);
            if (fd_resume_save(&x->jr, &key, staged, x->hid + o->score_from * H, win.elapsed_seconds, e)) return -1;
        }
        free(x->hid);
        x->hid = NULL;
        test_die_hook(i + 1, x->sh);
        if (o->progress)
        {
            fprintf(stderr, "{\"stage\":\"window\",\"window_id\":\"%s\",\"rows\":%zu,\"seconds\":%.3f}\n", pw->window_id,
                    rows, win.elapsed_seconds);
            fd_progress_line(stderr, "capture", i + 1, x->P.n, "windows", 0, now_s() - start, 0);
        }
    }
    return 0;
}

/* row r of a quantized head, bf16 (fd_dsw_set_head_rows) */
static void head_row(void *ctx, uint64_t r, uint16_t *out)
{
    const fd_tensor *h = ctx;
    fd_tensor_row_bf16(h, r, h->lshape[1], out);
}

/* The head, then the checkpoint hashed again: the weights were read through
 * mmap, so the files must hash as they did before, or nothing is sealed (a
 * page that vanished is SIGBUS, a named refusal: fd_sigbus_refuses). */
static int head_and_recheck(cap *x, fd_err *e)
{
    const fd_tensor *head = x->head;
    int hr;
    if (head->qfmt != FD_Q_NONE) /* a quantized GGUF head: decoded a block of rows at a time */
        hr = fd_dsw_set_head_rows(x->dw, head_row, (void *)head, e);
    else {
        /* the head straight from the mapping (no second copy of a vocabulary
         * matrix: layer-outer under a tight limit), copied only when misaligned */
        uint16_t *hb = ((uintptr_t)head->data & 1) ? fd_xmalloc(head->nbytes + 2) : NULL;
        if (hb) memcpy(hb, head->data, head->nbytes);
        hr = fd_dsw_set_head(x->dw, hb ? hb : (const uint16_t *)head->data, e);
        free(hb);
    }
    if (hr) return -1;
    char ck2[65], cfg2[65];
    jv *files2 = NULL;
    int changed = identity(x, ck2, cfg2, &files2, e);
    jv_free(files2);
    if (changed) return -1;
    if (strcmp(ck2, x->ck))
        return fd_fail(e, "checkpoint_changed", "", "%s: the checkpoint files changed while the capture read them (their "
                       "digests before and after the forward differ): nothing was sealed", x->o->model);
    return 0;
}

static void cap_free(cap *x)
{
    free(x->headbuf);
    fd_resume_free(&x->jr);
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
    jv_free(x->binding);
    jv_free(x->btok);
}

/* A bound capture ships the panel's receipt byte for byte as
 * panel/panel-receipt.json (hf_capture's panel_receipt_file), once its bytes
 * are still the ones the binding's receipt_file_sha256 named. */
static int ship_panel_receipt(cap *x, fd_err *e)
{
    if (!x->binding) return 0;
    char *src = fd_path_join(x->o->panel, "panel.receipt.json"), sha[65];
    fd_buf raw = {0};
    int rc = fd_read_file(src, (size_t)256 << 20, &raw, e);
    if (!rc) {
        fd_sha256_hex(raw.p, raw.n, sha);
        if (strcmp(sha, x->P.panel_receipt_sha256))
            rc = fd_fail(e, "panel_binding_refused", "", "%s: panel receipt changed after load: expected %s, observed %s", src,
                         x->P.panel_receipt_sha256, sha);
    }
    if (!rc) {
        char *dst = fd_path_join(fd_dsw_staging(x->dw), "panel/panel-receipt.json");
        rc = fd_write_atomic(dst, raw.p, raw.n, e);
        free(dst);
    }
    fd_buf_free(&raw);
    free(src);
    return rc;
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
    /* --resume: the interrupted run's staging directories go (its finished
     * windows live on in OUT.resume/, hard-linked) */
    if (o->resume && !sh) fd_shard_clean_partials(x->dest);
    if (!(x->dw = fd_dsw_begin(x->dest, &id, e))) goto out;
    if (ship_panel_receipt(x, e) || write_windows(x, e) || head_and_recheck(x, e)) goto out;
    rc = fd_dsw_finish(x->dw, manifest, e);
    x->dw = NULL;
    if (!rc && x->jr.dir) {
        if (o->resume)
            fprintf(stderr, "capture: %zu of %zu window(s) taken from the journal %s (each verified), %zu computed\n",
                    x->jr.taken, x->P.n, x->jr.dir, x->P.n - x->jr.taken);
        fd_resume_finish(&x->jr);
    }
    if (!rc && o->memory_report) {
        size_t mt = 0;
        for (size_t i = 0; i < x->P.n; i++) mt = x->P.w[i].n_ids > mt ? x->P.w[i].n_ids : mt;
        rc = fd_capture_write_memory_report(o->memory_report, &x->W, x->files, x->P.n, mt, e);
    }
out:
    cap_free(x);
    free(x);
    return rc;
}
