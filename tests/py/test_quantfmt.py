#!/usr/bin/env python3
"""Quantized checkpoints as they ship: FP8 block (e4m3, 128x128 scales) and
NVFP4 (ModelOpt), `fidelity quantize --format` and capture.

usage: test_quantfmt.py BINARY

1. Bytes: `quantize --format fp8-block|nvfp4` on the committed oracle inputs
   (tests/py/oracle/quantfmt.safetensors, made by transformers' Fp8Quantize
   and ModelOpt's NVFP4QTensor: quantfmt_oracle.py) gives the packages'
   weights and scales byte for byte; the numpy dequantizer
   (dequant_ref.py) reproduces the packages' bf16 dequantization.  With
   torch + transformers + nvidia-modelopt importable (or
   FIDELITY_ORACLE_PYTHON naming an interpreter that has them) the oracle
   file is regenerated and must be identical; otherwise that step says
   it is skipped.
2. Capture: tiny fixture -> FP8 (every Linear, and experts only) and NVFP4
   (experts) checkpoints; capturing each directly gives the same
   capture_content_digest as capturing the bf16 checkpoint dequant_ref.py
   makes of it; scope / codec / declared_bits / disclosures; NVFP4
   input_scale recorded and disclosed but not applied.
3. Refusals (exit 3, naming the tensor): a missing or mis-shaped scale, an
   unknown quant_method, a quantized tensor the config excludes, a quantized
   root, a --scope-file that contradicts the checkpoint.
4. Peak RSS (release binary; under ASan RSS means nothing and the step says
   so): preset `small` (111M parameters, experts most of them), one window of
   64 tokens: peak <= 1.2 x checkpoint bytes + activations, activations
   measured as peak - checkpoint bytes of the bf16 source's capture.
"""
import hashlib, json, os, shutil, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import numpy as np
    import dequant_ref as dq
except ImportError:  # numpy is the offline dequantizer's only dependency (.ci/run installs it)
    print("numpy unavailable: the FP8/NVFP4 checks need it for the offline dequantizer; skipped")
    sys.exit(0)

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
ASAN = "asan" in BIN
WORK = tempfile.mkdtemp(prefix="fd-quantfmt-")
ORACLE = os.path.join(HERE, "oracle", "quantfmt.safetensors")
SEED002 = ("attn.o=native:bf16@16|attn.other=native:bf16@16|attn.qkv=native:bf16@16|embed_tokens=native:bf16@16|"
           "lm_head=native:bf16@16|mlp.down=native:bf16@16|mlp.gate=native:bf16@16|mlp.up=native:bf16@16|"
           "moe.experts=quantized:nvfp4@4|moe.router=native:mixed|moe.shared_expert=native:bf16@16|mtp=native:mixed|"
           "norm=native:bf16@16|head=native|kv=bf16")
passed = failed = 0


def case(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, str(detail)[:800]))


def run(*args):
    p = subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def W(*p):
    return os.path.join(WORK, *p)


def manifest(ds):
    return json.load(open(os.path.join(ds, "fidelity-dataset.json")))


def digest(ds):
    return manifest(ds)["capture"]["capture_content_digest"]


def capture(model, out, role="quant", scope=None, panel=None, extra=()):
    a = ["capture", "--model", model, "--panel", panel or W("m", "panel"), "--out", out, "--role", role, "--lane",
         "other", "--dataset-id", "test." + os.path.basename(out), "--dataset-name", "test " + os.path.basename(out),
         "--cold-run", "c1", "--run-name", "c1"]
    if scope:
        a += ["--scope-file", scope]
    return run(*(a + list(extra)))


def st_tensors(model):
    return dq.read_safetensors(os.path.join(model, "model.safetensors"))


def rewrite(model, edit):
    """Applies edit(dict name -> (dtype, array)) to model.safetensors."""
    t = dict(st_tensors(model))
    edit(t)
    dq.write_safetensors(os.path.join(model, "model.safetensors"), t)


def edit_config(model, fn):
    p = os.path.join(model, "config.json")
    c = json.load(open(p))
    fn(c)
    json.dump(c, open(p, "w"), indent=2, sort_keys=True)


