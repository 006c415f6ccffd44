#!/usr/bin/env python3
"""fidelity capture --model FILE.gguf (issue 18): a GGUF of our own tiny
glm_moe_dsa fixture, written here with gguf-py's GGUFWriter exactly as
llama.cpp's converter lays it out (convert_hf_to_gguf.py GlmMoeDsaModel, a
DeepseekV2Model: general.architecture glm-dsa, kv_b_proj split into attn_k_b
(transposed) and attn_v_b, routed experts stacked, 1-D tensors and
ffn_gate_inp in F32, no Q/K permutation), then:

  - BF16 GGUF of tiny (one file, a two-file split set, layer-outer) and of
    flash-0.1b (one window): the capture_content_digest equals the
    safetensors capture's;
  - Q8_0 / Q4_0 GGUFs (gguf.quants.quantize; rows whose length is not a
    multiple of 32 stay BF16, as llama-quantize falls back): capture as
    --role quant, compare against the root with KL(Q8_0) < KL(Q4_0), both > 0,
    the scope census per class with ggml types and bits, the disclosures;
    a quantized output.weight needs --own-heads;
  - refusals by name: an unsupported general.architecture, a glm-dsa file
    labelled glm5-next (glm5-next's own metadata missing), a missing or
    contradicting metadata key, a tensor missing / mis-shaped / unexpected,
    a quantized GGUF as --role root.

usage: test_gguf_capture.py BINARY   (needs numpy and gguf; no torch)
"""
import json, os, shutil, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fdcheck import Checks  # noqa: E402

C = Checks("test_gguf_capture", "fd-ggufcap-")
BIN, WORK, case, run, W = C.bin, C.work, C.case, C.run, C.path

try:
    import numpy as np
    import gguf
    from gguf import GGMLQuantizationType as QT
    import gguf.quants
except ImportError as exc:  # CI installs both
    print("skipped (%s)" % exc)
    sys.exit(0)


manifest = C.manifest


def capture(model, out, role="root", extra=()):
    return run("capture", "--model", model, "--panel", W("m", "panel"), "--out", out, "--role", role, "--lane", "other",
               "--dataset-id", "test." + os.path.basename(out), "--dataset-name", "test " + os.path.basename(out),
               "--cold-run", "c1", "--run-name", "c1", *extra)


def refused(rc, out, err):
    s = out + err
    i = s.find("REFUSED [")
    return s[i + 9:s.index("]", i)] if rc == 3 and i >= 0 else "rc=%d %s" % (rc, s[-300:])


# ---------------------------------------------------------------- the converter's layout

def read_st(path):
    data = open(path, "rb").read()
    hl = struct.unpack("<Q", data[:8])[0]
    hdr = json.loads(data[8:8 + hl])
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        raw = data[8 + hl + a:8 + hl + b]
        dt = {"BF16": np.uint16, "F32": np.float32}[v["dtype"]]
        out[k] = (v["dtype"], np.frombuffer(raw, dtype=dt).reshape(v["shape"]).copy())
    return out


def f32(t):
    dtype, a = t
    return a if dtype == "F32" else (a.astype(np.uint32) << 16).view(np.float32)


