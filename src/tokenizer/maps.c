/* The lookup structures of the tokenizer: a string map (vocab), a pair map
 * (merges), a byte trie (added tokens) and the GPT-2 byte<->char table. */
#include "tok_internal.h"
#include <stdlib.h>
#include <string.h>

uint64_t tk_hash(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 32;
    return h;
}

static void smap_grow(tk_smap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    struct tk_sslot *s = fd_xcalloc(cap, sizeof *s);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slot[i].k) continue;
        size_t j = m->slot[i].h & (cap - 1);
        while (s[j].k) j = (j + 1) & (cap - 1);
        s[j] = m->slot[i];
    }
    free(m->slot);
    m->slot = s;
    m->cap = cap;
}

void tk_smap_put(tk_smap *m, const char *k, size_t n, int32_t v)
{
    if ((m->n + 1) * 2 > m->cap) smap_grow(m);
    uint64_t h = tk_hash(k, n);
    size_t j = h & (m->cap - 1);
    while (m->slot[j].k) {
        if (m->slot[j].h == h && m->slot[j].n == n && !memcmp(m->slot[j].k, k, n)) { m->slot[j].v = v; return; }
        j = (j + 1) & (m->cap - 1);
    }
    m->slot[j] = (struct tk_sslot){k, (uint32_t)n, v, h};
    m->n++;
}

int tk_smap_get(const tk_smap *m, const char *k, size_t n, int32_t *v)
{
    if (!m->cap) return 0;
    uint64_t h = tk_hash(k, n);
    size_t j = h & (m->cap - 1);
    while (m->slot[j].k) {
        if (m->slot[j].h == h && m->slot[j].n == n && !memcmp(m->slot[j].k, k, n)) { *v = m->slot[j].v; return 1; }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}

void tk_smap_free(tk_smap *m) { free(m->slot); memset(m, 0, sizeof *m); }

static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }
static size_t pair_slot(uint64_t k, size_t cap) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1); }

int tk_merges_get(const tk_merges *m, int32_t a, int32_t b, int32_t *rank, int32_t *id)
{
    if (!m->cap) return 0;
    uint64_t k = pair_key(a, b);
    for (size_t j = pair_slot(k, m->cap);; j = (j + 1) & (m->cap - 1)) {
        if (m->slot[j].k == UINT64_MAX) return 0;
        if (m->slot[j].k == k) { *rank = m->slot[j].rank; *id = m->slot[j].id; return 1; }
    }
}

/* A pair listed twice keeps the last rank, as HF's collect into a HashMap does. */
void tk_merges_put(tk_merges *m, int32_t a, int32_t b, int32_t rank, int32_t id);
void tk_merges_put(tk_merges *m, int32_t a, int32_t b, int32_t rank, int32_t id)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        struct tk_mslot *s = fd_xmalloc(cap * sizeof *s);
        for (size_t i = 0; i < cap; i++) s[i].k = UINT64_MAX;
        for (size_t i = 0; i < m->cap; i++) {
            if (m->slot[i].k == UINT64_MAX) continue;
            size_t j = pair_slot(m->slot[i].k, cap);
            while (s[j].k != UINT64_MAX) j = (j + 1) & (cap - 1);
            s[j] = m->slot[i];
        }
        free(m->slot);
        m->slot = s;
        m->cap = cap;
    }
    uint64_t k = pair_key(a, b);
    size_t j = pair_slot(k, m->cap);
    while (m->slot[j].k != UINT64_MAX) {
        if (m->slot[j].k == k) { m->slot[j].rank = rank; m->slot[j].id = id; return; }
        j = (j + 1) & (m->cap - 1);
    }
    m->slot[j] = (struct tk_mslot){k, rank, id};
    m->n++;
}

static int32_t trie_node(tk_trie *tr)
{
    if (tr->n == tr->cap) {
        tr->cap = tr->cap ? tr->cap * 2 : 256;
        tr->node = fd_xrealloc(tr->node, tr->cap * sizeof *tr->node);
    }
    tr->node[tr->n] = (struct tk_tnode){-1, -1, -1, 0};
    return (int32_t)tr->n++;
}

int tk_trie_add(tk_trie *tr, const char *s, size_t n, int32_t token)
{
    if (!tr->n) trie_node(tr);
    int32_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        int32_t c = tr->node[cur].first_child;
        while (c >= 0 && tr->node[c].byte != b) c = tr->node[c].next_sibling;
        if (c < 0) {
            c = trie_node(tr);
            tr->node[c].byte = b;
            tr->node[c].next_sibling = tr->node[cur].first_child;
            tr->node[cur].first_child = c;
        }
        cur = c;
    }
    if (tr->node[cur].token >= 0) return 0; /* same pattern twice: the first wins */
    tr->node[cur].token = token;
    return 1;
}

int32_t tk_trie_longest(const tk_trie *tr, const unsigned char *p, size_t n, size_t *mlen)
{
    int32_t best = -1, cur = 0;
    if (!tr->n) return -1;
    for (size_t i = 0; i < n; i++) {
        int32_t c = tr->node[cur].first_child;
        while (c >= 0 && tr->node[c].byte != p[i]) c = tr->node[c].next_sibling;
        if (c < 0) break;
        cur = c;
        if (tr->node[cur].token >= 0) { best = tr->node[cur].token; *mlen = i + 1; }
    }
    return best;
}

void tk_trie_free(tk_trie *tr) { free(tr->node); memset(tr, 0, sizeof *tr); }

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the
 * other 68 bytes to U+0100.. in byte order. */
static int printable(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

uint32_t tk_byte_to_cp(unsigned b)
{
    if (printable(b)) return b;
    unsigned k = 0;
    for (unsigned x = 0; x < b; x++) k += !printable(x);
    return 256 + k;
}

int tk_cp_to_byte(uint32_t cp)
{
    if (cp < 256) return printable(cp) ? (int)cp : -1;
    if (cp >= 256 + 68) return -1;
    unsigned k = 0;
    for (unsigned b = 0; b < 256; b++)
        if (!printable(b) && k++ == cp - 256) return (int)b;
    return -1;
}
