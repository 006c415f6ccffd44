import torch, sys, os, time
import torch.nn.functional as F
torch.set_num_threads(int(os.environ.get("NT","1")))
torch.manual_seed(int(os.environ.get("SEED","0")))
M,N,K = map(int, sys.argv[1].split('x'))
x = torch.randn(M, K).to(torch.bfloat16); w = (torch.randn(N, K)*0.05).to(torch.bfloat16)
y1 = F.linear(x, w)
torch.set_num_threads(2); y2 = F.linear(x, w); torch.set_num_threads(1); y3 = F.linear(x,w)
print("nt1 vs nt2 identical:", torch.equal(y3.view(torch.int16), y2.view(torch.int16)))
X = x.float(); Wt = w.float()
S = []
for k0 in range(0, K, 32):
    E = torch.zeros(M, N); O = torch.zeros(M, N)
    for t in range(16):
        E = E + torch.outer(X[:, k0+2*t], Wt[:, k0+2*t]); O = O + torch.outer(X[:, k0+2*t+1], Wt[:, k0+2*t+1])
    S.append(E + O)
nch = len(S)
def chain(lo, hi):
    a = torch.zeros(M, N)
    for j in range(lo, hi): a = a + S[j]
    return a
def test(splits, name):
    pts = [0] + splits + [nch]
    parts = [chain(pts[i], pts[i+1]) for i in range(len(pts)-1)]
    tot = parts[0]
    for p in parts[1:]: tot = tot + p
    for yy, lab in ((y2,'nt2'),(y3,'nt1')):
        e = tot.to(torch.bfloat16)
        mm = (e.view(torch.int16) != yy.view(torch.int16))
        print(f"{name:28s} {lab}: match {1-mm.float().mean().item():.7f}", end='  ')
        if lab=='nt1' and 0 < mm.sum() < 50000:
            r = mm.nonzero(); print("rows", r[:,0].unique()[:10].tolist(), "cols", r[:,1].unique()[:10].tolist(), end='')
    print(flush=True)
test([], "single chain")
for kb in [int(v) for v in os.environ.get("KB","").split(",") if v]:
    if kb < nch: test(list(range(kb, nch, kb)), f"blocks of {kb} chunks ({kb*32})")
test([nch//2], "halves")
