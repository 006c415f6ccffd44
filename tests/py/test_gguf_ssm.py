#!/usr/bin/env python3
"""GGUF capture of qwen35 / qwen35moe (issues 18 and 21): llama.cpp's converter
(Qwen3_5TextModel / Qwen3_5MoeTextModel) rewrites ssm_a = -exp(A_log) and the
zero-centred norm weights as 1 + w, reorders the linear-attention value heads
and squeezes conv1d; the engine reads the file as it defines the model
(docs/QUANT-FORMATS.md "GGUF: rewrites read as stored").  The GGUFs are
committed xz-compressed in tests/vectors/gguf-ssm/ (made by its make.py; CI
has no converter), from the checkpoints of tests/py/gguf_ssm_fixtures.py:

  - exact (BF16 norm weights): the BF16 GGUF's capture_content_digest equals
    the safetensors capture's (qwen35-tiny, qwen35-moe-tiny); the Q8_0 GGUF's
    equals the capture of a safetensors checkpoint holding gguf-py's
    dequantized weights with the value-head reorder undone here in numpy;
  - f32norm (F32 norm weights, non-bf16 values): the GGUF captures, its
    digest differs, the dataset discloses gguf_converter_rewrite_as_stored,
    and compare root (safetensors) vs the GGUF gives a small non-zero KL;
  - hostile variants refused by name: ssm_a missing (checkpoint_mismatch
    naming it), conv kernel / value heads contradicting the tensors'
    shapes (mis-shaped), key heads not dividing value heads (bad_config),
    ssm.inner_size not a multiple of the value heads (bad_gguf_config).

usage: test_gguf_ssm.py BINARY   (needs numpy and gguf; no torch)
"""
import hashlib, json, lzma, os, shutil, struct, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
VEC = os.path.join(HERE, "..", "vectors", "gguf-ssm")
sys.path.insert(0, HERE)
from fdcheck import Checks  # noqa: E402

C = Checks("test_gguf_ssm", "fd-ggufssm-")
BIN, WORK, case, run, W = C.bin, C.work, C.case, C.run, C.path

try:
    import numpy as np
    import gguf
    import gguf.quants
except ImportError as exc:  # CI installs both
    print("skipped (%s)" % exc)
    sys.exit(0)
from gguf_ssm_fixtures import VARIANTS, prepare, read_st, write_st, bf16_rne  # noqa: E402


REPO = ("--weights-repository", "test/tiny-qwen35")


def capture(model, panel, out, role="root"):
    rc, o, e = run("capture", "--model", model, "--panel", panel, "--out", out, "--role", role, "--lane", "other",
                   "--dataset-id", "test." + os.path.basename(out), "--dataset-name", "test " + os.path.basename(out),
                   "--cold-run", "c1", "--run-name", "c1", *REPO)
    if rc:
        return None, (o + e)[-600:]
    return json.load(open(os.path.join(out, "fidelity-dataset.json")))["capture"]["capture_content_digest"], ""


def refused(rc, out, err):
    s = out + err
    i = s.find("REFUSED [")
    return (s[i + 9:s.index("]", i)], s[i:]) if rc == 3 and i >= 0 else ("rc=%d" % rc, s[-300:])


# ---------------------------------------------------------------- the committed files
sums = {}
for line in open(os.path.join(VEC, "SHA256SUMS")):
    h, n = line.split()
    sums[n] = h
for n in sums:
    with lzma.open(os.path.join(VEC, n + ".xz")) as f, open(W(n), "wb") as g:
        g.write(f.read())
case("GGUFs (committed) have their recorded sha256 (%d files)" % len(sums),
     len(sums) == 5 and all(hashlib.sha256(open(W(n), "rb").read()).hexdigest() == h for n, h in sums.items()))

# ---------------------------------------------------------------- the reorder undone (numpy)


def unreorder(v, axis, nk, r, hd, first=0):
    """the inverse of _LinearAttentionVReorderBase._reorder_v_heads on v[first:] along axis"""
    v = np.moveaxis(v, axis, 0)
    head, tail = v[:first], v[first:]
    rest = tail.shape[1:]
    tail = tail.reshape(r, nk, hd, *rest).swapaxes(0, 1).reshape(nk * r * hd, *rest)
    return np.moveaxis(np.concatenate([head, tail], axis=0), 0, axis)


