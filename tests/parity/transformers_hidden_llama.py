#!/usr/bin/env python3
"""Parity oracle for model_types llama and qwen3 (needs torch + transformers
from PyPI; never needed to build or run fidelity).

usage: transformers_hidden_llama.py MODEL_DIR PANEL_DIR OUT_DIR
       transformers_hidden_llama.py --save-pretrained MODEL_DIR OUT_MODEL_DIR [SEED]

First form: load MODEL_DIR (a fidelity fixture or any llama/qwen3 checkpoint)
with AutoModelForCausalLM (bf16, eager attention), run each panel window with
a forward pre-hook on lm_head (the capture cut: the final RMSNorm output) and
write the scored rows as golden.safetensors ("window_id" -> BF16 [rows,
hidden]) + golden.json (versions, loading report, host), the layout of
transformers_hidden.py.

Second form: build a random-init model of MODEL_DIR's config with
transformers itself (torch.manual_seed(SEED), _init_weights), save it with
save_pretrained (bf16) into OUT_MODEL_DIR with MODEL_DIR's tokenizer files,
so our loader and forward can be checked on transformers' own checkpoint.

env FIDELITY_PARITY_DIGEST_ONLY=1: golden.json only, with each window's
sha256 (window_sha256; compare_hidden.py then requires every window bit for
bit) - for windows too large to commit.

Written with torch.set_num_threads(1), ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16
(the pair order, `capture --gemm-order pair`)."""
import json, os, shutil, struct, sys
import numpy as np
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM


def load_panel(panel_dir):
    p = json.load(open(os.path.join(panel_dir, "panel.json")))
    out = []
    for w in sorted(p["windows"], key=lambda w: w["window_id"]):
        ids = np.load(os.path.join(panel_dir, "arrays", w["window_id"] + ".tokens.npy"))
        out.append((w["window_id"], ids.astype(np.int64)))
    return out


def save_pretrained(src, dst, seed):
    cfg = AutoConfig.from_pretrained(src)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    model.save_pretrained(dst)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    print("saved", dst, type(model).__name__, "tied" if cfg.tie_word_embeddings else "untied")


def main():
    torch.set_num_threads(1)
    if sys.argv[1] == "--save-pretrained":
        return save_pretrained(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    model_dir, panel_dir, out_dir = sys.argv[1:4]
    model, info = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16, output_loading_info=True,
                                                       attn_implementation="eager")
    model.eval()
    report = {k: sorted(map(str, v)) if isinstance(v, (list, set)) else str(v) for k, v in info.items()}
    captured = []
    model.get_output_embeddings().register_forward_pre_hook(
        lambda mod, inp: captured.append(inp[0].detach().squeeze(0).clone()))
    tensors, rows = {}, {}
    with torch.inference_mode():
        for wid, ids in load_panel(panel_dir):
            captured.clear()
            model(input_ids=torch.from_numpy(ids)[None, :], attention_mask=torch.ones(1, len(ids), dtype=torch.int64),
                  use_cache=False)
            h = captured[0][:-1]                                    # rows 0..L-2 (all-ones mask)
            tensors[wid] = (list(h.shape), h.view(torch.int16).numpy().astype("<i2").tobytes())
            rows[wid] = int(h.shape[0])
    os.makedirs(out_dir, exist_ok=True)
    import hashlib
    digests = {w: hashlib.sha256(b).hexdigest() for w, (_, b) in tensors.items()}
    if os.environ.get("FIDELITY_PARITY_DIGEST_ONLY"):  # windows too large to commit: their sha256 only
        tensors = {}
    header, off, blobs = {}, 0, []
    for name in sorted(tensors):
        shape, b = tensors[name]
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    hb = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    if tensors:
        with open(os.path.join(out_dir, "golden.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))
    cpu = open("/proc/cpuinfo").read()
    json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "loading_info": report,
               "model_type": model.config.model_type, "tie_word_embeddings": model.config.tie_word_embeddings,
               "rows": rows, "attn_implementation": model.config._attn_implementation,
               "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA"), "torch_threads": 1,
               "host_amx_bf16": " amx_bf16" in cpu, "host_avx512_bf16": " avx512_bf16" in cpu,
               "window_sha256": digests},
              open(os.path.join(out_dir, "golden.json"), "w"), indent=2, sort_keys=True)
    print("wrote", out_dir, "windows", len(rows), "loading", report)


if __name__ == "__main__":
    main()
