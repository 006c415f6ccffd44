#include "capture/probe.h"
#include "engine/model.h"
#include "tokenizer/tokenizer.h"
#include "util/bf16.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOTE "one extra window through the same schedule; its hidden state is discarded and never enters the dataset."

void fd_probe_stats_of(const double *x, size_t V, fd_probe_stats *s)
{
    memset(s, 0, sizeof *s);
    double mx = -INFINITY, mn = INFINITY;
    for (size_t v = 0; v < V; v++) {
        if (x[v] > mx) mx = x[v];
        if (x[v] < mn) mn = x[v];
    }
    double z = 0.0;
    for (size_t v = 0; v < V; v++) z += exp(x[v] - mx);
    double h = 0.0;
    for (size_t v = 0; v < V; v++) {
        double p = exp(x[v] - mx) / z;
        h += p * log(p > 1e-300 ? p : 1e-300);
    }
    s->entropy = -h;
    s->uniform_entropy = log((double)V);
    s->spread = mx - mn;
    s->k = V < 5 ? V : 5;
    for (size_t i = 0; i < s->k; i++) { /* the largest logit is the largest probability; ties: lower id */
        int64_t best = -1;
        for (size_t v = 0; v < V; v++) {
            int taken = 0;
            for (size_t j = 0; j < i; j++) taken |= s->top_id[j] == (int64_t)v;
            if (!taken && (best < 0 || x[v] > x[best])) best = (int64_t)v;
        }
        s->top_id[i] = best;
        s->top_p[i] = exp(x[best] - mx) / z;
    }
}

/* Invalid UTF-8 becomes U+FFFD, as the tokenizers library's lossy decode. */
static jv *text_jv(const char *p, size_t n)
{
    fd_buf b = {0};
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)p[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        int ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2);
        for (size_t j = 1; ok && j < len; j++) ok = ((unsigned char)p[i + j] & 0xC0) == 0x80;
        if (ok && len == 3) {
            unsigned c1 = (unsigned char)p[i + 1];
            ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
        }
        if (ok && len == 4) {
            unsigned c1 = (unsigned char)p[i + 1];
            ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90) && c <= 0xF4;
        }
        if (ok) { fd_buf_put(&b, p + i, len); i += len; }
        else { fd_buf_puts(&b, "\xEF\xBF\xBD"); i++; }
    }
    jv *v = jv_strn(b.p ? b.p : "", b.n);
    fd_buf_free(&b);
    return v;
}

static jv *skipped(const char *prompt, const char *expect, const char *reason)
{
    jv *r = jv_obj();
    jv_set(r, "schema", jv_str(FD_PROBE_SCHEMA));
    jv_set(r, "prompt", prompt ? jv_str(prompt) : jv_null());
    jv_set(r, "expect", expect ? jv_str(expect) : jv_null());
    jv_set(r, "status", jv_str("skipped"));
    jv_set(r, "enforced", jv_bool(0));
    jv_set(r, "reason", jv_str(reason));
    return r;
}

static int blank(const char *s)
{
    for (; s && *s; s++)
        if (!isspace((unsigned char)*s)) return 0;
    return 1;
}

/* Python's str.strip().lower() for the ASCII range (the cases that matter
 * for a word like "Paris"); non-ASCII bytes compare as they are. */
static void norm(const char *s, size_t n, fd_buf *out)
{
    size_t a = 0, b = n;
    while (a < b && isspace((unsigned char)s[a])) a++;
    while (b > a && isspace((unsigned char)s[b - 1])) b--;
    for (size_t i = a; i < b; i++) fd_buf_putc(out, (char)tolower((unsigned char)s[i]));
    fd_buf_cstr(out);
}

