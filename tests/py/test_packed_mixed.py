#!/usr/bin/env python3
"""Mixed ModelOpt NVFP4 + FP8 checkpoints (issue 19, part 4): quant_algo
MIXED_PRECISION with per-layer algorithms in `quantized_layers`, in
hf_quant_config.json (modelopt.torch.export's process_layer_quant_config) and
in config.json's quantization_config (convert_hf_config's form: config_groups
plus the preserved quantized_layers).

usage: test_packed_mixed.py BINARY

The producer (nvidia-modelopt's export) needs a calibrated CUDA model, so the
checkpoint is built from the documented layout (mo_mixed_build below):
NVFP4 layers U8 [N, K/2] + F8_E4M3 weight_scale [N, K/16] + F32 scalar
weight_scale_2 + F32 scalar input_scale; FP8 layers F8_E4M3 [N, K] + F32
scalar weight_scale + F32 scalar input_scale; lm_head and the dense MLP left
bf16 and unlisted.
1. Decode: the numpy reference (dequant_ref.dequant_nvfp4, mo_fp8 below) =
   modelopt's own NVFP4QTensor / FP8QTensor.dequantize(dtype=bf16) on every
   quantized layer when torch and modelopt import (FIDELITY_ORACLE_PYTHON, with
   PYTHONPATH naming modelopt; mo_mixed_oracle.py), else said skipped.
2. Capture of the mixed checkpoint (both config forms) = capture of the bf16
   checkpoint the reference decodes (same capture_content_digest); codec,
   declared bits, the scope census with each class's own format.
3. Refusals (exit 3, by name): unknown per-layer algo, NVFP4 group 32, a
   listed layer absent, a quantized tensor not listed, an FP8 tensor listed as
   NVFP4, a listed layer stored bf16, a layer named twice (duplicate JSON
   key), empty quantized_layers, FP8 scale not a scalar.
"""
import json, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import numpy as np
    import dequant_ref as dq
    import packed_ref as pr
    import dsutil
except ImportError:
    print("numpy unavailable: the packed-format checks need it for the offline reference; skipped")
    sys.exit(0)

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
WORK = tempfile.mkdtemp(prefix="fd-packed-mixed-")
H = dsutil.CaptureHarness(BIN, WORK)
case, run, W, manifest, digest, capture = H.case, H.run, H.W, H.manifest, H.digest, H.capture


def bf16_f32(a):
    return (a.astype(np.uint32) << 16).view(np.float32)


def mo_fp8(q, scale):
    """FP8QTensor.dequantize(dtype=bf16): bf16(e4m3) * bf16(scale), product rounded to bf16."""
    s = bf16_f32(dq.f32_to_bf16_bits(np.asarray(scale, np.float32).reshape(1)))[0]
    with np.errstate(over="ignore"):
        return dq.f32_to_bf16_bits(dq.E4M3[q] * s)


def algo_of(name, k):
    """the layer assignment: routed experts and q_a/kv_a NVFP4, other attention and shared experts FP8; lm_head and
    the dense (layer 0) MLP unlisted"""
    mod = name[:-len(".weight")]
    if name == "lm_head.weight" or (".mlp." in mod and ".experts." not in mod and "shared_experts" not in mod):
        return None
    if (".experts." in mod or mod.endswith(("q_a_proj", "kv_a_proj_with_mqa"))) and k % 16 == 0:
        return "NVFP4"
    return "FP8"


def mo_mixed_build(src, dst, form):
    """src bf16 -> dst ModelOpt MIXED_PRECISION (form: "hf" hf_quant_config.json, "cfg" config.json)."""
    t = dq.read_safetensors(os.path.join(src, "model.safetensors"))
    out, layers = {}, {}
    for name, (dtype, arr) in sorted(t.items()):
        a = algo_of(name, arr.shape[-1]) if pr.is_linear(name) and dtype == "BF16" and arr.ndim == 2 else None
        if a is None:
            out[name] = (dtype, arr)
            continue
        x = bf16_f32(arr)
        b = name[:-len(".weight")]
        if a == "NVFP4":
            e = pr.quantize_ct_fp4(x, {"group_size": 16})
            out[name] = ("U8", e["weight_packed"][1])
            out[b + ".weight_scale"] = ("F8_E4M3", e["weight_scale"][1])
            out[b + ".weight_scale_2"] = ("F32", np.array(1.0 / e["weight_global_scale"][1][0], dtype=np.float32))
            layers[b] = {"quant_algo": "NVFP4", "group_size": 16}
        else:
            s = np.float32(max(float(np.abs(x).max()), 1e-30) / 448.0)
            out[name] = ("F8_E4M3", pr._e4m3_code(np.clip(x / s, -448, 448).astype(np.float32)))
            out[b + ".weight_scale"] = ("F32", np.array(s, dtype=np.float32))
            layers[b] = {"quant_algo": "FP8"}
        out[b + ".input_scale"] = ("F32", np.array(0.03125 + len(layers) / 1024.0, dtype=np.float32))
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.safetensors", "model.safetensors.index.json"))
    dq.write_safetensors(os.path.join(dst, "model.safetensors"), out)
    qz = {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": None, "quantized_layers": layers,
          "exclude_modules": ["lm_head"]}
    if form == "hf":
        json.dump({"producer": {"name": "modelopt", "version": "0.47.0"}, "quantization": qz},
                  open(os.path.join(dst, "hf_quant_config.json"), "w"), indent=2)
    else:
        groups, seen = {}, {}
        for lname, lc in sorted(layers.items()):
            key = json.dumps(lc, sort_keys=True)
            if key not in seen:
                seen[key] = "group_%d" % len(seen)
                nb = 4 if lc["quant_algo"] == "NVFP4" else 8
                w = {"dynamic": False, "num_bits": nb, "type": "float"}
                if nb == 4:
                    w["group_size"] = 16
                groups[seen[key]] = {"weights": w, "input_activations": dict(w), "targets": []}
            groups[seen[key]]["targets"].append(lname)
        c = json.load(open(os.path.join(dst, "config.json")))
        c["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
                                    "config_groups": groups, "quantized_layers": layers, "ignore": ["lm_head"],
                                    "producer": {"name": "modelopt", "version": "0.47.0"}}
        json.dump(c, open(os.path.join(dst, "config.json"), "w"), indent=2, sort_keys=True)
    return layers


