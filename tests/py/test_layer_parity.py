#!/usr/bin/env python3
"""issue 17 item 4: the per-layer teacher-forced parity harness
(tests/parity/layer_parity.py) on its architectures (glm_moe_dsa, glm5_next,
qwen3_5, qwen3_5_moe, minimax_m2, qwen4_exp, deepseek_v4), checkpoints written by
transformers' save_pretrained; and the harness's own test: one of our dumped
values moved by 64 ulps must make it fail.
usage: test_layer_parity.py BINARY
Needs torch + transformers (FIDELITY_ORACLE_PYTHON or this interpreter);
prints `skipped (torch not installed)` without them."""
import os, subprocess, sys

B = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "..", "parity", "layer_parity.py")
PY = os.environ.get("FIDELITY_ORACLE_PYTHON", sys.executable)
fails = 0


def check(name, cond, detail=""):
    global fails
    print(("ok  " if cond else "FAIL ") + name + ("" if cond else ": " + detail[-3000:]))
    fails += not cond


probe = subprocess.run([PY, "-c", "import torch, transformers; transformers.GlmMoeDsaForCausalLM; "
                        "transformers.Glm5NextForConditionalGeneration; transformers.MiniMaxM2ForCausalLM; "
                        "transformers.Qwen3_5ForCausalLM; transformers.Qwen4ExpForCausalLM; transformers.DeepseekV4ForCausalLM"],
                       capture_output=True)
if probe.returncode:
    print("skipped (torch not installed): the per-layer parity harness needs torch + transformers with "
          "glm_moe_dsa, glm5_next, minimax_m2 and qwen3_5 (pip, or FIDELITY_ORACLE_PYTHON)")
    sys.exit(0)

r = subprocess.run([PY, "-W", "ignore", HARNESS, B], capture_output=True, text=True)
out = r.stdout + r.stderr
check("layer parity: glm_moe_dsa, glm5_next, minimax_m2, qwen3_5, qwen3_5_moe and qwen4_exp, every stage of every layer within its bound",
      r.returncode == 0 and all("== %s: " % a in out for a in ("glm_moe_dsa", "glm5_next", "minimax_m2", "qwen3_5", "qwen3_5_moe",
                                                               "qwen4_exp", "deepseek_v4"))
      and "every bound holds" in out, out)
check("layer parity: selections compared (DSA keys, MoE experts)",
      out.count("dsa_sel ") >= 6 and out.count("experts(top-k) ") >= 8, out)
check("layer parity: qwen4_exp's QSA selections compared on both indexed layers", out.count("qsa(blocks) ") == 2, out)
check("layer parity: deepseek_v4's indexer selections compared on both CSA layers", out.count("indexer(top-k) ") == 2, out)
# the harness can fail: q_b of layer 1 (a Linear) moved by 64 ulps on one element
r = subprocess.run([PY, "-W", "ignore", HARNESS, B, "--arch", "glm_moe_dsa", "--perturb", "q_b.L1"],
                   capture_output=True, text=True)
out = r.stdout + r.stderr
check("layer parity: a 64-ulp fault in q_b.L1 violates the linear bound (exit 1)",
      r.returncode == 1 and "VIOLATED" in out and "FAIL (" in out, out)
r = subprocess.run([PY, "-W", "ignore", HARNESS, B, "--arch", "glm5_next", "--perturb", "attn_in.L2"],
                   capture_output=True, text=True)
out = r.stdout + r.stderr
check("layer parity: a 64-ulp fault in glm5_next attn_in.L2 violates the reduce bound (exit 1)",
      r.returncode == 1 and "VIOLATED" in out, out)
r = subprocess.run([PY, "-W", "ignore", HARNESS, B, "--arch", "minimax_m2", "--perturb", "q_norm.L1"],
                   capture_output=True, text=True)
out = r.stdout + r.stderr
check("layer parity: a 64-ulp fault in minimax_m2 q_norm.L1 (the whole-projection norm) violates the reduce bound (exit 1)",
      r.returncode == 1 and "VIOLATED" in out, out)
# the other direction: transformers' own input of layer L into our layer L (FIDELITY_FORWARD_INJECT)
r = subprocess.run([PY, "-W", "ignore", HARNESS, B, "--arch", "glm_moe_dsa", "--arch", "minimax_m2", "--inject"],
                   capture_output=True, text=True)
out = r.stdout + r.stderr
check("layer parity --inject: transformers' input of every layer into ours, each layer's output within its bound "
      "(glm_moe_dsa 4 layers, minimax_m2 2)", r.returncode == 0 and out.count("inject:layer_out ") == 4
      and out.count("inject:final ") == 2 and "every bound holds" in out, out)
r = subprocess.run([PY, "-W", "ignore", HARNESS, B, "--arch", "qwen3_5", "--perturb", "gdn_o.L2"],
                   capture_output=True, text=True)
out = r.stdout + r.stderr
check("layer parity: a 64-ulp fault in qwen3_5 gdn_o.L2 (the gated delta net's normed output) violates its bound (exit 1)",
      r.returncode == 1 and "VIOLATED" in out, out)
r = subprocess.run([PY, "-W", "ignore", HARNESS, B, "--arch", "qwen4_exp", "--perturb", "attn_resid.L1"],
                   capture_output=True, text=True)
out = r.stdout + r.stderr
check("layer parity: a 64-ulp fault in qwen4_exp attn_resid.L1 (a stream written back) violates the exact bound (exit 1)",
      r.returncode == 1 and "VIOLATED" in out, out)
r = subprocess.run([PY, "-W", "ignore", HARNESS, B, "--arch", "deepseek_v4", "--perturb", "attn_mid.L1"],
                   capture_output=True, text=True)
out = r.stdout + r.stderr
check("layer parity: a 64-ulp fault in deepseek_v4 attn_mid.L1 (the mHC streams after attention) violates its bound (exit 1)",
      r.returncode == 1 and "VIOLATED" in out, out)
sys.exit(1 if fails else 0)
