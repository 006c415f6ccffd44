"""K-block rule of torch 2.11 (oneDNN 3.10.2 brg_matmul:avx10_1_512_amx) bf16 matmul.

kblocks_amx(M, N, K, nthreads, batch=1, transposed_B=True) -> list of K-block lengths.
Each block is one brgemm call: its 32-element chunks are chained into one fp32
accumulator starting from 0; the blocks' partials are then added left to right
into the fp32 C buffer (C = C + partial), and the result is rounded to bf16.

The function is a transcription of oneDNN's "micro" AMX blocking heuristic
(src/cpu/x64/matmul/amx_blocking_heuristics.cpp, matmul_amx_blocking_params_micro_t,
and compute_blocking_heuristic in brgemm_matmul_utils.cpp), specialised to
bf16 x bf16 -> bf16, fp32 accumulation, no post-ops, B not pre-blocked (torch
passes F.linear's weight as the transposed plain tag "ba"), nthr < 16 (so nthr_k = 1).

Usage as a script: python kblocks_amx.py [NT=1|2 env] MxNxK[xB] ... re-verifies
against torch (F.linear for 2-D, torch.matmul for batched) and prints match fractions.
"""
import math

L2_BYTES = 2 * 1024 * 1024          # per-core L2 of this host (cpuid); L2_threshold = 3/4 of it
WEI_K_BLK = 32                      # 16 * vnni granularity (2) for bf16
def _div_up(a, b): return -(-a // b)
def _rnd_up(a, b): return _div_up(a, b) * b
def _f32(x):
    import numpy as np
    return np.float32(x)

def _micro_params(M, N, K, nthr, batch, transposed_B, L2thr):
    """Returns dict with k_blk, bs (brgemm batch), k_chunk_elems, m_blk, m_chunk, n_blk, n_chunk."""
    import numpy as np
    f32 = np.float32
    a_sz = b_sz = c_sz = 2; acc_sz = 4
    big_pow2 = (K & (K - 1)) == 0 and K >= 4096
    # M_blk candidate (compute_blocking_heuristic, get_block_candidate)
    M_blk0 = None
    for r in range(16, 12, -1):
        for s in range(4, 1, -1):
            if M % (s * r) == 0 and M_blk0 is None: M_blk0 = s * r
    if M_blk0 is None: M_blk0 = min(M, 64)
    N_blk0 = min(64, N)
    use_buffer_a = big_pow2 and M >= 1024      # prefer_copy_a (bf16, lda_big_pow2, M >= 1024)

    def set_params(n_blk, n_ch, m_blk, m_ch):
        p = dict(n_blk=n_blk, n_ch=n_ch, m_blk=m_blk, m_ch=m_ch)
        n_ce = n_blk * n_ch; m_ce = m_blk * m_ch
        need_buf_a = use_buffer_a  # K even assumed in the pre-pass
        def lda(k_blk):
            if not need_buf_a: return K
            l = _rnd_up(k_blk, 32)
            if l >= 512 and (l & (l - 1)) == 0: l += 32
            return l
        def chunk_mem(k_blk, bs):
            kce = k_blk * bs
            need_buf_c = (K > kce or K % k_blk > 0)
            A = a_sz * kce * m_ce
            Ab = b_sz * lda(k_blk) * bs * m_ce if need_buf_a else 0
            B = b_sz * kce * n_ce
            Bb = b_sz * n_blk * kce           # use_buffer_b
            C = c_sz * m_ce * n_ce
            Cb = acc_sz * m_ce * n_ce if need_buf_c else 0
            return A + Ab + B + Bb + C + Cb
        if K < WEI_K_BLK:
            k_blk = _rnd_up(K, 2); bs = 1; extendable = False
        else:
            k_blk = min(_rnd_up(K, 2), WEI_K_BLK)
            nkb = _div_up(K, k_blk); bs = nkb
            cs = chunk_mem(k_blk, bs)
            div_min = cs // L2thr; div_max = _div_up(cs, L2thr)
            thr = 2 if big_pow2 else 0
            if div_min > thr and bs > 1:
                kc1 = max(bs // div_min, 1); kc2 = _div_up(bs, div_max)
                t1 = nkb % kc1; t2 = nkb % kc2
                bs = kc2 if ((not (t1 == 0 or t2 < t1)) or t2 == 0) else kc1
            bke = k_blk * bs; tail = K % k_blk
            extendable = (K % WEI_K_BLK != 0) and bke > WEI_K_BLK and not use_buffer_a
            if extendable:
                k_blk = K if bke >= K else bke; bs = 1
            elif tail == 0 and K % bke == 0:
                k_blk = bke; bs = 1
            elif K == bke + tail:
                k_blk = bke; bs = 2
        p.update(k_blk=k_blk, bs=bs, extendable=extendable)
        mem = chunk_mem(k_blk, bs)
        kce = k_blk * bs
        # scores (float32 like the C++)
        nthr_c = f32(min(nthr, 100))
        bal_f = (nthr_c - f32(1)) / nthr_c; cache_f = f32(1) / nthr_c; reuse_f = f32(1)
        l2 = f32(1) - f32(abs(float(L2thr) - mem)) / f32(max(L2thr, mem))
        dM = min(M, 256); dN = min(N, 64 * (4 if need_buf_a else 1))
        cM = min(f32(m_ce) / f32(dM), f32(1)); cN = min(f32(n_ce) / f32(dN), f32(1))
        reuse = f32(0.5) * (cM + cN)
        nMc = _div_up(M, m_ce); nNc = _div_up(N, n_ce)
        mnb = f32(batch) * (f32(M) / f32(m_ce)) * (f32(N) / f32(n_ce)) / f32(_rnd_up(batch * nMc * nNc, nthr)) * f32(nthr)
        bal = mnb * f32(1) / f32(nthr)
        sc = cache_f * l2 + reuse_f * reuse
        if bal_f > 0: sc = sc + bal_f * bal
        p['score'] = sc / (reuse_f + bal_f + cache_f)
        p['kce'] = kce
        return p

    num_M_blk = _div_up(M, M_blk0); num_N_blk = _div_up(N, N_blk0)
    npw = batch * num_M_blk * num_N_blk
    lot = npw > 16 * nthr; low = npw < 1.5 * nthr
    min_M_blk = _div_up(M_blk0, 2) if (low and M_blk0 > 32) else M_blk0
    min_N_blk = 32 if (low and N_blk0 > 32 and not transposed_B) else N_blk0
    dMc = min(4, num_M_blk); dNc = min(6 if lot else 4, num_N_blk)
    mc = []
    m = M_blk0
    while m >= min_M_blk:
        if m not in mc: mc.append(m)
        m = _div_up(m, 2) if m > 1 else m - 1
    if M > 16:
        for m in range(min((M // 16) * 16, 64), _rnd_up(min_M_blk, 16) - 1, -16):
            if m not in mc and m > 0: mc.append(m)
    best = None; ties = []
    n = N_blk0
    while n >= min_N_blk:
        for m in mc:
            for nch in range(dNc, 0, -1):
                for mch in range(dMc, 0, -1):
                    p = set_params(n, nch, m, mch)
                    work = batch * _div_up(M, m * mch) * _div_up(N, n * nch)
                    if work < nthr * 3 and work % nthr != 0: continue
                    if best is None or p['score'] > best['score']:
                        best = p
        n -= 16
    if best is None:
        best = set_params(min_N_blk, 1, min_M_blk, 1)
    return best

def kblocks_amx(M, N, K, nthreads=1, batch=1, transposed_B=True, L2=L2_BYTES, detail=False):
    p = _micro_params(M, N, K, nthreads, batch, transposed_B, 3 * L2 // 4)
    kce = p['kce']
    blocks = []
    k = 0
    while k < K:
        c = min(kce, K - k)
        # inside a K chunk: the full 32-multiples run as one brgemm call; a K tail
        # (not a multiple of 32) that is not "extendable" is a separate call
        if not p['extendable'] and c % WEI_K_BLK and c > WEI_K_BLK:
            blocks += [c - c % WEI_K_BLK, c % WEI_K_BLK]
        else:
            blocks.append(c)
        k += c
    return (blocks, p) if detail else blocks

# ---------------------------------------------------------------- verification
def _sample(n, k=20):
    import torch
    if n <= k: return torch.arange(n)
    return torch.unique(torch.cat([torch.linspace(0, n - 1, k - 4).long(), torch.arange(n - 4, n)]))

def verify(M, N, K, nthreads=1, batch=0, bmm_kind=None, seed=0, scan=False):
    """batch=0: F.linear(x[M,K], w[N,K]). batch=h: torch.matmul on [1,h,..] tensors,
    bmm_kind 'qk' (B = k.transpose(2,3), transposed) or 'pv' (B = v plain).
    Returns (model blocks, match fraction, list of uniform block sizes that match if scan)."""
    import torch, torch.nn.functional as F
    from emu import probe_data, chunk_sums, chain_blocks, uniform
    old = torch.get_num_threads()
    nb = max(batch, 1)
    xs, ws = zip(*[probe_data(M, N, K, seed=seed + b) for b in range(nb)])
    torch.set_num_threads(nthreads)
    if batch == 0:
        y = F.linear(xs[0], ws[0])[None]
        tB = True
    else:
        A = torch.stack(xs)[None]                       # [1,h,M,K]
        if bmm_kind == 'qk':
            Bm = torch.stack(ws)[None].transpose(2, 3)  # [1,h,K,N] view of [1,h,N,K]
            tB = True
        else:
            Bm = torch.stack([w.t().contiguous() for w in ws])[None]  # [1,h,K,N] plain
            tB = False
        y = torch.matmul(A, Bm)[0]
    torch.set_num_threads(old)
    blocks = kblocks_amx(M, N, K, nthreads, nb, tB)
    r, c = _sample(M), _sample(N)
    tot = 0; ok = 0; scan_ok = None
    bsel = range(nb) if nb <= 4 else [0, nb // 2, nb - 1]
    for b in bsel:
        yy = y[b][r][:, c].contiguous().view(torch.int16)
        S = chunk_sums(xs[b][r].float(), ws[b][c].float())
        # model blocks in units of 32-chunks; a block of non-multiple-of-32 length
        # ends with a partial chunk (zero padded)
        bl = [_div_up(x, 32) for x in blocks]
        e = chain_blocks(S, bl).bfloat16().view(torch.int16)
        ok += (e == yy).sum().item(); tot += yy.numel()
        if scan:
            nch = S.shape[-1]
            s_ok = set(kb for kb in range(2, nch + 1) if kb != nch - 1 and
                       torch.equal(chain_blocks(S, uniform(nch, kb)).bfloat16().view(torch.int16), yy))
            scan_ok = s_ok if scan_ok is None else scan_ok & s_ok
    return blocks, ok / tot, (sorted(scan_ok) if scan else None)

if __name__ == "__main__":
    import sys, os
    nt = int(os.environ.get("NT", "1")); scan = bool(os.environ.get("SCAN"))
    for s in sys.argv[1:]:
        kind = None
        if s.startswith(('qk:', 'pv:')): kind, s = s.split(':')
        d = list(map(int, s.split('x')))
        M, N, K = d[:3]; h = d[3] if len(d) > 3 else 0
        if kind and not h: h = 1
        blocks, frac, sc = verify(M, N, K, nt, h, kind, scan=scan)
        tag = f"{kind or 'linear'} M={M} N={N} K={K}" + (f" h={h}" if h else "") + f" nt={nt}"
        print(f"{tag}: model {blocks} match {frac:.6f}" + (f" uniform-kb-exact(chunks) {sc}" if scan else "")
              + ("" if frac == 1.0 else "  <-- MISMATCH"), flush=True)
