#!/usr/bin/env python3
"""model_type minimax_m2 (issue 21): the architecture-table entry, its
fixture, the config spellings that change the math, refusals.  The
whole-model parity is the committed golden (tests/parity/run_parity.sh pair
minimax-m2-tiny); the part that needs torch (FIDELITY_ORACLE_PYTHON or this
interpreter) prints `skipped (torch not installed)` without it.

usage: test_minimax.py BINARY

- `architectures list` names minimax_m2; `fixture --preset minimax-m2-tiny`:
  the loader expects exactly the 119 tensors written (save_pretrained's
  spelling: block_sparse_moe.gate / .e_score_correction_bias /
  .experts.X.w1|w3|w2);
- one capture_content_digest across --threads 1/2, both schedules and every
  kernel path this CPU has; `verify` passes; RTN int8 of the experts has a
  smaller KL than int4 (and > 0);
- the router's correction bias is used (zeroed: another digest); an F32 bias
  is used as transformers' bf16 load holds it: F32 values whose rounding
  decides the routing capture to the digest of the BF16 checkpoint holding
  their round-to-nearest-even values (not the truncated ones, not fp32), with
  the f32_weights_cast_to_bf16 disclosure naming the tensor;
- the partial RoPE: the legacy rotary_dim alone = rope_parameters'
  partial_rotary_factor (same digest); a top-level partial_rotary_factor wins
  over rotary_dim; rope_parameters' partial_rotary_factor wins over both
  (1.0 there: another digest); num_experts spells num_local_experts;
- a tied head (tie_word_embeddings, no lm_head.weight): the dataset's head is
  the embedding byte for byte and its identity says so;
- `demo --preset minimax-m2-tiny` runs (its quantizations select the experts'
  block_sparse_moe.experts.X.w1/w2/w3);
- refusals by name: rope_type yarn, nested rope_parameters, an odd / zero /
  too wide rotary dim, hidden_act gelu, heads not a multiple of
  num_key_value_heads, top-k past the experts, a per-head q_norm (mis-shaped);
- with torch: transformers' own random-init checkpoint (save_pretrained) has
  no missing / unexpected tensor here and captures bit-identical to
  transformers' forward; so does the F32-bias checkpoint.
"""
from fdcheck import Checks
import json, os, shutil, struct, subprocess, sys

T = Checks("minimax", "fd-minimax-")
case, run, W, manifest, BIN = T.case, T.run, T.path, T.manifest, T.bin
HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "..", "parity", "transformers_hidden_llama.py")
COMPARE = os.path.join(HERE, "..", "parity", "compare_hidden.py")
PY = os.environ.get("FIDELITY_ORACLE_PYTHON", sys.executable)
P = "minimax-m2-tiny"


def digest(ds):
    return manifest(ds)["capture"]["capture_content_digest"]


def capture(model, out, *extra, role="root", panel=None):
    return run("capture", "--model", W(model), "--panel", panel or W(P, "panel"), "--out", W(out), "--role", role,
               "--lane", "other", "--dataset-id", "test." + out, "--dataset-name", "minimax", "--windows", 2,
               "--no-sanity-check", *extra)


