#!/usr/bin/env python3
"""GGUF capture of kimi_linear (issue 20: "a GGUF of each, llama.cpp's converter
at BF16"): llama.cpp's converter (conversion/kimi_linear.py KimiLinearModel,
general.architecture kimi-linear) stores ssm_a = -exp(A_log) (float32, on the
bf16 parameter widened), splits kv_b_proj into attn_k_b / attn_v_b, reshapes
the KDA conv1d, renames dt_bias and stacks the experts; the engine reads the
file as it defines the model (docs/QUANT-FORMATS.md "GGUF of the other
architectures").  The GGUFs are committed xz-compressed in
tests/vectors/gguf-kimi/ (made by its make.py; CI has no converter), from the
checkpoint of tests/py/gguf_kimi_fixtures.py (kimi-linear-tiny, seed 1):

  - the BF16 GGUF's capture_content_digest equals the safetensors capture's
    (the converter's float32 -exp(A_log) is the engine's exp(A_log) negated,
    bit for bit, for these values), with every thread count / schedule /
    kernel path tried; and ssm_a is what the forward reads (one bit of it
    flipped changes the digest);
  - the Q8_0 GGUF's equals the capture of a safetensors checkpoint holding
    gguf-py's dequantized weights (kv_b_proj rebuilt from attn_k_b /
    attn_v_b here in numpy, the experts unstacked);
  - disclosures: gguf_converter_rewrite_as_stored (caveat, names ssm_a), and
    activation_quantization_not_captured for the Q8_0 file;
  - hostile variants refused by name: a tensor missing (ssm_a, attn_v_b), a
    metadata key missing (head_count_kv, leading_dense_block_count, kda
    head dim), contradicting (key_length, vocab_size, head_count_kv entry,
    expert_gating_func, expert_weights_norm), conv kernel / KDA head dim
    contradicting the tensors (checkpoint_mismatch, mis-shaped).

usage: test_gguf_kimi.py BINARY   (needs numpy and gguf; no torch)
"""
import hashlib, json, lzma, os, shutil, struct, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
VEC = os.path.join(HERE, "..", "vectors", "gguf-kimi")
sys.path.insert(0, HERE)
from fdcheck import Checks  # noqa: E402

C = Checks("test_gguf_kimi", "fd-ggufkimi-")
BIN, WORK, case, run, W = C.bin, C.work, C.case, C.run, C.path

try:
    import numpy as np
    import gguf
    import gguf.quants
except ImportError as exc:  # CI installs both
    print("skipped (%s)" % exc)
    sys.exit(0)
from gguf_kimi_fixtures import PRESET, prepare  # noqa: E402
from gguf_ssm_fixtures import read_st, write_st, bf16_rne  # noqa: E402


def capture(model, panel, out, role="root", extra=()):
    rc, o, e = run("capture", "--model", model, "--panel", panel, "--out", out, "--role", role, "--lane", "other", *extra,
                   "--dataset-id", "test." + os.path.basename(out), "--dataset-name", "test " + os.path.basename(out),
                   "--cold-run", "c1", "--run-name", "c1", "--weights-repository", "test/tiny-kimi-linear")
    if rc:
        return None, (o + e)[-600:]
    return json.load(open(os.path.join(out, "fidelity-dataset.json")))["capture"]["capture_content_digest"], ""


def refused(rc, out, err):
    s = out + err
    i = s.find("REFUSED [")
    return (s[i + 9:s.index("]", i)], s[i:]) if rc == 3 and i >= 0 else ("rc=%d" % rc, s[-300:])


def disclosures(d):
    return {x["code"]: x for x in json.load(open(os.path.join(d, "fidelity-dataset.json"))).get("disclosures", [])}


# ---------------------------------------------------------------- the committed files
sums = {}
for line in open(os.path.join(VEC, "SHA256SUMS")):
    h, n = line.split()
    sums[n] = h
for n in sums:
    with lzma.open(os.path.join(VEC, n + ".xz")) as f, open(W(n), "wb") as g:
        g.write(f.read())
case("GGUFs (committed) have their recorded sha256 (%d files)" % len(sums),
     len(sums) == 2 and all(hashlib.sha256(open(W(n), "rb").read()).hexdigest() == h for n, h in sums.items()))
BF16, Q8 = W(PRESET + ".bf16.gguf"), W(PRESET + ".q8_0.gguf")

# ---------------------------------------------------------------- the source checkpoint
D = W(PRESET)
subprocess.run([BIN, "fixture", "--preset", PRESET, "--seed", "1", "--out", D], check=True, capture_output=True)
prepare(D)
PANEL = os.path.join(D, "panel")
want, err = capture(D, PANEL, W("c-st"))
got, err2 = capture(BF16, PANEL, W("c-bf16"))
case("BF16 GGUF (the converter's ssm_a, attn_k_b / attn_v_b, reshaped conv1d, stacked experts) capture digest == "
     "the safetensors capture's", want is not None and got == want, (want, got, err, err2))