# ---------------------------------------------------------------- 1. bytes
def oracle_bytes():
    o = dq.read_safetensors(ORACLE)
    for fmt, flag in (("fp8", "fp8-block"), ("nvfp4", "nvfp4")):
        cases = sorted({k.split(".")[1] for k in o if k.startswith(fmt + ".")})
        src = W("or-" + fmt)
        os.makedirs(src)
        json.dump({}, open(os.path.join(src, "config.json"), "w"))
        names = {c: "model.layers.0.mlp.experts.%d.up_proj.weight" % i for i, c in enumerate(cases)}
        dq.write_safetensors(os.path.join(src, "model.safetensors"),
                             {names[c]: o["%s.%s.input" % (fmt, c)] for c in cases})
        rc, out, err = run("quantize", "--format", flag, "--src", src, "--dst", src + "-q")
        case("oracle inputs: quantize --format %s exit 0" % flag, rc == 0, out + err)
        if rc:
            continue
        got = st_tensors(src + "-q")
        for c in cases:
            base, pre = names[c][:-len(".weight")], "%s.%s." % (fmt, c)
            parts = ["weight", "weight_scale_inv"] if fmt == "fp8" else ["weight", "weight_scale", "weight_scale_2"]
            for part in parts:
                want = o[pre + part][1]
                g = got.get(base + "." + part)
                ok = g is not None and g[1].tobytes() == want.tobytes() and g[1].shape == want.shape
                diff = ""
                if g is not None and not ok and g[1].size == want.size:
                    diff = "%d of %d bytes differ" % (int(np.sum(g[1].view(np.uint8) != want.view(np.uint8))),
                                                      want.nbytes)
                case("%s %s: %s equals the reference package's bytes" % (fmt, c, part), ok, diff or (g and g[0]))
            if fmt == "fp8":
                deq = dq.dequant_fp8(got[base + ".weight"][1], got[base + ".weight_scale_inv"][1], 128, 128)
            else:
                deq = dq.dequant_nvfp4(got[base + ".weight"][1], got[base + ".weight_scale"][1],
                                       got[base + ".weight_scale_2"][1])
            h = hashlib.sha256(deq.tobytes()).digest()
            case("%s %s: dequant_ref.py == the package's bf16 dequantization" % (fmt, c),
                 h == o[pre + "dequant_sha256"][1].tobytes())
    py = os.environ.get("FIDELITY_ORACLE_PYTHON", sys.executable)
    probe = subprocess.run([py, "-c", "import torch, transformers, modelopt"], capture_output=True)
    if probe.returncode:
        print("skipped: regenerating the oracle file needs torch, transformers and nvidia-modelopt "
              "(pip; or FIDELITY_ORACLE_PYTHON); the committed vectors were checked above")
        return
    p = subprocess.run([py, os.path.join(HERE, "quantfmt_oracle.py"), W("oracle-live.safetensors")],
                       capture_output=True, text=True)
    live = open(W("oracle-live.safetensors"), "rb").read() if p.returncode == 0 else b""
    case("oracle regenerated from the packages is byte-identical to the committed file",
         live == open(ORACLE, "rb").read(), p.stdout + p.stderr)


# ---------------------------------------------------------------- 2. capture
def scope_segments(ds):
    return manifest(ds)["scope"]["scope_digest"]


