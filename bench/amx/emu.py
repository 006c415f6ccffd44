import torch
def chunk_sums(X, W):
    """X [M,K] float (bf16 values), W [N,K]. Returns S [M,N,nch] fp32: per 32-chunk RNE(E+O).
    K padded with zeros to a multiple of 32."""
    M, K = X.shape; N = W.shape[0]
    nch = (K + 31) // 32
    if K % 32:
        X = torch.nn.functional.pad(X, (0, nch*32-K)); W = torch.nn.functional.pad(W, (0, nch*32-K))
    X = X.reshape(M, 1, nch, 32); W = W.reshape(1, N, nch, 32)
    E = torch.zeros(M, N, nch); O = torch.zeros(M, N, nch)
    for t in range(16):
        E += X[..., 2*t] * W[..., 2*t]
        O += X[..., 2*t+1] * W[..., 2*t+1]
    return E + O
def chain_blocks(S, blocks):
    """blocks: list of block lengths in chunks (sum = nch). Each block chained from 0,
    partials summed left to right. Returns fp32 [M,N]."""
    tot = None; j = 0
    for b in blocks:
        a = S[..., j].clone()
        for i in range(j+1, j+b): a += S[..., i]
        j += b
        tot = a if tot is None else tot + a
    return tot
def chain_groups(S, groups):
    """groups: list of lists of block lengths; each group's blocks are combined left to right
    (like chain_blocks) and groups summed left to right (for K-parallel reductions)."""
    tot = None; j = 0
    for g in groups:
        n = sum(g); p = chain_blocks(S[..., j:j+n], g); j += n
        tot = p if tot is None else tot + p
    return tot
def uniform(nch, kb):
    return [kb]*(nch//kb) + ([nch % kb] if nch % kb else [])
def probe_data(M, N, K, seed=0, erange=6, pairfrac=1.0):
    """Inputs that make the fp32 association order visible in bf16 outputs: per (row, chunk)
    power-of-two scales in 2^[-erange, erange], and ~3/8 of the chunks paired with an
    earlier/later chunk that cancels it exactly (x equal, w negated)."""
    g = torch.Generator().manual_seed(seed)
    nch = (K + 31) // 32
    x = torch.randn(M, nch*32, generator=g)
    sc = torch.exp2(torch.randint(-erange, erange+1, (M, nch), generator=g).float())
    x = (x * sc.repeat_interleave(32, 1)).bfloat16().float()
    w = (torch.randn(N, nch*32, generator=g) * 0.05).bfloat16().float()
    full = K // 32  # only pair complete chunks
    perm = torch.randperm(full, generator=g).tolist()
    npair = int(full // 2 * pairfrac)
    for i in range(npair):
        p, q = perm[2*i], perm[2*i+1]
        x[:, q*32:(q+1)*32] = x[:, p*32:(p+1)*32]
        w[:, q*32:(q+1)*32] = -w[:, p*32:(p+1)*32]
    return x[:, :K].bfloat16(), w[:, :K].bfloat16()
