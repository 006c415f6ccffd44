"""Helpers for the GGUF tests (plain Python; numpy and the `gguf` package
only where a function says so).

- TYPES: the ggml types we decode: id, block elements, block bytes, and
  where each block keeps its fp16 scales (for the extreme-scale blocks).
- make_blocks(): random blocks of a type, plus blocks whose scales are the
  extremes (max/min normal, subnormal, zero, negative zero), NaN-free.
- bf16_rne(): the bf16 rounding of float32 bits (round to nearest even,
  NaN kept quiet), the definition in docs/QUANT-FORMATS.md.
- oracle(): gguf.quants.dequantize (needs numpy + gguf).
- read_vectors()/write_vectors(): tests/vectors/gguf/dequant.bin.
- gguf_file(): a small GGUF writer with knobs to lie (hostile files).
"""
import random, struct

# name: (ggml id, block elements, block bytes, fp16 scale byte offsets)
TYPES = {
    "F32": (0, 1, 4, []), "F16": (1, 1, 2, []), "BF16": (30, 1, 2, []),
    "Q4_0": (2, 32, 18, [0]), "Q4_1": (3, 32, 20, [0, 2]), "Q5_0": (6, 32, 22, [0]),
    "Q5_1": (7, 32, 24, [0, 2]), "Q8_0": (8, 32, 34, [0]),
    "Q2_K": (10, 256, 84, [80, 82]), "Q3_K": (11, 256, 110, [108]), "Q4_K": (12, 256, 144, [0, 2]),
    "Q5_K": (13, 256, 176, [0, 2]), "Q6_K": (14, 256, 210, [208]),
    "IQ1_S": (19, 256, 50, [0]), "IQ1_M": (29, 256, 56, []), "IQ2_XXS": (16, 256, 66, [0]),
    "IQ2_XS": (17, 256, 74, [0]), "IQ2_S": (22, 256, 82, [0]), "IQ3_XXS": (18, 256, 98, [0]),
    "IQ3_S": (21, 256, 110, [0]), "IQ4_NL": (20, 32, 18, [0]), "IQ4_XS": (23, 256, 136, [0]),
    "TQ1_0": (34, 256, 54, [52]), "TQ2_0": (35, 256, 66, [64]),
    "MXFP4": (39, 32, 17, []), "NVFP4": (40, 64, 36, []),
}
# fp16 bit patterns: max, -max, zero, -zero, min subnormal, -min subnormal,
# max subnormal, min normal, 1.0, 2^-10, -2.0
EDGE_F16 = [0x7BFF, 0xFBFF, 0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0x1400, 0xC000]
EDGE_F32 = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
            0x7F800000, 0xFF800000, 0x3F800000, 0x3F808000, 0x3F818000, 0x3F80FFFF, 0x477FE000]


def finite_f16(rng):
    while True:
        h = rng.getrandbits(16)
        if (h >> 10) & 0x1F != 0x1F:
            return h


def make_blocks(name, nrandom, seed, edges=None):
    """nrandom random blocks then one block per extreme fp16 scale in edges
    (default EDGE_F16); for F32/F16/BF16: the edge values then random
    non-NaN elements."""
    EDGES = EDGE_F16 if edges is None else edges
    tid, blck, tsize, scales = TYPES[name]
    rng = random.Random("%s-%d" % (name, seed))
    if name == "F32":
        vals = EDGE_F32 + [v for v in (rng.getrandbits(32) for _ in range(nrandom * 8))
                           if (v & 0x7FFFFFFF) <= 0x7F800000]
        return struct.pack("<%dI" % len(vals), *vals)
    if name == "F16":
        vals = EDGE_F16 + [0x7C00, 0xFC00] + [finite_f16(rng) for _ in range(nrandom * 8)]
        return struct.pack("<%dH" % len(vals), *vals)
    if name == "BF16":
        vals = [v >> 16 for v in EDGE_F32 if (v & 0xFFFF) == 0] + [0x0001, 0x807F, 0x7F7F]
        vals += [v for v in (rng.getrandbits(16) for _ in range(nrandom * 8)) if (v & 0x7FFF) <= 0x7F80]
        return struct.pack("<%dH" % len(vals), *vals)
    out = bytearray()
    for b in range(nrandom + len(EDGES)):
        blk = bytearray(rng.getrandbits(8) for _ in range(tsize))
        edge = EDGES[b - nrandom] if b >= nrandom else None
        for off in scales:
            h = edge if edge is not None else finite_f16(rng)
            blk[off:off + 2] = struct.pack("<H", h)
        if name == "IQ1_M":  # the fp16 scale is the top nibbles of the four u16 scales at 48..55
            h = edge if edge is not None else finite_f16(rng)
            for i in range(4):
                blk[49 + 2 * i] = (blk[49 + 2 * i] & 0x0F) | (((h >> (4 * i)) & 0xF) << 4)
        if name == "MXFP4" and edge is not None:
            blk[0] = [0, 1, 2, 127, 254, 255][(b - nrandom) % 6]
        if name == "NVFP4" and edge is not None:
            blk[0:4] = bytes([[0x00, 0x7F, 0xFF, 0x01][(b - nrandom + i) % 4] for i in range(4)])
        out += blk
    return bytes(out)


