#!/usr/bin/env python3
"""glm5_next (issue 8): the flash-0.1b-next fixture and the demo flow on it.

usage: test_next.py BINARY

- `fixture --preset flash-0.1b-next`: 223 tensors, about 84.4 M parameters,
  config model_type glm5_next; `inspect-model` accepts it (0 missing /
  unexpected / mis-shaped); a tensor removed or mis-shaped is refused
- transformers (when installed) loads it with an empty loading report;
  without torch/transformers that one case is skipped with a line saying so
- demo flow on window 0: root capture with 1, 2 and 3 threads (equal
  capture_content_digest), RTN int8 and int4 on the 48 routed-expert
  matrices only, captures, compare: KL(int8) < KL(int4), both > 0
"""
import json, os, shutil, subprocess, sys, tempfile

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
WORK = tempfile.mkdtemp(prefix="fd-next-")
passed = failed = 0


def case(name, ok, detail=""):
    global passed, failed
    passed += bool(ok)
    failed += not ok
    print(("ok   %s" if ok else "FAIL %s " + str(detail)[:600]) % name)


def run(*args):
    p = subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def capture(model, out, role, threads, scope=None):
    a = ["capture", "--model", model, "--panel", os.path.join(FX, "panel"), "--out", out, "--role", role,
         "--lane", "other", "--windows", "1", "--threads", str(threads), "--dataset-id", "fidelity--next." + role,
         "--dataset-name", "next", "--no-sanity-check"]
    return run(*(a + (["--scope-file", scope] if scope else [])))


def digest(ds):
    return json.load(open(os.path.join(ds, "capture", "manifest.json")))["capture_content_digest"]


FX = os.path.join(WORK, "fx")
rc, out, err = run("fixture", "--preset", "flash-0.1b-next", "--seed", "1", "--out", FX)
case("fixture writes", rc == 0, err)
case("223 tensors", "tensors: 223" in out, out)
params = int(out.split("parameters: ")[1].split()[0]) if "parameters: " in out else 0
case("about 84.4 M parameters", 84.3e6 < params < 84.5e6, params)
cfg = json.load(open(os.path.join(FX, "config.json")))
case("config model_type glm5_next", cfg.get("model_type") == "glm5_next" and
     cfg["text_config"]["layer_types"].count("linear_attention") == 4, cfg.get("model_type"))
rc, out, err = run("inspect-model", "--json", FX)
case("inspect-model accepts", rc == 0, err)

# a broken copy: one tensor renamed -> missing + unexpected, refused
BAD = os.path.join(WORK, "bad")
shutil.copytree(FX, BAD, ignore=shutil.ignore_patterns("panel"))
p = os.path.join(BAD, "model.safetensors")
b = bytearray(open(p, "rb").read())
i = b.find(b"hc_attn_fn")
b[i:i + 10] = b"hc_attn_FN"
open(p, "wb").write(bytes(b))
rc, out, err = run("inspect-model", BAD)
case("renamed tensor refused", rc == 3 and "checkpoint_mismatch" in out + err and "hc_attn_fn" in out + err, out + err)

try:
    import torch  # noqa: F401
    from transformers import Glm5NextForConditionalGeneration
except Exception:
    print("skip transformers load check: torch/transformers (glm5_next) not installed")
else:
    _, info = Glm5NextForConditionalGeneration.from_pretrained(FX, dtype=torch.bfloat16, output_loading_info=True)
    case("transformers loads it with an empty report", not any(info[x] for x in info), info)

R1, R2 = os.path.join(WORK, "r1"), os.path.join(WORK, "r2")
rc, out, err = capture(FX, R1, "root", 1)
case("root capture", rc == 0, err)
rc, out, err = capture(FX, R2, "root", 2)
case("same digest with 1 and 2 threads", rc == 0 and digest(R1) == digest(R2), err)
R3 = os.path.join(WORK, "r3")
rc, out, err = capture(FX, R3, "root", 3)
case("same digest with 3 threads", rc == 0 and digest(R1) == digest(R3), err)
kl = {}
for bits in (8, 4):
    q, s, c = (os.path.join(WORK, x % bits) for x in ("int%d", "s%d.json", "c%d"))
    rc, out, err = run("quantize", "--src", FX, "--dst", q, "--bits", bits, "--match", ".mlp.experts.", "--emit-scope", s)
    rep = json.loads(out) if rc == 0 else {}
    case("int%d: the 48 routed-expert matrices only" % bits,
         rep.get("tensors_quantized") == 48 and rep.get("tensors_untouched") == 175, err or rep)
    rc, out, err = capture(q, c, "quant", 2, s)
    case("int%d capture" % bits, rc == 0, err)
    cmp = os.path.join(WORK, "cmp%d" % bits)
    rc, out, err = run("compare", "--reference", R1, "--candidate", c, "--out", cmp, "--no-bootstrap")
    case("int%d compare" % bits, rc == 0, err)
    if rc == 0:
        kl[bits] = json.load(open(os.path.join(cmp, "comparison-receipt.json")))["kl"]["mean"]
case("KL(int8) < KL(int4), both > 0", len(kl) == 2 and 0 < kl[8] < kl[4], kl)
print("KL int8 %s int4 %s" % (kl.get(8), kl.get(4)))

shutil.rmtree(WORK, ignore_errors=True)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
