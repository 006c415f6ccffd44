#!/usr/bin/env python3
"""The QFS default compare path in numpy (the peer we measure against):
bf16 -> fp32 widening, an fp32 BLAS GEMM per context, fp64 log_softmax over
the full vocabulary, KL(reference || candidate) per position.
usage: numpy_compare.py REF_DATASET CAND_DATASET [--records N]  -> prints JSON"""
import json, os, struct, sys, time
import numpy as np

def tensor(path, key):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        s, e = h[key]["data_offsets"]
        f.seek(8 + n + s)
        raw = np.frombuffer(f.read(e - s), dtype=np.uint16)
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(h[key]["shape"])

def records(root):
    m = json.load(open(os.path.join(root, "capture", "manifest.json")))
    return sorted(m["records"], key=lambda r: r["index"])

def main():
    ref, cand = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[sys.argv.index("--records") + 1]) if "--records" in sys.argv else None
    t0 = time.perf_counter()
    head = np.ascontiguousarray(tensor(os.path.join(ref, "head", "weight.safetensors"), "lm_head.weight").T)
    kls, n = [], 0
    for rr, cr in list(zip(records(ref), records(cand)))[:limit]:
        hr = tensor(os.path.join(ref, "capture", rr["file"]), "hidden_states")
        hc = tensor(os.path.join(cand, "capture", cr["file"]), "hidden_states")
        for a in range(0, hr.shape[0], 128):
            lr = (hr[a:a + 128] @ head).astype(np.float64)
            lc = (hc[a:a + 128] @ head).astype(np.float64)
            lr -= lr.max(axis=1, keepdims=True); lr -= np.log(np.exp(lr).sum(axis=1, keepdims=True))
            lc -= lc.max(axis=1, keepdims=True); lc -= np.log(np.exp(lc).sum(axis=1, keepdims=True))
            kls.append((np.exp(lr) * (lr - lc)).sum(axis=1))
            n += lr.shape[0]
    dt = time.perf_counter() - t0
    kl = np.concatenate(kls)
    print(json.dumps({"positions": n, "seconds": dt, "positions_per_second": n / dt, "mean_kl": float(kl.mean()),
                      "numpy": np.__version__}))

if __name__ == "__main__":
    main()
