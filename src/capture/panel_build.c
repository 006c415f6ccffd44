/* fidelity panel build (panel.h fd_panel_build): token-id or text inputs
 * cut into windows, written as a panel (panel.json, arrays/, and for text
 * a sealed panel.receipt.json) under a temporary name, read back as a
 * capture would, then renamed into place. */
#include "capture/panel.h"
#include "capture/panel_internal.h"
#include "tokenizer/tokenizer.h"
#include "format/digest.h"
#include "format/npy.h"
#include "format/sha.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    int64_t *ids;
    size_t n;
    size_t input;   /* index into the inputs */
    char *domain, *docid;   /* text mode; NULL otherwise */
} seq;

typedef struct {
    seq *v;
    size_t n, cap;
} seqv;

static void seq_push(seqv *s, int64_t *ids, size_t n, size_t input)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = fd_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = (seq){ids, n, input, NULL, NULL};
}

static int id_ok(int64_t v, int64_t vocab, const char *path, size_t row, size_t pos, fd_err *e)
{
    if (v >= 0 && v < vocab) return 0;
    return fd_fail(e, "token_out_of_range", "", "%s: token %lld (sequence %zu, position %zu) is outside [0, %lld)", path,
                   (long long)v, row, pos, (long long)vocab);
}

static int json_list(const jv *a, const char *path, size_t row, int64_t vocab, int64_t **ids, size_t *n, fd_err *e)
{
    *ids = fd_xmalloc((a->u.a.n ? a->u.a.n : 1) * sizeof **ids);
    *n = a->u.a.n;
    for (size_t i = 0; i < a->u.a.n; i++) {
        const jv *v = a->u.a.v[i];
        if (v->t == JV_BIGINT)
            return fd_fail(e, "token_out_of_range", "", "%s: token %.*s (sequence %zu, position %zu) is outside [0, %lld)",
                           path, (int)(v->u.s.n > 40 ? 40 : v->u.s.n), v->u.s.p, row, i, (long long)vocab);
        if (v->t != JV_INT)
            return fd_fail(e, "bad_input", "", "%s: sequence %zu position %zu is not an integer", path, row, i);
        (*ids)[i] = v->u.i;
        if (id_ok(v->u.i, vocab, path, row, i, e)) return -1;
    }
    return 0;
}

static int read_input(const char *path, size_t index, int64_t vocab, seqv *out, char sha[65], fd_err *e)
{
    fd_buf b = {0};
    if (fd_read_file(path, FD_PANEL_NPY_MAX, &b, e)) { fd_buf_free(&b); return -1; }
    fd_sha256_hex(b.p, b.n, sha);
    int rc = 0;
    if (b.n >= 6 && !memcmp(b.p, "\x93NUMPY", 6)) {
        static const char *const IN_DESCRS[] = {"<i8", "<i4", "<i2", "|i1", "<u8", "<u4", "<u2", "|u1", NULL};
        uint64_t shape[4];
        int ndim;
        const char *descr;
        const unsigned char *data;
        if (fd_panel_npy_any((const unsigned char *)b.p, b.n, IN_DESCRS, path, 2, &descr, shape, &ndim, &data, e)) {
            e->code[0] = 0;
            snprintf(e->code, sizeof e->code, "bad_input");
            rc = -1;
        } else {
            size_t rows = ndim == 1 ? 1 : (size_t)shape[0], cols = ndim == 1 ? (size_t)shape[0] : (size_t)shape[1];
            for (size_t r = 0; r < rows && !rc; r++) {
                int64_t *ids = fd_xmalloc((cols ? cols : 1) * sizeof *ids);
                for (size_t c = 0; c < cols && !rc; c++) {
                    size_t i = r * cols + c;
                    if (!strcmp(descr, "<u8")) { /* ids past INT64_MAX are out of range anyway */
                        uint64_t u;
                        memcpy(&u, data + 8 * i, 8);
                        if (u > INT64_MAX)
                            rc = fd_fail(e, "token_out_of_range", "", "%s: token %llu (sequence %zu, position %zu) is outside [0, %lld)",
                                         path, (unsigned long long)u, r, c, (long long)vocab);
                    }
                    if (!rc) { ids[c] = fd_panel_npy_elem(descr, data, i); rc = id_ok(ids[c], vocab, path, r, c, e); }
                }
                if (rc) free(ids);
                else seq_push(out, ids, cols, index);
            }
        }
    } else {
        jv *doc = jv_parse(b.p, b.n, e);
        if (!doc) {
            char msg[sizeof e->msg];
            snprintf(msg, sizeof msg, "%s", e->msg);
            rc = fd_fail(e, "bad_input", "", "%s: neither a .npy file nor JSON: %s", path, msg);
        } else if (doc->t != JV_ARR || doc->u.a.n == 0) {
            rc = fd_fail(e, "bad_input", "", "%s: not a non-empty JSON list of token ids or of token-id lists", path);
        } else if (doc->u.a.v[0]->t == JV_ARR) {
            for (size_t r = 0; r < doc->u.a.n && !rc; r++) {
                const jv *a = doc->u.a.v[r];
                int64_t *ids = NULL;
                size_t n = 0;
                if (a->t != JV_ARR) rc = fd_fail(e, "bad_input", "", "%s: item %zu is not a list of token ids", path, r);
                else rc = json_list(a, path, r, vocab, &ids, &n, e);
                if (rc) free(ids);
                else seq_push(out, ids, n, index);
            }
        } else {
            int64_t *ids = NULL;
            size_t n = 0;
            rc = json_list(doc, path, 0, vocab, &ids, &n, e);
            if (rc) free(ids);
            else seq_push(out, ids, n, index);
        }
        jv_free(doc);
    }
    fd_buf_free(&b);
    return rc;
}

