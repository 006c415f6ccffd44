"""The checkpoint the GGUFs of tests/vectors/gguf-qwen4/ were converted from:
`fidelity fixture --preset qwen4-exp-tiny --seed 1`, then two deterministic
edits:

  - every zero-centred RMSNorm weight (each *norm.weight but
    linear_attn.norm.weight: the ones llama.cpp's converter stores as 1 + w,
    the hyper-connection hc_norm and the indexer q/k_layernorm included) set
    to w ~ normal(0, 0.1) rounded to bf16, stored BF16 (numpy's PCG64, seed
    7: tests/py/gguf_ssm_fixtures.py's "exact" edit): the converter upcasts
    to float32 before its rewrites, so its 1 + w and -exp(A_log) are
    transformers' own float32 values;
  - config.json's layer_types entries indexed_attention spelled
    full_attention (the same layers for qwen4_exp: the config's
    __post_init__ reads both as QSA layers, docs/MODEL-MINIMAX-QWEN4.md §7):
    the converter (Qwen4ExpTextModel.set_gguf_parameters) writes
    attention.compress_ratios = indexer_compress_ratio only for entries
    spelled full_attention, 0 otherwise.

Used by tests/vectors/gguf-qwen4/make.py and tests/py/test_gguf_qwen4.py."""
import json, os

from gguf_ssm_fixtures import prepare as prepare_ssm

PRESET = "qwen4-exp-tiny"


def prepare(d):
    """Edits the fixture directory d (made with --seed 1) in place."""
    prepare_ssm("exact", d)
    p = os.path.join(d, "config.json")
    cfg = json.load(open(p))
    cfg["layer_types"] = ["full_attention" if t == "indexed_attention" else t for t in cfg["layer_types"]]
    with open(p + ".tmp", "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(p + ".tmp", p)
