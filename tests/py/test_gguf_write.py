#!/usr/bin/env python3
"""fidelity quantize --format gguf (issue 18, docs/QUANT-FORMATS.md "Writing a
GGUF"): our tiny glm_moe_dsa fixture written as llama.cpp's converter lays it
out, checked against gguf-py (llama.cpp's Python package, a test oracle only):

  - BF16: the capture digest of the written GGUF equals the safetensors
    capture's (window-outer and layer-outer); gguf-py's reader reads the
    metadata the config hook needs, equal to config.json's values;
  - Q8_0 / Q4_0: every tensor's bytes equal gguf.quants.quantize of the same
    float32 weights (ggml's reference quantizers, bit for bit), rows that are
    not whole blocks F16 (the converter's fallback), the F32 tensors equal
    the BF16 file's; names and shapes equal; captured as
    --role quant and compared: 0 < KL(Q8_0) < KL(Q4_0);
  - --match: only the matching tensors quantized;
  - glm-dsa, minimax-m2, deepseek2, llama (q/k permuted, llama3 rope_freqs),
    qwen3, qwen3moe: our BF16 and Q8_0 files equal llama.cpp's converter's
    (tests/vectors/gguf-arch) tensor for tensor and key for key, and the BF16
    ones capture to the safetensors digest;
  - refusals: an architecture without a GGUF writer, an existing --dst,
    a bad --type (usage), nothing left behind.

usage: test_gguf_write.py BINARY   (needs numpy and gguf)"""
import json, os, subprocess, sys, tempfile

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
WORK = tempfile.mkdtemp(prefix="fd-ggufw-")
passed = failed = 0
try:
    import numpy as np
    import gguf
    import gguf.quants
    from gguf import GGMLQuantizationType as QT
except ImportError as exc:  # CI installs both
    print("skipped (%s)" % exc)
    sys.exit(0)


def case(name, ok, detail=""):
    global passed, failed
    passed, failed = passed + bool(ok), failed + (not ok)
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "  " + str(detail)[:900]))
    return ok


def run(*args):
    p = subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def W(*p):
    return os.path.join(WORK, *p)


def capture(model, out, role="root", extra=()):
    rc, o, e = run("capture", "--model", model, "--panel", W("m", "panel"), "--out", out, "--role", role, "--lane",
                   "other", "--dataset-id", "test." + os.path.basename(out), "--dataset-name", "t", "--cold-run", "c1",
                   "--run-name", "c1", *extra)
    d = json.load(open(os.path.join(out, "fidelity-dataset.json")))["capture"]["capture_content_digest"] if rc == 0 else None
    return rc, d, o + e


def refused(rc, out):
    i = out.find("REFUSED [")
    return out[i + 9:out.index("]", i)] if rc == 3 and i >= 0 else "rc=%d %s" % (rc, out[-300:])


def tensors(path):
    r = gguf.GGUFReader(path)
    return r, {t.name: t for t in r.tensors}


def floats(t):
    """A BF16 / F32 GGUF tensor as float32 in its numpy shape (ne reversed)."""
    shape = tuple(int(x) for x in reversed(t.shape))
    if t.tensor_type == QT.F32:
        return np.asarray(t.data, dtype=np.float32).reshape(shape)
    raw = np.asarray(t.data).view(np.uint16).reshape(shape)
    return (raw.astype(np.uint32) << 16).view(np.float32)


def field(r, key):
    f = r.fields[key]
    if f.types and f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode()
    v = [f.parts[i].tolist()[0] for i in f.data]
    return v[0] if len(v) == 1 else v


rc, out, err = run("fixture", "--preset", "tiny", "--seed", 1, "--out", W("m"))
case("tiny fixture", rc == 0, err)
cfg = json.load(open(W("m", "config.json")))
rc, want, log = capture(W("m"), W("root"))
case("safetensors root capture", rc == 0, log)