def bf16_rne(x):
    """float32 -> bf16 bits, round to nearest even (the checkpoint lane's rounding; no NaN in these weights)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_st(path, tensors):
    """A safetensors file of {name: (dtype, array)} (names sorted, no padding games)."""
    hdr, blobs, off = {}, [], 0
    for k in sorted(tensors):
        dt, a = tensors[k]
        raw = np.ascontiguousarray(a).tobytes()
        hdr[k] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def dequantized_checkpoint(model_dir, stored, out_dir):
    """The safetensors checkpoint holding what the GGUF decodes to (the reference decoder's
    float32, bf16 RNE), in transformers' names and layout: the converter's rearrangements undone."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    src = read_st(os.path.join(model_dir, "model.safetensors"))
    L, nh, dn, dv = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["qk_nope_head_dim"], cfg["v_head_dim"]
    inv = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
           "output.weight": "lm_head.weight"}
    names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q_a": "self_attn.q_a_proj",
             "attn_q_a_norm": "self_attn.q_a_layernorm", "attn_q_b": "self_attn.q_b_proj",
             "attn_kv_a_mqa": "self_attn.kv_a_proj_with_mqa", "attn_kv_a_norm": "self_attn.kv_a_layernorm",
             "attn_output": "self_attn.o_proj", "indexer.attn_q_b": "self_attn.indexer.wq_b",
             "indexer.attn_k": "self_attn.indexer.wk", "indexer.k_norm": "self_attn.indexer.k_norm",
             "indexer.proj": "self_attn.indexer.weights_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj", "ffn_gate_inp": "mlp.gate", "ffn_gate_shexp": "mlp.shared_experts.gate_proj",
             "ffn_up_shexp": "mlp.shared_experts.up_proj", "ffn_down_shexp": "mlp.shared_experts.down_proj"}
    out = {}
    for g, v in stored.items():
        if g in inv:
            out[inv[g]] = v
            continue
        _, l, rest = g.split(".", 2)
        base, suf = rest.rsplit(".", 1)
        p = "model.layers.%s." % l
        if base in names:
            out[p + names[base] + "." + suf] = v
        elif base == "exp_probs_b":
            out[p + "mlp.gate.e_score_correction_bias"] = v
        elif base.endswith("_exps"):
            for x in range(v[1].shape[0]):
                out[p + "mlp.experts.%d.%s_proj.weight" % (x, base.split("_")[1])] = (v[0], v[1][x])
    for l in range(L):
        p = "model.layers.%d." % l
        kb, vb = stored["blk.%d.attn_k_b.weight" % l], stored["blk.%d.attn_v_b.weight" % l]
        assert kb[0] == vb[0]
        kv = np.concatenate([kb[1].transpose(0, 2, 1), vb[1]], axis=1)  # [nh, dn+dv, r]
        out[p + "self_attn.kv_b_proj.weight"] = (kb[0], np.ascontiguousarray(kv.reshape(nh * (dn + dv), -1)))
    assert sorted(out) == sorted(src), sorted(set(out) ^ set(src))
    os.makedirs(out_dir)
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if os.path.exists(os.path.join(model_dir, f)):
            shutil.copy(os.path.join(model_dir, f), out_dir)
    write_st(os.path.join(out_dir, "model.safetensors"), out)


def random_kquant(a, qtype, rng):
    """Random blocks of a 256-element ggml type (Q4_K, IQ4_XS) for the rows of a, with small fp16
    super-block scales (no quantizer for these types in gguf-py: the codes are random)."""
    tsize = {QT.Q4_K: 144, QT.IQ4_XS: 136}[qtype]
    rows, n = int(np.prod(a.shape[:-1])), a.shape[-1] // 256
    b = rng.integers(0, 256, size=(rows * n, tsize), dtype=np.uint8)
    b[:, 0:2] = np.frombuffer(rng.uniform(1e-4, 3e-4, rows * n).astype(np.float16).tobytes(), np.uint8).reshape(-1, 2)
    if qtype == QT.Q4_K:  # dmin
        b[:, 2:4] = np.frombuffer(rng.uniform(1e-4, 3e-4, rows * n).astype(np.float16).tobytes(), np.uint8).reshape(-1, 2)
    return b.reshape(*a.shape[:-1], n * tsize)


