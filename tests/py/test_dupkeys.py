#!/usr/bin/env python3
"""Duplicate JSON object keys (issue 23; docs/FORMAT-IMPL.md "Refused JSON").

Python's json keeps the last of two equal keys; a reader that keeps the first
sees another value under the same seal. Every document a forger adds a
duplicate to, re-sealed the way the Python tool computes seals (so its view,
and so the seal, is unchanged), is refused by name (bad_json, exit 3):
the dataset manifest (bad_schema "unparseable", the validator's code for a
manifest that does not load), a sub-manifest (capture/manifest.json, every digest
recomputed), a comparison receipt, a model's config.json, a safetensors
header, a token panel; a duplicate nested deep inside is found too.
usage: test_dupkeys.py BINARY"""
import json, os, shutil, struct, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dsutil import load, seal, canonical, sha, reseal, refusal_code

BIN = os.path.abspath(sys.argv[1])
WORK = tempfile.mkdtemp(prefix="fd-dupkeys-")
SAN = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
results = []


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-72s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[-1200:]))
    return ok


def fid(*args):
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True, cwd=WORK, timeout=300)
    out = p.stdout + p.stderr
    if any(m in out for m in SAN):
        case("sanitizer-clean: " + " ".join(args)[:60], False, out[-2000:])
    return p.returncode, out


def W(*p):
    return os.path.join(WORK, *p)


def add_duplicate(path, key, forged, anchor):
    """Inserts '"key": forged,' right after the text anchor (an object's
    opening), so the forged value comes FIRST and Python's last-wins view is
    the original document."""
    text = open(path, encoding="utf-8").read()
    i = text.index(anchor) + len(anchor)
    new = text[:i] + json.dumps(key) + ": " + json.dumps(forged) + ", " + text[i:]
    assert json.loads(new) == json.loads(text), "Python's view must be unchanged"
    open(path, "w", encoding="utf-8").write(new)


rc, out = fid("write-fixture", "--out", W("ds"), "--records", "2", "--tokens", "16", "--hidden", "8", "--vocab", "40",
              "--seed", "3", "--fixed-time")
assert rc == 0, out
rc, out = fid("write-fixture", "--out", W("cand"), "--records", "2", "--tokens", "16", "--hidden", "8", "--vocab", "40",
              "--seed", "3", "--noise-seed", "2", "--perturb", "0.05", "--role", "quant", "--fixed-time")
assert rc == 0, out
rc, out = fid("verify", W("ds"))
case("the untouched dataset verifies", rc == 0, out)

# 1. the dataset manifest: a duplicate "name" inside "dataset", the forged value first
shutil.copytree(W("ds"), W("m1"))
mp = W("m1", "fidelity-dataset.json")
before = load(mp)
add_duplicate(mp, "name", "a much better model", '"dataset": {')
after = load(mp)
py_seal_ok = seal(dict(after), "dataset_sha256")["dataset_sha256"] == before["dataset_sha256"]
case("Python's json reads the forged manifest as the original (seal still valid in its view)", py_seal_ok)
rc, out = fid("verify", W("m1"))
case("verify: a duplicate key in fidelity-dataset.json is refused by name (bad_schema 'unparseable', exit 3)",
     rc == 3 and refusal_code(out) == "bad_schema" and "duplicate object key 'name'" in out, out[-600:])
rc, out = fid("describe", W("m1"))
case("describe refuses it too (exit 3)", rc == 3 and "duplicate object key 'name'" in out, out[-400:])

# 2. a sub-manifest: capture/manifest.json with a duplicate, every digest and seal recomputed
shutil.copytree(W("ds"), W("m2"))
cm = W("m2", "capture", "manifest.json")
add_duplicate(cm, "records", [], '{')
reseal(W("m2"))
rc, out = fid("verify", W("m2"))
case("verify: a duplicate key in capture/manifest.json (digests recomputed) is refused by name",
     rc == 3 and "duplicate object key 'records'" in out, out[-600:])

# 3. a comparison receipt: a duplicate nested in "kl", Python's receipt_sha256 unchanged
rc, out = fid("compare", "--reference", W("ds"), "--candidate", W("cand"), "--out", W("cmp"), "--no-bootstrap")
assert rc in (0, 2), out
rp = W("cmp", "comparison-receipt.json")
rc, out = fid("validate", "--receipt", rp)
case("the untouched receipt validates", rc == 0, out[-400:])
add_duplicate(rp, "mean", 0.0, '"kl": {')
r = load(rp)
case("Python's view of the forged receipt keeps its seal", seal(dict(r), "receipt_sha256")["receipt_sha256"]
     == r["receipt_sha256"])
rc, out = fid("validate", "--receipt", rp)
case("validate --receipt: a duplicate 'mean' inside 'kl' is refused by name (exit 3)",
     rc == 3 and "duplicate object key 'mean'" in out, out[-600:])
rc, out = fid("report", W("cmp"), "--out", W("r.html"))
case("report refuses the receipt too, no page written", rc == 3 and "duplicate object key" in out
     and not os.path.exists(W("r.html")), out[-400:])

# 4. a model's config.json
rc, out = fid("fixture", "--preset", "tiny", "--seed", "1", "--out", W("model"))
assert rc == 0, out
add_duplicate(W("model", "config.json"), "hidden_size", 4096, "{")
rc, out = fid("inspect-model", W("model"))
case("inspect-model: a duplicate key in config.json is refused by name",
     rc != 0 and "duplicate object key 'hidden_size'" in out, out[-400:])

# 5. a safetensors header: two entries for one tensor name
rc, out = fid("fixture", "--preset", "tiny", "--seed", "1", "--out", W("model2"))
st = W("model2", "model.safetensors")
blob = open(st, "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
hdr = json.loads(blob[8:8 + n])
name = sorted(k for k in hdr if k != "__metadata__")[0]
text = blob[8:8 + n].decode()
dup = json.dumps(name) + ":" + json.dumps(hdr[name], separators=(",", ":")) + ","
new = ("{" + dup + text.lstrip()[1:]).encode()
new += b" " * ((8 - len(new) % 8) % 8)
open(st, "wb").write(struct.pack("<Q", len(new)) + new + blob[8 + n:])
rc, out = fid("inspect-model", W("model2"))
case("a safetensors header naming one tensor twice is refused by name",
     rc != 0 and ("duplicate object key '%s'" % name) in out, out[-400:])

# 6. a token panel (panel.json), deep inside the first window
rc, out = fid("fixture", "--preset", "tiny", "--seed", "1", "--out", W("model3"))
pj = W("model3", "panel", "panel.json")
add_duplicate(pj, "vocab_size", 99, '"tokenizer": {')
rc, out = fid("panel", "check", W("model3", "panel"), "--vocab", "260")
case("panel check: a duplicate key inside panel.json's tokenizer block is refused by name",
     rc == 3 and "duplicate object key 'vocab_size'" in out, out[-400:])

shutil.rmtree(WORK, ignore_errors=True)
print("%d/%d passed" % (sum(results), len(results)))
sys.exit(0 if all(results) else 1)
