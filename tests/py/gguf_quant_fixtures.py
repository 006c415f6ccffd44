"""The fixtures of tests/vectors/gguf-quant/ (GGUFs written by llama.cpp's
llama-quantize) and the safetensors checkpoint of what such a GGUF decodes to.

  tiny      `fidelity fixture --preset tiny --seed 1` (glm-dsa, hidden 64):
            every row is 64 or 128 wide, so llama-quantize replaces each
            K-quant / IQ4_XS by its fallback type (rows not a multiple of 256).
  llama-k   `fidelity fixture --preset llama-tiny --seed 1`, then config.json
            edited to hidden 256, intermediate 256, head_dim 64 (4 query heads
            over 2 KV heads), 1 layer, a tied head (the quantized token_embd is
            the head: the files stay small), and every tensor rewritten (no RNG: a
            splitmix64 hash of (tensor index, element), uniform in
            [-0.0346, 0.0346], std 0.02; RMSNorm weights 1), so that the rows
            are 256 wide and the K-quants and IQ4_XS stay what was asked.
Used by tests/vectors/gguf-quant/make.py and tests/py/test_gguf_quantized.py."""
import json, os, shutil, subprocess

import numpy as np

from gguf_arch_fixtures import read_st, write_st

FIXTURES = {"tiny": "tiny", "llama-k": "llama-tiny"}
M64 = (1 << 64) - 1


def bf16_rne(x):
    """float32 -> bf16 bits, round to nearest even (docs/QUANT-FORMATS.md; no NaN in these weights)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _splitmix(seed, n):
    with np.errstate(over="ignore"):
        z = (np.arange(n, dtype=np.uint64) + np.uint64(seed)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _uniform(seed, shape):
    n = int(np.prod(shape))
    u = (_splitmix((seed * 0x1000003) & M64, n) >> np.uint64(40)).astype(np.float64) / float(1 << 24)
    return ((u * 2.0 - 1.0) * (0.02 * 3 ** 0.5)).astype(np.float32).reshape(shape)


def _llama_k(d):
    cfgp = os.path.join(d, "config.json")
    cfg = json.load(open(cfgp))
    cfg.update(hidden_size=256, intermediate_size=256, head_dim=64, num_hidden_layers=1, tie_word_embeddings=True)
    H, I, V, hd = 256, 256, cfg["vocab_size"], 64
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    shapes = {"model.embed_tokens.weight": [V, H], "model.norm.weight": [H]}
    p = "model.layers.0."
    shapes.update({p + "input_layernorm.weight": [H], p + "post_attention_layernorm.weight": [H],
                   p + "self_attn.q_proj.weight": [nh * hd, H], p + "self_attn.k_proj.weight": [nkv * hd, H],
                   p + "self_attn.v_proj.weight": [nkv * hd, H], p + "self_attn.o_proj.weight": [H, nh * hd],
                   p + "mlp.gate_proj.weight": [I, H], p + "mlp.up_proj.weight": [I, H],
                   p + "mlp.down_proj.weight": [H, I]})
    st = os.path.join(d, "model.safetensors")
    meta, _ = read_st(st)
    t = {}
    for i, k in enumerate(sorted(shapes)):
        a = np.ones(shapes[k], np.float32) if k.endswith("norm.weight") else _uniform(i + 1, shapes[k])
        t[k] = ("BF16", shapes[k], bf16_rne(a).tobytes())
    write_st(st, meta, t)
    with open(cfgp, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def make_fixture(binary, name, d):
    """Writes fixture NAME (a key of FIXTURES) into directory d."""
    subprocess.run([binary, "fixture", "--preset", FIXTURES[name], "--seed", "1", "--out", d], check=True,
                   capture_output=True)
    if name == "llama-k":
        _llama_k(d)


def unpermute(w, n_head):
    """the inverse of convert_hf_to_gguf's LlamaModel.permute"""
    r = w.shape[0]
    return w.reshape(n_head, r // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


LAYER = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
         "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
         "attn_q_a": "self_attn.q_a_proj", "attn_q_a_norm": "self_attn.q_a_layernorm",
         "attn_q_b": "self_attn.q_b_proj", "attn_kv_a_mqa": "self_attn.kv_a_proj_with_mqa",
         "attn_kv_a_norm": "self_attn.kv_a_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
         "ffn_down": "mlp.down_proj", "ffn_gate_inp": "mlp.gate", "ffn_gate_shexp": "mlp.shared_experts.gate_proj",
         "ffn_up_shexp": "mlp.shared_experts.up_proj", "ffn_down_shexp": "mlp.shared_experts.down_proj",
         "indexer.attn_q_b": "self_attn.indexer.wq_b", "indexer.attn_k": "self_attn.indexer.wk",
         "indexer.k_norm": "self_attn.indexer.k_norm", "indexer.proj": "self_attn.indexer.weights_proj"}


def dequantized_checkpoint(gguf_path, model_dir, out_dir):
    """The safetensors checkpoint of what a llama or glm-dsa GGUF decodes to (gguf.quants.dequantize, float32,
    bf16 RNE where the source tensor is BF16), in transformers' names and layout with the converter's
    rearrangements undone (llama's Q/K row permutation, glm-dsa's kv_b split).  Returns {gguf name: ggml type}."""
    import gguf
    import gguf.quants
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    meta, src = read_st(os.path.join(model_dir, "model.safetensors"))
    r = gguf.GGUFReader(gguf_path)
    arch = str(r.fields["general.architecture"].contents())
    g = {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32) for t in r.tensors}
    types = {t.name: t.tensor_type.name for t in r.tensors}
    nh, nkv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    out = {"model.embed_tokens.weight": g["token_embd.weight"], "model.norm.weight": g["output_norm.weight"]}
    if "output.weight" in g:
        out["lm_head.weight"] = g["output.weight"]
    for n, v in g.items():
        if not n.startswith("blk."):
            continue
        _, l, rest = n.split(".", 2)
        base, suf = rest.rsplit(".", 1)
        p = "model.layers.%s." % l
        if base in LAYER:
            if arch == "llama" and base in ("attn_q", "attn_k"):
                v = unpermute(v, nh if base == "attn_q" else nkv)
            out[p + LAYER[base] + "." + suf] = v
        elif base == "exp_probs_b":
            out[p + "mlp.gate.e_score_correction_bias"] = v
        elif base.endswith("_exps"):
            part = base.split("_")[1]
            for x in range(v.shape[0]):
                out[p + "mlp.experts.%d.%s_proj.weight" % (x, part)] = v[x]
        elif base == "attn_k_b":  # kv_b [nh, dn+dv, r] split, k_b transposed
            vb = g["blk.%s.attn_v_b.weight" % l]
            kv = np.concatenate([v.transpose(0, 2, 1), vb], axis=1)
            out[p + "self_attn.kv_b_proj.weight"] = kv.reshape(-1, kv.shape[-1])
    if sorted(out) != sorted(src):
        raise AssertionError(sorted(set(out) ^ set(src)))
    t = {}
    for k, (dt, shape, _) in src.items():
        a = np.ascontiguousarray(out[k]).reshape(shape)
        t[k] = (dt, shape, (bf16_rne(a) if dt == "BF16" else a.astype(np.float32)).tobytes())
    os.makedirs(out_dir)
    for f in os.listdir(model_dir):
        if f.endswith(".json"):
            shutil.copy(os.path.join(model_dir, f), out_dir)
    write_st(os.path.join(out_dir, "model.safetensors"), meta, t)
    return types
