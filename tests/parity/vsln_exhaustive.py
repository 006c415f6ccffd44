#!/usr/bin/env python3
"""fd_mkl_logf / fd_mkl_expf_ex / fd_mkl_sqrtf_ex (src/kernels/mkl_vml.c) against
torch.log / exp / sqrt on EVERY fp32 bit pattern (2^32 inputs, 256 chunks of
2^24; out of CI: needs torch + numpy and a C compiler; ~5 min on 2 shared
cores).  On an fp32 CPU tensor these are MKL's vsLn / vsExp / vsSqrt (on the
AMD Zen 4 host that wrote this, with torch 2.15: the EXHAynn kernels).
Compares raw bits, NaN payloads and signs included.

usage: /tmp/venv-engine/bin/python tests/parity/vsln_exhaustive.py [log|exp|sqrt] [--positive]
  (default log) --positive: only 0x00000000 .. 0x7fffffff (2^31 inputs)
Prints the count of differing inputs per class and the first few; exit 1 on
any difference."""
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

torch.set_num_threads(1)
fn = next((a for a in sys.argv[1:] if a in ("log", "exp", "sqrt")), "log")
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
tmp = tempfile.mkdtemp(prefix="vsln-")
wrap = os.path.join(tmp, "w.c")
with open(wrap, "w") as f:
    f.write('#include "kernels/mkl_vml.h"\n#include <stdint.h>\n#include <string.h>\n'
            'void lnrange(uint32_t start, uint32_t n, uint32_t *out) {\n'
            '  for (uint32_t i = 0; i < n; i++) { uint32_t u = start + i; float x, y;\n'
            '    memcpy(&x, &u, 4); y = %s(x); memcpy(out + i, &y, 4); } }\n'
            % {"log": "fd_mkl_logf", "exp": "fd_mkl_expf_ex", "sqrt": "fd_mkl_sqrtf_ex"}[fn])
so = os.path.join(tmp, "ln.so")
subprocess.check_call(["cc", "-std=c17", "-D_GNU_SOURCE", "-ffp-contract=off", "-O2", "-fPIC", "-shared",
                       "-I" + os.path.join(root, "src"), "-o", so, wrap,
                       os.path.join(root, "src", "kernels", "mkl_vml.c"), "-lm"])
lib = ctypes.CDLL(so)
lib.lnrange.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p]
CH = 1 << 24
nchunks = 128 if "--positive" in sys.argv else 256
ours = np.empty(CH, dtype=np.uint32)
bad = {}
first = []
for c in range(nchunks):
    start = c * CH
    xs = np.arange(start, start + CH, dtype=np.uint64).astype(np.uint32)
    ref = getattr(torch.from_numpy(xs.view(np.float32)), fn)().numpy().view(np.uint32)
    lib.lnrange(start, CH, ours.ctypes.data)
    d = np.nonzero(ref != ours)[0]
    if len(d):
        e = (start >> 23) & 0xff
        cls = "sign" if start >> 31 else ("subnormal/zero" if e == 0 else ("inf/nan" if e == 255 else "normal"))
        bad[cls] = bad.get(cls, 0) + len(d)
        for i in d[:max(0, 8 - len(first))]:
            first.append((int(xs[i]), int(ref[i]), int(ours[i])))
for cls, n in sorted(bad.items()):
    print("differ %-15s %d" % (cls, n))
for x, r, o in first:
    print("  x=0x%08x torch=0x%08x ours=0x%08x" % (x, r, o))
total = sum(bad.values())
print("%s exhaustive (%s): %d of %d inputs differ" % (fn, "positive half" if nchunks == 128 else "all 2^32",
                                                       total, nchunks * CH))
sys.exit(1 if total else 0)
