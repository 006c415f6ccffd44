#!/usr/bin/env python3
"""kimi_k25 parity with transformers (test oracle only: needs torch +
transformers; run with /tmp/venv-engine/bin/python, torch 2.15 / transformers
5.25; never needed to build or run fidelity).

usage:
  kimi_parity.py golden MODEL_DIR PANEL_DIR OUT_DIR
      Kimi_K25ForConditionalGeneration's final hidden states (lm_head input,
      bf16, eager, text only) of every panel window of MODEL_DIR (a `fidelity
      fixture --preset kimi-k25-tiny` checkpoint; kimi-linear-tiny: KimiLinearForCausalLM)
      as golden.safetensors + golden.json, the format run_parity.sh reads.
  kimi_parity.py variants BINARY WORKDIR
      for each variant below: Kimi_K25ForConditionalGeneration random-init
      (torch.manual_seed(1234)) with a deepseek_v3 text_config and a 1-layer
      vision tower, written by transformers' own save_pretrained (layers
      spelled language_model.model.blocks.N); BINARY inspects it (no missing /
      unexpected tensor, the vision tower ignored), captures the first panel
      window with FIDELITY_FORWARD_DUMP; each decoder layer's output, the
      final norm output and the routed-expert sets (transformers' router on
      our post-attention-norm rows) are compared with transformers'.  One JSON
      line per variant; exits 1 unless every variant is bit-identical at the
      final norm.
  kimi_parity.py linear BINARY WORKDIR
      the same for KimiLinearForCausalLM variants (KDA + MLA without RoPE):
      per layer bit-identical fraction and max |diff|, each token mixer
      teacher-forced on our input_layernorm rows, routing agreement
      (measured 1.0 everywhere on the AMD Zen 4 host with torch 2.15: the
      KDA's torch.exp / sqrt / log are MKL's EX kernels, kernels/mkl_vml.h).
Pin the product order as the goldens: ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16
(fidelity's `--gemm-order pair`)."""
import json, os, shutil, struct, subprocess, sys
import numpy as np
import torch
import transformers
from transformers import Kimi_K25Config, Kimi_K25ForConditionalGeneration, KimiLinearConfig, KimiLinearForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deepseek_parity import BASE, YARN, dumped, load_panel, same  # noqa: E402

torch.set_num_threads(1)

VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, patch_size=14,
              pos_emb_height=4, pos_emb_width=4, pos_emb_time=2)
K2 = dict(rope_parameters=dict(YARN, factor=32.0, beta_fast=1, original_max_position_embeddings=8, rope_theta=50000.0),
          n_group=1, topk_group=1, routed_scaling_factor=2.827)
VARIANTS = {
    # Kimi K2.5's own text model: K2's yarn, one group, an untied head (top-level tie false)
    "k25-untied": (dict(K2), False),
    # the top-level tie_word_embeddings default (true): the head is the embedding
    "k25-tied-default-rope": (dict(rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), None),
}


def load(d):
    mt = json.load(open(os.path.join(d, "config.json")))["model_type"]
    cls = KimiLinearForCausalLM if mt == "kimi_linear" else Kimi_K25ForConditionalGeneration
    model, info = cls.from_pretrained(d, dtype=torch.bfloat16, attn_implementation="eager", output_loading_info=True)
    model.eval()
    return model, info


