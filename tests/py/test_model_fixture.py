#!/usr/bin/env python3
"""`fidelity fixture` end to end (capture/fixture.h; MODEL-GLM.md §1, §2, §6).
For each preset (tiny, flash-0.1b, small) generates a checkpoint and checks:

  - `fidelity inspect-model` accepts it (tiny: 277,824 parameters + 24 fp32
    router-bias elements, MODEL-GLM §6.1) and the parameter count equals the
    one computed here from the preset's dims;
  - config.json field values (model_type, architectures, dtype, schedules,
    rope_parameters, routing fields, token ids);
  - the safetensors file (a stdlib parser): every tensor BF16 except the F32
    router biases, norms exactly 1.0, k_norm bias and router bias 0, Linear /
    embedding weights roughly normal(0, 0.02);
  - the tokenizer.json layout (4 specials then the 256 byte tokens, no merges);
  - the panel geometry (4 x 64 tiny, 8 x 2,048 flash-0.1b, 4 x 512 small)
    and `fidelity panel check DIR/panel --vocab V` accepts it;
  - determinism: the same seed gives identical bytes for every file, another
    seed different weights and panel;
  - refusals: an existing --out without --force (exit 3, nothing touched),
    --force replaces; unknown preset / missing options / bad seed (exit 4);
  - with the `safetensors` package importable, safetensors.numpy loads the
    file (skipped with a notice otherwise).
usage: test_model_fixture.py BINARY"""
import hashlib, json, math, os, shutil, struct, subprocess, sys, tempfile

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/fidelity")
WORK = tempfile.mkdtemp(prefix="fd-model-fixture-")
results = []
SAN_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")

PRESETS = {
    "tiny": dict(V=260, H=64, I=128, Im=32, L=4, nh=4, rq=32, rkv=16, dn=8, dr=8, dv=16, Hi=4, Di=16, topk=8,
                 E=8, k=2, ns=1, mlp="DSSS", idx="FSFS", panel=(4, 64), theta=10000.0, max_pos=256),
    "flash-0.1b": dict(V=154880, H=256, I=768, Im=256, L=5, nh=4, rq=128, rkv=64, dn=32, dr=16, dv=32, Hi=4, Di=32,
                       topk=256, E=8, k=4, ns=1, mlp="DDDSS", idx="FSFSF", panel=(8, 2048), theta=1e6, max_pos=4096),
    "small": dict(V=260, H=1024, I=2816, Im=128, L=8, nh=8, rq=256, rkv=128, dn=64, dr=32, dv=64, Hi=8, Di=64,
                  topk=512, E=32, k=4, ns=1, mlp="DSSSSSSS", idx="FSSSFSSS", panel=(4, 512), theta=1e6, max_pos=4096),
}


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-72s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[:2000]))
    return ok


def note(msg):
    print("     note: " + msg)


def run(*args):
    p = subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True)
    if any(m in p.stderr for m in SAN_MARKERS):
        case("sanitizer clean: " + " ".join(map(str, args[:3])), False, p.stderr[-2000:])
    return p


