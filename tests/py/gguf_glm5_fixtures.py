"""The checkpoint the GGUFs of tests/vectors/gguf-glm5/ were converted from:
`fidelity fixture --preset glm5-next-tiny --seed 1`, then two deterministic
edits (numpy's PCG64, seed 7; no other RNG):

  config   llama.cpp's converter (Glm5NextModel.set_gguf_parameters) reads
           the released GLM-5.3-Flash config's linear_attn_config {head_dim,
           num_heads, short_conv_kernel_size, gate_lower_bound},
           mla_use_nope and first_k_dense_replace, which transformers'
           save_pretrained (the fixture) does not write: they are added to
           text_config with the values the fixture's own fields give (the
           engine reads linear_attn_config too: the model is unchanged);
  A_log    the fixture's KDA A_log are 0 (exp(0) = 1 exactly): replaced by
           normal(0, 0.5) float32 values (stored F32, as transformers keeps
           them), so the converter's ssm_a = -exp(A_log) is a real rewrite.

Used by tests/vectors/gguf-glm5/make.py and tests/py/test_gguf_glm5.py."""
import json, os, sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_ssm_fixtures import read_st, write_st  # noqa: E402

PRESET = "glm5-next-tiny"


def prepare(d):
    """Edits the fixture directory d (made with --seed 1) in place."""
    cp = os.path.join(d, "config.json")
    cfg = json.load(open(cp))
    t = cfg["text_config"]
    t["linear_attn_config"] = {"head_dim": t["linear_head_dim"], "num_heads": t["linear_num_heads"],
                               "short_conv_kernel_size": t["linear_conv_kernel_dim"],
                               "gate_lower_bound": t["linear_lower_bound"]}
    t["mla_use_nope"] = True
    t["first_k_dense_replace"] = t["mlp_layer_types"].index("sparse")
    with open(cp + ".tmp", "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    os.replace(cp + ".tmp", cp)
    st = os.path.join(d, "model.safetensors")
    meta, ts = read_st(st)
    rng = np.random.default_rng(7)
    for k in sorted(ts):
        if k.endswith(".A_log"):
            dt, shape, _ = ts[k]
            ts[k] = ("F32", shape, rng.normal(0.0, 0.5, size=shape).astype(np.float32).tobytes())
    write_st(st, meta, ts)
