#!/usr/bin/env python3
"""deepseek_v3 (Kimi K2's architecture) and deepseek_v32 (DeepSeek V3.2) in
the architecture table (issue 20 items 1, 3).  No torch: the transformers parity is tests/parity/run_parity.sh's
committed golden (deepseek-v3-tiny) and tests/parity/deepseek_parity.py.

usage: test_deepseek.py BINARY

- the deepseek-v3-tiny fixture's tensor list is the one the loader checks
  (inspect-model: every tensor expected, none missing / unexpected); an MTP
  layer (model.layers.N, N = num_hidden_layers) is reported ignored, as
  transformers ignores it, and changes no bit;
- capture_content_digest identical across --threads 1/2, both --schedule
  values and every kernel path this host runs (--kernel), per gemm order;
- RTN int8 of the routed experts gives a smaller mean KL than int4 (both > 0);
- config fields that would change the math and are not implemented are
  refused by name (bad_config, exit 3), and a config whose q_lora_rank does
  not match the tensors is a checkpoint_mismatch naming the tensors;
- deepseek_v32 (deepseek-v32-tiny, the indexer live): its 221 tensors, the
  digest across threads / schedules / kernel paths, its own refusals.
"""
from fdcheck import Checks
import json, os, shutil, struct

T = Checks("deepseek", "fd-ds3-")
case, run, W, manifest, BIN = T.case, T.run, T.path, T.manifest, T.bin


def digest(ds):
    return manifest(ds)["capture"]["capture_content_digest"]


def capture(model, out, *extra):
    return run("capture", "--model", W(model), "--panel", W("fx32" if model.startswith("fx32") else "fx", "panel"), "--out", W(out), "--role", "root", "--lane",
               "other", "--dataset-id", "test.ds3." + out, "--dataset-name", "ds3", "--windows", 2, *extra)


def variant(name, edit, src="fx"):
    """a copy of the fixture with config.json edited"""
    d = W(name)
    shutil.copytree(W(src), d, ignore=shutil.ignore_patterns("panel"))
    cfg = json.load(open(os.path.join(d, "config.json")))
    edit(cfg)
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2, sort_keys=True)
    return d


def add_tensor(path, name, shape):
    """append one BF16 tensor (zeros) to a safetensors file, keeping the layout valid"""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    hdr, body = json.loads(data[8:8 + n]), data[8 + n:]
    size = 2 * shape[0] * shape[1]
    hdr[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [len(body), len(body) + size]}
    hb = json.dumps(hdr, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + body + b"\0" * size)