# --- BF16: the same digest ----------------------------------------------------------------
rc, out, err = run("quantize", "--format", "gguf", "--type", "bf16", "--src", W("m"), "--dst", W("bf16.gguf"))
rep = json.loads(out) if rc == 0 else {}
case("quantize --format gguf --type bf16 writes the file and its summary", rc == 0 and rep.get("architecture") ==
     "glm-dsa" and rep.get("tensors_quantized") == 0 and rep.get("bytes") == os.path.getsize(W("bf16.gguf")), out + err)
rc, got, log = capture(W("bf16.gguf"), W("g-bf16"))
case("BF16 GGUF we wrote: capture digest == safetensors capture digest", rc == 0 and got == want, (got, want, log))
rc, got, log = capture(W("bf16.gguf"), W("g-bf16-lo"), extra=("--schedule", "layer-outer"))
case("... and layer-outer", rc == 0 and got == want, log)
rb, tb = tensors(W("bf16.gguf"))
A = "glm-dsa."
meta = {"block_count": cfg["num_hidden_layers"], "embedding_length": cfg["hidden_size"],
        "attention.head_count": cfg["num_attention_heads"], "attention.head_count_kv": 1,
        "attention.kv_lora_rank": cfg["kv_lora_rank"], "attention.q_lora_rank": cfg["q_lora_rank"],
        "attention.key_length_mla": cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"],
        "attention.value_length_mla": cfg["v_head_dim"], "expert_count": cfg["n_routed_experts"],
        "expert_used_count": cfg["num_experts_per_tok"], "leading_dense_block_count": cfg["first_k_dense_replace"],
        "attention.indexer.top_k": cfg["index_topk"],
        "expert_weights_norm": cfg["norm_topk_prob"]}
bad = {k: (field(rb, A + k), v) for k, v in meta.items() if field(rb, A + k) != v}
bad.update({} if field(rb, "general.architecture") == "glm-dsa" else {"general.architecture": field(rb, "general.architecture")})
eps = field(rb, A + "attention.layer_norm_rms_epsilon")
case("gguf-py reads the metadata: %d keys = config.json's, rms eps %.9g as float32" % (len(meta), eps),
     not bad and eps == float(np.float32(cfg["rms_norm_eps"])), bad)
kvb = None
import struct
hdr = open(W("m", "model.safetensors"), "rb").read()
hl = struct.unpack("<Q", hdr[:8])[0]
st = json.loads(hdr[8:8 + hl])
ent = st["model.layers.0.self_attn.kv_b_proj.weight"]
a, b = ent["data_offsets"]
kvb = np.frombuffer(hdr[8 + hl + a:8 + hl + b], np.uint16).reshape(ent["shape"])
nh, dn, dv = cfg["num_attention_heads"], cfg["qk_nope_head_dim"], cfg["v_head_dim"]
kv = ((kvb.astype(np.uint32) << 16).view(np.float32)).reshape(nh, dn + dv, -1)
case("kv_b_proj split as the converter splits it: attn_k_b = k part transposed, attn_v_b = v part",
     np.array_equal(floats(tb["blk.0.attn_k_b.weight"]), kv[:, :dn, :].transpose(0, 2, 1))
     and np.array_equal(floats(tb["blk.0.attn_v_b.weight"]), kv[:, dn:, :]))
types = {t.tensor_type for t in tb.values()}
f32_rule = lambda n, t: (len(t.shape) == 1 or "ffn_gate_inp" in n or "indexer.proj." in n or n.endswith("_norm.weight")
                         or not n.endswith(".weight"))  # convert_hf_to_gguf.py prepare_tensors
case("BF16 file: F32 where the converter keeps F32 (1-D, norms, ffn_gate_inp, indexer.proj), the rest BF16",
     types == {QT.F32, QT.BF16} and all((t.tensor_type == QT.F32) == f32_rule(n, t) for n, t in tb.items()))