static int decode1(const fd_tokenizer *t, int64_t id, char **txt, size_t *n)
{
    int32_t i = (int32_t)id;
    fd_err ign;
    if (fd_tok_decode(t, &i, 1, 0, txt, n, &ign)) {
        char tmp[48];
        snprintf(tmp, sizeof tmp, "<undecodable:%lld>", (long long)id);
        *txt = fd_xstrdup(tmp);
        *n = strlen(tmp);
    }
    return 0;
}

int fd_probe_prepare(const fd_probe_opts *o, const char *model_dir, fd_probe_plan *p, fd_err *e)
{
    memset(p, 0, sizeof *p);
    p->prompt = o->prompt ? o->prompt : FD_PROBE_DEFAULT_PROMPT;
    p->expect = o->expect && !blank(o->expect) ? o->expect : NULL;
    if (o->disabled) {
        p->skipped = skipped(p->prompt, p->expect, "--no-sanity-check was passed; the probe did not run");
        return 0;
    }
    char *tp = fd_path_join(model_dir, "tokenizer.json");
    fd_err te = {0};
    p->tok = fd_is_file(tp) ? fd_tok_load(tp, &te) : NULL;
    if (!p->tok && !te.msg[0]) snprintf(te.msg, sizeof te.msg, "%s: no tokenizer.json in the model directory", tp);
    free(tp);
    if (!p->tok) {
        if (p->expect)
            return fd_fail(e, "sanity_probe_unavailable", "",
                           "--sanity-expect '%s' asks for a fail-closed generation check and the tokenizer could "
                           "not be loaded (%s); a check that could not run has not passed (pass --sanity-expect '' "
                           "to record the probe without enforcing it)", p->expect, te.msg);
        char reason[1200];
        snprintf(reason, sizeof reason, "tokenizer unavailable: %s", te.msg);
        p->skipped = skipped(p->prompt, p->expect, reason);
        return 0;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    if (fd_tok_encode(p->tok, p->prompt, strlen(p->prompt), 1, &ids, &n, e)) { fd_probe_plan_free(p); return -1; }
    if (!n) {
        fd_fail(e, "sanity_probe_failed", "", "the sanity prompt '%s' encodes to zero tokens", p->prompt);
        free(ids);
        fd_probe_plan_free(p);
        return -1;
    }
    p->ids = fd_xmalloc(n * sizeof *p->ids);
    for (size_t i = 0; i < n; i++) p->ids[i] = ids[i];
    p->n = n;
    free(ids);
    return 0;
}

void fd_probe_plan_free(fd_probe_plan *p)
{
    fd_tok_free(p->tok);
    free(p->ids);
    jv_free(p->skipped);
    memset(p, 0, sizeof *p);
}

int fd_probe_run(const fd_probe_opts *o, const char *model_dir, const fd_mm *m, const fd_weights *W,
                 const fd_glm_config *c, const fd_tensor *head, jv **record, fd_err *e)
{
    fd_probe_plan p;
    *record = NULL;
    if (fd_probe_prepare(o, model_dir, &p, e)) return -1;
    int rc = 0;
    if (p.ids) {
        size_t H = (size_t)c->hidden_size;
        uint16_t *hid = fd_xmalloc(p.n * H * 2 + 2);
        rc = fd_forward_hidden(m, W, c, p.ids, p.n, hid, e);
        if (rc) fd_err_prefix(e, "generation sanity probe");
        else rc = fd_probe_finish(&p, m, c, head, hid + (p.n - 1) * H, record, e);
        free(hid);
    } else {
        *record = p.skipped;
        p.skipped = NULL;
    }
    fd_probe_plan_free(&p);
    return rc;
}

/* the logits of the last position through the head, rounded to bf16 as
 * torch's; NULL (e set) when the hidden state or a logit is not finite.  The
 * head is packed a block of HEAD_BLOCK rows at a time (each logit is its own
 * row's product, so the blocks change no bit) and read through
 * fd_tensor_row_bf16, so a quantized head (GGUF, MLX) is decoded a block at a
 * time, never whole. */
enum { HEAD_BLOCK = 4096 }; /* a multiple of the 16-column tile */
static double *head_logits(const fd_mm *m, const fd_glm_config *c, const fd_tensor *head, const uint16_t *last,
                           fd_err *e)
{
    size_t V = (size_t)head->lshape[0], H = (size_t)c->hidden_size;
    for (size_t k = 0; k < H; k++)
        if ((last[k] & 0x7f80u) == 0x7f80u) {
            fd_fail(e, "non_finite", "", "the generation sanity probe: the last hidden state (column %zu) is not "
                    "finite; the forward produced a NaN or infinity (refused, nothing written)", k);
            return NULL;
        }
    double *lg = fd_xmalloc(V * sizeof *lg);
    uint16_t *row = fd_xmalloc(H * 2 + 2);
    uint32_t *hp = NULL;
    float *out = fd_xmalloc((HEAD_BLOCK + FD_TILE) * 4);
    for (size_t v0 = 0; v0 < V; v0 += HEAD_BLOCK) {
        size_t n = V - v0 < HEAD_BLOCK ? V - v0 : HEAD_BLOCK;
        fd_packed_head ph;
        fd_mm_alloc(&ph, n, H);
        for (size_t v = 0; v < n; v++) {
            fd_tensor_row_bf16(head, v0 + v, H, row);
            fd_mm_set_row(&ph, v, row);
        }
        if (!hp) {
            hp = fd_xmalloc((ph.kp + 1) * 4);
            fd_mm_pack_rows(last, 1, H, H, hp);
        }
        fd_mm_run(m, hp, 1, &ph, out, ph.tiles * FD_TILE);
        for (size_t v = 0; v < n; v++) lg[v0 + v] = fd_bf16_to_f32(fd_f32_to_bf16(out[v]));
        fd_packed_head_free(&ph);
    }
    free(row); free(out); free(hp);
    for (size_t v = 0; v < V; v++)
        if (!isfinite(lg[v])) {
            free(lg);
            fd_fail(e, "non_finite", "", "the generation sanity probe: logit %zu of the last position is not "
                    "finite (the hidden state x %s overflows or the head holds a NaN/inf; refused)", v, head->name);
            return NULL;
        }
    return lg;
}

/* the probe's record (status "recorded"); top1n: the normalised text of the top-1 token */
static jv *probe_record(const fd_probe_plan *p, const fd_probe_stats *st, size_t V, fd_buf *top1n)
{
    char *txt = NULL;
    size_t tn = 0;
    jv *r = jv_obj();
    jv_set(r, "schema", jv_str(FD_PROBE_SCHEMA));
    jv_set(r, "prompt", jv_str(p->prompt));
    jv_set(r, "expect", p->expect ? jv_str(p->expect) : jv_null());
    jv_set(r, "vocab_size", jv_int((int64_t)V));
    jv_set(r, "top1_id", jv_int(st->top_id[0]));
    decode1(p->tok, st->top_id[0], &txt, &tn);
    jv_set(r, "top1_text", text_jv(txt, tn));
    norm(txt, tn, top1n);
    free(txt); txt = NULL;
    jv_set(r, "top1_probability", jv_float(st->top_p[0]));
    jv *tk = jv_arr();
    for (size_t i = 0; i < st->k; i++) {
        jv *x = jv_obj();
        jv_set(x, "id", jv_int(st->top_id[i]));
        decode1(p->tok, st->top_id[i], &txt, &tn);
        jv_set(x, "text", text_jv(txt, tn));
        free(txt); txt = NULL;
        jv_set(x, "probability", jv_float(st->top_p[i]));
        jv_push(tk, x);
    }
    jv_set(r, "top_k", tk);
    jv_set(r, "entropy_nats", jv_float(st->entropy));
    jv_set(r, "uniform_entropy_nats", jv_float(st->uniform_entropy));
    jv_set(r, "logit_spread", jv_float(st->spread));
    jv_set(r, "degenerate", jv_bool(st->spread == 0.0));
    jv_set(r, "status", jv_str("recorded"));
    jv_set(r, "enforced", jv_bool(p->expect != NULL));
    jv_set(r, "note", jv_str(NOTE));
    return r;
}

/* --sanity-expect: the top-1 token must be a plausible first token of the
 * expected word (or read the same once normalised); sets expected_first_ids
 * and status "pass" in r */
static int expect_check(const fd_probe_plan *p, const fd_probe_stats *st, const fd_buf *top1n, jv *r, fd_err *e)
{
    const char *expect = p->expect;
    const char *fmt[4] = {" %s", "%s", " %s", "%s"};
    int64_t want[4];
    size_t nw = 0;
    for (int i = 0; i < 4; i++) {
        char sp[1100];
        snprintf(sp, sizeof sp, fmt[i], expect);
        if (i >= 2)
            for (char *q = sp; *q; q++) *q = (char)tolower((unsigned char)*q);
        int32_t *wi = NULL;
        size_t wn = 0;
        fd_err ign;
        if (!fd_tok_encode(p->tok, sp, strlen(sp), 0, &wi, &wn, &ign) && wn) {
            int dup = 0;
            for (size_t j = 0; j < nw; j++) dup |= want[j] == wi[0];
            if (!dup) want[nw++] = wi[0];
        }
        free(wi);
    }
    for (size_t a = 1; a < nw; a++) /* sorted(set(ids)) */
        for (size_t b = a; b > 0 && want[b - 1] > want[b]; b--) { int64_t t = want[b]; want[b] = want[b - 1]; want[b - 1] = t; }
    jv *ew = jv_arr();
    int hit = 0;
    for (size_t j = 0; j < nw; j++) { jv_push(ew, jv_int(want[j])); hit |= want[j] == st->top_id[0]; }
    jv_set(r, "expected_first_ids", ew);
    fd_buf en = {0};
    norm(expect, strlen(expect), &en);
    hit |= !strcmp(en.p, top1n->p);
    fd_buf_free(&en);
    if (!hit)
        return fd_fail(e, "sanity_probe_failed", "",
                       "the generation sanity probe failed: '%s' continued with '%s' (p=%.4f, entropy %.3f of a "
                       "possible %.3f nats) and '%s' was expected. Counts, shapes and the load report can all be clean "
                       "while a shard loaded as zeros or random weights; pass --sanity-expect '' to record without "
                       "enforcing", p->prompt, top1n->p, st->top_p[0], st->entropy, st->uniform_entropy, expect);
    jv_set(r, "status", jv_str("pass"));
    return 0;
}

int fd_probe_finish(fd_probe_plan *p, const fd_mm *m, const fd_glm_config *c, const fd_tensor *head,
                    const uint16_t *last, jv **record, fd_err *e)
{
    size_t V = (size_t)head->shape[0];
    *record = NULL;
    double *lg = head_logits(m, c, head, last, e);
    if (!lg) return -1;
    fd_probe_stats st;
    fd_probe_stats_of(lg, V, &st);
    free(lg);
    fd_buf top1n = {0};
    jv *r = probe_record(p, &st, V, &top1n);
    int rc = -1;
    if (st.spread == 0.0)
        fd_fail(e, "degenerate", "",
                "the generation sanity probe found a DEGENERATE output distribution: all %zu logits are exactly "
                "equal (entropy %.6f nats == ln(vocab)), the signature of a tensor that loaded as zeros; prompt "
                "'%s'. Nothing about this capture would be a measurement of the weights", V, st.entropy, p->prompt);
    else if (!p->expect || !expect_check(p, &st, &top1n, r, e)) {
        *record = r;
        r = NULL;
        rc = 0;
    }
    fd_buf_free(&top1n);
    jv_free(r);
    return rc;
}
