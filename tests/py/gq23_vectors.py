#!/usr/bin/env python3
"""Test vectors for the GPTQ 2-bit and 3-bit decoders, made by the numpy
reference packed_ref.py (dequant_gptq: the 3-bit unpack transcribes
GPTQModel's PackableQuantLinear.dequantize_weight, its wf shift table and
the two fix-ups of the fields that straddle words, with int32 arithmetic
shifts; v1 zero points as gptqmodel's convert_gptq_v1_to_v2_format_module:
2-bit words + 0x55555555 wrapping, 3-bit per field (z + 1) & 7).  GPTQModel
itself does not install here (it builds CUDA extensions); the C decoder
reads the same bits as a little-endian bit stream, a different formulation.

Random int32 words (every bit pattern: sign bits set, v1 2-bit carries),
random g_idx maps, scales with zero, negative, subnormal and overflowing
values.

usage: gq23_vectors.py OUT.safetensors
The committed tests/vectors/packed/gq23.safetensors:
  python3 tests/py/gq23_vectors.py tests/vectors/packed/gq23.safetensors   (numpy only; deterministic)
Per case cNN: qweight, qzeros, scales, g_idx, scheme I32 [5] = (0 gptq, bits, group, v1, N), expected BF16 [N, K].
"""
import os, sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dequant_ref as dq  # noqa: E402
import packed_ref as pr  # noqa: E402
from gq_vectors import scales  # noqa: E402


def main(out):
    rng = np.random.default_rng(23)
    t, c = {}, 0
    for bits, group, v1, n, k in [(3, 32, 1, 32, 64), (3, 16, 0, 64, 96), (3, -1, 1, 32, 32), (3, 24, 1, 96, 64),
                                  (2, 16, 1, 32, 48), (2, 8, 0, 16, 32), (2, -1, 1, 48, 64), (2, 32, 1, 16, 96)]:
        for sdt in ("F16", "BF16"):
            grp = k if group == -1 else group
            G = -(-k // grp)
            name = "c%02d" % c
            sd, sa = scales(rng, (G, n), sdt, c)
            rnd = lambda shape: rng.integers(0, 1 << 32, size=shape, dtype=np.uint64).astype(np.uint32).view(np.int32)
            qw, qz = rnd((k * bits // 32, n)), rnd((G, n * bits // 32))
            gi = rng.integers(0, G, size=k).astype(np.int32)
            t[name + ".g_idx"] = ("I32", gi)
            t[name + ".qweight"], t[name + ".qzeros"], t[name + ".scales"] = ("I32", qw), ("I32", qz), (sd, sa)
            t[name + ".scheme"] = ("I32", np.array([0, bits, grp, v1, n], dtype=np.int32))
            t[name + ".expected"] = ("BF16", pr.dequant_gptq(qw, qz, sd, sa, gi, bits, v1))
            c += 1
    dq.write_safetensors(out, t)
    print("%d cases -> %s" % (c, out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
