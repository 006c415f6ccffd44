#!/usr/bin/env python3
"""Test vectors for compressed-tensors' unpacked formats (int-quantized,
float-quantized, naive-quantized), made by the reference library itself:
seeded random I8 / F8_E4M3 weights, scales and zero points are decoded by
compressed-tensors' own IntQuantizationCompressor /
FloatQuantizationCompressor / NaiveQuantizationCompressor.decompress; the
result, cast to bf16 by torch, is the expected output.

usage: ct_dense_oracle.py OUT.safetensors

Needs torch and compressed-tensors (test oracle only; CI reads the committed
file).  The committed tests/vectors/packed/ct_dense.safetensors was made on
this project's build host (AMD EPYC Zen 4) by:

  PYTHONPATH=/tmp/ct-pkgs /tmp/venv-engine/bin/python tests/py/ct_dense_oracle.py \\
      tests/vectors/packed/ct_dense.safetensors

with torch 2.15 (CPU) and compressed-tensors 0.20.1 installed with
`pip install --no-deps --target /tmp/ct-pkgs compressed-tensors==0.20.1 loguru psutil`.

Per case cNN: weight (I8 / F8_E4M3 [N, K]), weight_scale (BF16/F16/F32),
weight_zero_point I8 (asymmetric int), scheme I32 [7] = (bits, strategy 0
channel / 1 group / 2 block / 3 tensor, group_size, block rows, block cols,
symmetric, float), expected BF16 [N, K].  Odd shapes (13x37, 1x9, 21x50),
partial blocks; every e4m3 code but the two NaNs occurs; scales with
zero, negative, subnormal and fp16-overflowing values.
"""
import os, sys

import numpy as np
import torch
from compressed_tensors.compressors.naive_quantized.base import (FloatQuantizationCompressor,
                                                                  IntQuantizationCompressor,
                                                                  NaiveQuantizationCompressor)
from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dequant_ref as dq  # noqa: E402
import packed_ref as pr  # noqa: E402

torch.set_num_threads(1)
TD = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}
STRAT = {"channel": 0, "group": 1, "block": 2, "tensor": 3}


def scales(rng, shape, sdt, case):
    s = (np.exp2(rng.uniform(-10, 1, size=shape)) * rng.choice([1, 1, 1, -1], size=shape)).astype(np.float32)
    flat = s.reshape(-1)
    ext = [0.0, 2.0 ** -24, 65504.0, 700.0] if sdt == "F16" else [0.0, 2.0 ** -130, 3e38, -2.0 ** -126]
    for i, v in enumerate(ext[: max(0, flat.size - 1)]):
        flat[(case + 3 * i) % flat.size] = v
    if sdt == "BF16":
        return dq.f32_to_bf16_bits(s)
    return s.astype(np.float16) if sdt == "F16" else s


def main(out):
    rng = np.random.default_rng(1919)
    t, c = {}, 0
    combos = [("int", "int-quantized", "channel", None, None, True, (13, 37)),
              ("int", "int-quantized", "tensor", None, None, True, (21, 50)),
              ("int", "naive-quantized", "channel", None, None, False, (1, 9)),
              ("int", "naive-quantized", "group", 8, None, False, (13, 40)),
              ("int", "int-quantized", "group", 16, None, True, (21, 48)),
              ("int", "naive-quantized", "block", None, [5, 7], False, (13, 37)),
              ("float", "float-quantized", "channel", None, None, True, (21, 50)),
              ("float", "float-quantized", "tensor", None, None, True, (13, 37)),
              ("float", "float-quantized", "block", None, [8, 16], True, (21, 50)),
              ("float", "naive-quantized", "group", 16, None, True, (13, 48)),
              ("float", "float-quantized", "block", None, [16, 16], True, (32, 256))]
    for typ, fmt, st, g, blk, sym, (n, k) in combos:
        for sdt in ("BF16", "F16", "F32"):
            name = "c%02d" % c
            if st == "tensor":
                shp = (1,)
            elif st == "channel":
                shp = (n, 1)
            elif st == "group":
                shp = (n, k // g)
            else:
                shp = (-(-n // blk[0]), -(-k // blk[1]))
            if typ == "float":
                w = rng.integers(0, 256, size=(n, k), dtype=np.int64).astype(np.uint8)
                if n * k >= 256:
                    w.reshape(-1)[:256] = np.arange(256, dtype=np.uint8)   # every e4m3 code
                # NaN codes (0x7f, 0xff): torch gives a NaN whose bf16 payload (0xffff) is not ours (0x7fc0 / 0xffc0);
                # a NaN weight is refused downstream (a non-finite hidden state), so the vectors leave them out
                w[(w & 0x7f) == 0x7f] ^= 1
                wt = torch.from_numpy(w.copy()).view(torch.float8_e4m3fn)
                wd = "F8_E4M3"
            else:
                w = rng.integers(-128, 128, size=(n, k), dtype=np.int64).astype(np.int8)
                wt = torch.from_numpy(w.copy())
                wd = "I8"
            sa = scales(rng, shp, sdt, c)
            st_t = torch.from_numpy(sa.copy()).view(torch.bfloat16) if sdt == "BF16" else torch.from_numpy(sa.copy())
            sd = {"weight": wt, "weight_scale": st_t}
            z = None
            if not sym:
                z = rng.integers(-128, 128, size=shp, dtype=np.int64).astype(np.int8)
                sd["weight_zero_point"] = torch.from_numpy(z.copy())
            args = QuantizationArgs(num_bits=8, type=typ, symmetric=sym, strategy=st, group_size=g,
                                    block_structure=blk)
            scheme = QuantizationScheme(targets=["Linear"], weights=args,
                                        input_activations=QuantizationArgs(num_bits=8, type=typ, dynamic=True,
                                                                           strategy="token"))
            comp = {"int-quantized": IntQuantizationCompressor, "float-quantized": FloatQuantizationCompressor,
                    "naive-quantized": NaiveQuantizationCompressor}[fmt]
            dec = comp.decompress(sd, scheme)["weight"]
            exp = dec.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
            mine = pr.dequant_ct_dense(wd, w.view(np.uint8) if wd == "F8_E4M3" else w, sdt, sa, z,
                                       {"strategy": st, "group_size": g, "block_structure": blk})
            nd = int(np.sum(mine != exp))
            if nd and os.environ.get("CT_DEBUG"):
                i = np.nonzero(mine != exp)
                print(name, [(hex(a), hex(b), int(w[i][j]) & 0xff) for j, (a, b) in enumerate(zip(mine[i], exp[i]))][:8])
            if nd:
                sys.exit("case %s (%s %s %s %s): packed_ref differs from compressed-tensors in %d elements"
                         % (name, fmt, typ, st, sdt, nd))
            t[name + ".weight"] = (wd, w.view(np.uint8) if wd == "F8_E4M3" else w)
            t[name + ".weight_scale"] = (sdt, sa)
            if z is not None:
                t[name + ".weight_zero_point"] = ("I8", z)
            t[name + ".scheme"] = ("I32", np.array([8, STRAT[st], g or 0, blk[0] if blk else 0, blk[1] if blk else 0,
                                                    int(sym), int(typ == "float")], dtype=np.int32))
            t[name + ".expected"] = ("BF16", exp)
            c += 1
    dq.write_safetensors(out, t)
    print("%d cases -> %s" % (c, out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