LAYER = {"attn_norm": "input_layernorm", "post_attention_norm": "post_attention_layernorm",
         "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
         "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
         "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj", "ffn_gate_inp": "mlp.gate",
         "ffn_gate_shexp": "mlp.shared_expert.gate_proj", "ffn_up_shexp": "mlp.shared_expert.up_proj",
         "ffn_down_shexp": "mlp.shared_expert.down_proj", "ffn_gate_inp_shexp": "mlp.shared_expert_gate",
         "attn_qkv": "linear_attn.in_proj_qkv", "attn_gate": "linear_attn.in_proj_z",
         "ssm_beta": "linear_attn.in_proj_b", "ssm_alpha": "linear_attn.in_proj_a", "ssm_out": "linear_attn.out_proj"}


def dequantized_checkpoint(gguf_path, model_dir, out_dir):
    """The source checkpoint with every quantized GGUF tensor replaced by what gguf-py decodes it to (float32, bf16
    RNE) in transformers' names and layout (the value-head reorder undone); the tensors the converter rewrote
    (ssm_a, 1 + w norms: stored F32, exact for these BF16 sources) are kept as the source has them."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    nk, nv, dk, dv = (cfg["linear_num_key_heads"], cfg["linear_num_value_heads"], cfg["linear_key_head_dim"],
                      cfg["linear_value_head_dim"])
    meta, src = read_st(os.path.join(model_dir, "model.safetensors"))
    r = gguf.GGUFReader(gguf_path)
    types, out = set(), {}
    for t in r.tensors:
        types.add(t.tensor_type.name)
        if t.tensor_type.name in ("F32", "BF16", "F16"):
            continue
        v = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        if t.name in ("token_embd.weight", "output.weight"):
            out["model.embed_tokens.weight" if t.name == "token_embd.weight" else "lm_head.weight"] = v
            continue
        _, l, rest = t.name.split(".", 2)
        base = rest.rsplit(".", 1)[0]
        p = "model.layers.%s." % l
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
    t = dict(src)
    for k, v in out.items():
        dt, shape, _ = src[k]
        t[k] = (dt, shape, bf16_rne(np.ascontiguousarray(v).reshape(shape)).tobytes())
    os.makedirs(out_dir)
    for f in os.listdir(model_dir):
        if f.endswith(".json"):
            shutil.copy(os.path.join(model_dir, f), out_dir)
    write_st(os.path.join(out_dir, "model.safetensors"), meta, t)
    return types, len(out)


def manifest(d):
    return json.load(open(os.path.join(d, "fidelity-dataset.json")))


# ---------------------------------------------------------------- digests
for p, v in VARIANTS:
    d = W(p + "." + v)
    subprocess.run([BIN, "fixture", "--preset", p, "--seed", "1", "--out", d], check=True, capture_output=True)
    prepare(v, d)
    panel = os.path.join(d, "panel")
    want, err = capture(d, panel, W("c-%s.%s" % (p, v)))
    got, err2 = capture(W("%s.%s.bf16.gguf" % (p, v)), panel, W("c-%s.%s-bf16" % (p, v)))
    if v == "exact":
        case("%s: BF16 GGUF (the converter's ssm_a, 1 + w norms, reordered value heads) capture digest == the "
             "safetensors capture's" % p, want is not None and got == want, (want, got, err, err2))
        types, n = dequantized_checkpoint(W("%s.%s.q8_0.gguf" % (p, v)), d, W(p + "-dq"))
        want, err = capture(W(p + "-dq"), panel, W("c-%s-dq" % p))
        got, err2 = capture(W("%s.%s.q8_0.gguf" % (p, v)), panel, W("c-%s-q8" % p), role="quant")
        case("%s: Q8_0 GGUF capture digest == the safetensors of gguf-py's dequantized weights (%d tensors; %s)"
             % (p, n, "+".join(sorted(types))), "Q8_0" in types and want is not None and got == want,
             (want, got, err, err2))
        dis = [x["code"] for x in manifest(W("c-%s-q8" % p)).get("disclosures", [])] if got else []
        case("%s: the Q8_0 GGUF discloses activation_quantization_not_captured and gguf_converter_rewrite_as_stored"
             % p, "activation_quantization_not_captured" in dis and "gguf_converter_rewrite_as_stored" in dis, dis)
        continue
    case("%s %s: the GGUF captures (no refusal), another digest than the safetensors (F32 norms: transformers "
         "rounds w to bf16, the converter stored 1 + w from float32)" % (p, v),
         want is not None and got is not None and got != want, (want, got, err, err2))
    if got is None:
        continue
    dis = {x["code"]: x for x in manifest(W("c-%s.%s-bf16" % (p, v))).get("disclosures", [])}
    x = dis.get("gguf_converter_rewrite_as_stored", {})
    case("%s %s: disclosed gguf_converter_rewrite_as_stored (caveat, affects comparability; names ssm_a and 1 + w)"
         % (p, v), x.get("severity") == "caveat" and x.get("affects_comparability") is True
         and "ssm_a" in x.get("detail", "") and "1 + w" in x.get("detail", ""), dis.keys())
    f32 = dis.get("f32_weights_cast_to_bf16", {}).get("detail", "")
    case("%s %s: the stored 1 + w multipliers are not listed as cast to bf16 (used as stored), the gated norm is"
         % (p, v), "input_layernorm" not in f32 and "model.norm.weight" not in f32, f32)
    rc, out, err = run("compare", "--reference", W("c-%s.%s" % (p, v)), "--candidate", W("c-%s.%s-bf16" % (p, v)),
                       "--out", W("cmp-" + p))
    kl = None
    if rc == 0:
        kl = json.load(open(W("cmp-" + p, "comparison-receipt.json")))["kl"]["mean"]
    case("%s %s: compare root (safetensors) vs the GGUF: a receipt with a small non-zero KL (%s)" % (p, v, kl),
         rc == 0 and kl is not None and 0 < kl < 1e-3, (out + err)[-600:])

# ---------------------------------------------------------------- hostile files
SRC = W("qwen35-tiny.exact.bf16.gguf")
PANEL = W("qwen35-tiny.exact", "panel")


def kv_offset(data, key):
    """byte offset of the value of metadata key (u64 len, key, u32 type, value)"""
    k = struct.pack("<Q", len(key)) + key.encode()
    i = data.index(k)
    return i + len(k) + 4


def patched(name, fn):
    data = bytearray(open(SRC, "rb").read())
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


def try_capture(model):
    return run("capture", "--model", model, "--panel", PANEL, "--out", W("r-" + os.path.basename(model)), "--role",
               "root", "--lane", "other", "--dataset-id", "test.r", "--dataset-name", "test r", "--cold-run", "c1",
               "--run-name", "c1")


for name, fn, want_code, words in (
        ("no-ssm-a.gguf", rename("blk.0.ssm_a", "blk.0.ssm_x"), "checkpoint_mismatch", ("blk.0.ssm_a", "missing")),
        ("conv3.gguf", set_u32("qwen35.ssm.conv_kernel", 3), "checkpoint_mismatch", ("conv1d", "mis-shaped")),
        ("vheads8.gguf", set_u32("qwen35.ssm.time_step_rank", 8), "checkpoint_mismatch", ("mis-shaped",)),
        ("kheads3.gguf", set_u32("qwen35.ssm.group_count", 3), "bad_config", ("linear_num_value_heads",)),
        ("inner.gguf", set_u32("qwen35.ssm.inner_size", 66), "bad_gguf_config", ("qwen35.ssm.inner_size",))):
    rc, out, err = try_capture(patched(name, fn))
    code, msg = refused(rc, out, err)
    case("hostile %s: %s naming %s" % (name, want_code, ", ".join(words)),
         code == want_code and all(w in msg for w in words) and not os.path.exists(W("r-" + name)), (code, msg))

rc, out, err = run("inspect-model", SRC, "--json")
try:
    mo = json.loads(out)["model"]
except (ValueError, KeyError):
    mo = None
case("inspect-model --json of a qwen35 GGUF: {model_type qwen3_5_text, capturable true}",
     rc == 0 and mo == {"model_type": "qwen3_5_text", "capturable": True}, (mo, err[-300:]))

rc, out, err = run("architectures", "list", "--json")
try:
    arch = {a["model_type"]: a for a in json.loads(out)["architectures"]}
except (ValueError, KeyError, TypeError):
    arch = {}
want = {"qwen3_5_text": ["qwen35"], "qwen3_5_moe_text": ["qwen35moe"], "qwen4_exp": [], "glm5_next": ["glm5-next"]}
case("architectures --json: qwen3_5_text reads qwen35, qwen3_5_moe_text qwen35moe, glm5_next glm5-next (gguf in "
     "formats); qwen4_exp none", rc == 0 and all(arch.get(k, {}).get("gguf_architectures") == v
                                        and (("gguf" in arch[k]["formats"]) == bool(v)) for k, v in want.items()),
     {k: arch.get(k, {}).get("gguf_architectures") for k in want})

C.finish()
