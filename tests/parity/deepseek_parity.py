#!/usr/bin/env python3
"""deepseek_v3 parity with transformers (test oracle only: needs torch +
transformers; run with /tmp/venv-engine/bin/python, torch 2.15 / transformers
5.25; never needed to build or run fidelity).

usage:
  deepseek_parity.py golden MODEL_DIR PANEL_DIR OUT_DIR
      transformers' final hidden states (lm_head input, bf16, eager) of every
      panel window of MODEL_DIR (a `fidelity fixture --preset
      deepseek-v3-tiny` or `deepseek-v32-tiny` checkpoint) as golden.safetensors
      + golden.json (with deepseek_v32's DSA selections of the first window),
      the format of transformers_hidden.py that compare_hidden.py and
      run_parity.sh read.
  deepseek_parity.py variants BINARY WORKDIR
      for each config variant below: DeepseekV3ForCausalLM random-init
      (torch.manual_seed), written by transformers' own save_pretrained;
      BINARY inspects it (no missing / unexpected tensor), captures the first
      panel window with FIDELITY_FORWARD_DUMP, and each decoder layer's output
      and the final norm output are compared with transformers' (bf16,
      eager) on the same ids: bit-identical fraction and max |diff| per
      layer, and the routed-expert sets of every MoE layer (ours recomputed
      from our dumped router logits is NOT used: transformers' selections are
      compared with those of transformers' own router run on OUR layer input,
      so a routing flip shows even when the hidden states are close).
      Prints one JSON line per variant; exits 1 unless every variant is
      bit-identical at the final norm.
Pin the product order as the goldens: ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16
(fidelity's `--gemm-order pair`)."""
import json, os, shutil, struct, subprocess, sys
import numpy as np
import torch
import transformers
from transformers import (AutoModelForCausalLM, DeepseekV3Config, DeepseekV3ForCausalLM, DeepseekV32Config,
                          DeepseekV32ForCausalLM)

torch.set_num_threads(1)

BASE = dict(vocab_size=260, hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=8,
            qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=16, n_group=4, topk_group=2, num_experts_per_tok=4,
            n_shared_experts=1, first_k_dense_replace=1, max_position_embeddings=256, bos_token_id=1, eos_token_id=2,
            pad_token_id=0)
YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "mscale": 1.0, "mscale_all_dim": 1.0,
        "beta_fast": 32, "beta_slow": 1, "original_max_position_embeddings": 64}
