#!/usr/bin/env python3
"""Writes the deepseek4 GGUFs of tests/vectors/gguf-dsv4/ with llama.cpp's own
converter (convert_hf_to_gguf.py DeepseekV4Model + gguf-py, from the
llama-cpp-python 0.3.36 sdist), from the deepseek-v4-tiny fixture (seed 1)
requantized to DeepSeek V4's release layout by tests/py/dsv4_release.py:

- deepseek-v4-tiny.fp4experts.gguf: routed experts packed fp4 + E8M0 (the
  converter repacks them to MXFP4, losslessly), every other Linear BF16 (the
  converter keeps BF16 / F32 as the source has them): the GGUF holds exactly
  the release checkpoint's values;
- deepseek-v4-tiny.release.gguf: the full release layout (FP8 e4m3 Linears
  with E8M0 128x128 scales too): the converter dequantizes them and forces
  Q8_0 (tensor_force_quant), which is not lossless.

The checkpoints' config.json carry, beside ours, the keys the converter reads
(the hub's legacy spellings: compress_ratios = the per-layer rates, 0 for
sliding; num_hash_layers; rope_scaling = the compress yarn): dsv4_release.py
hub_config=True. The converter patch is about the tokenizer only (as
tests/vectors/gguf-arch/make.py): our 260-entry byte-level BPE is unknown to
get_vocab_base_pre(), answered "default".

usage (made on AMD EPYC Zen 4, torch 2.15 CPU, transformers 5.25):
  PYTHONPATH=/tmp/pylib /tmp/venv-engine/bin/python tests/vectors/gguf-dsv4/make.py \\
      /tmp/ggufcap/llama_cpp_python-0.3.36/vendor/llama.cpp build/fidelity tests/vectors/gguf-dsv4
then `xz -9e` of each .gguf; SHA256SUMS lists the uncompressed files.
"""
import hashlib, os, subprocess, sys, tempfile

LLAMA_CPP, BIN, OUT = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "py"))
import dsv4_release  # noqa: E402


def convert(model_dir, outfile):
    code = r'''
import sys
sys.argv = ["convert_hf_to_gguf.py", %r, "--outtype", "bf16", "--outfile", %r]
sys.path.insert(0, %r)
import convert_hf_to_gguf as C
from conversion import base
orig = base.TextModel.get_vocab_base_pre
def pre(self, tokenizer):
    try:
        return orig(self, tokenizer)
    except NotImplementedError:
        return "default"   # the fixture tokenizer: not in llama.cpp's list
base.TextModel.get_vocab_base_pre = pre
C.main()
''' % (model_dir, outfile, LLAMA_CPP)
    p = subprocess.run([sys.executable, "-c", code], cwd=LLAMA_CPP, capture_output=True, text=True)
    if p.returncode:
        sys.exit("converter failed on %s:\n%s" % (model_dir, p.stderr[-3000:]))


def main():
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="fd-gguf-dsv4-")
    fx = os.path.join(tmp, "fx")
    subprocess.run([BIN, "fixture", "--preset", "deepseek-v4-tiny", "--seed", "1", "--out", fx], check=True,
                   stdout=subprocess.DEVNULL)
    for name, fp8 in (("fp4experts", False), ("release", True)):
        d = os.path.join(tmp, name)
        dsv4_release.convert(fx, d, None, fp8_linears=fp8, hub_config=True)
        f = os.path.join(OUT, "deepseek-v4-tiny.%s.gguf" % name)
        convert(d, f)
        print("%s  %s" % (hashlib.sha256(open(f, "rb").read()).hexdigest(), os.path.basename(f)))


if __name__ == "__main__":
    main()
