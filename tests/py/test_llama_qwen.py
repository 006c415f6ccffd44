#!/usr/bin/env python3
"""model_types llama, qwen3 and qwen3_moe (issue 21, items 1-5): the architecture-table
entries, their fixtures, the tied head, refusals.  Needs no torch (the
parity with transformers is the committed goldens of tests/parity/, run by
run_parity.sh).

usage: test_llama_qwen.py BINARY

- `fixture --preset llama-tiny|qwen3-tiny|qwen3-moe-tiny`: the loader expects exactly the
  tensors written (one list); `architectures list` names all three;
- each preset's capture_content_digest is identical across --threads 1/2,
  --schedule window-outer/layer-outer and every kernel path this CPU has
  (kernel-selftest's list), and `verify` passes;
- RTN int8 of mlp.down_proj (qwen3_moe: the experts) has a smaller KL than int4 (and > 0);
- the tied head (qwen3-tiny, tie_word_embeddings true): the dataset's head is
  byte for byte model.embed_tokens.weight, and the head identity (manifest
  and head/head.json) says tied_word_embeddings true, source_tensor
  model.embed_tokens.weight; the untied llama-tiny ships lm_head.weight and
  says neither; a tied checkpoint that still ships an lm_head.weight gets
  the embedding as its head (transformers ties it);
- llama3 RoPE matters (the same weights with rope_type default capture to
  another digest);
- refusals by name: rope_type yarn, nested rope_parameters,
  partial_rotary_factor, a sliding_attention layer, heads not a multiple
  of num_key_value_heads, top-k past the experts, an unsupported model_type
  naming the supported ones; qwen3_moe mlp_only_layers decides the tensor list,
  and its fused expert spelling captures to the per-expert digest;
  `demo` (routed-expert quantizations) refuses the dense presets up front.
"""
from fdcheck import Checks
import json, os, shutil, struct

T = Checks("llama-qwen", "fd-llama-")
case, run, W, manifest, BIN = T.case, T.run, T.path, T.manifest, T.bin


def digest(ds):
    return manifest(ds)["capture"]["capture_content_digest"]


def capture(model, out, *extra, role="root"):
    return run("capture", "--model", W(model), "--panel", W(model, "panel"), "--out", W(out), "--role", role,
               "--lane", "other", "--dataset-id", "test." + out, "--dataset-name", "llama-qwen", "--windows", 2,
               "--no-sanity-check", *extra)