def convert(model_dir, qtype=None, drop=(), extra_kv=None, skip_kv=(), rename=None, arch="glm-dsa", split=0,
            out=None, mutate=None, kquants=None):
    """The tensors and metadata convert_hf_to_gguf.py writes for GlmMoeDsaForCausalLM
    (then llama-quantize's qtype where the row length allows it)."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    st = read_st(os.path.join(model_dir, "model.safetensors"))
    L, nh = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    dn, dr, dv, rkv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"], cfg["kv_lora_rank"]
    E = cfg["n_routed_experts"]
    tensors = []  # (gguf name, HF-order array (uint16 bf16 or float32), force_f32)

    def put(name, t, force_f32=False):
        tensors.append((name, t, force_f32))

    put("token_embd.weight", st["model.embed_tokens.weight"])
    put("output_norm.weight", st["model.norm.weight"])
    put("output.weight", st["lm_head.weight"])
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.q_a_proj": "attn_q_a", "self_attn.q_a_layernorm": "attn_q_a_norm",
             "self_attn.q_b_proj": "attn_q_b", "self_attn.kv_a_proj_with_mqa": "attn_kv_a_mqa",
             "self_attn.kv_a_layernorm": "attn_kv_a_norm", "self_attn.o_proj": "attn_output",
             "self_attn.indexer.wq_b": "indexer.attn_q_b", "self_attn.indexer.wk": "indexer.attn_k",
             "self_attn.indexer.k_norm": "indexer.k_norm", "self_attn.indexer.weights_proj": "indexer.proj",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
             "mlp.gate": "ffn_gate_inp", "mlp.shared_experts.gate_proj": "ffn_gate_shexp",
             "mlp.shared_experts.up_proj": "ffn_up_shexp", "mlp.shared_experts.down_proj": "ffn_down_shexp"}
    for l in range(L):
        p = "model.layers.%d." % l
        for hf, gg in names.items():
            for suf in ("weight", "bias"):
                k = p + hf + "." + suf
                if k in st:
                    put("blk.%d.%s.%s" % (l, gg, suf), st[k], force_f32=(gg == "ffn_gate_inp"))
        k = p + "mlp.gate.e_score_correction_bias"
        if k in st:
            put("blk.%d.exp_probs_b.bias" % l, st[k])
        kv = st[p + "self_attn.kv_b_proj.weight"]
        kvb = kv[1].reshape(nh, dn + dv, rkv)
        k_b, v_b = kvb[:, :dn, :], kvb[:, dn:, :]
        put("blk.%d.attn_k_b.weight" % l, (kv[0], np.ascontiguousarray(k_b.transpose(0, 2, 1))))
        put("blk.%d.attn_v_b.weight" % l, (kv[0], np.ascontiguousarray(v_b)))
        if p + "mlp.experts.0.gate_proj.weight" in st:
            for w in ("down_proj", "gate_proj", "up_proj"):
                parts = [st[p + "mlp.experts.%d.%s.weight" % (x, w)] for x in range(E)]
                put("blk.%d.ffn_%s_exps.weight" % (l, w.split("_")[0]), (parts[0][0], np.stack([a for _, a in parts])))
    if mutate:
        tensors = mutate(tensors)
    tensors = [t for t in tensors if t[0] not in drop]
    if rename:
        tensors = [(rename.get(n, n), t, f) for n, t, f in tensors]

    w = gguf.GGUFWriter(out, arch, split_max_tensors=split) if split else gguf.GGUFWriter(out, arch)
    A = arch
    kvs = {"block_count": ("u32", L), "context_length": ("u32", cfg["max_position_embeddings"]),
           "embedding_length": ("u32", cfg["hidden_size"]), "feed_forward_length": ("u32", cfg["intermediate_size"]),
           "attention.head_count": ("u32", nh), "attention.head_count_kv": ("u32", 1),
           "rope.freq_base": ("f32", cfg["rope_parameters"]["rope_theta"]),
           "attention.layer_norm_rms_epsilon": ("f32", cfg["rms_norm_eps"]),
           "leading_dense_block_count": ("u32", cfg["first_k_dense_replace"]), "vocab_size": ("u32", cfg["vocab_size"]),
           "attention.q_lora_rank": ("u32", cfg["q_lora_rank"]), "attention.kv_lora_rank": ("u32", rkv),
           "attention.key_length": ("u32", rkv + dr), "attention.value_length": ("u32", rkv),
           "attention.key_length_mla": ("u32", dn + dr), "attention.value_length_mla": ("u32", dv),
           "expert_feed_forward_length": ("u32", cfg["moe_intermediate_size"]), "expert_count": ("u32", E),
           "expert_shared_count": ("u32", cfg["n_shared_experts"]),
           "expert_weights_scale": ("f32", cfg["routed_scaling_factor"]),
           "expert_weights_norm": ("bool", cfg["norm_topk_prob"]), "rope.dimension_count": ("u32", dr),
           "expert_used_count": ("u32", cfg["num_experts_per_tok"]), "expert_group_count": ("u32", cfg["n_group"]),
           "expert_group_used_count": ("u32", cfg["topk_group"]), "expert_gating_func": ("u32", 2),
           "attention.indexer.head_count": ("u32", cfg["index_n_heads"]),
           "attention.indexer.key_length": ("u32", cfg["index_head_dim"]),
           "attention.indexer.top_k": ("u32", cfg["index_topk"]),
           "attention.indexer.types": ("bools", [t == "full" for t in cfg["indexer_types"]])}
    kvs.update(extra_kv or {})
    for k, (ty, v) in kvs.items():
        if k in skip_kv:
            continue
        key = A + "." + k
        {"u32": w.add_uint32, "f32": w.add_float32, "bool": w.add_bool, "str": w.add_string,
         "bools": w.add_array}[ty](key, v)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["<t%d>" % i for i in range(cfg["vocab_size"])])
    stored = {}  # gguf name -> ("F32", float32) or ("BF16", uint16): what a reader decodes, in HF order
    rng = np.random.default_rng(18)
    for i, (name, t, force) in enumerate(tensors):
        a = f32(t)
        if kquants and a.ndim >= 2 and a.shape[-1] % 256 == 0 and not force:
            kq = kquants[i % len(kquants)]
            q = random_kquant(a, kq, rng)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=kq)
            stored[name] = ("BF16", bf16_rne(gguf.quants.dequantize(q, kq)))
        elif qtype is not None and a.ndim >= 2 and a.shape[-1] % 32 == 0 and not force:
            q = gguf.quants.quantize(a.astype(np.float32), qtype)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qtype)
            stored[name] = ("BF16", bf16_rne(gguf.quants.dequantize(q, qtype)))
        elif a.ndim == 1 or force or t[0] == "F32":
            w.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))
            stored[name] = ("F32", np.ascontiguousarray(a, dtype=np.float32))
        else:
            w.add_tensor(name, t[1], raw_shape=t[1].shape, raw_dtype=QT.BF16)
            stored[name] = ("BF16", t[1])
    convert.stored = stored
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


# ---------------------------------------------------------------- the cases

rc, out, err = run("fixture", "--preset", "tiny", "--seed", 1, "--out", W("m"))
case("tiny fixture", rc == 0, err)
rc, out, err = capture(W("m"), W("root"))
case("safetensors root capture", rc == 0, out + err)
want = manifest(W("root"))["capture"]["capture_content_digest"]

convert(W("m"), out=W("bf16.gguf"))
rc, out, err = capture(W("bf16.gguf"), W("g-bf16"))
got = manifest(W("g-bf16"))["capture"]["capture_content_digest"] if rc == 0 else None
case("BF16 GGUF capture digest == safetensors capture digest", got == want, (got, want, out + err))
if rc == 0:
    m = manifest(W("g-bf16"))
    case("BF16 GGUF: tokenizer identity from the GGUF metadata",
         "gguf-tokenizer-" in json.dumps(m), json.dumps(m)[:300])
rc, out, err = run("verify", W("g-bf16"))
case("BF16 GGUF dataset verifies", rc == 0, out + err)

rc, out, err = capture(W("bf16.gguf"), W("g-bf16-lo"), extra=("--schedule", "layer-outer"))
got = manifest(W("g-bf16-lo"))["capture"]["capture_content_digest"] if rc == 0 else None
case("BF16 GGUF layer-outer capture digest == safetensors", got == want, out + err)

os.makedirs(W("split"))
convert(W("m"), out=W("split", "tiny.gguf"), split=60)
shards = sorted(os.listdir(W("split")))
rc, out, err = capture(W("split", shards[0]), W("g-split"))
got = manifest(W("g-split"))["capture"]["capture_content_digest"] if rc == 0 else None
case("split BF16 GGUF (%d files) capture digest == safetensors" % len(shards), len(shards) > 1 and got == want,
     (shards, out + err))

# the flash-0.1b fixture (5 layers, hidden 256), one window; with the
# release binary also the memory bound of a quantized GGUF capture:
# peak RSS <= 1.2 x (file bytes + activations) (activations: the bf16 root
# capture's peak less its checkpoint bytes), and below file + activations +
# the bf16 model (a dequantized copy of the model would be above)
ASAN = "asan" in BIN
rc, out, err = run("fixture", "--preset", "flash-0.1b", "--seed", 1, "--out", W("f"))
case("flash-0.1b fixture", rc == 0, err)
convert(W("f"), out=W("f.gguf"))
runs = [(W("f"), W("f-root"), "root"), (W("f.gguf"), W("f-gguf"), "root")]
# the quantized attn_k_b (rows of 32) read transposed, against the reference decoder's weights
convert(W("f"), qtype=QT.Q8_0, out=W("f-q8.gguf"))
dequantized_checkpoint(W("f"), convert.stored, W("f-dq"))
runs += [(W("f-q8.gguf"), W("f-q8"), "quant"), (W("f-dq"), W("f-dq-c"), "root")]
convert(W("f"), kquants=(QT.Q4_K, QT.IQ4_XS), out=W("f-kq.gguf"))
dequantized_checkpoint(W("f"), convert.stored, W("f-dqk"))
runs += [(W("f-kq.gguf"), W("f-kq"), "quant"), (W("f-dqk"), W("f-dqk-c"), "root")]
digests, mem = [], {}
for src, d, role in runs:
    rc, out, err = run("capture", "--model", src, "--panel", W("f", "panel"), "--out", d, "--role", role, "--lane",
                       "other", "--dataset-id", "t." + os.path.basename(d), "--dataset-name", "t", "--cold-run", "c1",
                       "--run-name", "c1", "--windows", 1, "--memory-report", d + ".mem.json")
    digests.append(manifest(d)["capture"]["capture_content_digest"] if rc == 0 else out + err)
    mem[d] = json.load(open(d + ".mem.json")) if rc == 0 else None
case("flash-0.1b BF16 GGUF capture digest == safetensors (1 window)", digests[0] == digests[1], digests)
case("flash-0.1b Q8_0 GGUF capture digest == the safetensors of the reference decoder's weights",
     len(digests) == 6 and digests[2] == digests[3] and digests[2] != digests[0], digests)
case("flash-0.1b Q4_K + IQ4_XS (random blocks) GGUF capture digest == the safetensors of the reference decoder's "
     "weights", len(digests) == 6 and digests[4] == digests[5] and digests[4] != digests[0], digests)
sc = {a["tensor_class"]: a for a in manifest(W("f-kq")).get("scope", {}).get("assignments", [])} \
    if os.path.exists(W("f-kq")) else {}
case("flash-0.1b Q4_K + IQ4_XS census: embed_tokens q4_k@4.5, a mixed class null bits",
     sc.get("embed_tokens", {}).get("format") == "q4_k" and sc["embed_tokens"].get("bits_per_weight") == 4.5
     and any(a.get("format") == "mixed" and a.get("bits_per_weight") is None for a in sc.values()), sc)
if ASAN:
    print("skipped: peak RSS under AddressSanitizer measures its shadow memory; checked with the release binary")
elif mem.get(W("f-root")) and mem.get(W("f-q8")) and mem.get(W("f-kq")):
    # Q8_0 and the Q4_K + IQ4_XS file (its output.weight quantized: the head is
    # decoded a block of rows at a time, never whole — a whole bf16 head alone
    # would put the Q4_K file over the bound)
    base = mem[W("f-root")]
    act = max(0, base["peak_rss_bytes"] - base["checkpoint_bytes"])
    for what, key in (("Q8_0", W("f-q8")), ("Q4_K + IQ4_XS", W("f-kq"))):
        m = mem[key]
        bound = 1.2 * (m["checkpoint_bytes"] + act)
        copy = m["checkpoint_bytes"] + act + base["checkpoint_bytes"]
        print("peak RSS %s GGUF: %.1f MB, file %.1f MB (bf16 source %.1f MB), activations %.1f MB, bound %.1f MB"
              % (what, m["peak_rss_bytes"] / 1e6, m["checkpoint_bytes"] / 1e6, base["checkpoint_bytes"] / 1e6,
                 act / 1e6, bound / 1e6))
        case("flash-0.1b %s GGUF capture peak RSS <= 1.2 x (file + activations), < file + activations + bf16 model"
             % what, m["peak_rss_bytes"] <= bound and m["peak_rss_bytes"] < copy and m["quantized_weights"] > 0, m)
else:
    case("flash-0.1b Q8_0 / Q4_K GGUF captures with --memory-report", False, digests)
for p in (W("f.gguf"), W("f-q8.gguf"), W("f-kq.gguf")):
    if os.path.exists(p):
        os.unlink(p)
shutil.rmtree(W("f"), ignore_errors=True)
shutil.rmtree(W("f-dq"), ignore_errors=True)
shutil.rmtree(W("f-dqk"), ignore_errors=True)

# quantized: the candidate lane.  A GGUF's tokenizer identity is its
# tokenizer.* metadata, which no byte comparison ties to tokenizer.json: the
# pair shares an identity only when the user names the weights' repository
# (--weights-repository) for both, as for any two checkpoints of one model.
REPO = ("--weights-repository", "test/tiny-glm-dsa")
rc, out, err = capture(W("m"), W("root-r"), extra=REPO)
case("safetensors root capture (--weights-repository)", rc == 0, out + err)
kl = {}
for qt in (QT.Q8_0, QT.Q4_0):
    path = convert(W("m"), qtype=qt, out=W("%s.gguf" % qt.name))
    rc, out, err = capture(path, W("g-" + qt.name), role="quant", extra=REPO)
    case("%s GGUF captures as --role quant" % qt.name, rc == 0, out + err)
    if rc:
        continue
    dequantized_checkpoint(W("m"), convert.stored, W("dq-" + qt.name))
    rc, out, err = capture(W("dq-" + qt.name), W("c-dq-" + qt.name))
    got = [manifest(d)["capture"]["capture_content_digest"] if os.path.exists(d) else None
           for d in (W("c-dq-" + qt.name), W("g-" + qt.name))]
    case("%s GGUF capture digest == the safetensors of the reference decoder's weights (bf16)" % qt.name,
         rc == 0 and got[0] == got[1], (got, out + err))
    m = manifest(W("g-" + qt.name))
    blob = json.dumps(m)
    scope = {a["tensor_class"]: a for a in m.get("scope", {}).get("assignments", [])}
    ex = scope.get("moe.experts", {})
    bits = {QT.Q8_0: 8.5, QT.Q4_0: 4.5}[qt]
    case("%s scope census: moe.experts=quantized:%s@%s" % (qt.name, qt.name.lower(), bits),
         ex.get("treatment") == "quantized" and ex.get("format") == qt.name.lower() and ex.get("bits_per_weight") == bits,
         scope)
    case("%s head as stored: lm_head quantized" % qt.name,
         scope.get("lm_head", {}).get("format") == qt.name.lower(), scope.get("lm_head"))
    case("%s disclosures: activation_quantization_not_captured, quantized_head_dequantized" % qt.name,
         "activation_quantization_not_captured" in blob and "quantized_head_dequantized" in blob, blob[:400])
    rc, out, err = run("compare", "--reference", W("root"), "--candidate", W("g-" + qt.name), "--own-heads", "--out",
                       W("cmp0-" + qt.name))
    case("%s compare against a root of another tokenizer identity refused" % qt.name,
         refused(rc, out, err) == "panel_mismatch", out + err)
    rc, out, err = run("compare", "--reference", W("root-r"), "--candidate", W("g-" + qt.name), "--out",
                       W("cmp1-" + qt.name))
    case("%s compare without --own-heads refused (the candidate's head is its own): %s" % (qt.name, refused(rc, out, err)),
         rc == 3 and "head" in (out + err), out + err)
    rc, out, err = run("compare", "--reference", W("root-r"), "--candidate", W("g-" + qt.name), "--own-heads", "--out",
                       W("cmp-" + qt.name))
    case("%s compare --own-heads" % qt.name, rc == 0, out + err)
    if rc == 0:
        kl[qt.name] = json.load(open(W("cmp-" + qt.name, "comparison-receipt.json")))["kl"]["mean"]
case("KL(Q8_0) < KL(Q4_0), both > 0: %s" % kl, len(kl) == 2 and 0 < kl["Q8_0"] < kl["Q4_0"], kl)

rc, out, err = capture(W("Q8_0.gguf"), W("g-q8-root"), role="root")
case("a quantized GGUF as --role root refused quantized_root", refused(rc, out, err) == "quantized_root", out + err)


def hostile(label, want_code, **kw):
    path = W("h-%s.gguf" % label.replace(" ", "_"))
    convert(W("m"), out=path, **kw)
    rc, out, err = capture(path, W("h-" + label.replace(" ", "_")))
    got = refused(rc, out, err)
    case("refused %s: %s" % (label, want_code), got == want_code, out + err)


hostile("unsupported architecture", "unsupported_gguf_architecture", arch="falcon")
hostile("glm-dsa metadata labelled glm5-next", "bad_gguf_config", arch="glm5-next")
hostile("missing metadata key", "bad_gguf_config", skip_kv=("attention.kv_lora_rank",))
hostile("contradicting key_length", "bad_gguf_config", extra_kv={"attention.key_length": ("u32", 99)})
hostile("head_count_kv not MLA", "bad_gguf_config", extra_kv={"attention.head_count_kv": ("u32", 2)})
hostile("yarn rope", "bad_gguf_config", extra_kv={"rope.scaling.type": ("str", "yarn")})
hostile("tensor missing", "checkpoint_mismatch", drop=("blk.1.attn_v_b.weight",))
hostile("unexpected tensor", "checkpoint_mismatch", rename={"blk.2.attn_q_a.weight": "blk.2.attn_q_x.weight"})


data = open(W("bf16.gguf"), "rb").read()
open(W("h-trunc.gguf"), "wb").write(data[:len(data) - 4096])
rc, out, err = capture(W("h-trunc.gguf"), W("h-trunc"))
case("refused a truncated GGUF: bad_gguf", refused(rc, out, err) == "bad_gguf", out + err)


def transpose_kb(ts):
    return [(n, (t[0], np.ascontiguousarray(t[1].transpose(0, 2, 1))) if n == "blk.0.attn_k_b.weight" else t, f)
            for n, t, f in ts]


hostile("attn_k_b not transposed", "checkpoint_mismatch", mutate=transpose_kb)


def short_experts(ts):
    return [(n, (t[0], t[1][:-1]) if n == "blk.1.ffn_up_exps.weight" else t, f) for n, t, f in ts]


hostile("expert stack short", "checkpoint_mismatch", mutate=short_experts)

C.finish()
