#!/usr/bin/env python3
"""Peak RSS of a capture of each packed format (docs/QUANT-FORMATS.md, "Peak
RSS of packed captures"; issue 19's bound 1.2 x (checkpoint + activations)).

usage: python3 bench/packed_rss.py BINARY WORKDIR FORMAT[,FORMAT...]
  FORMAT: gptq3 gptq4 awq ct4 ctfp8 ctnvfp4 mlx4 momixed fp8block nvfp4

The small preset (seed 1), one window of 64 tokens; activations = the bf16
capture's peak minus its checkpoint; each checkpoint encoded by
tests/py/packed_ref.py (bench/packed_rss_enc.py) in a child process (Linux
carries a forking process's peak into the exec'd binary's ru_maxrss).
"""
import json, os, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "py"))
sys.path.insert(0, HERE)
BIN = os.path.abspath(sys.argv[1]); W = sys.argv[2]; fmts = sys.argv[3].split(",")
def run(*a):
    p = subprocess.run([BIN] + [str(x) for x in a], capture_output=True, text=True)
    if p.returncode: print(p.stdout, p.stderr); sys.exit(1)
def cap(model, out, role, mem):
    run("capture", "--model", model, "--panel", W + "/sp", "--out", out, "--role", role, "--lane", "other",
        "--dataset-id", "t." + os.path.basename(out), "--dataset-name", "t", "--cold-run", "c1", "--run-name", "c1",
        "--memory-report", mem, *([]))
    return json.load(open(mem))
if not os.path.isdir(W + "/s"):
    run("fixture", "--preset", "small", "--seed", 1, "--out", W + "/s")
    json.dump([1] + [4 + (i * 37) % 256 for i in range(63)], open(W + "/w0.json", "w"))
    run("panel", "build", "--out", W + "/sp", "--vocab", 260, W + "/w0.json")
base = cap(W + "/s", W + "/root-%d" % os.getpid(), "root", W + "/mem-bf16.json")
json.dump(json.load(open(W + "/root-%d/fidelity-dataset.json" % os.getpid()))["scope"], open(W + "/scope.json", "w"))
act = max(0, base["peak_rss_bytes"] - base["checkpoint_bytes"])
print("bf16: peak %.1f MB checkpoint %.1f MB act %.1f MB" % (base["peak_rss_bytes"]/1e6, base["checkpoint_bytes"]/1e6, act/1e6))
ENC = {
 "gptq3": "import packed_rss_enc as enc; enc.gptq3(S, D)",
 "gptq4": "import packed_rss_enc as enc; enc.gptq3(S, D, 4, 128, False)",
 "ct4": "pr.ct_dir(S, D, pr.ct_config([(['Linear'], {'num_bits': 4, 'strategy': 'group', 'group_size': 32})]), {'group_0': 'BF16'})",
 "mlx4": "pr.mlx_dir(S, D, 4, 64)",
 "awq": "import packed_rss_enc as enc; enc.awq(S, D)",
 "ctfp8": "import packed_rss_enc as enc; enc.ctfp8(S, D)",
 "ctnvfp4": "import packed_rss_enc as enc; enc.ctnvfp4(S, D)",
 "momixed": "import packed_rss_enc as enc; enc.momixed(S, D)",
 "fp8block": "import subprocess; subprocess.check_call([%r, 'quantize', '--format', 'fp8-block', '--src', S, '--dst', D])" % BIN,
 "nvfp4": "import subprocess; subprocess.check_call([%r, 'quantize', '--format', 'nvfp4', '--src', S, '--dst', D])" % BIN,
}
for f in fmts:
    D = W + "/q-" + f
    if not os.path.isdir(D):
        p = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r); sys.path.insert(0, %r); import packed_ref as pr; S=%r; D=%r; %s" % (os.path.join(HERE, '..', 'tests', 'py'), HERE, W + "/s", D, ENC[f])], capture_output=True, text=True)
        if p.returncode: print(p.stderr); continue
    m = cap(D, W + "/c-%s-%d" % (f, os.getpid()), "quant", W + "/mem-%s.json" % f)
    b = 1.2 * (m["checkpoint_bytes"] + act)
    print("%s: peak %.1f MB checkpoint %.1f MB bound %.1f MB %s" % (f, m["peak_rss_bytes"]/1e6, m["checkpoint_bytes"]/1e6, b/1e6, "within" if m["peak_rss_bytes"] <= b else "OVER %.1f%%" % (100*(m["peak_rss_bytes"]/b-1))))