x = disclosures(W("c-bf16")).get("gguf_converter_rewrite_as_stored", {}) if got else {}
case("BF16 GGUF: disclosed gguf_converter_rewrite_as_stored (caveat, affects comparability; names ssm_a)",
     x.get("severity") == "caveat" and x.get("affects_comparability") is True and "ssm_a" in x.get("detail", ""), x)
case("the safetensors capture has no gguf_converter_rewrite_as_stored",
     want is not None and "gguf_converter_rewrite_as_stored" not in disclosures(W("c-st")))
rc, out, err = run("compare", "--reference", W("c-st"), "--candidate", W("c-bf16"), "--out", W("cmp-bf16"))
klb = json.load(open(W("cmp-bf16", "comparison-receipt.json")))["kl"]["mean"] if rc == 0 else None
case("compare root (safetensors) vs the BF16 GGUF: KL mean 0 (%s)" % klb, rc == 0 and klb == 0, (out + err)[-600:])
for i, extra in enumerate((["--threads", 1], ["--threads", 2], ["--threads", 3], ["--schedule", "layer-outer", "--threads", 1],
                           ["--schedule", "layer-outer", "--threads", 2], ["--kernel", "scalar", "--threads", 2])):
    g, err3 = capture(BF16, PANEL, W("c-bf16-%d" % i), extra=extra)
    case("BF16 GGUF digest with %s == the safetensors capture's" % " ".join(map(str, extra)),
         want is not None and g == want, (want, g, err3))

# ---------------------------------------------------------------- Q8_0 vs gguf-py's dequantized weights
P = "model.layers.%s."
LAYER = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
         "attn_output": "self_attn.o_proj", "ssm_f_a": "self_attn.f_a_proj", "ssm_f_b": "self_attn.f_b_proj",
         "ssm_beta": "self_attn.b_proj", "ssm_g_a": "self_attn.g_a_proj", "ssm_g_b": "self_attn.g_b_proj",
         "attn_kv_a_mqa": "self_attn.kv_a_proj_with_mqa",
         "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
         "ffn_gate_inp": "block_sparse_moe.gate",
         "ffn_gate_shexp": "block_sparse_moe.shared_experts.gate_proj",
         "ffn_up_shexp": "block_sparse_moe.shared_experts.up_proj",
         "ffn_down_shexp": "block_sparse_moe.shared_experts.down_proj"}
EXPERT = {"gate": "w1", "up": "w3", "down": "w2"}  # save_pretrained's spelling of the experts


def dequantized_checkpoint(gguf_path, model_dir, out_dir):
    """The source checkpoint with every GGUF tensor stored in neither F32 nor BF16 replaced by what gguf-py decodes
    it to (float32, then bf16 RNE) in transformers' names and layout; F32 / BF16 tensors (exact, or ssm_a, the
    rewrite read as stored) are kept as the source has them."""
    meta, src = read_st(os.path.join(model_dir, "model.safetensors"))
    r = gguf.GGUFReader(gguf_path)
    types, out, kvb = set(), {}, {}
    for t in r.tensors:
        types.add(t.tensor_type.name)
        if t.tensor_type.name in ("F32", "BF16") and not t.name.endswith(("attn_k_b.weight", "attn_v_b.weight")):
            continue
        v = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        if t.name in ("token_embd.weight", "output.weight"):
            out["model.embed_tokens.weight" if t.name == "token_embd.weight" else "lm_head.weight"] = v
            continue
        _, l, rest = t.name.split(".", 2)
        base = rest.rsplit(".", 1)[0]
        if base in ("attn_k_b", "attn_v_b"):
            kvb.setdefault(l, {})[base] = (v, t.tensor_type.name)
            continue
        if base.endswith("_exps"):
            part = base.split("_")[1]
            for e in range(v.shape[0]):
                out[P % l + "block_sparse_moe.experts.%d.%s.weight" % (e, EXPERT[part])] = v[e]
        else:
            out[P % l + LAYER[base] + ".weight"] = v
    for l, kv in kvb.items():  # kv_b[h] = [attn_k_b[h]^T ; attn_v_b[h]]
        (kb, tk), (vb, tv) = kv["attn_k_b"], kv["attn_v_b"]
        if tk in ("F32", "BF16") and tv in ("F32", "BF16"):
            continue
        out[P % l + "self_attn.kv_b_proj.weight"] = np.concatenate([kb.transpose(0, 2, 1), vb], axis=1).reshape(
            -1, kb.shape[1])
    t = dict(src)
    for k, v in out.items():
        dt, shape, _ = src[k]
        t[k] = ("BF16", shape, bf16_rne(np.ascontiguousarray(v).reshape(shape)).tobytes())
    os.makedirs(out_dir)
    for f in os.listdir(model_dir):
        if f.endswith(".json"):
            shutil.copy(os.path.join(model_dir, f), out_dir)
    write_st(os.path.join(out_dir, "model.safetensors"), meta, t)
    return types, len(out)


