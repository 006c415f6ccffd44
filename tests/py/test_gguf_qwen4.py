#!/usr/bin/env python3
"""GGUF capture of qwen4exp (issue 21): llama.cpp's converter
(conversion/qwen4exp.py Qwen4ExpTextModel, over qwen35moe's rewrites) splits
index_qk_proj into indexer.q_proj / indexer.k_proj and stores the
hyper-connection hc_norm and indexer q/k_layernorm weights as 1 + w, besides
qwen35moe's ssm_a, 1 + w norms, value-head reorder and conv1d squeeze; the
engine reads the file as it defines the model (docs/QUANT-FORMATS.md "GGUF:
rewrites read as stored").  The GGUFs are committed xz-compressed in
tests/vectors/gguf-qwen4/ (made by its make.py; CI has no converter), from the
checkpoint of tests/py/gguf_qwen4_fixtures.py (qwen4-exp-tiny, BF16 norm
weights):

  - the BF16 GGUF's capture_content_digest equals the safetensors capture's
    (and with --threads 2 / --schedule layer-outer);
  - the Q8_0 GGUF's equals the capture of a safetensors checkpoint holding
    gguf-py's dequantized weights (value-head reorder undone and
    index_qk_proj concatenated back here in numpy);
  - both disclose gguf_converter_rewrite_as_stored (the Q8_0 one also
    activation_quantization_not_captured), as qwen35's;
  - hostile variants refused by name: attention.compress_ratios 0 on an
    attention layer (what the converter writes when transformers' AutoConfig
    spells the layers indexed_attention), indexer.k_proj or hc_attn_norm
    missing, the indexer head count contradicting q_proj's rows,
    hyper_connection.count 3, hyper_connection.low_rank missing.

usage: test_gguf_qwen4.py BINARY   (needs numpy and gguf; no torch)
"""
import hashlib, json, lzma, os, shutil, struct, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
VEC = os.path.join(HERE, "..", "vectors", "gguf-qwen4")
sys.path.insert(0, HERE)
from fdcheck import Checks  # noqa: E402

C = Checks("test_gguf_qwen4", "fd-ggufq4-")
BIN, WORK, case, run, W = C.bin, C.work, C.case, C.run, C.path

try:
    import numpy as np
    import gguf
    import gguf.quants
except ImportError as exc:  # CI installs both
    print("skipped (%s)" % exc)
    sys.exit(0)
from gguf_ssm_fixtures import read_st, write_st, bf16_rne  # noqa: E402
from gguf_qwen4_fixtures import PRESET, prepare  # noqa: E402


def capture(model, panel, out, role="root", *extra):
    rc, o, e = run("capture", "--model", model, "--panel", panel, "--out", out, "--role", role, "--lane", "other",
                   "--dataset-id", "test." + os.path.basename(out), "--dataset-name", "test " + os.path.basename(out),
                   "--cold-run", "c1", "--run-name", "c1", "--weights-repository", "test/tiny-qwen4", *extra)
    if rc:
        return None, (o + e)[-600:]
    return json.load(open(os.path.join(out, "fidelity-dataset.json")))["capture"]["capture_content_digest"], ""


def refused(rc, out, err):
    s = out + err
    i = s.find("REFUSED [")
    return (s[i + 9:s.index("]", i)], s[i:]) if rc == 3 and i >= 0 else ("rc=%d" % rc, s[-300:])


def disclosures(out):
    return {x["code"]: x for x in json.load(open(os.path.join(out, "fidelity-dataset.json"))).get("disclosures", [])}


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

# ---------------------------------------------------------------- the rewrites undone in numpy (the Q8_0 oracle)


def unreorder(v, axis, nk, r, hd, first=0):
    """the inverse of _LinearAttentionVReorderBase._reorder_v_heads on v[first:] along axis"""
    v = np.moveaxis(v, axis, 0)
    head, tail = v[:first], v[first:]
    rest = tail.shape[1:]
    tail = tail.reshape(r, nk, hd, *rest).swapaxes(0, 1).reshape(nk * r * hd, *rest)
    return np.moveaxis(np.concatenate([head, tail], axis=0), 0, axis)


LAYER = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
         "attn_output": "self_attn.o_proj", "ffn_gate_inp": "mlp.gate",
         "ffn_gate_shexp": "mlp.shared_expert.gate_proj", "ffn_up_shexp": "mlp.shared_expert.up_proj",
         "ffn_down_shexp": "mlp.shared_expert.down_proj", "ffn_gate_inp_shexp": "mlp.shared_expert_gate",
         "attn_qkv": "linear_attn.in_proj_qkv", "attn_gate": "linear_attn.in_proj_z",
         "ssm_beta": "linear_attn.in_proj_b", "ssm_alpha": "linear_attn.in_proj_a", "ssm_out": "linear_attn.out_proj",
         "hc_attn_down": "attn_hyper_connection.input_mix_weight_down",
         "hc_attn_up": "attn_hyper_connection.input_mix_weight_up",
         "hc_attn_inject": "attn_hyper_connection.block_inject_weight",
         "hc_ffn_down": "mlp_hyper_connection.input_mix_weight_down",
         "hc_ffn_up": "mlp_hyper_connection.input_mix_weight_up",
         "hc_ffn_inject": "mlp_hyper_connection.block_inject_weight"}
