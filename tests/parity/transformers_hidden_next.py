#!/usr/bin/env python3
"""Parity oracle for glm5_next (needs torch + transformers from PyPI; never
needed to build or run fidelity): load a fidelity-generated glm5_next
checkpoint with Glm5NextForConditionalGeneration, run panel windows through it
(text only, use_cache=False) with a forward pre-hook on lm_head (the capture
cut), and write golden files in the format of transformers_hidden.py:

    golden.safetensors   one BF16 tensor per window, "window_NNNN" [rows, hidden]
    golden.json          versions, loading report, per-window row counts, the
                         experts implementation that ran, DSA selections of the
                         first window (per full DSA layer and query: sel_digest
                         of the attended causal key set)

usage: transformers_hidden_next.py MODEL_DIR PANEL_DIR OUT_DIR
(env FIDELITY_PARITY_ATTN=eager|sdpa, FIDELITY_PARITY_WINDOWS=N)
Run with ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 (see transformers_hidden.py)."""
import json, os, struct, sys
import torch
import transformers
from transformers import Glm5NextForConditionalGeneration
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformers_hidden import load_panel, sel_digest

def main():
    model_dir, panel_dir, out_dir = sys.argv[1:4]
    torch.set_num_threads(2)
    torch.manual_seed(0)
    attn = os.environ.get("FIDELITY_PARITY_ATTN")
    kw = {"attn_implementation": attn} if attn else {}
    model, info = Glm5NextForConditionalGeneration.from_pretrained(model_dir, dtype=torch.bfloat16,
                                                                    output_loading_info=True, **kw)
    model.eval()
    report = {k: sorted(map(str, v)) if isinstance(v, (list, set)) else str(v) for k, v in info.items()}
    captured = []
    model.get_output_embeddings().register_forward_pre_hook(
        lambda mod, inp: captured.append(inp[0].detach().squeeze(0).to(torch.float32).clone()))
    topk = {}
    for L, layer in enumerate(model.model.language_model.layers):
        idx = getattr(layer.self_attn, "indexer", None)
        if idx is not None:
            idx.register_forward_hook(lambda mod, inp, out, L=L: topk.__setitem__(L, out.detach()[0].long()))
    tensors, rows, selections = {}, {}, None
    limit = int(os.environ.get("FIDELITY_PARITY_WINDOWS", "0")) or None
    with torch.inference_mode():
        for wid, ids in load_panel(panel_dir)[:limit]:
            captured.clear()
            topk.clear()
            model(input_ids=torch.from_numpy(ids)[None, :], attention_mask=torch.ones(1, len(ids), dtype=torch.int64),
                  use_cache=False)
            h = captured[0][:-1]
            u = (h.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2")).tobytes()
            tensors[wid] = (list(h.shape), u)
            rows[wid] = int(h.shape[0])
            if selections is None:
                selections = {"window_id": wid, "layers": {}}
                for L in sorted(topk):
                    selections["layers"][str(L)] = [
                        sel_digest(sorted({j for j in topk[L][t].tolist() if 0 <= j <= t})) for t in range(len(ids))]
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
    tc = model.config.text_config
    json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "loading_info": report,
               "rows": rows, "attn_implementation": getattr(tc, "_attn_implementation", None),
               "experts_implementation": getattr(tc, "_experts_implementation", None),
               "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA"),
               "host_amx_bf16": " amx_bf16" in open("/proc/cpuinfo").read(),
               "selections_first_window": selections},
              open(os.path.join(out_dir, "golden.json"), "w"), indent=2, sort_keys=True)
    print("wrote", out_dir, "windows", len(rows), "loading", report)

if __name__ == "__main__":
    main()