# --- Q8_0 / Q4_0: ggml's reference quantizers, bit for bit ------------------------------------
# the writer embeds tokenizer.json as tokenizer.huggingface.json: the GGUF's tokenizer identity is the directory's
ident = lambda d: json.load(open(os.path.join(d, "fidelity-dataset.json")))["weights"]["repository"]
case("BF16 GGUF: tokenizer.huggingface.json = tokenizer.json's bytes, one tokenizer identity with the root (%s)"
     % ident(W("root")), field(rb, "tokenizer.huggingface.json").encode() == open(W("m", "tokenizer.json"), "rb").read()
     and ident(W("g-bf16")) == ident(W("root")), (ident(W("g-bf16")), ident(W("root"))))
kl = {}
for ty, qt in (("q8_0", QT.Q8_0), ("q4_0", QT.Q4_0)):
    f = W(ty + ".gguf")
    rc, out, err = run("quantize", "--format", "gguf", "--type", ty, "--src", W("m"), "--dst", f)
    if not case("quantize --format gguf --type %s" % ty, rc == 0, out + err):
        continue
    rq, tq = tensors(f)
    mism, nq, nh = [], 0, 0
    for n, t in tq.items():
        src = tb.get(n)
        if src is None or list(src.shape) != list(t.shape):
            mism.append((n, "name/shape"))
            continue
        if t.tensor_type == qt:
            nq += 1
            ref = gguf.quants.quantize(floats(src), qt)
            if not np.array_equal(np.asarray(t.data).reshape(-1).view(np.uint8), ref.reshape(-1).view(np.uint8)):
                mism.append((n, "bytes"))
        elif t.tensor_type == QT.F16:  # the converter's fallback for rows that are not whole blocks of 32
            nh += 1
            if src.tensor_type != QT.BF16 or int(t.shape[0]) % 32 == 0 or not np.array_equal(
                    np.asarray(t.data).view(np.uint16).ravel(), floats(src).astype(np.float16).view(np.uint16).ravel()):
                mism.append((n, "F16 fallback"))
        elif t.tensor_type != src.tensor_type or not np.array_equal(np.asarray(t.data), np.asarray(src.data)):
            mism.append((n, "copy"))
        elif t.tensor_type == QT.BF16:
            mism.append((n, "left BF16 though selected"))
    case("%s: %d tensors byte-identical to gguf.quants.quantize, %d F16 (rows not whole blocks, as the converter "
         "falls back), the F32 ones = the BF16 file's" % (ty, nq, nh), not mism and nq > 0 and len(tq) == len(tb), mism[:5])
    rc, got, log = capture(f, W("g-" + ty), role="quant")
    case("%s GGUF captures as --role quant" % ty, rc == 0, log)
    rc, out, err = run("compare", "--reference", W("root"), "--candidate", W("g-" + ty), "--out", W("c-" + ty),
                       "--own-heads", "--json")
    if case("compare root vs %s (--own-heads: its output.weight is quantized)" % ty, rc == 0, out + err):
        kl[ty] = json.load(open(os.path.join(W("c-" + ty), "comparison-receipt.json")))["kl"]["mean"]
case("0 < KL(Q8_0) < KL(Q4_0): %s" % kl, len(kl) == 2 and 0 < kl["q8_0"] < kl["q4_0"], kl)

# --- --match -----------------------------------------------------------------------------------
rc, out, err = run("quantize", "--format", "gguf", "--type", "q8_0", "--match", "mlp.experts.", "--src", W("m"),
                   "--dst", W("x.gguf"))
if case("--match mlp.experts.: written", rc == 0, out + err):
    _, tx = tensors(W("x.gguf"))
    case("--match: exactly the stacked routed experts are Q8_0",
         {n for n, t in tx.items() if t.tensor_type == QT.Q8_0} == {n for n in tx if n.endswith("_exps.weight")}
         and any(n.endswith("_exps.weight") for n in tx))

