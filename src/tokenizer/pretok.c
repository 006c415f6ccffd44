/* Pre-tokenizers: Split (PCRE2 regex or literal, five delimiter behaviours,
 * invert), ByteLevel (add_prefix_space, optional GPT-2 regex) and Digits,
 * flattened from nested Sequences.  Each piece flows through the steps
 * depth-first, so a 10 MB segment never becomes one big list of pieces. */
#include "tok_internal.h"
#include "../format/json.h"
#include <stdlib.h>
#include <string.h>

static const char GPT2_RE[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static int compile(tk_pretok *p, const char *re, size_t n, int literal, fd_err *e)
{
    int err;
    PCRE2_SIZE off;
    p->re = pcre2_compile((PCRE2_SPTR)re, n, PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0), &err, &off, NULL);
    if (!p->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return fd_fail(e, "tokenizer_unsupported", "", "pre_tokenizer Split regex does not compile with PCRE2 at offset %zu: %s",
                       (size_t)off, (const char *)msg);
    }
    pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE); /* without JIT the interpreter gives the same matches */
    return 0;
}

static int get_bool(const jv *o, const char *k, int def)
{
    const jv *v = jv_get(o, k);
    return v && v->t == JV_BOOL ? v->u.b : def;
}

static tk_pretok *push(fd_tokenizer *t)
{
    t->pre = fd_xrealloc(t->pre, (t->npre + 1) * sizeof *t->pre);
    tk_pretok *p = &t->pre[t->npre++];
    memset(p, 0, sizeof *p);
    return p;
}

