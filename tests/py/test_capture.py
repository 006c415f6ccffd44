#!/usr/bin/env python3
"""fidelity capture: the C glm_moe_dsa forward over a panel -> sealed dataset.

usage: test_capture.py BINARY

Tiny fixture (seed 1): two root cold runs (verify OK, equal
capture_content_digest, different dataset_sha256, self-compare exactly 0),
int8 / int4 routed-expert candidates (KL(int8) < KL(int4), both > 0),
finite hidden states, and the refusals (token id >= vocab, existing --out,
unknown model_type).  Parity with transformers is not tested here (no torch).
"""
import glob, json, math, os, shutil, struct, subprocess, sys, tempfile, time

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
WORK = tempfile.mkdtemp(prefix="fd-capture-")
passed = failed = 0


def case(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, str(detail)[:600]))


def run(*args):
    p = subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def W(*p):
    return os.path.join(WORK, *p)


def manifest(ds):
    return json.load(open(os.path.join(ds, "fidelity-dataset.json")))


def capture(model, out, role="root", cold="c1", scope=None, extra=(), panel=None):
    a = ["capture", "--model", model, "--panel", panel or W("m", "panel"), "--out", out, "--role", role,
         "--lane", "other", "--dataset-id", "test." + os.path.basename(out), "--dataset-name",
         "test " + os.path.basename(out), "--cold-run", cold, "--run-name", cold]
    if scope:
        a += ["--scope-file", scope]
    return run(*(a + list(extra)))


def kl_mean(d):
    return json.load(open(os.path.join(d, "comparison-receipt.json")))["kl"]["mean"]


