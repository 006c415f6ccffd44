#include "engine/ops/kblocks.h"

void fd_kplan_onednn(size_t K, fd_kplan *p)
{
    p->nb = p->half = 0;
    size_t kb = K;
    if (K > 2048) kb = 1024;
    else if (K > 512) {
        kb = 1;
        while (kb * 2 < K) kb *= 2;
    }
    for (size_t k = 0; k < K && p->nb < FD_KPLAN_MAX; k += kb) p->st[p->nb++] = k;
    if (!p->nb) p->st[p->nb++] = 0;
    p->st[p->nb] = K;
}

/* oneDNN's AMX matmul picks its K-blocks with a heuristic that scores
 * candidate blockings (bench/amx/KBLOCKS.md: a transcription checked
 * bit for bit against torch on 160 shapes); its inputs include torch's
 * thread count and the host's L2 size, which a capture must not depend on.
 * This is that heuristic's answer for 2 threads and a 2 MiB L2 on the
 * measured shapes, as a fixed rule of (M, N, K):
 *   M <= 64 or K <= 2048: one block (except P.V-like M >= 2048 with K =
 *     2048 and N >= 128: two of 1024);
 *   2048 < K <= 3072: two blocks (2,816 -> 1,408 x 2; 3,000 -> 1,504 +
 *     1,496); K > 3072: four (4,096 -> 1,024 x 4; 8,192 -> 2,048 x 4);
 * blocks are whole 32-element chunks, the last one shorter.  Not matched:
 * a few M of 65-300 for which the heuristic keeps K = 2,816 whole (78,
 * 130, 135, 140, 144, 270, 273, 286, 288). */
void fd_kplan_amx(size_t M, size_t N, size_t K, fd_kplan *p)
{
    p->nb = p->half = 0;
    size_t nb = 1;
    if (M > 64 && K > 2048) nb = K <= 3072 ? 2 : 4;
    else if (M >= 2048 && K == 2048 && N >= 128) nb = 2;
    size_t chunks = (K + 31) / 32, per = (chunks + nb - 1) / nb;
    for (size_t b = 0; b < nb && b * per * 32 < K; b++) p->st[p->nb++] = b * per * 32;
    p->st[p->nb] = K;
}

void fd_kplan_bf16(int tile, size_t M, size_t N, size_t K, fd_kplan *p)
{
    if (tile) fd_kplan_amx(M, N, K, p);
    else fd_kplan_onednn(K, p);
}

/* MKL's sgemm order for an fp32 matmul (measured for the mHC mix, M = tokens, N = (2+m)m = 24, K = mH,
 * and for a router of N = 32 with M >= 353 and K = 1024, 2048;
 * fp32, torch 2.11 wheel, 2 threads), found by probing (a 2^24 at position p
 * of a row of ones loses exactly the ones chained after it in its block) and
 * checked on random data: K is cut into blocks, each one FMA chain from 0.
 *   M >= 353: blocks of 384, the last two sharing 384 + K mod 384 (the first
 *     rounded up): K 1024 -> 384, 320, 320; 999 -> 384, 308, 307; 16384 ->
 *     42 x 384, 320, 320; the block sums added in order.
 *   M < 353: K split in two halves (the two threads), each cut into
 *     ceil(half / 256) equal blocks added in order, then half 0 + half 1:
 *     K 1024 -> (256 + 256) + (256 + 256); 1000 -> 4 x 250; 600 -> 300 + 300. */
static void kplan_cut(fd_kplan *p, size_t k0, size_t len)
{
    size_t nb = (len + 255) / 256;
    if (nb < 1) nb = 1;
    if (nb > 512) nb = 512;
    for (size_t b = 0; b < nb; b++) p->st[p->nb++] = k0 + (b * len + nb - 1) / nb;
}

void fd_kplan_mkl(size_t M, size_t K, fd_kplan *p)
{
    p->nb = p->half = 0;
    if (M >= 353) {
        size_t full = K / 384, r = K % 384;
        if (r && full) full--;
        if (full > FD_KPLAN_MAX - 4) full = FD_KPLAN_MAX - 4;
        for (size_t b = 0; b < full; b++) p->st[p->nb++] = b * 384;
        size_t rest = K - full * 384;
        p->st[p->nb++] = full * 384;
        if (rest > 384) p->st[p->nb++] = full * 384 + (rest + 1) / 2;
    } else {
        size_t h = (K + 1) / 2;
        kplan_cut(p, 0, h);
        p->half = p->nb;
        if (K > h) kplan_cut(p, h, K - h);
        else p->half = 0;
    }
    p->st[p->nb] = K;
}

