#!/usr/bin/env python3
"""deepseek_v4 per-layer parity with transformers on checkpoints written by
transformers' own save_pretrained (test oracle only: needs torch +
transformers; run with /tmp/venv-engine/bin/python, torch 2.15 /
transformers 5.25; never needed to build or run fidelity).

usage:
  deepseek_v4_parity.py layers BINARY WORKDIR
      for each variant below: DeepseekV4ForCausalLM random-init
      (torch.manual_seed(1234)) with the config of `fidelity fixture --preset
      deepseek-v4-tiny`, written by save_pretrained (210 tensors, the release
      names under model., head.weight, I64 tid2eid); BINARY inspects it (no
      missing / unexpected tensor), captures the first panel window (64 tokens)
      with FIDELITY_FORWARD_DUMP, and against transformers (bf16, eager, the
      same ids) compares: every layer's attention output, compressed entries,
      MoE output and layer output (the hc_mult streams), the hc_head collapse
      and the final norm (bit-identical fraction, max |diff|); the indexer's
      kept entries per query and the routed experts per token (sets).
      One JSON line per variant; exits 1 unless every variant is bit-identical
      at every stage with equal selections.
Variants: "init" (as _init_weights leaves it: tid2eid all expert 0, twice;
sinks, position_bias and the hc bases zero) and "perturbed" (those set to
distinct random experts per token and small random values before saving).
Pin the product order as the goldens: ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16
(fidelity's `--gemm-order pair`)."""
import json, os, shutil, subprocess, sys
import numpy as np
import torch
import transformers
from transformers import DeepseekV4ForCausalLM

torch.set_num_threads(1)


def same(a, b):
    a, b = a.to(torch.bfloat16).reshape(-1), b.to(torch.bfloat16).reshape(-1)
    if a.numel() != b.numel():
        return 0.0, float("inf")
    return (a.view(torch.int16) == b.view(torch.int16)).float().mean().item(), (a.float() - b.float()).abs().max().item()


def dumped(d, stage, L=None):
    p = os.path.join(d, stage + ("" if L is None else ".L%d" % L) + ".bf16")
    return torch.from_numpy(np.fromfile(p, dtype="<i2").astype(np.int16)).view(torch.bfloat16)


def perturb(model):
    g = torch.Generator().manual_seed(99)
    with torch.no_grad():
        for layer in model.model.layers:
            gate = layer.mlp.gate
            if hasattr(gate, "tid2eid"):
                V, k = gate.tid2eid.shape
                gate.tid2eid.copy_(torch.stack([torch.randperm(gate.num_experts, generator=g)[:k] for _ in range(V)]))
            else:
                gate.e_score_correction_bias.copy_(torch.randn(gate.e_score_correction_bias.shape, generator=g) * 0.02)
            layer.self_attn.sinks.copy_(torch.randn(layer.self_attn.sinks.shape, generator=g) * 0.5)
            for mod in (layer.self_attn.compressor, getattr(layer.self_attn.compressor, "indexer", None)):
                if mod is not None:
                    mod.position_bias.copy_(torch.randn(mod.position_bias.shape, generator=g) * 0.5)
            for hc in (layer.attn_hc, layer.ffn_hc):
                hc.base.copy_(torch.randn(hc.base.shape, generator=g) * 0.5)
        model.model.hc_head.hc_base.copy_(torch.randn(model.model.hc_head.hc_base.shape, generator=g) * 0.5)