def bf16_files_finite(ds):
    n = 0
    for f in glob.glob(os.path.join(ds, "**", "*.safetensors"), recursive=True):
        data = open(f, "rb").read()
        hl = struct.unpack("<Q", data[:8])[0]
        hdr = json.loads(data[8:8 + hl])
        if "hidden_states" not in hdr:
            continue
        raw = data[8 + hl:]
        vals = struct.unpack("<%dH" % (len(raw) // 2), raw)
        if any((v & 0x7f80) == 0x7f80 for v in vals):
            return False, f
        if all(v & 0x7fff == 0 for v in vals):
            return False, f + " all zero"
        n += 1
    return n > 0, n


try:
    rc, out, err = run("fixture", "--preset", "tiny", "--seed", 1, "--out", W("m"))
    case("tiny fixture", rc == 0, err)

    t0 = time.time()
    rc1, o1, e1 = capture(W("m"), W("r1"), cold="cold-run-1")
    t1 = time.time()
    rc2, o2, e2 = capture(W("m"), W("r2"), cold="cold-run-2")
    print("timing: one tiny root capture (4 windows x 64 tokens) %.2fs" % (t1 - t0))
    case("root capture x2 exit 0", rc1 == 0 and rc2 == 0, o1 + e1 + o2 + e2)
    for d in ("r1", "r2"):
        rc, out, err = run("verify", W(d))
        case("verify %s" % d, rc == 0, out + err)
    m1, m2 = manifest(W("r1")), manifest(W("r2"))
    case("equal capture_content_digest",
         m1["capture"]["capture_content_digest"] == m2["capture"]["capture_content_digest"])
    case("different dataset_sha256", m1["dataset_sha256"] != m2["dataset_sha256"])
    ok, det = bf16_files_finite(W("r1"))
    case("hidden states finite (and not all zero)", ok, det)

    rc, out, err = run("compare", "--reference", W("r1"), "--candidate", W("r2"), "--self-compare",
                       "--force-compute", "--out", W("sc"))
    case("self-compare exit 0", rc == 0, out + err)
    if rc == 0:
        r = json.load(open(W("sc", "comparison-receipt.json")))["kl"]
        case("self-compare exact zeros", r["mean"] == 0.0 and r["max"] == 0.0, r)

    # the forward's products split columns among threads and rows into
    # blocks only: no thread count or kernel path may move a bit
    want = m1["capture"]["capture_content_digest"]
    for extra in (["--threads", 1], ["--threads", 2], ["--threads", 3], ["--threads", 7],
                  ["--kernel", "scalar", "--threads", 2], ["--kernel", "avx2"], ["--kernel", "avx512f"],
                  ["--kernel", "avx512bf16", "--threads", 3], ["--kernel", "amx"], ["--kernel", "amx", "--threads", 1],
                  ["--gemm-order", "tile", "--kernel", "scalar"]):
        d = W("inv-" + "-".join(str(x) for x in extra).replace("--", ""))
        rc, out, err = capture(W("m"), d, cold="cold-run-1", extra=extra)
        if rc == 3 and "not supported on this CPU" in out:
            print("skip %s: kernel path not supported on this CPU" % extra)
            continue
        got = manifest(d)["capture"]["capture_content_digest"] if rc == 0 else None
        case("capture %s: same capture_content_digest" % " ".join(map(str, extra)), got == want, out + err)
    rc, out, err = capture(W("m"), W("inv-bad"), extra=["--kernel", "nonesuch"])
    case("unknown --kernel refused", rc == 3 and not os.path.exists(W("inv-bad")), out + err)
    # the pair order (--gemm-order pair) is its own computation: the same
    # bits for every thread count and path, other bits than the tile order
    pair = None
    for extra in (["--threads", 1], ["--threads", 2, "--kernel", "scalar"], ["--kernel", "avx2"],
                  ["--kernel", "avx512f", "--threads", 3], ["--kernel", "avx512bf16"]):
        d = W("pair-" + "-".join(str(x) for x in extra).replace("--", ""))
        rc, out, err = capture(W("m"), d, cold="cold-run-1", extra=["--gemm-order", "pair"] + extra)
        if rc == 3 and "not supported on this CPU" in out:
            print("skip pair %s: kernel path not supported on this CPU" % extra)
            continue
        got = manifest(d)["capture"]["capture_content_digest"] if rc == 0 else None
        pair = pair or got
        case("pair order %s: one capture_content_digest, not the tile one" % " ".join(map(str, extra)),
             got is not None and got == pair and got != want, out + err)
        if rc == 0:
            ver = open(os.path.join(d, "runtime", "capture-runtime.json")).read()
            case("pair order recorded in the runtime receipt", "in the pair order" in ver, "")
    tile_ver = open(os.path.join(W("inv-threads-1"), "runtime", "capture-runtime.json")).read()
    case("tile order recorded in the runtime receipt", "in the tile order" in tile_ver, "")
    rc, out, err = capture(W("m"), W("pair-amx"), extra=["--gemm-order", "pair", "--kernel", "amx"])
    case("--gemm-order pair --kernel amx refused (AMX computes the tile order only)",
         rc == 3 and not os.path.exists(W("pair-amx")), out + err)
    rc, out, err = capture(W("m"), W("order-bad"), extra=["--gemm-order", "fastest"])
    case("unknown --gemm-order refused", rc == 4 and not os.path.exists(W("order-bad")), out + err)

    kls = {}
    for bits in (8, 4):
        q, s = W("q%d" % bits), W("scope%d.json" % bits)
        rc, out, err = run("quantize", "--src", W("m"), "--dst", q, "--match", "mlp.experts", "--bits", bits,
                           "--emit-scope", s)
        case("quantize int%d" % bits, rc == 0, out + err)
        rc, out, err = capture(q, W("c%d" % bits), role="quant", scope=s)
        case("capture int%d as quant" % bits, rc == 0, out + err)
        rc, out, err = run("verify", W("c%d" % bits))
        case("verify int%d" % bits, rc == 0, out + err)
        sc = manifest(W("c%d" % bits)).get("scope", {})
        case("int%d scope digest names the quantized experts" % bits,
             "moe.experts=quantized:int%d@%d" % (bits, bits) in json.dumps(sc), sc)
        rc, out, err = run("compare", "--reference", W("r1"), "--candidate", W("c%d" % bits), "--out",
                           W("cmp%d" % bits))
        case("compare root vs int%d exit 0/2" % bits, rc in (0, 2), out + err)
        if rc in (0, 2):
            kls[bits] = kl_mean(W("cmp%d" % bits))
    if len(kls) == 2:
        print("mean KL: int8 %.6e  int4 %.6e" % (kls[8], kls[4]))
        case("mean KL int8 < int4, both > 0", 0 < kls[8] < kls[4], kls)
        case("mean KL finite", all(math.isfinite(v) for v in kls.values()), kls)

    # refusals
    toks = W("big.json")
    json.dump([[1] + [5000 + i for i in range(15)]], open(toks, "w"))
    rc, out, err = run("panel", "build", "--out", W("bigpanel"), "--vocab", 100000, toks)
    case("panel build (vocab 100000)", rc == 0, out + err)
    rc, out, err = capture(W("m"), W("bad-vocab"), panel=W("bigpanel"))
    case("token id >= model vocab refused (exit 3)", rc == 3 and not os.path.exists(W("bad-vocab")), out + err)
    rc, out, err = capture(W("m"), W("r1"), cold="again")
    case("existing --out without --force refused (exit 3)", rc == 3 and "destination_exists" in out, out + err)
    rc, out, err = capture(W("m"), W("r1"), cold="cold-run-1", extra=["--force"])
    case("existing --out with --force replaced", rc == 0 and run("verify", W("r1"))[0] == 0, out + err)
    shutil.copytree(W("m"), W("mx"))
    cfg = json.load(open(W("mx", "config.json")))
    cfg["model_type"] = "llama_not_glm"
    json.dump(cfg, open(W("mx", "config.json"), "w"))
    rc, out, err = capture(W("mx"), W("bad-type"))
    case("unknown model_type refused (exit 3)", rc == 3 and ("model_type" in (out + err).lower() or "unsupported" in out), out + err)
    rc, out, err = capture(W("m"), W("noscope"), role="quant")
    case("quant without --scope-file: usage exit 4", rc == 4, out + err)
    rc, out, err = run("capture", "--model", W("m"))
    case("missing options: usage exit 4", rc == 4, out + err)
finally:
    shutil.rmtree(WORK, ignore_errors=True)

print("capture: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
