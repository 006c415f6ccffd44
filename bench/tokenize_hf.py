#!/usr/bin/env python3
"""HF `tokenizers` side of bench/tokenize.sh: encodes FILE once, single
thread (RAYON_NUM_THREADS=1, one sequence: `encode`, not a batch), and
prints MB/s of the encode call alone, plus the ids' sha256 so the two
sides can be seen to agree.  usage: tokenize_hf.py TOKENIZER_JSON FILE"""
import hashlib, struct, sys, time
import tokenizers

tok = tokenizers.Tokenizer.from_file(sys.argv[1])
text = open(sys.argv[2], encoding="utf-8", newline="").read()
n = len(text.encode())
t0 = time.perf_counter()
ids = tok.encode(text, add_special_tokens=False).ids
dt = time.perf_counter() - t0
print("hf tokenizers %s: %d bytes -> %d ids in %.3f s: %.2f MB/s  ids sha256 %s" % (
    tokenizers.__version__, n, len(ids), dt, n / 1e6 / dt, hashlib.sha256(struct.pack("<%di" % len(ids), *ids)).hexdigest()[:16]))
