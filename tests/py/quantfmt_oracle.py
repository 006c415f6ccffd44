#!/usr/bin/env python3
"""Reference (de)quantization of FP8-block and NVFP4 by the packages that
publish the formats, on seeded random bf16 tensors (plus crafted ties, zero
tiles and outliers):

  FP8 block: transformers.integrations.finegrained_fp8.Fp8Quantize /
             Fp8Dequantize (weight_block_size [128, 128])
  NVFP4:     modelopt.torch.quantization.qtensor.NVFP4QTensor.quantize /
             .dequantize (block 16)

usage: quantfmt_oracle.py OUT.safetensors
Needs torch, transformers and nvidia-modelopt (pip); the output is committed
as tests/py/oracle/quantfmt.safetensors so tests/py/test_quantfmt.py checks
the bytes of `fidelity quantize --format` without the packages.  Tensors:
CASE.input (BF16), fp8 CASE.{weight (U8 = e4m3 bytes), weight_scale_inv,
dequant_sha256 (sha256 of the bf16 dequantized bytes)}, nvfp4 CASE.{weight (U8
packed), weight_scale (U8 = e4m3), weight_scale_2 (F32 []), dequant_sha256}.
"""
import sys

import numpy as np

sys.path.insert(0, __import__("os").path.dirname(__file__))
from dequant_ref import write_safetensors  # noqa: E402


def bf16(x):
    import torch
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(torch.bfloat16)


def sha(a):
    import hashlib
    return np.frombuffer(hashlib.sha256(np.ascontiguousarray(a).tobytes()).digest(), dtype=np.uint8)


def fp8_cases(rng):
    c = {"a": rng.normal(0, 0.02, (256, 128)), "b": rng.normal(0, 1.0, (128, 256))}
    c["b"][:, :128] = 0.0                  # a zero tile: scale 1
    c["b"][5, 200] = 300.0                 # an outlier tile
    t = rng.normal(0, 30.0, (128, 128))    # amax 448: scale exactly 1, e4m3 ties
    t[0, 0] = 448.0
    t[1, :8] = [1.0625, 1.1875, 17.0, 19.0, 0.0048828125 * 1.5, -1.0625, 240.0, 464.0 - 16]
    c["ties"] = t
    c["tiny"] = rng.normal(0, 1e-3, (128, 128)) * np.exp(rng.normal(0, 3, (128, 1)))
    return c


def nvfp4_cases(rng):
    c = {"a": rng.normal(0, 0.02, (64, 128)), "b": rng.normal(0, 1.0, (32, 64))}
    c["b"][3, 16:32] = 0.0                 # a zero group: block scale 1
    d = 2.0 ** -8                          # s2 = 2^-10 (amax 2.625), block scale 4 -> d = 2^-8
    vals = np.array([6, .25, .75, 1.25, 1.75, 2.5, 3.5, 5, -.25, -.75, -1.25, -1.75, -2.5, -3.5, -5, -6]) * d
    t = np.tile(vals, (8, 4))
    t[0, 0] = 2.625
    t[0, 1:16] = 0.5
    c["ties"] = t
    return c


def main(out):
    import torch
    from transformers.integrations.finegrained_fp8 import Fp8Dequantize, Fp8Quantize
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

    class Q:  # the hf_quantizer view Fp8Quantize reads
        class quantization_config:
            weight_block_size = [128, 128]
            scale_fmt = None

    rng = np.random.default_rng(20260101)
    res = {}
    u16 = lambda t: t.contiguous().view(torch.uint16).numpy()
    for name, x in fp8_cases(rng).items():
        xb = bf16(x)
        q = Fp8Quantize(Q).convert({"w.weight": xb})
        w, s = q["w.weight"], q["w.weight_scale_inv"]
        deq = Fp8Dequantize(Q)._dequantize_one(w, s, output_dtype=torch.bfloat16)
        res["fp8.%s.input" % name] = ("BF16", u16(xb))
        res["fp8.%s.weight" % name] = ("U8", w.view(torch.uint8).numpy())
        res["fp8.%s.weight_scale_inv" % name] = ("F32", s.numpy())
        res["fp8.%s.dequant_sha256" % name] = ("U8", sha(u16(deq)))
    for name, x in nvfp4_cases(rng).items():
        xb = bf16(x)
        qt, s, s2 = NVFP4QTensor.quantize(xb, 16)
        deq = qt.dequantize(dtype=torch.bfloat16, scale=s, double_scale=s2, block_sizes={-1: 16})
        res["nvfp4.%s.input" % name] = ("BF16", u16(xb))
        res["nvfp4.%s.weight" % name] = ("U8", qt._quantized_data.numpy())
        res["nvfp4.%s.weight_scale" % name] = ("U8", s.view(torch.uint8).numpy())
        res["nvfp4.%s.weight_scale_2" % name] = ("F32", s2.float().reshape(()).numpy())
        res["nvfp4.%s.dequant_sha256" % name] = ("U8", sha(u16(deq)))
    write_safetensors(out, res)
    import transformers, modelopt
    print("wrote %s (torch %s, transformers %s, nvidia-modelopt %s)" % (out, torch.__version__,
                                                                        transformers.__version__, modelopt.__version__))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