def golden(model_dir, panel_dir, out_dir):
    model, info = load(model_dir)
    report = {k: sorted(map(str, v)) if isinstance(v, (list, set)) else str(v) for k, v in info.items()}
    captured = []
    model.get_output_embeddings().register_forward_pre_hook(
        lambda mod, inp: captured.append(inp[0].detach().squeeze(0).to(torch.float32).clone()))
    tensors, rows = {}, {}
    with torch.inference_mode():
        for wid, ids in load_panel(panel_dir):
            captured.clear()
            model(input_ids=torch.from_numpy(ids)[None, :], attention_mask=torch.ones(1, len(ids), dtype=torch.int64),
                  use_cache=False)
            h = captured[0][:-1]
            tensors[wid] = (list(h.shape), h.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes())
            rows[wid] = int(h.shape[0])
    os.makedirs(out_dir, exist_ok=True)
    header, off, blobs = {}, 0, []
    for name in sorted(tensors):
        shape, b = tensors[name]
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    hb = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    with open(os.path.join(out_dir, "golden.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))
    json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "loading_info": report,
               "rows": rows, "attn_implementation": model.config._attn_implementation,
               "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA"),
               "host_amx_bf16": " amx_bf16" in open("/proc/cpuinfo").read(), "selections_first_window": None},
              open(os.path.join(out_dir, "golden.json"), "w"), indent=2, sort_keys=True)
    print("wrote", out_dir, "windows", len(rows), "loading", report)
    return 0 if not any(report.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")) else 1


def variant(binary, work, name, over, tie):
    tc = dict(BASE, **over)
    tc["model_type"] = "deepseek_v3"
    kw = dict(text_config=tc, vision_config=VISION, projection_hidden_size=32)
    if tie is not None:
        kw["tie_word_embeddings"] = tie
    cfg = Kimi_K25Config(**kw)
    torch.manual_seed(1234)
    model = Kimi_K25ForConditionalGeneration._from_config(cfg, dtype=torch.bfloat16)
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d)
    fx = os.path.join(work, "fixture")
    if not os.path.isdir(fx):
        subprocess.run([binary, "fixture", "--preset", "kimi-k25-tiny", "--seed", "1", "--out", fx], check=True,
                       stdout=subprocess.DEVNULL)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(fx, f), d)
    model, info = load(d)
    clean = not any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    from safetensors import safe_open
    with safe_open(os.path.join(d, "model.safetensors"), "pt") as f:
        names = list(f.keys())
    spelling = "blocks" if any(".model.blocks." in n for n in names) else "layers"
    insp = subprocess.run([binary, "inspect-model", d, "--json"], capture_output=True, text=True)
    ij = (json.loads(insp.stdout) if insp.returncode == 0 else {}).get("check", {})
    dump = os.path.join(work, name + "-dump")
    shutil.rmtree(dump, ignore_errors=True)
    os.makedirs(dump)
    out = os.path.join(work, name + "-cap")
    shutil.rmtree(out, ignore_errors=True)
    cap = subprocess.run([binary, "capture", "--model", d, "--panel", os.path.join(fx, "panel"), "--out", out, "--role",
                          "root", "--lane", "other", "--windows", "1", "--gemm-order", "pair", "--dataset-id",
                          "fidelity--parity.k25." + name, "--dataset-name", "parity", "--no-sanity-check"],
                         env=dict(os.environ, FIDELITY_FORWARD_DUMP=dump), capture_output=True, text=True)
    if cap.returncode:
        return {"variant": name, "error": cap.stderr.strip()[-400:]}
    ids = np.fromfile(os.path.join(dump, "ids.i64"), dtype="<i8")
    S = len(ids)
    lm = model.model.language_model
    layers, sel = [], {}
    for L, layer in enumerate(lm.layers):
        layer.register_forward_hook(lambda m, i, o, L=L: layers.append((L, (o[0] if isinstance(o, tuple) else o)[0])))
        if hasattr(layer.mlp, "gate"):
            layer.mlp.gate.register_forward_hook(lambda m, i, o, L=L: sel.__setitem__(L, o[2]))
    fin = []
    model.get_output_embeddings().register_forward_pre_hook(lambda m, i: fin.append(i[0][0]))
    with torch.inference_mode():
        model(input_ids=torch.from_numpy(ids)[None, :], use_cache=False)
        per_layer = [same(dumped(dump, "layer_out", S, L), h) for L, h in layers]
        final = same(dumped(dump, "final", S), fin[0])
        agree = tot = 0
        for L, theirs in sel.items():
            _, _, idx = lm.layers[L].mlp.gate(dumped(dump, "post_ln", S, L))
            for t in range(S):
                agree += set(idx[t].tolist()) == set(theirs[t].tolist())
                tot += 1
    return {"variant": name, "transformers_load_clean": clean, "on_disk_layers": spelling,
            "tie_word_embeddings": model.config.tie_word_embeddings, "inspect_rc": insp.returncode,
            "ignored": len(ij.get("ignored", [])), "missing": len(ij.get("missing", [])),
            "unexpected": len(ij.get("unexpected", [])),
            "final_bit_identical": final[0], "final_max_abs_diff": final[1],
            "layers_bit_identical": [round(x[0], 6) for x in per_layer],
            "routing_agreement": agree / tot if tot else None, "tokens": S}


# kimi_linear: KDA on the linear_attention layers, MLA without RoPE on the full ones
KL_BASE = dict(vocab_size=260, hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=4,
               num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8,
               v_head_dim=16, num_local_experts=16, num_experts_per_tok=4, n_shared_experts=1, linear_head_dim=16,
               linear_num_heads=4, bos_token_id=1, eos_token_id=2, pad_token_id=0)
KL_VARIANTS = {
    "kl-default-types": dict(),  # layer 0 dense; layers 1.. linear but every 4th full: 4 layers -> all linear except none
    "kl-alternating": dict(layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
                           mlp_layer_types=["dense", "sparse", "sparse", "sparse"]),
    "kl-qlora-groups": dict(layer_types=["full_attention", "linear_attention", "linear_attention", "full_attention"],
                            q_lora_rank=32, n_group=4, topk_group=2, norm_topk_prob=False,
                            mlp_layer_types=["sparse", "sparse", "dense", "sparse"]),
}


