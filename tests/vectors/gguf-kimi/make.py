#!/usr/bin/env python3
"""Writes the GGUFs of tests/vectors/gguf-kimi/ with llama.cpp's own converter
(convert_hf_to_gguf.py + gguf-py from the llama-cpp-python 0.3.36 sdist:
conversion/kimi_linear.py KimiLinearModel, general.architecture kimi-linear):
the evidence tests/py/test_gguf_kimi.py checks kimi_linear GGUF capture
against (CI has no converter and no torch).  The one change to the converter
is about the tokenizer only, as in tests/vectors/gguf-arch/make.py: an
unlisted pre-tokenizer hash answers "default" (KimiLinearModel.set_vocab
then takes its _set_vocab_gpt2() branch).

usage (made on AMD EPYC Zen 4, AVX-512, torch 2.15 CPU, transformers 5.25):
  pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d /tmp/lcp
  tar xzf /tmp/lcp/llama_cpp_python-0.3.36.tar.gz -C /tmp/lcp
  python3 tests/vectors/gguf-kimi/make.py \
      /tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp build/fidelity OUTDIR
(the python needs torch, numpy, safetensors; it writes kimi-linear-tiny.{bf16,
q8_0}.gguf from `fidelity fixture --preset kimi-linear-tiny --seed 1` with
tests/py/gguf_kimi_fixtures.py's edits, and prints SHA256SUMS's lines).
Committed: `xz -9e` of every file.
"""
import hashlib, os, subprocess, sys, tempfile

LLAMA_CPP, BIN, OUT = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "py"))
from gguf_kimi_fixtures import PRESET, prepare  # noqa: E402


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
C.main()
''' % (model_dir, outtype, outfile, LLAMA_CPP)
    p = subprocess.run([sys.executable, "-c", code], cwd=LLAMA_CPP, capture_output=True, text=True)
    if p.returncode:
        sys.exit("converter failed on %s %s:\n%s" % (model_dir, outtype, p.stderr[-3000:]))


def main():
    os.makedirs(OUT, exist_ok=True)
    d = os.path.join(tempfile.mkdtemp(prefix="fd-gguf-kimi-"), PRESET)
    subprocess.run([BIN, "fixture", "--preset", PRESET, "--seed", "1", "--out", d], check=True, stdout=subprocess.DEVNULL)
    prepare(d)
    for t in ("bf16", "q8_0"):
        f = os.path.join(OUT, "%s.%s.gguf" % (PRESET, t))
        convert(d, t, f)
        print("%s  %s" % (hashlib.sha256(open(f, "rb").read()).hexdigest(), os.path.basename(f)))


if __name__ == "__main__":
    main()
