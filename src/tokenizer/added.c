/* Added tokens (added_tokens of tokenizer.json): id assignment as HF's
 * AddedVocabulary::add_tokens does it, and the split of a text into added
 * tokens and the runs between them (find_matches: leftmost-longest, then
 * the single_word / lstrip / rstrip rules). */
#include "tok_internal.h"
#include "../format/json.h"
#include <stdlib.h>
#include <string.h>

static int flag(const jv *o, const char *k)
{
    const jv *v = jv_get(o, k);
    return v && v->t == JV_BOOL && v->u.b;
}

static pcre2_code *tiny_re(const char *re)
{
    int err;
    PCRE2_SIZE off;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &err, &off, NULL);
    if (!c) abort(); /* fixed patterns */
    return c;
}

int tk_load_added(fd_tokenizer *t, const jv *list, fd_err *e)
{
    if (!list || list->t == JV_NULL) return 0;
    if (list->t != JV_ARR) return fd_fail(e, "bad_tokenizer", "", "added_tokens is not a list");
    t->added = fd_xcalloc(list->u.a.n ? list->u.a.n : 1, sizeof *t->added);
    tk_smap seen = {0};
    int32_t nv = (int32_t)t->vocab.n, maxid = -1, v;
    int need_re = 0;
    for (size_t i = 0; i < list->u.a.n; i++) {
        const jv *a = list->u.a.v[i];
        const jv *content = jv_get(a, "content");
        if (!content || content->t != JV_STR) { tk_smap_free(&seen); return fd_fail(e, "bad_tokenizer", "", "added token %zu has no content", i); }
        if (!content->u.s.n || memchr(content->u.s.p, 0, content->u.s.n)) continue; /* HF ignores empty tokens */
        if (tk_smap_get(&seen, content->u.s.p, content->u.s.n, &v)) { /* a repeat updates the flags only */
            t->added[v].special |= flag(a, "special");
            continue;
        }
        tk_added *ad = &t->added[t->nadded];
        ad->content = fd_xstrndup(content->u.s.p, content->u.s.n);
        ad->special = flag(a, "special");
        ad->normalized = flag(a, "normalized");
        ad->lstrip = flag(a, "lstrip");
        ad->rstrip = flag(a, "rstrip");
        ad->single_word = flag(a, "single_word");
        need_re |= ad->lstrip | ad->rstrip | ad->single_word;
        /* HF ignores the written id: the model's id if the content is in the vocab, else the next free one */
        if (!tk_smap_get(&t->vocab, content->u.s.p, content->u.s.n, &ad->id))
            ad->id = maxid < 0 ? nv : maxid >= nv || nv == 0 ? maxid + 1 : nv;
        if (ad->id > maxid) maxid = ad->id;
        fd_buf pat = {0};
        if (ad->normalized && t->nfc) tk_nfc(ad->content, content->u.s.n, &pat);
        else fd_buf_put(&pat, ad->content, content->u.s.n);
        ad->plen = pat.n;
        ad->pattern = fd_buf_cstr(&pat);
        tk_smap_put(&seen, ad->content, content->u.s.n, (int32_t)t->nadded);
        t->nadded++;
    }
    tk_smap_free(&seen);
    for (size_t i = 0; i < t->nadded; i++)
        tk_trie_add(t->added[i].normalized ? &t->trie_norm : &t->trie_raw, t->added[i].pattern, t->added[i].plen, (int32_t)i);
    if (need_re) { t->re_word = tiny_re("\\w"); t->re_space = tiny_re("\\s"); }
    return 0;
}

static size_t char_start_before(const char *s, size_t at)
{
    do at--; while (at && ((unsigned char)s[at] & 0xC0) == 0x80);
    return at;
}

static size_t char_len(const char *s, size_t at, size_t n)
{
    size_t k = at + 1;
    while (k < n && ((unsigned char)s[k] & 0xC0) == 0x80) k++;
    return k - at;
}

static int is_class(tk_call *c, pcre2_code *re, const char *s, size_t at, size_t len)
{
    return pcre2_match(re, (PCRE2_SPTR)s + at, len, 0, PCRE2_NO_UTF_CHECK, c->md, c->mctx) >= 0;
}

int tk_split_added(tk_call *c, const tk_trie *tr, const char *s, size_t n, fd_buf *ids, tk_seg_fn seg, fd_err *e)
{
    const fd_tokenizer *t = c->t;
    size_t done = 0; /* start_offset of HF: end of the last emitted token */
    for (size_t at = 0; at < n;) {
        size_t mlen = 0;
        int32_t k = tr->n ? tk_trie_longest(tr, (const unsigned char *)s + at, n - at, &mlen) : -1;
        if (k < 0) { at++; continue; }
        const tk_added *ad = &t->added[k];
        size_t start = at, stop = at + mlen;
        at = stop; /* the automaton resumes after the match whatever the flags decide */
        if (ad->single_word) {
            int left_word = start > 0 && is_class(c, t->re_word, s, char_start_before(s, start), start - char_start_before(s, start));
            int right_word = stop < n && is_class(c, t->re_word, s, stop, char_len(s, stop, n));
            if (left_word || right_word) continue;
        }
        if (ad->lstrip) {
            size_t ns = start;
            while (ns > 0) {
                size_t p = char_start_before(s, ns);
                if (!is_class(c, t->re_space, s, p, ns - p)) break;
                ns = p;
            }
            start = ns > done ? ns : done;
        }
        if (ad->rstrip)
            while (stop < n && is_class(c, t->re_space, s, stop, char_len(s, stop, n))) stop += char_len(s, stop, n);
        if (done < start && seg(c, s + done, start - done, ids, e)) return -1;
        fd_buf_put(ids, &ad->id, sizeof ad->id);
        done = stop;
    }
    if (done < n && seg(c, s + done, n - done, ids, e)) return -1;
    return 0;
}