static int write_file(const char *dir, const char *rel, const void *p, size_t n, char sha[65], fd_err *e)
{
    char *path = fd_path_join(dir, rel);
    int rc = fd_write_atomic(path, p, n, e);
    free(path);
    if (!rc && sha) fd_sha256_hex(p, n, sha);
    return rc;
}

static int role_ok(const char *r)
{
    if (!r || !*r || strlen(r) > 64 || r[0] == '.') return 0;
    for (const char *c = r; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-' || *c == '.'))
            return 0;
    return 1;
}

#define CUT_RULE                                                                                   \
    "each document is tokenized without special tokens and cut into consecutive windows of "      \
    "template_prefix_ids + (context_length - len(prefix)) of its tokens; a shorter tail is dropped; " \
    "documents in input order"

/* panel.receipt.json of a text-mode build: what the windows were made
 * from (tokenizer bytes, sources, the cutting rule), bound to panel.json by
 * its sha, sealed by receipt_sha256 (sha256 of the canonical JSON with that
 * field ""). */
static int write_receipt(const char *dir, const jv *doc, const char *pj, size_t pjn, size_t L, size_t np,
                         const int64_t *prefix, fd_err *e)
{
    jv *r = jv_obj();
    char pjs[65], seal[65];
    fd_sha256_hex(pj, pjn, pjs);
    jv_set(r, "schema", jv_str(FD_PANEL_RECEIPT_SCHEMA));
    jv_set(r, "panel_id", jv_copy(jv_get(doc, "panel_id")));
    jv_set(r, "panel_json_sha256", jv_str(pjs));
    jv_set(r, "suite_token_hash_sha256", jv_copy(jv_get(doc, "suite_token_hash_sha256")));
    jv_set(r, "tokenizer", jv_copy(jv_get(doc, "tokenizer")));
    jv *pre = jv_arr();
    for (size_t i = 0; i < np; i++) jv_push(pre, jv_int(prefix[i]));
    jv *cut = jv_obj();
    jv_set(cut, "context_length", jv_int((int64_t)L));
    jv_set(cut, "template_prefix_ids", pre);
    jv_set(cut, "rule", jv_str(CUT_RULE));
    jv_set(r, "windows", cut);
    jv_set(r, "sources", jv_copy(jv_get(jv_get(doc, "provenance"), "inputs")));
    jv_set(r, "contexts", jv_copy(jv_get(doc, "contexts")));
    jv_set(r, "receipt_sha256", jv_str(""));
    fd_buf b = {0};
    int rc = jv_seal(r, "receipt_sha256", seal, e);
    if (!rc) {
        jv_set(r, "receipt_sha256", jv_str(seal));
        rc = jv_dump(r, &JV_PRETTY, &b, e);
    }
    if (!rc) {
        fd_buf_putc(&b, '\n');
        rc = write_file(dir, "panel.receipt.json", b.p, b.n, NULL, e);
    }
    fd_buf_free(&b);
    jv_free(r);
    return rc;
}

/* the state of one fd_panel_build */
typedef struct pbuild {
    const fd_panel_build_opts *o;
    char *const *inputs;
    size_t n_inputs;
    const char *role, *domain;
    seqv seqs;
    char (*in_sha)[65];
    const char **in_domain;
    char **in_path;
    int64_t vocab, *prefix;
    size_t np, L, step, nwin;
    int width;
    fd_buf tmp;
    char mask_sha[65];
    jv *doc;
    char **per; /* per window: its token_ids_json_sha256, owned by doc */
} pbuild;

static int build_check_opts(const fd_panel_build_opts *o, const char *role, size_t n_inputs, fd_err *e)
{
    if (!o->out || !*o->out) return fd_fail(e, "bad_usage", "", "--out is required");
    if (o->vocab_size <= 0 && !o->tokenizer) return fd_fail(e, "bad_usage", "", "--vocab must be positive");
    if (!role_ok(role)) return fd_fail(e, "bad_usage", "", "role '%s' is not a file-name-safe word ([A-Za-z0-9._-])", role);
    if (o->context_length == 1 || o->context_length < 0)
        return fd_fail(e, "bad_usage", "", "--context-length must be at least 2");
    if (n_inputs == 0) return fd_fail(e, "bad_usage", "", "no INPUT files");
    if (o->upstream_layout && fd_panel_upstream_check(o, e)) return -1;
    struct stat st;
    if (lstat(o->out, &st) == 0 && !o->force)
        return fd_fail(e, "destination_exists", "", "%s already exists (pass --force to replace it)", o->out);
    return 0;
}

/* one text input, [DOMAIN=]PATH (an existing file name wins over the split), into sequences */
static int build_text_input(pbuild *b, size_t i, fd_err *e)
{
    const fd_panel_build_opts *o = b->o;
    const char *eq = strchr(b->inputs[i], '='), *path = b->inputs[i];
    b->in_domain[i] = b->domain;
    if (eq && !fd_is_file(b->inputs[i])) {
        char *d = fd_xstrndup(b->inputs[i], (size_t)(eq - b->inputs[i]));
        if (!role_ok(d)) {
            int rc = fd_fail(e, "bad_usage", "", "%s: domain '%s' is not a file-name-safe word", b->inputs[i], d);
            free(d);
            return rc;
        }
        b->in_path[i] = d; /* owns the domain string */
        b->in_domain[i] = d;
        path = eq + 1;
    }
    fd_panel_docs docs = {0};
    int rc = fd_panel_text_docs(o->tokenizer, path, b->in_domain[i], i, &docs, b->in_sha[i], e);
    for (size_t k = 0; k < docs.n && !rc; k++) {
        for (size_t j = 0; j < docs.v[k].n && !rc; j++) rc = id_ok(docs.v[k].ids[j], b->vocab, path, k, j, e);
        if (rc) break;
        seq_push(&b->seqs, docs.v[k].ids, docs.v[k].n, i);
        b->seqs.v[b->seqs.n - 1].domain = docs.v[k].domain;
        b->seqs.v[b->seqs.n - 1].docid = docs.v[k].document_id;
        docs.v[k].ids = NULL;
        docs.v[k].domain = docs.v[k].document_id = NULL;
    }
    fd_panel_docs_free(&docs);
    return rc;
}

/* the inputs (token ids, or text through the tokenizer) into sequences */
static int build_read(pbuild *b, fd_err *e)
{
    const fd_panel_build_opts *o = b->o;
    if (o->tokenizer) {
        if (b->vocab <= 0) b->vocab = fd_tok_vocab_size(o->tokenizer);
        if (o->context_length <= 0) return fd_fail(e, "bad_usage", "", "text inputs need --context-length");
        if (!o->no_prefix && fd_panel_template_prefix(o->tokenizer, &b->prefix, &b->np, e)) return -1;
        if ((long)b->np + 1 >= o->context_length)
            return fd_fail(e, "bad_usage", "", "--context-length %ld leaves no room after the %zu template token(s)",
                           o->context_length, b->np);
    }
    for (size_t i = 0; i < b->n_inputs; i++) {
        int rc = o->tokenizer ? build_text_input(b, i, e) : read_input(b->inputs[i], i, b->vocab, &b->seqs, b->in_sha[i], e);
        if (rc) return rc;
    }
    return 0;
}

/* windows: split to --context-length (tails dropped), else all equal */
static int build_geometry(pbuild *b, fd_panel_build_result *res, fd_err *e)
{
    const fd_panel_build_opts *o = b->o;
    const seqv *s = &b->seqs;
    b->L = o->context_length > 0 ? (size_t)o->context_length : (s->n ? s->v[0].n : 0);
    if (o->context_length <= 0) {
        for (size_t i = 0; i < s->n; i++)
            if (s->v[i].n != b->L)
                return fd_fail(e, "ragged_panel", "", "%s: a sequence of %zu tokens where the first has %zu; a ragged "
                               "panel is refused (pass --context-length to split into equal windows)",
                               b->inputs[s->v[i].input], s->v[i].n, b->L);
        if (b->L < 2)
            return fd_fail(e, "bad_input", "", "%s: windows of %zu tokens; a window needs at least two", b->inputs[0], b->L);
    }
    b->step = b->L - b->np; /* document tokens per window */
    b->nwin = 0;
    for (size_t i = 0; i < s->n; i++) {
        b->nwin += s->v[i].n / b->step;
        if (s->v[i].n % b->step) { res->dropped_tails++; res->dropped_tokens += s->v[i].n % b->step; }
    }
    if (o->max_windows > 0 && b->nwin > (size_t)o->max_windows) b->nwin = (size_t)o->max_windows;
    if (b->nwin == 0) return fd_fail(e, "bad_input", "", "no sequence holds a full window of %zu tokens", b->L);
    b->width = 4;
    for (size_t m = b->nwin - 1; m >= 10000; m /= 10) b->width++; /* keep byte order == build order */
    return 0;
}

/* one window's panel.json entry */
static jv *window_json(const pbuild *b, const seq *q, const char *wid, const char *docid, size_t docid_n,
                       const char *tok_sha, const char *json_sha)
{
    jv *win = jv_obj();
    jv_set(win, "window_id", jv_str(wid));
    jv_set(win, "role", jv_str(b->role));
    jv_set(win, "domain", jv_str(q->domain ? q->domain : b->domain));
    jv_set(win, "document_id", jv_strn(docid, docid_n));
    jv_set(win, "num_tokens", jv_int((int64_t)b->L));
    jv_set(win, "prediction_positions", jv_int((int64_t)b->L - 1));
    jv_set(win, "token_ids_sha256", jv_str(tok_sha));
    jv_set(win, "attention_mask_sha256", jv_str(b->mask_sha));
    jv_set(win, "token_ids_json_sha256", jv_str(json_sha));
    return win;
}

/* the temporary folder, the shared all-ones int64 causal mask, every window's
 * tokens .npy and its entry in doc's "windows" */
static int build_windows(pbuild *b, fd_err *e)
{
    fd_buf_printf(&b->tmp, "%s.partial-%ld", b->o->out, (long)getpid());
    fd_rmtree(b->tmp.p);
    char *arrays = fd_path_join(b->tmp.p, "arrays");
    int rc = fd_mkdirs(arrays, e);
    free(arrays);
    if (rc) return rc;
    size_t L = b->L, np = b->np, step = b->step;
    char mask_rel[64];
    snprintf(mask_rel, sizeof mask_rel, "arrays/causal-mask-%zu.npy", L);
    uint64_t shape[1] = {L};
    fd_buf mb = {0}, tb = {0};
    fd_npy_header(&mb, "<i8", shape, 1);
    for (size_t i = 0; i < L; i++) { int64_t one = 1; fd_buf_put(&mb, &one, 8); }
    fd_sha256_hex(mb.p, mb.n, b->mask_sha);
    /* the upstream layout: each window's own arrays/<id>.mask.npy (same bytes) */
    if (!b->o->upstream_layout) rc = write_file(b->tmp.p, mask_rel, mb.p, mb.n, NULL, e);
    if (rc) { fd_buf_free(&mb); return rc; }
    b->doc = jv_obj();
    jv *wins = jv_arr();
    jv_set(b->doc, "windows", wins);
    b->per = fd_xmalloc(b->nwin * sizeof *b->per);
    size_t w = 0, *k_per_input = fd_xcalloc(b->n_inputs, sizeof *k_per_input);
    int64_t *wbuf = fd_xmalloc(L * sizeof *wbuf);
    if (np) memcpy(wbuf, b->prefix, np * sizeof *wbuf);
    for (size_t i = 0; i < b->seqs.n && !rc && w < b->nwin; i++) {
        const seq *q = &b->seqs.v[i];
        for (size_t off = 0; off + step <= q->n && !rc && w < b->nwin; off += step, w++) {
            memcpy(wbuf + np, q->ids + off, step * sizeof *wbuf);
            char wid[128], rel[256], tok_sha[65], json_sha[65];
            if (snprintf(wid, sizeof wid, "%s-%0*zu", b->role, b->width, w) >= (int)sizeof wid) { /* role <= 64 chars */
                rc = fd_fail(e, "bad_usage", "", "window id too long");
                break;
            }
            snprintf(rel, sizeof rel, "arrays/%s.tokens.npy", wid);
            tb.n = 0;
            fd_npy_header(&tb, "<i8", shape, 1);
            fd_buf_put(&tb, wbuf, L * sizeof *wbuf); /* little-endian hosts only (x86-64, aarch64) */
            if ((rc = write_file(b->tmp.p, rel, tb.p, tb.n, tok_sha, e))) break;
            if (b->o->upstream_layout) {
                snprintf(rel, sizeof rel, "arrays/%s.mask.npy", wid);
                if ((rc = write_file(b->tmp.p, rel, mb.p, mb.n, NULL, e))) break;
            }
            fd_token_ids_sha256(wbuf, L, 0, json_sha);
            fd_buf docid = {0};
            if (q->docid) fd_buf_puts(&docid, q->docid);
            else {
                char *ib = fd_panel_basename(b->inputs[q->input]);
                fd_buf_printf(&docid, "%s#%zu", ib, k_per_input[q->input]++);
                free(ib);
            }
            jv *win = window_json(b, q, wid, docid.p, docid.n, tok_sha, json_sha);
            jv_push(wins, win);
            fd_buf_free(&docid);
            b->per[w] = (char *)jv_get_str(win, "token_ids_json_sha256"); /* owned by doc */
        }
    }
    free(k_per_input);
    free(wbuf);
    fd_buf_free(&tb);
    fd_buf_free(&mb);
    return rc;
}

/* panel.json's "tokenizer" block */
static jv *tokenizer_json(const pbuild *b)
{
    const fd_panel_build_opts *o = b->o;
    jv *tok = jv_obj();
    if (!o->tokenizer) {
        jv_set(tok, "id", jv_null());
        jv_set(tok, "vocab_size", jv_int(b->vocab));
        return tok;
    }
    char tid[600];
    if (o->tokenizer_id) snprintf(tid, sizeof tid, "%s", o->tokenizer_id);
    else snprintf(tid, sizeof tid, "local/tokenizer-%.16s", fd_tok_sha256(o->tokenizer));
    if (o->upstream_layout) snprintf(tid, sizeof tid, "%s", o->tokenizer_repository);
    jv_set(tok, "id", jv_str(tid));
    jv_set(tok, "repository", jv_str(tid));
    jv_set(tok, "revision", o->upstream_layout ? jv_str(o->tokenizer_revision) : jv_null());
    jv_set(tok, "vocab_size", jv_int(b->vocab));
    jv_set(tok, "add_special_tokens", jv_bool(b->np > 0));
    jv_set(tok, "chat_template_applied", jv_bool(0));
    jv_set(tok, "tokenizer_json_sha256", jv_str(fd_tok_sha256(o->tokenizer)));
    return tok;
}

/* panel.json's "provenance" block */
static jv *provenance_json(const pbuild *b)
{
    jv *prov = jv_obj(), *ins = jv_arr();
    jv_set(prov, "tool", jv_str("fidelity panel build"));
    for (size_t i = 0; i < b->n_inputs; i++) {
        jv *in = jv_obj();
        char *ib = fd_panel_basename(b->in_path[i] ? strchr(b->inputs[i], '=') + 1 : b->inputs[i]);
        jv_set(in, "name", jv_str(ib));
        free(ib);
        jv_set(in, "sha256", jv_str(b->in_sha[i]));
        if (b->o->tokenizer) jv_set(in, "domain", jv_str(b->in_domain[i]));
        jv_push(ins, in);
    }
    jv_set(prov, "inputs", ins);
    return prov;
}

/* panel.json (and panel.receipt.json of a text build) into the temporary folder */
static int build_doc(pbuild *b, fd_panel_build_result *res, fd_err *e)
{
    const fd_panel_build_opts *o = b->o;
    jv *doc = b->doc;
    char suite[65], legacy[65];
    fd_suite_token_hash(b->per, b->nwin, 0, suite);
    fd_suite_token_hash(b->per, b->nwin, 1, legacy);
    memcpy(res->suite_token_hash_sha256, suite, 65);
    char *base = fd_panel_basename(o->out);
    fd_buf pid = {0}, pj = {0};
    if (o->panel_id) fd_buf_puts(&pid, o->panel_id);
    else fd_buf_printf(&pid, "panel--%s", base);
    free(base);
    fd_buf_cstr(&pid);
    jv_set(doc, "schema", jv_str(FD_PANEL_SCHEMA));
    jv_set(doc, "panel_id", jv_str(pid.p));
    jv_set(doc, "name", jv_str(o->name ? o->name : pid.p));
    fd_buf_free(&pid);
    jv_set(doc, "contexts", jv_int((int64_t)b->nwin));
    jv_set(doc, "context_length", jv_int((int64_t)b->L));
    jv_set(doc, "positions_per_context", jv_int((int64_t)b->L - 1));
    jv_set(doc, "suite_token_hash_sha256", jv_str(suite));
    jv_set(doc, "panel_token_sha256_legacy", jv_str(legacy));
    jv_set(doc, "tokenizer", tokenizer_json(b));
    jv_set(doc, "provenance", provenance_json(b));
    int rc = jv_dump(doc, &JV_PRETTY, &pj, e);
    if (!rc) {
        fd_buf_putc(&pj, '\n');
        rc = write_file(b->tmp.p, "panel.json", pj.p, pj.n, NULL, e);
    }
    if (!rc && o->upstream_layout)
        rc = fd_panel_upstream_receipt(b->tmp.p, doc, o, b->vocab, b->L, b->nwin, b->np, b->prefix, CUT_RULE, e);
    else if (!rc && o->tokenizer)
        rc = write_receipt(b->tmp.p, doc, pj.p, pj.n, b->L, b->np, b->prefix, e);
    fd_buf_free(&pj);
    return rc;
}

/* read it back the way a capture will, then into place: an existing
 * destination is moved aside first, then removed */
static int build_place(const pbuild *b, fd_err *e)
{
    const char *out = b->o->out, *tmp = b->tmp.p;
    fd_panel chk;
    if (fd_panel_load(tmp, NULL, 0, b->vocab, &chk, e)) {
        fd_err_prefix(e, "self-check of the written panel");
        return -1;
    }
    fd_panel_free(&chk);
    struct stat st;
    fd_buf old = {0};
    int rc = 0;
    if (lstat(out, &st) == 0) {
        fd_buf_printf(&old, "%s.old-%ld", out, (long)getpid());
        fd_rmtree(old.p);
        if (rename(out, old.p)) {
            rc = fd_fail(e, "unwritable", "", "%s: cannot move the existing destination aside: %s", out, strerror(errno));
            fd_buf_free(&old);
            return rc;
        }
    }
    if (rename(tmp, out)) {
        rc = fd_fail(e, "unwritable", "", "%s: %s", out, strerror(errno));
        if (old.p) (void)rename(old.p, out);
    } else if (old.p)
        fd_rmtree(old.p);
    fd_buf_free(&old);
    return rc;
}

int fd_panel_build(const fd_panel_build_opts *o, char *const *inputs, size_t n_inputs,
                   fd_panel_build_result *res, fd_err *e)
{
    memset(res, 0, sizeof *res);
    pbuild b = {0};
    b.o = o;
    b.inputs = inputs;
    b.n_inputs = n_inputs;
    b.role = o->role ? o->role : "final";
    b.domain = o->domain ? o->domain : "unspecified";
    int rc = build_check_opts(o, b.role, n_inputs, e);
    if (rc) return rc;
    b.in_sha = fd_xcalloc(n_inputs, sizeof *b.in_sha);
    b.in_domain = fd_xcalloc(n_inputs + 1, sizeof *b.in_domain);
    b.in_path = fd_xcalloc(n_inputs + 1, sizeof *b.in_path);
    b.vocab = o->vocab_size;
    rc = build_read(&b, e);
    if (!rc) rc = build_geometry(&b, res, e);
    if (!rc) rc = build_windows(&b, e);
    if (!rc) rc = build_doc(&b, res, e);
    if (!rc) rc = build_place(&b, e);
    if (!rc) {
        res->windows = b.nwin;
        res->context_length = b.L;
    }
    if (rc && b.tmp.p) fd_rmtree(b.tmp.p);
    for (size_t i = 0; i < b.seqs.n; i++) { free(b.seqs.v[i].ids); free(b.seqs.v[i].domain); free(b.seqs.v[i].docid); }
    for (size_t i = 0; i < n_inputs; i++) free(b.in_path[i]);
    free(b.in_path);
    free(b.in_domain);
    free(b.prefix);
    free(b.seqs.v);
    free(b.in_sha);
    free(b.per);
    jv_free(b.doc);
    fd_buf_free(&b.tmp);
    return rc;
}