def variant(binary, work, name, fx):
    cfg = transformers.AutoConfig.from_pretrained(fx)
    torch.manual_seed(1234)
    model = DeepseekV4ForCausalLM._from_config(cfg, dtype=torch.bfloat16)
    if name == "perturbed":
        perturb(model)
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(fx, f), d)
    model, info = DeepseekV4ForCausalLM.from_pretrained(d, dtype=torch.bfloat16, attn_implementation="eager",
                                                        output_loading_info=True)
    model.eval()
    clean = not any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    insp = subprocess.run([binary, "inspect-model", d, "--json"], capture_output=True, text=True)
    chk = json.loads(insp.stdout)["check"] if insp.returncode == 0 else {}
    dump = os.path.join(work, name + "-dump")
    shutil.rmtree(dump, ignore_errors=True)
    os.makedirs(dump)
    out = os.path.join(work, name + "-cap")
    shutil.rmtree(out, ignore_errors=True)
    cap = subprocess.run([binary, "capture", "--model", d, "--panel", os.path.join(fx, "panel"), "--out", out, "--role",
                          "root", "--lane", "other", "--windows", "1", "--gemm-order", "pair", "--dataset-id",
                          "fidelity--parity.v4." + name, "--dataset-name", "parity", "--no-sanity-check"],
                         env=dict(os.environ, FIDELITY_FORWARD_DUMP=dump), capture_output=True, text=True)
    if cap.returncode:
        return {"variant": name, "error": cap.stderr.strip()[-400:]}
    ids = np.fromfile(os.path.join(dump, "ids.i64"), dtype="<i8")
    S = len(ids)
    got = {}
    hook = lambda key: (lambda m, i, o: got.__setitem__(key, o))
    for L, layer in enumerate(model.model.layers):
        layer.register_forward_hook(hook(("layer_out", L)))
        layer.self_attn.register_forward_hook(hook(("attn", L)))
        layer.mlp.register_forward_hook(hook(("mlp", L)))
        layer.mlp.gate.register_forward_hook(hook(("gate", L)))
        comp = layer.self_attn.compressor
        if comp is not None:
            comp.register_forward_hook(hook(("comp", L)))
            if hasattr(comp, "indexer"):
                comp.indexer.register_forward_hook(hook(("index", L)))
    model.model.hc_head.register_forward_hook(hook(("hc_head", None)))
    with torch.inference_mode():
        fin = model.model(input_ids=torch.from_numpy(ids)[None, :], use_cache=False).last_hidden_state[0]
    stages, sel_eq, sel_tot, r_eq, r_tot = {}, 0, 0, 0, 0
    for L in range(len(model.model.layers)):
        stages["attn.L%d" % L] = same(dumped(dump, "attn", L), got[("attn", L)][0])
        if ("comp", L) in got:
            stages["comp.L%d" % L] = same(dumped(dump, "v4_comp", L), got[("comp", L)][0])
        stages["mlp.L%d" % L] = same(dumped(dump, "mlp", L), got[("mlp", L)])
        stages["layer_out.L%d" % L] = same(dumped(dump, "layer_out", L), got[("layer_out", L)])
        if ("index", L) in got:
            idx = got[("index", L)][0]
            T = got[("comp", L)][0].shape[2]
            ours = np.fromfile(os.path.join(dump, "v4_index_sel.L%d.u8" % L), dtype=np.uint8).reshape(S, T)
            for t in range(S):
                sel_eq += np.nonzero(ours[t])[0].tolist() == sorted(j for j in idx[t].tolist() if j >= 0)
                sel_tot += 1
        theirs = got[("gate", L)][2].reshape(S, -1)
        ours = np.fromfile(os.path.join(dump, "experts.L%d.i64" % L), dtype="<i8").reshape(S, -1)
        for t in range(S):
            r_eq += sorted(ours[t].tolist()) == sorted(theirs[t].tolist())
            r_tot += 1
    stages["hc_head"] = same(dumped(dump, "hc_head"), got[("hc_head", None)])
    stages["final"] = same(dumped(dump, "final"), fin)
    return {"variant": name, "transformers_load_clean": clean, "inspect_rc": insp.returncode,
            "expected": chk.get("expected"), "missing": len(chk.get("missing", [])), "unexpected": len(chk.get("unexpected", [])),
            "tokens": S, "stages_bit_identical": {k: round(v[0], 6) for k, v in stages.items()},
            "max_abs_diff": max(v[1] for v in stages.values()),
            "indexer_selection_agreement": sel_eq / sel_tot if sel_tot else None,
            "routing_agreement": r_eq / r_tot if r_tot else None}


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "layers":
        binary, work = os.path.abspath(sys.argv[2]), sys.argv[3]
        os.makedirs(work, exist_ok=True)
        fx = os.path.join(work, "fixture")
        if not os.path.isdir(fx):
            subprocess.run([binary, "fixture", "--preset", "deepseek-v4-tiny", "--seed", "1", "--out", fx], check=True,
                           stdout=subprocess.DEVNULL)
        print(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                          "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA")}))
        bad = 0
        for name in ("init", "perturbed"):
            r = variant(binary, work, name, fx)
            print(json.dumps(r), flush=True)
            bad += not (r.get("transformers_load_clean") and r.get("inspect_rc") == 0 and r.get("missing") == 0
                        and r.get("unexpected") == 0 and all(v == 1.0 for v in r.get("stages_bit_identical", {0: 0}).values())
                        and r.get("indexer_selection_agreement") == 1.0 and r.get("routing_agreement") == 1.0)
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
