#!/usr/bin/env python3
"""Parity oracle (needs torch + transformers from PyPI; never needed to build or
run fidelity): load a fidelity-generated glm_moe_dsa checkpoint with
GlmMoeDsaForCausalLM, run each panel window through it with a forward
pre-hook on lm_head (the capture cut of FORMAT.md §6), and write the hidden
states of the scored rows as a sealed dataset-free golden file:

    golden.safetensors   one BF16 tensor per window, "window_NNNN" [rows, hidden]
    golden.json          versions, loading report, per-window row counts

usage: transformers_hidden.py MODEL_DIR PANEL_DIR OUT_DIR
(env FIDELITY_PARITY_ATTN=eager|sdpa, FIDELITY_PARITY_WINDOWS=N: the first N windows)
Pinned: transformers==5.16.1, torch==2.11.0 (what the seeds' fixtures used).
torch's CPU bf16 GEMM order depends on the host ISA (oneDNN picks AMX tiles
where the CPU has them, AVX512_BF16 otherwise), and so do the two orders of
`fidelity capture --gemm-order`: goldens named *-amx* were written on an AMX
host with no pin (torch's default there: the tile order, our default); the
others with ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 (the pair order), which
regenerates them bit-identically on any AVX512_BF16 or AMX host."""
import json, os, struct, sys
import numpy as np
import torch
import transformers
from transformers import AutoConfig, GlmMoeDsaForCausalLM

def sel_digest(keys):
    """First 16 hex of sha256 of the comma-joined sorted key indices."""
    import hashlib
    return hashlib.sha256(",".join(str(j) for j in keys).encode()).hexdigest()[:16]

def load_panel(panel_dir):
    p = json.load(open(os.path.join(panel_dir, "panel.json")))
    wins = sorted(p["windows"], key=lambda w: w["window_id"])
    out = []
    for w in wins:
        ids = np.load(os.path.join(panel_dir, "arrays", w["window_id"] + ".tokens.npy"))
        out.append((w["window_id"], ids.astype(np.int64)))
    return out

def main():
    model_dir, panel_dir, out_dir = sys.argv[1:4]
    torch.set_num_threads(2)
    torch.manual_seed(0)
    attn = os.environ.get("FIDELITY_PARITY_ATTN")  # None: the transformers default (sdpa)
    kw = {"attn_implementation": attn} if attn else {}
    model, info = GlmMoeDsaForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16, output_loading_info=True, **kw)
    model.eval()
    report = {k: sorted(map(str, v)) if isinstance(v, (list, set)) else str(v) for k, v in info.items()}
    captured = []
    def hook(module, inputs):
        captured.append(inputs[0].detach().squeeze(0).to(torch.float32).clone())
    model.get_output_embeddings().register_forward_pre_hook(hook)
    # DSA selections of the first window: per (layer, query) a digest of the
    # sorted causal key set (sel_digest), compared by compare_hidden.py --dump
    topk = {}
    for L, layer in enumerate(model.model.layers):
        def grab(mod, inp, out, L=L):
            topk[L] = out[2].detach().reshape(out[2].shape[-2], -1).long() if isinstance(out, tuple) and len(out) > 2 \
                and out[2] is not None else None
        layer.self_attn.register_forward_hook(grab)
    selections = None
    tensors, rows = {}, {}
    with torch.inference_mode():
        limit = int(os.environ.get("FIDELITY_PARITY_WINDOWS", "0")) or None
        for wid, ids in load_panel(panel_dir)[:limit]:
            captured.clear()
            model(input_ids=torch.from_numpy(ids)[None, :], attention_mask=torch.ones(1, len(ids), dtype=torch.int64),
                  use_cache=False)
            h = captured[0][:-1]                                    # rows 0..L-2 (all-ones mask)
            u = (h.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2")).tobytes()
            tensors[wid] = (list(h.shape), u)
            rows[wid] = int(h.shape[0])
            if selections is None:
                S = len(ids)
                selections = {"window_id": wid, "layers": {}}
                for L in sorted(topk):
                    rows_L = []
                    for t in range(S):
                        keys = range(t + 1) if topk[L] is None else sorted({j for j in topk[L][t].tolist() if 0 <= j <= t})
                        rows_L.append(sel_digest(keys))
                    selections["layers"][str(L)] = rows_L
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
               "rows": rows, "attn_implementation": getattr(model.config, "_attn_implementation", None),
               "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA"),
               "host_amx_bf16": " amx_bf16" in open("/proc/cpuinfo").read(),
               "selections_first_window": selections},
              open(os.path.join(out_dir, "golden.json"), "w"), indent=2, sort_keys=True)
    print("wrote", out_dir, "windows", len(rows), "loading", report)

if __name__ == "__main__":
    main()