def read_st(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def tensor_bytes(path, name):
    h, body = read_st(path)
    s, e = h[name]["data_offsets"]
    return body[s:e]


def edited(src, dst, edit):
    shutil.copytree(W(src), W(dst))
    p = W(dst, "config.json")
    c = json.load(open(p))
    edit(c)
    json.dump(c, open(p, "w"), indent=2, sort_keys=True)


def refused(model, what, want):
    rc, out, err = run("inspect-model", W(model))
    msg = out + err
    case("refused: " + what, rc == 3 and "REFUSED [" in msg and all(w in msg for w in want), (rc, msg))


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
    case("architectures list names llama, qwen3 and qwen3_moe",
         rc == 0 and "llama        LlamaForCausalLM" in out and "qwen3        Qwen3ForCausalLM" in out
         and "qwen3_moe    Qwen3MoeForCausalLM" in out, out + err)

    for preset, mt, n in (("llama-tiny", "llama", 21), ("qwen3-tiny", "qwen3", 24), ("qwen3-moe-tiny", "qwen3_moe", 71)):
        rc, out, err = run("fixture", "--preset", preset, "--seed", 1, "--out", W(preset))
        case("%s fixture" % preset, rc == 0, out + err)
        rc, out, err = run("inspect-model", W(preset), "--json")
        doc = json.loads(out) if rc == 0 else {}
        chk = doc.get("check", {})
        case("%s: model_type %s, the loader expects exactly the %d tensors written" % (preset, mt, n),
             rc == 0 and chk.get("expected") == chk.get("tensors") == n and not chk["missing"]
             and not chk["unexpected"] and not chk["misshaped"], out + err)

        runs = [("t1", "--threads", 1), ("t2", "--threads", 2),
                ("lo1", "--schedule", "layer-outer", "--threads", 1), ("lo2", "--schedule", "layer-outer", "--threads", 2)]
        runs += [("k-" + p, "--kernel", p, "--threads", 2) for p in paths]
        digests = {}
        for name, *extra in runs:
            rc, out, err = capture(preset, preset + "-" + name, *extra)
            case("%s: capture %s" % (preset, " ".join(map(str, extra))), rc == 0, out + err)
            if rc == 0:
                digests[name] = digest(W(preset + "-" + name))
        case("%s: one capture_content_digest across threads 1/2, both schedules, kernel paths %s" % (preset, paths),
             len(digests) == len(runs) and len(set(digests.values())) == 1, digests)
        rc, out, err = run("verify", W(preset + "-t1"))
        case("%s: verify" % preset, rc == 0, out + err)

        # RTN int8 < int4 in KL (mlp.down_proj of every layer)
        kl = {}
        match, cls = ("mlp.experts", "moe.experts") if mt == "qwen3_moe" else ("mlp.down_proj", "mlp.down")
        for bits in (8, 4):
            q = "%s-int%d" % (preset, bits)
            rc, out, err = run("quantize", "--src", W(preset), "--dst", W(q), "--match", match, "--bits", bits,
                               "--tensor-class", cls, "--emit-scope", W(q + ".scope.json"))
            os.rename(W(q + ".scope.json"), W(q + "-scope.json")) if rc == 0 else None
            shutil.copytree(W(preset, "panel"), W(q, "panel")) if rc == 0 else None
            rc2, out2, err2 = capture(q, q + "-cap", "--scope-file", W(q + "-scope.json"), role="quant") if rc == 0 else (1, out, err)
            rc3, out3, err3 = run("compare", "--reference", W(preset + "-t1"), "--candidate", W(q + "-cap"), "--out",
                                  W(q + "-cmp"), "--no-bootstrap") if rc2 == 0 else (1, out2, err2)
            if rc3 == 0:
                kl[bits] = json.load(open(W(q + "-cmp", "comparison-receipt.json")))["kl"]["mean"]
            case("%s: RTN int%d quantize, capture, compare" % (preset, bits), rc3 == 0, out3 + err3)
        case("%s: KL(int8) < KL(int4), both > 0" % preset, len(kl) == 2 and 0 < kl[8] < kl[4], kl)

    # the tied head
    m = manifest(W("qwen3-tiny-t1"))
    hj = json.load(open(W("qwen3-tiny-t1", "head", "head.json")))
    emb = tensor_bytes(W("qwen3-tiny", "model.safetensors"), "model.embed_tokens.weight")
    head = tensor_bytes(W("qwen3-tiny-t1", "head", "weight.safetensors"), "lm_head.weight")
    case("tied (qwen3-tiny): the shipped head is model.embed_tokens.weight byte for byte", head == emb)
    case("tied: the head identity says tied_word_embeddings, source_tensor model.embed_tokens.weight (manifest and head.json)",
         all(d.get("tied_word_embeddings") is True and d.get("source_tensor") == "model.embed_tokens.weight"
             for d in (m["head"], hj)), (m["head"], hj))
    lm = manifest(W("llama-tiny-t1"))
    case("untied (llama-tiny): the shipped head is lm_head.weight, no tied keys",
         tensor_bytes(W("llama-tiny-t1", "head", "weight.safetensors"), "lm_head.weight")
         == tensor_bytes(W("llama-tiny", "model.safetensors"), "lm_head.weight")
         and "tied_word_embeddings" not in lm["head"] and "source_tensor" not in lm["head"], lm["head"])
    # a tied checkpoint that still ships an lm_head.weight (some do): the tie wins, as in transformers
    shutil.copytree(W("qwen3-tiny"), W("tied-extra"))
    h, body = read_st(W("qwen3-tiny", "model.safetensors"))
    extra = bytes((b + 1) & 0xFF if i % 2 else b for i, b in enumerate(emb))  # another bf16 matrix of the same shape
    h["lm_head.weight"] = {"dtype": "BF16", "shape": h["model.embed_tokens.weight"]["shape"],
                           "data_offsets": [len(body), len(body) + len(extra)]}
    meta = h.pop("__metadata__", None)
    hb = json.dumps(dict(sorted(h.items()), **({"__metadata__": meta} if meta else {})), separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    open(W("tied-extra", "model.safetensors"), "wb").write(struct.pack("<Q", len(hb)) + hb + body + extra)
    rc, out, err = capture("tied-extra", "tied-extra-cap")
    case("tied checkpoint with an extra lm_head.weight: captured, head = the embedding, same digest",
         rc == 0 and tensor_bytes(W("tied-extra-cap", "head", "weight.safetensors"), "lm_head.weight") == emb
         and digest(W("tied-extra-cap")) == digest(W("qwen3-tiny-t1")), out + err)

    # qwen3_moe experts in the fused spelling (gate_up_proj [E, 2I, H], down_proj [E, H, I]): same digest
    h, body = read_st(W("qwen3-moe-tiny", "model.safetensors"))
    h.pop("__metadata__", None)
    blob = lambda k: body[h[k]["data_offsets"][0]:h[k]["data_offsets"][1]]
    cfg = json.load(open(W("qwen3-moe-tiny", "config.json")))
    E, Im, Hd = cfg["num_local_experts"], cfg["moe_intermediate_size"], cfg["hidden_size"]
    tensors, P = {}, "model.layers.1.mlp.experts"
    for k in h:
        if not k.startswith(P + "."):
            tensors[k] = (h[k]["dtype"], h[k]["shape"], blob(k))
    tensors[P + ".gate_up_proj"] = ("BF16", [E, 2 * Im, Hd], b"".join(
        blob("%s.%d.gate_proj.weight" % (P, x)) + blob("%s.%d.up_proj.weight" % (P, x)) for x in range(E)))
    tensors[P + ".down_proj"] = ("BF16", [E, Hd, Im], b"".join(blob("%s.%d.down_proj.weight" % (P, x)) for x in range(E)))
    hdr, off, parts = {}, 0, []
    for k in sorted(tensors):
        dt, shp, b = tensors[k]
        hdr[k] = {"dtype": dt, "shape": shp, "data_offsets": [off, off + len(b)]}
        off += len(b)
        parts.append(b)
    hb = json.dumps(hdr, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    shutil.copytree(W("qwen3-moe-tiny"), W("moe-fused"))
    open(W("moe-fused", "model.safetensors"), "wb").write(struct.pack("<Q", len(hb)) + hb + b"".join(parts))
    rc, out, err = run("inspect-model", W("moe-fused"), "--json")
    chk = json.loads(out)["check"] if rc == 0 else {}
    case("qwen3_moe fused experts: the loader expects the fused spelling (2 tensors for 48)",
         rc == 0 and chk["expected"] == chk["tensors"] == 71 - 48 + 2 and not chk["unexpected"], out + err)
    rc, out, err = capture("moe-fused", "moe-fused-cap")
    case("qwen3_moe fused experts: the per-expert checkpoint's digest",
         rc == 0 and digest(W("moe-fused-cap")) == digest(W("qwen3-moe-tiny-t1")), out + err)

    # llama3 RoPE is used: rope_type default on the same weights gives other bits
    edited("llama-tiny", "llama-default-rope", lambda c: c.update(rope_parameters={"rope_type": "default", "rope_theta": 500000.0}))
    rc, out, err = capture("llama-default-rope", "llama-default-rope-cap")
    case("llama3 RoPE matters: rope_type default on the same weights gives another digest",
         rc == 0 and digest(W("llama-default-rope-cap")) != digest(W("llama-tiny-t1")), out + err)
    # legacy spelling: rope_scaling + top-level rope_theta = rope_parameters
    def legacy(c):
        rp = c.pop("rope_parameters")
        c["rope_theta"] = rp.pop("rope_theta")
        rp["type"] = rp.pop("rope_type")
        c["rope_scaling"] = rp
    edited("llama-tiny", "llama-legacy", legacy)
    rc, out, err = capture("llama-legacy", "llama-legacy-cap")
    case("legacy rope_scaling {type: llama3} + top-level rope_theta = rope_parameters (same digest)",
         rc == 0 and digest(W("llama-legacy-cap")) == digest(W("llama-tiny-t1")), out + err)

    # refusals by name
    edited("llama-tiny", "r-yarn", lambda c: c.update(rope_parameters={"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4}))
    refused("r-yarn", "rope_type yarn", ["bad_config", "rope_parameters", "\"yarn\"", "default, llama3"])
    edited("llama-tiny", "r-l3", lambda c: c["rope_parameters"].pop("low_freq_factor"))
    refused("r-l3", "llama3 without low_freq_factor", ["bad_config", "low_freq_factor"])
    edited("llama-tiny", "r-nested", lambda c: c.update(rope_parameters={"full_attention": {"rope_type": "default"}}))
    refused("r-nested", "nested per-layer-type rope_parameters", ["bad_config", "rope_parameters", "nested"])
    edited("llama-tiny", "r-prf", lambda c: c.update(partial_rotary_factor=0.5))
    refused("r-prf", "partial_rotary_factor 0.5", ["bad_config", "partial_rotary_factor"])
    edited("llama-tiny", "r-kv", lambda c: c.update(num_key_value_heads=3))
    refused("r-kv", "num_attention_heads not a multiple of num_key_value_heads", ["bad_config", "num_key_value_heads"])
    edited("llama-tiny", "r-act", lambda c: c.update(hidden_act="gelu"))
    refused("r-act", "hidden_act gelu", ["bad_config", "hidden_act"])
    edited("qwen3-tiny", "r-slide", lambda c: c.update(layer_types=["full_attention", "sliding_attention"]))
    refused("r-slide", "a qwen3 sliding_attention layer", ["bad_config", "layer_types", "sliding_attention"])
    edited("qwen3-tiny", "r-slide2", lambda c: c.update(use_sliding_window=True, sliding_window=32, max_window_layers=1,
                                                          layer_types=None))
    refused("r-slide2", "qwen3 use_sliding_window with layers past max_window_layers", ["bad_config", "use_sliding_window"])
    edited("qwen3-moe-tiny", "r-topk", lambda c: c.update(num_experts_per_tok=17))
    refused("r-topk", "qwen3_moe num_experts_per_tok > experts", ["bad_config", "num_experts_per_tok"])
    # qwen3_moe: mlp_only_layers decides the dense layers (every layer sparse -> other tensors expected)
    edited("qwen3-moe-tiny", "r-only", lambda c: c.update(mlp_only_layers=[]))
    rc, out, err = run("inspect-model", W("r-only"))
    case("qwen3_moe mlp_only_layers []: layer 0's experts are expected, its dense MLP unexpected",
         rc == 3 and "model.layers.0.mlp.experts.0.gate_proj.weight" in out + err, out + err)
    rc, out, err = run("demo", "--preset", "llama-tiny", "--out", W("demo"))
    case("demo --preset llama-tiny: usage error up front (no routed experts to quantize), nothing written",
         rc == 4 and "routed experts" in err and not os.path.exists(W("demo")), (rc, out, err))
    edited("llama-tiny", "r-mt", lambda c: c.update(model_type="mistral"))
    refused("r-mt", "model_type mistral names the supported ones", ["unsupported_model_type", "mistral", "llama", "qwen3",
                                                                   "qwen3_moe", "glm_moe_dsa"])
finally:
    T.finish()
