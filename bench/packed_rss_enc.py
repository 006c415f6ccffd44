"""Encoders of bench/packed_rss.py (GPTQ 3/4-bit, AWQ, compressed-tensors FP8 / NVFP4, mixed ModelOpt)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'py'))
import packed_ref as pr, dequant_ref as dq, os
def gptq3(S, D, bits=3, group=32, desc=True):
    t = dq.read_safetensors(os.path.join(S, "model.safetensors"))
    fits = lambda n: n.startswith("model.layers.") and pr.is_linear(n) and t[n][1].shape[0] % 32 == 0 and t[n][1].shape[1] % 32 == 0
    rel = sorted({n.split(".", 3)[3][:-len(".weight")] for n in t if fits(n)})
    qc = {"quant_method": "gptq", "bits": bits, "group_size": group, "desc_act": desc, "sym": False, "checkpoint_format": "gptq",
          "lm_head": False, "modules_in_block_to_quantize": [rel], "pack_dtype": "int32"}
    excl = lambda n: not (n.startswith("model.layers.") and n.split(".", 3)[3][:-len(".weight")] in rel)
    del t
    pr.gq_dir(S, D, qc, "F16", excl, perm_seed=1 if desc else None)
def awq(S, D):
    pr.gq_dir(S, D, {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm",
                     "modules_to_not_convert": ["weights_proj"]}, "F16", lambda n: n == "lm_head.weight" or "weights_proj" in n)
def ctfp8(S, D):
    pr.ct_dir(S, D, pr.ct_config([(["Linear"], {"num_bits": 8, "type": "float", "strategy": "tensor", "format": "float-quantized"})],
              ignore=["lm_head", "re:.*indexer\\.weights_proj$"], fmt="float-quantized"), {"group_0": "F32"})
def ctnvfp4(S, D):
    pr.ct_config  # experts only, as test_packed2
    pr.ct_dir(S, D, pr.ct_config([(["re:.*mlp\\.experts\\."], {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "format": "nvfp4-pack-quantized"})], fmt="nvfp4-pack-quantized"), {"group_0": None})
def momixed(S, D):
    import test_packed_mixed as b
    b.mo_mixed_build(S, D, "hf")
