#!/usr/bin/env python3
"""More packed checkpoints as they ship (issue 19, second part):
compressed-tensors `int-quantized` / `float-quantized` / `naive-quantized`
(W8A8 int8 and FP8 weights, unpacked) and `nvfp4-pack-quantized` /
`mxfp4-pack-quantized`, GPTQ 2-bit / 3-bit, MLX affine, FP8 block with UE8M0
(power-of-two) scales.

usage: test_packed2.py BINARY

1. Vectors: tests/vectors/packed/ct_dense.safetensors (compressed-tensors'
   own Int/Float/NaiveQuantizationCompressor.decompress: ct_dense_oracle.py)
   and gq23.safetensors (GPTQModel's 3-bit unpack transcribed:
   gq23_vectors.py) and mlx.safetensors (mlx.core.dequantize itself:
   mlx_oracle.py) and fp8_ue8m0.safetensors (transformers' Fp8Dequantize:
   ue8m0_oracle.py) decode with the numpy reference packed_ref.py bit for bit
   (the C decoder is checked on the same files by the unit suite `packed`);
   gq23 regenerates byte-identical; ct_dense too when torch and
   compressed-tensors import (FIDELITY_ORACLE_PYTHON), else said skipped.
2. Capture: the tiny fixture re-encoded as int8 W8A8 channel (int-quantized,
   bf16 scales, dynamic token activations), FP8 per-tensor (float-quantized,
   f32 scales, static input_scale tensors present), FP8 per-channel + int8
   asymmetric groups in one model (naive-quantized groups picked by regex),
   GPTQ 3-bit v1 act-order (fp16 scales), GPTQ 2-bit v2 (bf16 scales) and
   MLX affine 4/32, 3/64, 6/32, 8/128, 2/64 (the embedding quantized too),
   FP8 block 16x32 with UE8M0 scales stored F8_E8M0 and as F32:
   each direct capture has the capture_content_digest of the capture of the
   bf16 checkpoint packed_ref.py decodes from it; codec, bits, scope census,
   the weight-only disclosure naming the activations not applied.
3. Refusals (exit 3, by name): hostile configs and mis-shaped tensors.
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
WORK = tempfile.mkdtemp(prefix="fd-packed2-")
VEC = os.path.join(HERE, "..", "vectors", "packed")
H = dsutil.CaptureHarness(BIN, WORK)
case, run, W, manifest, digest, capture = H.case, H.run, H.W, H.manifest, H.digest, H.capture
st_tensors, rewrite, edit_config = H.st_tensors, H.rewrite, H.edit_config


# ---------------------------------------------------------------- 1. vectors
def vectors():
    v = dq.read_safetensors(os.path.join(VEC, "ct_dense.safetensors"))
    cases = sorted({k.split(".")[0] for k in v})
    case("ct_dense vectors: 33 cases", len(cases) == 33, len(cases))
    for c in cases:
        bits, st, g, bh, bw, sym, fl = (int(x) for x in v[c + ".scheme"][1])
        w = {"strategy": ("channel", "group", "block", "tensor")[st], "group_size": g or None,
             "block_structure": [bh, bw]}
        wd, wa = v[c + ".weight"]
        sd, sc = v[c + ".weight_scale"]
        zp = v.get(c + ".weight_zero_point")
        got = pr.dequant_ct_dense(wd, wa, sd, sc, None if zp is None else zp[1], w)
        exp = v[c + ".expected"][1]
        case("ct_dense %s (%s %s%s, %s scales, %s): packed_ref == compressed-tensors' decompress, bf16 bits"
             % (c, wd, w["strategy"], "" if sym else " asym", sd, "x".join(map(str, exp.shape))),
             got.shape == exp.shape and np.array_equal(got, exp), int(np.sum(got != exp)) if got.shape == exp.shape else "")
    py = os.environ.get("FIDELITY_ORACLE_PYTHON", sys.executable)
    probe = subprocess.run([py, "-c", "import torch, compressed_tensors"], capture_output=True)
    if probe.returncode:
        print("skipped: regenerating ct_dense needs torch and compressed-tensors (FIDELITY_ORACLE_PYTHON); the "
              "committed vectors were checked above")
    else:
        p = subprocess.run([py, os.path.join(HERE, "ct_dense_oracle.py"), W("ctd.safetensors")], capture_output=True,
                           text=True)
        live = open(W("ctd.safetensors"), "rb").read() if p.returncode == 0 else b""
        case("ct_dense regenerated from compressed-tensors is byte-identical to the committed file",
             live == open(os.path.join(VEC, "ct_dense.safetensors"), "rb").read(), p.stdout + p.stderr)
    g = dq.read_safetensors(os.path.join(VEC, "gq23.safetensors"))
    cases = sorted({k.split(".")[0] for k in g})
    ok = len(cases) == 16
    for c in cases:
        _, bits, grp, v1, n = (int(x) for x in g[c + ".scheme"][1])
        sd, sa = g[c + ".scales"]
        got = pr.dequant_gptq(g[c + ".qweight"][1], g[c + ".qzeros"][1], sd, sa, g[c + ".g_idx"][1], bits, v1)
        ok = ok and np.array_equal(got, g[c + ".expected"][1])
    case("gq23 vectors: the committed file is what packed_ref.py decodes (16 cases, GPTQ 2 / 3-bit)", ok)
    p = subprocess.run([sys.executable, os.path.join(HERE, "gq23_vectors.py"), W("gq23.safetensors")],
                       capture_output=True, text=True)
    case("gq23 vectors regenerate byte-identical (numpy only)", p.returncode == 0 and
         open(W("gq23.safetensors"), "rb").read() == open(os.path.join(VEC, "gq23.safetensors"), "rb").read(),
         p.stdout + p.stderr)
    m = dq.read_safetensors(os.path.join(VEC, "mlx.safetensors"))
    cases = sorted({k.split(".")[0] for k in m})
    ok = len(cases) == 36
    for c in cases:
        bits, grp = (int(x) for x in m[c + ".scheme"][1])
        sd, sa = m[c + ".scales"]
        got = pr.dequant_mlx(m[c + ".weight"][1], sd, sa, m[c + ".biases"][1], bits, grp)
        ok = ok and np.array_equal(got, m[c + ".expected"][1])
    case("mlx vectors: the committed file (mlx.core.dequantize) is what packed_ref.py decodes (36 cases, bits "
         "2/3/4/5/6/8, groups 32/64/128)", ok)
    probe = subprocess.run([py, "-c", "import mlx.core"], capture_output=True)
    if probe.returncode:
        print("skipped: regenerating the mlx vectors needs mlx (FIDELITY_ORACLE_PYTHON); the committed vectors "
              "were checked above")
    else:
        p = subprocess.run([py, os.path.join(HERE, "mlx_oracle.py"), W("mlx.safetensors")], capture_output=True,
                           text=True)
        live = open(W("mlx.safetensors"), "rb").read() if p.returncode == 0 else b""
        case("mlx vectors regenerated from mlx are byte-identical to the committed file",
             live == open(os.path.join(VEC, "mlx.safetensors"), "rb").read(), p.stdout + p.stderr)
    u = dq.read_safetensors(os.path.join(VEC, "fp8_ue8m0.safetensors"))
    cases = sorted({k.split(".")[0] for k in u})
    ok = len(cases) == 6
    for c in cases:
        bm, bn = (int(x) for x in u[c + ".block"][1])
        sd, sa = u[c + ".weight_scale_inv"]
        got = dq.dequant_fp8(u[c + ".weight"][1], dq.e8m0_to_f32(sa) if sd == "F8_E8M0" else sa, bm, bn)
        ok = ok and np.array_equal(got, u[c + ".expected"][1])
    case("fp8_ue8m0 vectors: the committed file (transformers' Fp8Dequantize) is what dequant_ref.py decodes "
         "(6 cases, F8_E8M0 and power-of-two F32 scales, exponents 0 / 1 / 254)", ok)
    probe = subprocess.run([py, "-c", "import torch, transformers"], capture_output=True)
    if probe.returncode:
        print("skipped: regenerating fp8_ue8m0 needs torch and transformers (FIDELITY_ORACLE_PYTHON)")
    else:
        p = subprocess.run([py, os.path.join(HERE, "ue8m0_oracle.py"), W("ue.safetensors")], capture_output=True,
                           text=True)
        live = open(W("ue.safetensors"), "rb").read() if p.returncode == 0 else b""
        case("fp8_ue8m0 regenerated from transformers is byte-identical to the committed file",
             live == open(os.path.join(VEC, "fp8_ue8m0.safetensors"), "rb").read(), p.stdout + p.stderr)
    f4 = dq.read_safetensors(os.path.join(VEC, "ct_fp4.safetensors"))
    cases = sorted({k.split(".")[0] for k in f4})
    ok = len(cases) == 12
    for c in cases:
        mx = int(f4[c + ".kind"][1][0])
        gs = f4.get(c + ".weight_global_scale")
        got = pr.dequant_ct_fp4("mxfp4" if mx else "nvfp4", f4[c + ".weight_packed"][1], f4[c + ".weight_scale"][1],
                                None if gs is None else gs[1])
        ok = ok and np.array_equal(got, f4[c + ".expected"][1])
    case("ct_fp4 vectors: the committed file (compressed-tensors' NVFP4/MXFP4PackedCompressor) is what packed_ref.py "
         "decodes (12 cases)", ok)
    probe = subprocess.run([py, "-c", "import torch, compressed_tensors"], capture_output=True)
    if probe.returncode == 0:
        p = subprocess.run([py, os.path.join(HERE, "ct_fp4_oracle.py"), W("fp4.safetensors")], capture_output=True,
                           text=True)
        live = open(W("fp4.safetensors"), "rb").read() if p.returncode == 0 else b""
        case("ct_fp4 regenerated from compressed-tensors is byte-identical to the committed file",
             live == open(os.path.join(VEC, "ct_fp4.safetensors"), "rb").read(), p.stdout + p.stderr)
    # the 3-bit packing: GPTQModel's unpack (wf table + fix-ups) inverts a plain 3-bit stream
    rng = np.random.default_rng(3)
    vals = rng.integers(0, 8, size=(7, 96))
    case("3-bit: packed_ref's stream packer and GPTQModel's unpack agree (fields 10 and 21 straddle words)",
         np.array_equal(pr._unpack3(pr._pack_fields(vals, 3)), vals))


# ---------------------------------------------------------------- 2. capture
ACT_DYN = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token", "dynamic": True}
ACT_FP8_STATIC = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "tensor", "dynamic": False}
NVFP4_W = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "format": "nvfp4-pack-quantized"}
MXFP4_W = {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32, "format": "mxfp4-pack-quantized"}
CT_VARIANTS = {
    "nvfp4": (pr.ct_config([(["re:.*mlp\\.experts\\."], NVFP4_W)], fmt="nvfp4-pack-quantized"), {"group_0": None}),
    "mxfp4": (pr.ct_config([(["re:.*mlp\\.experts\\."], dict(MXFP4_W, input_activations={"num_bits": 4, "type": "float",
                            "strategy": "group", "group_size": 32, "dynamic": True})),
                            (["Linear"], {"num_bits": 8, "strategy": "channel", "format": "int-quantized"})],
                           ignore=["lm_head", "re:.*kv_b_proj$"], fmt="mixed-precision"), {"group_0": None, "group_1": "BF16"}),
    "int8ch": (pr.ct_config([(["Linear"], {"num_bits": 8, "strategy": "channel", "format": "int-quantized",
                                            "input_activations": ACT_DYN})], fmt="int-quantized"),
               {"group_0": "BF16"}),
    "fp8t": (pr.ct_config([(["Linear"], {"num_bits": 8, "type": "float", "strategy": "tensor",
                                          "format": "float-quantized", "input_activations": ACT_FP8_STATIC})],
                          ignore=["lm_head", "re:.*indexer\\.weights_proj$"], fmt="float-quantized"),
             {"group_0": "F32"}),
    "naive": (pr.ct_config([(["re:.*mlp\\.experts\\."], {"num_bits": 8, "type": "float", "strategy": "channel",
                                                         "format": "naive-quantized"}),
                            (["Linear"], {"num_bits": 8, "strategy": "group", "group_size": 16, "symmetric": False,
                                          "format": "naive-quantized"}),
                            (["model.layers.2.self_attn.o_proj"], {"num_bits": 8, "type": "float",
                                                                   "strategy": "block", "block_structure": [24, 40],
                                                                   "format": "naive-quantized"})],
                           ignore=["lm_head", "re:.*kv_b_proj$"], fmt="naive-quantized"),
              {"group_0": "BF16", "group_1": "F16", "group_2": "F32"}),
}


def add_input_scales(model):
    """static W8A8: an F32 input_scale [1] beside every converted weight (recorded, not applied)."""
    def edit(t):
        for n in [n for n, (d, _) in t.items() if d == "F8_E4M3"]:
            t[n[:-len(".weight")] + ".input_scale"] = ("F32", np.array([0.0125], np.float32))
    rewrite(model, edit)


def same_digest(v, qdir, nq, decode=None):
    rc, out, err = capture(qdir, W("c-" + v))
    case("capture the %s checkpoint directly (%d quantized Linears)" % (v, nq), rc == 0, out + err)
    if rc:
        return None
    rc, out, err = run("verify", W("c-" + v))
    case("verify %s capture" % v, rc == 0, out + err)
    json.dump(manifest(W("c-" + v))["scope"], open(W(v + ".scope.json"), "w"))
    n = (decode or pr.dequant_dir)(qdir, W("d-" + v))
    rc, out, err = capture(W("d-" + v), W("cd-" + v), scope=W(v + ".scope.json"))
    case("capture the packed_ref-decoded bf16 checkpoint of %s (%d tensors)" % (v, n), rc == 0, out + err)
    if rc == 0:
        case("%s: same capture_content_digest quantized vs decoded offline" % v,
             digest(W("c-" + v)) == digest(W("cd-" + v)), (digest(W("c-" + v)), digest(W("cd-" + v))))
        case("%s: differs from the bf16 root" % v, digest(W("c-" + v)) != digest(W("root")))
    return manifest(W("c-" + v))


def captures():
    rc, out, err = run("fixture", "--preset", "tiny", "--seed", 1, "--out", W("m"))
    case("tiny fixture", rc == 0, out + err)
    rc, out, err = capture(W("m"), W("root"), role="root")
    case("root capture", rc == 0, out + err)
    ms = {}
    for v, (qc, sdt) in CT_VARIANTS.items():
        nq = pr.ct_dir(W("m"), W("q-" + v), qc, sdt)
        if v == "fp8t":
            add_input_scales(W("q-" + v))
        ms[v] = same_digest(v, W("q-" + v), nq)
    want = {"nvfp4": ("ct-nvfp4-g16", 4, ["moe.experts=quantized:nvfp4@4", "attn.qkv=native:bf16@16"]),
            "mxfp4": ("ct-mixed", 8, ["moe.experts=quantized:mxfp4@4", "moe.shared_expert=quantized:int8@8"]),
            "int8ch": ("ct-int-w8-channel-sym", 8, ["attn.qkv=quantized:int8@8", "moe.experts=quantized:int8@8"]),
            "fp8t": ("ct-fp8-w8-tensor-sym", 8, ["moe.experts=quantized:fp8_e4m3@8", "attn.other=quantized:mixed"]),
            "naive": ("ct-mixed", 8, ["moe.experts=quantized:fp8_e4m3@8", "moe.shared_expert=quantized:int8@8",
                                      "attn.o=quantized:mixed", "attn.qkv=quantized:mixed"])}
    for v, (codec, bits, segs) in want.items():
        m = ms.get(v)
        if not m:
            continue
        sd = m["scope"]["scope_digest"].split("|")
        case("%s: codec %s, declared_bits %d, scope %s" % (v, codec, bits, " ".join(segs)),
             m["weights"]["codec"] == codec and m["weights"]["declared_bits"] == bits and all(s in sd for s in segs),
             (m["weights"], sd))
        d = [x for x in m["disclosures"] if x["code"] == "weight_only_dequantization"]
        acts = v not in ("naive", "nvfp4")
        case("%s: weight-only disclosure names NaiveQuantizationCompressor%s" %
             (v, " and the W8A8 activations not applied" if acts else ""),
             len(d) == 1 and "NaiveQuantizationCompressor" in d[0]["detail"]
             and (("input_activations" in d[0]["detail"]) == acts), m["disclosures"])
    # GPTQ 2 / 3-bit: 3-bit needs whole words of 32 inputs and outputs, so only the Linears whose both dims are
    # multiples of 32 are in modules_in_block_to_quantize (kv_a_proj_with_mqa [24,64], kv_b_proj, wk, weights_proj
    # stay bf16)
    t = st_tensors(W("m"))
    fits = lambda n: pr.is_linear(n) and n.startswith("model.layers.") and t[n][1].shape[0] % 32 == 0 \
        and t[n][1].shape[1] % 32 == 0
    rel = sorted({n.split(".", 3)[3][:-len(".weight")] for n in t if fits(n)})
    inblock = [rel]
    gvars = {
        "gptq3": ({"quant_method": "gptq", "bits": 3, "group_size": 32, "desc_act": True, "sym": False,
                   "checkpoint_format": "gptq", "lm_head": False, "modules_in_block_to_quantize": inblock,
                   "pack_dtype": "int32"}, "F16", 1),
        "gptq2": ({"quant_method": "gptq", "bits": 2, "group_size": 16, "desc_act": False, "sym": False,
                   "checkpoint_format": "gptq_v2", "lm_head": False, "modules_in_block_to_quantize": inblock},
                  "BF16", None),
    }
    for v, (qc, sdt, seed) in gvars.items():
        excl = lambda n: not (n.startswith("model.layers.") and n.split(".", 3)[3][:-len(".weight")] in rel)
        nq = pr.gq_dir(W("m"), W("q-" + v), qc, sdt, excl, perm_seed=seed)
        ms[v] = same_digest(v, W("q-" + v), nq)
    # MLX affine: every Linear and the embedding whose input dim is a whole number of groups (mlx-lm's predicate)
    for bits, grp in [(4, 32), (3, 64), (6, 32), (8, 128), (2, 64)]:
        v = "mlx%dg%d" % (bits, grp)
        nq = pr.mlx_dir(W("m"), W("q-" + v), bits, grp)
        ms[v] = same_digest(v, W("q-" + v), nq)
        m = ms[v]
        if m:
            sd = m["scope"]["scope_digest"].split("|")
            want_emb = "embed_tokens=quantized:mlx-affine@%d" % bits if 64 % grp == 0 else "embed_tokens=native:bf16@16"
            case("%s: codec mlx-affine-w%d-g%d, declared_bits %d, the embedding (64 wide) %s"
                 % (v, bits, grp, bits, want_emb),
                 m["weights"]["codec"] == "mlx-affine-w%d-g%d" % (bits, grp) and m["weights"]["declared_bits"] == bits
                 and want_emb in sd, (m["weights"], sd))
            qd = [x for x in m["disclosures"] if x["code"] == "quantized_head_dequantized"]
            case("%s: a quantized lm_head (64 inputs: groups 32 / 64) disclosed (quantized_head_dequantized); the "
                 "head's bf16 = packed_ref's (head tensor_content_sha256 of the decoded capture)" % v,
                 len(qd) == (64 % grp == 0) and all("lm_head.weight" in x["detail"] for x in qd) and
                 os.path.exists(W("cd-" + v)) and
                 m["head"]["tensor_content_sha256"] == manifest(W("cd-" + v))["head"]["tensor_content_sha256"],
                 m["disclosures"])
    # FP8 with UE8M0 block scales (DeepSeek-V3.2 style), stored F8_E8M0 and as power-of-two F32
    for v, sdt in [("ue8m0", "F8_E8M0"), ("ue8m0f", "F32")]:
        nq = pr.fp8_ue8m0_dir(W("m"), W("q-" + v), sdt, 16, 32)
        m = same_digest(v, W("q-" + v), nq, decode=dq.dequant_dir)   # dequant_ref: the FP8 reference decode
        ms[v] = m
        if m:
            case("%s: codec fp8-e4m3-block16x32-ue8m0, declared_bits 8, experts fp8_e4m3@8" % v,
                 m["weights"]["codec"] == "fp8-e4m3-block16x32-ue8m0" and m["weights"]["declared_bits"] == 8
                 and "moe.experts=quantized:fp8_e4m3@8" in m["scope"]["scope_digest"].split("|"), m["weights"])
    for v, codec, seg in [("gptq3", "gptq-v1-w3-g32-asym", "moe.experts=quantized:gptq@3"),
                          ("gptq2", "gptq-v2-w2-g16-asym", "moe.experts=quantized:gptq@2")]:
        m = ms.get(v)
        if m:
            case("%s: codec %s, declared_bits %s, scope %s" % (v, codec, v[-1], seg),
                 m["weights"]["codec"] == codec and m["weights"]["declared_bits"] == int(v[-1])
                 and seg in m["scope"]["scope_digest"].split("|"), (m["weights"], m["scope"]["scope_digest"]))


# ---------------------------------------------------------------- 3. refusals
def refusals():
    def refused(tag, model, needles, code):
        rc, out, err = capture(model, W("x-" + tag))
        ok = rc == 3 and ("[%s]" % code) in out and all(n in out for n in needles) and not os.path.exists(W("x-" + tag))
        case("refused (exit 3, %s): %s" % (code, tag), ok, out + err)

    def variant(tag, base, cfg=None, tens=None):
        shutil.copytree(W("q-" + base), W(tag))
        if cfg:
            edit_config(W(tag), cfg)
        if tens:
            rewrite(W(tag), tens)
        return W(tag)

    if not all(os.path.isdir(W("q-" + b)) for b in ("int8ch", "fp8t", "naive", "gptq3", "mlx4g32", "ue8m0", "ue8m0f",
                                                    "nvfp4", "mxfp4")):
        case("the checkpoints the refusals edit exist", False)
        return
    g0 = lambda q: q["config_groups"]["group_0"]
    wts = lambda q: g0(q)["weights"]
    hostile = [
        ("int8ch", "float weights under int-quantized", lambda q: wts(q).update(type="float"),
         ["float weights in format int-quantized"]),
        ("fp8t", "int weights under float-quantized", lambda q: wts(q).update(type="int"),
         ["int weights in format float-quantized"]),
        ("fp8t", "FP8 of 4 bits (nvfp4/mxfp4 not read)", lambda q: wts(q).update(num_bits=4), ["num_bits must be 8"]),
        ("fp8t", "asymmetric FP8", lambda q: wts(q).update(symmetric=False), ["asymmetric float"]),
        ("int8ch", "output activations", lambda q: g0(q).update(output_activations={"num_bits": 8}),
         ["output_activations"]),
        ("int8ch", "input_activations not an object", lambda q: g0(q).update(input_activations=[8]),
         ["input_activations is not an object"]),
        ("int8ch", "strategy token for weights", lambda q: wts(q).update(strategy="token"), ["strategy token"]),
        ("int8ch", "int8 weights under format nvfp4-pack-quantized", lambda q: (q.update(format="nvfp4-pack-quantized"),
                                                           g0(q).update(format=None)), ["nvfp4-pack-quantized needs float"]),
        ("int8ch", "group format sparse-24-bitmask", lambda q: g0(q).update(format="sparse-24-bitmask"),
         ["sparse-24-bitmask"]),
        ("int8ch", "dynamic weights", lambda q: wts(q).update(dynamic=True), ["dynamic"]),
        ("int8ch", "num_bits 6", lambda q: wts(q).update(num_bits=6), ["num_bits must be 4 or 8"]),
        ("gptq3", "gptq bits 5 (planar)", lambda q: q.update(bits=5), ["bits must be 2, 3, 4 or 8"]),
        ("gptq3", "gptq bits 1", lambda q: q.update(bits=1), ["bits must be 2, 3, 4 or 8"]),
    ]
    for i, (base, tag, fn, needles) in enumerate(hostile):
        refused(tag, variant("h%d" % i, base, cfg=fn), needles, "unsupported_quantization")

    def mlx_cfg(tag, fn):
        d = variant(tag, "mlx4g32")
        p = os.path.join(d, "config.json")
        c = json.load(open(p))
        fn(c)
        json.dump(c, open(p, "w"))
        return d
    ex = "model.layers.1.mlp.experts.3.down_proj"
    refused("nvfp4 group_size 32", variant("f-g", "nvfp4", cfg=lambda q: wts(q).update(group_size=32)),
            ["group_size must be 16 for nvfp4"], "unsupported_quantization")
    refused("mxfp4 asymmetric", variant("f-a", "mxfp4", cfg=lambda q: wts(q).update(symmetric=False)),
            ["symmetric only"], "unsupported_quantization")
    refused("nvfp4 int weights", variant("f-i", "nvfp4", cfg=lambda q: wts(q).update(type="int")),
            ["float weights of 4 bits"], "unsupported_quantization")
    refused("nvfp4 global scale missing", variant("f-gs", "nvfp4", tens=lambda t: t.pop(ex + ".weight_global_scale")),
            [ex + ".weight_packed", "weight_global_scale is missing"], "bad_quantized_tensor")
    refused("nvfp4 scale of the wrong shape", variant("f-s", "nvfp4", tens=lambda t: t.__setitem__(
        ex + ".weight_scale", ("F8_E4M3", np.zeros((64, 3), np.uint8)))), [ex + ".weight_scale", "expected F8_E4M3 [64,2]"],
            "bad_quantized_tensor")
    refused("mxfp4 scale code 255 (infinite)", variant("f-inf", "mxfp4", tens=lambda t: t.__setitem__(
        ex + ".weight_scale", ("U8", np.full((64, 1), 255, np.uint8)))), [ex + ".weight_scale[0]", "code 255"],
            "bad_quantized_tensor")
    refused("mxfp4 packed of the wrong width", variant("f-w", "mxfp4", tens=lambda t: t.__setitem__(
        ex + ".weight_packed", ("U8", np.zeros((64, 15), np.uint8)))), [ex + ".weight_packed", "expected U8 [64,16]"],
            "bad_quantized_tensor")
    refused("EXL3 (quant_method exl3: its reference decoder is exllamav3's CUDA extension)", variant("exl3", "int8ch",
            cfg=lambda q: (q.clear(), q.update(quant_method="exl3", bits=4.0, head_bits=6))), ["exl3", "CUDA extension"],
            "unsupported_quantization")
    refused("fp8 scale_fmt ue4m3", variant("u-fmt", "ue8m0", cfg=lambda q: q.update(scale_fmt="ue4m3")),
            ["scale_fmt ue4m3"], "unsupported_quantization")
    refused("F8_E8M0 scales without scale_fmt ue8m0", variant("u-nofmt", "ue8m0", cfg=lambda q: q.pop("scale_fmt")),
            ["F8_E8M0", "scale_fmt"], "bad_quantized_tensor")
    ue = "model.layers.1.mlp.experts.3.down_proj.weight_scale_inv"
    refused("ue8m0 F32 scale that is not a power of two",
            variant("u-p2", "ue8m0f", tens=lambda t: t.__setitem__(ue, ("F32", np.full((4, 1), 0.75, np.float32)))),
            [ue + "[0] = 0.75", "not a power of two"], "bad_quantized_tensor")
    refused("ue8m0 F32 scale of zero", variant("u-z", "ue8m0f", tens=lambda t: t.__setitem__(ue, ("F32", np.zeros((4, 1), np.float32)))),
            [ue + "[0] = 0", "not a power of two"], "bad_quantized_tensor")
    refused("E8M0 NaN code 255", variant("u-nan", "ue8m0", tens=lambda t: t.__setitem__(ue, ("F8_E8M0", np.full((4, 1), 255, np.uint8)))),
            [ue + "[0]", "NaN code 255"], "bad_quantized_tensor")
    refused("E8M0 scales of the wrong shape", variant("u-sh", "ue8m0", tens=lambda t: t.__setitem__(ue, ("F8_E8M0", np.full((4, 2), 127, np.uint8)))),
            [ue, "wrong shape"], "bad_quantized_tensor")
    mq = lambda c: c["quantization"]
    mlx_hostile = [
        ("MLX bits 7", lambda c: mq(c).update(bits=7), ["bits must be 2, 3, 4, 5, 6 or 8"]),
        ("MLX group_size 16", lambda c: mq(c).update(group_size=16), ["group_size must be 32, 64 or 128"]),
        ("MLX mode mxfp4", lambda c: mq(c).update(mode="mxfp4"), ["mode mxfp4"]),
        ("MLX per-module override", lambda c: mq(c).update({"model.layers.0.mlp.down_proj": {"bits": 8, "group_size": 64}}),
         ["model.layers.0.mlp.down_proj", "per-module"]),
        ("MLX quantization not an object", lambda c: c.update(quantization=[4, 64]), ["not an object"]),
        ("MLX and a quantization_config naming a quant_method",
         lambda c: c.update(quantization_config={"quant_method": "gptq", "bits": 4}), ["two declarations"]),
    ]
    for i, (tag, fn, needles) in enumerate(mlx_hostile):
        refused(tag, mlx_cfg("mh%d" % i, fn), needles, "unsupported_quantization")

    e = "model.layers.1.mlp.experts.3.down_proj"
    o = "model.layers.2.self_attn.o_proj"
    bad = [
        ("int8ch", "I8 weight of the wrong shape", lambda t: t.__setitem__(e + ".weight", ("I8", np.zeros((64, 31), np.int8))),
         [e + ".weight", "expected I8 [64,32]"]),
        ("int8ch", "scale missing", lambda t: t.pop(e + ".weight_scale"), [e + ".weight", "weight_scale is missing"]),
        ("int8ch", "channel scale of the wrong shape",
         lambda t: t.__setitem__(e + ".weight_scale", ("BF16", np.zeros((64, 2), np.uint16))),
         [e + ".weight_scale", "expected BF16|F16|F32 [64,1]"]),
        ("int8ch", "a bf16 weight where the config converts", lambda t: t.__setitem__(e + ".weight", ("BF16",
         np.zeros((64, 32), np.uint16))), [e + ".weight", "converts it", "in I8"]),
        ("int8ch", "an F8 weight under an int scheme", lambda t: t.__setitem__(e + ".weight", ("F8_E4M3",
         np.zeros((64, 32), np.uint8))), [e + ".weight", "expected I8"]),
        ("fp8t", "tensor scale of [2]", lambda t: t.__setitem__(e + ".weight_scale", ("F32", np.ones(2, np.float32))),
         [e + ".weight_scale", "expected BF16|F16|F32 [1]"]),
        ("fp8t", "an I8 weight under a float scheme", lambda t: t.__setitem__(e + ".weight", ("I8",
         np.zeros((64, 32), np.int8))), [e + ".weight", "expected F8_E4M3"]),
        ("fp8t", "a quantized weight the ignore list leaves unconverted",
         lambda t: t.__setitem__("model.layers.0.self_attn.indexer.weights_proj.weight",
                                 ("F8_E4M3", np.zeros((4, 64), np.uint8))), ["weights_proj.weight", "unconverted"]),
        ("naive", "zero point missing (asymmetric int group)",
         lambda t: t.pop("model.layers.1.mlp.shared_experts.down_proj.weight_zero_point"),
         ["shared_experts.down_proj.weight", "weight_zero_point is missing"]),
        ("naive", "zero point of I32", lambda t: t.__setitem__("model.layers.1.mlp.shared_experts.down_proj.weight_zero_point",
         ("I32", np.zeros((64, 2), np.int32))), ["weight_zero_point", "expected I8"]),
        ("naive", "block scale of the wrong shape (partial blocks)",
         lambda t: t.__setitem__(o + ".weight_scale", ("F32", np.ones((2, 1), np.float32))),
         [o + ".weight_scale", "expected BF16|F16|F32 [3,2]"]),
        ("naive", "a packed weight under an unpacked group",
         lambda t: (t.pop(e + ".weight"), t.__setitem__(e + ".weight_packed", ("I32", np.zeros((64, 8), np.int32)))),
         [e + ".weight_packed", "unpacked format"]),
        ("gptq3", "3-bit qweight of 4-bit rows", lambda t: t.__setitem__(e + ".qweight", ("I32", np.zeros((4, 64), np.int32))),
         [e + ".qweight", "expected I32 [3,64]"]),
        ("gptq3", "3-bit qzeros of the wrong width", lambda t: t.__setitem__(e + ".qzeros", ("I32", np.zeros((1, 8), np.int32))),
         [e + ".qzeros", "expected I32 [1,6]"]),
    ]
    d = "model.layers.1.mlp.shared_experts.down_proj"
    bad += [
        ("mlx4g32", "MLX weight of the wrong width", lambda t: t.__setitem__(e + ".weight", ("U32", np.zeros((64, 3), np.uint32))),
         [e + ".weight", "U32 expected [64,4]"]),
        ("mlx4g32", "MLX biases missing", lambda t: t.pop(e + ".biases"), [e + ".weight", "biases is missing"]),
        ("mlx4g32", "MLX scales and biases of two dtypes",
         lambda t: t.__setitem__(e + ".biases", ("F16", np.zeros((64, 1), np.float16))), [e + ".biases", "one dtype"]),
        ("mlx4g32", "MLX scales of the wrong shape", lambda t: t.__setitem__(d + ".scales", ("BF16", np.zeros((64, 2), np.uint16))),
         [d + ".scales", "expected BF16|F16|F32 [64,1]"]),
        ("mlx4g32", "MLX U32 router (no Linear)", lambda t: t.__setitem__("model.layers.1.mlp.gate.weight",
         ("U32", np.zeros((8, 8), np.uint32))), ["mlp.gate.weight", "not a Linear or the token embedding"]),
        ("mlx4g32", "MLX quantized Linear of 16 inputs (kv_b_proj, group 32)",
         lambda t: t.__setitem__("model.layers.0.self_attn.kv_b_proj.weight", ("U32", np.zeros((96, 2), np.uint32))),
         ["kv_b_proj.weight", "not a whole number of groups of 32"]),
    ]
    for i, (base, tag, fn, needles) in enumerate(bad):
        refused(tag, variant("b%d" % i, base, tens=fn), needles, "bad_quantized_tensor")
    # scales left beside a bf16 weight: an unexpected tensor, not silently ignored
    rc, out, err = capture(variant("b-stale", "mlx4g32", tens=lambda t: t.__setitem__(
        "model.layers.0.self_attn.kv_b_proj.scales", ("BF16", np.zeros((96, 1), np.uint16)))), W("x-stale"))
    case("refused (exit 3): MLX scales beside a bf16 weight", rc == 3 and "kv_b_proj.scales" in out, out + err)
    # 3-bit on a Linear that is not whole words of 32: kv_a_proj_with_mqa [24, 64] left in the block list
    q3 = json.load(open(W("q-gptq3", "config.json")))["quantization_config"]
    qc = dict(q3, modules_in_block_to_quantize=[q3["modules_in_block_to_quantize"][0] + ["self_attn.kv_a_proj_with_mqa"]])
    excl = lambda n: not (n.startswith("model.layers.") and n.split(".", 3)[3][:-len(".weight")] in
                          qc["modules_in_block_to_quantize"][0] and "kv_a_proj" not in n)
    pr.gq_dir(W("m"), W("b-g3kv"), qc, "F16", excl)
    def pack_kv(t):
        for n in [n for n in t if n.endswith("kv_a_proj_with_mqa.weight")]:
            b = n[:-len(".weight")]
            t.pop(n)
            t[b + ".qweight"] = ("I32", np.zeros((6, 24), np.int32))
            t[b + ".qzeros"] = ("I32", np.zeros((2, 2), np.int32))
            t[b + ".scales"] = ("F16", np.ones((2, 24), np.float16))
            t[b + ".g_idx"] = ("I32", (np.arange(64) // 32).astype(np.int32))
    rewrite(W("b-g3kv"), pack_kv)
    refused("3-bit Linear of 24 outputs (not whole words)", W("b-g3kv"), ["kv_a_proj_with_mqa", "whole int32 words"],
            "bad_quantized_tensor")


try:
    vectors()
    captures()
    refusals()
finally:
    shutil.rmtree(WORK, ignore_errors=True)

print("packed2: %d passed, %d failed" % (H.passed, H.failed))
sys.exit(1 if H.failed else 0)
