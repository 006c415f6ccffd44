#!/usr/bin/env python3
"""Writes the GGUFs of tests/vectors/gguf-arch/ with llama.cpp's own converter
(convert_hf_to_gguf.py + gguf-py from the llama-cpp-python 0.3.36 sdist): the
evidence tests/py/test_gguf_arch.py checks the glm-dsa / llama / qwen3 /
qwen3moe / deepseek2 / deepseek32 / minimax-m2 name maps against, and
tests/py/test_gguf_write.py our GGUF writer (CI has no converter and no torch).

The changes to the converter, both about the tokenizer only (tensors and
hyperparameters are untouched): our fixtures' tokenizer (a 260-entry
byte-level BPE) is unknown to get_vocab_base_pre(), which raises
NotImplementedError for any unlisted pre-tokenizer hash: the patch answers
"default" then; DeepseekV32Model.set_vocab asserts the tokenizer's
add_bos_token, which transformers 5.25's PreTrainedTokenizerFast does not
expose: it calls _set_vocab_gpt2() (what it does after the assert) directly;
GlmMoeDsaModel.set_vocab (_set_vocab_glm) looks up GLM's own special tokens
([gMASK], ...), which the fixture tokenizer lacks: _set_vocab_gpt2() too.

usage (made on AMD EPYC Zen 4, torch 2.15 CPU, transformers 5.25):
  pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d /tmp/lcp
  tar xzf /tmp/lcp/llama_cpp_python-0.3.36.tar.gz -C /tmp/lcp
  pip install --target /tmp/pylib sentencepiece     # the llama vocab path imports it
  PYTHONPATH=/tmp/pylib python3 tests/vectors/gguf-arch/make.py \
      /tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp build/fidelity OUTDIR
(the python needs torch, transformers, numpy, safetensors; it writes
PRESET.{bf16,q8_0}.gguf for each preset of tests/py/gguf_arch_fixtures.py,
fixtures at seed 1 with that file's edits, and prints SHA256SUMS's lines).
Committed: `xz -9e` of every file but deepseek-v32-tiny's two (over the size
budget; tests/py/test_gguf_arch.py reads them from FIDELITY_GGUF_ARCH_DIR).
The output is deterministic: a second run reproduced the committed files
byte for byte.
"""
import hashlib, os, subprocess, sys, tempfile

LLAMA_CPP, BIN, OUT = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "py"))
from gguf_arch_fixtures import PRESETS, prepare  # noqa: E402
OUTTYPES = ["bf16", "q8_0"]


def convert(model_dir, outtype, outfile):
    code = r'''
import sys, logging
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
from conversion import deepseek, glm
deepseek.DeepseekV32Model.set_vocab = lambda self: self._set_vocab_gpt2()
glm.GlmMoeDsaModel.set_vocab = lambda self: self._set_vocab_gpt2()  # _set_vocab_glm wants GLM's [gMASK] token
C.main()
''' % (model_dir, outtype, outfile, LLAMA_CPP)
    p = subprocess.run([sys.executable, "-c", code], cwd=LLAMA_CPP, capture_output=True, text=True)
    if p.returncode:
        sys.exit("converter failed on %s %s:\n%s" % (model_dir, outtype, p.stderr[-3000:]))


def main():
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="fd-gguf-arch-")
    for p in PRESETS:
        d = os.path.join(tmp, p)
        subprocess.run([BIN, "fixture", "--preset", p, "--seed", "1", "--out", d], check=True, stdout=subprocess.DEVNULL)
        prepare(p, d)
        for t in OUTTYPES:
            f = os.path.join(OUT, "%s.%s.gguf" % (p, t))
            convert(d, t, f)
            print("%s  %s" % (hashlib.sha256(open(f, "rb").read()).hexdigest(), os.path.basename(f)))


if __name__ == "__main__":
    main()
