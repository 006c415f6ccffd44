/* Unicode NFC (UAX #15): canonical decomposition, canonical ordering,
 * canonical composition, Hangul done arithmetically.  Text with no char
 * that NFC could touch (the "unsafe" set: combining marks, decomposable
 * chars, second halves of compositions) is copied as it is. */
#include "tok_internal.h"
#include <stdlib.h>
#include <string.h>
#include "nfc_data.inc"

#define NELEM(a) (sizeof a / sizeof *a)
enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7, LCOUNT = 19, VCOUNT = 21, TCOUNT = 28,
       NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT };

static int unsafe(uint32_t cp)
{
    size_t lo = 0, hi = NELEM(NFC_UNSAFE);
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (cp < NFC_UNSAFE[m].lo) hi = m;
        else if (cp > NFC_UNSAFE[m].hi) lo = m + 1;
        else return 1;
    }
    return 0;
}

static int ccc(uint32_t cp)
{
    size_t lo = 0, hi = NELEM(NFC_CCC);
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (cp < NFC_CCC[m].cp) hi = m;
        else if (cp > NFC_CCC[m].cp) lo = m + 1;
        else return NFC_CCC[m].ccc;
    }
    return 0;
}

static int compose(uint32_t a, uint32_t b, uint32_t *out)
{
    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT) {
        *out = SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
        return 1;
    }
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE && b < TBASE + TCOUNT) {
        *out = a + (b - TBASE);
        return 1;
    }
    uint64_t key = (uint64_t)a << 21 | b;
    size_t lo = 0, hi = NELEM(NFC_COMP);
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (key < NFC_COMP[m].pair) hi = m;
        else if (key > NFC_COMP[m].pair) lo = m + 1;
        else { *out = NFC_COMP[m].cp; return 1; }
    }
    return 0;
}

static uint32_t next_cp(const unsigned char *p, size_t *k)
{
    if (p[0] < 0x80) { *k = 1; return p[0]; }
    if (p[0] < 0xE0) { *k = 2; return (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F); }
    if (p[0] < 0xF0) { *k = 3; return (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F); }
    *k = 4;
    return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 | (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
}

static void put_cp(fd_buf *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) { u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | (cp >> 6 & 0x3F)); u[2] = (char)(0x80 | (cp & 0x3F)); n = 3; }
    else { u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | (cp >> 12 & 0x3F)); u[2] = (char)(0x80 | (cp >> 6 & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F)); n = 4; }
    fd_buf_put(b, u, n);
}

typedef struct { uint32_t *v; size_t n, cap; } cps;
static void push(cps *c, uint32_t x)
{
    if (c->n == c->cap) { c->cap = c->cap ? c->cap * 2 : 256; c->v = fd_xrealloc(c->v, c->cap * sizeof *c->v); }
    c->v[c->n++] = x;
}

static void decompose(uint32_t cp, cps *d)
{
    if (cp >= SBASE && cp < SBASE + SCOUNT) {
        uint32_t s = cp - SBASE;
        push(d, LBASE + s / NCOUNT);
        push(d, VBASE + s % NCOUNT / TCOUNT);
        if (s % TCOUNT) push(d, TBASE + s % TCOUNT);
        return;
    }
    size_t lo = 0, hi = NELEM(NFC_DEC);
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (cp < NFC_DEC[m].cp) hi = m;
        else if (cp > NFC_DEC[m].cp) lo = m + 1;
        else { for (int i = 0; i < NFC_DEC[m].n; i++) push(d, NFC_DEC_CPS[NFC_DEC[m].off + i]); return; }
    }
    push(d, cp);
}

void tk_nfc(const char *s, size_t n, fd_buf *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, k;
    while (i < n && (p[i] < 0x80 || !unsafe(next_cp(p + i, &k)))) i += p[i] < 0x80 ? 1 : k;
    if (i == n) { fd_buf_put(out, s, n); return; }
    cps d = {0};
    for (i = 0; i < n; i += k) decompose(next_cp(p + i, &k), &d);
    /* canonical ordering: stable sort of each run of non-starters by class */
    for (size_t j = 1; j < d.n; j++) {
        uint32_t x = d.v[j];
        int cx = ccc(x);
        if (!cx) continue;
        size_t m = j;
        while (m > 0 && ccc(d.v[m - 1]) > cx) { d.v[m] = d.v[m - 1]; m--; }
        d.v[m] = x;
    }
    /* canonical composition (the UAX #15 sample algorithm, in place);
     * last: class of the last kept char, 256 while there is no starter */
    size_t w = 1, starter = 0;
    int last = ccc(d.v[0]) ? 256 : 0;
    for (size_t j = 1; j < d.n; j++) {
        uint32_t ch = d.v[j], comp;
        int c = ccc(ch);
        if ((last < c || last == 0) && compose(d.v[starter], ch, &comp)) { d.v[starter] = comp; continue; }
        if (c == 0) starter = w;
        last = c;
        d.v[w++] = ch;
    }
    for (size_t j = 0; j < w; j++) put_cp(out, d.v[j]);
    free(d.v);
}
