"""The checkpoints the GGUFs of tests/vectors/gguf-ssm/ were converted from:
`fidelity fixture --preset P --seed 1`, then one deterministic edit (numpy's
PCG64, seed 7; no other RNG) of the zero-centred RMSNorm weights (every
*norm.weight but linear_attn.norm.weight: the ones llama.cpp's converter
stores as 1 + w), which the presets leave at 0:

  exact    w ~ normal(0, 0.1) rounded to bf16, stored BF16: the converter
           upcasts to float32 before its rewrites, so its 1 + w and
           -exp(A_log) are transformers' own float32 values and the GGUF
           read as stored must capture to the same digest;
  f32norm  the same w unrounded, stored F32: transformers casts them to bf16
           (1 + bf16(w)), the converter stores 1 + w from the float32 value:
           the GGUF defines a slightly different model (a small KL).

Used by tests/vectors/gguf-ssm/make.py and tests/py/test_gguf_ssm.py."""
import json, os, sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_arch_fixtures import read_st, write_st  # noqa: E402,F401  (re-exported: the ssm/qwen4/glm5 tests import them here)

VARIANTS = [("qwen35-tiny", "exact"), ("qwen35-tiny", "f32norm"), ("qwen35-moe-tiny", "exact")]


def bf16_rne(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def zero_centred(name):
    return name.endswith("norm.weight") and not name.endswith("linear_attn.norm.weight")


def prepare(variant, d):
    """Edits the fixture directory d (made with --seed 1) in place."""
    st = os.path.join(d, "model.safetensors")
    meta, t = read_st(st)
    rng = np.random.default_rng(7)
    for k in sorted(t):
        if not zero_centred(k):
            continue
        dt, shape, _ = t[k]
        w = rng.normal(0.0, 0.1, size=shape).astype(np.float32)
        t[k] = ("BF16", shape, bf16_rne(w).tobytes()) if variant == "exact" else ("F32", shape, w.tobytes())
    write_st(st, meta, t)