types, n = dequantized_checkpoint(Q8, D, W("dq"))
want, err = capture(W("dq"), PANEL, W("c-dq"))
got, err2 = capture(Q8, PANEL, W("c-q8"), role="quant")
case("Q8_0 GGUF capture digest == the safetensors of gguf-py's dequantized weights (%d tensors; %s)"
     % (n, "+".join(sorted(types))), "Q8_0" in types and want is not None and got == want, (want, got, err, err2))
dis = disclosures(W("c-q8")) if got else {}
case("Q8_0 GGUF discloses activation_quantization_not_captured and gguf_converter_rewrite_as_stored",
     "activation_quantization_not_captured" in dis and "gguf_converter_rewrite_as_stored" in dis, list(dis))
rc, out, err = run("compare", "--reference", W("c-st"), "--candidate", W("c-q8"), "--out", W("cmp"), "--own-heads")
kl = json.load(open(W("cmp", "comparison-receipt.json")))["kl"]["mean"] if rc == 0 else None
case("compare root (safetensors) vs the Q8_0 GGUF (its own Q8_0 head: --own-heads): a receipt with a small non-zero KL (%s)" % kl,
     rc == 0 and kl is not None and 0 < kl < 1e-2, (out + err)[-600:])

# ---------------------------------------------------------------- hostile files


def kv_offset(data, key):
    """byte offset of the value of metadata key (u64 len, key, u32 type, value)"""
    k = struct.pack("<Q", len(key)) + key.encode()
    i = data.index(k)
    return i + len(k) + 4


def patched(name, fn):
    data = bytearray(open(BF16, "rb").read())
    fn(data)
    open(W(name), "wb").write(data)
    return W(name)


def set_u32(key, val):
    def f(data):
        i = kv_offset(data, key)
        data[i:i + 4] = struct.pack("<I", val)
    return f


def rename(old, new):
    def f(data):
        k = struct.pack("<Q", len(old)) + old.encode()
        i = data.index(k)
        data[i + 8:i + 8 + len(old)] = new.encode()
    return f


def set_i32_elem(key, idx, val):
    """element idx of an INT32 array key (u32 type, u64 count, then the values)"""
    def f(data):
        i = kv_offset(data, key) + 4 + 8 + 4 * idx
        data[i:i + 4] = struct.pack("<i", val)
    return f


ref_bf16 = json.load(open(W("c-bf16", "fidelity-dataset.json")))["capture"]["capture_content_digest"] if os.path.exists(
    W("c-bf16")) else None
A = "kimi-linear."


def flip_ssm_a_bit(data):
    """mantissa bit 16 of blk.0.ssm_a's first value (F32, little-endian: a relative change of 2^-7)"""
    r = gguf.GGUFReader(BF16)
    t = [t for t in r.tensors if t.name == "blk.0.ssm_a"][0]
    data[t.data_offset + 2] ^= 1


m = patched("ssm-a-bit.gguf", flip_ssm_a_bit)
g, err = capture(m, PANEL, W("c-ssmabit"))
case("ssm_a is what the forward reads: one mantissa bit of blk.0.ssm_a flipped, the digest changes",
     g is not None and want is not None and g != ref_bf16, (g, ref_bf16, err))