def captures():
    rc, out, err = run("fixture", "--preset", "tiny", "--seed", 1, "--out", W("m"))
    case("tiny fixture", rc == 0, out + err)
    rc, out, err = capture(W("m"), W("root"), role="root")
    case("root capture", rc == 0, out + err)
    variants = [("fp8", ["--format", "fp8-block"]), ("fp8x", ["--format", "fp8-block", "--match", "mlp.experts."]),
                ("nvfp4", ["--format", "nvfp4"])]
    for v, flags in variants:
        rc, out, err = run("quantize", "--src", W("m"), "--dst", W("q-" + v), "--emit-scope", W(v + ".scope.json"),
                           *flags)
        case("quantize %s" % v, rc == 0, out + err)
        rc, out, err = capture(W("q-" + v), W("c-" + v))
        case("capture the %s checkpoint directly (no --scope-file)" % v, rc == 0, out + err)
        rc, out, err = run("verify", W("c-" + v))
        case("verify %s capture" % v, rc == 0, out + err)
        n = dq.dequant_dir(W("q-" + v), W("d-" + v))
        rc, out, err = capture(W("d-" + v), W("cd-" + v), scope=W(v + ".scope.json"))
        case("capture the offline-dequantized bf16 checkpoint of %s (%d tensors)" % (v, n), rc == 0, out + err)
        if rc == 0 and os.path.exists(W("c-" + v)):
            case("%s: same capture_content_digest quantized vs dequantized offline" % v,
                 digest(W("c-" + v)) == digest(W("cd-" + v)), (digest(W("c-" + v)), digest(W("cd-" + v))))
            case("%s: differs from the bf16 root" % v, digest(W("c-" + v)) != digest(W("root")))
            sd = json.load(open(W(v + ".scope.json")))["scope_digest"]
            case("%s: the emitted scope is the one the capture recorded" % v, sd == scope_segments(W("c-" + v)),
                 (sd, scope_segments(W("c-" + v))))
    rc, out, err = run("inspect-model", W("q-fp8"), "--json")
    iq = json.loads(out).get("check", {}).get("quantization", {}) if rc == 0 else {}
    case("inspect-model reports the FP8 checkpoint's 108 quantized weights",
         iq.get("codec") == "fp8-e4m3-block128x128" and iq.get("quantized_weights") == 108, out + err)
    m8, m8x, m4 = (manifest(W("c-" + v)) for v in ("fp8", "fp8x", "nvfp4"))
    s4 = m4["scope"]["scope_digest"].split("|")
    seed = SEED002.split("|")
    case("nvfp4 scope: every segment is seed 002's (no MTP layer here, so no mtp segment)",
         set(s4) <= set(seed) and set(seed) - set(s4) == {"mtp=native:mixed"}, m4["scope"]["scope_digest"])
    case("nvfp4 weights block: codec nvfp4-modelopt-g16, declared_bits 4, quantized",
         m4["weights"]["codec"] == "nvfp4-modelopt-g16" and m4["weights"]["declared_bits"] == 4
         and m4["weights"]["quantized"] is True, m4["weights"])
    s8 = m8["scope"]["scope_digest"]
    want8 = ["attn.qkv=quantized:fp8_e4m3@8", "attn.o=quantized:fp8_e4m3@8", "attn.other=quantized:mixed",
             "moe.experts=quantized:fp8_e4m3@8", "moe.shared_expert=quantized:fp8_e4m3@8",
             "mlp.gate=quantized:fp8_e4m3@8", "lm_head=native:bf16@16", "embed_tokens=native:bf16@16",
             "moe.router=native:mixed", "norm=native:bf16@16"]
    case("fp8 scope: Linears fp8_e4m3@8, indexer weights_proj left bf16 (attn.other mixed), head native",
         all(w in s8.split("|") for w in want8) and m8["scope"]["policy"] == "mixed", s8)
    case("fp8 weights block: codec fp8-e4m3-block128x128, declared_bits 8",
         m8["weights"]["codec"] == "fp8-e4m3-block128x128" and m8["weights"]["declared_bits"] == 8, m8["weights"])
    case("fp8 experts-only scope: only moe.experts quantized",
         [s for s in m8x["scope"]["scope_digest"].split("|") if "quantized" in s] == ["moe.experts=quantized:fp8_e4m3@8"],
         m8x["scope"]["scope_digest"])
    codes = lambda m: [d["code"] for d in m["disclosures"]]
    case("weight-only dequantization disclosed (fp8, nvfp4)",
         "weight_only_dequantization" in codes(m8) and "weight_only_dequantization" in codes(m4), (codes(m8), codes(m4)))
    qc = json.load(open(W("q-fp8", "config.json")))["quantization_config"]
    case("fp8 quantization_config: quant_method fp8, e4m3, [128,128], lm_head and weights_proj not converted",
         qc["quant_method"] == "fp8" and qc["fmt"] == "e4m3" and qc["weight_block_size"] == [128, 128]
         and "lm_head" in qc["modules_to_not_convert"]
         and "model.layers.*.self_attn.indexer.weights_proj" in qc["modules_to_not_convert"], qc)
    qn = json.load(open(W("q-nvfp4", "config.json")))["quantization_config"]
    hq = json.load(open(W("q-nvfp4", "hf_quant_config.json")))["quantization"]
    case("nvfp4 quantization_config (ModelOpt): modelopt / NVFP4 / group 16 / ignore; hf_quant_config.json",
         qn["quant_method"] == "modelopt" and qn["quant_algo"] == "NVFP4"
         and qn["config_groups"]["group_0"]["weights"]["group_size"] == 16 and "lm_head" in qn["ignore"]
         and hq["quant_algo"] == "NVFP4" and hq["exclude_modules"] == qn["ignore"], (qn, hq))
    t = st_tensors(W("q-nvfp4"))
    e = "model.layers.1.mlp.experts.0.gate_proj."
    case("nvfp4 tensors: U8 [32,32], F8_E4M3 scale [32,4], F32 scale_2 []",
         t[e + "weight"][0] == "U8" and t[e + "weight"][1].shape == (32, 32) and t[e + "weight_scale"][0] == "F8_E4M3"
         and t[e + "weight_scale"][1].shape == (32, 4) and t[e + "weight_scale_2"][1].shape == (),
         {k: (v[0], v[1].shape) for k, v in t.items() if k.startswith(e)})

    # NVFP4 input_scale: recorded and disclosed, never applied
    shutil.copytree(W("q-nvfp4"), W("q-nvfp4-is"))

    def add_input_scales(ts):
        for k in [k for k in ts if k.endswith(".weight_scale_2")]:
            ts[k[:-len("weight_scale_2")] + "input_scale"] = ("F32", np.array(0.0123, dtype=np.float32))
    rewrite(W("q-nvfp4-is"), add_input_scales)
    rc, out, err = capture(W("q-nvfp4-is"), W("c-nvfp4-is"))
    case("nvfp4 with input_scale: capture exit 0", rc == 0, out + err)
    if rc == 0:
        m = manifest(W("c-nvfp4-is"))
        d = [x for x in m["disclosures"] if x["code"] == "activation_scales_not_applied"]
        case("input_scale disclosed (activation_scales_not_applied, count and sha256 recorded)",
             len(d) == 1 and "72 NVFP4 input_scale" in d[0]["detail"] and "sha256" in d[0]["detail"], m["disclosures"])
        case("input_scale not applied: same capture_content_digest", digest(W("c-nvfp4-is")) == digest(W("c-nvfp4")))

    # the demo's question, answered here too: KL ordering of the expert formats
    rc, out, err = run("compare", "--reference", W("root"), "--candidate", W("c-fp8x"), "--candidate", W("c-nvfp4"),
                       "--out", W("cmp"))
    case("compare root vs fp8 experts, nvfp4 experts", rc in (0, 2), out + err)
    if rc in (0, 2):
        kl = [json.load(open(os.path.join(W("cmp"), d, "comparison-receipt.json")))["kl"]["mean"]
              for d in sorted(os.listdir(W("cmp"))) if os.path.isdir(os.path.join(W("cmp"), d))]
        print("mean KL: fp8 experts %.6e  nvfp4 experts %.6e" % tuple(kl))
        case("KL(fp8 experts) < KL(nvfp4 experts), both > 0", 0 < kl[0] < kl[1], kl)


