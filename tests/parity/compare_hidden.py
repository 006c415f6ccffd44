#!/usr/bin/env python3
"""Compare a fidelity capture with a transformers golden file
(transformers_hidden.py): bit-identical fraction of hidden elements, and KL /
top-1 of the logits both give through the same head (numpy fp64 log-softmax).
Needs numpy only.
usage: compare_hidden.py DATASET GOLDEN_DIR [--int8-kl X] [--dump DIR] [--max-kl-fraction F]
       [--min-top1 T] [--min-sel S] [--min-identical B]
--dump DIR: the FIDELITY_FORWARD_DUMP directory of the capture (its first
forward must be the golden's first window): DSA selection agreement per
(layer, query) against the golden's selections_first_window.
Prints a JSON summary; exits 1 if KL(golden||ours) mean > F (default 1 %) of X
(when given), top-1 agreement < T (default 99.9 %) or selection agreement < S
(default 99.9 %, when measured), or the bit-identical fraction of the hidden
elements < B (default 0: not checked)."""
import json, os, struct, sys
import numpy as np

def read_st(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]

def bf16(body, meta):
    s, e = meta["data_offsets"]
    u = np.frombuffer(body[s:e], dtype="<u2")
    return u, (u.astype(np.uint32) << 16).view(np.float32).reshape(meta["shape"])

def lsm(x):
    x = x.astype(np.float64)
    x = x - x.max(axis=1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=1, keepdims=True))

def main():
    ds, gold = sys.argv[1], sys.argv[2]
    int8 = float(sys.argv[sys.argv.index("--int8-kl") + 1]) if "--int8-kl" in sys.argv else None
    gh, gb = read_st(os.path.join(gold, "golden.safetensors"))
    hh, hb = read_st(os.path.join(ds, "head", "weight.safetensors"))
    _, W = bf16(hb, hh["lm_head.weight"])
    cap = json.load(open(os.path.join(ds, "capture", "manifest.json")))
    same = total = 0
    kls, agree, n = [], 0, 0
    for rec in sorted(cap["records"], key=lambda r: r["index"]):
        h, b = read_st(os.path.join(ds, "capture", rec["file"]))
        ou, of = bf16(b, h["hidden_states"])
        gu, gf = bf16(gb, gh[rec["window_id"]])
        same += int(np.sum(ou == gu)); total += ou.size
        lg, lo = lsm(gf @ W.T), lsm(of @ W.T)
        kls.append((np.exp(lg) * (lg - lo)).sum(axis=1))
        agree += int(np.sum(lg.argmax(axis=1) == lo.argmax(axis=1))); n += lg.shape[0]
    kl = np.concatenate(kls)
    sel = None
    gj = json.load(open(os.path.join(gold, "golden.json")))
    sw = gj.get("selections_first_window")
    if "--dump" in sys.argv and sw:
        import hashlib
        dump = sys.argv[sys.argv.index("--dump") + 1]
        eq = tot = 0
        for L, want in sw["layers"].items():
            S = len(want)
            m = np.fromfile(os.path.join(dump, "sel.L%s.u8" % L), dtype=np.uint8).reshape(S, S)
            for t in range(S):
                keys = np.nonzero(m[t])[0].tolist()
                got = hashlib.sha256(",".join(str(j) for j in keys).encode()).hexdigest()[:16]
                eq += got == want[t]
                tot += 1
        sel = eq / tot
    res = {"hidden_bit_identical_fraction": same / total, "kl_golden_vs_ours_mean": float(kl.mean()),
           "kl_max": float(kl.max()), "top1_agreement": agree / n, "positions": n}
    if int8:
        res["kl_fraction_of_int8"] = float(kl.mean()) / int8
    if sel is not None:
        res["dsa_selection_agreement_first_window"] = sel
    print(json.dumps(res, indent=2))
    arg = lambda k, d: float(sys.argv[sys.argv.index(k) + 1]) if k in sys.argv else d
    ok = res["top1_agreement"] >= arg("--min-top1", 0.999) and \
        res["hidden_bit_identical_fraction"] >= arg("--min-identical", 0.0) and \
        (int8 is None or res["kl_fraction_of_int8"] <= arg("--max-kl-fraction", 0.01)) and \
        (sel is None or sel >= arg("--min-sel", 0.999))
    sys.exit(0 if ok else 1)

if __name__ == "__main__":
    main()
