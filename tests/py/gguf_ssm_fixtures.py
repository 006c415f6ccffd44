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
import json, os, struct

import numpy as np

VARIANTS = [("qwen35-tiny", "exact"), ("qwen35-tiny", "f32norm"), ("qwen35-moe-tiny", "exact")]


def read_st(path):
    data = open(path, "rb").read()
    hl = struct.unpack("<Q", data[:8])[0]
    hdr = json.loads(data[8:8 + hl])
    meta = hdr.pop("__metadata__", None)
    out = {}
    for k, v in hdr.items():
        a, b = v["data_offsets"]
        out[k] = (v["dtype"], v["shape"], data[8 + hl + a:8 + hl + b])
    return meta, out


def write_st(path, meta, tensors):
    hdr, blobs, off = {}, [], 0
    if meta is not None:
        hdr["__metadata__"] = meta
    for k in sorted(tensors):
        dt, shape, raw = tensors[k]
        hdr[k] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.replace(path + ".tmp", path)


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
