#!/usr/bin/env python3
"""Test vectors for the MLX affine decoder, made by mlx itself: seeded random
uint32 weight words, scales and biases are decoded by mlx.core.dequantize
(mlx 0.32.4, the Linux CPU backend); the result cast to bf16 by mlx is the
expected output, and the numpy reference packed_ref.dequant_mlx must agree
bit for bit (else the script fails).  mx.quantize of a random bf16 matrix is
also decoded, as a producer-made case.

usage: mlx_oracle.py OUT.safetensors

Needs mlx (test oracle only; CI reads the committed file).  The committed
tests/vectors/packed/mlx.safetensors was made on this project's build host
(AMD EPYC Zen 4, x86-64: mlx's CPU backend, not Metal) by:

  PYTHONPATH=/tmp/mlx-pkgs /tmp/venv-engine/bin/python tests/py/mlx_oracle.py \\
      tests/vectors/packed/mlx.safetensors

with `pip install --no-deps --target /tmp/mlx-pkgs mlx==0.32.4 mlx-cpu==0.32.4`.

Per case cNN: weight U32 [N, K*b/32], scales, biases (BF16/F16/F32 [N, K/g]),
scheme I32 [2] = (bits, group_size), expected BF16 [N, K].  bits 2, 3, 4, 5,
6, 8 (3, 5, 6 straddle words), groups 32 / 64 / 128; scales and biases with
zero, negative, subnormal and overflowing values.
"""
import os, sys

import mlx.core as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dequant_ref as dq  # noqa: E402
import packed_ref as pr  # noqa: E402

MX = {"BF16": mx.bfloat16, "F16": mx.float16, "F32": mx.float32}


def to_dtype(x, sdt):
    if sdt == "BF16":
        return dq.f32_to_bf16_bits(x)
    return x.astype(np.float16) if sdt == "F16" else x.astype(np.float32)


def mx_of(arr, sdt):
    if sdt == "BF16":
        return mx.array((arr.astype(np.uint32) << 16).view(np.float32)).astype(mx.bfloat16)
    return mx.array(arr)


def main(out):
    rng = np.random.default_rng(2026)
    t, c = {}, 0
    for bits, g, n, k in [(2, 32, 5, 64), (3, 32, 3, 96), (3, 64, 4, 128), (4, 64, 7, 128), (4, 128, 2, 256),
                          (5, 32, 3, 64), (6, 32, 5, 96), (6, 128, 2, 128), (8, 64, 3, 128), (8, 32, 1, 32)]:
        for sdt in ("BF16", "F16", "F32"):
            name = "c%02d" % c
            w = rng.integers(0, 1 << 32, size=(n, k * bits // 32), dtype=np.uint64).astype(np.uint32)
            s = (rng.standard_normal((n, k // g)) * np.exp2(rng.uniform(-12, 4, (n, k // g)))).astype(np.float32)
            b = (rng.standard_normal((n, k // g)) * np.exp2(rng.uniform(-12, 4, (n, k // g)))).astype(np.float32)
            ext = [0.0, 2.0 ** -24, 60000.0, -3000.0] if sdt == "F16" else [0.0, 2.0 ** -130, 3e38, -2.0 ** -126]
            for i, v in enumerate(ext[: max(0, s.size - 1)]):
                s.reshape(-1)[(c + 3 * i) % s.size] = v
                b.reshape(-1)[(c + 5 * i + 1) % b.size] = -v
            sa, ba = to_dtype(s, sdt), to_dtype(b, sdt)
            got = mx.dequantize(mx.array(w), mx_of(sa, sdt), mx_of(ba, sdt), group_size=g, bits=bits)
            exp = np.array(got.astype(mx.bfloat16).view(mx.uint16))
            mine = pr.dequant_mlx(w, sdt, sa, ba, bits, g)
            nd = int(np.sum(mine != exp))
            if nd:
                sys.exit("case %s (bits %d group %d %s): packed_ref differs from mlx in %d elements" % (name, bits, g, sdt, nd))
            t[name + ".weight"] = ("U32", w)
            t[name + ".scales"], t[name + ".biases"] = (sdt, sa), (sdt, ba)
            t[name + ".scheme"] = ("I32", np.array([bits, g], dtype=np.int32))
            t[name + ".expected"] = ("BF16", exp)
            c += 1
    # producer-made: mx.quantize of a bf16 matrix, every bits, group 64
    x = mx.array(rng.standard_normal((6, 192)).astype(np.float32)).astype(mx.bfloat16)
    for bits in (2, 3, 4, 5, 6, 8):
        name = "c%02d" % c
        wq, sq, bq = mx.quantize(x, group_size=64, bits=bits)
        exp = np.array(mx.dequantize(wq, sq, bq, group_size=64, bits=bits).astype(mx.bfloat16).view(mx.uint16))
        w = np.array(wq)
        sa, ba = np.array(sq.view(mx.uint16)), np.array(bq.view(mx.uint16))
        if int(np.sum(pr.dequant_mlx(w, "BF16", sa, ba, bits, 64) != exp)):
            sys.exit("case %s (mx.quantize bits %d): packed_ref differs from mlx" % (name, bits))
        t[name + ".weight"] = ("U32", w)
        t[name + ".scales"], t[name + ".biases"] = ("BF16", sa), ("BF16", ba)
        t[name + ".scheme"] = ("I32", np.array([bits, 64], dtype=np.int32))
        t[name + ".expected"] = ("BF16", exp)
        c += 1
    dq.write_safetensors(out, t)
    print("%d cases -> %s" % (c, out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
