#!/usr/bin/env python3
"""Writes the seed corpus of fuzz/fuzz_gguf.c (fuzz/corpus/gguf/): small
valid GGUF files from gguf_ref.gguf_file, every value type, v2 and v3,
alignment 64, a split file.  usage (from the repository root):
python3 tests/py/gguf_fuzz_corpus.py"""
import os, sys, struct
os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, "tests/py")
import gguf_ref as g
from gguf_ref import *
V = {v[0]: v for v in g.read_vectors("tests/vectors/gguf/dequant.bin")}
q8 = V["Q8_0"][1][:34]; nl = V["IQ4_NL"][1][:18]; q4k = V["Q4_K"][1][:144]; f32 = struct.pack("<4f", 1, 2, 3, 4)
KV = [("general.architecture", STRING, "glm-dsa")]
files = {
 "minimal.gguf": g.gguf_file([], []),
 "one-q8.gguf": g.gguf_file(KV, [("a.weight", [32, 1], 8, q8)]),
 "types.gguf": g.gguf_file(KV + [("t.u8", U8, 1), ("t.i64", I64, -3), ("t.f64", F64, 0.5), ("t.b", BOOL, 1),
                                  ("tok", ARRAY, (STRING, ["a", "bc", ""])), ("s", ARRAY, (F32, [1.0, 2.0]))],
                          [("n.weight", [4], 0, f32), ("a.weight", [32, 1], 20, nl), ("k.weight", [256, 1], 12, q4k)]),
 "align64-v2.gguf": g.gguf_file(KV, [("a.weight", [32, 1], 8, q8), ("n.weight", [4], 0, f32)], alignment=64, version=2),
 "split-00001-of-00002.gguf": g.gguf_file(KV + [("split.no", U16, 0), ("split.count", U16, 2), ("split.tensors.count", I32, 2)],
                                          [("a.weight", [32, 1], 8, q8)]),
}
for n, d in files.items():
    open("fuzz/corpus/gguf/" + n, "wb").write(d)
    print(n, len(d))
