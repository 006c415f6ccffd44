#!/usr/bin/env python3
"""`fidelity inspect-model` end to end (MODEL-GLM.md §1, §2, §6.1).  A stdlib
generator (struct/json only) writes tiny glm_moe_dsa checkpoints of the §6.1
shape (4 layers dense,sparse,sparse,sparse; hidden 64; 8 experts top-2 + 1
shared; q_lora 32, kv_lora 16, qk_nope 8, qk_rope 8, v 16; 4 heads; indexer
4 x 16, topk 8, indexer_types full,shared,full,shared; vocab 260; untied
lm_head; intermediate 128, moe_intermediate 32) with random BF16 bytes, in
both expert spellings, single-file and sharded, and checks:

  - inspect-model accepts them and reports the parameter count computed here
    from the written shapes (277,824 + 24 fp32 router-bias elements, as
    MODEL-GLM §6.1 quotes for the QFS fixture), the layer schedule, and the
    same result whether the indexer schedule is explicit, an F/S pattern or
    derived from index_topk_freq/index_skip_topk_offset;
  - MTP tensors (layer index 4) are ignored;
  - refusals (exit 3): missing / unexpected / mis-shaped tensors, a router
    bias stored as BF16, an indexer tensor on a shared layer
    (checkpoint_mismatch); unknown model_type (unsupported_model_type); bad
    configs (bad_config naming the field); a truncated shard and an index
    naming the wrong shard (bad_tensor_file); usage errors (exit 4).
usage: test_engine_load.py BINARY"""
import json, os, random, shutil, struct, subprocess, sys, tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/fidelity"
H, L, V, I, IM, E, K, NS = 64, 4, 260, 128, 32, 8, 2, 1
RQ, RKV, DN, DR, DV, NH = 32, 16, 8, 8, 16, 4
HI, DI, TOPK = 4, 16, 8
MLP = ["dense", "sparse", "sparse", "sparse"]
IDX = ["full", "shared", "full", "shared"]

CONFIG = {
    "architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa",
    "vocab_size": V, "hidden_size": H, "intermediate_size": I, "moe_intermediate_size": IM,
    "num_hidden_layers": L, "num_attention_heads": NH, "num_key_value_heads": NH,
    "q_lora_rank": RQ, "kv_lora_rank": RKV, "qk_nope_head_dim": DN, "qk_rope_head_dim": DR,
    "v_head_dim": DV, "head_dim": 16, "qk_head_dim": 99,
    "index_n_heads": HI, "index_head_dim": DI, "index_topk": TOPK,
    "n_routed_experts": E, "n_shared_experts": NS, "num_experts_per_tok": K,
    "n_group": 1, "topk_group": 1, "norm_topk_prob": True, "routed_scaling_factor": 2.5,
    "first_k_dense_replace": 1, "mlp_layer_types": MLP, "indexer_types": IDX,
    "hidden_act": "silu", "rms_norm_eps": 1e-5, "max_position_embeddings": 256,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
    "attention_bias": False, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}


