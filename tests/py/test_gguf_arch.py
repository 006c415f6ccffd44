#!/usr/bin/env python3
"""GGUF capture beyond glm-dsa (issue 18): llama, qwen3, qwen3moe and
deepseek2 GGUFs written by llama.cpp's own converter (convert_hf_to_gguf.py,
llama-cpp-python 0.3.36 sdist) from our tiny fixtures, committed xz-compressed
in tests/vectors/gguf-arch/ (made by its make.py; CI has no converter):

  - BF16: the capture_content_digest equals the safetensors capture's (llama:
    the converter's Q/K row permutation undone, llama3 RoPE recovered from
    rope_freqs.weight; qwen3moe / deepseek2: stacked experts; deepseek2:
    kv_b_proj rebuilt from attn_k_b / attn_v_b, yarn from rope.scaling.*);
  - Q8_0 (the converter's --outtype q8_0): the digest equals the capture of a
    safetensors checkpoint holding gguf-py's dequantized weights (float32,
    bf16 round-to-nearest-even) with the converter's rearrangements undone
    here in numpy;
  - `architectures` and `inspect-model` name the archs that read GGUF;
  - refusals by name: llama3 rope_freqs that the converter's defaults do not
    give, a deepseek2 GGUF without expert_gating_func (llama.cpp would route
    it by softmax), contradicting head lengths, an unknown architecture
    (the message lists the supported ones), glm5-next (its reason).

usage: test_gguf_arch.py BINARY   (needs numpy and gguf; no torch)
"""
import hashlib, json, lzma, os, shutil, struct, subprocess, sys, tempfile

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
HERE = os.path.dirname(os.path.abspath(__file__))
VEC = os.path.join(HERE, "..", "vectors", "gguf-arch")
WORK = tempfile.mkdtemp(prefix="fd-ggufarch-")
passed = failed = 0

try:
    import numpy as np
    import gguf
    import gguf.quants
except ImportError as exc:  # CI installs both
    print("skipped (%s)" % exc)
    sys.exit(0)
sys.path.insert(0, HERE)
from gguf_arch_fixtures import PRESETS, prepare, read_st, write_st  # noqa: E402


def case(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, str(detail)[:700]))


def run(*args):
    p = subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def W(*p):
    return os.path.join(WORK, *p)


def capture(model, panel, out, role="root"):
    rc, o, e = run("capture", "--model", model, "--panel", panel, "--out", out, "--role", role, "--lane", "other",
                   "--dataset-id", "test." + os.path.basename(out), "--dataset-name", "test " + os.path.basename(out),
                   "--cold-run", "c1", "--run-name", "c1")
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
for n in sorted(sums):
    raw = lzma.decompress(open(os.path.join(VEC, n + ".xz"), "rb").read())
    open(W(n), "wb").write(raw)
case("committed GGUFs decompress to their recorded sha256 (%d files)" % len(sums),
     all(hashlib.sha256(open(W(n), "rb").read()).hexdigest() == h for n, h in sums.items()))

# ---------------------------------------------------------------- the converter's rearrangements, undone