TOP = {"token_embd.weight": "model.embed_tokens.weight", "output.weight": "lm_head.weight",
       "output_hc_down.weight": "model.hyper_connection_mixer.input_mix_weight_down.weight",
       "output_hc_up.weight": "model.hyper_connection_mixer.input_mix_weight_up.weight"}


def dequantized_checkpoint(gguf_path, model_dir, out_dir):
    """The source checkpoint with every quantized (or F16) GGUF tensor replaced by what gguf-py decodes it to
    (float32, bf16 RNE) in transformers' names and layout; the tensors the converter rewrote as stored F32 (ssm_a,
    1 + w norms: exact for these BF16 sources) are kept as the source has them."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    nk, nv, dk, dv = (cfg["linear_num_key_heads"], cfg["linear_num_value_heads"], cfg["linear_key_head_dim"],
                      cfg["linear_value_head_dim"])
    meta, src = read_st(os.path.join(model_dir, "model.safetensors"))
    r = gguf.GGUFReader(gguf_path)
    types, out, parts = set(), {}, {}
    for t in r.tensors:
        types.add(t.tensor_type.name)
        if t.tensor_type.name in ("F32", "BF16"):
            continue
        v = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        if t.name in TOP:
            out[TOP[t.name]] = v
            continue
        _, l, rest = t.name.split(".", 2)
        base = rest.rsplit(".", 1)[0]
        p = "model.layers.%s." % l
        if base in ("indexer.q_proj", "indexer.k_proj"):
            parts.setdefault(l, {})[base] = v
            continue
        if base == "attn_qkv":
            v = unreorder(v, 0, nk, nv // nk, dv, 2 * nk * dk)
        elif base == "attn_gate":
            v = unreorder(v, 0, nk, nv // nk, dv)
        elif base in ("ssm_beta", "ssm_alpha"):
            v = unreorder(v, 0, nk, nv // nk, 1)
        elif base == "ssm_out":
            v = unreorder(v, 1, nk, nv // nk, dv)
        if base.endswith("_exps"):
            part = base.split("_")[1]
            for x in range(v.shape[0]):
                out[p + "mlp.experts.%d.%s_proj.weight" % (x, part)] = v[x]
        else:
            out[p + LAYER[base] + ".weight"] = v
    for l, qk in parts.items():  # index_qk_proj = [q_proj; k_proj] (the converter's split, rows)
        out["model.layers.%s.self_attn.indexer.index_qk_proj.weight" % l] = np.concatenate(
            [qk["indexer.q_proj"], qk["indexer.k_proj"]], axis=0)
    t = dict(src)
    for k, v in out.items():
        dt, shape, _ = src[k]
        t[k] = (dt, shape, bf16_rne(np.ascontiguousarray(v).reshape(shape)).tobytes())
    os.makedirs(out_dir)
    for f in os.listdir(model_dir):
        if f.endswith(".json"):
            shutil.copy(os.path.join(model_dir, f), out_dir)
    write_st(os.path.join(out_dir, "model.safetensors"), meta, t)
    return types, len(out), len(parts)


# ---------------------------------------------------------------- digests
d = W(PRESET)
subprocess.run([BIN, "fixture", "--preset", PRESET, "--seed", "1", "--out", d], check=True, capture_output=True)
prepare(d)
PANEL = os.path.join(d, "panel")
want, err = capture(d, PANEL, W("c-st"))
got, err2 = capture(BF16, PANEL, W("c-bf16"))
case("BF16 GGUF (index_qk_proj split, hc_norm / indexer norms / q,k norms as 1 + w, ssm_a, reordered value heads) "
     "capture digest == the safetensors capture's", want is not None and got == want, (want, got, err, err2))
for extra in (("--threads", "2"), ("--schedule", "layer-outer")):
    g2, e3 = capture(BF16, PANEL, W("c-bf16" + extra[1]), "root", *extra)
    case("BF16 GGUF with %s: the same digest" % " ".join(extra), want is not None and g2 == want, (want, g2, e3))
if got:
    x = disclosures(W("c-bf16")).get("gguf_converter_rewrite_as_stored", {})
    case("BF16 GGUF: disclosed gguf_converter_rewrite_as_stored (caveat, affects comparability; names hc_norm and the "
         "index_qk_proj split)", x.get("severity") == "caveat" and x.get("affects_comparability") is True
         and "hc_norm" in x.get("detail", "") and "index_qk_proj" in x.get("detail", ""), x)
    f32 = disclosures(W("c-bf16")).get("f32_weights_cast_to_bf16", {}).get("detail", "")
    case("BF16 GGUF: the stored 1 + w multipliers (hc_norm, indexer norms) are not listed as cast to bf16",
         "hc_norm" not in f32 and "layernorm" not in f32, f32)

types, n, nix = dequantized_checkpoint(Q8, d, W("dq"))
want, err = capture(W("dq"), PANEL, W("c-dq"))
got, err2 = capture(Q8, PANEL, W("c-q8"), "quant")
case("Q8_0 GGUF capture digest == the safetensors of gguf-py's dequantized weights (%d tensors, %d index_qk_proj "
     "concatenated; %s)" % (n, nix, "+".join(sorted(types))),
     "Q8_0" in types and nix == 2 and want is not None and got == want, (want, got, err, err2))
dis = disclosures(W("c-q8")) if got else {}
case("Q8_0 GGUF discloses activation_quantization_not_captured and gguf_converter_rewrite_as_stored",
     "activation_quantization_not_captured" in dis and "gguf_converter_rewrite_as_stored" in dis, list(dis))

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


def ratio_zero(layer):
    def f(data):  # the array: u32 element type, u64 count, then the elements (int32 here)
        i = kv_offset(data, "qwen4exp.attention.compress_ratios")
        assert struct.unpack("<I", data[i:i + 4])[0] == 5
        data[i + 12 + 4 * layer:i + 16 + 4 * layer] = struct.pack("<i", 0)
    return f


def rename(old, new):
    def f(data):
        k = struct.pack("<Q", len(old)) + old.encode()
        i = data.index(k)
        data[i + 8:i + 8 + len(old)] = new.encode()
    return f


for name, fn, want_code, words in (
        ("ratio0.gguf", ratio_zero(1), "bad_gguf_config",
         ("qwen4exp.attention.compress_ratios", "attention layer 1", "indexed_attention")),
        ("no-kproj.gguf", rename("blk.1.indexer.k_proj.weight", "blk.1.indexer.k_proX.weight"), "checkpoint_mismatch",
         ("blk.1.indexer.k_proj.weight", "missing")),
        ("no-hcnorm.gguf", rename("blk.0.hc_attn_norm.weight", "blk.0.hc_attn_norX.weight"), "checkpoint_mismatch",
         ("blk.0.hc_attn_norm.weight", "missing")),
        ("ixheads3.gguf", set_u32("qwen4exp.attention.indexer.head_count", 3), "checkpoint_mismatch",
         ("index_qk_proj", "mis-shaped")),
        ("hc3.gguf", set_u32("qwen4exp.hyper_connection.count", 3), "bad_config", ("hc_count",)),
        ("no-rank.gguf", rename("qwen4exp.hyper_connection.low_rank", "qwen4exp.hyper_connection.low_ranx"),
         "bad_gguf_config", ("qwen4exp.hyper_connection.low_rank",))):
    m = patched(name, fn)
    rc, out, err = run("capture", "--model", m, "--panel", PANEL, "--out", W("r-" + name), "--role", "root", "--lane",
                       "other", "--dataset-id", "test.r", "--dataset-name", "test r", "--cold-run", "c1", "--run-name",
                       "c1")
    code, msg = refused(rc, out, err)
    case("hostile %s: %s naming %s" % (name, want_code, ", ".join(words)),
         code == want_code and all(w in msg for w in words) and not os.path.exists(W("r-" + name)), (code, msg))

rc, out, err = run("inspect-model", BF16, "--json")
try:
    mo = json.loads(out)["model"]
except (ValueError, KeyError):
    mo = None
case("inspect-model --json of a qwen4exp GGUF: {model_type qwen4_exp_text, capturable true}",
     rc == 0 and mo == {"model_type": "qwen4_exp_text", "capturable": True}, (mo, err[-300:]))

rc, out, err = run("architectures", "list", "--json")
try:
    arch = {a["model_type"]: a for a in json.loads(out)["architectures"]}
except (ValueError, KeyError, TypeError):
    arch = {}
want = {"qwen4_exp_text": ["qwen4exp"], "qwen4_exp": []}
case("architectures --json: qwen4_exp_text reads qwen4exp (gguf in formats); the composite qwen4_exp none",
     rc == 0 and all(arch.get(k, {}).get("gguf_architectures") == v and (("gguf" in arch[k]["formats"]) == bool(v))
                     for k, v in want.items()), {k: arch.get(k, {}).get("gguf_architectures") for k in want})

C.finish()
