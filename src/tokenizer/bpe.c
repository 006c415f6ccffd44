/* The BPE model on one pre-token: the merge loop of HF's word.rs (a binary
 * heap of (rank, position), lowest rank first, leftmost on ties, stale
 * entries skipped), ignore_merges, unk, and a per-call word cache. */
#include "tok_internal.h"
#include <stdlib.h>
#include <string.h>

#define CACHE_MAX_WORD 64          /* longer words are rare and not cached */
#define CACHE_MAX_ENTRIES (1u << 20)

tk_call *tk_call_new(const fd_tokenizer *t)
{
    tk_call *c = fd_xcalloc(1, sizeof *c);
    c->t = t;
    c->md = pcre2_match_data_create(1, NULL);
    c->mctx = pcre2_match_context_create(NULL);
    c->jit = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
    if (!c->md || !c->mctx || !c->jit) abort(); /* allocation failure, as fd_xmalloc does */
    pcre2_jit_stack_assign(c->mctx, NULL, c->jit);
    return c;
}

void tk_call_free(tk_call *c)
{
    if (!c) return;
    pcre2_match_data_free(c->md);
    pcre2_match_context_free(c->mctx);
    pcre2_jit_stack_free(c->jit);
    fd_buf_free(&c->prefix);
    fd_buf_free(&c->word);
    fd_buf_free(&c->ckeys);
    fd_buf_free(&c->cids);
    free(c->sym);
    free(c->heap);
    free(c->cache);
    free(c);
}

static void put_id(fd_buf *ids, int32_t id) { fd_buf_put(ids, &id, sizeof id); }

/* heap ordered by (rank, pos) ascending */
static int less(const tk_heapent *a, const tk_heapent *b) { return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos; }

static void heap_push(tk_call *c, tk_heapent x)
{
    if (c->nheap == c->capheap) {
        c->capheap = c->capheap ? c->capheap * 2 : 64;
        c->heap = fd_xrealloc(c->heap, c->capheap * sizeof *c->heap);
    }
    size_t i = c->nheap++;
    while (i && less(&x, &c->heap[(i - 1) / 2])) { c->heap[i] = c->heap[(i - 1) / 2]; i = (i - 1) / 2; }
    c->heap[i] = x;
}

static tk_heapent heap_pop(tk_call *c)
{
    tk_heapent top = c->heap[0], x = c->heap[--c->nheap];
    size_t i = 0, n = c->nheap;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const tk_heapent *best = &x;
        if (l < n && less(&c->heap[l], best)) { m = l; best = &c->heap[l]; }
        if (l + 1 < n && less(&c->heap[l + 1], best)) m = l + 1;
        if (m == i) break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (n) c->heap[i] = x;
    return top;
}

static void add_sym(tk_call *c, int32_t id)
{
    if (c->nsym == c->capsym) {
        c->capsym = c->capsym ? c->capsym * 2 : 64;
        c->sym = fd_xrealloc(c->sym, c->capsym * sizeof *c->sym);
    }
    int32_t i = (int32_t)c->nsym++;
    c->sym[i] = (tk_sym){id, i - 1, i + 1, 1};
}

/* The word's model characters: bytes through the GPT-2 table with a
 * ByteLevel pre-tokenizer, else its UTF-8 chars looked up in the vocab. */
static void initial_symbols(tk_call *c, const char *s, size_t n)
{
    const fd_tokenizer *t = c->t;
    c->nsym = 0;
    int last_unk = 0;
    for (size_t i = 0; i < n;) {
        int32_t id = -1;
        size_t k = 1;
        if (t->bytelevel) id = t->byte_id[(unsigned char)s[i]];
        else {
            unsigned char b = (unsigned char)s[i];
            k = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
            if (i + k > n) k = n - i;
            if (!tk_smap_get(&t->vocab, s + i, k, &id)) id = -1;
        }
        i += k;
        if (id < 0) { /* unknown char: unk (fused if asked) or dropped, as HF */
            if (t->unk_id < 0 || (t->fuse_unk && last_unk)) continue;
            id = t->unk_id;
            last_unk = 1;
        } else last_unk = 0;
        add_sym(c, id);
    }
}