# ---------------------------------------------------------------- 3. refusals
def refusals():
    def refused(tag, model, needles, code):
        rc, out, err = capture(model, W("x-" + tag))
        ok = rc == 3 and ("[%s]" % code) in out and all(n in out for n in needles) and not os.path.exists(W("x-" + tag))
        case("refused (exit 3, %s): %s" % (code, tag), ok, out + err)

    w8 = "model.layers.1.mlp.experts.3.down_proj.weight"
    shutil.copytree(W("q-fp8"), W("b1"))
    rewrite(W("b1"), lambda t: t.pop(w8 + "_scale_inv"))
    refused("fp8 scale missing", W("b1"), [w8 + "_scale_inv"], "bad_quantized_tensor")
    w4 = "model.layers.2.mlp.experts.5.up_proj.weight"
    shutil.copytree(W("q-nvfp4"), W("b2"))
    rewrite(W("b2"), lambda t: t.__setitem__(w4 + "_scale", ("F8_E4M3", np.zeros((32, 2), dtype=np.uint8))))
    refused("nvfp4 scale of the wrong shape", W("b2"), [w4 + "_scale", "wrong shape"], "bad_quantized_tensor")
    shutil.copytree(W("q-nvfp4"), W("b3"))
    rewrite(W("b3"), lambda t: t.pop(w4 + "_scale_2"))
    refused("nvfp4 weight_scale_2 missing", W("b3"), [w4 + "_scale_2"], "bad_quantized_tensor")
    shutil.copytree(W("q-fp8"), W("b4"))
    edit_config(W("b4"), lambda c: c["quantization_config"].__setitem__("quant_method", "gptq"))
    refused("unknown quant_method", W("b4"), ["gptq"], "unsupported_quantization")
    shutil.copytree(W("q-fp8"), W("b5"))
    edit_config(W("b5"), lambda c: c["quantization_config"]["modules_to_not_convert"].append("mlp.experts"))
    refused("a quantized tensor the config excludes", W("b5"), ["mlp.experts.", "unconverted"], "bad_quantized_tensor")
    shutil.copytree(W("q-fp8"), W("b6"))
    rewrite(W("b6"), lambda t: t.__setitem__(w8 + "_scale_inv", ("F32", np.ones((2, 1), dtype=np.float32))))
    refused("fp8 scale of the wrong shape", W("b6"), [w8 + "_scale_inv", "wrong shape"], "bad_quantized_tensor")
    rc, out, err = capture(W("q-fp8"), W("x-root"), role="root")
    case("refused (exit 3): a quantized checkpoint as root", rc == 3 and "[quantized_root]" in out, out + err)
    rc, out, err = capture(W("q-nvfp4"), W("x-scope"), scope=W("fp8.scope.json"))
    case("refused (exit 3): --scope-file contradicting the checkpoint", rc == 3 and "[scope_mismatch]" in out, out + err)
    rc, out, err = run("quantize", "--format", "nvfp4", "--src", W("q-nvfp4"), "--dst", W("x-qq"))
    case("quantize refuses an already quantized checkpoint", rc == 3 and "already_quantized" in out, out + err)
    rc, out, err = run("quantize", "--format", "nvfp4", "--bits", "4", "--src", W("m"), "--dst", W("x-u"))
    case("--format with --bits: usage exit 4", rc == 4, out + err)
    rc, out, err = run("quantize", "--format", "int3", "--src", W("m"), "--dst", W("x-u"))
    case("unknown --format: usage exit 4", rc == 4, out + err)


