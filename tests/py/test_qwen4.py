#!/usr/bin/env python3
"""model_types qwen4_exp, qwen4_exp_text (issue 21): the architecture-table
entries (qwen3_5_moe's layers over hyper-connection streams with QSA on the
attention layers), the fixture, the composite spelling, refusals.  The
committed whole-model golden (tests/parity/golden/qwen4-exp-tiny-seed1-eager)
is checked by run_parity.sh; the live transformers check at the end needs
torch and skips cleanly without it.

usage: test_qwen4.py BINARY

- `fixture --preset qwen4-exp-tiny`: the loader expects exactly the 189
  tensors written (one list); `architectures list` names both;
- the capture_content_digest is identical across --threads 1/2, both
  schedules and every kernel path this CPU has; `verify` passes;
- RTN int8 of the routed experts has a smaller KL than int4;
- the composite spelling (model_type qwen4_exp, text_config,
  model.language_model.*, model.visual.* and mtp.* skipped by name) captures
  to the text-only digest;
- the config is read: a budget covering every block (QSA selects all:
  another digest), hc_lowrank (the tensor list), layer_types
  "full_attention" read as indexed_attention (the same digest);
- refusals by name: ple_layer_ids, output_gate_type sigmoid, norm_topk_prob
  false, hc_count 3 / 1, indexer_kv_heads 2, indexer_budget not a multiple
  of indexer_compress_ratio, a QSA field missing, rotary dims wider than
  indexer_head_dim, a layer_types entry sliding_attention; an unsupported
  model_type names qwen4_exp;
- with torch + transformers (optional, AVX512_BF16 host): a checkpoint
  written by transformers' own save_pretrained (its _init_weights) captures
  bit-identical to transformers' final-mixer output.
"""
from fdcheck import Checks
import json, os, shutil, struct, subprocess, sys

T = Checks("qwen4", "fd-qwen4-")
case, run, W, manifest, BIN = T.case, T.run, T.path, T.manifest, T.bin
HERE = os.path.dirname(os.path.abspath(__file__))
P = "qwen4-exp-tiny"


def digest(ds):
    return manifest(ds)["capture"]["capture_content_digest"]


def capture(model, out, *extra, role="root", panel=None, windows=2):
    return run("capture", "--model", W(model), "--panel", panel or W(P, "panel"), "--out", W(out), "--role", role,
               "--lane", "other", "--dataset-id", "test." + out, "--dataset-name", "qwen4", "--windows", windows,
               "--no-sanity-check", *extra)


