#!/usr/bin/env python3
"""Writes tests/vectors/gguf/dequant.bin: for every ggml type we decode, a
few blocks (random ones and ones with extreme fp16 scales: max, -max, zero,
min subnormal, max subnormal) with the reference decoder's output
(gguf.quants.dequantize, float32) and its bf16 rounding (gguf's own BF16
quantize: round to nearest even, NaN kept quiet).  CI without the gguf
package checks every type against this file (tests/py/test_gguf.py).

usage: python3 tests/py/gguf_vectors.py [OUT]   (needs numpy and gguf)
"""
import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_ref as g

VECTOR_EDGES = [0x7BFF, 0xFBFF, 0x0000, 0x0001, 0x03FF]


def entries():
    out = []
    for name in g.TYPES:
        blob = g.make_blocks(name, 2, 20261203, edges=VECTOR_EDGES)
        f32, bf16 = g.oracle(name, blob)
        assert bf16 == g.bf16_rne(f32), name
        out.append((name, blob, f32, bf16))
    return out


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "vectors", "gguf", "dequant.bin")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    g.write_vectors(path, entries())
    print("wrote", path, os.path.getsize(path), "bytes")