def shapes(c):
    """name -> (dtype, shape), the set transformers' save_pretrained writes."""
    t = {"model.embed_tokens.weight": ("BF16", [c["V"], c["H"]]), "model.norm.weight": ("BF16", [c["H"]]),
         "lm_head.weight": ("BF16", [c["V"], c["H"]])}
    H = c["H"]
    for n in range(c["L"]):
        p = "model.layers.%d." % n
        t[p + "input_layernorm.weight"] = ("BF16", [H])
        t[p + "post_attention_layernorm.weight"] = ("BF16", [H])
        a = p + "self_attn."
        t[a + "q_a_proj.weight"] = ("BF16", [c["rq"], H])
        t[a + "q_a_layernorm.weight"] = ("BF16", [c["rq"]])
        t[a + "q_b_proj.weight"] = ("BF16", [c["nh"] * (c["dn"] + c["dr"]), c["rq"]])
        t[a + "kv_a_proj_with_mqa.weight"] = ("BF16", [c["rkv"] + c["dr"], H])
        t[a + "kv_a_layernorm.weight"] = ("BF16", [c["rkv"]])
        t[a + "kv_b_proj.weight"] = ("BF16", [c["nh"] * (c["dn"] + c["dv"]), c["rkv"]])
        t[a + "o_proj.weight"] = ("BF16", [H, c["nh"] * c["dv"]])
        if c["idx"][n] == "F":
            t[a + "indexer.wq_b.weight"] = ("BF16", [c["Hi"] * c["Di"], c["rq"]])
            t[a + "indexer.wk.weight"] = ("BF16", [c["Di"], H])
            t[a + "indexer.k_norm.weight"] = ("BF16", [c["Di"]])
            t[a + "indexer.k_norm.bias"] = ("BF16", [c["Di"]])
            t[a + "indexer.weights_proj.weight"] = ("BF16", [c["Hi"], H])
        m = p + "mlp."
        if c["mlp"][n] == "D":
            t[m + "gate_proj.weight"] = ("BF16", [c["I"], H])
            t[m + "up_proj.weight"] = ("BF16", [c["I"], H])
            t[m + "down_proj.weight"] = ("BF16", [H, c["I"]])
            continue
        t[m + "gate.weight"] = ("BF16", [c["E"], H])
        t[m + "gate.e_score_correction_bias"] = ("F32", [c["E"]])
        for e in range(c["E"]):
            t[m + "experts.%d.gate_proj.weight" % e] = ("BF16", [c["Im"], H])
            t[m + "experts.%d.up_proj.weight" % e] = ("BF16", [c["Im"], H])
            t[m + "experts.%d.down_proj.weight" % e] = ("BF16", [H, c["Im"]])
        Is = c["Im"] * c["ns"]
        t[m + "shared_experts.gate_proj.weight"] = ("BF16", [Is, H])
        t[m + "shared_experts.up_proj.weight"] = ("BF16", [Is, H])
        t[m + "shared_experts.down_proj.weight"] = ("BF16", [H, Is])
    return t


def numel(s):
    n = 1
    for d in s:
        n *= d
    return n


def read_st(path):
    with open(path, "rb") as f:
        hl = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(hl))
        return hl, hdr


def bf16_values(path, hl, info, limit=None):
    a, b = info["data_offsets"]
    n = (b - a) // 2 if limit is None else min((b - a) // 2, limit)
    with open(path, "rb") as f:
        f.seek(8 + hl + a)
        raw = f.read(2 * n)
    return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in struct.unpack("<%dH" % n, raw)]


def file_hashes(d):
    out = {}
    for root, _, files in os.walk(d):
        for fn in files:
            p = os.path.join(root, fn)
            with open(p, "rb") as f:
                out[os.path.relpath(p, d)] = hashlib.sha256(f.read()).hexdigest()
    return out