def tensors(fused_layers=(), mtp=False):
    """name -> (dtype, shape)."""
    t = {"model.embed_tokens.weight": ("BF16", [V, H]), "model.norm.weight": ("BF16", [H]),
         "lm_head.weight": ("BF16", [V, H])}

    def layer(n, idx_full, sparse, fused):
        p = f"model.layers.{n}."
        t[p + "input_layernorm.weight"] = ("BF16", [H])
        t[p + "post_attention_layernorm.weight"] = ("BF16", [H])
        a = p + "self_attn."
        t[a + "q_a_proj.weight"] = ("BF16", [RQ, H])
        t[a + "q_a_layernorm.weight"] = ("BF16", [RQ])
        t[a + "q_b_proj.weight"] = ("BF16", [NH * (DN + DR), RQ])
        t[a + "kv_a_proj_with_mqa.weight"] = ("BF16", [RKV + DR, H])
        t[a + "kv_a_layernorm.weight"] = ("BF16", [RKV])
        t[a + "kv_b_proj.weight"] = ("BF16", [NH * (DN + DV), RKV])
        t[a + "o_proj.weight"] = ("BF16", [H, NH * DV])
        if idx_full:
            t[a + "indexer.wq_b.weight"] = ("BF16", [HI * DI, RQ])
            t[a + "indexer.wk.weight"] = ("BF16", [DI, H])
            t[a + "indexer.k_norm.weight"] = ("BF16", [DI])
            t[a + "indexer.k_norm.bias"] = ("BF16", [DI])
            t[a + "indexer.weights_proj.weight"] = ("BF16", [HI, H])
        m = p + "mlp."
        if not sparse:
            t[m + "gate_proj.weight"] = ("BF16", [I, H])
            t[m + "up_proj.weight"] = ("BF16", [I, H])
            t[m + "down_proj.weight"] = ("BF16", [H, I])
            return
        t[m + "gate.weight"] = ("BF16", [E, H])
        t[m + "gate.e_score_correction_bias"] = ("F32", [E])
        if fused:
            t[m + "experts.gate_up_proj"] = ("BF16", [E, 2 * IM, H])
            t[m + "experts.down_proj"] = ("BF16", [E, H, IM])
        else:
            for e in range(E):
                t[m + f"experts.{e}.gate_proj.weight"] = ("BF16", [IM, H])
                t[m + f"experts.{e}.up_proj.weight"] = ("BF16", [IM, H])
                t[m + f"experts.{e}.down_proj.weight"] = ("BF16", [H, IM])
        t[m + "shared_experts.gate_proj.weight"] = ("BF16", [IM * NS, H])
        t[m + "shared_experts.up_proj.weight"] = ("BF16", [IM * NS, H])
        t[m + "shared_experts.down_proj.weight"] = ("BF16", [H, IM * NS])

    for n in range(L):
        layer(n, IDX[n] == "full", MLP[n] == "sparse", n in fused_layers)
    if mtp:  # an MTP depth at index L: its own extra tensors plus a full MoE layer
        p = f"model.layers.{L}."
        t[p + "enorm.weight"] = ("BF16", [H])
        t[p + "hnorm.weight"] = ("BF16", [H])
        t[p + "eh_proj.weight"] = ("BF16", [H, 2 * H])
        t[p + "shared_head.norm.weight"] = ("BF16", [H])
        layer(L, True, True, False)
    return t


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def param_count(t):
    params = sum(numel(s) for k, (d, s) in t.items()
                 if not k.startswith(f"model.layers.{L}.") and not k.endswith("e_score_correction_bias"))
    bias = sum(numel(s) for k, (d, s) in t.items()
               if not k.startswith(f"model.layers.{L}.") and k.endswith("e_score_correction_bias"))
    return params, bias


SIZES = {"BF16": 2, "F32": 4}


def write_st(path, items, rng):
    hdr, off, blobs = {}, 0, []
    for name in sorted(items):
        dt, shape = items[name]
        n = numel(shape) * SIZES[dt]
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        blobs.append(bytes(rng.getrandbits(8) for _ in range(n)) if n < 4096 else rng.randbytes(n))
        off += n
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def write_model(d, t, config=None, shards=1, seed=1):
    rng = random.Random(seed)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(CONFIG if config is None else config, f, indent=2)
    if shards == 1:
        write_st(os.path.join(d, "model.safetensors"), t, rng)
        return
    names = sorted(t)
    parts = [names[i::shards] for i in range(shards)]
    wm = {}
    for i, part in enumerate(parts):
        fn = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        write_st(os.path.join(d, fn), {k: t[k] for k in part}, rng)
        for k in part:
            wm[k] = fn
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f, indent=2)


passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def run(*args):
    p = subprocess.run([BIN, "inspect-model", *args], capture_output=True, text=True)
    if "AddressSanitizer" in p.stderr or "runtime error" in p.stderr or "LeakSanitizer" in p.stderr:
        check("sanitizer-silent " + " ".join(args), False, p.stderr[-2000:])
    return p


def expect_ok(name, d, t):
    p = run(d, "--json")
    check(name + " exit 0", p.returncode == 0, p.stdout[-1500:] + p.stderr[-500:])
    if p.returncode:
        return None
    doc = json.loads(p.stdout)
    want_p, want_b = param_count(t)
    c = doc["check"]
    check(name + " parameters", c["parameters"] == want_p, f'{c["parameters"]} != {want_p}')
    check(name + " router bias", c["router_bias_elements"] == want_b, f'{c["router_bias_elements"]} != {want_b}')
    want_bytes = sum(numel(s) * SIZES[dt] for k, (dt, s) in t.items() if not k.startswith(f"model.layers.{L}."))
    check(name + " bytes", c["bytes"] == want_bytes, f'{c["bytes"]} != {want_bytes}')
    check(name + " schedule", doc["config"]["mlp_layer_types"] == MLP and doc["config"]["indexer_types"] == IDX,
          str(doc["config"]))
    check(name + " derived dims", doc["config"]["qk_head_dim"] == DN + DR and doc["config"]["head_dim"] == DR)
    check(name + " no findings", not c["missing"] and not c["unexpected"] and not c["misshaped"], str(c))
    txt = run(d)
    check(name + " text exit 0", txt.returncode == 0 and txt.stdout.rstrip().endswith("OK"), txt.stdout[-500:])
    return doc