for name, fn, want_code, words in (
        ("no-ssm-a.gguf", rename("blk.0.ssm_a", "blk.0.ssm_x"), "checkpoint_mismatch", ("blk.0.ssm_a", "missing")),
        ("no-kv-b.gguf", rename("blk.1.attn_v_b.weight", "blk.1.attn_v_x.weight"), "checkpoint_mismatch",
         ("blk.1.attn_v_b.weight", "missing")),
        ("no-conv.gguf", rename("blk.2.ssm_conv1d_k.weight", "blk.2.ssm_conv1d_x.weight"), "checkpoint_mismatch",
         ("blk.2.ssm_conv1d_k.weight", "missing")),
        ("no-layer-kinds.gguf", rename(A + "attention.head_count_kv", A + "attention.head_count_kx"), "bad_gguf_config",
         (A + "attention.head_count_kv", "missing")),
        ("no-dense.gguf", rename(A + "leading_dense_block_count", A + "leading_dense_block_coun_"),
         "bad_gguf_config", (A + "leading_dense_block_count",)),
        ("no-kda-dim.gguf", rename(A + "kda.head_dim", A + "kda.head_di_"), "bad_gguf_config", (A + "kda.head_dim", "missing")),
        ("keylen.gguf", set_u32(A + "attention.key_length", 33), "bad_gguf_config", (A + "attention.key_length", "33")),
        ("vocab.gguf", set_u32(A + "vocab_size", 261), "bad_gguf_config", (A + "vocab_size", "token_embd.weight")),
        ("kinds.gguf", set_i32_elem(A + "attention.head_count_kv", 1, 4), "bad_gguf_config",
         (A + "attention.head_count_kv", "0 (KDA) or 1")),
        ("conv3.gguf", set_u32(A + "ssm.conv_kernel", 3), "checkpoint_mismatch", ("conv1d", "mis-shaped")),
        ("kdadim.gguf", set_u32(A + "kda.head_dim", 8), "checkpoint_mismatch", ("mis-shaped",)),
        ("kinds-swap.gguf", set_i32_elem(A + "attention.head_count_kv", 0, 1), "checkpoint_mismatch",
         ("blk.0.attn_kv_a_mqa.weight", "missing"))):
    model = patched(name, fn)
    rc, out, err = run("capture", "--model", model, "--panel", PANEL, "--out", W("r-" + name), "--role", "root",
                       "--lane", "other", "--dataset-id", "test.r", "--dataset-name", "test r", "--cold-run", "c1",
                       "--run-name", "c1")
    code, msg = refused(rc, out, err)
    case("hostile %s: %s naming %s" % (name, want_code, ", ".join(words)),
         code == want_code and all(w in msg for w in words) and not os.path.exists(W("r-" + name)), (code, msg))

# optional / silent keys: expert_gating_func absent = sigmoid; present, anything but 2 is refused; an explicit
# expert_weights_norm false is refused (llama.cpp's kimi-linear always renormalises)


def with_kv(name, key, value, vtype):
    """BF16 rewritten by gguf-py (GGUFReader -> GGUFWriter, every key and tensor copied) with one key added"""
    r = gguf.GGUFReader(BF16)
    w = gguf.GGUFWriter(W(name), arch=A[:-1])
    for k, fl in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture":
            continue
        t = fl.types[0]
        w.add_key_value(k, fl.contents(), t, sub_type=fl.types[-1] if t == gguf.GGUFValueType.ARRAY else None)
    w.add_key_value(key, value, vtype)
    for t in r.tensors:
        w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return W(name)


m = with_kv("same.gguf", "general.fd_test", 1, gguf.GGUFValueType.UINT32)
g, err = capture(m, PANEL, W("c-same"))
case("gguf-py's rewrite of the BF16 GGUF (one unrelated key added): the same digest", g == ref_bf16, (g, ref_bf16, err))
m = with_kv("gating2.gguf", A + "expert_gating_func", 2, gguf.GGUFValueType.UINT32)
g, err = capture(m, PANEL, W("c-gating2"))
case("expert_gating_func 2 (sigmoid) written: the same digest as without it", g == ref_bf16, (g, ref_bf16, err))
for name, key, value, vtype, words in (
        ("gating1.gguf", A + "expert_gating_func", 1, gguf.GGUFValueType.UINT32, ("expert_gating_func", "sigmoid")),
        ("norm0.gguf", A + "expert_weights_norm", False, gguf.GGUFValueType.BOOL, ("expert_weights_norm", "renormalises")),
        ("rope.gguf", A + "rope.scaling.type", "yarn", gguf.GGUFValueType.STRING, ("rope.scaling.type", "no RoPE"))):
    m = with_kv(name, key, value, vtype)
    rc, out, err = run("capture", "--model", m, "--panel", PANEL, "--out", W("r-" + name), "--role", "root",
                       "--lane", "other", "--dataset-id", "test.r", "--dataset-name", "test r", "--cold-run", "c1",
                       "--run-name", "c1")
    code, msg = refused(rc, out, err)
    case("hostile %s: bad_gguf_config naming %s" % (name, ", ".join(words)),
         code == "bad_gguf_config" and all(w in msg for w in words) and not os.path.exists(W("r-" + name)), (code, msg))

rc, out, err = run("inspect-model", BF16, "--json")
try:
    mo = json.loads(out)["model"]
except (ValueError, KeyError):
    mo = None
case("inspect-model --json of a kimi-linear GGUF: {model_type kimi_linear, capturable true}",
     rc == 0 and mo == {"model_type": "kimi_linear", "capturable": True}, (mo, err[-300:]))

C.finish()
