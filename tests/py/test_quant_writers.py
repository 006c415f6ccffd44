#!/usr/bin/env python3
"""Packed-format writers (issue 19, "the demo gains rows for the new formats"):
`fidelity quantize --format compressed-tensors|gptq|mlx`.

usage: test_quant_writers.py BINARY

For each format, on the tiny fixture (routed experts, --group-size 32: the
experts' inputs are 64 and 32):
1. the stored tensors equal this file's numpy re-statement of the documented
   rule (docs/QUANT-FORMATS.md "Writers"), byte for byte;
2. our reader captures the checkpoint, and the capture digest equals the
   capture of the bf16 checkpoint packed_ref.py decodes from it (the readers'
   reference decoders), scope census and codec as the format's;
3. a compare against the bf16 root is strict, its receipt carrying the
   census and the declared bits;
4. compressed-tensors: where torch + compressed-tensors import
   (FIDELITY_ORACLE_PYTHON, e.g. PYTHONPATH=/tmp/ct-pkgs
   /tmp/venv-engine/bin/python), the package's calculate_qparams / quantize /
   pack_to_int32 give our bytes and its decompressor our bf16
   (ct_writer_oracle.py); otherwise that step says it is skipped;
5. refusals (exit 3, nothing written): partial groups, a bad --group-size
   (exit 4), an already-quantized source.
"""
import json, os, re, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import numpy as np
    import dequant_ref as dq
    import packed_ref as pr
    import dsutil
except ImportError:
    print("numpy unavailable: the writer checks need it for the offline reference; skipped")
    sys.exit(0)

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
WORK = tempfile.mkdtemp(prefix="fd-qwriters-")
H = dsutil.CaptureHarness(BIN, WORK)
case, run, W, manifest, digest, capture = H.case, H.run, H.W, H.manifest, H.digest, H.capture
G = 32
FORMATS = {"compressed-tensors": ("ct-pack-w4-group32-sym", "int4@4"), "gptq": ("gptq-v1-w4-g32-sym", "gptq@4"),
           "mlx": ("mlx-affine-w4-g32", "mlx-affine@4")}


def bf16r(x):
    return pr.scale_f32("BF16", dq.f32_to_bf16_bits(np.asarray(x, dtype=np.float32)))


