#!/usr/bin/env python3
"""Writes the GGUFs of tests/vectors/gguf-quant/: the fixtures of
tests/py/gguf_quant_fixtures.py converted at BF16 by llama.cpp's own converter
(tests/vectors/gguf-arch/make.py's convert(), same tokenizer-only patches),
then quantized by llama.cpp's llama-quantize (no imatrix, one thread).  See
README.md for how llama-quantize was built and the exact command.

usage: python3 tests/vectors/gguf-quant/make.py \
           LLAMA_CPP_SRC build/fidelity LLAMA_QUANTIZE OUTDIR
(the python needs torch, transformers, numpy, safetensors, gguf-py; it writes
FIXTURE.TYPE.gguf and prints SHA256SUMS's lines, then each file's ggml types).
"""
import collections, hashlib, importlib.util, os, subprocess, sys, tempfile

SRC, BIN, QUANTIZE, OUT = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]), \
    os.path.abspath(sys.argv[4])
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "py"))
from gguf_quant_fixtures import make_fixture  # noqa: E402

# (fixture, llama-quantize's type names)
JOBS = [("tiny", ["Q4_K_M", "IQ4_XS"]),
        ("llama-k", ["Q4_K_M", "Q5_K_S", "Q6_K", "Q2_K", "IQ4_XS", "IQ3_S", "TQ1_0"])]


def arch_convert():
    """tests/vectors/gguf-arch/make.py's convert(model_dir, outtype, outfile)"""
    argv, sys.argv = sys.argv, [sys.argv[0], SRC, BIN, OUT]
    spec = importlib.util.spec_from_file_location("gguf_arch_make", os.path.join(HERE, "..", "gguf-arch", "make.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    sys.argv = argv
    return m.convert


def main():
    sys.path.insert(0, os.path.join(SRC, "gguf-py"))
    import gguf
    convert = arch_convert()
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="fd-gguf-quant-")
    sums, kinds = [], []
    for fx, types in JOBS:
        d = os.path.join(tmp, fx)
        make_fixture(BIN, fx, d)
        bf16 = os.path.join(tmp, fx + ".bf16.gguf")
        convert(d, "bf16", bf16)
        for t in types:
            f = os.path.join(OUT, "%s.%s.gguf" % (fx, t.lower()))
            subprocess.run([QUANTIZE, bf16, f, t, "1"], check=True, capture_output=True)
            sums.append("%s  %s" % (hashlib.sha256(open(f, "rb").read()).hexdigest(), os.path.basename(f)))
            c = collections.Counter(x.tensor_type.name for x in gguf.GGUFReader(f).tensors)
            kinds.append("%s: %s" % (os.path.basename(f), " ".join("%s=%d" % kv for kv in sorted(c.items()))))
    print("\n".join(sums + [""] + kinds))


if __name__ == "__main__":
    main()
