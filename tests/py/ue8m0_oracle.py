#!/usr/bin/env python3
"""Test vectors for FP8 block weights with UE8M0 (power-of-two) scales
(DeepSeek-V3.2-style `scale_fmt: "ue8m0"`), decoded by transformers' own
`Fp8Dequantize._dequantize_one` (integrations/finegrained_fp8.py): e4m3
weights times the float8_e8m0fnu (or power-of-two float32) scale, promoted to
fp32, cast to bf16.

usage: ue8m0_oracle.py OUT.safetensors

Needs torch and transformers (test oracle only; CI reads the committed file).
The committed tests/vectors/packed/fp8_ue8m0.safetensors was made on this
project's build host (AMD EPYC Zen 4) by:

  /tmp/venv-engine/bin/python tests/py/ue8m0_oracle.py tests/vectors/packed/fp8_ue8m0.safetensors

with torch 2.15 (CPU) and transformers 5.25.  Per case cNN: weight F8_E4M3
[N, K] (every code but the two NaNs), weight_scale_inv F8_E8M0 or F32 (powers
of two) [N/bm, K/bn], block I32 [2], expected BF16 [N, K].  Exponents include
0 (2^-127, an fp32 subnormal: products underflow to subnormals and zero) and
254 (2^127: products overflow to infinity).  transformers derives the block
from shape / grid, so the shapes here are whole blocks.
"""
import os, sys

import numpy as np
import torch
from transformers.integrations.finegrained_fp8 import Fp8Dequantize

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dequant_ref as dq  # noqa: E402

torch.set_num_threads(1)


def main(out):
    rng = np.random.default_rng(88)
    op = Fp8Dequantize(None)
    t, c = {}, 0
    for (n, k, bm, bn) in [(24, 48, 8, 16), (16, 256, 16, 128), (40, 24, 8, 8)]:
        for sdt in ("F8_E8M0", "F32"):
            name = "c%02d" % c
            w = rng.integers(0, 256, size=(n, k), dtype=np.int64).astype(np.uint8)
            w.reshape(-1)[:256] = np.arange(256, dtype=np.uint8)
            w[(w & 0x7f) == 0x7f] ^= 1                   # no NaN codes
            e = rng.integers(100, 140, size=(n // bm, k // bn), dtype=np.int64).astype(np.uint8)
            e.reshape(-1)[:min(3, e.size)] = [0, 254, 1][:e.size]
            if sdt == "F8_E8M0":
                st = torch.from_numpy(e.copy()).view(torch.float8_e8m0fnu)
                sa = e
            else:
                sa = np.ldexp(np.float32(1), e.astype(np.int32) - 127).astype(np.float32)
                st = torch.from_numpy(sa.copy())
            got = op._dequantize_one(torch.from_numpy(w.copy()).view(torch.float8_e4m3fn), st, torch.bfloat16)
            exp = got.view(torch.int16).numpy().view(np.uint16)
            mine = dq.dequant_fp8(w, sa if sdt == "F32" else dq.e8m0_to_f32(sa), bm, bn)
            if int(np.sum(mine != exp)):
                sys.exit("case %s: dequant_ref differs from transformers in %d elements" % (name, int(np.sum(mine != exp))))
            t[name + ".weight"] = ("F8_E4M3", w)
            t[name + ".weight_scale_inv"] = (sdt, sa)
            t[name + ".block"] = ("I32", np.array([bm, bn], dtype=np.int32))
            t[name + ".expected"] = ("BF16", exp)
            c += 1
    dq.write_safetensors(out, t)
    print("%d cases -> %s" % (c, out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
