#!/usr/bin/env python3
"""model_types qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text (issue 21):
the architecture-table entries, their fixtures, the composite
(ForConditionalGeneration) spelling, refusals.  The committed whole-model
goldens (tests/parity/golden/qwen35-*) are checked by run_parity.sh; the
live transformers check at the end needs torch and skips cleanly without it.

usage: test_qwen35.py BINARY

- `fixture --preset qwen35-tiny|qwen35-moe-tiny`: the loader expects exactly
  the tensors written (one list); `architectures list` names all four;
- each preset's capture_content_digest is identical across --threads 1/2,
  both schedules and every kernel path this CPU has; `verify` passes;
- RTN int8 of mlp.down_proj (MoE: the routed experts) has a smaller KL than int4;
- the composite spelling (model_type qwen3_5 / qwen3_5_moe, text_config,
  model.language_model.*, a vision tower model.visual.* and an MTP head mtp.*)
  loads with the vision and MTP tensors ignored by name and captures to the
  text-only digest; without the language_model prefix it is a
  checkpoint_mismatch; any other extra tensor stays unexpected;
- partial_rotary_factor and layer_types are read (other digest / other tensor list);
- refusals by name: rope_type yarn, an odd rotary dim, hidden_act gelu,
  linear_num_value_heads not a multiple of linear_num_key_heads, a
  layer_types entry other than linear_attention / full_attention, a
  composite without text_config; an unsupported model_type names qwen3_5;
- with torch + transformers (optional): a checkpoint written by transformers'
  own save_pretrained with the real models' linear head dims (128) captures
  bit-identical to transformers' final-norm output (on an AVX512_BF16 host,
  the host the goldens were made on; elsewhere the check is skipped).
"""
from fdcheck import Checks
import json, os, shutil, struct, subprocess, sys

T = Checks("qwen35", "fd-qwen35-")
case, run, W, manifest, BIN = T.case, T.run, T.path, T.manifest, T.bin
HERE = os.path.dirname(os.path.abspath(__file__))


def digest(ds):
    return manifest(ds)["capture"]["capture_content_digest"]


def capture(model, out, *extra, role="root", panel=None, windows=2):
    return run("capture", "--model", W(model), "--panel", panel or W(model, "panel"), "--out", W(out), "--role", role,
               "--lane", "other", "--dataset-id", "test." + out, "--dataset-name", "qwen35", "--windows", windows,
               "--no-sanity-check", *extra)


def read_st(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_st(path, tensors):
    """tensors: name -> (dtype, shape, bytes)"""
    hdr, off, parts = {}, 0, []
    for k in sorted(tensors):
        dt, shp, b = tensors[k]
        hdr[k] = {"dtype": dt, "shape": shp, "data_offsets": [off, off + len(b)]}
        off += len(b)
        parts.append(b)
    hb = json.dumps(hdr, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + b"".join(parts))


def load_tensors(path):
    h, body = read_st(path)
    h.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in h.items()}


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