# --- every other writer: ours = llama.cpp's converter, tensor for tensor ------------------------------
# tests/vectors/gguf-arch holds GGUFs written by convert_hf_to_gguf.py itself (make.py there)
import lzma
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_arch_fixtures import prepare  # noqa: E402
VEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors", "gguf-arch")
CONVERTED = (("minimax-m2-tiny", "minimax-m2", "mm"), ("deepseek-v3-tiny", "deepseek2", "ds"), ("llama-tiny", "llama", "ll"),
             ("qwen3-tiny", "qwen3", "q3"), ("qwen3-moe-tiny", "qwen3moe", "qm"), ("tiny", "glm-dsa", "gt"))
for preset, arch, d in CONVERTED:
    run("fixture", "--preset", preset, "--seed", 1, "--out", W(d))
    prepare(preset, W(d))
    for ty in ("bf16", "q8_0"):
        ref = W("ref-%s.%s.gguf" % (d, ty))
        open(ref, "wb").write(lzma.decompress(open(os.path.join(VEC, "%s.%s.gguf.xz" % (preset, ty)), "rb").read()))
        rc, out, err = run("quantize", "--format", "gguf", "--type", ty, "--src", W(d), "--dst", W("%s.%s.gguf" % (d, ty)))
        if not case("%s: quantize --format gguf --type %s" % (preset, ty), rc == 0, out + err):
            continue
        ra, ta = tensors(W("%s.%s.gguf" % (d, ty)))
        rr, tr = tensors(ref)
        bad = sorted(set(ta) ^ set(tr)) + [n for n in ta if n in tr and (
            ta[n].tensor_type != tr[n].tensor_type or list(ta[n].shape) != list(tr[n].shape) or
            not np.array_equal(np.asarray(ta[n].data).view(np.uint8).ravel(), np.asarray(tr[n].data).view(np.uint8).ravel()))]
        keys = sorted(k for k in rr.fields if k.startswith(arch + "."))
        bad += [k for k in keys if k not in ra.fields or field(ra, k) != field(rr, k)]
        bad += sorted(k for k in ra.fields if k.startswith(arch + ".") and k not in rr.fields)
        case("%s %s: every tensor (name, type, shape, bytes) and every %s.* key equal to the file llama.cpp's "
             "converter wrote (%d tensors, %d keys)" % (preset, ty, arch, len(ta), len(keys)), not bad, bad[:6])
for preset, _, d in CONVERTED:
    rc, want_d, log = capture(W(d), W(d + "-root"))
    rc2, got_d, log2 = capture(W(d + ".bf16.gguf"), W(d + "-g"))
    case("%s: our BF16 GGUF's capture digest == the safetensors capture's" % preset, rc == 0 and rc2 == 0 and
         got_d == want_d, (log, log2))

# --- refusals ------------------------------------------------------------------------------------
run("fixture", "--preset", "qwen35-tiny", "--seed", 1, "--out", W("q35"))
rc, out, err = run("quantize", "--format", "gguf", "--type", "q8_0", "--src", W("q35"), "--dst", W("l.gguf"))
case("qwen3_5 (no GGUF writer): gguf_write_unsupported, nothing written",
     refused(rc, out + err) == "gguf_write_unsupported" and not os.path.exists(W("l.gguf")), out + err)
rc, out, err = run("quantize", "--format", "gguf", "--type", "q8_0", "--src", W("m"), "--dst", W("bf16.gguf"))
case("an existing --dst: destination_exists", refused(rc, out + err) == "destination_exists", out + err)
rc, out, err = run("quantize", "--format", "gguf", "--type", "q5_k", "--src", W("m"), "--dst", W("k.gguf"))
case("--type q5_k: usage (exit 4)", rc == 4 and not os.path.exists(W("k.gguf")), (rc, out + err))
rc, out, err = run("quantize", "--format", "gguf", "--src", W("m"), "--dst", W("k.gguf"))
case("--format gguf without --type: usage (exit 4)", rc == 4, (rc, out + err))
case("no temporary file left beside any --dst", not [n for n in os.listdir(WORK) if ".tmp-" in n], os.listdir(WORK))

import shutil
shutil.rmtree(WORK, ignore_errors=True)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