VARIANTS = {
    "yarn-qlora-interleave": dict(rope_parameters=YARN),
    "default-rope-no-qlora": dict(q_lora_rank=None, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    "rotate-half-bias-tied": dict(rope_interleave=False, attention_bias=True, tie_word_embeddings=True,
                                  rope_parameters={"rope_type": "default", "rope_theta": 50000.0}),
    "yarn-kimi-k2-style": dict(rope_parameters=dict(YARN, factor=32.0, mscale=1.0, mscale_all_dim=1.0),
                               n_group=1, topk_group=1, routed_scaling_factor=2.827, norm_topk_prob=True,
                               first_k_dense_replace=2),
    "no-norm-topk-dense0": dict(norm_topk_prob=False, first_k_dense_replace=0, n_shared_experts=2,
                                rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2.0,
                                                 "original_max_position_embeddings": 128}),
}
# deepseek_v32 (the DSA indexer live: index_topk 8 < 64 tokens)
V32 = dict(index_topk=8, index_head_dim=16, index_n_heads=4)
VARIANTS_V32 = {
    "v32-yarn": dict(V32, rope_parameters=YARN),
    "v32-default-topk32-dense2": dict(V32, index_topk=32, first_k_dense_replace=2,
                                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
}


def load_panel(panel_dir):
    p = json.load(open(os.path.join(panel_dir, "panel.json")))
    return [(w["window_id"], np.load(os.path.join(panel_dir, "arrays", w["window_id"] + ".tokens.npy")).astype(np.int64))
            for w in sorted(p["windows"], key=lambda w: w["window_id"])]


def golden(model_dir, panel_dir, out_dir):
    model, info = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16, attn_implementation="eager",
                                                       output_loading_info=True)
    model.eval()
    report = {k: sorted(map(str, v)) if isinstance(v, (list, set)) else str(v) for k, v in info.items()}
    captured = []
    model.get_output_embeddings().register_forward_pre_hook(
        lambda mod, inp: captured.append(inp[0].detach().squeeze(0).to(torch.float32).clone()))
    # deepseek_v32: the indexer's top-k of the first window, per (layer, query) the
    # digest of the sorted causal key set (compare_hidden.py --dump)
    topk, selections = {}, None
    for L, layer in enumerate(model.model.layers):
        ix = getattr(layer.self_attn, "indexer", None)
        if ix is not None:
            ix.register_forward_hook(lambda m, i, o, L=L: topk.__setitem__(L, o[0].long()))
    tensors, rows = {}, {}
    with torch.inference_mode():
        for wid, ids in load_panel(panel_dir):
            captured.clear()
            model(input_ids=torch.from_numpy(ids)[None, :], attention_mask=torch.ones(1, len(ids), dtype=torch.int64),
                  use_cache=False)
            h = captured[0][:-1]
            tensors[wid] = (list(h.shape), h.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes())
            rows[wid] = int(h.shape[0])
            if selections is None and topk:
                import hashlib
                S = len(ids)
                selections = {"window_id": wid, "layers": {
                    str(L): [hashlib.sha256(",".join(str(j) for j in sorted({j for j in t.tolist() if 0 <= j <= q})).encode())
                             .hexdigest()[:16] for q, t in enumerate(topk[L][:S])] for L in sorted(topk)}}
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
               "host_amx_bf16": " amx_bf16" in open("/proc/cpuinfo").read(), "selections_first_window": selections},
              open(os.path.join(out_dir, "golden.json"), "w"), indent=2, sort_keys=True)
    print("wrote", out_dir, "windows", len(rows), "loading", report)
    return 0 if not any(report.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")) else 1


def dumped(d, stage, S, L=None):
    p = os.path.join(d, stage + ("" if L is None else ".L%d" % L) + ".bf16")
    return torch.from_numpy(np.fromfile(p, dtype="<i2").astype(np.int16)).view(torch.bfloat16).reshape(S, -1)


def same(a, b):
    return (a.view(torch.int16) == b.view(torch.int16)).float().mean().item(), (a.float() - b.float()).abs().max().item()


def variant(binary, work, name, over, v32=False):
    base = {k: v for k, v in BASE.items() if not (v32 and k == "rope_interleave")}
    cfg = (DeepseekV32Config if v32 else DeepseekV3Config)(**dict(base, **over))
    torch.manual_seed(1234)
    model = (DeepseekV32ForCausalLM if v32 else DeepseekV3ForCausalLM)._from_config(cfg, dtype=torch.bfloat16)
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d)
    fx = os.path.join(work, "fixture")
    if not os.path.isdir(fx):
        subprocess.run([binary, "fixture", "--preset", "deepseek-v3-tiny", "--seed", "1", "--out", fx], check=True,
                       stdout=subprocess.DEVNULL)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(fx, f), d)
    model, info = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16, attn_implementation="eager",
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
                          "fidelity--parity.ds3." + name, "--dataset-name", "parity", "--no-sanity-check"],
                         env=dict(os.environ, FIDELITY_FORWARD_DUMP=dump), capture_output=True, text=True)
    if cap.returncode:
        return {"variant": name, "error": cap.stderr.strip()[-400:]}
    ids = np.fromfile(os.path.join(dump, "ids.i64"), dtype="<i8")
    S = len(ids)
    layers, inputs, sel = [], {}, {}
    for L, layer in enumerate(model.model.layers):
        layer.register_forward_hook(lambda m, i, o, L=L: layers.append((L, (o[0] if isinstance(o, tuple) else o)[0])))
        if hasattr(layer.mlp, "gate"):
            layer.mlp.register_forward_pre_hook(lambda m, i, L=L: inputs.__setitem__(L, i[0][0].clone()))
            layer.mlp.gate.register_forward_hook(lambda m, i, o, L=L: sel.__setitem__(L, o[2]))
    sels = {}
    for L, layer in enumerate(model.model.layers):
        ix = getattr(layer.self_attn, "indexer", None)
        if ix is not None:
            ix.register_forward_hook(lambda m, i, o, L=L: sels.__setitem__(L, o[0]))
    fin = []
    model.get_output_embeddings().register_forward_pre_hook(lambda m, i: fin.append(i[0][0]))
    with torch.inference_mode():
        model(input_ids=torch.from_numpy(ids)[None, :], use_cache=False)
        per_layer = [same(dumped(dump, "layer_out", S, L), h) for L, h in layers]
        final = same(dumped(dump, "final", S), fin[0])
        # routing: transformers' router on OUR post-attention-norm rows vs on its own
        agree = tot = 0
        for L, theirs in sel.items():
            g = model.model.layers[L].mlp.gate
            ours_in = dumped(dump, "post_ln", S, L)
            _, _, idx = g(ours_in)
            for t in range(S):
                agree += set(idx[t].tolist()) == set(theirs[t].tolist())
                tot += 1
        # DSA selections: our sel.L dump against the indexer's top-k (causal keys only)
        sel_eq = sel_tot = 0
        for L, idx in sels.items():
            m = np.fromfile(os.path.join(dump, "sel.L%d.u8" % L), dtype=np.uint8).reshape(S, S)
            for t in range(S):
                want = sorted({j for j in idx[t].tolist() if 0 <= j <= t})
                sel_eq += np.nonzero(m[t])[0].tolist() == want
                sel_tot += 1
    return {"variant": name, "transformers_load_clean": clean,
            "dsa_selection_agreement": sel_eq / sel_tot if sel_tot else None, "inspect_rc": insp.returncode,
            "final_bit_identical": final[0], "final_max_abs_diff": final[1],
            "layers_bit_identical": [round(x[0], 6) for x in per_layer],
            "routing_agreement": agree / tot if tot else None, "tokens": S}


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "golden":
        return golden(*sys.argv[2:5])
    if len(sys.argv) == 4 and sys.argv[1] == "variants":
        binary, work = os.path.abspath(sys.argv[2]), sys.argv[3]
        os.makedirs(work, exist_ok=True)
        bad = 0
        print(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                          "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA")}))
        for name, over, v32 in [(n, o, False) for n, o in VARIANTS.items()] + [(n, o, True) for n, o in VARIANTS_V32.items()]:
            r = variant(binary, work, name, over, v32)
            print(json.dumps(r), flush=True)
            bad += not (r.get("final_bit_identical") == 1.0 and r.get("transformers_load_clean") and r.get("inspect_rc") == 0)
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