def composite(src, dst, mt, prefix=True, extra=None):
    """the ForConditionalGeneration spelling of a text-only fixture"""
    shutil.copytree(W(src), W(dst))
    c = json.load(open(W(src, "config.json")))
    text = dict(c)
    text["model_type"] = mt + "_text"
    for k in ("architectures", "dtype", "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id"):
        text.pop(k, None)
    top = {"architectures": ["Qwen3_5MoeForConditionalGeneration" if "moe" in mt else "Qwen3_5ForConditionalGeneration"],
           "model_type": mt, "text_config": text, "tie_word_embeddings": False,
           "vision_config": {"depth": 1, "hidden_size": 16, "model_type": mt + "_vision"}, "dtype": "bfloat16"}
    json.dump(top, open(W(dst, "config.json"), "w"), indent=2, sort_keys=True)
    t = load_tensors(W(src, "model.safetensors"))
    if prefix:
        t = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v for k, v in t.items()}
    t["model.visual.patch_embed.proj.weight"] = ("BF16", [16, 3, 2, 2, 2], b"\0\0" * 16 * 24)
    t["mtp.fc.weight"] = ("BF16", [4, 4], b"\0\0" * 16)
    t.update(extra or {})
    write_st(W(dst, "model.safetensors"), t)


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
    case("architectures list names qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text",
         rc == 0 and all(s in out for s in ("qwen3_5      Qwen3_5ForConditionalGeneration", "qwen3_5_text Qwen3_5ForCausalLM",
                                            "qwen3_5_moe  Qwen3_5MoeForConditionalGeneration",
                                            "qwen3_5_moe_text Qwen3_5MoeForCausalLM")), out + err)

    for preset, mt, n in (("qwen35-tiny", "qwen3_5_text", 53), ("qwen35-moe-tiny", "qwen3_5_moe_text", 157)):
        rc, out, err = run("fixture", "--preset", preset, "--seed", 1, "--out", W(preset))
        case("%s fixture" % preset, rc == 0, out + err)
        rc, out, err = run("inspect-model", W(preset), "--json")
        doc = json.loads(out) if rc == 0 else {}
        chk = doc.get("check", {})
        case("%s: model_type %s, the loader expects exactly the %d tensors written" % (preset, mt, n),
             rc == 0 and json.load(open(W(preset, "config.json")))["model_type"] == mt
             and chk.get("expected") == chk.get("tensors") == n and not chk["missing"]
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
        kl = {}
        match, cls = ("mlp.experts", "moe.experts") if "moe" in preset else ("mlp.down_proj", "mlp.down")
        for bits in (8, 4):
            q = "%s-int%d" % (preset, bits)
            rc, out, err = run("quantize", "--src", W(preset), "--dst", W(q), "--match", match, "--bits", bits,
                               "--tensor-class", cls, "--emit-scope", W(q + "-scope.json"))
            rc2, out2, err2 = capture(q, q + "-cap", "--scope-file", W(q + "-scope.json"), role="quant",
                                      panel=W(preset, "panel")) if rc == 0 else (1, out, err)
            rc3, out3, err3 = run("compare", "--reference", W(preset + "-t1"), "--candidate", W(q + "-cap"), "--out",
                                  W(q + "-cmp"), "--no-bootstrap") if rc2 == 0 else (1, out2, err2)
            if rc3 == 0:
                kl[bits] = json.load(open(W(q + "-cmp", "comparison-receipt.json")))["kl"]["mean"]
            case("%s: RTN int%d quantize, capture, compare" % (preset, bits), rc3 == 0, out3 + err3)
        case("%s: KL(int8) < KL(int4), both > 0" % preset, len(kl) == 2 and 0 < kl[8] < kl[4], kl)

    # the composite spelling: text_config, model.language_model.*, the vision tower and MTP head skipped by name
    for src, mt in (("qwen35-tiny", "qwen3_5"), ("qwen35-moe-tiny", "qwen3_5_moe")):
        composite(src, mt + "-cg", mt)
        rc, out, err = run("inspect-model", W(mt + "-cg"), "--json")
        chk = json.loads(out)["check"] if rc == 0 else {}
        case("%s (ForConditionalGeneration): model.visual.* and mtp.* ignored by name, nothing missing or unexpected" % mt,
             rc == 0 and sorted(chk["ignored"]) == ["model.visual.patch_embed.proj.weight", "mtp.fc.weight"]
             and not chk["missing"] and not chk["unexpected"], out + err)
        rc, out, err = capture(mt + "-cg", mt + "-cg-cap", panel=W(src, "panel"))
        case("%s: the composite checkpoint captures to the text-only digest" % mt,
             rc == 0 and digest(W(mt + "-cg-cap")) == digest(W(src + "-t1")), out + err)
    composite("qwen35-tiny", "cg-noprefix", "qwen3_5", prefix=False)
    refused("cg-noprefix", "qwen3_5 composite with the text model under model. (no language_model)",
            ["checkpoint_mismatch", "missing", "model.language_model.embed_tokens.weight"])
    composite("qwen35-tiny", "cg-extra", "qwen3_5", extra={"model.language_model.extra.weight": ("BF16", [2], b"\0" * 4)})
    refused("cg-extra", "an extra tensor outside the skipped prefixes", ["checkpoint_mismatch", "unexpected",
                                                                        "model.language_model.extra.weight"])
    # text-only: a vision tensor is not the text model's
    shutil.copytree(W("qwen35-tiny"), W("text-visual"))
    t = load_tensors(W("qwen35-tiny", "model.safetensors"))
    t["model.visual.x.weight"] = ("BF16", [2], b"\0" * 4)
    write_st(W("text-visual", "model.safetensors"), t)
    refused("text-visual", "qwen3_5_text with a model.visual tensor (only the composite skips the vision tower)",
            ["checkpoint_mismatch", "unexpected", "model.visual.x.weight"])

    # the config is read: partial_rotary_factor 0.5 (8 rotary dims of 16) gives other bits
    edited("qwen35-tiny", "prf-half", lambda c: c["rope_parameters"].update(partial_rotary_factor=0.5))
    rc, out, err = capture("prf-half", "prf-half-cap", panel=W("qwen35-tiny", "panel"))
    case("partial_rotary_factor is read: 0.5 on the same weights gives another digest",
         rc == 0 and digest(W("prf-half-cap")) != digest(W("qwen35-tiny-t1")), out + err)
    edited("qwen35-tiny", "lt-swap", lambda c: c.update(layer_types=["full_attention", "linear_attention"] * 2))
    rc, out, err = run("inspect-model", W("lt-swap"))
    case("layer_types decide the tensor list (swapped types: missing linear_attn / self_attn tensors)",
         rc == 3 and "checkpoint_mismatch" in out + err and "layers.0.self_attn" in out + err, out + err)
    edited("qwen35-tiny", "lt-default", lambda c: c.pop("layer_types"))
    rc, out, err = run("inspect-model", W("lt-default"))
    case("no layer_types: full_attention_interval 4 (layers 0-2 linear, 3 full) decides the tensor list",
         rc == 3 and "layers.1.linear_attn" in out + err, out + err)

    # refusals by name
    edited("qwen35-tiny", "r-yarn", lambda c: c.update(rope_parameters={"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4}))
    refused("r-yarn", "rope_type yarn", ["bad_config", "rope_parameters", "\"yarn\""])
    edited("qwen35-tiny", "r-prf", lambda c: c["rope_parameters"].update(partial_rotary_factor=0.1875))
    refused("r-prf", "an odd rotary dim (16 x 0.1875 = 3)", ["bad_config", "partial_rotary_factor"])
    edited("qwen35-tiny", "r-act", lambda c: c.update(hidden_act="gelu"))
    refused("r-act", "hidden_act gelu", ["bad_config", "hidden_act"])
    edited("qwen35-tiny", "r-heads", lambda c: c.update(linear_num_value_heads=3))
    refused("r-heads", "linear_num_value_heads not a multiple of linear_num_key_heads",
            ["bad_config", "linear_num_value_heads"])
    edited("qwen35-tiny", "r-lt", lambda c: c.update(layer_types=["linear_attention", "sliding_attention"] * 2))
    refused("r-lt", "a layer_types entry other than linear_attention / full_attention", ["bad_config", "layer_types"])
    edited("qwen35-tiny", "r-ltn", lambda c: c.update(layer_types=["linear_attention"]))
    refused("r-ltn", "layer_types of the wrong length", ["bad_config", "layer_types"])
    edited("qwen3_5-cg", "r-notext", lambda c: c.pop("text_config"))
    refused("r-notext", "a qwen3_5 composite without text_config", ["bad_config", "text_config"])
    edited("qwen3_5-cg", "r-textact", lambda c: c["text_config"].update(hidden_act="relu"))
    refused("r-textact", "text_config.hidden_act relu (named with its text_config prefix)",
            ["bad_config", "text_config", "hidden_act"])
    edited("qwen35-tiny", "r-mt", lambda c: c.update(model_type="qwen3_6"))
    refused("r-mt", "unsupported model_type names the supported ones", ["unsupported_model_type", "qwen3_5", "qwen3_5_moe_text"])

    # live oracle (optional): transformers' own checkpoint with 128-dim linear heads, bit for bit
    try:
        import torch, transformers  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    cpu = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    if not have_torch:
        print("skip transformers live check: skipped (torch not installed)")
    elif " avx512_bf16" not in cpu:
        print("skip transformers live check: skipped (not an AVX512_BF16 host: the goldens' host order)")
    else:
        rc, out, err = run("fixture", "--preset", "qwen35-small", "--seed", 1, "--out", W("small"))
        env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_BF16")
        oracle = os.path.join(HERE, "..", "parity", "transformers_hidden_llama.py")
        p = subprocess.run([sys.executable, oracle, "--save-pretrained", W("small"), W("hf-small"), "3"],
                           capture_output=True, text=True, env=env)
        shutil.copytree(W("small", "panel"), W("hf-small", "panel")) if p.returncode == 0 else None
        p2 = subprocess.run([sys.executable, oracle, W("hf-small"), W("hf-small", "panel"), W("hf-gold")],
                            capture_output=True, text=True, env=env) if p.returncode == 0 else p
        rc, out, err = capture("hf-small", "hf-small-cap", "--gemm-order", "pair") if p2.returncode == 0 else (1, p2.stdout, p2.stderr)
        cmp = subprocess.run([sys.executable, os.path.join(HERE, "..", "parity", "compare_hidden.py"), W("hf-small-cap"),
                              W("hf-gold"), "--min-identical", "1.0"], capture_output=True, text=True) if rc == 0 else None
        case("transformers save_pretrained checkpoint (linear heads 128, A_log uniform init): bit-identical final norm",
             cmp is not None and cmp.returncode == 0, (out + err + (cmp.stdout + cmp.stderr if cmp else ""))[-1500:])
finally:
    T.finish()
