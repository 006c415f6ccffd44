#!/usr/bin/env python3
"""The modelopt decode oracle of test_packed_mixed.py (needs torch and
nvidia-modelopt: never needed to build or run the tool).

usage: mo_mixed_oracle.py MODEL OUT.safetensors

Decodes every quantized layer of a ModelOpt MIXED_PRECISION checkpoint with
modelopt's own code, to bf16: NVFP4 layers NVFP4QTensor(...).dequantize(
dtype=torch.bfloat16, scale=weight_scale, double_scale=weight_scale_2,
block_sizes={-1: 16}), FP8 layers FP8QTensor(...).dequantize(
dtype=torch.bfloat16, scale=weight_scale), and writes name -> BF16 bits.
Checked with nvidia-modelopt 0.47.0 (pip install --no-deps plus its
requests/pydantic/rich/tqdm/nvidia-ml-py/pulp/regex/ninja), torch 2.15 CPU.
"""
import os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np
import torch
import dequant_ref as dq
from modelopt.torch.quantization.qtensor import FP8QTensor, NVFP4QTensor

torch.set_num_threads(1)
t = dq.read_safetensors(os.path.join(sys.argv[1], "model.safetensors"))
out = {}
for name, (dtype, arr) in sorted(t.items()):
    b = name[:-len(".weight")]
    if not name.endswith(".weight") or dtype not in ("U8", "F8_E4M3"):
        continue
    sc = torch.from_numpy(np.ascontiguousarray(t[b + ".weight_scale"][1]))
    if dtype == "U8":
        n, half = arr.shape
        q = NVFP4QTensor(torch.Size([n, 2 * half]), torch.bfloat16, torch.from_numpy(np.ascontiguousarray(arr)))
        s2 = torch.from_numpy(np.ascontiguousarray(t[b + ".weight_scale_2"][1]))
        d = q.dequantize(dtype=torch.bfloat16, scale=sc.view(torch.float8_e4m3fn), double_scale=s2,
                         block_sizes={-1: 16})
    else:
        q = FP8QTensor(torch.Size(arr.shape), torch.bfloat16,
                       torch.from_numpy(np.ascontiguousarray(arr)).view(torch.float8_e4m3fn))
        d = q.dequantize(dtype=torch.bfloat16, scale=sc)
    out[name] = ("BF16", d.contiguous().view(torch.int16).numpy().view(np.uint16))
dq.write_safetensors(sys.argv[2], out)
print("decoded %d layers" % len(out))
