#!/usr/bin/env python3
"""deepseek_v4: the release's own weight format (issue 20; docs/MODEL-DEEPSEEK.md
§11.6, docs/QUANT-FORMATS.md "DeepSeek V4 release"). numpy only (no torch).

usage: test_deepseek_v4_release.py BINARY

The deepseek-v4-tiny fixture requantized to the release layout by
tests/py/dsv4_release.py (FP8 e4m3 Linears with F8_E8M0 128x128 `.scale`,
packed fp4 routed experts I8 [N, K/2] with F8_E8M0 per-32 `.scale`, the hub's
spelling, quantization_config fp8 ue8m0 + top-level expert_dtype fp4):

- it loads with no missing / unexpected / mis-shaped tensor (142 quantized);
- its capture_content_digest equals the capture of the bf16 checkpoint holding
  the decoded values (code * 2^(e-127)), and differs from the original bf16
  fixture's; one expert scale code + 1 changes it (the scales are applied);
- the digest is identical across --threads 1/2, both schedules and every
  kernel path this host runs (pair order), and in the tile order;
- expert_dtype inside quantization_config, and transformers' renamed scale
  spelling (X.weight_scale_inv), give the same digest;
- refusals by name: a routed expert not packed under expert_dtype fp4, a
  packed expert of the wrong shape, an expert scale of the wrong shape /
  dtype, the E8M0 NaN code 255, a missing scale, both scale spellings, an
  F8_E4M3 router, an I8 shared expert, expert_dtype fp5, expert_dtype fp4
  with float scales;
- deepseek4 GGUFs made by llama.cpp's converter from this layout
  (tests/vectors/gguf-dsv4, make.py): experts fp4 + BF16 Linears (MXFP4
  stacks) captures to the SAME digest as its release safetensors, across
  threads and schedules; the full release (FP8 Linears forced to Q8_0 by the
  converter) captures, to another digest; hostile GGUFs refused by name (a
  missing tensor, tid2eid of another type / shape / an entry out of range, an
  expert stack of another shape, expert_gating_func softmax).
"""
from fdcheck import Checks
import json, lzma, os, shutil, struct, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dsv4_release as rel  # noqa: E402

T = Checks("deepseek_v4_release", "fd-dsv4rel-")
case, run, W, manifest = T.case, T.run, T.path, T.manifest
EXP = "layers.1.ffn.experts.3.w2"  # a routed expert of a top-k layer


def digest(ds):
    return manifest(ds)["capture"]["capture_content_digest"]


def capture(model, out, role, *extra):
    return run("capture", "--model", W(model), "--panel", W("fx", "panel"), "--out", W(out), "--role", role, "--lane",
               "other", "--dataset-id", "test.v4rel." + out, "--dataset-name", "v4rel", "--windows", 2, *extra)


def variant(name, cfg_edit=None, st_edit=None):
    """a copy of the release checkpoint; st_edit(dict name -> [dtype, shape, bytes]) edits its tensors"""
    d = W(name)
    shutil.copytree(W("rel"), d)
    if cfg_edit:
        c = json.load(open(os.path.join(d, "config.json")))
        cfg_edit(c)
        json.dump(c, open(os.path.join(d, "config.json"), "w"), indent=2, sort_keys=True)
    if st_edit:
        p = os.path.join(d, "model.safetensors")
        hdr, body = rel.read_st(p)
        t = {k: [v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]]] for k, v in hdr.items()}
        st_edit(t)
        rel.write_st(p, [(k, v[0], v[1], v[2]) for k, v in sorted(t.items())])
    return name


def check(d):
    rc, out, err = run("inspect-model", W(d), "--json")
    return rc, (json.loads(out) if rc == 0 else {}), out + err


def set_byte(name, i, value):
    def f(t):
        b = bytearray(t[name][2])
        b[i] = value if value >= 0 else (b[i] + 1) & 0xFF
        t[name][2] = bytes(b)
    return f


def rename_scales(t):
    for k in [k for k in t if k.endswith(".scale")]:
        t[k[:-len(".scale")] + ".weight_scale_inv"] = t.pop(k)


def both_scales(t):
    t["layers.0.attn.wq_a.weight_scale_inv"] = list(t["layers.0.attn.wq_a.scale"])