def check_preset(name, c):
    d = os.path.join(WORK, name + "-s7")
    p = run("fixture", "--preset", name, "--seed", 7, "--out", d)
    if not case("%s: fixture exits 0" % name, p.returncode == 0, p.stderr):
        return
    exp = shapes(c)
    params = sum(numel(s) for n, (dt, s) in exp.items() if dt == "BF16")
    bias = sum(numel(s) for n, (dt, s) in exp.items() if dt == "F32")
    if name == "tiny":
        case("tiny: computed count is MODEL-GLM §6.1's 277,824 + 24", (params, bias) == (277824, 24), (params, bias))
    note("%s: %d tensors, %d parameters + %d fp32 router-bias elements" % (name, len(exp), params, bias))
    case("%s: fixture prints the count" % name,
         "parameters: %d (+ %d fp32 router-bias elements = %d)" % (params, bias, params + bias) in p.stdout, p.stdout)

    # inspect-model
    q = run("inspect-model", d, "--json")
    ok = case("%s: inspect-model accepts it" % name, q.returncode == 0, q.stderr + q.stdout[-500:])
    if ok:
        j = json.loads(q.stdout)
        s = json.dumps(j)
        case("%s: inspect-model counts %d + %d" % (name, params, bias),
             str(params) in s and str(bias) in s and "missing" in s, s[-600:])
        t = run("inspect-model", d)
        case("%s: inspect-model text parameters line" % name,
             "parameters: %d (+ %d fp32 router-bias elements = %d)" % (params, bias, params + bias) in t.stdout,
             t.stdout[-600:])

    # config.json
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    want = {
        "model_type": "glm_moe_dsa", "architectures": ["GlmMoeDsaForCausalLM"], "dtype": "bfloat16",
        "vocab_size": c["V"], "hidden_size": c["H"], "intermediate_size": c["I"], "moe_intermediate_size": c["Im"],
        "num_hidden_layers": c["L"], "num_attention_heads": c["nh"], "num_key_value_heads": c["nh"],
        "q_lora_rank": c["rq"], "kv_lora_rank": c["rkv"], "qk_nope_head_dim": c["dn"], "qk_rope_head_dim": c["dr"],
        "v_head_dim": c["dv"], "head_dim": c["dr"], "qk_head_dim": c["dn"] + c["dr"],
        "index_n_heads": c["Hi"], "index_head_dim": c["Di"], "index_topk": c["topk"],
        "n_routed_experts": c["E"], "num_experts_per_tok": c["k"], "n_shared_experts": c["ns"],
        "n_group": 1, "topk_group": 1, "norm_topk_prob": True, "routed_scaling_factor": 2.5,
        "first_k_dense_replace": c["mlp"].index("S"),
        "mlp_layer_types": ["sparse" if x == "S" else "dense" for x in c["mlp"]],
        "indexer_types": ["full" if x == "F" else "shared" for x in c["idx"]],
        "rope_parameters": {"rope_type": "default", "rope_theta": c["theta"]},
        "rms_norm_eps": 1e-5, "initializer_range": 0.02, "tie_word_embeddings": False,
        "attention_bias": False, "hidden_act": "silu", "max_position_embeddings": c["max_pos"],
        "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
    }
    bad = {k: (cfg.get(k), v) for k, v in want.items() if cfg.get(k) != v or type(cfg.get(k)) is not type(v)}
    case("%s: config.json fields" % name, not bad, bad)
    case("%s: config.json keys sorted" % name, list(cfg) == sorted(cfg), list(cfg))
    with open(os.path.join(d, "generation_config.json")) as f:
        g = json.load(f)
    case("%s: generation_config ids" % name,
         (g.get("bos_token_id"), g.get("eos_token_id"), g.get("pad_token_id")) == (1, 2, 0), g)

    # safetensors
    sp = os.path.join(d, "model.safetensors")
    hl, hdr = read_st(sp)
    got = {k: (v["dtype"], v["shape"]) for k, v in hdr.items() if k != "__metadata__"}
    case("%s: tensor names, dtypes, shapes" % name, got == {k: (dt, s) for k, (dt, s) in exp.items()},
         sorted(set(got) ^ set(exp))[:10])
    case("%s: router biases F32, the rest BF16" % name,
         all((v[0] == "F32") == k.endswith("e_score_correction_bias") for k, v in got.items()))
    case("%s: file size = header + data" % name,
         os.path.getsize(sp) == 8 + hl + sum(numel(s) * (4 if dt == "F32" else 2) for dt, s in exp.values()))
    ones = [k for k in exp if k.endswith("norm.weight") or k.endswith("layernorm.weight")]
    case("%s: norms are 1.0" % name, all(set(bf16_values(sp, hl, hdr[k])) == {1.0} for k in ones[:40]))
    zeros = [k for k in exp if k.endswith("k_norm.bias")]
    case("%s: k_norm biases are 0" % name, all(set(bf16_values(sp, hl, hdr[k])) == {0.0} for k in zeros))
    with open(sp, "rb") as f:
        ok = True
        for k in exp:
            if k.endswith("e_score_correction_bias"):
                a, b = hdr[k]["data_offsets"]
                f.seek(8 + hl + a)
                ok = ok and f.read(b - a) == bytes(b - a)
        case("%s: router biases are 0.0" % name, ok)
    for k in ("model.embed_tokens.weight", "lm_head.weight", "model.layers.1.self_attn.q_a_proj.weight"):
        v = bf16_values(sp, hl, hdr[k], limit=20000)
        m = sum(v) / len(v)
        sd = math.sqrt(sum((x - m) ** 2 for x in v) / len(v))
        case("%s: %s ~ normal(0, 0.02) (mean %.5f sd %.5f)" % (name, k, m, sd),
             abs(m) < 0.002 and 0.018 < sd < 0.022 and len(set(v)) > 100)

    # tokenizer
    with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    b2u = dict(zip(bs, map(chr, cs)))
    want_v = {"<pad>": 0, "<bos>": 1, "<eos>": 2, "<unk>": 3}
    want_v.update({b2u[b]: 4 + b for b in range(256)})
    case("%s: tokenizer vocab = 4 specials + 256 bytes, no merges" % name,
         vocab == want_v and tok["model"]["merges"] == [] and tok["model"]["type"] == "BPE"
         and [a["content"] for a in tok["added_tokens"]] == ["<pad>", "<bos>", "<eos>", "<unk>"]
         and all(a["special"] for a in tok["added_tokens"]))

    # panel
    pd = os.path.join(d, "panel")
    with open(os.path.join(pd, "panel.json")) as f:
        pj = json.load(f)
    W, N = c["panel"]
    case("%s: panel geometry %d x %d" % (name, W, N),
         pj.get("contexts") == W and pj.get("context_length") == N and len(pj.get("windows", [])) == W, pj.get("contexts"))
    toks = []
    for w in pj["windows"]:
        with open(os.path.join(pd, "arrays", w["window_id"] + ".tokens.npy"), "rb") as f:
            raw = f.read()
        hlen = struct.unpack("<H", raw[8:10])[0]
        toks.append(struct.unpack("<%dq" % N, raw[10 + hlen:]))
    case("%s: panel windows start with <bos>, then byte tokens" % name,
         all(t[0] == 1 and all(4 <= x < 260 for x in t[1:]) for t in toks))
    case("%s: panel id" % name, pj.get("panel_id") == "fixture-%s-seed7" % name, pj.get("panel_id"))
    r = run("panel", "check", pd, "--vocab", c["V"])
    case("%s: panel check accepts it" % name, r.returncode == 0, r.stderr + r.stdout[-400:])
    case("%s: no leftovers" % name, not [x for x in os.listdir(WORK) if ".partial-" in x or ".old-" in x]
         and "panel-tokens.json" not in os.listdir(d))

    # determinism
    d2 = os.path.join(WORK, name + "-s7b")
    p2 = run("fixture", "--preset", name, "--seed", 7, "--out", d2)
    h1, h2 = file_hashes(d), file_hashes(d2)
    case("%s: same seed, identical bytes (%d files)" % (name, len(h1)), p2.returncode == 0 and h1 == h2,
         [k for k in h1 if h1.get(k) != h2.get(k)])
    shutil.rmtree(d2, ignore_errors=True)
    if name == "tiny":
        d3 = os.path.join(WORK, name + "-s8")
        p3 = run("fixture", "--preset", name, "--seed", 8, "--out", d3)
        h3 = file_hashes(d3)
        case("tiny: another seed, different weights and panel",
             p3.returncode == 0 and h3["model.safetensors"] != h1["model.safetensors"]
             and h3["panel/panel.json"] != h1["panel/panel.json"] and h3["config.json"] == h1["config.json"])
        # the library itself reads every header and shape (numpy has no bfloat16,
        # so the metadata is checked with safe_open rather than loading arrays)
        try:
            from safetensors import safe_open
        except ImportError:
            note("safetensors not importable: library load skipped")
        else:
            try:
                with safe_open(sp, framework="numpy") as f:
                    keys = set(f.keys())
                    got_shapes = {k: list(f.get_slice(k).get_shape()) for k in keys}
                case("tiny: the safetensors library opens it (names and shapes)", keys == set(exp)
                     and all(got_shapes[k] == exp[k][1] for k in exp))
            except Exception as ex:  # noqa: BLE001
                case("tiny: the safetensors library opens it (names and shapes)", False, ex)
    shutil.rmtree(d, ignore_errors=True) if name != "tiny" else None


