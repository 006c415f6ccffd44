#!/usr/bin/env python3
"""glm5_next's KDA forget gate without linear_lower_bound (issue 20): the
softplus path -exp(A_log) * softplus(f_b(f_a(x)) + dt_bias), softplus = x
above 20 else log(1 + exp(x)), torch.log = MKL vsLn (fd_mkl_logf) -- the
gate kimi_linear uses (ops/kda.h fd_op_kda_gate_softplus_decay).  It was
refused by name (bad_config) before.

usage: test_glm5_softplus.py BINARY

- glm5-next-tiny with text_config.linear_lower_bound null captures (exit 0),
  to a digest other than the safe-gate model's, the same with 1 and 2
  threads and both schedules
- with torch + transformers (FIDELITY_TORCH_PYTHON, else skipped with a line
  saying so): Glm5NextForConditionalGeneration loads that checkpoint clean
  and our final hidden states agree with its (compare_hidden.py: top-1
  agreement >= 0.999; not required bit-exact: glm5_next uses MKL's Z0
  exp / sqrt, the kernels of its Intel-host goldens, which this AMD host's
  torch 2.15 does not run; docs/MODEL-DEEPSEEK.md §9)
"""
import json, os, shutil, subprocess, sys, tempfile

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
WORK = tempfile.mkdtemp(prefix="fd-g5sp-")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
passed = failed = 0


def case(name, ok, detail=""):
    global passed, failed
    passed += bool(ok)
    failed += not ok
    print(("ok   %s" if ok else "FAIL %s " + str(detail)[:800]) % name)


def run(*args):
    p = subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def capture(model, out, threads=1, schedule=None):
    a = ["capture", "--model", model, "--panel", os.path.join(FX, "panel"), "--out", out, "--role", "root",
         "--lane", "other", "--windows", "2", "--threads", str(threads), "--gemm-order", "pair",
         "--dataset-id", "fidelity--g5sp.root", "--dataset-name", "g5sp", "--no-sanity-check"]
    return run(*(a + (["--schedule", schedule] if schedule else [])))


def digest(ds):
    return json.load(open(os.path.join(ds, "capture", "manifest.json")))["capture_content_digest"]


try:
    FX = os.path.join(WORK, "fx")
    rc, out, err = run("fixture", "--preset", "glm5-next-tiny", "--seed", "1", "--out", FX)
    case("glm5-next-tiny fixture", rc == 0, err)
    SP = os.path.join(WORK, "sp")
    shutil.copytree(FX, SP, ignore=shutil.ignore_patterns("panel"))
    cfg = json.load(open(os.path.join(SP, "config.json")))
    case("the fixture sets linear_lower_bound", cfg["text_config"].get("linear_lower_bound") == -5.0, cfg["text_config"])
    cfg["text_config"]["linear_lower_bound"] = None
    json.dump(cfg, open(os.path.join(SP, "config.json"), "w"), indent=2)
    rc, out, err = capture(FX, os.path.join(WORK, "c-lower"))
    case("capture with the safe gate", rc == 0, err)
    rc, out, err = capture(SP, os.path.join(WORK, "c-sp1"))
    case("linear_lower_bound null: captures (the softplus gate; was REFUSED [bad_config])", rc == 0, out + err)
    if rc == 0:
        base = digest(os.path.join(WORK, "c-sp1"))
        case("... a digest other than the safe gate's", base != digest(os.path.join(WORK, "c-lower")), base)
        for tag, extra in (("t2", {"threads": 2}), ("lo", {"schedule": "layer-outer"}), ("wo", {"schedule": "window-outer"})):
            rc, out, err = capture(SP, os.path.join(WORK, "c-sp-" + tag), **extra)
            case("... the same digest with %s" % extra, rc == 0 and digest(os.path.join(WORK, "c-sp-" + tag)) == base,
                 out + err)

    py = os.environ.get("FIDELITY_TORCH_PYTHON", sys.executable)
    has = subprocess.run([py, "-c", "import torch, transformers; transformers.Glm5NextForConditionalGeneration"],
                         capture_output=True).returncode == 0
    if not has:
        print("skipped (torch not installed): transformers' softplus gate vs ours")
    else:
        shutil.copytree(os.path.join(FX, "panel"), os.path.join(SP, "panel"))
        env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_BF16", FIDELITY_PARITY_ATTN="eager",
                   FIDELITY_PARITY_WINDOWS="2")
        gold = os.path.join(WORK, "golden")
        p = subprocess.run([py, os.path.join(ROOT, "tests", "parity", "transformers_hidden_next.py"), SP,
                            os.path.join(SP, "panel"), gold], capture_output=True, text=True, env=env)
        info = json.load(open(os.path.join(gold, "golden.json"))) if p.returncode == 0 else {}
        rep = info.get("loading_info", {})
        case("transformers loads the softplus-gate checkpoint clean",
             p.returncode == 0 and not any(rep.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")),
             p.stdout[-800:] + p.stderr[-800:])
        if p.returncode == 0:
            p = subprocess.run([py, os.path.join(ROOT, "tests", "parity", "compare_hidden.py"),
                                os.path.join(WORK, "c-sp1"), gold, "--min-top1", "0.999"], capture_output=True, text=True)
            case("our final hidden states agree with transformers' (top-1 >= 0.999)", p.returncode == 0,
                 p.stdout[-800:] + p.stderr[-400:])
            print(p.stdout.strip()[-600:])
finally:
    shutil.rmtree(WORK, ignore_errors=True)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