static int load_split(fd_tokenizer *t, const jv *s, fd_err *e)
{
    static const char *const beh[] = {"Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    const jv *pat = jv_get(s, "pattern");
    const char *b = jv_get_str(s, "behavior");
    tk_pretok *p = push(t);
    p->kind = TK_SPLIT;
    p->behavior = -1;
    for (int i = 0; b && i < 5; i++)
        if (!strcmp(b, beh[i])) p->behavior = i;
    if (p->behavior < 0) return fd_fail(e, "tokenizer_unsupported", "", "pre_tokenizer Split behavior '%s' is not supported", b ? b : "(none)");
    p->invert = get_bool(s, "invert", 0);
    const jv *re = jv_get(pat, "Regex"), *lit = jv_get(pat, "String");
    if (re && re->t == JV_STR) return compile(p, re->u.s.p, re->u.s.n, 0, e);
    if (lit && lit->t == JV_STR) return compile(p, lit->u.s.p, lit->u.s.n, 1, e);
    return fd_fail(e, "bad_tokenizer", "", "pre_tokenizer Split pattern is neither {\"Regex\": ...} nor {\"String\": ...}");
}

static int load_one(fd_tokenizer *t, const jv *pt, fd_err *e)
{
    const char *ty = jv_get_str(pt, "type");
    if (t->bytelevel) return fd_fail(e, "tokenizer_unsupported", "", "pre_tokenizer %s after ByteLevel is not supported", ty ? ty : "(no type)");
    if (ty && !strcmp(ty, "Sequence")) {
        const jv *l = jv_get(pt, "pretokenizers");
        if (!l || l->t != JV_ARR) return fd_fail(e, "bad_tokenizer", "", "pre_tokenizer Sequence without a pretokenizers list");
        for (size_t i = 0; i < l->u.a.n; i++)
            if (load_one(t, l->u.a.v[i], e)) return -1;
        return 0;
    }
    if (ty && !strcmp(ty, "Split")) return load_split(t, pt, e);
    if (ty && !strcmp(ty, "ByteLevel")) {
        tk_pretok *p = push(t);
        p->kind = TK_BYTELEVEL;
        p->add_prefix_space = get_bool(pt, "add_prefix_space", 1);
        t->bytelevel = 1;
        if (get_bool(pt, "use_regex", 1)) return compile(p, GPT2_RE, sizeof GPT2_RE - 1, 0, e);
        return 0;
    }
    if (ty && !strcmp(ty, "Digits")) {
        /* HF: split on Rust's char::is_numeric (Nd, Nl, No = \p{N}), Isolated (individual) or Contiguous */
        tk_pretok *p = push(t);
        p->kind = TK_SPLIT;
        p->behavior = get_bool(pt, "individual_digits", 0) ? TK_ISOLATED : TK_CONTIGUOUS;
        return compile(p, "\\p{N}", 5, 0, e);
    }
    return fd_fail(e, "tokenizer_unsupported", "", "pre_tokenizer type '%s' is not supported", ty ? ty : "(no type)");
}

int tk_load_pretok(fd_tokenizer *t, const jv *pt, fd_err *e)
{
    if (!pt || pt->t == JV_NULL) return 0;
    return load_one(t, pt, e);
}

/* ------------------------------------------------------------ running */

static int run_step(tk_call *c, size_t step, const char *p, size_t n, fd_err *e);

typedef struct { tk_call *c; size_t step; const char *base; size_t s, end; int have; fd_err *e; } pending;

static int emit(pending *q, size_t s, size_t end)
{
    if (end == s) return 0; /* HF drops empty pieces */
    return run_step(q->c, q->step + 1, q->base + s, end - s, q->e);
}

static int flush(pending *q)
{
    int rc = q->have ? emit(q, q->s, q->end) : 0;
    q->have = 0;
    return rc;
}

static int hold(pending *q, size_t s, size_t end)
{
    int rc = flush(q);
    q->have = 1; q->s = s; q->end = end;
    return rc;
}

/* One (start, end, is_match) of HF's find_matches, folded by the behaviour
 * exactly like SplitDelimiterBehavior in normalizer.rs, streaming. */
static int piece(pending *q, int behavior, size_t s, size_t end, int is_match, int *prev_match)
{
    int rc = 0;
    switch (behavior) {
    case TK_ISOLATED: rc = emit(q, s, end); break;
    case TK_REMOVED: if (!is_match) rc = emit(q, s, end); break;
    case TK_MERGED_PREV:
        if (is_match && !*prev_match && q->have) q->end = end;
        else rc = hold(q, s, end);
        break;
    case TK_MERGED_NEXT:
        if (q->have && q->have == 2 && !is_match) { q->end = end; rc = flush(q); }
        else { rc = hold(q, s, end); if (is_match) q->have = 2; }
        break;
    case TK_CONTIGUOUS:
        if (is_match == *prev_match && q->have) q->end = end;
        else rc = hold(q, s, end);
        break;
    }
    *prev_match = is_match;
    return rc;
}

static int split(tk_call *c, size_t step, const char *p, size_t n, fd_err *e)
{
    const tk_pretok *pt = &c->t->pre[step];
    pending q = {c, step, p, 0, 0, 0, e};
    int prev_match = 0, inv = pt->invert;
    size_t at = 0, prev = 0;
    while (at <= n) {
        int rc = pcre2_match(pt->re, (PCRE2_SPTR)p, n, at, PCRE2_NO_UTF_CHECK, c->md, c->mctx);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return fd_fail(e, "tokenizer_regex", "", "pre_tokenizer regex failed on a %zu-byte piece: %s", n, (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* empty match: onig's find_iter steps one char on */
            if (ms >= n) break;
            at = ms + 1;
            while (at < n && ((unsigned char)p[at] & 0xC0) == 0x80) at++;
            continue;
        }
        if (prev != ms && piece(&q, pt->behavior, prev, ms, inv, &prev_match)) return -1;
        if (piece(&q, pt->behavior, ms, me, !inv, &prev_match)) return -1;
        prev = at = me;
    }
    if (prev != n && piece(&q, pt->behavior, prev, n, inv, &prev_match)) return -1;
    return flush(&q);
}

static int run_step(tk_call *c, size_t step, const char *p, size_t n, fd_err *e)
{
    if (step == c->t->npre) { tk_bpe_word(c, p, n, c->out); return 0; }
    const tk_pretok *pt = &c->t->pre[step];
    if (pt->kind == TK_SPLIT) return split(c, step, p, n, e);
    /* ByteLevel (always last): prefix space, then the GPT-2 regex; the byte
     * to char mapping itself happens in the model (byte_id table). */
    if (pt->add_prefix_space && p[0] != ' ') {
        c->prefix.n = 0;
        fd_buf_putc(&c->prefix, ' ');
        fd_buf_put(&c->prefix, p, n);
        p = c->prefix.p;
        n = c->prefix.n;
    }
    if (pt->re) return split(c, step, p, n, e);
    return run_step(c, step + 1, p, n, e);
}

int tk_encode_segment(tk_call *c, const char *s, size_t n, fd_buf *ids, fd_err *e)
{
    if (!n) return 0;
    c->out = ids;
    return run_step(c, 0, s, n, e);
}