def reference_decode(model):
    """name -> bf16 bits of every quantized layer, by the numpy reference"""
    t = dq.read_safetensors(os.path.join(model, "model.safetensors"))
    got = {}
    for name, (dtype, arr) in t.items():
        b = name[:-len(".weight")]
        if dtype == "U8":
            got[name] = dq.dequant_nvfp4(arr, t[b + ".weight_scale"][1], t[b + ".weight_scale_2"][1])
        elif dtype == "F8_E4M3" and name.endswith(".weight"):
            got[name] = mo_fp8(arr, t[b + ".weight_scale"][1])
    return t, got


def bf16_dir(model, dst):
    t, got = reference_decode(model)
    out = {}
    for name, v in t.items():
        b = name.rsplit(".", 1)[0]
        if name.endswith((".weight_scale", ".weight_scale_2", ".input_scale")) and b + ".weight" in got:
            continue
        out[name] = ("BF16", got[name]) if name in got else v
    shutil.copytree(model, dst, ignore=shutil.ignore_patterns("*.safetensors", "hf_quant_config.json"))
    p = os.path.join(dst, "config.json")
    c = json.load(open(p))
    c.pop("quantization_config", None)
    json.dump(c, open(p, "w"), indent=2, sort_keys=True)
    dq.write_safetensors(os.path.join(dst, "model.safetensors"), out)
    return len(got)


def oracle(model):
    py = os.environ.get("FIDELITY_ORACLE_PYTHON", sys.executable)
    probe = subprocess.run([py, "-c", "import torch; from modelopt.torch.quantization.qtensor import NVFP4QTensor"],
                           capture_output=True)
    if probe.returncode:
        print("skipped: the modelopt decode check needs torch and nvidia-modelopt (FIDELITY_ORACLE_PYTHON); the numpy "
              "reference stands for it")
        return
    p = subprocess.run([py, os.path.join(HERE, "mo_mixed_oracle.py"), model, W("oracle.safetensors")],
                       capture_output=True, text=True)
    case("modelopt oracle ran", p.returncode == 0, p.stdout + p.stderr)
    if p.returncode:
        return
    o = dq.read_safetensors(W("oracle.safetensors"))
    _, got = reference_decode(model)
    nbad = [n for n in got if n not in o or not np.array_equal(o[n][1], got[n])]
    case("modelopt NVFP4QTensor / FP8QTensor.dequantize(bf16) = numpy reference on %d layers" % len(got),
         not nbad and len(o) == len(got), nbad[:5])