def expect_refused(name, d, code, needle=None):
    p = run(d)
    first = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    ok = p.returncode == 3 and first.startswith(f"REFUSED [{code}]:")
    if needle:
        ok = ok and needle in first
    check(name, ok, f"rc={p.returncode} out={p.stdout[-600:]!r} err={p.stderr[-300:]!r}")
    j = run(d, "--json")
    try:
        doc = json.loads(j.stdout)
        jok = j.returncode == 3 and doc["refused"]["code"] == code and not doc["ok"]
    except Exception:
        jok = False
    check(name + " --json", jok, j.stdout[-400:])


def main():
    tmp = tempfile.mkdtemp(prefix="engine-load-")
    try:
        base = tensors()
        fused = tensors(fused_layers=(1, 2, 3))
        p, b = param_count(base)
        print(f"tiny fixture: {p} parameters + {b} fp32 router-bias elements = {p + b}")
        check("param count matches MODEL-GLM 6.1 (277,824 + 24)", (p, b) == (277824, 24), f"{p} + {b}")
        check("fused spelling same count", param_count(fused) == (p, b))

        cases = {
            "per-expert single": (base, 1), "fused single": (fused, 1),
            "per-expert sharded": (base, 3), "fused sharded": (fused, 2),
            "mixed spelling": (tensors(fused_layers=(2,)), 1),
        }
        for i, (name, (t, shards)) in enumerate(cases.items()):
            d = os.path.join(tmp, f"ok{i}")
            write_model(d, t, shards=shards, seed=i)
            doc = expect_ok(name, d, t)
            if doc and name == "fused single":
                check("fused spelling reported", doc["config"]["expert_spelling"] == [None, "fused", "fused", "fused"],
                      str(doc["config"]["expert_spelling"]))

        # MTP depth at layer index L is ignored by name
        d = os.path.join(tmp, "mtp")
        t = tensors(mtp=True)
        write_model(d, t, shards=2)
        doc = expect_ok("mtp ignored", d, t)
        if doc:
            check("mtp tensors listed as ignored", len(doc["check"]["ignored"]) == len(t) - len(base),
                  str(len(doc["check"]["ignored"])))

        # schedules from a pattern / freq+offset / first_k_dense_replace give the same model
        for name, edit in [("pattern", {"index_topk_pattern": "FSFS"}),
                           ("freq/offset", {"index_topk_freq": 2, "index_skip_topk_offset": 1})]:
            cfg = {k: v for k, v in CONFIG.items() if k not in ("indexer_types", "mlp_layer_types")}
            cfg.update(edit)
            d = os.path.join(tmp, "sched-" + name.replace("/", "-"))
            write_model(d, base, config=cfg)
            expect_ok("schedule " + name, d, base)
        # rope folding and aliases: old-style top-level rope_theta, num_local_experts
        cfg = {k: v for k, v in CONFIG.items() if k not in ("rope_parameters", "n_routed_experts")}
        cfg.update({"rope_theta": 8e6, "num_local_experts": E})
        d = os.path.join(tmp, "rope-fold")
        write_model(d, base, config=cfg)
        doc = expect_ok("rope folding + alias", d, base)
        if doc:
            check("rope_theta folded", doc["config"]["rope_theta"] == 8e6 and doc["config"]["rope_type"] == "default")

        # checkpoint mismatches
        def mismatch(name, t, needle, shards=1):
            dd = os.path.join(tmp, "mm-" + name.replace(" ", "-"))
            write_model(dd, t, shards=shards)
            expect_refused(name, dd, "checkpoint_mismatch", needle)

        t = dict(base); del t["model.layers.1.self_attn.q_a_proj.weight"]
        mismatch("missing tensor", t, "missing (model.layers.1.self_attn.q_a_proj.weight)")
        t = dict(base); del t["model.layers.3.mlp.experts.5.up_proj.weight"]
        mismatch("missing expert", t, "model.layers.3.mlp.experts.5.up_proj.weight", shards=2)
        t = dict(base); t["model.layers.2.mlp.extra.weight"] = ("BF16", [4, 4])
        mismatch("unexpected tensor", t, "unexpected (model.layers.2.mlp.extra.weight)")
        t = dict(base); t["model.layers.2.self_attn.q_b_proj.weight"] = ("BF16", [64, 33])
        mismatch("mis-shaped tensor", t, "mis-shaped (model.layers.2.self_attn.q_b_proj.weight")
        t = dict(base); t["model.layers.1.mlp.experts.gate_up_proj"] = ("BF16", [E, IM, H])
        mismatch("mis-shaped fused", t, "model.layers.1.mlp.experts.gate_up_proj")
        t = dict(base); t["model.layers.1.mlp.gate.e_score_correction_bias"] = ("BF16", [E])
        mismatch("bf16 router bias", t, "e_score_correction_bias: BF16")
        t = dict(base); t["model.layers.1.self_attn.indexer.wk.weight"] = ("BF16", [DI, H])
        mismatch("indexer on shared layer", t, "unexpected (model.layers.1.self_attn.indexer.wk.weight)")
        t = dict(base); t["model.layers.0.mlp.experts.0.gate_proj.weight"] = ("BF16", [IM, H])
        mismatch("experts on dense layer", t, "unexpected")

        # config refusals
        def badcfg(name, code, needle, **edits):
            cfg = dict(CONFIG)
            for k, v in edits.items():
                if v is ...:
                    del cfg[k]
                else:
                    cfg[k] = v
            dd = os.path.join(tmp, "cfg-" + name.replace(" ", "-"))
            write_model(dd, base, config=cfg)
            expect_refused(name, dd, code, needle)

        badcfg("unknown model_type", "unsupported_model_type", "mistral", model_type="mistral")
        badcfg("missing model_type", "bad_config", "model_type", model_type=...)
        badcfg("q_lora_rank null", "bad_config", "q_lora_rank", q_lora_rank=None)
        badcfg("kv heads differ", "bad_config", "num_key_value_heads", num_key_value_heads=2)
        badcfg("n_group does not divide", "bad_config", "n_group", n_group=3)
        badcfg("first indexer shared", "bad_config", "indexer_types", indexer_types=["shared", "full", "full", "shared"])
        badcfg("indexer_types length", "bad_config", "indexer_types", indexer_types=["full"])
        badcfg("mlp_layer_types value", "bad_config", "mlp_layer_types", mlp_layer_types=["dense", "moe", "sparse", "sparse"])
        badcfg("hidden_size string", "bad_config", "hidden_size", hidden_size="64")
        badcfg("top-k too large", "bad_config", "num_experts_per_tok", num_experts_per_tok=9)

        # file-level refusals
        d = os.path.join(tmp, "trunc")
        write_model(d, base, shards=3)
        shard = os.path.join(d, "model-00002-of-00003.safetensors")
        with open(shard, "r+b") as f:
            f.truncate(os.path.getsize(shard) - 100)
        expect_refused("truncated shard", d, "bad_tensor_file", "model-00002-of-00003.safetensors")
        d = os.path.join(tmp, "trunc1")
        write_model(d, base)
        with open(os.path.join(d, "model.safetensors"), "r+b") as f:
            f.truncate(20)
        expect_refused("truncated single file", d, "bad_tensor_file")
        d = os.path.join(tmp, "wrongindex")
        write_model(d, base, shards=2)
        ip = os.path.join(d, "model.safetensors.index.json")
        idx = json.load(open(ip))
        idx["weight_map"]["model.norm.weight"] = "model-00002-of-00002.safetensors" \
            if idx["weight_map"]["model.norm.weight"].startswith("model-00001") else "model-00001-of-00002.safetensors"
        json.dump(idx, open(ip, "w"))
        expect_refused("index names the wrong shard", d, "bad_tensor_file", "model.norm.weight")
        d = os.path.join(tmp, "missingshard")
        write_model(d, base, shards=2)
        os.unlink(os.path.join(d, "model-00002-of-00002.safetensors"))
        expect_refused("missing shard", d, "missing_file")
        d = os.path.join(tmp, "noweights")
        os.makedirs(d)
        json.dump(CONFIG, open(os.path.join(d, "config.json"), "w"))
        expect_refused("no weights", d, "missing_file")

        # usage
        for args in ([], ["a", "b"], ["--bogus", "x"]):
            p = run(*args)
            check(f"usage {args}", p.returncode == 4, str(p.returncode))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"engine-load: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