def read_st(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    h = json.loads(data[8:8 + n])
    h.pop("__metadata__", None)
    body = data[8 + n:]
    return {k: (m["dtype"], m["shape"], body[m["data_offsets"][0]:m["data_offsets"][1]]) for k, m in h.items()}


def write_st(path, tensors):
    hdr, off, parts = {}, 0, []
    for k in sorted(tensors):
        dt, shp, b = tensors[k]
        hdr[k] = {"dtype": dt, "shape": shp, "data_offsets": [off, off + len(b)]}
        off += len(b)
        parts.append(b)
    hb = json.dumps(hdr, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + b"".join(parts))


def with_weights(dst, edit):
    """a copy of the fixture whose tensors edit(name, (dtype, shape, bytes)) rewrites"""
    shutil.copytree(W(P), W(dst))
    t = read_st(W(P, "model.safetensors"))
    write_st(W(dst, "model.safetensors"), {k: edit(k, v) for k, v in t.items()})


def edited(dst, edit, src=P):
    shutil.copytree(W(src), W(dst))
    p = W(dst, "config.json")
    c = json.load(open(p))
    edit(c)
    json.dump(c, open(p, "w"), indent=2, sort_keys=True)


def refused(model, what, want):
    rc, out, err = run("inspect-model", W(model))
    msg = out + err
    case("refused: " + what, rc == 3 and "REFUSED [" in msg and all(w in msg for w in want), (rc, msg))


def bias_edit(f):
    def edit(k, v):
        if not k.endswith("e_score_correction_bias"):
            return v
        u = struct.unpack("<%dH" % (len(v[2]) // 2), v[2])
        return f(v, u)
    return edit


# F32 correction biases whose rounding decides the routing (16 experts, top-8;
# one sigmoid differs from another by < 1): experts 0-6 at 1024 (always
# chosen), 9-15 at -1024 (never), experts 7 and 8 compete for the last slot.
# A: 515.6 vs 514.4 (bf16 ulp 4 there): kept fp32, 7 always wins; rounded
# (either way) they tie and the sigmoid decides per token.  B: 257.6 vs 256.2
# (ulp 2): to nearest even 258 vs 256, 7 always wins; truncated they tie.
def bias_vec(a, b):
    return [1024.0] * 7 + [a, b] + [-1024.0] * 7


BIAS = {"A-f32": bias_vec(515.6, 514.4), "A-rne": bias_vec(516.0, 516.0), "A-7wins": bias_vec(516.0, 512.0),
        "B-f32": bias_vec(257.6, 256.2), "B-rne": bias_vec(258.0, 256.0), "B-trunc": bias_vec(256.0, 256.0)}


def f32_bias(vals):
    return lambda v, u: ("F32", v[1], struct.pack("<16f", *vals))


def bf16_bias(vals):
    return lambda v, u: ("BF16", v[1], struct.pack("<16H", *[struct.unpack("<I", struct.pack("<f", x))[0] >> 16
                                                              for x in vals]))


try:
    paths = []
    rc, out, err = run("kernel-selftest")
    for line in out.splitlines():
        if "paths:" in line:
            paths = line.split("paths:")[1].replace(";", " ").split()
            break
    paths = [p for p in paths if p in ("scalar", "avx2", "avx512f", "avx512bf16", "amx")]
    case("kernel-selftest lists the kernel paths of this CPU", rc == 0 and "scalar" in paths, out + err)

    rc, out, err = run("architectures", "list")
    case("architectures list names minimax_m2", rc == 0 and "minimax_m2" in out and "MiniMaxM2ForCausalLM" in out,
         out + err)

    rc, out, err = run("fixture", "--preset", P, "--seed", 1, "--out", W(P))
    case("%s fixture" % P, rc == 0, out + err)
    rc, out, err = run("inspect-model", W(P), "--json")
    doc = json.loads(out) if rc == 0 else {}
    chk = doc.get("check", {})
    case("%s: the loader expects exactly the 119 tensors written" % P,
         rc == 0 and chk.get("expected") == chk.get("tensors") == 119 and not chk["missing"] and not chk["unexpected"]
         and not chk["misshaped"], out + err)
    names = set(read_st(W(P, "model.safetensors")))
    case("%s: save_pretrained's spelling (block_sparse_moe.gate, .e_score_correction_bias, .experts.X.w1/w3/w2)" % P,
         {"model.layers.1.block_sparse_moe.gate.weight", "model.layers.1.block_sparse_moe.e_score_correction_bias",
          "model.layers.1.block_sparse_moe.experts.15.w1.weight", "model.layers.1.block_sparse_moe.experts.15.w3.weight",
          "model.layers.1.block_sparse_moe.experts.15.w2.weight", "model.layers.0.self_attn.q_norm.weight"} <= names,
         sorted(names)[:20])

    runs = [("t1", "--threads", 1), ("t2", "--threads", 2),
            ("lo1", "--schedule", "layer-outer", "--threads", 1), ("lo2", "--schedule", "layer-outer", "--threads", 2)]
    runs += [("k-" + p, "--kernel", p, "--threads", 2) for p in paths]
    digests = {}
    for name, *extra in runs:
        rc, out, err = capture(P, "cap-" + name, *extra)
        case("capture %s" % " ".join(map(str, extra)), rc == 0, out + err)
        if rc == 0:
            digests[name] = digest(W("cap-" + name))
    case("one capture_content_digest across threads 1/2, both schedules, kernel paths %s" % paths,
         len(digests) == len(runs) and len(set(digests.values())) == 1, digests)
    base = digests.get("t1")
    rc, out, err = run("verify", W("cap-t1"))
    case("verify", rc == 0, out + err)

    kl = {}
    for bits in (8, 4):
        q = "int%d" % bits
        rc, out, err = run("quantize", "--src", W(P), "--dst", W(q), "--match", "block_sparse_moe.experts", "--bits", bits,
                           "--tensor-class", "moe.experts", "--emit-scope", W(q + "-scope.json"))
        rc2, out2, err2 = capture(q, q + "-cap", "--scope-file", W(q + "-scope.json"), role="quant") if rc == 0 else (1, out, err)
        rc3, out3, err3 = run("compare", "--reference", W("cap-t1"), "--candidate", W(q + "-cap"), "--out",
                              W(q + "-cmp"), "--no-bootstrap") if rc2 == 0 else (1, out2, err2)
        if rc3 == 0:
            kl[bits] = json.load(open(W(q + "-cmp", "comparison-receipt.json")))["kl"]["mean"]
        case("RTN int%d of the experts: quantize, capture, compare" % bits, rc3 == 0, out3 + err3)
    case("KL(int8) < KL(int4), both > 0", len(kl) == 2 and 0 < kl[8] < kl[4], kl)

    # a tied head (tie_word_embeddings true, no lm_head.weight): the dataset's head is the embedding
    shutil.copytree(W(P), W("tied"))
    t = read_st(W(P, "model.safetensors"))
    emb = t["model.embed_tokens.weight"][2]
    write_st(W("tied", "model.safetensors"), {k: v for k, v in t.items() if k != "lm_head.weight"})
    c = json.load(open(W("tied", "config.json")))
    c["tie_word_embeddings"] = True
    json.dump(c, open(W("tied", "config.json"), "w"), indent=2, sort_keys=True)
    rc, out, err = capture("tied", "tied-cap")
    head = read_st(W("tied-cap", "head", "weight.safetensors")).get("lm_head.weight", (0, 0, b""))[2] if rc == 0 else b""
    m = manifest(W("tied-cap")) if rc == 0 else {}
    case("tied head: captured; the shipped head is model.embed_tokens.weight byte for byte and the head identity says "
         "tied_word_embeddings, source_tensor model.embed_tokens.weight",
         rc == 0 and head == emb and m["head"].get("tied_word_embeddings") is True
         and m["head"].get("source_tensor") == "model.embed_tokens.weight", (out + err)[-800:])

    # demo: the routed experts in minimax_m2's spelling (RTN int8/int4, FP8-block and NVFP4 expert checkpoints)
    rc, out, err = run("demo", "--preset", P, "--out", W("demo"), "--windows", 1)
    case("demo --preset %s: quantizes block_sparse_moe.experts (RTN, FP8 block, NVFP4), captures, verifies, compares" % P,
         rc == 0 and all(os.path.exists(W("demo", x, "fidelity-dataset.json")) for x in ("int8", "int4", "fp8", "nvfp4")),
         (out + err)[-1500:])

    # the correction bias: used, and as a bf16 load holds it
    with_weights("bias0", bias_edit(lambda v, u: ("BF16", v[1], bytes(len(v[2])))))
    rc, out, err = capture("bias0", "bias0-cap")
    case("the router's e_score_correction_bias is used (zeroed: another digest)",
         rc == 0 and digest(W("bias0-cap")) != base, out + err)
    d = {}
    for m, vals in BIAS.items():
        with_weights("bias-" + m, bias_edit((f32_bias if m.endswith("f32") else bf16_bias)(vals)))
        rc, out, err = capture("bias-" + m, "bias-%s-cap" % m)
        case("capture bias " + m, rc == 0, out + err)
        d[m] = digest(W("bias-%s-cap" % m)) if rc == 0 else m
    case("bias A: the tie of 7 and 8 is decided per token (the routing test can see a difference)",
         d["A-rne"] != d["A-7wins"], d)
    case("an F32 bias is rounded as transformers' bf16 load rounds it, not kept fp32 (A: F32 = its BF16 rounding)",
         d["A-f32"] == d["A-rne"], d)
    case("an F32 bias is rounded to nearest even, not truncated (B: F32 = the RNE BF16, != the truncated one)",
         d["B-f32"] == d["B-rne"] != d["B-trunc"], d)
    rc = 0 if d["B-f32"] != "B-f32" else 1
    disc = [d for d in manifest(W("bias-B-f32-cap")).get("disclosures", [])
            if d.get("code") == "f32_weights_cast_to_bf16"] if rc == 0 else []
    case("the F32 bias is disclosed as cast to bf16 (f32_weights_cast_to_bf16 names it)",
         len(disc) == 1 and "model.layers.1.block_sparse_moe.e_score_correction_bias" in disc[0]["detail"], disc)

    # the partial RoPE's spellings
    def only_rotary_dim(c):
        c["rope_parameters"].pop("partial_rotary_factor")
        c.pop("rope_theta", None)
    edited("rd", only_rotary_dim)
    rc, out, err = capture("rd", "rd-cap")
    case("legacy rotary_dim 8 alone = partial_rotary_factor 0.5 (same digest)", rc == 0 and digest(W("rd-cap")) == base,
         out + err)
    def top_level(c):
        c["rope_parameters"].pop("partial_rotary_factor")
        c["rotary_dim"] = 16
        c["partial_rotary_factor"] = 0.5
    edited("toplevel", top_level)
    rc, out, err = capture("toplevel", "toplevel-cap")
    case("a top-level partial_rotary_factor 0.5 wins over rotary_dim 16 (same digest)",
         rc == 0 and digest(W("toplevel-cap")) == base, out + err)
    edited("full", lambda c: c["rope_parameters"].update(partial_rotary_factor=1.0))
    rc, out, err = capture("full", "full-cap")
    case("rope_parameters' partial_rotary_factor 1.0 wins over rotary_dim 8 and changes the bits",
         rc == 0 and digest(W("full-cap")) != base, out + err)
    edited("alias", lambda c: c.update(num_experts=c.pop("num_local_experts")))
    rc, out, err = capture("alias", "alias-cap")
    case("num_experts spells num_local_experts (same digest)", rc == 0 and digest(W("alias-cap")) == base, out + err)

    # refusals by name
    edited("r-yarn", lambda c: c.update(rope_parameters={"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4}))
    refused("r-yarn", "rope_type yarn", ["bad_config", "rope_parameters", "\"yarn\""])
    edited("r-nested", lambda c: c.update(rope_parameters={"full_attention": {"rope_type": "default"}}))
    refused("r-nested", "nested per-layer-type rope_parameters", ["bad_config", "rope_parameters", "nested"])
    def rd_only(n):
        return lambda c: (c["rope_parameters"].pop("partial_rotary_factor"), c.update(rotary_dim=n))
    edited("r-odd", rd_only(7))
    refused("r-odd", "rotary_dim 7 (odd)", ["bad_config", "rotary_dim", "odd"])
    edited("r-zero", rd_only(0))
    refused("r-zero", "rotary_dim 0", ["bad_config", "rotary_dim"])
    edited("r-wide", lambda c: c["rope_parameters"].update(partial_rotary_factor=1.5))
    refused("r-wide", "partial_rotary_factor 1.5 (past head_dim)", ["bad_config", "partial_rotary_factor"])
    edited("r-act", lambda c: c.update(hidden_act="gelu"))
    refused("r-act", "hidden_act gelu", ["bad_config", "hidden_act"])
    edited("r-kv", lambda c: c.update(num_key_value_heads=3))
    refused("r-kv", "num_attention_heads not a multiple of num_key_value_heads", ["bad_config", "num_key_value_heads"])
    edited("r-topk", lambda c: c.update(num_experts_per_tok=17))
    refused("r-topk", "num_experts_per_tok > experts", ["bad_config", "num_experts_per_tok"])
    edited("r-hd", lambda c: c.update(head_dim=None))
    refused("r-hd", "head_dim null", ["bad_config", "head_dim"])
    def per_head(k, v):
        return ("BF16", [16], v[2][:32]) if k.endswith("self_attn.q_norm.weight") else v
    with_weights("r-perhead", per_head)
    rc, out, err = run("inspect-model", W("r-perhead"))
    case("refused: a per-head q_norm [head_dim] (MiniMax-M2 norms all heads: [heads x head_dim])",
         rc == 3 and "q_norm.weight" in out + err, out + err)
    edited("r-mt", lambda c: c.update(model_type="minimax"))
    refused("r-mt", "model_type minimax (MiniMax-Text-01) names the supported ones",
            ["unsupported_model_type", "minimax", "minimax_m2", "qwen3_moe"])

    # with torch: transformers' own checkpoint and forward
    probe = subprocess.run([PY, "-c", "import torch, transformers; transformers.MiniMaxM2ForCausalLM"], capture_output=True)
    if probe.returncode:
        print("skipped (torch not installed): transformers' save_pretrained checkpoint and forward (pip torch + "
              "transformers 5.25, or FIDELITY_ORACLE_PYTHON)")
    else:
        env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_BF16")
        r = subprocess.run([PY, "-W", "ignore", ORACLE, "--save-pretrained", W(P), W("sp"), "3"], capture_output=True,
                           text=True, env=env)
        case("torch: transformers' save_pretrained of a random-init MiniMaxM2ForCausalLM", r.returncode == 0,
             r.stdout + r.stderr)
        rc, out, err = run("inspect-model", W("sp"), "--json")
        chk = json.loads(out).get("check", {}) if rc == 0 else {}
        case("torch: transformers' checkpoint: 119 tensors, none missing or unexpected",
             rc == 0 and chk.get("expected") == chk.get("tensors") == 119 and not chk["missing"] and not chk["unexpected"],
             out + err)
        for model in ("sp", "bias-A-f32", "bias-B-f32"):
            rc, out, err = run("capture", "--model", W(model), "--panel", W(P, "panel"), "--out", W(model + "-par"),
                               "--role", "root", "--lane", "other", "--dataset-id", "t." + model, "--dataset-name", "m",
                               "--windows", 4, "--gemm-order", "pair", "--no-sanity-check")
            r = subprocess.run([PY, "-W", "ignore", ORACLE, W(model), W(P, "panel"), W(model + "-gold")],
                               capture_output=True, text=True, env=env)
            c = subprocess.run([sys.executable, COMPARE, W(model + "-par"), W(model + "-gold"), "--min-identical", "1.0"],
                               capture_output=True, text=True) if rc == 0 and r.returncode == 0 else None
            case("torch: %s captures bit-identical to transformers' forward (4 windows)" % model,
                 c is not None and c.returncode == 0 and '"hidden_bit_identical_fraction": 1.0' in c.stdout,
                 (out + err + r.stdout + r.stderr)[-1500:] if c is None else c.stdout + c.stderr)
finally:
    T.finish()
