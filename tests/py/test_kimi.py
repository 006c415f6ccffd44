#!/usr/bin/env python3
"""kimi_k25 (Kimi K2.5's text model: deepseek_v3 under text_config, the
vision tower skipped by name) and kimi_linear (KDA + MLA without RoPE + MoE)
in the architecture table (issue 20 items 1, 2).
No torch needed: the transformers parity is tests/parity/run_parity.sh's
committed golden (kimi-k25-tiny, bit-identical) and
tests/parity/kimi_parity.py (checkpoints written by transformers'
save_pretrained), run here only when torch + transformers import.

usage: test_kimi.py BINARY

- the kimi-k25-tiny fixture: 201 text tensors expected under
  language_model.model., the vision tower and projector (23 tensors) ignored,
  none missing / unexpected;
- save_pretrained's spelling (language_model.model.blocks.N.,
  language_model.lm_head.weight) loads and captures to the same digest; a
  name present in both spellings and a bare model.layers.N name are refused;
  without the vision tower the text model still loads (same digest); an MTP
  layer is ignored;
- the text model extracted as a deepseek_v3 checkpoint gives the same hidden
  states (same capture_content_digest);
- the top-level tie_word_embeddings (default true) decides the head, not
  text_config's;
- capture_content_digest identical across --threads 1/2, both --schedule
  values and every kernel path this host runs; RTN int8 < int4 in KL;
- refusals by name: text_config missing / not an object / another
  model_type, text_config fields (prefixed text_config); deepseek_v5 is
  unsupported_model_type naming the model_type;
- kimi_linear (kimi-linear-tiny): 213 tensors in save_pretrained's spelling
  (block_sparse_moe., experts w1/w2/w3), the hub's mlp. spelling, the
  attribute_map config spellings and linear_attn_config give the same digest;
  digest across threads / schedules / kernel paths; RTN int8 < int4; refusals
  by name; FP8-block / NVFP4 copies of the experts load and capture.
"""
from fdcheck import Checks
import json, os, shutil, struct, subprocess, sys

T = Checks("kimi", "fd-kimi-")
case, run, W, manifest, BIN = T.case, T.run, T.path, T.manifest, T.bin


def digest(ds):
    return manifest(ds)["capture"]["capture_content_digest"]


def capture(model, out, *extra):
    return run("capture", "--model", W(model), "--panel", W("fx", "panel"), "--out", W(out), "--role", "root", "--lane",
               "other", "--dataset-id", "test.k25." + out, "--dataset-name", "k25", "--windows", 2, *extra)


def variant(name, edit=None, names=None, src="fx"):
    """a copy of the fixture, config.json edited, tensors renamed / dropped / added by names(header) -> header"""
    d = W(name)
    shutil.copytree(W(src), d, ignore=shutil.ignore_patterns("panel"))
    if edit:
        cfg = json.load(open(os.path.join(d, "config.json")))
        edit(cfg)
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2, sort_keys=True)
    if names:
        p = os.path.join(d, "model.safetensors")
        data = open(p, "rb").read()
        n = struct.unpack("<Q", data[:8])[0]
        hdr, body = json.loads(data[8:8 + n]), data[8 + n:]
        hdr = names(hdr, body)
        if isinstance(hdr, tuple):
            hdr, body = hdr
        hdr.pop("__metadata__", None)
        nb, off = [], 0  # the kept tensors' bytes, packed in header order
        for k, v in hdr.items():
            a, b = v["data_offsets"]
            nb.append(body[a:b])
            v["data_offsets"] = [off, off + b - a]
            off += b - a
        body = b"".join(nb)
        hb = json.dumps(hdr, separators=(",", ":")).encode()
        hb += b" " * (-len(hb) % 8)
        open(p, "wb").write(struct.pack("<Q", len(hb)) + hb + body)
    return d


def renamed(pairs):
    def f(hdr, body):
        out = {}
        for k, v in hdr.items():
            for a, b in pairs:
                if k.startswith(a):
                    k = b + k[len(a):]
                    break
            out[k] = dict(v)
        return out
    return f


def dropped(prefixes):
    return lambda hdr, body: {k: dict(v) for k, v in hdr.items() if not any(k.startswith(p) for p in prefixes)}


