#!/usr/bin/env python3
"""deepseek_v4 (DeepSeek V4, transformers 5.25 DeepseekV4ForCausalLM) in the
architecture table (issue 20's last architecture; docs/MODEL-DEEPSEEK.md §11).
No torch needed: the transformers parity is tests/parity/run_parity.sh's
committed golden (deepseek-v4-tiny, bit-identical) and, only when torch +
transformers import, tests/parity/deepseek_v4_parity.py (per-layer, on a
checkpoint written by transformers' own save_pretrained).

usage: test_deepseek_v4.py BINARY

- the deepseek-v4-tiny fixture: 210 tensors (save_pretrained's spelling,
  head.weight, an I64 tid2eid), none missing / unexpected / mis-shaped;
- capture_content_digest identical across --threads 1/2, both --schedule
  values and every kernel path this host runs;
- the hub's release spelling (no `model.`, embed.weight, norm.weight,
  hc_head_fn) gives the same digest; one tensor in both spellings is refused
  naming both; an MTP tensor is ignored;
- the legacy config spellings (compress_ratios, compress_rate_csa / _hca,
  num_hash_layers, qk_rope_head_dim, flat yarn rope_parameters) give the same
  digest;
- refusals by name: tid2eid entry >= n_routed_experts, tid2eid not an
  integer table, num_key_value_heads != 1, scoring_func softmax,
  norm_topk_prob false, unknown layer / mlp types, a main yarn rope,
  expert_dtype fp4 over bf16 experts, expert_dtype fp5, o_groups not dividing
  the heads (the release format itself: test_deepseek_v4_release.py);
- RTN int8 < int4 in KL (routed experts); the demo's FP8 / NVFP4 rows;
- a deepseek2 GGUF relabelled deepseek4 is refused naming a missing deepseek4
  key (deepseek4 GGUFs themselves: test_deepseek_v4_release.py).
"""
from fdcheck import Checks
import json, os, shutil, struct, subprocess, sys

T = Checks("deepseek_v4", "fd-dsv4-")
case, run, W, manifest, BIN = T.case, T.run, T.path, T.manifest, T.bin


def digest(ds):
    return manifest(ds)["capture"]["capture_content_digest"]


def capture(model, out, *extra):
    return run("capture", "--model", W(model), "--panel", W("fx", "panel"), "--out", W(out), "--role", "root", "--lane",
               "other", "--dataset-id", "test.v4." + out, "--dataset-name", "v4", "--windows", 2, *extra)


def variant(name, edit=None, names=None):
    """a copy of the fixture, config.json edited, the safetensors header / body rewritten by names(hdr, body)"""
    d = W(name)
    shutil.copytree(W("fx"), d, ignore=shutil.ignore_patterns("panel"))
    if edit:
        cfg = json.load(open(os.path.join(d, "config.json")))
        edit(cfg)
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2, sort_keys=True)
    if names:
        p = os.path.join(d, "model.safetensors")
        data = open(p, "rb").read()
        n = struct.unpack("<Q", data[:8])[0]
        hdr, body = json.loads(data[8:8 + n]), data[8 + n:]
        hdr.pop("__metadata__", None)
        hdr, body = names(hdr, body)
        nb, off = [], 0
        for k, v in hdr.items():
            a, b = v["data_offsets"]
            nb.append(body[a:b])
            v["data_offsets"] = [off, off + b - a]
            off += b - a
        hb = json.dumps(hdr, separators=(",", ":")).encode()
        hb += b" " * (-len(hb) % 8)
        open(p, "wb").write(struct.pack("<Q", len(hb)) + hb + b"".join(nb))
    return d


def release(hdr, body):
    """the hub's release spelling of every trunk tensor"""
    out = {}
    for k, v in hdr.items():
        for a, b in (("model.embed_tokens.weight", "embed.weight"), ("model.norm.weight", "norm.weight"),
                     ("model.hc_head.hc_", "hc_head_"), ("model.layers.", "layers.")):
            if k.startswith(a):
                k = b + k[len(a):]
                break
        out[k] = dict(v)
    return out, body