def main():
    for name, c in PRESETS.items():
        check_preset(name, c)
    d = os.path.join(WORK, "tiny-s7")
    before = file_hashes(d)
    p = run("fixture", "--preset", "tiny", "--seed", 9, "--out", d)
    case("existing --out refused (exit 3, destination_exists)", p.returncode == 3 and "REFUSED [destination_exists]" in p.stdout,
         p.stdout + p.stderr)
    case("existing --out untouched", file_hashes(d) == before)
    p = run("fixture", "--preset", "tiny", "--seed", 9, "--out", d, "--force")
    after = file_hashes(d)
    case("--force replaces it", p.returncode == 0 and after["model.safetensors"] != before["model.safetensors"]
         and not [x for x in os.listdir(WORK) if ".old-" in x or ".partial-" in x], p.stderr)
    for args, why in (([], "no options"), (["--preset", "huge", "--seed", 1, "--out", d + "x"], "unknown preset"),
                      (["--preset", "tiny", "--out", d + "x"], "no seed"),
                      (["--preset", "tiny", "--seed", "-1", "--out", d + "x"], "negative seed"),
                      (["--preset", "tiny", "--seed", "1x", "--out", d + "x"], "bad seed"),
                      (["--preset", "tiny", "--seed", 1], "no out"),
                      (["--preset", "tiny", "--seed", 1, "--out", d + "x", "--bogus"], "unknown option")):
        p = run("fixture", *args)
        case("usage error: %s (exit 4)" % why, p.returncode == 4 and not os.path.exists(d + "x"), p.returncode)
    shutil.rmtree(WORK, ignore_errors=True)
    npass = sum(results)
    nfail = len(results) - npass
    print("model-fixture: %d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
