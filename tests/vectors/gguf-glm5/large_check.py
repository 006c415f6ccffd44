"""Outside CI (the files are 60-170 MB): glm5-next at flash-0.1b-next size.
Usage: python3 large_check.py LLAMA_CPP BIN WORK, where WORK holds
  flash-0.1b-next/   `fidelity fixture --preset flash-0.1b-next --seed 1`, edited by gguf_glm5_fixtures.prepare
  fln.bf16.gguf      make.py's convert(WORK/flash-0.1b-next, "bf16", ...) (llama.cpp's converter)
  fln.q4_k_m.gguf    llama-quantize fln.bf16.gguf fln.q4_k_m.gguf Q4_K_M 2
  fln.iq4_xs.gguf    llama-quantize fln.bf16.gguf fln.iq4_xs.gguf IQ4_XS 2
Prints each capture's digest and peak RSS: BF16 = safetensors; Q4_K_M / IQ4_XS =
the safetensors of gguf-py's dequantized weights (test_gguf_glm5.py's builder)."""
import sys, os, json, subprocess, shutil
LLAMA_CPP, BIN, WORK = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "py")); sys.path.insert(0, os.path.join(LLAMA_CPP, "gguf-py"))
import numpy as np, gguf, gguf.quants
from gguf_ssm_fixtures import read_st, write_st, bf16_rne
src = open(os.path.join(HERE, "..", "..", "py", "test_gguf_glm5.py")).read()
i = src.index('P = "model.language_model.layers.%s."'); j = src.index("types, n = dequantized_checkpoint(Q8")
exec(src[i:j])
D = os.path.join(WORK, "flash-0.1b-next")
def cap(model, out, role):
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([BIN, "capture", "--model", model, "--panel", D + "/panel", "--out", out, "--role", role, "--lane", "other",
                        "--dataset-id", "t." + os.path.basename(out), "--dataset-name", "t", "--cold-run", "c1", "--run-name", "c1",
                        "--windows", "1", "--memory-report", out + ".mem.json"], capture_output=True, text=True)
    if p.returncode: print(p.stdout[-500:], p.stderr[-800:]); return None
    m = json.load(open(out + "/fidelity-dataset.json")); mem = json.load(open(out + ".mem.json"))
    return m["capture"]["capture_content_digest"], mem["peak_rss_bytes"], mem["checkpoint_bytes"]
r_st = cap(D, WORK + "/c-st", "root"); r_bf = cap(WORK + "/fln.bf16.gguf", WORK + "/c-bf", "root")
print("safetensors", r_st); print("converter BF16 GGUF", r_bf, "EQUAL" if r_st and r_bf and r_st[0] == r_bf[0] else "DIFF")
for q in ("q4_k_m", "iq4_xs"):
    g = WORK + "/fln.%s.gguf" % q
    shutil.rmtree(WORK + "/dq-" + q, ignore_errors=True)
    types, n = dequantized_checkpoint(g, D, WORK + "/dq-" + q)
    a = cap(g, WORK + "/c-" + q, "quant"); b = cap(WORK + "/dq-" + q, WORK + "/c-dq-" + q, "root")
    print(q, sorted(types), n, "gguf", a, "dequantized", b, "EQUAL" if a and b and a[0] == b[0] else "DIFF")