try:
    rc, out, err = run("fixture", "--preset", "deepseek-v3-tiny", "--seed", 1, "--out", W("fx"))
    case("deepseek-v3-tiny fixture", rc == 0, out + err)
    rc, out, err = run("inspect-model", W("fx"), "--json")
    chk = json.loads(out)["check"] if rc == 0 else {}
    case("the loader expects exactly the tensors the fixture wrote (201, router weight and bias F32)",
         rc == 0 and chk["expected"] == chk["tensors"] == 201 and not chk["missing"] and not chk["unexpected"]
         and not chk["misshaped"] and chk["router_bias_elements"] == 48, out + err)
    rc, out, err = run("architectures", "show", "deepseek_v3")
    case("`architectures show deepseek_v3` names DeepseekV3ForCausalLM", rc == 0 and "DeepseekV3ForCausalLM" in out, out + err)
    rc, out, err = run("fixture", "--preset", "deepseek-v32-tiny", "--seed", 1, "--out", W("fx32"))
    case("deepseek-v32-tiny fixture", rc == 0, out + err)
    rc, out, err = run("inspect-model", W("fx32"), "--json")
    chk = json.loads(out)["check"] if rc == 0 else {}
    case("deepseek_v32: the loader expects exactly the 221 tensors the fixture wrote (the indexer's included)",
         rc == 0 and chk["expected"] == chk["tensors"] == 221 and not chk["missing"] and not chk["unexpected"]
         and not chk["misshaped"], out + err)

    # digest: threads, schedules, kernel paths (each gemm order on its own)
    for fx, order in (("fx", "pair"), ("fx", "tile"), ("fx32", "pair")):
        rc0, o0, e0 = capture(fx, "base-" + fx + order, "--threads", 2, "--gemm-order", order)
        case("capture %s (%s order)" % (fx, order), rc0 == 0, o0 + e0)
        if rc0:
            continue
        base = digest(W("base-" + fx + order))
        runs = [("t1-lo", ["--threads", 1, "--schedule", "layer-outer"]),
                ("t2-lo", ["--threads", 2, "--schedule", "layer-outer"]),
                ("t1-wo", ["--threads", 1, "--schedule", "window-outer"])]
        for k in ("scalar", "avx2", "avx512f", "avx512bf16"):
            runs.append(("k-" + k, ["--threads", 2, "--kernel", k]))
        for tag, extra in runs:
            rc, out, err = capture(fx, fx + tag + "-" + order, "--gemm-order", order, *extra)
            if rc == 3 and tag.startswith("k-") and "REFUSED" in out + err:
                print("skip: %s (this host: %s)" % (tag, (out + err).strip().splitlines()[-1][:120]))
                continue
            case("%s, %s order, %s: same capture_content_digest as 2 threads window-outer" % (fx, order, " ".join(map(str, extra))),
                 rc == 0 and digest(W(fx + tag + "-" + order)) == base, out + err)

    # an MTP layer beyond num_hidden_layers: ignored, no bit changes
    mtp = variant("mtp", lambda c: None)
    add_tensor(os.path.join(mtp, "model.safetensors"), "model.layers.4.eh_proj.weight", [64, 128])
    rc, out, err = run("inspect-model", mtp, "--json")
    chk = json.loads(out)["check"] if rc == 0 else {}
    case("an MTP layer (model.layers.4 of 4) is ignored, not unexpected", rc == 0 and chk.get("ignored") == ["model.layers.4.eh_proj.weight"]
         and not chk.get("unexpected"), out + err)
    rc, out, err = capture("mtp", "mtp-cap", "--gemm-order", "pair")
    case("... and the capture has the same digest", rc == 0 and digest(W("mtp-cap")) == digest(W("base-fxpair")), out + err)

    # RTN int8 < int4 (routed experts)
    kl = {}
    for bits in (8, 4):
        rc, out, err = run("quantize", "--src", W("fx"), "--dst", W("q%d" % bits), "--bits", bits, "--match", "mlp.experts",
                           "--emit-scope", W("s%d.json" % bits))
        case("quantize --bits %d --match mlp.experts" % bits, rc == 0, out + err)
        rc, out, err = run("capture", "--model", W("q%d" % bits), "--panel", W("fx", "panel"), "--out", W("c%d" % bits),
                           "--role", "quant", "--lane", "other", "--dataset-id", "test.ds3.q%d" % bits, "--dataset-name",
                           "ds3", "--windows", 2, "--gemm-order", "pair", "--scope-file", W("s%d.json" % bits))
        case("capture the int%d checkpoint" % bits, rc == 0, out + err)
        rc, out, err = run("compare", "--reference", W("base-fxpair"), "--candidate", W("c%d" % bits), "--out",
                           W("cmp%d" % bits), "--no-bootstrap")
        case("compare int%d against the bf16 root" % bits, rc == 0, out + err)
        if rc == 0:
            kl[bits] = json.load(open(W("cmp%d" % bits, "comparison-receipt.json")))["kl"]["mean"]
    case("RTN KL: 0 < int8 < int4 (%s)" % kl, len(kl) == 2 and 0 < kl[8] < kl[4], kl)

    # refusals by name (inspect-model parses the config first)
    def refused(name, edit, code, *words, src="fx"):
        d = variant(name, edit, src)
        rc, out, err = run("inspect-model", d)
        msg = out + err
        case("refused %s: %s" % (code, name), rc == 3 and "REFUSED [%s]" % code in msg and all(w in msg for w in words), msg)

    def rp(**kv):
        return lambda c: c["rope_parameters"].update(kv)

    refused("topk_method greedy", lambda c: c.update(topk_method="greedy"), "bad_config", "topk_method", "noaux_tc")
    refused("scoring_func softmax", lambda c: c.update(scoring_func="softmax"), "bad_config", "scoring_func")
    refused("moe_layer_freq 2", lambda c: c.update(moe_layer_freq=2), "bad_config", "moe_layer_freq")
    refused("rope_type longrope", rp(rope_type="longrope"), "bad_config", "rope_parameters", "longrope")
    refused("yarn without factor", lambda c: c["rope_parameters"].pop("factor"), "bad_config", "factor")
    refused("partial_rotary_factor 0.5", rp(partial_rotary_factor=0.5), "bad_config", "partial_rotary_factor")
    refused("legacy rope_scaling dynamic", lambda c: c.update(rope_scaling={"type": "dynamic", "factor": 2.0}), "bad_config",
            "rope_scaling", "dynamic")
    refused("num_key_value_heads 2", lambda c: c.update(num_key_value_heads=2), "bad_config", "num_key_value_heads")
    refused("hidden_act gelu", lambda c: c.update(hidden_act="gelu"), "bad_config", "hidden_act")
    refused("n_group 3", lambda c: c.update(n_group=3), "bad_config", "n_group")
    refused("topk_group > n_group", lambda c: c.update(topk_group=5), "bad_config", "topk_group")
    refused("q_lora_rank null on q LoRA tensors", lambda c: c.update(q_lora_rank=None), "checkpoint_mismatch",
            "q_proj.weight", "q_a_proj.weight")
    refused("attention_bias true without biases", lambda c: c.update(attention_bias=True), "checkpoint_mismatch",
            "o_proj.bias")
    refused("deepseek_v32 q_lora_rank null", lambda c: c.update(q_lora_rank=None), "bad_config", "q_lora_rank",
            "deepseek_v32", src="fx32")
    refused("deepseek_v32 layer_types sliding_attention", lambda c: c["layer_types"].__setitem__(2, "sliding_attention"),
            "bad_config", "layer_types", src="fx32")
    refused("deepseek_v32 index_head_dim < qk_rope_head_dim", lambda c: c.update(index_head_dim=4), "bad_config",
            "index_head_dim", src="fx32")
    refused("deepseek_v32 mlp_layer_types entry", lambda c: c["mlp_layer_types"].__setitem__(0, "moe"), "bad_config",
            "mlp_layer_types", src="fx32")
    refused("deepseek_v32 topk_method greedy", lambda c: c.update(topk_method="greedy"), "bad_config", "topk_method",
            src="fx32")
finally:
    T.finish()
