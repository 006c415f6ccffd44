#!/usr/bin/env python3
"""Offline dequantizer of FP8-block and NVFP4 checkpoints into a bf16
checkpoint, numpy only, written from the published formats (not from the C
code and without calling the binary):

  FP8 block (transformers integrations/finegrained_fp8.py, Fp8Dequantize;
  DeepSeek-V3 weight_dequant for the tile indexing):
      w[i, j] = fp32(e4m3 w_q[i, j]) * weight_scale_inv[i // bm, j // bn]
      (one fp32 multiply), cast to bf16 (round to nearest even)
  NVFP4 (NVIDIA ModelOpt NVFP4QTensor.dequantize):
      byte b of row i holds elements 2b (low nibble) and 2b+1 (high nibble),
      E2M1 table [0, .5, 1, 1.5, 2, 3, 4, 6, 0, -.5, ..., -6];
      d[i, g] = fp32(e4m3 weight_scale[i, g]) * weight_scale_2   (fp32)
      w[i, j] = e2m1[code] * d[i, j // 16]                        (fp32) -> bf16
      input_scale is dropped (an activation scale; nothing to dequantize)

usage: dequant_ref.py SRC_DIR DST_DIR
DST gets config.json without quantization_config, every other non-weight
file except hf_quant_config.json and the index, and one model.safetensors.
"""
import json, os, shutil, struct, sys

import numpy as np

ST_DTYPES = {"BF16": (np.uint16, 2), "F32": (np.float32, 4), "F16": (np.float16, 2), "U8": (np.uint8, 1),
             "F8_E4M3": (np.uint8, 1), "I64": (np.int64, 8), "F8_E8M0": (np.uint8, 1)}


def e4m3_table():
    """fp32 value of every e4m3fn byte: bias 7, 3 mantissa bits, no inf, 0x7f/0xff NaN."""
    t = np.zeros(256, dtype=np.float32)
    for b in range(256):
        s, e, m = b >> 7, (b >> 3) & 15, b & 7
        if e == 15 and m == 7:
            v = float("nan")
        elif e == 0:
            v = m * 2.0 ** -9
        else:
            v = (1 + m / 8.0) * 2.0 ** (e - 7)
        t[b] = -v if s else v
    return t


E4M3 = e4m3_table()
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, 0, -.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)


def f32_to_bf16_bits(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    hdr = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, h in hdr.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        dt, _ = ST_DTYPES[h["dtype"]]
        arr = np.frombuffer(data[base + a:base + b], dtype=dt).reshape(h["shape"])
        out[name] = (h["dtype"], arr)
    return out


def write_safetensors(path, tensors):
    names = sorted(tensors)
    hdr, off, blobs = {}, 0, []
    for nm in names:
        dtype, arr = tensors[nm]
        raw = np.ascontiguousarray(arr).tobytes()
        hdr[nm] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def e8m0_to_f32(e):
    """UE8M0 codes -> fp32: 2^(e - 127) (e = 0: the subnormal 2^-127), 255 NaN."""
    e = np.asarray(e).astype(np.int32)
    with np.errstate(invalid="ignore"):
        return np.where(e == 255, np.float32(np.nan), np.ldexp(np.float32(1), e - 127)).astype(np.float32)


def dequant_fp8(q, scale_inv, bm, bn):
    n, k = q.shape
    s = np.repeat(np.repeat(scale_inv.astype(np.float32), bm, axis=0)[:n], bn, axis=1)[:, :k]
    with np.errstate(over="ignore"):  # overflow to inf is the reference's result too
        return f32_to_bf16_bits(E4M3[q] * s)


def dequant_nvfp4(packed, scale, scale2):
    n, half = packed.shape
    codes = np.empty((n, 2 * half), dtype=np.uint8)
    codes[:, 0::2] = packed & 15
    codes[:, 1::2] = packed >> 4
    d = E4M3[scale] * np.float32(scale2.reshape(-1)[0])          # fp32 product first (ModelOpt order)
    return f32_to_bf16_bits(E2M1[codes] * np.repeat(d, 16, axis=1))


def dequant_dir(src, dst):
    cfg = json.load(open(os.path.join(src, "config.json")))
    qc = cfg.pop("quantization_config", None) or {}
    bm, bn = qc.get("weight_block_size", [128, 128])
    tensors = {}
    for fn in sorted(os.listdir(src)):
        if fn.endswith(".safetensors"):
            tensors.update(read_safetensors(os.path.join(src, fn)))
    out = {}
    companions = (".weight_scale_inv", ".weight_scale_2", ".weight_scale", ".input_scale")
    for name, (dtype, arr) in tensors.items():
        if name.endswith(companions):
            continue
        base = name[:-len(".weight")] if name.endswith(".weight") else None
        if dtype == "F8_E4M3" and base and base + ".weight_scale_inv" in tensors:
            sd, sa = tensors[base + ".weight_scale_inv"]
            out[name] = ("BF16", dequant_fp8(arr, e8m0_to_f32(sa) if sd == "F8_E8M0" else sa, bm, bn))
        elif dtype == "U8" and base and base + ".weight_scale" in tensors:
            out[name] = ("BF16", dequant_nvfp4(arr, tensors[base + ".weight_scale"][1],
                                               tensors[base + ".weight_scale_2"][1]))
        else:
            out[name] = (dtype, arr)
    os.makedirs(dst)
    for fn in sorted(os.listdir(src)):
        p = os.path.join(src, fn)
        if fn.endswith(".safetensors") or fn in ("config.json", "hf_quant_config.json",
                                                 "model.safetensors.index.json") or not os.path.isfile(p):
            continue
        shutil.copy2(p, os.path.join(dst, fn))
    with open(os.path.join(dst, "config.json"), "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    write_safetensors(os.path.join(dst, "model.safetensors"), out)
    return sum(1 for n in out if out[n][0] == "BF16" and tensors[n][0] in ("F8_E4M3", "U8"))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print("dequantized %d tensors -> %s" % (dequant_dir(sys.argv[1], sys.argv[2]), sys.argv[2]))
