#!/usr/bin/env python3
"""Benchmark peer for bench/capture.sh (torch + transformers from PyPI; never
needed to build or run fidelity): the same windows through
GlmMoeDsaForCausalLM on the CPU, one window per forward, as the Python
capture runs them.  Prints one JSON line: tokens, forward seconds, load
seconds, peak RSS.

usage: transformers_capture.py MODEL_DIR PANEL_DIR WINDOWS THREADS [ATTN]
env WARM=1: run every window once untimed first (torch/oneDNN build their
kernels per shape on first use), then time them: the steady state."""
import json, os, resource, sys, time
import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, GlmMoeDsaForCausalLM

model_dir, panel_dir, nwin, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
attn = sys.argv[5] if len(sys.argv) > 5 else "sdpa"
torch.set_num_threads(threads)
t0 = time.monotonic()
mt = json.load(open(os.path.join(model_dir, "config.json"))).get("model_type")
# glm5_next (Glm5NextForConditionalGeneration) is the image-text-to-text auto class; llama / qwen3 / qwen3_moe causal LMs
cls = AutoModelForImageTextToText if mt == "glm5_next" else GlmMoeDsaForCausalLM if mt == "glm_moe_dsa" else AutoModelForCausalLM
model = cls.from_pretrained(model_dir, dtype=torch.bfloat16, attn_implementation=attn).eval()
load = time.monotonic() - t0
p = json.load(open(os.path.join(panel_dir, "panel.json")))
wins = sorted(p["windows"], key=lambda w: w["window_id"])[:nwin]
warm = os.environ.get("WARM") == "1"
for w in wins if warm else []:
    ids = torch.from_numpy(np.load(os.path.join(panel_dir, "arrays", w["window_id"] + ".tokens.npy")).astype(np.int64))
    with torch.inference_mode():
        model.model(input_ids=ids.reshape(1, -1), attention_mask=torch.ones_like(ids.reshape(1, -1)), use_cache=False)
tokens = 0
fwd = 0.0
per = []
for w in wins:
    ids = torch.from_numpy(np.load(os.path.join(panel_dir, "arrays", w["window_id"] + ".tokens.npy")).astype(np.int64))
    ids = ids.reshape(1, -1)
    t = time.monotonic()
    with torch.inference_mode():
        model.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    per.append(round(time.monotonic() - t, 3))
    fwd += per[-1]
    tokens += ids.shape[1]
print(json.dumps({"tokens": tokens, "forward_seconds": round(fwd, 3), "load_seconds": round(load, 3),
                  "tokens_per_second": round(tokens / fwd, 1), "window_seconds": per, "attn": attn, "threads": threads, "warm": warm,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "torch": torch.__version__}))