static int whole_word_in_vocab(tk_call *c, const char *s, size_t n, int32_t *id)
{
    if (!c->t->bytelevel) return tk_smap_get(&c->t->vocab, s, n, id);
    c->word.n = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = tk_byte_to_cp((unsigned char)s[i]);
        if (cp < 0x80) fd_buf_putc(&c->word, (char)cp);
        else { fd_buf_putc(&c->word, (char)(0xC0 | cp >> 6)); fd_buf_putc(&c->word, (char)(0x80 | (cp & 0x3F))); }
    }
    return tk_smap_get(&c->t->vocab, c->word.p, c->word.n, id);
}

static void merge_all(tk_call *c)
{
    const tk_merges *m = &c->t->merges;
    int32_t rank, id;
    c->nheap = 0;
    for (size_t i = 0; i + 1 < c->nsym; i++)
        if (tk_merges_get(m, c->sym[i].c, c->sym[i + 1].c, &rank, &id)) heap_push(c, (tk_heapent){rank, (int32_t)i, id});
    int32_t n = (int32_t)c->nsym;
    while (c->nheap) {
        tk_heapent top = heap_pop(c);
        tk_sym *cur = &c->sym[top.pos];
        if (!cur->alive || cur->next >= n) continue;
        tk_sym *right = &c->sym[cur->next];
        int32_t r2, id2;
        if (!tk_merges_get(m, cur->c, right->c, &r2, &id2) || id2 != top.id) continue; /* stale */
        cur->c = top.id;
        right->alive = 0;
        cur->next = right->next;
        if (right->next < n) c->sym[right->next].prev = top.pos;
        if (cur->prev >= 0 && tk_merges_get(m, c->sym[cur->prev].c, cur->c, &r2, &id2))
            heap_push(c, (tk_heapent){r2, cur->prev, id2});
        if (cur->next < n && tk_merges_get(m, cur->c, c->sym[cur->next].c, &r2, &id2))
            heap_push(c, (tk_heapent){r2, top.pos, id2});
    }
}

static struct tk_centry *cache_find(tk_call *c, const char *s, size_t n, uint64_t h, int *found)
{
    if ((c->cn + 1) * 2 > c->ccap) {
        size_t cap = c->ccap ? c->ccap * 2 : 4096;
        struct tk_centry *nc = fd_xcalloc(cap, sizeof *nc);
        for (size_t i = 0; i < c->ccap; i++) {
            if (!c->cache[i].klen) continue;
            size_t j = c->cache[i].h & (cap - 1);
            while (nc[j].klen) j = (j + 1) & (cap - 1);
            nc[j] = c->cache[i];
        }
        free(c->cache);
        c->cache = nc;
        c->ccap = cap;
    }
    size_t j = h & (c->ccap - 1);
    while (c->cache[j].klen) {
        struct tk_centry *x = &c->cache[j];
        if (x->h == h && x->klen == n && !memcmp(c->ckeys.p + x->koff, s, n)) { *found = 1; return x; }
        j = (j + 1) & (c->ccap - 1);
    }
    *found = 0;
    return &c->cache[j];
}

void tk_bpe_word(tk_call *c, const char *s, size_t n, fd_buf *ids)
{
    struct tk_centry *slot = NULL;
    if (n <= CACHE_MAX_WORD && c->cn < CACHE_MAX_ENTRIES) {
        int found;
        uint64_t h = tk_hash(s, n);
        slot = cache_find(c, s, n, h, &found);
        if (found) { fd_buf_put(ids, c->cids.p + slot->ioff, slot->icount * sizeof(int32_t)); return; }
        *slot = (struct tk_centry){h, (uint32_t)c->ckeys.n, (uint32_t)n, (uint32_t)c->cids.n, 0};
        fd_buf_put(&c->ckeys, s, n);
    }
    size_t before = ids->n;
    int32_t whole;
    if (c->t->ignore_merges && whole_word_in_vocab(c, s, n, &whole)) put_id(ids, whole);
    else {
        initial_symbols(c, s, n);
        if (c->nsym > 1) merge_all(c);
        for (int32_t i = 0; c->nsym && i < (int32_t)c->nsym; i = c->sym[i].next) put_id(ids, c->sym[i].c);
    }
    if (slot) {
        slot->icount = (uint32_t)((ids->n - before) / sizeof(int32_t));
        fd_buf_put(&c->cids, ids->p + before, ids->n - before);
        c->cn++;
    }
}