def copied(src, dst):
    """one more tensor dst with src's bytes"""
    def f(hdr, body):
        a, b = hdr[src]["data_offsets"]
        hdr = {k: dict(v) for k, v in hdr.items()}
        hdr[dst] = dict(hdr[src], data_offsets=[len(body), len(body) + b - a])
        return hdr, body + body[a:b]
    return f


def check(d):
    rc, out, err = run("inspect-model", d, "--json")
    return rc, (json.loads(out)["check"] if rc == 0 else {}), out + err


try:
    rc, out, err = run("fixture", "--preset", "kimi-k25-tiny", "--seed", 1, "--out", W("fx"))
    case("kimi-k25-tiny fixture", rc == 0, out + err)
    rc, chk, msg = check(W("fx"))
    case("the loader expects the 201 text tensors; the 23 vision / projector tensors are ignored",
         rc == 0 and chk["expected"] == 201 and chk["tensors"] == 224 and len(chk["ignored"]) == 23
         and all(n.startswith(("vision_tower.", "mm_projector.", "model.mm_projector.")) for n in chk["ignored"])
         and not chk["missing"] and not chk["unexpected"] and not chk["misshaped"], msg)
    cfg = json.load(open(W("fx", "config.json")))
    case("the fixture's config nests the text model (text_config.model_type deepseek_v3) and is untied at the top",
         cfg["model_type"] == "kimi_k25" and cfg["text_config"]["model_type"] == "deepseek_v3"
         and cfg["tie_word_embeddings"] is False and "vision_config" in cfg, cfg)
    rc, out, err = run("architectures", "show", "kimi_k25")
    case("`architectures show kimi_k25` names Kimi_K25ForConditionalGeneration",
         rc == 0 and "Kimi_K25ForConditionalGeneration" in out, out + err)

    rc, out, err = capture("fx", "base", "--threads", 2, "--gemm-order", "pair")
    case("capture kimi-k25-tiny (pair order)", rc == 0, out + err)
    base = digest(W("base")) if rc == 0 else None

    # save_pretrained's spelling: blocks.N and language_model.lm_head
    sp = variant("saved", names=renamed([("language_model.model.layers.", "language_model.model.blocks."),
                                         ("lm_head.", "language_model.lm_head.")]))
    rc, chk, msg = check(sp)
    case("save_pretrained's spelling (language_model.model.blocks.N, language_model.lm_head) loads with none missing",
         rc == 0 and chk["expected"] == 201 and not chk["missing"] and not chk["unexpected"], msg)
    rc, out, err = capture("saved", "saved-cap", "--gemm-order", "pair")
    case("... and captures to the same digest", rc == 0 and digest(W("saved-cap")) == base, out + err)
    both = variant("both", names=copied("language_model.model.layers.0.input_layernorm.weight",
                                        "language_model.model.blocks.0.input_layernorm.weight"))
    rc, chk, msg = check(both)
    case("a tensor in both spellings (layers.0 and blocks.0) is refused naming both",
         rc == 3 and "REFUSED [checkpoint_mismatch]" in msg and "blocks.0.input_layernorm" in msg
         and "layers.0.input_layernorm" in msg, msg)
    rc, out, err = run("inspect-model", both, "--json")
    case("... and inspect-model --json reports that refusal (exit 3, no crash)",
         rc == 3 and "checkpoint_mismatch" in out + err, (rc, out + err))
    bare = variant("bare", names=renamed([("language_model.model.layers.0.input_layernorm.",
                                           "model.layers.0.input_layernorm.")]))
    rc, chk, msg = check(bare)
    case("deepseek_v3's spelling model.layers.N in a kimi_k25 checkpoint is unexpected (and the tensor missing)",
         rc == 3 and "REFUSED [checkpoint_mismatch]" in msg and "model.layers.0.input_layernorm.weight" in msg
         and "missing" in msg and "unexpected" in msg, msg)
    nov = variant("novision", names=dropped(("vision_tower.", "mm_projector.", "model.mm_projector.")))
    rc, chk, msg = check(nov)
    case("without the vision tower and projector the text model loads (they are skipped, not required)",
         rc == 0 and not chk["ignored"] and not chk["missing"], msg)
    rc, out, err = capture("novision", "novision-cap", "--gemm-order", "pair")
    case("... with the same digest", rc == 0 and digest(W("novision-cap")) == base, out + err)
    mtp = variant("mtp", names=copied("language_model.model.layers.0.input_layernorm.weight",
                                      "language_model.model.layers.4.enorm.weight"))
    rc, chk, msg = check(mtp)
    case("an MTP layer (language_model.model.layers.4 of 4) is ignored",
         rc == 0 and "language_model.model.layers.4.enorm.weight" in chk.get("ignored", []) and not chk["unexpected"], msg)

    # the text model as a deepseek_v3 checkpoint: the same forward, the same bits
    def as_ds3(c):
        tc = c["text_config"]
        c.clear()
        c.update(tc, architectures=["DeepseekV3ForCausalLM"], transformers_version="5.25.0")
    ds3 = variant("ds3", as_ds3, names=lambda h, b: {(k[len("language_model."):] if k.startswith("language_model.model.") else k): v
                                                     for k, v in dropped(("vision_tower.", "mm_projector.", "model.mm_projector."))(h, b).items()})
    rc, out, err = capture("ds3", "ds3-cap", "--gemm-order", "pair")
    case("the text model saved as deepseek_v3 (model.*) captures to the same digest", rc == 0 and digest(W("ds3-cap")) == base,
         out + err)

    # the head: the top-level tie_word_embeddings (default true), not text_config's
    tied = variant("tied", lambda c: c.pop("tie_word_embeddings"))
    rc, chk, msg = check(tied)
    case("top-level tie_word_embeddings absent (default true): the untied lm_head is tolerated", rc == 0 and not chk["unexpected"], msg)
    rc, out, err = capture("tied", "tied-cap", "--gemm-order", "pair")
    case("... and the head captured is the embedding (tied), whatever text_config says",
         rc == 0 and "embed_tokens" in json.dumps(manifest(W("tied-cap"))) and digest(W("tied-cap")) == base, out + err)

    # digest: threads, schedules, kernel paths
    runs = [("t1-lo", ["--threads", 1, "--schedule", "layer-outer"]), ("t2-lo", ["--threads", 2, "--schedule", "layer-outer"]),
            ("t1-wo", ["--threads", 1, "--schedule", "window-outer"])]
    for k in ("scalar", "avx2", "avx512f", "avx512bf16"):
        runs.append(("k-" + k, ["--threads", 2, "--kernel", k]))
    for tag, extra in runs:
        rc, out, err = capture("fx", tag, "--gemm-order", "pair", *extra)
        if rc == 3 and tag.startswith("k-") and "REFUSED" in out + err:
            print("skip: %s (this host: %s)" % (tag, (out + err).strip().splitlines()[-1][:120]))
            continue
        case("pair order, %s: same capture_content_digest as 2 threads window-outer" % " ".join(map(str, extra)),
             rc == 0 and digest(W(tag)) == base, out + err)

    # RTN int8 < int4 (routed experts; quantize keeps the stored names)
    kl = {}
    for bits in (8, 4):
        rc, out, err = run("quantize", "--src", W("fx"), "--dst", W("q%d" % bits), "--bits", bits, "--match", "mlp.experts",
                           "--emit-scope", W("s%d.json" % bits))
        case("quantize --bits %d --match mlp.experts" % bits, rc == 0, out + err)
        rc, out, err = run("capture", "--model", W("q%d" % bits), "--panel", W("fx", "panel"), "--out", W("c%d" % bits),
                           "--role", "quant", "--lane", "other", "--dataset-id", "test.k25.q%d" % bits, "--dataset-name",
                           "k25", "--windows", 2, "--gemm-order", "pair", "--scope-file", W("s%d.json" % bits))
        case("capture the int%d checkpoint" % bits, rc == 0, out + err)
        rc, out, err = run("compare", "--reference", W("base"), "--candidate", W("c%d" % bits), "--out", W("cmp%d" % bits),
                           "--no-bootstrap")
        case("compare int%d against the bf16 root" % bits, rc == 0, out + err)
        if rc == 0:
            kl[bits] = json.load(open(W("cmp%d" % bits, "comparison-receipt.json")))["kl"]["mean"]
    case("RTN KL: 0 < int8 < int4 (%s)" % kl, len(kl) == 2 and 0 < kl[8] < kl[4], kl)

    # refusals by name
    def refused(name, edit, code, *words):
        d = variant(name.replace(" ", "_"), edit)
        rc, out, err = run("inspect-model", d)
        msg = out + err
        case("refused %s: %s" % (code, name), rc == 3 and "REFUSED [%s]" % code in msg and all(w in msg for w in words), msg)

    tc = lambda **kv: (lambda c: c["text_config"].update(kv))
    refused("text_config missing", lambda c: c.pop("text_config"), "bad_config", "text_config", "missing")
    refused("text_config not an object", lambda c: c.update(text_config=[1]), "bad_config", "text_config", "not an object")
    refused("text_config.model_type qwen3", tc(model_type="qwen3"), "bad_config", "text_config.model_type", "deepseek_v3")
    refused("text_config.topk_method greedy", tc(topk_method="greedy"), "bad_config", "text_config", "topk_method")
    refused("text_config.rope_type longrope", lambda c: c["text_config"]["rope_parameters"].update(rope_type="longrope"),
            "bad_config", "text_config", "longrope")
    refused("text_config.num_key_value_heads 2", tc(num_key_value_heads=2), "bad_config", "text_config", "num_key_value_heads")
    refused("top-level tie_word_embeddings not a boolean", lambda c: c.update(tie_word_embeddings="yes"), "bad_config",
            "tie_word_embeddings")
    rc, chk, msg = check(variant("kimi_k2_type", tc(model_type="kimi_k2")))
    case("text_config.model_type kimi_k2 (the hub's remote-code spelling) is read as deepseek_v3", rc == 0, msg)
    refused("model_type deepseek_v5", lambda c: c.update(model_type="deepseek_v5"), "unsupported_model_type",
            "deepseek_v5", "deepseek_v4", "kimi_k25", "kimi_linear")

    # ---------------------------------------------------------------- kimi_linear
    rc, out, err = run("fixture", "--preset", "kimi-linear-tiny", "--seed", 1, "--out", W("kl"))
    case("kimi-linear-tiny fixture", rc == 0, out + err)
    rc, chk, msg = check(W("kl"))
    case("kimi_linear: the loader expects exactly the 213 tensors the fixture wrote",
         rc == 0 and chk["expected"] == chk["tensors"] == 213 and not chk["missing"] and not chk["unexpected"]
         and not chk["misshaped"] and not chk["ignored"], msg)
    data = open(W("kl", "model.safetensors"), "rb").read()
    names = set(json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]]))
    case("kimi_linear's fixture spells the MLP / MoE as save_pretrained does (block_sparse_moe., experts w1/w2/w3, "
         "q/k/v_conv1d)", "model.layers.0.block_sparse_moe.gate_proj.weight" in names
         and "model.layers.1.block_sparse_moe.experts.0.w1.weight" in names
         and "model.layers.0.self_attn.q_conv1d.weight" in names and not any(".mlp." in n for n in names), sorted(names)[:8])

    def klcap(model, out, *extra):
        return run("capture", "--model", W(model), "--panel", W("kl", "panel"), "--out", W(out), "--role", "root", "--lane",
                   "other", "--dataset-id", "test.kl." + out, "--dataset-name", "kl", "--windows", 2, *extra)

    rc, out, err = klcap("kl", "klbase", "--threads", 2, "--gemm-order", "pair")
    case("capture kimi-linear-tiny (pair order)", rc == 0, out + err)
    klbase = digest(W("klbase")) if rc == 0 else None
    for tag, extra in runs:
        rc, out, err = klcap("kl", "kl" + tag, "--gemm-order", "pair", *extra)
        if rc == 3 and tag.startswith("k-") and "REFUSED" in out + err:
            continue
        case("kimi_linear, %s: same capture_content_digest" % " ".join(map(str, extra)), rc == 0 and digest(W("kl" + tag)) == klbase,
             out + err)

    def kl_same(name, edit=None, names_=None, what=""):
        variant(name, edit, names_, src="kl")
        rc, out, err = klcap(name, name + "-cap", "--gemm-order", "pair")
        case("kimi_linear %s: same digest" % what, rc == 0 and digest(W(name + "-cap")) == klbase, out + err)

    kl_same("klhub", names_=renamed([("model.layers.0.block_sparse_moe.", "model.layers.0.mlp.")]),
            what="with the dense MLP spelled mlp. (the hub's spelling)")

    def attr_names(c):
        for stored, attr in (("num_experts", "num_local_experts"), ("num_experts_per_token", "num_experts_per_tok"),
                             ("num_expert_group", "n_group"), ("moe_renormalize", "norm_topk_prob"),
                             ("num_shared_experts", "n_shared_experts"), ("model_max_length", "max_position_embeddings")):
            c[attr] = c.pop(stored)
    kl_same("klattr", attr_names, what="with the attribute spellings (num_local_experts, n_group, ...) in config.json")

    def lac(c):
        c.pop("layer_types")
        c["linear_attn_config"] = {"full_attn_layers": [2, 4], "kda_layers": [1, 3], "head_dim": c.pop("linear_head_dim"),
                                   "num_heads": c.pop("linear_num_heads"), "short_conv_kernel_size": 4}
    kl_same("kllac", lac, what="with the hub's linear_attn_config (1-indexed full_attn_layers / kda_layers)")
    kldup = variant("kldup", names=copied("model.layers.0.block_sparse_moe.gate_proj.weight", "model.layers.0.mlp.gate_proj.weight"),
                    src="kl")
    rc, chk, msg = check(kldup)
    case("kimi_linear: one tensor spelled both block_sparse_moe. and mlp. is refused naming both",
         rc == 3 and "block_sparse_moe.gate_proj" in msg and "mlp.gate_proj" in msg, msg)

    def klrefused(name, edit, code, *words):
        d = variant(name.replace(" ", "_"), edit, src="kl")
        rc, out, err = run("inspect-model", d)
        msg = out + err
        case("kimi_linear refused %s: %s" % (code, name), rc == 3 and "REFUSED [%s]" % code in msg and all(w in msg for w in words), msg)

    klrefused("layer_types absent (every 4th from 4 full: all KDA here) on MLA tensors", lambda c: c.pop("layer_types"),
              "checkpoint_mismatch", "model.layers.1.self_attn.A_log", "kv_a_proj_with_mqa")
    klrefused("layer_types entry sliding_attention", lambda c: c["layer_types"].__setitem__(1, "sliding_attention"),
              "bad_config", "layer_types")
    klrefused("moe_router_activation_func softmax", lambda c: c.update(moe_router_activation_func="softmax"), "bad_config",
              "moe_router_activation_func")
    klrefused("mla_use_nope false", lambda c: c.update(mla_use_nope=False), "bad_config", "mla_use_nope")
    klrefused("linear_attn_config not an object", lambda c: c.update(linear_attn_config=[1]), "bad_config", "linear_attn_config")
    klrefused("kda_layers out of range", lambda c: (c.pop("layer_types"), c.update(linear_attn_config={"full_attn_layers": [2, 4], "kda_layers": [1, 5]})),
              "bad_config", "kda_layers")
    klrefused("a layer in both lists", lambda c: (c.pop("layer_types"), c.update(linear_attn_config={"full_attn_layers": [1, 2, 4], "kda_layers": [1, 3]})),
              "bad_config", "exactly one")
    klrefused("linear_num_heads 2^40", lambda c: c.update(linear_num_heads=1 << 40), "bad_config", "linear_num_heads")
    klrefused("linear_attn_config.head_dim 2048", lambda c: c.update(linear_attn_config={"head_dim": 2048}), "bad_config",
              "linear_head_dim")
    klrefused("num_key_value_heads 2", lambda c: c.update(num_key_value_heads=2), "bad_config", "num_key_value_heads")

    kl = {}
    for bits in (8, 4):
        rc, out, err = run("quantize", "--src", W("kl"), "--dst", W("klq%d" % bits), "--bits", bits, "--match",
                           "block_sparse_moe.experts", "--emit-scope", W("kls%d.json" % bits))
        case("kimi_linear: quantize --bits %d --match block_sparse_moe.experts" % bits, rc == 0, out + err)
        rc, out, err = run("capture", "--model", W("klq%d" % bits), "--panel", W("kl", "panel"), "--out", W("klc%d" % bits),
                           "--role", "quant", "--lane", "other", "--dataset-id", "test.kl.q%d" % bits, "--dataset-name",
                           "kl", "--windows", 2, "--gemm-order", "pair", "--scope-file", W("kls%d.json" % bits))
        case("kimi_linear: capture the int%d checkpoint" % bits, rc == 0, out + err)
        rc, out, err = run("compare", "--reference", W("klbase"), "--candidate", W("klc%d" % bits), "--out",
                           W("klcmp%d" % bits), "--no-bootstrap")
        if rc == 0:
            kl[bits] = json.load(open(W("klcmp%d" % bits, "comparison-receipt.json")))["kl"]["mean"]
    case("kimi_linear RTN KL: 0 < int8 < int4 (%s)" % kl, len(kl) == 2 and 0 < kl[8] < kl[4], kl)
    # FP8-block / NVFP4 of the stored experts (w1/w2/w3): quantization_config speaks of the stored names,
    # the loader of the renamed ones
    for fmt in ("fp8-block", "nvfp4"):
        rc, out, err = run("quantize", "--format", fmt, "--match", "block_sparse_moe.experts.", "--src", W("kl"), "--dst",
                           W("kl-" + fmt))
        case("kimi_linear: quantize --format %s of the experts (w1/w2/w3)" % fmt, rc == 0, out + err)
        rc, chk, msg = check(W("kl-" + fmt))
        case("... loads: 144 quantized experts, none missing / unexpected", rc == 0 and chk.get("quantization", {}).get("quantized_weights") == 144
             and not chk["missing"] and not chk["unexpected"], msg)
        rc, out, err = run("capture", "--model", W("kl-" + fmt), "--panel", W("kl", "panel"), "--out", W("klc-" + fmt),
                           "--role", "quant", "--lane", "other", "--dataset-id", "test.kl." + fmt, "--dataset-name", "kl",
                           "--windows", 2, "--gemm-order", "pair")
        ok = rc == 0 and run("compare", "--reference", W("klbase"), "--candidate", W("klc-" + fmt), "--out",
                             W("klcmp-" + fmt), "--no-bootstrap")[0] == 0
        klf = json.load(open(W("klcmp-" + fmt, "comparison-receipt.json")))["kl"]["mean"] if ok else None
        case("... captures as shipped, KL against the bf16 root > 0 (%s)" % klf, ok and klf > 0, out + err)

    # transformers' own checkpoints (save_pretrained), per layer: only with torch
    py = os.environ.get("FIDELITY_TORCH_PYTHON", sys.executable)
    has = subprocess.run([py, "-c", "import torch, transformers; transformers.Kimi_K25ForConditionalGeneration"],
                         capture_output=True).returncode == 0
    if not has:
        print("skipped (torch not installed): tests/parity/kimi_parity.py variants")
    else:
        p = subprocess.run([py, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity", "kimi_parity.py"),
                            "variants", BIN, W("parity")], capture_output=True, text=True,
                           env=dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_BF16"))
        case("kimi_parity.py variants: save_pretrained checkpoints load clean and are bit-identical per layer",
             p.returncode == 0, p.stdout[-1500:] + p.stderr[-500:])
        p = subprocess.run([py, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity", "kimi_parity.py"),
                            "linear", BIN, W("klparity")], capture_output=True, text=True,
                           env=dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_BF16"))
        rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith('{"variant"')]
        # bit-identical everywhere since torch.exp / sqrt / log are MKL's EX kernels (kernels/mkl_vml.h):
        # with the Z0 exp / sqrt kl-default-types' final was 0.924, with libm logf kl-qlora-groups' 0.998
        case("kimi_parity.py linear: KimiLinear save_pretrained checkpoints load clean; every layer, every token "
             "mixer teacher-forced (MLA without RoPE, KDA) and the final norm bit-identical, routing 1.0",
             p.returncode == 0 and len(rows) == 3 and all(r.get("transformers_load_clean") and r.get("inspect_rc") == 0
             and r["routing_agreement"] == 1.0 and min(r["layers_bit_identical"]) == 1.0
             and min(r["mixer_teacher_forced_bit_identical"]) == 1.0 and r["final_bit_identical"] == 1.0
             for r in rows), p.stdout[-1500:] + p.stderr[-500:])
finally:
    T.finish()
