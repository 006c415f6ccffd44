#!/usr/bin/env python3
"""Interop both ways, with stdlib-only oracles: a dataset written by the
Python-stdlib reference writer verifies under our binary; ours passes the
stdlib re-implementation of the digest/seal/checksums checks and
`sha256sum -c`; the published vector verifies --manifest-only and refuses
after any leaf value changes.  usage: test_interop.py BINARY"""
import copy, json, os, shutil, signal, subprocess, sys, tempfile, time
from dsutil import load, run, refusal_code, seal, canonical, sha

BIN = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
VECTOR = os.path.join(HERE, "..", "vectors", "fidelity-dataset.root-glm53-bf16.json")
WORK = tempfile.mkdtemp(prefix="fd-interop-")
results = []

def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + detail))

def py(*args):
    p = subprocess.run([sys.executable] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr

# 1. theirs -> ours
for seed, recs, toks in ((0, 3, 16), (5, 1, 2), (9, 6, 40)):
    d = os.path.join(WORK, "py-%d" % seed)
    rc, out = py(os.path.join(HERE, "ref_writer.py"), d, "--records", str(recs), "--tokens", str(toks),
                 "--seed", str(seed))
    check("ref_writer seed %d built" % seed, rc == 0, out)
    rc, out = run(BIN, "verify", d)
    check("python-written dataset (seed %d) verifies under ours" % seed, rc == 0, out)
    rc, out = run(BIN, "validate", "--strict", d)
    check("python-written dataset (seed %d) validates --strict clean" % seed, rc == 0 and " 0 error(s), 0 warning(s)" in out, out)

# 2. ours -> theirs
for seed, args in ((1, []), (2, ["--records", "5", "--tokens", "33", "--hidden", "24", "--vocab", "1000"]),
                   (3, ["--records", "1", "--tokens", "2", "--hidden", "1", "--vocab", "1"])):
    d = os.path.join(WORK, "c-%d" % seed)
    rc, out = run(BIN, "write-fixture", "--out", d, "--seed", str(seed), *args)
    check("write-fixture seed %d" % seed, rc == 0, out)
    rc, out = py(os.path.join(HERE, "ref_check.py"), d)
    check("our dataset (seed %d) passes the stdlib re-implementation" % seed, rc == 0 and out.startswith("OK "), out)
    p = subprocess.run(["sha256sum", "-c", "--quiet", "checksums.txt"], cwd=d, capture_output=True, text=True)
    check("sha256sum -c checksums.txt on ours (seed %d)" % seed, p.returncode == 0, p.stdout + p.stderr)

# 3. the writer is deterministic given fixed time, and refuses to clobber
a, b = os.path.join(WORK, "det-a"), os.path.join(WORK, "det-b")
for d in (a, b):
    run(BIN, "write-fixture", "--out", d, "--seed", "4", "--fixed-time")
same = all(open(os.path.join(a, r), "rb").read() == open(os.path.join(b, r), "rb").read()
           for r in ["fidelity-dataset.json", "checksums.txt", "capture/manifest.json", "README.md"])
check("two fixed-time writes are byte-identical", same)
rc, out = run(BIN, "write-fixture", "--out", a, "--seed", "5")
check("existing destination refused without --force", rc == 3 and refusal_code(out) == "destination_exists", out)

# 4. an interrupted write never leaves a directory that looks sealed
d = os.path.join(WORK, "killed")
for delay in (0.02, 0.08, 0.2):
    shutil.rmtree(d, ignore_errors=True)
    p = subprocess.Popen([BIN, "write-fixture", "--out", d, "--records", "400", "--tokens", "128", "--hidden", "256"],
                         stdout=subprocess.DEVNULL)
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.wait()
    ok = not os.path.exists(d) or run(BIN, "verify", d)[0] == 0
    check("killed after %.2fs: no half-written dataset under the real name" % delay, ok)

# 5. the vector: manifest-only verify, and refusal after any leaf value change
rc, out = run(BIN, "verify", "--manifest-only", VECTOR)
check("vector verifies --manifest-only", rc == 0 and "fb9594c6b3646726d0fb637c26833e8c6a3bb078c8fee1463df3ebdcce8021f2" in out, out)
vec = load(VECTOR)

def leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, path + (k,))
    elif isinstance(node, list) and node:
        for i, v in enumerate(node):
            yield from leaves(v, path + (i,))
    else:
        yield path

def mutated(value):
    if isinstance(value, bool): return not value
    if isinstance(value, int): return value + 1
    if isinstance(value, float): return value * 2 + 1
    if isinstance(value, str): return value + "x"
    if value is None: return 0
    return ["x"] if isinstance(value, list) else {"x": 1}

paths = [p for p in leaves(vec) if p != ("dataset_sha256",)]
bad = []
for p in paths:
    doc = copy.deepcopy(vec)
    node = doc
    for k in p[:-1]:
        node = node[k]
    node[p[-1]] = mutated(node[p[-1]])
    f = os.path.join(WORK, "vec.json")
    with open(f, "w") as fh:
        json.dump(doc, fh)
    rc, out = run(BIN, "verify", "--manifest-only", f)
    # verify refuses with the first error in the reference order (the schema
    # layer runs before the seal); the seal itself must fail for every change
    rc2, out2 = run(BIN, "validate", "--manifest-only", f)
    if rc != 3 or refusal_code(out) not in ("seal_failed", "schema_invalid", "bad_schema", "path_escape") or \
            ("[seal_failed/" not in out2 and refusal_code(out) != "bad_schema"):
        bad.append((p, rc, out, out2))
check("every one of %d leaf mutations of the vector is refused" % len(paths), not bad, repr(bad[:3]))
# a value change with everything else kept must be exactly seal_failed
doc = copy.deepcopy(vec); doc["created_utc"] = "2026-08-29T00:00:01Z"
f = os.path.join(WORK, "vec.json"); json.dump(doc, open(f, "w"))
rc, out = run(BIN, "verify", "--manifest-only", f)
check("changed created_utc -> seal_failed", rc == 3 and refusal_code(out) == "seal_failed", out)

# 6. validate --json writes a sealed report that Python can re-seal
rep = os.path.join(WORK, "report.json")
rc, out = run(BIN, "validate", os.path.join(WORK, "c-1"), "--json", rep)
r = load(rep)
body = dict(r); body["receipt_sha256"] = ""
check("validate --json report is sealed (Python recomputes its seal)",
      rc == 0 and r["receipt_sha256"] == sha(canonical(body)) and r["structural_status"] == "sealed", out)

# 7. describe formats
for fmt in ("text", "json", "markdown"):
    rc, out = run(BIN, "describe", VECTOR, "--format", fmt)
    check("describe --format %s" % fmt, rc == 0 and "fidelity--malaiwah.glm53-flash-bf16.final25.hidden" in out, out)
rc, out = run(BIN, "verify")
check("verify without DATASET is a usage error (exit 4)", rc == 4, out)

shutil.rmtree(WORK, ignore_errors=True)
passed = sum(results)
print("interop: %d passed, %d failed" % (passed, len(results) - passed))
sys.exit(0 if passed == len(results) else 1)
