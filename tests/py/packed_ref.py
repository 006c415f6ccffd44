#!/usr/bin/env python3
"""Offline reference of the packed integer checkpoint formats, numpy only,
written from the reference library's code (not from the C code, never
calling the binary):

  compressed-tensors `pack-quantized` (compressed_tensors 0.20.1:
  compressors/pack_quantized/base.py PackedQuantizationCompressor.decompress,
  compressors/pack_quantized/helpers.py pack_to_int32 / unpack_from_int32,
  quantization/lifecycle/forward_helpers.py _dequantize / _process_group /
  _process_block, utils/match.py match_targets / is_match):
      weight_packed I32 [N, ceil(K*b/32)]: element j of a row is bits
          [j*b, j*b+b) of the row's little-endian word run, stored as q + 2^(b-1)
      weight_zero_point I32 [ceil(N*b/32), G]: the same packing along the
          output dim (packed_dim=0), asymmetric channel/group only
      weight_scale [N,1] channel, [N,K/g] group (K % g == 0, else the
          decompressor raises), [ceil(N/bh), ceil(K/bw)] block
      w = (q.to(sdt) - z.to(sdt)) * s  in the scale's dtype sdt, then bf16
          (round to nearest even).  |q - z| <= 255 is exact in bf16 and fp16,
          the product of two such values is exact in fp32, so: bf16 scale ->
          bf16(fp32 product); fp16 -> bf16(fp16(fp32 product)); fp32 ->
          bf16(fp32 product).
  Module selection: a group's targets, tried as exact module names, then
  "re:" regexes (re.match), each kind sorted, then the class names "Linear" /
  "Module" (every nn.Linear); `ignore` (the same matching) wins; a target
  named by two groups belongs to the later one.

  GPTQ (GPTQModel gptqmodel/nn_modules/qlinear/__init__.py
  PackableQuantLinear.dequantize_weight, the v2 convention; a v1 checkpoint
  is converted as gptqmodel/utils/model.py convert_gptq_v1_to_v2_format does:
  each qzeros int32 word += 0x11111111 (4-bit) / 0x01010101 (8-bit), wrapping):
      qweight I32 [K/pf, N]: input k of output n at bits (k%pf)*b of word (k/pf, n)
      qzeros  I32 [G, N/pf]: output n at bits (n%pf)*b of word (g, n/pf)
      scales [G, N]; g_idx I32 [K]
      weights = scales[g_idx] * (weight - zeros[g_idx])  (in the scale dtype) -> .T -> bf16
  AWQ GEMM (AutoAWQ awq/utils/packing_utils.py dequantize_gemm: unpack_awq,
  reverse_awq_order with AWQ_REVERSE_ORDER [0, 4, 1, 5, 2, 6, 3, 7]):
      qweight I32 [K, N/8], qzeros I32 [G, N/8]: output 8w+j at nibble
      REVERSE[j] of word w; scales [G, N]; (iweight - izeros) * scales -> .T -> bf16

  compressed-tensors int-quantized / float-quantized / naive-quantized
  (NaiveQuantizationCompressor.decompress -> forward.dequantize ->
  _dequantize): X.weight itself, I8 (int) or F8_E4M3 (float) [N, K];
  weight_scale [1] tensor, [N,1] channel, [N,K/g] group, block as above;
  weight_zero_point I8 shaped as the scale (asymmetric int);
  w = (x_q.to(sdt) - z.to(sdt)) * s in sdt, then bf16 (dequant_ct_dense).

  GPTQ 2 / 3 bit: 2-bit as 4/8 (16 fields a word; v1 words + 0x55555555);
  3-bit packs 32 values into 3 words, unpacked here as GPTQModel's
  dequantize_weight does (shift table wf, the two straddling fields fixed
  up), v1 zero points corrected per field, (z + 1) & 7
  (gptqmodel/utils _correct_gptq_v1_qzeros).

  MLX affine (mlx 0.32 mx.dequantize, CPU; the format mlx-lm writes):
      X.weight U32 [N, K*b/32]: element j of a row at bits [j*b, j*b+b) of the
          row's little-endian word run (b = 3, 5, 6 straddle words)
      X.scales, X.biases [N, K/g] in the model dtype T (BF16 / F16 / F32)
      w = T(T(scale * q) + bias)  (each operation rounded to T: the fp32
          product is exact for b <= 8, the fp32 sum is rounded to T), then bf16

usage: packed_ref.py SRC_DIR DST_DIR   (a pack-quantized / GPTQ / AWQ checkpoint -> bf16)
"""
import json, os, re, shutil, struct, sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dequant_ref as dq  # noqa: E402  (safetensors I/O, bf16 rounding)

dq.ST_DTYPES.setdefault("I32", (np.int32, 4))
dq.ST_DTYPES.setdefault("I8", (np.int8, 1))
dq.ST_DTYPES.setdefault("U32", (np.uint32, 4))

LINEARS = ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "wq_b", "wk", "weights_proj",
           "gate_proj", "up_proj", "down_proj", "w1", "w2", "w3")  # as engine/qconfig.c fd_q_is_linear_weight


def is_linear(name):
    return name == "lm_head.weight" or (name.endswith(".weight") and name[:-7].rsplit(".", 1)[-1] in LINEARS)


