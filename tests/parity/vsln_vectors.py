#!/usr/bin/env python3
"""Reference vectors for fd_mkl_logf (src/kernels/mkl_vml.c) from torch.log
itself (test oracle; needs torch + numpy; x86-64 wheel; torch.log on fp32 CPU
tensors is MKL's vsLn, on the AMD Zen 4 host that wrote the committed file
mkl_vml_kernel_sLn_EXHAynn).  The full proof is vsln_exhaustive.py (every
fp32 input); this is the CI sample.

usage: /tmp/venv-engine/bin/python tests/parity/vsln_vectors.py > tests/c/vsln_vectors.inc
       vsln_vectors.py --check   (regenerate and diff against the committed file)

Raw fp32 bit patterns, so tests/c/test_mkl_vml.c compares bits without
torch: every binade (random significands), the softplus domain 1 + exp(x)
for x in [-30, 20], near 1 and the reduction's edges 2/3 and 4/3 (bit
neighbours), subnormals, and the callout's inputs (+-0, negatives, +-inf,
quiet / signalling NaN of both signs); and torch.exp (MKL vsExp as this
host runs it, mkl_vml_kernel_sExp_EXHAynn: fd_mkl_expf_ex) on its fast range
|x| <= 87.33654 (dense near 0, the table edges j/128 ln 2, the gate's range)
and its scalar callout's (normal and subnormal results, overflow, specials);
torch.sqrt (mkl_vml_kernel_sSqrt_EXHAynn: fd_mkl_sqrtf, with AMD Zen 4's
RSQRTPS) on its fast range, one input in each 8 RSQRTPS table entries, and
the callout's inputs (negatives: NaN 0x7fc00000, not x86's 0xffc00000)."""
import os
import sys

import numpy as np
import torch

torch.set_num_threads(1)
rng = np.random.default_rng(20261204)


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def near(v, k):  # bit neighbours of the float v
    b = int(bits(np.float32(v))[0])
    return np.array([b + i for i in range(-k, k + 1)], dtype=np.uint32).view(np.float32)


xs = np.concatenate([
    np.exp2(rng.uniform(-126, 128, 1200)),
    (1 + np.exp(rng.uniform(-30, 20, 1200))),
    1 + rng.normal(0, 1e-3, 200), near(1.0, 40), near(2 / 3, 20), near(4 / 3, 20), near(2 ** -126, 4),
    near(3.4028235e38, 4)[:5], np.exp2(np.arange(-126, 128, dtype=np.float64)),
]).astype(np.float32)
xs = xs[np.isfinite(xs)]
sub = np.concatenate([rng.integers(1, 1 << 23, 200), [1, 2, 3, (1 << 23) - 1]]).astype(np.uint32)
special = np.array([0x00000000, 0x80000000, 0xbf800000, 0x80000001, 0xff7fffff, 0x7f800000, 0xff800000,
                    0x7fc00000, 0xffc00000, 0x7f800001, 0xff800123, 0x7fc12345], dtype=np.uint32)
allx = np.concatenate([bits(xs), sub, special]).astype(np.uint32)
y = torch.from_numpy(allx.view(np.float32).copy()).log().numpy().view(np.uint32)
# torch.exp (vsExp, mkl_vml_kernel_sExp_EXHAynn here): its fast range |x| <= 87.33654
ex = np.concatenate([rng.uniform(-87.3, 87.3, 1500), rng.uniform(-1, 1, 500), rng.normal(0, 1e-3, 200),
                     np.arange(-128 * 128, 128 * 128, 13) * np.log(2.0) / 128, rng.uniform(-30, 20, 800),
                     [0.0, -0.0, 87.33654, -87.33654, 1e-30, -1e-30]]).astype(np.float32)
ex = bits(ex[np.abs(ex) <= np.float32(87.33654)])
# and its scalar callout (|x| > 87.33654: normal results up to 88.72, subnormal ones down to -103.97,
# overflow, underflow, +-inf, NaN)
exc = np.concatenate([rng.uniform(87.33655, 88.73, 200), rng.uniform(-104.0, -87.33655, 200),
                      [89.0, -105.0, 1e30, -1e30]]).astype(np.float32)
