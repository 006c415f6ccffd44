"""The checkpoint the GGUFs of tests/vectors/gguf-kimi/ were converted from:
`fidelity fixture --preset kimi-linear-tiny --seed 1`, then two
deterministic edits:

  config   llama.cpp's converter (KimiLinearModel.set_gguf_parameters) reads
           the hub config's linear_attn_config {full_attn_layers, kda_layers,
           head_dim, num_heads, short_conv_kernel_size} and
           first_k_dense_replace, which transformers' save_pretrained (the
           fixture) does not write: they are added with the values the
           fixture's own layer_types / linear_* / mlp_layer_types give (the
           engine reads layer_types first: the model is unchanged);
  names    save_pretrained writes the dense MLP under block_sparse_moe.
           (layer 0: block_sparse_moe.{gate,up,down}_proj), which the
           converter cannot map ("Can not map tensor"): renamed to mlp.*, the
           hub checkpoint's spelling (the engine reads both).

The fixture's KDA A_log (BF16, log of uniform [1, 16) values, as
transformers' init draws them) are kept: the converter's ssm_a = -exp(A_log)
is a real rewrite.

Used by tests/vectors/gguf-kimi/make.py and tests/py/test_gguf_kimi.py."""
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_ssm_fixtures import read_st, write_st  # noqa: E402

PRESET = "kimi-linear-tiny"


def prepare(d):
    """Edits the fixture directory d (made with --seed 1) in place."""
    cp = os.path.join(d, "config.json")
    cfg = json.load(open(cp))
    lt = cfg["layer_types"]
    cfg["linear_attn_config"] = {
        "full_attn_layers": [i + 1 for i, t in enumerate(lt) if t == "full_attention"],
        "kda_layers": [i + 1 for i, t in enumerate(lt) if t == "linear_attention"],
        "head_dim": cfg["linear_head_dim"], "num_heads": cfg["linear_num_heads"],
        "short_conv_kernel_size": cfg["linear_conv_kernel_dim"]}
    cfg["first_k_dense_replace"] = cfg["mlp_layer_types"].index("sparse")
    with open(cp + ".tmp", "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    os.replace(cp + ".tmp", cp)
    st = os.path.join(d, "model.safetensors")
    meta, ts = read_st(st)
    out = {}
    for k in sorted(ts):
        n = k
        if ".block_sparse_moe." in k and k.endswith(("_proj.weight",)) and ".experts." not in k and ".shared_experts." not in k:
            n = k.replace(".block_sparse_moe.", ".mlp.")
        out[n] = ts[k]
    write_st(st, meta, out)