# ---------------------------------------------------------------- 4. memory
def peak_rss():
    if ASAN:
        print("skipped: peak RSS under AddressSanitizer measures its shadow memory; checked with the release binary")
        return
    rc, out, err = run("fixture", "--preset", "small", "--seed", 1, "--out", W("s"))
    case("small fixture", rc == 0, out + err)
    ids = [1] + [4 + (i * 37) % 256 for i in range(63)]
    json.dump(ids, open(W("w0.json"), "w"))
    rc, out, err = run("panel", "build", "--out", W("sp"), "--vocab", 260, W("w0.json"))
    case("one-window panel (64 tokens)", rc == 0, out + err)
    rc, out, err = capture(W("s"), W("s-root"), role="root", panel=W("sp"), extra=["--memory-report", W("mem-bf16.json")])
    case("small bf16 capture with --memory-report", rc == 0, out + err)
    if rc:
        return
    base = json.load(open(W("mem-bf16.json")))
    act = max(0, base["peak_rss_bytes"] - base["checkpoint_bytes"])
    for v, flags in (("fp8", ["--format", "fp8-block"]), ("nvfp4", ["--format", "nvfp4"])):
        rc, out, err = run("quantize", "--src", W("s"), "--dst", W("s-" + v), *flags)
        case("small: quantize %s" % v, rc == 0, out + err)
        rc, out, err = capture(W("s-" + v), W("s-c-" + v), panel=W("sp"), extra=["--memory-report", W("mem-%s.json" % v)])
        case("small: capture %s" % v, rc == 0, out + err)
        if rc:
            continue
        m = json.load(open(W("mem-%s.json" % v)))
        bound = 1.2 * m["checkpoint_bytes"] + act
        print("peak RSS %s: %.1f MB, checkpoint %.1f MB (bf16 source %.1f MB), activations %.1f MB, bound %.1f MB"
              % (v, m["peak_rss_bytes"] / 1e6, m["checkpoint_bytes"] / 1e6, base["checkpoint_bytes"] / 1e6, act / 1e6,
                 bound / 1e6))
        case("%s capture peak RSS <= 1.2 x checkpoint + activations (no bf16 copy of the model)" % v,
             m["peak_rss_bytes"] <= bound and m["quantized_weights"] > 0, m)


try:
    oracle_bytes()
    captures()
    refusals()
    peak_rss()
finally:
    shutil.rmtree(WORK, ignore_errors=True)

print("quantfmt: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