# every 4th of the 169 inputs (of all 2^32) where libm expf differs from the callout (vsln_exhaustive.py exp)
libm_differs = [0x42aeafdb, 0x42aec57c, 0x42aef06c, 0x42af02c6, 0x42af0b73, 0x42af3611, 0x42af5f4a, 0x42af903d,
                0x42afa75f, 0x42afb310, 0x42afd979, 0x42afe9d1, 0x42aff4c0, 0x42b01efe, 0x42b03727, 0x42b0588b,
                0x42b07bf5, 0x42b08f00, 0x42b09630, 0x42b0b9d1, 0x42b0dee6, 0x42b0f268, 0x42b10c3e, 0x42b1168b,
                0x42b11cb5, 0x42b134a7, 0x42b155fa, 0x42b170bb, 0xc2aec8fc, 0xc2aee73b, 0xc2af4113, 0xc2af6bcf,
                0xc2af8d77, 0xc2afe6c2, 0xc2b03ed7, 0xc2b06385, 0xc2b0bbfc, 0xc2b0efee, 0xc2b1374a, 0xc2b26948,
                0xc2b462e6, 0xc2b653e8, 0xc2b845cc]
ex = np.concatenate([ex, bits(exc[np.abs(exc) > np.float32(87.33654)]), libm_differs, special]).astype(np.uint32)
ey = torch.from_numpy(ex.view(np.float32).copy()).exp().numpy().view(np.uint32)
# torch.sqrt (vsSqrt, mkl_vml_kernel_sSqrt_EXHAynn here: Zen 4's RSQRTPS, two Newton steps) on its
# fast range [2^-126, 0x7f7ff000]: every binade, the l2norm's sums + 1e-6, every 12-bit RSQRTPS prefix
# of [1, 4) (one random entry in each 8, one random input in it)
sq = np.concatenate([np.exp2(rng.uniform(-126, 128, 1500)), rng.uniform(0, 4, 500), rng.uniform(1e-6, 64, 500),
                     np.exp2(np.arange(-126, 128, dtype=np.float64))]).astype(np.float32)
idx = np.arange(0, 8192, 8) + rng.integers(0, 8, 1024)
pre = (np.where(idx < 4096, 0x3f800000, 0x40000000) | ((idx & 4095) << 11)
       | rng.integers(0, 1 << 11, 1024)).astype(np.uint32)
sq = np.concatenate([bits(sq), pre]).astype(np.uint32)
sqf = sq.view(np.float32)
sq = sq[(sqf >= np.float32(2.0 ** -126)) & (sq <= 0x7f7ff000)]
sq = np.concatenate([sq, special, sub[:20], [0x7f7ff001, 0x7f7fffff, 0xc0000000, 0xbf000001]]).astype(np.uint32)  # the callout
sy = torch.from_numpy(sq.view(np.float32).copy()).sqrt().numpy().view(np.uint32)
out = ["/* generated by tests/parity/vsln_vectors.py with torch %s: do not edit */" % torch.__version__,
       "#define MKV_LN_N %d" % len(allx), "#define MKV_EX_N %d" % len(ex), "#define MKV_SQ_N %d" % len(sq)]
for name, vals in (("mkv_ln_x", allx), ("mkv_ln_y", y), ("mkv_ex_x", ex), ("mkv_ex_y", ey), ("mkv_sq_x", sq),
                   ("mkv_sq_y", sy)):
    out.append("static const uint32_t %s[%d] = {" % (name, len(vals)))
    for i in range(0, len(vals), 8):
        out.append("    " + ", ".join("0x%x" % int(v) for v in vals[i:i + 8]) + ",")
    out.append("};")
text = "\n".join(out) + "\n"
if "--check" in sys.argv:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "c", "vsln_vectors.inc")
    same = open(path).read() == text
    print("vsln vectors:", "identical" if same else "DIFFER")
    sys.exit(0 if same else 1)
sys.stdout.write(text)