def kl_variant(binary, work, name, over):
    cfg = KimiLinearConfig(**dict(KL_BASE, **over))
    torch.manual_seed(1234)
    model = KimiLinearForCausalLM._from_config(cfg, dtype=torch.bfloat16)
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d)
    fx = os.path.join(work, "fixture")
    if not os.path.isdir(fx):
        subprocess.run([binary, "fixture", "--preset", "kimi-k25-tiny", "--seed", "1", "--out", fx], check=True,
                       stdout=subprocess.DEVNULL)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(fx, f), d)
    model, info = KimiLinearForCausalLM.from_pretrained(d, dtype=torch.bfloat16, attn_implementation="eager",
                                                        output_loading_info=True)
    model.eval()
    clean = not any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    insp = subprocess.run([binary, "inspect-model", d, "--json"], capture_output=True, text=True)
    dump = os.path.join(work, name + "-dump")
    shutil.rmtree(dump, ignore_errors=True)
    os.makedirs(dump)
    out = os.path.join(work, name + "-cap")
    shutil.rmtree(out, ignore_errors=True)
    cap = subprocess.run([binary, "capture", "--model", d, "--panel", os.path.join(fx, "panel"), "--out", out, "--role",
                          "root", "--lane", "other", "--windows", "1", "--gemm-order", "pair", "--dataset-id",
                          "fidelity--parity.kl." + name, "--dataset-name", "parity", "--no-sanity-check"],
                         env=dict(os.environ, FIDELITY_FORWARD_DUMP=dump), capture_output=True, text=True)
    if cap.returncode:
        return {"variant": name, "error": (insp.stdout + cap.stderr).strip()[-600:]}
    ids = np.fromfile(os.path.join(dump, "ids.i64"), dtype="<i8")
    S = len(ids)
    layers, sel, attn = [], {}, {}
    for L, layer in enumerate(model.model.layers):
        layer.register_forward_hook(lambda m, i, o, L=L: layers.append((L, (o[0] if isinstance(o, tuple) else o)[0])))
        layer.self_attn.register_forward_hook(
            lambda m, i, o, L=L: attn.__setitem__(L, (o[0] if isinstance(o, tuple) else o)[0]))
        if hasattr(layer.mlp, "gate"):
            layer.mlp.gate.register_forward_hook(lambda m, i, o, L=L: sel.__setitem__(L, o[2]))
    fin = []
    model.get_output_embeddings().register_forward_pre_hook(lambda m, i: fin.append(i[0][0]))
    with torch.inference_mode():
        model(input_ids=torch.from_numpy(ids)[None, :], use_cache=False)
        per_layer = [same(dumped(dump, "layer_out", S, L), h) for L, h in layers]
        final = same(dumped(dump, "final", S), fin[0])
        # the token mixer alone, teacher-forced: transformers' attention on OUR input_layernorm rows
        mixer = []
        for L, layer in enumerate(model.model.layers):
            h = dumped(dump, "attn_in", S, L)[None]
            if layer.block_type == "linear_attention":
                y = layer.self_attn(hidden_states=h, attention_mask=None)
            else:
                causal = torch.full((S, S), torch.finfo(torch.bfloat16).min, dtype=torch.bfloat16).triu(1)[None, None]
                y, _ = layer.self_attn(hidden_states=h, attention_mask=causal)
            mixer.append(same(dumped(dump, "o_proj", S, L), y[0]))
        agree = tot = 0
        for L, theirs in sel.items():
            _, _, idx = model.model.layers[L].mlp.gate(dumped(dump, "post_ln", S, L))
            for t in range(S):
                agree += set(idx[t].tolist()) == set(theirs[t].tolist())
                tot += 1
    return {"variant": name, "transformers_load_clean": clean, "inspect_rc": insp.returncode,
            "layer_types": list(model.config.layer_types),
            "final_bit_identical": final[0], "final_max_abs_diff": final[1],
            "layers_bit_identical": [round(x[0], 6) for x in per_layer],
            "layers_max_abs_diff": [x[1] for x in per_layer],
            "mixer_teacher_forced_bit_identical": [round(x[0], 6) for x in mixer],
            "mixer_teacher_forced_max_abs_diff": [x[1] for x in mixer],
            "routing_agreement": agree / tot if tot else None, "tokens": S}


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "linear":
        binary, work = os.path.abspath(sys.argv[2]), sys.argv[3]
        os.makedirs(work, exist_ok=True)
        print(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                          "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA")}))
        for name, over in KL_VARIANTS.items():
            print(json.dumps(kl_variant(binary, work, name, over)), flush=True)
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "golden":
        return golden(*sys.argv[2:5])
    if len(sys.argv) == 4 and sys.argv[1] == "variants":
        binary, work = os.path.abspath(sys.argv[2]), sys.argv[3]
        os.makedirs(work, exist_ok=True)
        bad = 0
        print(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                          "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA")}))
        for name, (over, tie) in VARIANTS.items():
            r = variant(binary, work, name, over, tie)
            print(json.dumps(r), flush=True)
            bad += not (r.get("final_bit_identical") == 1.0 and r.get("transformers_load_clean") and r.get("inspect_rc") == 0)
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