def bf16_rne(f32_bytes):
    """float32 little-endian bytes -> bf16 bytes: round to nearest even, NaN kept quiet."""
    n = len(f32_bytes) // 4
    out = []
    for u in struct.unpack("<%dI" % n, f32_bytes):
        if (u & 0x7FFFFFFF) > 0x7F800000:
            out.append((u >> 16) | 0x40)
        else:
            out.append(((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF)
    return struct.pack("<%dH" % n, *out)


def oracle(name, blob):
    """gguf.quants.dequantize of whole blocks: (float32 bytes, bf16 bytes from gguf's own BF16 quantize)."""
    import numpy as np
    import gguf
    from gguf.quants import dequantize, quantize
    tid, blck, tsize, _ = TYPES[name]
    qt = gguf.GGMLQuantizationType[name]
    a = np.frombuffer(blob, dtype=np.uint8).reshape((-1, tsize))
    f = np.ascontiguousarray(dequantize(a, qt), dtype=np.float32).reshape(-1)
    assert f.dtype == np.float32
    b = quantize(f, gguf.GGMLQuantizationType.BF16)
    return f.tobytes(), np.ascontiguousarray(b).tobytes()


MAGIC = b"FDGGUFV1"


def write_vectors(path, entries):
    with open(path, "wb") as f:
        f.write(MAGIC)
        for name, blob, f32, bf16 in entries:
            f.write(name.encode().ljust(8, b"\0") + struct.pack("<III", len(blob), len(f32), len(bf16)))
            f.write(blob + f32 + bf16)


def read_vectors(path):
    data = open(path, "rb").read()
    assert data[:8] == MAGIC, path
    at, out = 8, []
    while at < len(data):
        name = data[at:at + 8].rstrip(b"\0").decode()
        nb, nf, nh = struct.unpack_from("<III", data, at + 8)
        at += 20
        blob, f32, bf16 = data[at:at + nb], data[at + nb:at + nb + nf], data[at + nb + nf:at + nb + nf + nh]
        at += nb + nf + nh
        out.append((name, blob, f32, bf16))
    return out


# ------------------------------------------------------------- GGUF writer
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_FMT = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "B", U64: "Q", I64: "q", F64: "d"}


def _str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def _val(t, v):
    if t == STRING:
        return _str(v)
    if t == ARRAY:
        at, items = v
        return struct.pack("<IQ", at, len(items)) + b"".join(_val(at, x) for x in items)
    return struct.pack("<" + _FMT[t], v)


def gguf_file(kvs, tensors, version=3, alignment=None, n_tensors=None, n_kv=None, magic=b"GGUF",
              offsets=None, endian="<"):
    """kvs: [(key, type, value)]; tensors: [(name, ne list, ggml type id, data bytes)].
    Offsets are laid out aligned in order unless `offsets` gives them."""
    align = alignment or 32
    if alignment is not None:
        kvs = [("general.alignment", U32, alignment)] + list(kvs)
    head = magic + struct.pack(endian + "IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                               len(kvs) if n_kv is None else n_kv)
    head += b"".join(_str(k) + struct.pack("<I", t) + _val(t, v) for k, t, v in kvs)
    data, offs = b"", []
    for i, (name, ne, tid, blob) in enumerate(tensors):
        pad = (-len(data)) % align
        data += b"\0" * pad
        offs.append(len(data) if offsets is None else offsets[i])
        data += blob
    for i, (name, ne, tid, blob) in enumerate(tensors):
        head += _str(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        head += struct.pack("<IQ", tid, offs[i])
    head += b"\0" * ((-len(head)) % align)
    return head + data
