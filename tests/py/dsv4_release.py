#!/usr/bin/env python3
"""DeepSeek V4's release weight format, written from a bf16 checkpoint (numpy
only; docs/QUANT-FORMATS.md "DeepSeek V4 release").

usage: dsv4_release.py SRC_DIR RELEASE_DIR [DEQUANT_DIR]
       (as a module: convert(src, rel, deq, fp8_linears=False) keeps the non-expert
       Linears BF16; hub_config=True adds the converter's keys, see make.py)

SRC_DIR: a deepseek_v4 bf16 checkpoint (`fidelity fixture --preset
deepseek-v4-tiny`, save_pretrained's spelling). RELEASE_DIR gets the layout
of the hub's release (deepseek-ai/DeepSeek-V4-Flash, as llama.cpp's
conversion/deepseek.py DeepseekV4Model and transformers' FineGrainedFP8
expert_dtype "fp4" read it):

- the hub's spelling (embed.weight, layers.N., norm.weight, hc_head_fn,
  head.weight, attn.kv_norm; no `model.`), and config.json with
  quantization_config {quant_method fp8, fmt e4m3, scale_fmt ue8m0,
  weight_block_size [128, 128], activation_scheme dynamic} and a top-level
  expert_dtype "fp4" (transformers folds it into quantization_config);
- every non-expert nn.Linear (attention wq_a / wq_b / wkv / wo_a / wo_b, the
  compressors' wkv / wgate, the indexer's wq_b / weights_proj, the shared
  expert's w1 / w2 / w3): F8_E4M3 [N, K] and X.scale F8_E8M0
  [ceil(N/128), ceil(K/128)] (the block's power of two: 2^(code-127));
- every routed expert ffn.experts.E.wX.weight: I8 [N, K/2] (two e2m1 codes a
  byte, element 2i in the low nibble) and X.scale F8_E8M0 [N, K/32];
- everything else (embeddings, head, norms, the router, hc_*, sinks, ape,
  tid2eid, the router bias) as stored.

Quantization (the writer's choice; the loader only decodes): per block the
scale is the smallest power of two with amax / scale <= 448 (fp8) or 6
(fp4); values rounded to the nearest code, ties to the even code.
DEQUANT_DIR (optional): the same model in save_pretrained's spelling and
bf16, each quantized weight replaced by its decoded value code * 2^(e-127)
(asserted exact in bf16), no quantization_config: the checkpoint the release
must capture identically to.
"""
import json, os, re, shutil, struct, sys

import numpy as np

FP8_LINEAR = ("wq_a", "wq_b", "wkv", "wo_a", "wo_b", "wgate", "weights_proj")
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float64)


def e4m3_table():
    """values of the non-negative finite e4m3fn codes 0x00..0x7e"""
    v = []
    for c in range(0x7F):
        e, m = c >> 3, c & 7
        v.append(m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))
    return np.array(v, dtype=np.float64)


E4M3 = e4m3_table()


def nearest(table, a):
    """index of the nearest table value to |a| (ties to the even index); table ascending"""
    x = np.abs(a)
    hi = np.clip(np.searchsorted(table, x), 1, len(table) - 1)
    lo = hi - 1
    dl, dh = x - table[lo], table[hi] - x
    pick_hi = (dh < dl) | ((dh == dl) & (hi % 2 == 0))
    return np.where(pick_hi, hi, lo)


def pow2_code(amax, top):
    """E8M0 code of the smallest power of two s with amax / s <= top (127: amax 0)"""
    with np.errstate(divide="ignore"):
        e = np.where(amax > 0, np.ceil(np.log2(np.where(amax > 0, amax, 1) / top)), 0)
    return np.clip(e + 127, 0, 254).astype(np.uint8)


