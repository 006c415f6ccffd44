#!/usr/bin/env python3
"""compressed-tensors itself on a checkpoint written by `fidelity quantize
--format compressed-tensors` (issue 19, test_quant_writers.py runs it).

usage: ct_writer_oracle.py CHECKPOINT_DIR OUT.safetensors

For every X.weight_packed of the checkpoint: the package's
calculate_qparams (min / max of each bf16 group of the source weight, read
from CHECKPOINT_DIR/../m) must give our weight_scale bits, its quantize +
pack_to_int32 our weight_packed words, and
PackedQuantizationCompressor.decompress decodes the file; the decoded bf16
bits are written to OUT as NAME (the test compares them with our reader's).
Needs torch and compressed-tensors (test oracle only), e.g.
  PYTHONPATH=/tmp/ct-pkgs /tmp/venv-engine/bin/python tests/py/ct_writer_oracle.py q m out.safetensors
(torch 2.15 CPU, compressed-tensors 0.20.1; this host: AMD EPYC Zen 4).
"""
import json, os, sys

import numpy as np
import torch
from compressed_tensors.compressors.pack_quantized.base import PackedQuantizationCompressor
from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32
from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
from compressed_tensors.quantization.lifecycle.forward import quantize
from compressed_tensors.quantization.utils.helpers import calculate_qparams

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dequant_ref as dq  # noqa: E402
import packed_ref  # noqa: E402,F401  (registers the integer dtypes with dequant_ref)

torch.set_num_threads(1)
q_dir, src_dir, out = sys.argv[1], sys.argv[2], sys.argv[3]
qc = json.load(open(os.path.join(q_dir, "config.json")))["quantization_config"]
w = qc["config_groups"]["group_0"]["weights"]
args = QuantizationArgs(num_bits=w["num_bits"], type=w["type"], symmetric=w["symmetric"], strategy=w["strategy"],
                        group_size=w["group_size"])
scheme = QuantizationScheme(targets=["Linear"], weights=args)
t = dq.read_safetensors(os.path.join(q_dir, "model.safetensors"))
src = dq.read_safetensors(os.path.join(src_dir, "model.safetensors"))


def bf16(bits):
    return torch.from_numpy(bits.astype(np.uint16).view(np.int16).copy()).view(torch.bfloat16)


res, bad = {}, []
for name in sorted(t):
    if not name.endswith(".weight_packed"):
        continue
    b = name[:-len(".weight_packed")]
    x = bf16(src[b + ".weight"][1])
    n, k = x.shape
    g = w["group_size"]
    xg = x.reshape(n, k // g, g)
    scale, zp = calculate_qparams(xg.amin(-1), xg.amax(-1), args)
    if not np.array_equal(scale.view(torch.int16).numpy().view(np.uint16), t[b + ".weight_scale"][1]):
        bad.append(b + ": calculate_qparams scale differs")
    qv = quantize(x, scale, zp, args)
    packed = pack_to_int32(qv.to(torch.int8), w["num_bits"]).numpy()
    if not np.array_equal(packed, t[name][1]):
        bad.append(b + ": quantize + pack_to_int32 differs")
    sd = {"weight_packed": torch.from_numpy(t[name][1].copy()), "weight_scale": bf16(t[b + ".weight_scale"][1]),
          "weight_shape": torch.from_numpy(t[b + ".weight_shape"][1].copy())}
    dec = PackedQuantizationCompressor.decompress(sd, scheme)["weight"].to(torch.bfloat16)
    res[b] = ("BF16", dec.contiguous().view(torch.int16).numpy().view(np.uint16))
dq.write_safetensors(out, res)
print("compressed-tensors: %d weights, %d mismatches" % (len(res), len(bad)))
for x in bad[:10]:
    print("  " + x)
sys.exit(1 if bad or not res else 0)