def read_st(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


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
    case("architectures list names qwen4_exp and qwen4_exp_text",
         rc == 0 and "qwen4_exp " in out and "Qwen4ExpForConditionalGeneration" in out
         and "qwen4_exp_text" in out and "Qwen4ExpForCausalLM" in out, out + err)

    rc, out, err = run("fixture", "--preset", P, "--seed", 1, "--out", W(P))
    case("%s fixture" % P, rc == 0, out + err)
    rc, out, err = run("inspect-model", W(P), "--json")
    chk = json.loads(out).get("check", {}) if rc == 0 else {}
    case("%s: model_type qwen4_exp_text, the loader expects exactly the 189 tensors written" % P,
         rc == 0 and json.load(open(W(P, "config.json")))["model_type"] == "qwen4_exp_text"
         and chk.get("expected") == chk.get("tensors") == 189 and not chk["missing"] and not chk["unexpected"]
         and not chk["misshaped"], out + err)
    names = load_tensors(W(P, "model.safetensors")) if rc == 0 else {}
    case("%s: hyper-connection residuals, final mixer and QSA indexer tensors, no RMSNorm of qwen3_5's" % P,
         "model.hyper_connection_mixer.input_mix_weight_up.weight" in names
         and "model.layers.1.self_attn.indexer.index_qk_proj.weight" in names
         and "model.layers.0.mlp_hyper_connection.block_inject_weight.weight" in names
         and "model.norm.weight" not in names and "model.layers.0.input_layernorm.weight" not in names, sorted(names)[:8])

    runs = [("t1", "--threads", 1), ("t2", "--threads", 2),
            ("lo1", "--schedule", "layer-outer", "--threads", 1), ("lo2", "--schedule", "layer-outer", "--threads", 2)]
    runs += [("k-" + p, "--kernel", p, "--threads", 2) for p in paths]
    digests = {}
    for name, *extra in runs:
        rc, out, err = capture(P, P + "-" + name, *extra)
        case("%s: capture %s" % (P, " ".join(map(str, extra))), rc == 0, out + err)
        if rc == 0:
            digests[name] = digest(W(P + "-" + name))
    case("%s: one capture_content_digest across threads 1/2, both schedules, kernel paths %s" % (P, paths),
         len(digests) == len(runs) and len(set(digests.values())) == 1, digests)
    rc, out, err = run("verify", W(P + "-t1"))
    case("%s: verify" % P, rc == 0, out + err)
    kl = {}
    for bits in (8, 4):
        q = "%s-int%d" % (P, bits)
        rc, out, err = run("quantize", "--src", W(P), "--dst", W(q), "--match", "mlp.experts", "--bits", bits,
                           "--tensor-class", "moe.experts", "--emit-scope", W(q + "-scope.json"))
        rc2, out2, err2 = capture(q, q + "-cap", "--scope-file", W(q + "-scope.json"), role="quant") if rc == 0 else (1, out, err)
        rc3, out3, err3 = run("compare", "--reference", W(P + "-t1"), "--candidate", W(q + "-cap"), "--out",
                              W(q + "-cmp"), "--no-bootstrap") if rc2 == 0 else (1, out2, err2)
        if rc3 == 0:
            kl[bits] = json.load(open(W(q + "-cmp", "comparison-receipt.json")))["kl"]["mean"]
        case("%s: RTN int%d quantize, capture, compare" % (P, bits), rc3 == 0, out3 + err3)
    case("%s: KL(int8) < KL(int4), both > 0" % P, len(kl) == 2 and 0 < kl[8] < kl[4], kl)

    # the composite spelling
    shutil.copytree(W(P), W("cg"))
    c = json.load(open(W(P, "config.json")))
    text = dict(c, model_type="qwen4_exp_text")
    for k in ("architectures", "dtype", "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id"):
        text.pop(k, None)
    json.dump({"architectures": ["Qwen4ExpForConditionalGeneration"], "model_type": "qwen4_exp", "text_config": text,
               "tie_word_embeddings": False, "dtype": "bfloat16",
               "vision_config": {"depth": 1, "hidden_size": 16, "model_type": "qwen4_exp_vision"}},
              open(W("cg", "config.json"), "w"), indent=2, sort_keys=True)
    t = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v for k, v in names.items()}
    t["model.visual.patch_embed.proj.weight"] = ("BF16", [4], b"\0" * 8)
    t["mtp.fc.weight"] = ("BF16", [4], b"\0" * 8)
    write_st(W("cg", "model.safetensors"), t)
    rc, out, err = run("inspect-model", W("cg"), "--json")
    chk = json.loads(out)["check"] if rc == 0 else {}
    case("qwen4_exp (ForConditionalGeneration): model.visual.* and mtp.* ignored by name, nothing missing or unexpected",
         rc == 0 and sorted(chk["ignored"]) == ["model.visual.patch_embed.proj.weight", "mtp.fc.weight"]
         and not chk["missing"] and not chk["unexpected"], out + err)
    rc, out, err = capture("cg", "cg-cap")
    case("qwen4_exp: the composite checkpoint captures to the text-only digest",
         rc == 0 and digest(W("cg-cap")) == digest(W(P + "-t1")), out + err)

    # the config is read
    edited(P, "budget-all", lambda c: c.update(indexer_budget=400))
    rc, out, err = capture("budget-all", "budget-all-cap")
    case("QSA is live: a budget covering every block (plain causal attention) gives another digest",
         rc == 0 and digest(W("budget-all-cap")) != digest(W(P + "-t1")), out + err)
    edited(P, "lt-full", lambda c: c.update(layer_types=["linear_attention", "full_attention"] * 2))
    rc, out, err = capture("lt-full", "lt-full-cap")
    case("layer_types full_attention is read as indexed_attention (as the config's post_init): the same digest",
         rc == 0 and digest(W("lt-full-cap")) == digest(W(P + "-t1")), out + err)
    edited(P, "rank", lambda c: c.update(hc_lowrank=8))
    rc, out, err = run("inspect-model", W("rank"))
    case("hc_lowrank decides the mixers' shapes (8 on a rank-16 checkpoint: misshaped)",
         rc == 3 and "checkpoint_mismatch" in out + err and "input_mix_weight" in out + err, out + err)

    # refusals by name
    edited(P, "r-ple", lambda c: c.update(ple_layer_ids=[1]))
    refused("r-ple", "ple_layer_ids (per-layer n-gram embeddings)", ["bad_config", "ple_layer_ids", "PLE"])
    edited(P, "r-gate", lambda c: c.update(output_gate_type="sigmoid"))
    refused("r-gate", "output_gate_type sigmoid", ["bad_config", "output_gate_type"])
    edited(P, "r-norm", lambda c: c.update(norm_topk_prob=False))
    refused("r-norm", "norm_topk_prob false", ["bad_config", "norm_topk_prob"])
    edited(P, "r-hc3", lambda c: c.update(hc_count=3))
    refused("r-hc3", "hc_count 3 (not a power of two)", ["bad_config", "hc_count"])
    edited(P, "r-hc1", lambda c: c.update(hc_count=1))
    refused("r-hc1", "hc_count 1", ["bad_config", "hc_count"])
    edited(P, "r-kvh", lambda c: c.update(indexer_kv_heads=2))
    refused("r-kvh", "indexer_kv_heads 2", ["bad_config", "indexer_kv_heads"])
    edited(P, "r-budget", lambda c: c.update(indexer_budget=18))
    refused("r-budget", "indexer_budget 18 with blocks of 4", ["bad_config", "indexer_budget"])
    edited(P, "r-missing", lambda c: c.pop("indexer_head_dim"))
    refused("r-missing", "indexer_head_dim missing", ["bad_config", "indexer_head_dim"])
    edited(P, "r-rot", lambda c: c.update(indexer_head_dim=2))
    refused("r-rot", "rotary dims (4) wider than indexer_head_dim 2", ["bad_config", "indexer_head_dim"])
    edited(P, "r-lt", lambda c: c.update(layer_types=["linear_attention", "sliding_attention"] * 2))
    refused("r-lt", "a layer_types entry sliding_attention", ["bad_config", "layer_types"])
    edited("cg", "r-textple", lambda c: c["text_config"].update(ple_layer_ids=[1, 3]))
    refused("r-textple", "text_config.ple_layer_ids (named with its text_config prefix)",
            ["bad_config", "text_config", "ple_layer_ids"])
    edited(P, "r-mt", lambda c: c.update(model_type="qwen4_next"))
    refused("r-mt", "unsupported model_type names the supported ones", ["unsupported_model_type", "qwen4_exp", "qwen4_exp_text"])

    # live oracle (optional): transformers' own checkpoint, bit for bit
    try:
        import torch, transformers  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    cpu = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    if not have_torch:
        print("skip transformers live check: skipped (torch not installed)")
    elif " avx512_bf16" not in cpu:
        print("skip transformers live check: skipped (not an AVX512_BF16 host: the golden's host order)")
    else:
        env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_BF16")
        oracle = os.path.join(HERE, "..", "parity", "transformers_hidden_llama.py")
        p = subprocess.run([sys.executable, oracle, "--save-pretrained", W(P), W("hf"), "3"],
                           capture_output=True, text=True, env=env)
        shutil.copytree(W(P, "panel"), W("hf", "panel")) if p.returncode == 0 else None
        p2 = subprocess.run([sys.executable, oracle, W("hf"), W("hf", "panel"), W("hf-gold")],
                            capture_output=True, text=True, env=env) if p.returncode == 0 else p
        rc, out, err = capture("hf", "hf-cap", "--gemm-order", "pair", windows=4) if p2.returncode == 0 else (1, p2.stdout, p2.stderr)
        cmp = subprocess.run([sys.executable, os.path.join(HERE, "..", "parity", "compare_hidden.py"), W("hf-cap"),
                              W("hf-gold"), "--min-identical", "1.0"], capture_output=True, text=True) if rc == 0 else None
        case("transformers save_pretrained checkpoint (its own init): bit-identical final-mixer output",
             cmp is not None and cmp.returncode == 0, (out + err + (cmp.stdout + cmp.stderr if cmp else ""))[-1500:])
finally:
    T.finish()