def expect_ct(x):
    n, k = x.shape
    t = x.reshape(n, k // G, G)
    s = bf16r(np.abs(t).max(-1) / np.float32(7.5))
    s = np.where(s == 0, np.float32(2.0 ** -7), s).astype(np.float32)
    q = np.clip(np.rint(bf16r(t / s[..., None])), -8, 7).astype(np.int8).reshape(n, k)
    return {"weight_packed": pr.pack_int32(q, 4), "weight_scale": dq.f32_to_bf16_bits(s),
            "weight_shape": np.array([n, k], dtype=np.int64)}


def expect_gptq(x):
    n, k = x.shape
    t = x.reshape(n, k // G, G)
    a = np.abs(t).max(-1)
    s = np.where(a > 0, np.float32(2) * a / np.float32(15), np.float32(2) / np.float32(15)).astype(np.float32)
    s16 = s.astype(np.float16)
    q = np.clip(np.rint(t / s16.astype(np.float32)[..., None]) + 8, 0, 15).astype(np.uint64).reshape(n, k)
    qw = np.zeros((k // 8, n), dtype=np.uint64)
    for j in range(8):
        qw |= q[:, j::8].T << np.uint64(4 * j)
    return {"qweight": qw.astype(np.uint32).view(np.int32), "qzeros": np.full((k // G, n // 8), 0x77777777, np.int32),
            "scales": np.ascontiguousarray(s16.T), "g_idx": (np.arange(k) // G).astype(np.int32)}


def expect_mlx(x):
    n, k = x.shape
    t = x.reshape(n, k // G, G)
    mn, mx = t.min(-1), t.max(-1)
    s = np.where(mx > mn, bf16r((mx - mn) / np.float32(15)), np.float32(1)).astype(np.float32)
    b = bf16r(mn)
    q = np.clip(np.rint((t - b[..., None]) / s[..., None]), 0, 15).astype(np.int64).reshape(n, k)
    return {"weight": pr._pack_stream(q, 4), "scales": dq.f32_to_bf16_bits(s), "biases": dq.f32_to_bf16_bits(b)}


EXPECT = {"compressed-tensors": expect_ct, "gptq": expect_gptq, "mlx": expect_mlx}


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def main():
    rc, out, err = run("fixture", "--preset", "tiny", "--seed", 1, "--out", W("m"))
    case("tiny fixture", rc == 0, out + err)
    rc, out, err = capture(W("m"), W("root"), role="root")
    case("root capture", rc == 0, out + err)
    src = dq.read_safetensors(W("m", "model.safetensors"))
    for f, (codec, census) in FORMATS.items():
        q, c = W("q-" + f), W("c-" + f)
        rc, out, err = run("quantize", "--format", f, "--group-size", G, "--match", "mlp.experts.", "--src", W("m"),
                           "--dst", q)
        case("%s: quantize --format %s --group-size %d (routed experts)" % (f, f, G), rc == 0, out + err)
        if rc:
            continue
        t = dq.read_safetensors(os.path.join(q, "model.safetensors"))
        names = sorted(n for n in src if ".mlp.experts." in n and n.endswith(".weight"))
        bad = []
        for n in names:
            dt, arr = src[n]
            x = pr.scale_f32(dt, arr)
            for part, v in EXPECT[f](x).items():
                got = t.get(n[:-len("weight")] + part)
                if got is None or not same(got[1], v):
                    bad.append(n[:-len("weight")] + part)
        case("%s: the %d expert weights' stored tensors = the documented rule (numpy), byte for byte"
             % (f, len(names)), len(names) == 72 and not bad, bad[:4])
        others = [n for n in src if ".mlp.experts." not in n]
        case("%s: every other tensor copied unchanged" % f,
             all(n in t and t[n][0] == src[n][0] and same(t[n][1], src[n][1]) for n in others))
        rc, out, err = capture(q, c)
        case("%s: captured as shipped" % f, rc == 0, out + err)
        if rc:
            continue
        rc, out, err = run("verify", c)
        case("%s: capture verifies" % f, rc == 0, out + err)
        json.dump(manifest(c)["scope"], open(W(f + ".scope.json"), "w"))
        n = pr.dequant_dir(q, W("d-" + f))
        rc, out, err = capture(W("d-" + f), W("cd-" + f), scope=W(f + ".scope.json"))
        case("%s: capture of the packed_ref-decoded bf16 checkpoint (%d weights)" % (f, n), rc == 0, out + err)
        if rc == 0:
            case("%s: same capture_content_digest as the reference-decoded bf16" % f,
                 digest(c) == digest(W("cd-" + f)), (digest(c), digest(W("cd-" + f))))
            case("%s: differs from the bf16 root" % f, digest(c) != digest(W("root")))
        m = manifest(c)
        seg = "moe.experts=quantized:" + census
        case("%s: codec %s, declared_bits 4, scope %s" % (f, codec, seg),
             m["weights"]["codec"] == codec and m["weights"]["declared_bits"] == 4
             and seg in m["scope"]["scope_digest"].split("|"), (m["weights"], m["scope"]["scope_digest"]))
        # effective bits per weight: every stored tensor of the quantized modules x 8 / their weights' elements
        mods = sorted({n[:-len("weight")] for n in names})
        qb = sum(a[1].nbytes for k, a in t.items() if any(k.startswith(p) for p in mods))
        el = sum(src[p + "weight"][1].size for p in mods)
        det = " ".join(x.get("detail", "") for x in m["disclosures"] if x["code"] == "weight_only_dequantization")
        got = re.search(r"effective ([0-9.e+-]+) bits per weight", det)
        want = float("%.6g" % (qb * 8.0 / el))
        case("%s: the disclosure's effective bits per weight = stored bytes x 8 / elements (%.6g)" % (f, want),
             got is not None and float(got.group(1)) == want, det[-300:])
        rc, out, err = run("compare", "--reference", W("root"), "--candidate", c, "--out", W("cmp-" + f))
        r = json.load(open(W("cmp-" + f, "comparison-receipt.json"))) if os.path.exists(
            W("cmp-" + f, "comparison-receipt.json")) else {}
        txt = json.dumps(r)
        case("%s: compare against the root: strict, exit 0, the receipt carries the census, codec and 4 bits" % f,
             rc == 0 and r.get("comparability", {}).get("class") == "strict" and seg in txt
             and '"codec": "%s"' % codec in txt and '"declared_bits": 4' in txt, (rc, out[-600:], err[-400:]))

    # 4. compressed-tensors' own quantizer and decompressor
    py = os.environ.get("FIDELITY_ORACLE_PYTHON", sys.executable)
    probe = subprocess.run([py, "-c", "import torch, compressed_tensors"], capture_output=True)
    if probe.returncode or not os.path.isdir(W("q-compressed-tensors")):
        print("skipped: compressed-tensors' own quantize / decompress need torch and compressed-tensors "
              "(FIDELITY_ORACLE_PYTHON); the numpy rule and packed_ref's decoder were checked above")
    else:
        p = subprocess.run([py, os.path.join(HERE, "ct_writer_oracle.py"), W("q-compressed-tensors"), W("m"),
                            W("ct-oracle.safetensors")], capture_output=True, text=True)
        case("compressed-tensors: calculate_qparams + quantize + pack_to_int32 give our scales and words",
             p.returncode == 0 and "72 weights, 0 mismatches" in p.stdout, p.stdout + p.stderr)
        if p.returncode == 0:
            o = dq.read_safetensors(W("ct-oracle.safetensors"))
            d = dq.read_safetensors(W("d-compressed-tensors", "model.safetensors"))
            diff = [b for b in o if not same(o[b][1], d[b + ".weight"][1])]
            case("compressed-tensors: its decompressor's bf16 = the decode our capture matched (72 weights)",
                 len(o) == 72 and not diff, diff[:4])

    # 5. refusals
    def refused(tag, args, code, needle, rc_want=3):
        rc, out, err = run("quantize", *args, "--src", W("m"), "--dst", W("x-" + tag))
        case("refused (%s): %s" % (code, tag), rc == rc_want and code in out + err and needle in out + err
             and not os.path.exists(W("x-" + tag)), out + err)

    refused("ct group 128 on 64-input experts", ["--format", "compressed-tensors", "--match", "mlp.experts."],
            "[unsupported_shape]", "whole groups of 128")
    refused("mlx every Linear (kv_b_proj has 16 inputs)", ["--format", "mlx", "--group-size", "32"],
            "[unsupported_shape]", "kv_b_proj")
    refused("gptq group 12", ["--format", "gptq", "--group-size", "12", "--match", "mlp.experts."], "--group-size",
            "multiple of 8", rc_want=4)
    refused("--group-size with fp8-block", ["--format", "fp8-block", "--group-size", "32"], "--group-size",
            "applies to", rc_want=4)
    rc, out, err = run("quantize", "--format", "gptq", "--group-size", G, "--match", "mlp.experts.", "--src",
                       W("q-mlx"), "--dst", W("x-requant"))
    case("refused (already_quantized): an MLX checkpoint (config.json quantization) is not quantized again",
         rc == 3 and "[already_quantized]" in out and not os.path.exists(W("x-requant")), out + err)

    print("%d passed, %d failed" % (H.passed, H.failed))
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(1 if H.failed else 0)


main()