# ------------------------------------------------------------ packing
def pack_int32(q, bits, packed_dim=1):
    """pack_to_int32: int8 values q (signed, in [-2^(b-1), 2^(b-1))) -> int32 words."""
    v = (q.astype(np.int64) + (1 << (bits - 1))).astype(np.uint64)
    if packed_dim == 0:
        v = v.T
    rows, cols = v.shape
    words = (cols * bits + 31) // 32
    out = np.zeros((rows, words), dtype=np.uint64)
    for j in range(cols):
        bit = j * bits
        out[:, bit // 32] |= v[:, j] << np.uint64(bit % 32)
        if bit % 32 + bits > 32:
            out[:, bit // 32 + 1] |= v[:, j] >> np.uint64(32 - bit % 32)
    out = (out & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    return np.ascontiguousarray(out.T if packed_dim == 0 else out)


def unpack_int32(words, bits, n, packed_dim=1):
    """unpack_from_int32 -> signed ints (offset removed)."""
    w = words.view(np.uint32).astype(np.uint64)
    if packed_dim == 0:
        w = w.T
    w = np.concatenate([w, np.zeros((w.shape[0], 1), dtype=np.uint64)], axis=1)
    out = np.empty((w.shape[0], n), dtype=np.int64)
    for j in range(n):
        bit = j * bits
        both = w[:, bit // 32] | (w[:, bit // 32 + 1] << np.uint64(32))
        out[:, j] = ((both >> np.uint64(bit % 32)) & np.uint64((1 << bits) - 1)).astype(np.int64)
    out -= 1 << (bits - 1)
    return out.T if packed_dim == 0 else out


def scale_f32(dtype, arr):
    if dtype == "BF16":
        return (arr.astype(np.uint32) << 16).view(np.float32)
    return arr.astype(np.float32)


# ------------------------------------------------------------ decoding
def dequant_ct(packed, sdtype, scale, zp, shape, w):
    """bf16 bits [N, K] of one pack-quantized weight; w: the weights args dict."""
    n, k = (int(x) for x in shape)
    b = int(w["num_bits"])
    q = unpack_int32(packed, b, k)
    st = w.get("strategy") or ("group" if w.get("group_size") else "tensor")
    if st == "group":
        g = int(w["group_size"])
        if k % g:
            raise ValueError("tensor column shape must be divisble by the given group_size")
        ri, ci = np.arange(n)[:, None], (np.arange(k) // g)[None, :]
    elif st == "channel":
        ri, ci = np.arange(n)[:, None], np.zeros((1, k), dtype=np.int64)
    elif st == "block":
        bh, bw = w["block_structure"]
        ri, ci = (np.arange(n) // bh)[:, None], (np.arange(k) // bw)[None, :]
    else:
        raise ValueError("strategy %s" % st)
    s = scale_f32(sdtype, scale)[ri, ci]
    d = q.astype(np.float32)
    if zp is not None:
        z = unpack_int32(zp, b, n, packed_dim=0)  # [N, G]
        d = d - z[ri, ci].astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # fp16 overflow to inf is the reference's result too
        v = (d * s).astype(np.float32)
        if sdtype == "F16":
            v = v.astype(np.float16).astype(np.float32)
    return dq.f32_to_bf16_bits(v)


def _stream_fields(words, bits, n):
    """[R, W] int32/uint32 words -> [R, n] fields, field j at bits [j*b, j*b+b) of the row's word run."""
    w = words.view(np.uint32).astype(np.uint64)
    w = np.concatenate([w, np.zeros((w.shape[0], 1), dtype=np.uint64)], axis=1)
    out = np.empty((w.shape[0], n), dtype=np.int64)
    for j in range(n):
        bit = j * bits
        both = w[:, bit // 32] | (w[:, bit // 32 + 1] << np.uint64(32))
        out[:, j] = ((both >> np.uint64(bit % 32)) & np.uint64((1 << bits) - 1)).astype(np.int64)
    return out


def _round_to(v, sdtype):
    with np.errstate(over="ignore", invalid="ignore"):
        if sdtype == "BF16":
            return scale_f32("BF16", dq.f32_to_bf16_bits(v.astype(np.float32)))
        if sdtype == "F16":
            return v.astype(np.float32).astype(np.float16).astype(np.float32)
        return v.astype(np.float32)


def dequant_mlx(weight, sdtype, scales, biases, bits, group):
    """bf16 bits [N, K] of an MLX affine weight (U32 [N, K*b/32])."""
    n = weight.shape[0]
    k = weight.shape[1] * 32 // bits
    q = _stream_fields(weight, bits, k).astype(np.float32)
    s = np.repeat(scale_f32(sdtype, scales), group, axis=1)
    b = np.repeat(scale_f32(sdtype, biases), group, axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        v = _round_to(_round_to(s * q, sdtype) + b, sdtype)
    return dq.f32_to_bf16_bits(v)


E2M1_SIGNED = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)


def dequant_ct_fp4(kind, packed, scale, global_scale=None):
    """bf16 bits [N, K] of a compressed-tensors nvfp4-pack-quantized / mxfp4-pack-quantized weight
    (NVFP4PackedCompressor / MXFP4PackedCompressor.decompress): packed U8 [N, K/2], low nibble = even element, code
    8 = -0.0 (kE2M1ToFloat times a sign); nvfp4: scale F8_E4M3 [N, K/16] -> bf16, divided by the F32 global scale
    in fp32 (bf16 / fp32 tensor promotes), value * that in fp32, then bf16; mxfp4: scale U8 [N, K/32] = 2^(e-127) in
    bf16 (255: inf), value * scale in bf16."""
    n, half = packed.shape
    codes = np.empty((n, 2 * half), dtype=np.uint8)
    codes[:, 0::2] = packed & 15
    codes[:, 1::2] = packed >> 4
    v = E2M1_SIGNED[codes]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if kind == "nvfp4":
            d = (dq.E4M3[scale] / np.float32(np.asarray(global_scale).reshape(-1)[0])).astype(np.float32)
            return dq.f32_to_bf16_bits((v * np.repeat(d, 16, axis=1)).astype(np.float32))
        e = scale.astype(np.int32)
        d = np.where(e == 255, np.float32(np.inf), np.ldexp(np.float32(1), e - 127)).astype(np.float32)
        return dq.f32_to_bf16_bits((v * np.repeat(d, 32, axis=1)).astype(np.float32))


def dequant_ct_dense(wdtype, weight, sdtype, scale, zp, w):
    """bf16 bits [N, K] of an int-/float-/naive-quantized weight (I8 or F8_E4M3 [N, K]); zp: I8 shaped as the scale."""
    n, k = weight.shape
    st = w.get("strategy") or ("group" if w.get("group_size") else "tensor")
    if st == "group":
        g = int(w["group_size"])
        if k % g:
            raise ValueError("tensor column shape must be divisble by the given group_size")
        ri, ci = np.arange(n)[:, None], (np.arange(k) // g)[None, :]
    elif st == "channel":
        ri, ci = np.arange(n)[:, None], np.zeros((1, k), dtype=np.int64)
    elif st == "tensor":
        ri, ci = np.zeros((n, 1), dtype=np.int64), np.zeros((1, k), dtype=np.int64)
    elif st == "block":
        bh, bw = w["block_structure"]
        ri, ci = (np.arange(n) // bh)[:, None], (np.arange(k) // bw)[None, :]
    else:
        raise ValueError("strategy %s" % st)
    sc = scale_f32(sdtype, scale).reshape(-1 if st == "tensor" else scale.shape[0], 1 if st == "tensor" else scale.shape[1])
    d = dq.E4M3[weight] if wdtype == "F8_E4M3" else weight.astype(np.float32)
    if zp is not None:
        d = d - zp.reshape(sc.shape)[ri, ci].astype(np.float32)
    return _in_dtype_bf16(_mul(d, sc[ri, ci]), sdtype)


def _mul(d, s):
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the reference's result too
        return (d * s).astype(np.float32)


def _in_dtype_bf16(v, sdtype):
    with np.errstate(over="ignore", invalid="ignore"):
        v = v.astype(np.float32)
        if sdtype == "F16":
            v = v.astype(np.float16).astype(np.float32)
    return dq.f32_to_bf16_bits(v)


AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]


def _fields(words, bits):
    """int32 words [..., W] -> fields [..., W * 32/bits], field j of a word at bits j*b."""
    w = words.view(np.uint32).astype(np.uint64)
    pf = 32 // bits
    sh = (np.arange(pf, dtype=np.uint64) * np.uint64(bits))
    f = (w[..., None] >> sh) & np.uint64((1 << bits) - 1)
    return f.reshape(*w.shape[:-1], w.shape[-1] * pf).astype(np.int64)


GPTQ3_WF = np.array([[0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 0],
                     [0, 1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31],
                     [0, 2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 0]], dtype=np.int32)


def _unpack3(words):
    """GPTQModel's 3-bit unpack along the last axis: int32 words [..., 3R] -> fields [..., 32R]
    (int32 arithmetic shifts by the wf table, then the fields straddling words 0/1 and 1/2 fixed up)."""
    w = words.view(np.int32)
    lead = w.shape[:-1]
    r = w.shape[-1] // 3
    x = np.broadcast_to(w.reshape(*lead, r, 3, 1), (*lead, r, 3, 12))
    x = (x >> GPTQ3_WF) & 0x7
    x[..., 0, 10] = (x[..., 0, 10] & 0x3) | ((x[..., 1, 0] << 2) & 0x4)
    x[..., 1, 11] = (x[..., 1, 11] & 0x1) | ((x[..., 2, 0] << 1) & 0x6)
    x = x & 0x7
    out = np.concatenate([x[..., 0, :11], x[..., 1, 1:12], x[..., 2, 1:11]], axis=-1)
    return out.reshape(*lead, r * 32).astype(np.int64)


def dequant_gptq(qweight, qzeros, sdtype, scales, g_idx, bits, v1):
    """bf16 bits [N, K] of a GPTQ Linear."""
    if v1 and bits != 3:
        add = {2: 0x55555555, 4: 0x11111111, 8: 0x01010101}[bits]
        qzeros = ((qzeros.view(np.uint32).astype(np.uint64) + add) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    if bits == 3:
        zeros = _unpack3(qzeros)                                   # [G, N]
        if v1:
            zeros = (zeros + 1) & 7
        w = _unpack3(np.ascontiguousarray(qweight.T)).T            # [K, N]
    else:
        zeros = _fields(qzeros, bits)                              # [G, N]
        w = _fields(np.ascontiguousarray(qweight.T), bits).T       # [K, N]: input k = row
    g = g_idx.astype(np.int64)
    d = (w - zeros[g]).astype(np.float32)
    return np.ascontiguousarray(_in_dtype_bf16(_mul(d, scale_f32(sdtype, scales)[g]), sdtype).T)


def dequant_awq(qweight, qzeros, sdtype, scales, group):
    k = qweight.shape[0]
    n = qweight.shape[1] * 8
    rev = np.arange(n).reshape(-1, 8)[:, AWQ_REVERSE_ORDER].reshape(-1)
    iw = _fields(qweight, 4)[:, rev]
    iz = _fields(qzeros, 4)[:, rev]
    g = np.arange(k) // group
    d = (iw - iz[g]).astype(np.float32)
    return np.ascontiguousarray(_in_dtype_bf16(_mul(d, scale_f32(sdtype, scales)[g]), sdtype).T)


def _pack_fields(vals, bits):
    """[..., M] ints in [0, 2^b) -> int32 words [..., M*b/32], field j at bits j*b (3-bit: a bit stream)."""
    if bits == 3:
        v = vals.astype(np.uint64)
        m = v.shape[-1]
        out = np.zeros((*v.shape[:-1], m * 3 // 32 + 1), dtype=np.uint64)
        for j in range(m):
            bit = 3 * j
            out[..., bit // 32] |= (v[..., j] << np.uint64(bit % 32)) & np.uint64(0xFFFFFFFF)
            if bit % 32 > 29:
                out[..., bit // 32 + 1] |= v[..., j] >> np.uint64(32 - bit % 32)
        return (out[..., :m * 3 // 32] & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    pf = 32 // bits
    v = vals.astype(np.uint64).reshape(*vals.shape[:-1], vals.shape[-1] // pf, pf)
    sh = np.arange(pf, dtype=np.uint64) * np.uint64(bits)
    return ((v << sh).sum(axis=-1) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def encode_gq(x, kind, bits, group, sdtype, v1=True, perm=None, sym=False):
    """A GPTQ / AWQ encoding of fp32 x [N, K] (min/max, any valid one). perm: act-order (desc_act) permutation."""
    n, k = x.shape
    grp = k if group == -1 else group
    G = -(-k // grp)
    hi = (1 << bits) - 1
    if perm is None:
        perm = np.arange(k)
    g_idx = np.empty(k, dtype=np.int32)
    g_idx[perm] = np.arange(k) // grp          # groups follow the act order, as GPTQ with desc_act writes them
    s = np.zeros((G, n), np.float32)
    z = np.zeros((G, n), np.int64)
    for g in range(G):
        cols = x[:, g_idx == g]
        mn, mx = np.minimum(cols.min(axis=1), 0), np.maximum(cols.max(axis=1), 0)
        if sym:
            sc = np.maximum(np.abs(mn), mx) * 2 / hi
            zz = np.full(n, (hi + 1) // 2)
        else:
            sc = (mx - mn) / hi
            zz = np.clip(np.rint(-mn / np.where(sc > 0, sc, 1)), 0, hi)
        s[g], z[g] = np.where(sc > 0, sc, 1), zz
    if sdtype == "F16":
        sarr = s.astype(np.float16)
    else:
        sarr = dq.f32_to_bf16_bits(s)
    se = scale_f32(sdtype, sarr)
    gi = g_idx.astype(np.int64)
    q = np.clip(np.rint(x.T / se[gi]) + z[gi], 0, hi).astype(np.int64)   # [K, N]
    if kind == "gptq":
        qweight = _pack_fields(np.ascontiguousarray(q.T), bits).T          # [K/pf, N]
        zs = (z - 1) & hi if v1 else z   # v1 stores z - 1 (2/4/8-bit words then carry exactly as the reference adds)
        out = {"qweight": ("I32", np.ascontiguousarray(qweight)), "qzeros": ("I32", _pack_fields(zs, bits)),
               "scales": (sdtype, sarr), "g_idx": ("I32", g_idx)}
    else:
        order = np.arange(n).reshape(-1, 8)[:, [0, 2, 4, 6, 1, 3, 5, 7]].reshape(-1)   # AWQ_ORDER at pack time
        out = {"qweight": ("I32", _pack_fields(q[:, order], 4)), "qzeros": ("I32", _pack_fields(z[:, order], 4)),
               "scales": (sdtype, sarr)}
    return out


def gq_dir(src, dst, qc, sdtype, excluded, perm_seed=None):
    """bf16 checkpoint src -> GPTQ / AWQ dst under config qc; excluded(name) -> kept bf16."""
    tensors = dq.read_safetensors(os.path.join(src, "model.safetensors"))
    kind = qc["quant_method"]
    bits = qc.get("bits", 4)
    v1 = qc.get("checkpoint_format", "gptq") == "gptq"
    rng = np.random.default_rng(perm_seed) if perm_seed is not None else None
    out, nq = {}, 0
    for name, (dtype, arr) in tensors.items():
        if not is_linear(name) or excluded(name):
            out[name] = (dtype, arr)
            continue
        x = scale_f32(dtype, arr) if dtype == "BF16" else arr.astype(np.float32)
        perm = rng.permutation(x.shape[1]) if rng is not None else None
        base = name[:-len(".weight")]
        for part, v in encode_gq(x, kind, bits, qc["group_size"], sdtype, v1=v1, perm=perm,
                                 sym=qc.get("sym", False)).items():
            out[base + "." + part] = v
        nq += 1
    os.makedirs(dst)
    for fn in os.listdir(src):
        p = os.path.join(src, fn)
        if os.path.isfile(p) and not fn.endswith(".safetensors") and fn != "config.json":
            shutil.copy2(p, os.path.join(dst, fn))
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg["quantization_config"] = qc
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"), indent=2, sort_keys=True)
    dq.write_safetensors(os.path.join(dst, "model.safetensors"), out)
    return nq


# ------------------------------------------------------------ module selection
def _match_name(mod, t):
    return re.match(t[3:], mod) is not None if t.startswith("re:") else t == mod


def ct_scheme(qc, weight_name):
    """The config group (dict) converting this weight, or None."""
    if not is_linear(weight_name):
        return None
    mod = weight_name[:-len(".weight")]
    if any(_match_name(mod, i) or i in ("Linear", "Module") for i in qc.get("ignore") or []):
        return None
    target_to_group = {}
    for g in qc["config_groups"].values():
        for t in g["targets"]:
            target_to_group[t] = g
    ts = sorted(target_to_group, key=lambda x: ("re:" in x, x))
    hits = [t for t in ts if _match_name(mod, t)] + [t for t in ts if t in ("Linear", "Module")]
    return target_to_group[hits[0]] if hits else None


# ------------------------------------------------------------ quantizing (to make test checkpoints)
def quantize_ct(x, w, sdtype, rng=None):
    """A pack-quantized encoding of fp32 x [N, K] (any valid one: only the decode is the reference's)."""
    n, k = x.shape
    b = int(w["num_bits"])
    lo, hi = -(1 << (b - 1)), (1 << (b - 1)) - 1
    st = w["strategy"]
    if st == "group":
        g = int(w["group_size"])
        tiles = x.reshape(n, k // g, g)
    elif st == "channel":
        tiles = x.reshape(n, 1, k)
    else:
        bh, bw = w["block_structure"]
        pn, pk = -(-n // bh) * bh, -(-k // bw) * bw
        xp = np.zeros((pn, pk), dtype=np.float32)
        xp[:n, :k] = x
        tiles = xp.reshape(pn // bh, bh, pk // bw, bw).transpose(0, 2, 1, 3).reshape(pn // bh, pk // bw, bh * bw)
    if w.get("symmetric", True):
        s = np.abs(tiles).max(axis=-1) / hi
        z = None
    else:
        mn, mx = np.minimum(tiles.min(axis=-1), 0), np.maximum(tiles.max(axis=-1), 0)
        s = (mx - mn) / (hi - lo)
        z = np.clip(np.rint(lo - mn / np.where(s > 0, s, 1)), lo, hi).astype(np.int64)
    s = np.where(s > 0, s, 1).astype(np.float32)
    if sdtype == "BF16":
        sbits = dq.f32_to_bf16_bits(s)
        s_eff = scale_f32("BF16", sbits)
        sarr = sbits
    elif sdtype == "F16":
        sarr = s.astype(np.float16)
        s_eff = sarr.astype(np.float32)
    else:
        sarr = s
        s_eff = s
    if st == "group":
        ri, ci = np.arange(n)[:, None], (np.arange(k) // int(w["group_size"]))[None, :]
    elif st == "channel":
        ri, ci = np.arange(n)[:, None], np.zeros((1, k), dtype=np.int64)
    else:
        bh, bw = w["block_structure"]
        ri, ci = (np.arange(n) // bh)[:, None], (np.arange(k) // bw)[None, :]
    zz = 0 if z is None else z[ri, ci]
    q = np.clip(np.rint(x / s_eff[ri, ci]) + zz, lo, hi).astype(np.int8)
    out = {"weight_packed": ("I32", pack_int32(q, b)), "weight_scale": (sdtype, np.ascontiguousarray(sarr)),
           "weight_shape": ("I64", np.array([n, k], dtype=np.int64))}
    if z is not None:
        out["weight_zero_point"] = ("I32", pack_int32(z.astype(np.int8), b, packed_dim=0))
    return out


def _e4m3_code(x):
    """nearest e4m3fn code of fp32 x (|x| <= 448; ties to the even code), by table search."""
    vals = dq.E4M3[:0x7f]                     # codes 0..126, non-negative, increasing
    a = np.abs(x)
    i = np.clip(np.searchsorted(vals, a), 1, 126)
    lo, hi = vals[i - 1], vals[i]
    pick = np.where((a - lo < hi - a) | ((a - lo == hi - a) & ((i - 1) % 2 == 0)), i - 1, i)
    return (pick | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


def quantize_ct_dense(x, w, sdtype, rng=None):
    """An int-/float-/naive-quantized encoding of fp32 x [N, K] (any valid one; only the decode is the reference's)."""
    n, k = x.shape
    fl = w.get("type", "int") == "float"
    st = w["strategy"]
    if st == "tensor":
        ri, ci, shp = np.zeros((n, 1), np.int64), np.zeros((1, k), np.int64), (1,)
    elif st == "channel":
        ri, ci, shp = np.arange(n)[:, None], np.zeros((1, k), np.int64), (n, 1)
    elif st == "group":
        g = int(w["group_size"])
        ri, ci, shp = np.arange(n)[:, None], (np.arange(k) // g)[None, :], (n, k // g)
    else:
        bh, bw = w["block_structure"]
        ri, ci, shp = (np.arange(n) // bh)[:, None], (np.arange(k) // bw)[None, :], (-(-n // bh), -(-k // bw))
    rr, cc = np.broadcast_to(ri, (n, k)).reshape(-1), np.broadcast_to(ci, (n, k)).reshape(-1)
    flat = (rr * (shp[1] if len(shp) == 2 else 1) + cc)
    size = int(np.prod(shp))
    amax, mn, mx = np.zeros(size, np.float32), np.zeros(size, np.float32), np.zeros(size, np.float32)
    np.maximum.at(amax, flat, np.abs(x).reshape(-1))
    np.minimum.at(mn, flat, x.reshape(-1))
    np.maximum.at(mx, flat, x.reshape(-1))
    sym = w.get("symmetric", True)
    top = 448.0 if fl else 127.0
    s = amax / top if sym else (mx - mn) / 255.0
    s = np.where(s > 0, s, 1).astype(np.float32)
    if sdtype == "BF16":
        sarr = dq.f32_to_bf16_bits(s)
    elif sdtype == "F16":
        sarr = s.astype(np.float16)
    else:
        sarr = s
    s_eff = scale_f32(sdtype, sarr)
    out = {}
    if fl:
        q = _e4m3_code(np.clip(x / s_eff[flat].reshape(n, k), -448, 448).astype(np.float32))
        out["weight"] = ("F8_E4M3", q)
    else:
        z = np.zeros(size, np.int64) if sym else np.clip(np.rint(-128 - mn / s_eff), -128, 127).astype(np.int64)
        q = np.clip(np.rint(x / s_eff[flat].reshape(n, k)) + z[flat].reshape(n, k), -128, 127).astype(np.int8)
        out["weight"] = ("I8", q)
        if not sym:
            out["weight_zero_point"] = ("I8", z.astype(np.int8).reshape(shp))
    out["weight_scale"] = (sdtype, np.ascontiguousarray(np.asarray(sarr).reshape(shp)))
    return out


def quantize_ct_fp4(x, w, sdtype=None, rng=None):
    """An nvfp4-/mxfp4-pack-quantized encoding of fp32 x [N, K] (nearest e2m1; any valid one)."""
    n, k = x.shape
    nv = int(w["group_size"]) == 16
    g = 16 if nv else 32
    t = x.reshape(n, k // g, g)
    amax = np.abs(t).max(axis=-1)
    mags = E2M1_SIGNED[:8]
    if nv:
        gs = np.float32(448.0 * 6.0 / max(float(np.abs(x).max()), 1e-30))
        sc = _e4m3_code(np.clip(amax / 6.0 * gs, 0, 448).astype(np.float32))
        d = (dq.E4M3[sc] / gs).astype(np.float32)
    else:
        e = np.where(amax > 0, np.ceil(np.log2(np.maximum(amax, 1e-38) / 6.0)), 0).astype(np.int32)
        sc = np.clip(e + 127, 0, 254).astype(np.uint8)
        d = np.ldexp(np.float32(1), sc.astype(np.int32) - 127).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(d[..., None] > 0, t / d[..., None], 0)
    idx = np.abs(np.abs(r)[..., None] - mags).argmin(axis=-1)
    codes = (idx | np.where(r < 0, 8, 0)).astype(np.uint8).reshape(n, k)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    out = {"weight_packed": ("U8", packed), "weight_scale": ("F8_E4M3" if nv else "U8", sc)}
    if nv:
        out["weight_global_scale"] = ("F32", np.array([gs], dtype=np.float32))
    return out


def ct_config(groups, ignore=("lm_head",), fmt="pack-quantized"):
    """groups: (targets, weights args); the args may carry "type" (int / float), "format" (the group's format)
    and "input_activations" (W8A8)."""
    cg = {}
    for i, (targets, w) in enumerate(groups):
        ww = {"num_bits": w["num_bits"], "type": w.get("type", "int"), "symmetric": w.get("symmetric", True),
              "strategy": w["strategy"], "group_size": w.get("group_size"),
              "block_structure": w.get("block_structure"), "dynamic": False, "actorder": None, "observer": "minmax",
              "observer_kwargs": {}}
        cg["group_%d" % i] = {"targets": list(targets), "weights": ww, "input_activations": w.get("input_activations"),
                              "output_activations": None, "format": w.get("format", fmt)}
    return {"quant_method": "compressed-tensors", "format": fmt, "config_groups": cg, "ignore": list(ignore),
            "quantization_status": "compressed", "kv_cache_scheme": None, "sparsity_config": {},
            "transform_config": None, "global_compression_ratio": None, "version": "0.20.1"}


def ct_dir(src, dst, qc, sdtypes):
    """bf16 checkpoint src -> pack-quantized dst under config qc; sdtypes: group name -> scale dtype."""
    tensors = dq.read_safetensors(os.path.join(src, "model.safetensors"))
    inv = {id(g): name for name, g in qc["config_groups"].items()}
    out, nq = {}, 0
    for name, (dtype, arr) in tensors.items():
        g = ct_scheme(qc, name)
        if g is None:
            out[name] = (dtype, arr)
            continue
        x = scale_f32(dtype, arr) if dtype == "BF16" else arr.astype(np.float32)
        base = name[:-len(".weight")]
        enc = (quantize_ct if g["format"] == "pack-quantized" else
               quantize_ct_fp4 if g["format"] in ("nvfp4-pack-quantized", "mxfp4-pack-quantized") else quantize_ct_dense)
        for part, v in enc(x, g["weights"], sdtypes[inv[id(g)]]).items():
            out[base + "." + part] = v
        nq += 1
    os.makedirs(dst)
    for fn in os.listdir(src):
        p = os.path.join(src, fn)
        if os.path.isfile(p) and not fn.endswith(".safetensors") and fn != "config.json":
            shutil.copy2(p, os.path.join(dst, fn))
        elif os.path.isdir(p) and fn != "panel":
            shutil.copytree(p, os.path.join(dst, fn))
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg["quantization_config"] = qc
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"), indent=2, sort_keys=True)
    dq.write_safetensors(os.path.join(dst, "model.safetensors"), out)
    return nq


def _pack_stream(vals, bits):
    """[R, M] ints in [0, 2^b) -> uint32 words [R, M*b/32], field j at bits [j*b, j*b+b) of the row's words."""
    v = vals.astype(np.uint64)
    m = v.shape[1]
    out = np.zeros((v.shape[0], m * bits // 32 + 1), dtype=np.uint64)
    for j in range(m):
        bit = j * bits
        out[:, bit // 32] |= (v[:, j] << np.uint64(bit % 32)) & np.uint64(0xFFFFFFFF)
        if bit % 32 + bits > 32:
            out[:, bit // 32 + 1] |= v[:, j] >> np.uint64(32 - bit % 32)
    return out[:, :m * bits // 32].astype(np.uint32)


def quantize_mlx(x, bits, group):
    """An MLX affine encoding of fp32 x [N, K] with bf16 scales / biases (min/max; any valid one)."""
    n, k = x.shape
    t = x.reshape(n, k // group, group)
    mn, mxv = t.min(axis=-1), t.max(axis=-1)
    hi = (1 << bits) - 1
    s = np.where(mxv > mn, (mxv - mn) / hi, 1).astype(np.float32)
    sb, bb = dq.f32_to_bf16_bits(s), dq.f32_to_bf16_bits(mn.astype(np.float32))
    se, be = scale_f32("BF16", sb), scale_f32("BF16", bb)
    q = np.clip(np.rint((t - be[..., None]) / se[..., None]), 0, hi).astype(np.int64).reshape(n, k)
    return {"weight": ("U32", _pack_stream(q, bits)), "scales": ("BF16", sb), "biases": ("BF16", bb)}


def mlx_dir(src, dst, bits, group, quantize=lambda n: True):
    """bf16 checkpoint src -> MLX affine dst (config.json quantization + quantization_config mirror, as mlx-lm
    writes them): every Linear and the embedding whose input dim is a multiple of group (mlx-lm's predicate)
    and quantize(name) allows."""
    tensors = dq.read_safetensors(os.path.join(src, "model.safetensors"))
    out, nq = {}, 0
    for name, (dtype, arr) in tensors.items():
        ok = (is_linear(name) or name == "model.embed_tokens.weight") and arr.shape[-1] % group == 0 and quantize(name)
        if not ok:
            out[name] = (dtype, arr)
            continue
        x = scale_f32(dtype, arr) if dtype == "BF16" else arr.astype(np.float32)
        base = name[:-len(".weight")]
        for part, v in quantize_mlx(x, bits, group).items():
            out[base + "." + part] = v
        nq += 1
    os.makedirs(dst)
    for fn in os.listdir(src):
        p = os.path.join(src, fn)
        if os.path.isfile(p) and not fn.endswith(".safetensors") and fn != "config.json":
            shutil.copy2(p, os.path.join(dst, fn))
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg["quantization"] = {"group_size": group, "bits": bits}
    cfg["quantization_config"] = {"group_size": group, "bits": bits}
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"), indent=2, sort_keys=True)
    dq.write_safetensors(os.path.join(dst, "model.safetensors"), out)
    return nq


def fp8_ue8m0_dir(src, dst, sdtype, bm, bn):
    """bf16 checkpoint src -> FP8 block with UE8M0 scales (scale_fmt "ue8m0", DeepSeek-V3.2 style): every Linear but
    lm_head; per tile s = 2^ceil(log2(amax / 448)) (1 for a zero tile), q = e4m3(x / s); weight_scale_inv stored as
    sdtype F8_E8M0 (the exponent + 127) or F32. Returns the converted count (dequant_ref.dequant_dir decodes it)."""
    tensors = dq.read_safetensors(os.path.join(src, "model.safetensors"))
    out, nq = {}, 0
    for name, (dtype, arr) in tensors.items():
        if not is_linear(name) or name == "lm_head.weight":
            out[name] = (dtype, arr)
            continue
        x = scale_f32(dtype, arr) if dtype == "BF16" else arr.astype(np.float32)
        n, k = x.shape
        R, C = -(-n // bm), -(-k // bn)
        ex = np.zeros((R, C), dtype=np.int32)
        q = np.zeros((n, k), dtype=np.uint8)
        for i in range(R):
            for j in range(C):
                tile = x[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn]
                amax = float(np.abs(tile).max())
                e = int(np.ceil(np.log2(amax / 448.0))) if amax > 0 else 0
                ex[i, j] = e
                q[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn] = _e4m3_code(
                    np.clip(tile / np.float32(2.0 ** e), -448, 448).astype(np.float32))
        out[name] = ("F8_E4M3", q)
        out[name[:-len(".weight")] + ".weight_scale_inv"] = (
            ("F8_E8M0", (ex + 127).astype(np.uint8)) if sdtype == "F8_E8M0" else
            ("F32", np.ldexp(np.float32(1), ex).astype(np.float32)))
        nq += 1
    os.makedirs(dst)
    for fn in os.listdir(src):
        p = os.path.join(src, fn)
        if os.path.isfile(p) and not fn.endswith(".safetensors") and fn != "config.json":
            shutil.copy2(p, os.path.join(dst, fn))
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [bm, bn],
                                  "activation_scheme": "dynamic", "scale_fmt": "ue8m0",
                                  "modules_to_not_convert": ["lm_head"]}
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"), indent=2, sort_keys=True)
    dq.write_safetensors(os.path.join(dst, "model.safetensors"), out)
    return nq


def dequant_dir(src, dst):
    """pack-quantized src -> bf16 dst (config without quantization_config)."""
    cfg = json.load(open(os.path.join(src, "config.json")))
    qc = cfg.pop("quantization_config")
    mlx = cfg.pop("quantization", None)
    if mlx is not None:
        qc = dict(mlx, quant_method="mlx")
    tensors = {}
    for fn in sorted(os.listdir(src)):
        if fn.endswith(".safetensors"):
            tensors.update(dq.read_safetensors(os.path.join(src, fn)))
    out, skip, n = {}, set(), 0
    for name, (dtype, arr) in tensors.items():
        if qc["quant_method"] == "mlx" and dtype == "U32":
            b = name[:-len(".weight")]
            sd, sc = tensors[b + ".scales"]
            out[name] = ("BF16", dequant_mlx(arr, sd, sc, tensors[b + ".biases"][1], qc["bits"], qc["group_size"]))
            skip |= {name, b + ".scales", b + ".biases"}
            n += 1
            continue
        if qc["quant_method"] == "compressed-tensors" and dtype in ("I8", "F8_E4M3") and name.endswith(".weight"):
            g = ct_scheme(qc, name)
            b = name[:-len(".weight")]
            sd, sc = tensors[b + ".weight_scale"]
            zp = tensors.get(b + ".weight_zero_point")
            out[name] = ("BF16", dequant_ct_dense(dtype, arr, sd, sc, None if zp is None else zp[1], g["weights"]))
            skip |= {name, b + ".weight_scale", b + ".weight_zero_point", b + ".input_scale", b + ".input_zero_point"}
            n += 1
            continue
        if name.endswith(".qweight"):
            b = name[:-len(".qweight")]
            sd, sc = tensors[b + ".scales"]
            if qc["quant_method"] == "gptq":
                k = arr.shape[0] * 32 // qc["bits"]
                out[b + ".weight"] = ("BF16", dequant_gptq(arr, tensors[b + ".qzeros"][1], sd, sc,
                                                           tensors[b + ".g_idx"][1], qc["bits"],
                                                           qc.get("checkpoint_format", "gptq") == "gptq"))
            else:
                k = arr.shape[0]
                g = qc["group_size"] if qc["group_size"] != -1 else k
                out[b + ".weight"] = ("BF16", dequant_awq(arr, tensors[b + ".qzeros"][1], sd, sc, g))
            skip |= {name, b + ".qzeros", b + ".scales", b + ".g_idx"}
            n += 1
            continue
        if not name.endswith(".weight_packed"):
            continue
        base = name[:-len("_packed")]
        if dtype == "U8":   # nvfp4 / mxfp4-pack-quantized
            sd, sc = tensors[base + "_scale"]
            gs = tensors.get(base[:-len(".weight")] + ".weight_global_scale")
            out[base] = ("BF16", dequant_ct_fp4("nvfp4" if sd == "F8_E4M3" else "mxfp4", arr, sc,
                                                None if gs is None else gs[1]))
            b0 = base[:-len(".weight")]
            skip |= {name, base + "_scale", b0 + ".weight_global_scale", b0 + ".input_global_scale"}
            n += 1
            continue
        g = ct_scheme(qc, base)
        sd, sc = tensors[base + "_scale"]
        zp = tensors.get(base + "_zero_point")
        out[base] = ("BF16", dequant_ct(arr, sd, sc, None if zp is None else zp[1], tensors[base + "_shape"][1],
                                        g["weights"]))
        skip |= {name, base + "_scale", base + "_zero_point", base + "_shape"}
        n += 1
    for name, v in tensors.items():
        if name not in skip:
            out[name] = v
    os.makedirs(dst)
    for fn in sorted(os.listdir(src)):
        p = os.path.join(src, fn)
        if os.path.isfile(p) and not fn.endswith(".safetensors") and fn not in ("config.json",
                                                                               "model.safetensors.index.json"):
            shutil.copy2(p, os.path.join(dst, fn))
    with open(os.path.join(dst, "config.json"), "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    dq.write_safetensors(os.path.join(dst, "model.safetensors"), out)
    return n


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print("dequantized %d tensors -> %s" % (dequant_dir(sys.argv[1], sys.argv[2]), sys.argv[2]))
