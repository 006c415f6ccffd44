#!/usr/bin/env python3
"""Writes the GGUFs of tests/vectors/gguf-qwen4/ with llama.cpp's own converter
(convert_hf_to_gguf.py + gguf-py from the llama-cpp-python 0.3.36 sdist:
conversion/qwen4exp.py Qwen4ExpTextModel, without --no-mtp, which it refuses:
its no_mtp = True drops any MTP block itself): the evidence tests/py/test_gguf_qwen4.py checks qwen4exp GGUF
capture against (CI has no converter and no torch).  The one change to the
converter is about the tokenizer only, as in tests/vectors/gguf-ssm/make.py:
an unlisted pre-tokenizer hash answers "default".

usage (made on AMD EPYC Zen 4, AVX-512, torch 2.15 CPU, transformers 5.25):
  pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d /tmp/lcp
  tar xzf /tmp/lcp/llama_cpp_python-0.3.36.tar.gz -C /tmp/lcp
  python3 tests/vectors/gguf-qwen4/make.py \
      /tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp build/fidelity OUTDIR
(the python needs torch, numpy, safetensors; it writes
qwen4-exp-tiny.{bf16,q8_0}.gguf from the checkpoint of
tests/py/gguf_qwen4_fixtures.py and prints SHA256SUMS's lines).  Committed:
`xz -9e` of every file.
"""
import hashlib, os, subprocess, sys, tempfile

LLAMA_CPP, BIN, OUT = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "py"))
from gguf_qwen4_fixtures import PRESET, prepare  # noqa: E402


def convert(model_dir, outtype, outfile):
    code = r'''
import sys
sys.argv = ["convert_hf_to_gguf.py", %r, "--outtype", %r, "--outfile", %r]
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
orig_hp = base.ModelBase.load_hparams
def load_hparams(dir_model, is_mistral_format):
    # the converter's own fallback (config.json as written): AutoConfig of
    # transformers 5.25 spells the QSA layers indexed_attention, for which
    # Qwen4ExpTextModel writes attention.compress_ratios 0
    import transformers
    keep = transformers.AutoConfig.from_pretrained
    def refuse(*a, **k):
        raise ValueError("config.json as written")
    transformers.AutoConfig.from_pretrained = refuse
    try:
        return orig_hp(dir_model, is_mistral_format)
    finally:
        transformers.AutoConfig.from_pretrained = keep
base.ModelBase.load_hparams = staticmethod(load_hparams)
C.main()
''' % (model_dir, outtype, outfile, LLAMA_CPP)
    p = subprocess.run([sys.executable, "-c", code], cwd=LLAMA_CPP, capture_output=True, text=True)
    if p.returncode:
        sys.exit("converter failed on %s %s:\n%s" % (model_dir, outtype, p.stderr[-3000:]))


def main():
    os.makedirs(OUT, exist_ok=True)
    d = os.path.join(tempfile.mkdtemp(prefix="fd-gguf-qwen4-"), PRESET)
    subprocess.run([BIN, "fixture", "--preset", PRESET, "--seed", "1", "--out", d], check=True, stdout=subprocess.DEVNULL)
    prepare(d)
    for t in ("bf16", "q8_0"):
        f = os.path.join(OUT, "%s.%s.gguf" % (PRESET, t))
        convert(d, t, f)
        print("%s  %s" % (hashlib.sha256(open(f, "rb").read()).hexdigest(), os.path.basename(f)))


if __name__ == "__main__":
    main()
