/* torch.topk on the CPU, replayed exactly (which of several equal scores
 * is kept, and the output order of sorted=False); engine/ops/ops.h. */
#include "engine/ops/ops.h"
#include <stddef.h>
#include <string.h>

typedef fd_keyscore keyscore;

/* torch 2.11 CPU topk (largest=True) selects with libstdc++'s
 * std::nth_element(q, q+k-1, end) when k*64 > n, else std::partial_sort
 * (heap select), over (score, index) pairs in index order, comparing scores
 * only (comp(x, y) = x.s > y.s).  Which of several EQUAL scores is kept is a
 * property of that algorithm, so it is replayed exactly here. */
static int kcomp(const keyscore *x, const keyscore *y) { return x->s > y->s; }
static void kswap(keyscore *a, keyscore *b) { keyscore t = *a; *a = *b; *b = t; }

static void k_push_heap(keyscore *f, ptrdiff_t hole, ptrdiff_t top, keyscore v)
{
    ptrdiff_t parent = (hole - 1) / 2;
    while (hole > top && kcomp(f + parent, &v)) { f[hole] = f[parent]; hole = parent; parent = (hole - 1) / 2; }
    f[hole] = v;
}

static void k_adjust_heap(keyscore *f, ptrdiff_t hole, ptrdiff_t len, keyscore v)
{
    ptrdiff_t top = hole, child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (kcomp(f + child, f + child - 1)) child--;
        f[hole] = f[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        f[hole] = f[child - 1];
        hole = child - 1;
    }
    k_push_heap(f, hole, top, v);
}

static void k_heap_select(keyscore *f, keyscore *mid, keyscore *l)
{
    ptrdiff_t len = mid - f;
    if (len >= 2)
        for (ptrdiff_t parent = (len - 2) / 2;; parent--) {
            k_adjust_heap(f, parent, len, f[parent]);
            if (parent == 0) break;
        }
    for (keyscore *i = mid; i < l; i++)
        if (kcomp(i, f)) { keyscore v = *i; *i = *f; k_adjust_heap(f, 0, len, v); }
}

static void k_nth_element(keyscore *f, keyscore *nth, keyscore *l)
{
    int depth = 0;
    for (ptrdiff_t n = l - f; n > 1; n >>= 1) depth++;
    depth *= 2;
    while (l - f > 3) {
        if (depth == 0) { k_heap_select(f, nth + 1, l); kswap(f, nth); return; }
        --depth;
        keyscore *a = f + 1, *b = f + (l - f) / 2, *c = l - 1;
        if (kcomp(a, b)) {
            if (kcomp(b, c)) kswap(f, b);
            else if (kcomp(a, c)) kswap(f, c);
            else kswap(f, a);
        } else if (kcomp(a, c)) kswap(f, a);
        else if (kcomp(b, c)) kswap(f, c);
        else kswap(f, b);
        keyscore *lo = f + 1, *hi = l;
        for (;;) {
            while (kcomp(lo, f)) ++lo;
            --hi;
            while (kcomp(f, hi)) --hi;
            if (!(lo < hi)) break;
            kswap(lo, hi);
            ++lo;
        }
        if (lo <= nth) f = lo; else l = lo;
    }
    if (f == l) return;
    for (keyscore *i = f + 1; i < l; i++) {
        keyscore v = *i;
        if (kcomp(&v, f)) { memmove(f + 1, f, (size_t)(i - f) * sizeof *f); *f = v; }
        else {
            keyscore *j = i;
            while (kcomp(&v, j - 1)) { *j = *(j - 1); --j; }
            *j = v;
        }
    }
}

/* After the call ks[0..k) is the set torch's topk returns. */
void fd_op_topk_select(fd_keyscore *ks, size_t n, size_t k)
{
    if (k >= n) return;
    if (k * 64 <= n) k_heap_select(ks, ks + k, ks + n);
    else k_nth_element(ks, ks + k - 1, ks + n);
}

/* torch.topk(sorted=False) with its output ORDER (1 <= k <= n): the
 * nth_element path leaves the partition order, the partial_sort path ends
 * with std::sort_heap (descending). */
void fd_op_topk_ordered(fd_keyscore *ks, size_t n, size_t k)
{
    if (k * 64 <= n) {
        k_heap_select(ks, ks + k, ks + n);
        for (keyscore *l = ks + k; l - ks > 1;) {
            --l;
            keyscore v = *l;
            *l = *ks;
            k_adjust_heap(ks, 0, l - ks, v);
        }
    } else
        k_nth_element(ks, ks + k - 1, ks + n);
}

/* torch.topk(sorted=True): SortingKernel's topk_impl_loop sorts only the
 * first k - 1 after nth_element (the k-th is already no larger); libstdc++'s
 * std::sort of up to 16 elements is its insertion sort (stable). */
void fd_op_topk_sorted(fd_keyscore *ks, size_t n, size_t k)
{
    if (k * 64 <= n) { fd_op_topk_ordered(ks, n, k); return; }
    k_nth_element(ks, ks + k - 1, ks + n);
    for (size_t i = 1; i + 1 < k; i++) {
        keyscore v = ks[i];
        size_t j = i;
        while (j > 0 && kcomp(&v, ks + j - 1)) { ks[j] = ks[j - 1]; j--; }
        ks[j] = v;
    }
}
