#!/usr/bin/env python3
"""Test vectors for the GPTQ and AWQ decoders, made by the numpy reference
packed_ref.py (dequant_gptq / dequant_awq, written from GPTQModel's
PackableQuantLinear.dequantize_weight + convert_gptq_v1_to_v2_format and
AutoAWQ's dequantize_gemm; neither package runs here: GPTQModel and AutoAWQ
build CUDA extensions).  Random int32 words (every bit pattern, so v1 zero
points of 15 / 255 carry into the next field, as the reference's int32
addition does), random g_idx maps, odd group counts, scales with zero,
negative, subnormal and fp16-overflowing values.

usage: gq_vectors.py OUT.safetensors
The committed tests/vectors/packed/gq.safetensors: python3 tests/py/gq_vectors.py tests/vectors/packed/gq.safetensors
(numpy only; deterministic).  Per case cNN: qweight, qzeros, scales, g_idx
(GPTQ), scheme I32 [5] = (0 gptq / 1 awq, bits, group, v1, N), expected BF16 [N, K].
"""
import os, sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dequant_ref as dq  # noqa: E402
import packed_ref as pr  # noqa: E402


def scales(rng, shape, sdt, case):
    s = (np.exp2(rng.uniform(-12, 2, size=shape)) * rng.choice([1, 1, 1, -1], size=shape)).astype(np.float32)
    flat = s.reshape(-1)
    ext = [0.0, 2.0 ** -24, 65504.0, 3000.0] if sdt == "F16" else [0.0, 2.0 ** -126, 3e38, -2.0 ** -130]
    for i, v in enumerate(ext[: max(0, flat.size - 1)]):
        flat[(case + 5 * i) % flat.size] = v
    return ("F16", s.astype(np.float16)) if sdt == "F16" else ("BF16", dq.f32_to_bf16_bits(s))


def main(out):
    rng = np.random.default_rng(19)
    t, c = {}, 0
    for kind, bits, group, v1, n, k in [("gptq", 4, 16, 1, 24, 48), ("gptq", 4, 16, 0, 8, 40), ("gptq", 8, 8, 1, 12, 24),
                                        ("gptq", 8, -1, 0, 4, 36), ("gptq", 4, 32, 1, 40, 32), ("gptq", 8, 16, 0, 20, 56),
                                        ("awq", 4, 16, 0, 24, 48), ("awq", 4, 8, 0, 8, 40), ("awq", 4, 32, 0, 40, 32)]:
        for sdt in ("F16", "BF16"):
            grp = k if group == -1 else group
            G = -(-k // grp)
            name = "c%02d" % c
            sd, sa = scales(rng, (G, n), sdt, c)
            rnd = lambda shape: rng.integers(0, 1 << 32, size=shape, dtype=np.uint64).astype(np.uint32).view(np.int32)
            if kind == "gptq":
                pf = 32 // bits
                qw, qz = rnd((k // pf, n)), rnd((G, n // pf))
                gi = rng.integers(0, G, size=k).astype(np.int32)
                exp = pr.dequant_gptq(qw, qz, sd, sa, gi, bits, v1)
                t[name + ".g_idx"] = ("I32", gi)
            else:
                qw, qz = rnd((k, n // 8)), rnd((G, n // 8))
                exp = pr.dequant_awq(qw, qz, sd, sa, grp)
            t[name + ".qweight"], t[name + ".qzeros"], t[name + ".scales"] = ("I32", qw), ("I32", qz), (sd, sa)
            t[name + ".scheme"] = ("I32", np.array([kind == "awq", bits, grp, v1, n], dtype=np.int32))
            t[name + ".expected"] = ("BF16", exp)
            c += 1
    dq.write_safetensors(out, t)
    print("%d cases -> %s" % (c, out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