def bf16_rne(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def unpermute(w, n_head):
    """the inverse of LlamaModel.permute: reshape(n, 2, r/n/2, c).swapaxes(1, 2)"""
    r = w.shape[0]
    return w.reshape(n_head, r // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


LAYER = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
         "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
         "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm", "attn_q_a": "self_attn.q_a_proj",
         "attn_q_a_norm": "self_attn.q_a_layernorm", "attn_q_b": "self_attn.q_b_proj",
         "attn_kv_a_mqa": "self_attn.kv_a_proj_with_mqa", "attn_kv_a_norm": "self_attn.kv_a_layernorm",
         "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj", "ffn_gate_inp": "mlp.gate",
         "ffn_gate_shexp": "mlp.shared_experts.gate_proj", "ffn_up_shexp": "mlp.shared_experts.up_proj",
         "ffn_down_shexp": "mlp.shared_experts.down_proj"}


def dequantized_checkpoint(gguf_path, model_dir, out_dir):
    """The safetensors checkpoint of what the GGUF decodes to (gguf.quants.dequantize, float32, bf16 RNE) in
    transformers' names and layout; returns the ggml type names of the GGUF's tensors."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    meta, src = read_st(os.path.join(model_dir, "model.safetensors"))
    r = gguf.GGUFReader(gguf_path)
    arch = str(r.fields["general.architecture"].contents())
    g = {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32) for t in r.tensors}
    types = {t.tensor_type.name for t in r.tensors}
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
            for x in range(v.shape[0]):
                out[p + "mlp.experts.%d.%s_proj.weight" % (x, base.split("_")[1])] = v[x]
        elif base == "attn_k_b":  # DeepseekV2Model: kv_b [nh, dn+dv, r] split, k_b transposed
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


# ---------------------------------------------------------------- digests

for p in PRESETS:
    d = W(p)
    subprocess.run([BIN, "fixture", "--preset", p, "--seed", "1", "--out", d], check=True, capture_output=True)
    prepare(p, d)
    panel = os.path.join(d, "panel")
    want, err = capture(d, panel, W("c-" + p))
    got, err2 = capture(W(p + ".bf16.gguf"), panel, W("c-" + p + "-bf16"))
    case("%s: BF16 GGUF (llama.cpp's converter) capture digest == the safetensors capture's" % p,
         want is not None and got == want, (want, got, err, err2))
    types = dequantized_checkpoint(W(p + ".q8_0.gguf"), d, W(p + "-dq"))
    want, err = capture(W(p + "-dq"), panel, W("c-" + p + "-dq"))
    got, err2 = capture(W(p + ".q8_0.gguf"), panel, W("c-" + p + "-q8"), role="quant")
    case("%s: Q8_0 GGUF capture digest == the safetensors of gguf-py's dequantized weights (%s)"
         % (p, "+".join(sorted(types))), "Q8_0" in types and want is not None and got == want, (want, got, err, err2))

# ---------------------------------------------------------------- architectures / inspect-model

rc, out, err = run("architectures", "list", "--json")
try:
    arch = {a["model_type"]: a for a in json.loads(out)["architectures"]}
except (ValueError, KeyError, TypeError):
    arch = {}
want = {"glm_moe_dsa": ["glm-dsa"], "llama": ["llama"], "qwen3": ["qwen3"], "qwen3_moe": ["qwen3moe"],
        "deepseek_v3": ["deepseek2"], "glm5_next": [], "deepseek_v32": []}
case("architectures --json: gguf_architectures per model_type and `gguf` in formats where read",
     rc == 0 and all(arch.get(k, {}).get("gguf_architectures") == v and (("gguf" in arch[k]["formats"]) == bool(v))
                     for k, v in want.items()), out[-600:] + err[-300:])
rc, out, err = run("architectures", "list")
case("architectures (text): the GGUF column names llama.cpp's spelling",
     rc == 0 and "qwen3moe" in out and "deepseek2" in out, out[-800:])
rc, out, err = run("inspect-model", W("llama-tiny.q8_0.gguf"))
case("inspect-model FILE.gguf: general.architecture llama is read as model_type llama, capture reads it",
     rc == 0 and "general.architecture llama is read as model_type llama" in out and "capture --model reads it" in out,
     (out + err)[-600:])
rc, out, err = run("inspect-model", W("qwen3-moe-tiny.bf16.gguf"), "--json")
try:
    mo = json.loads(out)["model"]
except (ValueError, KeyError):
    mo = None
case("inspect-model --json: model {model_type qwen3_moe, capturable true}",
     rc == 0 and mo == {"model_type": "qwen3_moe", "capturable": True}, (mo, err[-300:]))

# ---------------------------------------------------------------- refusals


def try_capture(model, preset):
    out = W("r-" + os.path.basename(model))
    return run("capture", "--model", model, "--panel", W(preset, "panel"), "--out", out, "--role", "root", "--lane",
               "other", "--dataset-id", "test.r", "--dataset-name", "test r", "--cold-run", "c1", "--run-name", "c1")


def kv_offset(data, key):
    """byte offset of the value of metadata key (u64 len, key, u32 type, value)"""
    k = struct.pack("<Q", len(key)) + key.encode()
    i = data.index(k)
    return i + len(k) + 4


def patched(src, name, fn):
    data = bytearray(open(W(src), "rb").read())
    fn(data)
    open(W(name), "wb").write(data)
    return W(name)


def rope_freqs_off(path):
    r = gguf.GGUFReader(path)
    t = [t for t in r.tensors if t.name == "rope_freqs.weight"][0]
    return t.data_offset


off = rope_freqs_off(W("llama-tiny.bf16.gguf"))


def bump_freq(data):  # rope_freqs[4] (the smooth band) * 1.01
    i = off + 4 * 4
    v = struct.unpack_from("<f", data, i)[0]
    struct.pack_into("<f", data, i, v * 1.01)


rc, out, err = try_capture(patched("llama-tiny.bf16.gguf", "l-rope.gguf", bump_freq), "llama-tiny")
code, msg = refused(rc, out, err)
case("llama rope_freqs not given by llama3's converter defaults: unsupported_gguf_rope naming the entry",
     code == "unsupported_gguf_rope" and "rope_freqs.weight[4]" in msg, (code, msg))


def nan_freq(data):  # rope_freqs[0] = NaN
    struct.pack_into("<I", data, off, 0x7fc00000)


rc, out, err = try_capture(patched("llama-tiny.bf16.gguf", "l-nan.gguf", nan_freq), "llama-tiny")
code, msg = refused(rc, out, err)
case("llama rope_freqs entry NaN: bad_gguf_config naming the entry",
     code == "bad_gguf_config" and "rope_freqs.weight[0] = nan" in msg, (code, msg))


def drop_gating(data):
    k = b"deepseek2.expert_gating_func"
    i = data.index(k)
    data[i + len(k) - 1:i + len(k)] = b"x"  # the key renamed: missing


rc, out, err = try_capture(patched("deepseek-v3-tiny.bf16.gguf", "d-gate.gguf", drop_gating), "deepseek-v3-tiny")
code, msg = refused(rc, out, err)
case("deepseek2 without expert_gating_func (llama.cpp would route by softmax): bad_gguf_config naming it",
     code == "bad_gguf_config" and "expert_gating_func" in msg and "softmax" in msg, (code, msg))


def value_len(data):
    struct.pack_into("<I", data, kv_offset(data, "qwen3.attention.value_length"), 16)


rc, out, err = try_capture(patched("qwen3-tiny.bf16.gguf", "q-vl.gguf", value_len), "qwen3-tiny")
code, msg = refused(rc, out, err)
case("qwen3 attention.value_length != key_length: bad_gguf_config naming both",
     code == "bad_gguf_config" and "value_length" in msg and "key_length" in msg, (code, msg))


def unknown_arch(data):
    i = data.index(b"qwen3")  # general.architecture's value comes first
    data[i:i + 5] = b"qwen9"


rc, out, err = try_capture(patched("qwen3-tiny.bf16.gguf", "q-arch.gguf", unknown_arch), "qwen3-tiny")
code, msg = refused(rc, out, err)
case("unknown general.architecture: unsupported_gguf_architecture listing the supported ones",
     code == "unsupported_gguf_architecture" and all(a in msg for a in ("glm-dsa", "llama", "qwen3moe", "deepseek2")),
     (code, msg))
rc, out, err = run("inspect-model", W("q-arch.gguf"))
case("inspect-model of that file: exit 0, says no name table and the refusal a capture would give",
     rc == 0 and "general.architecture qwen9 has no GGUF name table" in out
     and "capture would be refused (unsupported_gguf_architecture)" in out, out[-500:])


def next_arch(data):  # general.architecture deepseek2 -> glm5-next (same length)
    i = data.index(b"deepseek2")
    data[i:i + 9] = b"glm5-next"


rc, out, err = try_capture(patched("deepseek-v3-tiny.bf16.gguf", "n-arch.gguf", next_arch), "deepseek-v3-tiny")
code, msg = refused(rc, out, err)
case("glm5-next GGUF: unsupported_gguf_architecture naming the reason (ssm_a = -exp(A_log), no bit-exact inverse)",
     code == "unsupported_gguf_architecture" and "glm5-next" in msg and "-exp(A_log)" in msg and "inverse" in msg,
     (code, msg))

shutil.rmtree(WORK, ignore_errors=True)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
