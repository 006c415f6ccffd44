"""The fixtures the committed GGUFs of tests/vectors/gguf-arch/ were converted
from: `fidelity fixture --preset P --seed 1`, then, where llama.cpp's converter
cannot express the preset as is, one deterministic edit (numpy only, no RNG):

  qwen3-moe-tiny   llama.cpp's qwen3moe has no dense layers (its tensor map
                   has no ffn_gate/up/down): mlp_only_layers [0] becomes [],
                   layer 0's MLP becomes a copy of layer 1's router and experts.
  deepseek-v3-tiny config.json gains "scoring_func": "sigmoid" (as
  deepseek-v32-tiny DeepSeek-V3's own config.json has it): without it the
                   converter writes no expert_gating_func and llama.cpp routes
                   by softmax.
  minimax-m2-tiny  config.json gains "scoring_func": "sigmoid" (MiniMax-M2's own
                   config.json has it; transformers does not read it): the same
                   reason.
Used by tests/vectors/gguf-arch/make.py and tests/py/test_gguf_arch.py."""
import json, os, struct

import numpy as np

PRESETS = ["llama-tiny", "qwen3-tiny", "qwen3-moe-tiny", "deepseek-v3-tiny", "deepseek-v32-tiny", "minimax-m2-tiny", "tiny"]


def read_st(path):
    data = open(path, "rb").read()
    hl = struct.unpack("<Q", data[:8])[0]
    hdr = json.loads(data[8:8 + hl])
    meta = hdr.pop("__metadata__", None)
    out = {}
    for k, v in hdr.items():
        a, b = v["data_offsets"]
        out[k] = (v["dtype"], v["shape"], data[8 + hl + a:8 + hl + b])
    return meta, out


def write_st(path, meta, tensors):
    hdr, blobs, off = {}, [], 0
    if meta is not None:
        hdr["__metadata__"] = meta
    for k in sorted(tensors):
        dt, shape, raw = tensors[k]
        hdr[k] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.replace(path + ".tmp", path)


def prepare(preset, d):
    """Edits the fixture directory d (made with --seed 1) in place."""
    cfgp = os.path.join(d, "config.json")
    cfg = json.load(open(cfgp))
    if preset == "qwen3-moe-tiny":
        st = os.path.join(d, "model.safetensors")
        meta, t = read_st(st)
        for w in ("gate_proj", "up_proj", "down_proj"):
            del t["model.layers.0.mlp.%s.weight" % w]
        for k in list(t):
            if k.startswith("model.layers.1.mlp.gate.") or k.startswith("model.layers.1.mlp.experts."):
                t["model.layers.0." + k[len("model.layers.1."):]] = t[k]
        write_st(st, meta, t)
        cfg["mlp_only_layers"] = []
    elif preset in ("deepseek-v3-tiny", "deepseek-v32-tiny", "minimax-m2-tiny"):
        cfg["scoring_func"] = "sigmoid"
    else:
        return
    with open(cfgp, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
