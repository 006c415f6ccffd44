#!/usr/bin/env python3
"""Test vectors for compressed-tensors' nvfp4-pack-quantized and
mxfp4-pack-quantized formats, made by the reference library itself: seeded
random packed bytes, scales (and NVFP4 global scales) are decoded by
compressed-tensors' own NVFP4PackedCompressor / MXFP4PackedCompressor
.decompress; the result, cast to bf16 by torch, is the expected output, and
packed_ref.dequant_ct_fp4 must agree bit for bit (else the script fails).

usage: ct_fp4_oracle.py OUT.safetensors

Needs torch and compressed-tensors (test oracle only).  The committed
tests/vectors/packed/ct_fp4.safetensors was made on this project's build
host (AMD EPYC Zen 4) by:

  PYTHONPATH=/tmp/ct-pkgs /tmp/venv-engine/bin/python tests/py/ct_fp4_oracle.py \\
      tests/vectors/packed/ct_fp4.safetensors

(torch 2.15 CPU, compressed-tensors 0.20.1).  Per case cNN: weight_packed U8
[N, K/2], weight_scale (F8_E4M3 [N, K/16] nvfp4 / U8 [N, K/32] mxfp4),
weight_global_scale F32 [1] (nvfp4), kind I32 [1] (0 nvfp4, 1 mxfp4),
expected BF16 [N, K].  Every e4m3 scale code but the NaNs, E8M0 exponents
0..254 (255 decodes to infinity: refused by the engine, left out), global
scales with awkward mantissas.
"""
import os, sys

import numpy as np
import torch
from compressed_tensors.compressors.mxfp4.base import MXFP4PackedCompressor
from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dequant_ref as dq  # noqa: E402
import packed_ref as pr  # noqa: E402

torch.set_num_threads(1)


def main(out):
    rng = np.random.default_rng(4444)
    t, c = {}, 0
    for kind, n, k in [("nvfp4", 13, 48), ("nvfp4", 32, 64), ("nvfp4", 1, 16), ("mxfp4", 13, 64), ("mxfp4", 8, 96),
                       ("mxfp4", 1, 32)]:
        for rep in range(2):
            name = "c%02d" % c
            packed = rng.integers(0, 256, size=(n, k // 2), dtype=np.int64).astype(np.uint8)
            if kind == "nvfp4":
                sc = rng.integers(0, 256, size=(n, k // 16), dtype=np.int64).astype(np.uint8)
                sc.reshape(-1)[:min(sc.size, 128)] = (np.arange(min(sc.size, 128)) * 2).astype(np.uint8)
                sc[(sc & 0x7f) == 0x7f] ^= 1
                gs = np.array([[448.0 * 6 / 3.7, 1.0 / 3.0][rep] * np.exp2(rng.uniform(-4, 4))], dtype=np.float32)
                args = QuantizationArgs(num_bits=4, type="float", strategy="tensor_group", group_size=16,
                                        symmetric=True, dynamic=False)
                sd = {"weight_packed": torch.from_numpy(packed.copy()),
                      "weight_scale": torch.from_numpy(sc.copy()).view(torch.float8_e4m3fn),
                      "weight_global_scale": torch.from_numpy(gs.copy())}
                comp = NVFP4PackedCompressor
            else:
                sc = rng.integers(100, 150, size=(n, k // 32), dtype=np.int64).astype(np.uint8)
                sc.reshape(-1)[:min(sc.size, 3)] = [0, 254, 1][:min(sc.size, 3)]
                gs = None
                args = QuantizationArgs(num_bits=4, type="float", strategy="group", group_size=32, symmetric=True,
                                        dynamic=False)
                sd = {"weight_packed": torch.from_numpy(packed.copy()), "weight_scale": torch.from_numpy(sc.copy())}
                comp = MXFP4PackedCompressor
            dec = comp.decompress(sd, QuantizationScheme(targets=["Linear"], weights=args))["weight"]
            exp = dec.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
            mine = pr.dequant_ct_fp4(kind, packed, sc, gs)
            nd = int(np.sum(mine != exp))
            if nd:
                i = np.nonzero(mine != exp)
                sys.exit("case %s (%s): packed_ref differs from compressed-tensors in %d elements, e.g. %s" % (
                    name, kind, nd, [(hex(a), hex(b)) for a, b in zip(mine[i][:4], exp[i][:4])]))
            t[name + ".weight_packed"] = ("U8", packed)
            t[name + ".weight_scale"] = ("F8_E4M3" if kind == "nvfp4" else "U8", sc)
            if gs is not None:
                t[name + ".weight_global_scale"] = ("F32", gs)
            t[name + ".kind"] = ("I32", np.array([kind == "mxfp4"], dtype=np.int32))
            t[name + ".expected"] = ("BF16", exp)
            c += 1
    dq.write_safetensors(out, t)
    print("%d cases -> %s" % (c, out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
