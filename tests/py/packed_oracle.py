#!/usr/bin/env python3
"""Test vectors for the packed integer formats, made by the reference library
itself: compressed-tensors (0.20.1) packs random int8 codes with its own
pack_to_int32 and decodes them with PackedQuantizationCompressor.decompress;
the result, cast to bf16 by torch, is the expected output.

usage: packed_oracle.py OUT.safetensors

Needs torch and compressed-tensors (test oracle only; CI reads the committed
file).  The committed tests/vectors/packed/ct_pack.safetensors was made on
this project's build host (AMD EPYC Zen 4) by:

  PYTHONPATH=/tmp/ct-pkgs /tmp/venv-engine/bin/python tests/py/packed_oracle.py \\
      tests/vectors/packed/ct_pack.safetensors

with torch 2.15 (CPU) and compressed-tensors 0.20.1 installed with
`pip install --no-deps --target /tmp/ct-pkgs compressed-tensors==0.20.1 loguru psutil`.

Per case cNN: weight_packed I32, weight_scale (BF16/F16/F32), weight_zero_point
I32 (asymmetric), weight_shape I64 [2], scheme I32 [6] = (bits, strategy 0
channel / 1 group / 2 block, group_size, block rows, block cols, symmetric),
expected BF16 [N, K].  Odd shapes: partial int32 words in rows and in the
zero points, partial blocks, N = 1; scales include fp16 overflow (inf),
subnormal, negative and zero values.  A partial group is checked to be
refused by the decompressor (and is not a vector).
"""
import os, sys

import numpy as np
import torch
from compressed_tensors.compressors.pack_quantized.base import PackedQuantizationCompressor
from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32
from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dequant_ref as dq  # noqa: E402
import packed_ref as pr  # noqa: E402

torch.set_num_threads(1)
TDT = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}
STRAT = {"channel": 0, "group": 1, "block": 2}


def scheme(bits, st, sym, g=None, blk=None):
    a = QuantizationArgs(num_bits=bits, type="int", symmetric=sym, strategy=st, group_size=g,
                         block_structure=list(blk) if blk else None)
    return QuantizationScheme(targets=["Linear"], weights=a)


def scales(rng, shape, sdt, case):
    s = (np.exp2(rng.uniform(-12, 2, size=shape)) * rng.choice([1, 1, 1, -1], size=shape)).astype(np.float32)
    flat = s.reshape(-1)
    extremes = {"BF16": [0.0, 2.0 ** -126, 3e38, -2.0 ** -130], "F16": [0.0, 2.0 ** -24, 65504.0, 300.0, -6e-5],
                "F32": [0.0, 1e-45, 3e38, -1.17e-38]}[sdt]
    for i, v in enumerate(extremes[: max(0, flat.size - 1)]):
        flat[(case + 3 * i) % flat.size] = v
    if sdt == "BF16":
        bits = dq.f32_to_bf16_bits(s)
        return torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16), ("BF16", bits)
    if sdt == "F16":
        h = s.astype(np.float16)
        return torch.from_numpy(h.copy()), ("F16", h)
    return torch.from_numpy(s.copy()), ("F32", s)


def main(out):
    rng = np.random.default_rng(20261204)
    tensors, case = {}, 0
    layouts = [("channel", True, None, None), ("channel", False, None, None), ("group", True, 8, None),
               ("group", False, 24, None), ("block", True, None, (8, 16)), ("block", True, None, (5, 7))]
    shapes = {"channel": [(13, 37), (1, 9), (33, 50)], "group": [(5, 72), (33, 48), (1, 24)],
              "block": [(13, 37), (21, 50), (1, 3)]}
    for bits in (4, 8):
        for li, (st, sym, g, blk) in enumerate(layouts):
            for si, sdt in enumerate(("BF16", "F16", "F32")):
                n, k = shapes[st][(li + si) % 3]
                if st == "group":
                    k = (k // g) * g or g
                if not sym and bits == 4 and n <= 8:
                    n = 11  # see below: the reference's int4 zero-point unpacking fails for N <= 8
                lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
                q = rng.integers(lo, hi + 1, size=(n, k)).astype(np.int8)
                if st == "channel":
                    sshape = (n, 1)
                elif st == "group":
                    sshape = (n, k // g)
                else:
                    sshape = (-(-n // blk[0]), -(-k // blk[1]))
                ts, (sd, sarr) = scales(rng, sshape, sdt, case)
                sdict = {"weight_packed": pack_to_int32(torch.from_numpy(q), bits), "weight_scale": ts,
                         "weight_shape": torch.tensor([n, k])}
                mine = pr.pack_int32(q, bits)
                assert np.array_equal(mine, sdict["weight_packed"].numpy()), "packed_ref.pack_int32 != pack_to_int32"
                name = "c%02d" % case
                if not sym:
                    z = rng.integers(lo, hi + 1, size=sshape).astype(np.int8)
                    zp = pack_to_int32(torch.from_numpy(z), bits, packed_dim=0)
                    assert np.array_equal(pr.pack_int32(z, bits, packed_dim=0), zp.numpy())
                    sdict["weight_zero_point"] = zp
                    tensors[name + ".weight_zero_point"] = ("I32", zp.numpy())
                dec = PackedQuantizationCompressor.decompress(sdict, scheme(bits, st, sym, g, blk))["weight"]
                assert dec.dtype == TDT[sdt], dec.dtype
                exp = dec.to(torch.bfloat16).contiguous().view(torch.int16).numpy().view(np.uint16)
                tensors[name + ".weight_packed"] = ("I32", sdict["weight_packed"].numpy())
                tensors[name + ".weight_scale"] = (sd, sarr)
                tensors[name + ".weight_shape"] = ("I64", np.array([n, k], dtype=np.int64))
                tensors[name + ".scheme"] = ("I32", np.array([bits, STRAT[st], g or 0, blk[0] if blk else 0,
                                                               blk[1] if blk else 0, int(sym)], dtype=np.int32))
                tensors[name + ".expected"] = ("BF16", exp)
                case += 1
    # int4 zero points of N <= 8 outputs (one packed word per column): the
    # reference's unpack_from_int32 views a transposed tensor whose last stride
    # is not 1 and raises; the engine decodes them by the packing definition
    # (the 8-bit path and pack_to_int32 agree with it).  Recorded, not a vector.
    z = torch.from_numpy(np.zeros((4, 3), dtype=np.int8))
    sd = {"weight_packed": pack_to_int32(torch.zeros(4, 24, dtype=torch.int8), 4), "weight_scale": torch.ones(4, 3),
          "weight_zero_point": pack_to_int32(z, 4, packed_dim=0), "weight_shape": torch.tensor([4, 24])}
    try:
        PackedQuantizationCompressor.decompress(sd, scheme(4, "group", False, 8))
        print("note: this compressed-tensors decodes int4 zero points of N <= 8 (the docs say it did not)")
    except RuntimeError:
        pass
    # a partial group: the reference decompressor refuses it (so does the engine)
    q = np.zeros((2, 20), dtype=np.int8)
    sd = {"weight_packed": pack_to_int32(torch.from_numpy(q), 4), "weight_scale": torch.ones(2, 3),
          "weight_shape": torch.tensor([2, 20])}
    try:
        PackedQuantizationCompressor.decompress(sd, scheme(4, "group", True, 8))
        sys.exit("the decompressor accepted a partial group: the engine's refusal no longer follows it")
    except ValueError:
        pass
    dq.write_safetensors(out, tensors)
    print("%d cases -> %s" % (case, out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