def main():
    rc, out, err = run("fixture", "--preset", "tiny", "--seed", 1, "--out", W("m"))
    case("tiny fixture", rc == 0, out + err)
    rc, out, err = capture(W("m"), W("root"), role="root")
    case("root capture", rc == 0, out + err)
    mixed = {}
    for form in ("hf", "cfg"):
        layers = mo_mixed_build(W("m"), W("q-" + form), form)
        algos = sorted({v["quant_algo"] for v in layers.values()})
        case("%s: both algorithms present (%d layers)" % (form, len(layers)), algos == ["FP8", "NVFP4"], algos)
        n = bf16_dir(W("q-" + form), W("d-" + form))
        rc1, o1, e1 = capture(W("q-" + form), W("c-" + form))
        case("%s: direct capture exit 0" % form, rc1 == 0, o1 + e1)
        if rc1:
            continue
        rc, out, err = run("verify", W("c-" + form))
        case("%s: verify the capture" % form, rc == 0, out + err)
        json.dump(manifest(W("c-" + form))["scope"], open(W(form + ".scope.json"), "w"))
        rc2, o2, e2 = capture(W("d-" + form), W("cd-" + form), scope=W(form + ".scope.json"))
        case("%s: reference-decoded bf16 capture exit 0" % form, rc2 == 0, o2 + e2)
        if rc2:
            continue
        case("%s: capture digest = capture of the reference-decoded bf16 (%d layers)" % (form, n),
             digest(W("c-" + form)) == digest(W("cd-" + form)))
        case("%s: differs from the bf16 root" % form, digest(W("c-" + form)) != digest(W("root")))
        mixed[form] = manifest(W("c-" + form))
    oracle(W("q-hf"))
    if "hf" in mixed and "cfg" in mixed:
        case("both config forms give one capture", digest(W("c-hf")) == digest(W("c-cfg")))
    m = mixed.get("hf")
    if m:
        sd = m["scope"]["scope_digest"].split("|")
        want = ["moe.experts=quantized:nvfp4@4", "attn.o=quantized:fp8_e4m3@8", "moe.shared_expert=quantized:fp8_e4m3@8"]
        case("codec modelopt-mixed-nvfp4-g16-fp8, declared_bits 8, census %s" % " ".join(want),
             m["weights"]["codec"] == "modelopt-mixed-nvfp4-g16-fp8" and m["weights"]["declared_bits"] == 8
             and all(s in sd for s in want), (m["weights"], sd))
        d = {x["code"]: x["detail"] for x in m["disclosures"]}
        case("disclosures: mixed weight-only dequantization, NVFP4 / FP8 input_scales not applied",
             "MIXED_PRECISION" in d.get("weight_only_dequantization", "")
             and "ModelOpt NVFP4 / FP8 input_scale" in d.get("activation_scales_not_applied", ""), d)
    refusals(mixed.get("hf"))


def refusals(ok):
    if not ok:
        case("the checkpoints the refusals edit exist", False)
        return

    def refused(tag, model, needles, code):
        rc, out, err = capture(model, W("x-" + tag))
        good = rc == 3 and ("[%s]" % code) in out and all(n in out for n in needles) and not os.path.exists(W("x-" + tag))
        case("refused (exit 3, %s): %s" % (code, tag), good, out + err)

    hq = lambda d: os.path.join(d, "hf_quant_config.json")

    def variant(tag, qz=None, tens=None, text=None):
        shutil.copytree(W("q-hf"), W(tag))
        if qz:
            h = json.load(open(hq(W(tag))))
            qz(h["quantization"])
            json.dump(h, open(hq(W(tag)), "w"), indent=2)
        if text:
            body = text(open(hq(W(tag))).read())
            open(hq(W(tag)), "w").write(body)
        if tens:
            H.rewrite(W(tag), tens)
        return W(tag)

    L = lambda q: q["quantized_layers"]
    h = json.load(open(hq(W("q-hf"))))["quantization"]["quantized_layers"]
    f8 = sorted(k for k, v in h.items() if v["quant_algo"] == "FP8")[0]
    n4 = sorted(k for k, v in h.items() if v["quant_algo"] == "NVFP4")[0]
    refused("unknown per-layer algo", variant("a", qz=lambda q: L(q)[f8].update(quant_algo="W4A8_AWQ")),
            ["quant_algo W4A8_AWQ is not read", f8], "unsupported_quantization")
    refused("NVFP4 layer of group 32", variant("b", qz=lambda q: L(q)[n4].update(group_size=32)),
            ["NVFP4 group_size is not 16", n4], "unsupported_quantization")
    refused("a listed layer absent", variant("c", qz=lambda q: L(q).update({"model.layers.9.self_attn.o_proj":
                                                                           {"quant_algo": "FP8"}})),
            ["model.layers.9.self_attn.o_proj", "does not hold"], "unsupported_quantization")
    refused("a quantized tensor not listed", variant("d", qz=lambda q: L(q).pop(f8)),
            [f8 + ".weight", "does not list its module"], "bad_quantized_tensor")
    refused("an FP8 tensor listed as NVFP4", variant("e", qz=lambda q: L(q)[f8].update(quant_algo="NVFP4")),
            [f8 + ".weight", "lists its module as NVFP4"], "bad_quantized_tensor")
    bf = lambda t: t.update({f8 + ".weight": ("BF16", np.zeros(t[f8 + ".weight"][1].shape, np.uint16))})
    refused("a listed layer stored bf16", variant("f", tens=bf), [f8 + ".weight is BF16", "as FP8"],
            "bad_quantized_tensor")
    refused("a layer named twice", variant("g", text=lambda s: s.replace('"quantized_layers": {',
                                                                         '"quantized_layers": {"%s": {"quant_algo": '
                                                                         '"NVFP4"}, ' % f8, 1)),
            ["duplicate object key", f8], "bad_json")
    refused("empty quantized_layers", variant("h", qz=lambda q: q.update(quantized_layers={})),
            ["MIXED_PRECISION without a non-empty quantized_layers"], "unsupported_quantization")
    sc = lambda t: t.update({f8 + ".weight_scale": ("F32", np.ones((2,), np.float32))})
    refused("FP8 weight_scale not a scalar", variant("i", tens=sc), [f8 + ".weight_scale has the wrong shape"],
            "bad_quantized_tensor")


if __name__ == "__main__":
    main()
    print("%d passed, %d failed" % (H.passed, H.failed))
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(1 if H.failed else 0)