def read_st(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    hdr = json.loads(data[8:8 + n])
    hdr.pop("__metadata__", None)
    return hdr, data[8 + n:]


def write_st(path, tensors):
    """tensors: list of (name, dtype, shape, bytes)"""
    hdr, off, body = {}, 0, []
    for name, dt, shape, b in tensors:
        hdr[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        body.append(b)
    hb = json.dumps(hdr, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    open(path + ".tmp", "wb").write(struct.pack("<Q", len(hb)) + hb + b"".join(body))
    os.replace(path + ".tmp", path)


def bf16_to_f64(b, shape):
    u = np.frombuffer(b, dtype="<u2").astype(np.uint32) << 16
    return u.view(np.float32).astype(np.float64).reshape(shape)


def f64_to_bf16_exact(x):
    f = x.astype(np.float32)
    assert np.array_equal(f.astype(np.float64), x), "a decoded value is not an fp32"
    u = f.view(np.uint32)
    assert not np.any(u & 0xFFFF), "a decoded value is not exact in bf16"
    return (u >> 16).astype("<u2").tobytes()


def quant_fp8(w):
    """w [N, K] -> (codes u8 [N, K], scale codes u8 [ceil(N/128), ceil(K/128)], decoded [N, K])"""
    N, K = w.shape
    R, C = -(-N // 128), -(-K // 128)
    codes, dec = np.zeros((N, K), np.uint8), np.zeros((N, K))
    sc = np.zeros((R, C), np.uint8)
    for r in range(R):
        for c in range(C):
            blk = w[r * 128:(r + 1) * 128, c * 128:(c + 1) * 128]
            e = pow2_code(np.abs(blk).max(), 448.0)
            s = 2.0 ** (int(e) - 127)
            i = nearest(E4M3, blk / s)
            codes[r * 128:(r + 1) * 128, c * 128:(c + 1) * 128] = i.astype(np.uint8) | np.where(blk < 0, 0x80, 0).astype(np.uint8)
            dec[r * 128:(r + 1) * 128, c * 128:(c + 1) * 128] = np.where(blk < 0, -1, 1) * E4M3[i] * s
            sc[r, c] = e
    return codes, sc, dec


def quant_fp4(w):
    """w [N, K] -> (packed u8 [N, K/2], scale codes u8 [N, K/32], decoded [N, K])"""
    N, K = w.shape
    g = w.reshape(N, K // 32, 32)
    e = pow2_code(np.abs(g).max(axis=2), 6.0)
    s = 2.0 ** (e.astype(np.int64) - 127)[:, :, None]
    i = nearest(E2M1, g / s)
    neg = g < 0
    nib = (i | np.where(neg, 8, 0)).astype(np.uint8).reshape(N, K)
    dec = (np.where(neg, -1, 1) * E2M1[i] * s).reshape(N, K)
    return (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8), e, dec


def hub_name(k):
    for a, b in (("model.embed_tokens.weight", "embed.weight"), ("model.norm.weight", "norm.weight"),
                 ("model.hc_head.hc_", "hc_head_"), ("model.layers.", "layers.")):
        if k.startswith(a):
            k = b + k[len(a):]
            break
    return k.replace(".attn.norm.weight", ".attn.kv_norm.weight")  # the release's kv norm (llama.cpp's converter)


def convert(src, rel, deq=None, fp8_linears=True, hub_config=False):
    hdr, body = read_st(os.path.join(src, "model.safetensors"))
    out_r, out_d = [], []
    for k in sorted(hdr):
        v = hdr[k]
        a, b = v["data_offsets"]
        raw, dt, shape = body[a:b], v["dtype"], v["shape"]
        leaf = k.rsplit(".", 2)[-2] if k.endswith(".weight") else ""
        expert = ".ffn.experts." in k
        fp8 = fp8_linears and not expert and dt == "BF16" and len(shape) == 2 and (leaf in FP8_LINEAR or ".shared_experts." in k)
        hk = hub_name(k)
        if expert or fp8:
            assert dt == "BF16", k
            w = bf16_to_f64(raw, shape)
            if expert:
                q, sc, dec = quant_fp4(w)
                out_r.append((hk, "I8", q.shape, q.tobytes()))
            else:
                q, sc, dec = quant_fp8(w)
                out_r.append((hk, "F8_E4M3", q.shape, q.tobytes()))
            out_r.append((hk[:-len(".weight")] + ".scale", "F8_E8M0", sc.shape, sc.tobytes()))
            out_d.append((k, "BF16", shape, f64_to_bf16_exact(dec)))
        else:
            out_r.append((hk, dt, shape, raw))
            out_d.append((k, dt, shape, raw))
    cfg = json.load(open(os.path.join(src, "config.json")))
    for d, tensors, q in ((rel, out_r, True), (deq, out_d, False)):
        if d is None:
            continue
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(src, d, ignore=shutil.ignore_patterns("panel", "model.safetensors"))
        c = dict(cfg)
        if q:
            c["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                        "scale_fmt": "ue8m0", "weight_block_size": [128, 128]}
            c["expert_dtype"] = "fp4"
        if q and hub_config:  # the keys llama.cpp's converter reads (the hub's legacy spellings), beside ours
            rates = {"sliding_attention": 0}
            rates.update(c["compress_rates"])
            c["compress_ratios"] = [rates[t] for t in c["layer_types"]]
            c["num_hash_layers"] = sum(1 for t in c["mlp_layer_types"] if t == "hash_moe")
            rs = dict(c["rope_parameters"]["compress"])
            rs.pop("rope_theta", None), rs.pop("partial_rotary_factor", None), rs.pop("attention_factor", None)
            rs.setdefault("beta_fast", 32.0), rs.setdefault("beta_slow", 1.0)
            c["rope_scaling"] = rs
        json.dump(c, open(os.path.join(d, "config.json"), "w"), indent=2, sort_keys=True)
        write_st(os.path.join(d, "model.safetensors"), tensors)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    convert(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else None)