def copied(src, dst):
    def f(hdr, body):
        a, b = hdr[src]["data_offsets"]
        hdr = {k: dict(v) for k, v in hdr.items()}
        hdr[dst] = dict(hdr[src], data_offsets=[len(body), len(body) + b - a])
        return hdr, body + body[a:b]
    return f


TID = "model.layers.0.ffn.gate.tid2eid"


def tid_set(value):
    """tid2eid[3][1] = value (I64)"""
    def f(hdr, body):
        a, b = hdr[TID]["data_offsets"]
        k = hdr[TID]["shape"][1]
        pos = a + (3 * k + 1) * 8
        return hdr, body[:pos] + struct.pack("<q", value) + body[pos + 8:]
    return f


def tid_f32(hdr, body):
    hdr = {k: dict(v) for k, v in hdr.items()}
    a, b = hdr[TID]["data_offsets"]
    n = (b - a) // 8
    hdr[TID] = dict(hdr[TID], dtype="F32", data_offsets=[len(body), len(body) + 4 * n])
    return hdr, body + struct.pack("<%df" % n, *([1.0] * n))


def check(d):
    rc, out, err = run("inspect-model", d, "--json")
    return rc, (json.loads(out)["check"] if rc == 0 else {}), out + err


try:
    rc, out, err = run("fixture", "--preset", "deepseek-v4-tiny", "--seed", 1, "--out", W("fx"))
    case("deepseek-v4-tiny fixture", rc == 0, out + err)
    rc, chk, msg = check(W("fx"))
    case("the loader expects the 210 tensors of save_pretrained's spelling, none missing / unexpected / mis-shaped",
         rc == 0 and chk["expected"] == 210 and chk["tensors"] == 210 and not chk["missing"] and not chk["unexpected"]
         and not chk["misshaped"], msg)
    hdr = json.loads(open(W("fx", "model.safetensors"), "rb").read()[8:8 + struct.unpack(
        "<Q", open(W("fx", "model.safetensors"), "rb").read(8))[0]])
    case("the fixture writes head.weight, an I64 tid2eid [vocab, top_k] and F32 hc / sink / ape tensors",
         "head.weight" in hdr and hdr[TID]["dtype"] == "I64" and hdr[TID]["shape"] == [260, 2]
         and hdr["model.layers.1.attn.attn_sink"]["dtype"] == "F32"
         and hdr["model.layers.1.attn.indexer.compressor.ape"]["dtype"] == "F32", {k: hdr[k] for k in hdr if "layers.0.ffn.gate" in k})
    body = open(W("fx", "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", body[:8])[0]
    a, b = hdr[TID]["data_offsets"]
    tid = struct.unpack("<%dq" % ((b - a) // 8), body[8 + n + a:8 + n + b])
    rows = [tid[i:i + 2] for i in range(0, len(tid), 2)]
    case("tid2eid: every row two distinct experts in [0, 8), not all the same row",
         all(0 <= x < 8 for x in tid) and all(r[0] != r[1] for r in rows) and len(set(rows)) > 8, rows[:6])
    rc, out, err = run("architectures", "show", "deepseek_v4")
    case("`architectures show deepseek_v4` names DeepseekV4ForCausalLM", rc == 0 and "DeepseekV4ForCausalLM" in out, out + err)

    rc, out, err = capture("fx", "base", "--threads", 2, "--gemm-order", "pair")
    case("capture deepseek-v4-tiny (pair order, 2 windows)", rc == 0, out + err)
    base = digest(W("base")) if rc == 0 else None

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
    rc1, out, err = capture("fx", "tile1", "--threads", 1)
    rc2, out2, err2 = capture("fx", "tile2", "--threads", 2, "--schedule", "layer-outer")
    case("tile order: threads 1 window-outer = threads 2 layer-outer", rc1 == 0 and rc2 == 0 and digest(W("tile1")) == digest(W("tile2")),
         out + err + out2 + err2)

    # the hub's release spelling; both spellings; MTP
    rel = variant("release", names=release)
    rc, chk, msg = check(rel)
    case("the release spelling (embed.weight, layers.N., norm.weight, hc_head_fn) loads: none missing / unexpected",
         rc == 0 and not chk["missing"] and not chk["unexpected"], msg)
    rc, out, err = capture("release", "release-cap", "--threads", 2, "--gemm-order", "pair")
    case("... and captures to the same digest", rc == 0 and digest(W("release-cap")) == base, out + err)
    both = variant("both", names=copied("model.norm.weight", "norm.weight"))
    rc, chk, msg = check(both)
    case("one tensor in both spellings is refused naming both",
         rc == 3 and "REFUSED [checkpoint_mismatch]" in msg and "model.norm.weight" in msg and "(two spellings" in msg, msg)
    mtp = variant("mtp", names=copied("model.layers.0.attn_norm.weight", "mtp.0.attn_norm.weight"))
    rc, chk, msg = check(mtp)
    case("an mtp.* tensor is ignored (transformers' _keys_to_ignore_on_load_unexpected)",
         rc == 0 and "mtp.0.attn_norm.weight" in chk.get("ignored", []) and not chk["unexpected"], msg)

    # the legacy config spellings (DeepseekV4Config.__post_init__)
    def legacy(c):
        c.pop("layer_types"); c.pop("mlp_layer_types"); c.pop("compress_rates"); c.pop("partial_rotary_factor")
        c["compress_ratios"] = [0, 4, 128, 4]
        c["compress_rate_csa"], c["compress_rate_hca"] = 4, 8
        c["num_hash_layers"] = 1
        c["qk_rope_head_dim"] = 8
        c["rope_parameters"] = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    leg = variant("legacy", legacy)
    rc, out, err = capture("legacy", "legacy-cap", "--threads", 2, "--gemm-order", "pair")
    case("legacy spellings (compress_ratios, compress_rate_csa/_hca, num_hash_layers, qk_rope_head_dim, flat yarn) "
         "give the same digest", rc == 0 and digest(W("legacy-cap")) == base, out + err)

    # refusals by name
    def refused(name, edit, code, *words, names=None):
        d = variant(name.replace(" ", "_").replace("/", "_"), edit, names)
        rc, out, err = run("inspect-model", d)
        msg = out + err
        case("refused %s: %s" % (code, name), rc == 3 and "REFUSED [%s]" % code in msg and all(w in msg for w in words), msg)

    refused("tid2eid entry 8 (n_routed_experts 8)", None, "checkpoint_mismatch", TID, "[0, 8)", names=tid_set(8))
    refused("tid2eid entry -1", None, "checkpoint_mismatch", TID, "-1", names=tid_set(-1))
    refused("tid2eid stored F32", None, "checkpoint_mismatch", TID, "I64", names=tid_f32)
    refused("num_key_value_heads 2", lambda c: c.update(num_key_value_heads=2), "bad_config", "num_key_value_heads")
    refused("scoring_func softmax", lambda c: c.update(scoring_func="softmax"), "bad_config", "scoring_func")
    refused("norm_topk_prob false", lambda c: c.update(norm_topk_prob=False), "bad_config", "norm_topk_prob")
    refused("layer_types entry full_attention", lambda c: c["layer_types"].__setitem__(1, "full_attention"), "bad_config",
            "layer_types")
    refused("mlp_layer_types entry dense", lambda c: c["mlp_layer_types"].__setitem__(1, "dense"), "bad_config",
            "mlp_layer_types")
    refused("compress_ratios entry 8", lambda c: (c.pop("layer_types"), c.update(compress_ratios=[0, 4, 8, 4])), "bad_config",
            "compress_ratios")
    refused("main rope yarn", lambda c: c["rope_parameters"]["main"].update(rope_type="yarn", factor=2.0,
                                                                            original_max_position_embeddings=64),
            "bad_config", "rope_parameters.main")
    refused("compress rope longrope", lambda c: c["rope_parameters"]["compress"].update(rope_type="longrope"), "bad_config",
            "rope_parameters.compress")
    # the release's format itself: tests/py/test_deepseek_v4_release.py; here a bf16 checkpoint that claims it
    refused("quantization_config.expert_dtype fp4 over bf16 experts", lambda c: c.update(quantization_config={
        "quant_method": "fp8", "weight_block_size": [128, 128], "scale_fmt": "ue8m0", "expert_dtype": "fp4"}),
        "bad_quantized_tensor", 'expert_dtype "fp4"', "ffn.experts.")
    refused("expert_dtype fp5", lambda c: c.update(quantization_config={
        "quant_method": "fp8", "weight_block_size": [128, 128], "expert_dtype": "fp5"}), "unsupported_quantization",
        "expert_dtype")
    refused("o_groups 3 (does not divide 4 x 32)", lambda c: c.update(o_groups=3), "bad_config", "o_groups")
    refused("hidden_act gelu", lambda c: c.update(hidden_act="gelu"), "bad_config", "hidden_act")

    # RTN int8 < int4 (routed experts; quantize keeps the stored names)
    kl = {}
    for bits in (8, 4):
        rc, out, err = run("quantize", "--src", W("fx"), "--dst", W("q%d" % bits), "--bits", bits, "--match", "ffn.experts",
                           "--emit-scope", W("s%d.json" % bits))
        case("quantize --bits %d --match ffn.experts" % bits, rc == 0, out + err)
        rc, out, err = run("capture", "--model", W("q%d" % bits), "--panel", W("fx", "panel"), "--out", W("c%d" % bits),
                           "--role", "quant", "--lane", "other", "--dataset-id", "test.v4.q%d" % bits, "--dataset-name",
                           "v4", "--windows", 2, "--gemm-order", "pair", "--scope-file", W("s%d.json" % bits))
        case("capture the int%d checkpoint" % bits, rc == 0, out + err)
        rc, out, err = run("compare", "--reference", W("base"), "--candidate", W("c%d" % bits), "--out", W("cmp%d" % bits),
                           "--no-bootstrap")
        if rc == 0:
            kl[bits] = json.load(open(W("cmp%d" % bits, "comparison-receipt.json")))["kl"]["mean"]
    case("RTN KL: 0 < int8 < int4 (%s)" % kl, len(kl) == 2 and 0 < kl[8] < kl[4], kl)

    # the demo row: FP8-block and NVFP4 copies of the routed experts load (the head, stored head.weight, is
    # lm_head to the quantizers: never converted) and capture
    rc, out, err = run("demo", "--out", W("demo"), "--preset", "deepseek-v4-tiny", "--windows", 1)
    case("demo --preset deepseek-v4-tiny: the FP8 / NVFP4 rows capture and compare",
         rc in (0, 2) and os.path.isdir(W("demo", "fp8")) and os.path.isdir(W("demo", "nvfp4")), (out + err)[-600:])

    # a deepseek2 GGUF relabelled deepseek4 (llama.cpp's name): read as deepseek_v4, its metadata refused by name
    import lzma
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors", "gguf-arch", "deepseek-v3-tiny.bf16.gguf.xz")
    data = bytearray(lzma.decompress(open(src, "rb").read()))
    i = data.index(b"deepseek2")
    data[i:i + 9] = b"deepseek4"
    open(W("v4.gguf"), "wb").write(data)
    rc, out, err = run("capture", "--model", W("v4.gguf"), "--panel", W("fx", "panel"), "--out", W("gg"), "--role", "root",
                       "--lane", "other", "--dataset-id", "test.v4.gguf", "--dataset-name", "v4")
    case("a deepseek2 GGUF relabelled deepseek4: bad_gguf_config naming the missing deepseek4 key",
         rc == 3 and "REFUSED [bad_gguf_config]" in out + err and "deepseek4.embedding_length is missing" in out + err
         and not os.path.exists(W("gg")), out + err)

    # transformers' own checkpoints (save_pretrained), per layer: only with torch
    py = os.environ.get("FIDELITY_TORCH_PYTHON", sys.executable)
    has = subprocess.run([py, "-c", "import torch, transformers; transformers.DeepseekV4ForCausalLM"],
                         capture_output=True).returncode == 0
    if not has:
        print("skipped (torch not installed): tests/parity/deepseek_v4_parity.py")
    else:
        p = subprocess.run([py, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity", "deepseek_v4_parity.py"),
                            "layers", BIN, W("parity")], capture_output=True, text=True,
                           env=dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_BF16"))
        case("deepseek_v4_parity.py layers: a save_pretrained checkpoint loads clean and is bit-identical per layer",
             p.returncode == 0, p.stdout[-1500:] + p.stderr[-500:])
finally:
    T.finish()