try:
    rc, out, err = run("fixture", "--preset", "deepseek-v4-tiny", "--seed", 1, "--out", W("fx"))
    case("deepseek-v4-tiny fixture", rc == 0, out + err)
    rel.convert(W("fx"), W("rel"), W("deq"))
    hdr, _ = rel.read_st(W("rel", "model.safetensors"))
    case("the release layout: I8 [64, 16] expert + F8_E8M0 [64, 1] scale, F8_E4M3 wq_a + F8_E8M0 [1, 1] scale",
         hdr[EXP + ".weight"]["dtype"] == "I8" and hdr[EXP + ".weight"]["shape"] == [64, 16]
         and hdr[EXP + ".scale"]["dtype"] == "F8_E8M0" and hdr[EXP + ".scale"]["shape"] == [64, 1]
         and hdr["layers.0.attn.wq_a.weight"]["dtype"] == "F8_E4M3" and hdr["layers.0.attn.wq_a.scale"]["shape"] == [1, 1],
         {k: hdr[k] for k in hdr if k.startswith(EXP)})
    rc, j, msg = check("rel")
    chk = j.get("check", {})
    case("the release checkpoint loads: 210 expected, none missing / unexpected / mis-shaped, 142 quantized",
         rc == 0 and chk.get("expected") == 210 and not chk.get("missing") and not chk.get("unexpected")
         and not chk.get("misshaped") and "fp4experts" in msg and "142" in msg, msg[-1500:])

    rc, out, err = capture("deq", "deq-cap", "root", "--threads", 2, "--gemm-order", "pair")
    case("capture the bf16 checkpoint of the decoded values", rc == 0, out + err)
    rc, out, err = capture("fx", "bf-cap", "root", "--threads", 2, "--gemm-order", "pair")
    case("capture the original bf16 fixture", rc == 0, out + err)
    rc, out, err = capture("rel", "rel-cap", "quant", "--threads", 2, "--gemm-order", "pair")
    case("capture the release checkpoint (--role quant)", rc == 0, out + err)
    base = digest(W("rel-cap")) if rc == 0 else None
    case("release digest == the decoded bf16 checkpoint's, != the original fixture's",
         base and base == digest(W("deq-cap")) and base != digest(W("bf-cap")), base)

    runs = [("t1-lo", ["--threads", 1, "--schedule", "layer-outer"]), ("t2-lo", ["--threads", 2, "--schedule", "layer-outer"]),
            ("t1-wo", ["--threads", 1, "--schedule", "window-outer"])]
    for k in ("scalar", "avx2", "avx512f", "avx512bf16"):
        runs.append(("k-" + k, ["--threads", 2, "--kernel", k]))
    for tag, extra in runs:
        rc, out, err = capture("rel", tag, "quant", "--gemm-order", "pair", *extra)
        if rc == 3 and tag.startswith("k-") and "REFUSED" in out + err:
            print("skip: %s (this host: %s)" % (tag, (out + err).strip().splitlines()[-1][:120]))
            continue
        case("release, pair order, %s: same digest" % " ".join(map(str, extra)), rc == 0 and digest(W(tag)) == base,
             out + err)
    rc1, out, err = capture("rel", "tile1", "quant", "--threads", 1)
    rc2, out2, err2 = capture("rel", "tile2", "quant", "--threads", 2, "--schedule", "layer-outer")
    rc3, out3, err3 = capture("deq", "tile3", "root", "--threads", 2)
    case("tile order: release threads 1 window-outer = threads 2 layer-outer = the decoded bf16 checkpoint",
         rc1 == 0 and rc2 == 0 and rc3 == 0 and digest(W("tile1")) == digest(W("tile2")) == digest(W("tile3")),
         out + err + out2 + err2 + out3 + err3)

    def inside(c):
        c["quantization_config"]["expert_dtype"] = c.pop("expert_dtype")
    rc, out, err = capture(variant("inside", inside), "inside-cap", "quant", "--threads", 2, "--gemm-order", "pair")
    case("expert_dtype inside quantization_config: the same digest", rc == 0 and digest(W("inside-cap")) == base, out + err)
    rc, out, err = capture(variant("sinv", st_edit=rename_scales), "sinv-cap", "quant", "--threads", 2, "--gemm-order", "pair")
    case("the scales spelled X.weight_scale_inv (transformers' rename): the same digest",
         rc == 0 and digest(W("sinv-cap")) == base, out + err)
    rc, out, err = capture(variant("bump", st_edit=set_byte(EXP + ".scale", 5, -1)), "bump-cap", "quant", "--threads", 2,
                           "--gemm-order", "pair")
    case("one expert scale code + 1: the digest changes (the scale is applied)", rc == 0 and digest(W("bump-cap")) != base,
         out + err)

    def refused(name, code, words, cfg_edit=None, st_edit=None):
        d = variant(name.replace(" ", "_").replace("/", "_").replace('"', ""), cfg_edit, st_edit)
        rc, out, err = run("inspect-model", W(d))
        msg = out + err
        case("refused %s: %s" % (code, name), rc == 3 and "REFUSED [%s]" % code in msg and all(w in msg for w in words), msg)

    def expert_bf16(t):
        t.pop(EXP + ".scale")
        t[EXP + ".weight"] = ["BF16", [64, 32], b"\0" * (64 * 32 * 2)]

    def expert_short(t):
        t[EXP + ".weight"] = ["I8", [64, 8], t[EXP + ".weight"][2][:64 * 8]]

    def scale_shape(t):
        t[EXP + ".scale"] = ["F8_E8M0", [32, 2], t[EXP + ".scale"][2]]

    def scale_u8(t):
        t[EXP + ".scale"][0] = "U8"

    def scale_missing(t):
        t.pop("layers.0.attn.wkv.scale")

    def router_fp8(t):
        n = 8 * 64
        t["layers.1.ffn.gate.weight"] = ["F8_E4M3", [8, 64], bytes(n)]
        t["layers.1.ffn.gate.scale"] = ["F8_E8M0", [1, 1], bytes([127])]

    def shared_i8(t):
        k = "layers.1.ffn.shared_experts.w1"
        t[k + ".weight"] = ["I8", [32, 32], bytes(32 * 32)]
        t[k + ".scale"] = ["F8_E8M0", [32, 2], bytes([127] * 64)]

    B = "model." + EXP
    refused("a routed expert stored BF16 under expert_dtype fp4", "bad_quantized_tensor", [B + ".weight", "expert_dtype"],
            st_edit=expert_bf16)
    refused("a packed expert [64, 8] (K/2 is 16)", "bad_quantized_tensor", [B + ".weight", "[64,16]"], st_edit=expert_short)
    refused("an expert scale [32, 2]", "bad_quantized_tensor", [B + ".scale", "[64,1]"], st_edit=scale_shape)
    refused("an expert scale stored U8", "bad_quantized_tensor", [B + ".scale", "F8_E8M0"], st_edit=scale_u8)
    refused("an expert scale code 255", "bad_quantized_tensor", [B + ".scale[5]", "255"], st_edit=set_byte(EXP + ".scale", 5, 255))
    refused("an FP8 Linear without its scale", "bad_quantized_tensor", ["model.layers.0.attn.wkv.weight", "missing"],
            st_edit=scale_missing)
    refused("X.scale and X.weight_scale_inv both present", "bad_quantized_tensor", ["both present", "wq_a"],
            st_edit=both_scales)
    refused("an F8_E4M3 router (ffn.gate.weight)", "bad_quantized_tensor", ["model.layers.1.ffn.gate.weight", "not a converted"],
            st_edit=router_fp8)
    refused("an I8 shared expert", "bad_quantized_tensor", ["shared_experts.w1.weight", "only routed experts"],
            st_edit=shared_i8)
    refused('expert_dtype "fp5"', "unsupported_quantization", ["expert_dtype", "fp5"],
            cfg_edit=lambda c: c.update(expert_dtype="fp5"))
    refused('expert_dtype "fp4" with float scales', "unsupported_quantization", ["expert_dtype", "ue8m0"],
            cfg_edit=lambda c: c["quantization_config"].update(scale_fmt="float"))
    # deepseek4 GGUFs (llama.cpp's converter, tests/vectors/gguf-dsv4)
    VEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors", "gguf-dsv4")
    for n in ("fp4experts", "release"):
        open(W(n + ".gguf"), "wb").write(lzma.decompress(open(os.path.join(VEC, "deepseek-v4-tiny.%s.gguf.xz" % n), "rb").read()))
    rel.convert(W("fx"), W("rel4"), W("deq4"), fp8_linears=False)
    rc, out, err = capture("rel4", "rel4-cap", "quant", "--threads", 2, "--gemm-order", "pair")
    case("the release layout with BF16 Linears (experts fp4 only) captures", rc == 0, out + err)
    rc, out, err = run("inspect-model", W("fp4experts.gguf"))
    case("deepseek4 GGUF (MXFP4 experts): read as deepseek_v4, every tensor mapped",
         rc == 0 and "model_type deepseek_v4" in out and "capture --model reads it" in out, out[-800:] + err)
    g4 = None
    for tag, extra in (("gg-t2", ["--threads", 2]), ("gg-t1-lo", ["--threads", 1, "--schedule", "layer-outer"])):
        rc, out, err = run("capture", "--model", W("fp4experts.gguf"), "--panel", W("fx", "panel"), "--out", W(tag),
                           "--role", "quant", "--lane", "other", "--dataset-id", "test.v4rel." + tag, "--dataset-name",
                           "v4rel", "--windows", 2, "--gemm-order", "pair", *extra)
        d = digest(W(tag)) if rc == 0 else None
        case("deepseek4 GGUF, %s: the same digest as the release safetensors it was converted from (and the decoded "
             "bf16 checkpoint's)" % " ".join(map(str, extra)),
             rc == 0 and d == digest(W("rel4-cap")) and (g4 is None or d == g4), out + err)
        g4 = g4 or d
    rc, out, err = run("capture", "--model", W("release.gguf"), "--panel", W("fx", "panel"), "--out", W("ggrel"), "--role",
                       "quant", "--lane", "other", "--dataset-id", "test.v4rel.ggrel", "--dataset-name", "v4rel",
                       "--windows", 2, "--gemm-order", "pair", "--threads", 2)
    case("deepseek4 GGUF of the full release (FP8 Linears -> the converter's Q8_0) captures, to another digest than the "
         "release's (Q8_0 of the decoded FP8 is lossy)", rc == 0 and digest(W("ggrel")) != base, out + err)

    src = open(W("fp4experts.gguf"), "rb").read()

    def info(data, name):
        """offset of tensor `name`'s n_dims in the tensor-info section"""
        k = struct.pack("<Q", len(name)) + name.encode()
        return data.index(k) + len(k)

    def kv(data, key):
        """offset of metadata key `key`'s type"""
        k = struct.pack("<Q", len(key)) + key.encode()
        return data.index(k) + len(k)

    def hostile(tag, fn, code, words):
        data = bytearray(src)
        fn(data)
        open(W(tag + ".gguf"), "wb").write(data)
        rc, out, err = run("capture", "--model", W(tag + ".gguf"), "--panel", W("fx", "panel"), "--out", W(tag + "-cap"),
                           "--role", "quant", "--lane", "other", "--dataset-id", "test.v4rel." + tag, "--dataset-name",
                           "v4rel")
        msg = out + err
        case("hostile deepseek4 GGUF refused %s: %s" % (code, tag), rc == 3 and "REFUSED [%s]" % code in msg
             and all(w in msg for w in words) and not os.path.exists(W(tag + "-cap")), msg[-600:])

    TID = "blk.0.ffn_gate_tid2eid.weight"

    def drop(d):  # rename blk.1.attn_kv.weight (same length): missing, and one unexpected
        o = info(d, "blk.1.attn_kv.weight") - len("kv.weight")
        d[o:o + 2] = b"kx"

    def tid_type(d):  # I32 (26) -> F32 (0), the same bytes
        o = info(d, TID)
        d[o + 4 + 16:o + 4 + 16 + 4] = struct.pack("<I", 0)

    def tid_shape(d):  # ne [2, 260] -> [1, 520]
        o = info(d, TID)
        d[o + 4:o + 4 + 16] = struct.pack("<QQ", 1, 520)

    def tid_entry(d):  # tid2eid[3][1] = 8 (n_routed_experts 8)
        import gguf
        t = [x for x in gguf.GGUFReader(W("fp4experts.gguf")).tensors if x.name == TID][0]
        o = t.data_offset + (3 * 2 + 1) * 4
        d[o:o + 4] = struct.pack("<i", 8)

    def stack(d):  # blk.1.ffn_gate_exps ne [64, 32, 8] -> [64, 64, 4]
        o = info(d, "blk.1.ffn_gate_exps.weight")
        d[o + 4 + 8:o + 4 + 24] = struct.pack("<QQ", 64, 4)

    def gating(d):  # expert_gating_func 4 (sqrtsoftplus) -> 1 (softmax)
        o = kv(d, "deepseek4.expert_gating_func")
        d[o + 4:o + 8] = struct.pack("<I", 1)

    hostile("missing-tensor", drop, "checkpoint_mismatch", ["model.layers.1.attn.wkv.weight", "blk.1.attn_kv.weight"])
    hostile("tid2eid-f32", tid_type, "checkpoint_mismatch", ["tid2eid", "I32 / I64"])
    hostile("tid2eid-shape", tid_shape, "checkpoint_mismatch", ["tid2eid", "I32 / I64 table of this shape"])
    hostile("tid2eid-entry-8", tid_entry, "checkpoint_mismatch", ["tid2eid", "is 8", "[0, 8)"])
    hostile("expert-stack-shape", stack, "checkpoint_mismatch", ["ffn.experts", "expert stack"])
    hostile("gating-softmax", gating, "bad_gguf_config", ["expert_gating_func"])
finally:
    T.finish()
