#!/usr/bin/env python3
"""kimi-k3 interop (issue 7 part 3): the compat/ view byte for byte against
tests/py/k3_ref.py (written from the Python tool's k3compat.py), inside the
seal, both directions of interop; the round trip capture -> compat/ ->
adapt --source k3v1 -> compare (exactly 0.0); his artifact shape adapted
(hidden and live-logit forms) with every declared digest checked; the
refusals.  usage: test_k3.py BINARY"""
import json, os, shutil, subprocess, sys, tempfile
from dsutil import load, run, refusal_code, reseal, sha, sha_file
import k3_ref

BIN = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
WORK = tempfile.mkdtemp(prefix="fd-k3-")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n    " + str(detail)[:1500]))


def W(*p):
    return os.path.join(WORK, *p)


def py(*args):
    p = subprocess.run([sys.executable] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def listed(root):
    with open(os.path.join(root, "checksums.txt")) as f:
        return [line.split("  ", 1)[1].strip() for line in f if line.strip()]


def oracle_files(root):
    m = load(os.path.join(root, "fidelity-dataset.json"))
    panel = load(os.path.join(root, m["panel"]["panel_file"]))
    cap = load(os.path.join(root, m["capture"]["manifest_file"]))
    return k3_ref.emit(panel, cap, m["capture"], m["head"].get("file"), m["dataset"]["name"])


def compat_matches_oracle(root, label):
    files, update = oracle_files(root)
    bad = [rel for rel, data in files.items() if open(os.path.join(root, rel), "rb").read() != data]
    check("%s: compat/ files are byte-identical to k3compat.emit (the oracle)" % label, not bad, bad)
    m = load(os.path.join(root, "fidelity-dataset.json"))
    check("%s: interop carries k3compat.emit's keys" % label,
          all(m["interop"].get(k) == v for k, v in update.items()), m["interop"])
    check("%s: compat/ is inside the seal (checksums.txt lists exactly the 3 files)" % label,
          sorted(r for r in listed(root) if r.startswith("compat/")) == sorted(files), listed(root))
    check("%s: the oracle's k3compat.verify finds no problem" % label, not k3_ref.verify(root), k3_ref.verify(root))
    rc, out = run(BIN, "verify-k3-compat", root)
    check("%s: verify-k3-compat OK" % label, rc == 0 and "K3-COMPAT OK" in out, out)


# 1. ours -> compat, and theirs (ref_writer --emit-k3-compat) -> ours
ds = W("fx")
rc, out = run(BIN, "write-fixture", "--out", ds, "--records", "3", "--tokens", "9", "--hidden", "8", "--vocab", "40",
              "--seed", "3", "--emit-k3-compat")
check("write-fixture --emit-k3-compat", rc == 0, out)
compat_matches_oracle(ds, "write-fixture")
rc, out = py(os.path.join(HERE, "ref_check.py"), ds)
check("our compat dataset passes the stdlib re-implementation of their checks", rc == 0 and out.startswith("OK "), out)
p = subprocess.run(["sha256sum", "-c", "--quiet", "checksums.txt"], cwd=ds, capture_output=True, text=True)
check("sha256sum -c checksums.txt (compat files included)", p.returncode == 0, p.stdout + p.stderr)
suite = load(os.path.join(ds, "compat", "suite-manifest.json"))
src = load(os.path.join(ds, "compat", "reference-hidden", "manifest.json"))
# his comparator's reader, literally: token_file against the suite manifest's dir, file against the tensor dir
his_ok = all(k3_ref.sha(json.dumps(load(os.path.join(ds, "compat", c["token_file"])), separators=(",", ":")).encode())
             == c["token_ids_json_sha256"] for c in suite["contexts"])
his_ok = his_ok and all(sha_file(os.path.join(ds, "compat", "reference-hidden", r["file"])) == r["sha256"]
                        and r["key"] == "hidden_states" for r in src["contexts"])
check("his reader's checks pass on the view (token digests, suite hash, file sha256, key)",
      his_ok and src["suite_token_hash_sha256"] == suite["suite_token_hash_sha256"])

plain = W("plain")
run(BIN, "write-fixture", "--out", plain, "--records", "2", "--tokens", "5", "--hidden", "4", "--vocab", "16")
m = load(os.path.join(plain, "fidelity-dataset.json"))
rc, out = run(BIN, "verify-k3-compat", plain)
check("without the flag: no compat/, k3_compat_emitted false, verify-k3-compat refuses",
      not os.path.exists(os.path.join(plain, "compat")) and m["interop"]["k3_compat_emitted"] is False
      and rc == 3 and refusal_code(out) == "k3_compat_mismatch", out)

for seed in (0, 7):
    d = W("py-%d" % seed)
    rc, out = py(os.path.join(HERE, "ref_writer.py"), d, "--records", "3", "--tokens", "12", "--seed", str(seed),
                 "--emit-k3-compat")
    check("ref_writer --emit-k3-compat seed %d" % seed, rc == 0, out)
    rc, out = run(BIN, "validate", "--strict", d)
    check("python-written compat dataset (seed %d) validates --strict under ours" % seed,
          rc == 0 and " 0 error(s), 0 warning(s)" in out, out)
    rc, out = run(BIN, "verify-k3-compat", d)
    check("python-written compat view (seed %d) passes verify-k3-compat" % seed, rc == 0, out)

# a view that lies, re-sealed by a forger: the seal holds, verify-k3-compat does not
lie = W("lie")
shutil.copytree(ds, lie)
sp = os.path.join(lie, "compat", "suite-manifest.json")
doc = load(sp)
doc["contexts"][1]["token_ids_json_sha256"] = "0" * 64
doc["contexts"][2]["token_file"] = "../panel/tokens/nope.json"
with open(sp, "w") as f:
    f.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
rc, out = run(BIN, "verify", lie)
check("an edited compat file breaks the seal (seal_failed)", rc == 3 and refusal_code(out) == "seal_failed", out)
reseal(lie)
rc, out = run(BIN, "verify-k3-compat", lie)
check("re-sealed lying view: verify-k3-compat names the token digest and the dangling alias",
      rc == 3 and refusal_code(out) == "k3_compat_mismatch" and "different token digest" in out
      and "does not resolve" in out, out)

# 2. capture --emit-k3-compat, the round trip back through adapt --source k3v1
rc, out = run(BIN, "fixture", "--preset", "tiny", "--seed", "1", "--out", W("m"))
check("tiny model fixture", rc == 0, out)
cap = W("cap")
rc, out = run(BIN, "capture", "--model", W("m"), "--panel", W("m", "panel"), "--out", cap, "--role", "root",
              "--lane", "other", "--dataset-id", "test.k3cap", "--dataset-name", "k3 capture", "--windows", "2",
              "--emit-k3-compat")
check("capture --emit-k3-compat", rc == 0, out)
compat_matches_oracle(cap, "capture")
back = W("back")
rc, out = run(BIN, "adapt", "--source", "k3v1", "--in", os.path.join(cap, "compat"), "--out", back,
              "--head", os.path.join(cap, "head", "weight.safetensors"), "--created-utc", "2026-01-01T00:00:00Z")
check("adapt --source k3v1 of the capture's own compat/ view", rc == 0, out)
rc, out = run(BIN, "validate", "--strict", back)
check("the adapted dataset validates --strict", rc == 0 and " 0 error(s), 0 warning(s)" in out, out)
mo, mb = load(os.path.join(cap, "fidelity-dataset.json")), load(os.path.join(back, "fidelity-dataset.json"))
check("round trip keeps capture_content_digest, head content and suite token hash",
      mo["capture"]["capture_content_digest"] == mb["capture"]["capture_content_digest"]
      and mo["head"]["tensor_content_sha256"] == mb["head"]["tensor_content_sha256"]
      and mo["panel"]["suite_token_hash_sha256"] == mb["panel"]["suite_token_hash_sha256"]
      and mo["panel"]["tokenizer"] == mb["panel"]["tokenizer"], (mo["panel"]["tokenizer"], mb["panel"]["tokenizer"]))
rc, out = py(os.path.join(HERE, "ref_check.py"), back)
check("the adapted dataset passes the stdlib re-implementation", rc == 0, out)
rc, out = run(BIN, "compare", "--reference", cap, "--candidate", back, "--out", W("rt-cmp"), "--force-compute")
rec = load(os.path.join(W("rt-cmp"), "comparison-receipt.json")) if rc in (0, 2) else {}
kl = rec.get("kl", {})
tw = open(os.path.join(W("rt-cmp"), "tokenwise-kld.npy"), "rb").read() if rec else b""
check("compare original vs round trip: exit 2 (advisory: derived, cross-stack), KL exactly 0.0 everywhere",
      rc == 2 and rec.get("comparability", {}).get("class") == "advisory" and kl.get("mean") == 0.0
      and kl.get("max") == 0.0 and tw[128:].count(b"\0") == len(tw) - 128, out)

# 3. his artifact shape: hidden (k3v1) and live logits (k3v0-window)
art = W("art")
info = k3_ref.build_artifact(art, contexts=4, length=7, hidden=8, vocab=32, seed=5)
a1 = W("a1")
rc, out = run(BIN, "adapt", "--source", "k3v1", "--in", art, "--out", a1, "--emit-k3-compat")
check("adapt --source k3v1 on his layout", rc == 0, out)
rc, out = run(BIN, "validate", "--strict", a1)
check("his artifact adapted: validate --strict clean", rc == 0 and " 0 error(s), 0 warning(s)" in out, out)
rc, out = py(os.path.join(HERE, "ref_check.py"), a1)
check("his artifact adapted: passes the stdlib re-implementation", rc == 0, out)
compat_matches_oracle(a1, "adapt --emit-k3-compat")
m = load(os.path.join(a1, "fidelity-dataset.json"))
capdoc = load(os.path.join(a1, "capture", "manifest.json"))
paneldoc = load(os.path.join(a1, "panel", "panel.json"))
want_ccd = sha("\n".join("%d:%s" % (i, p) for i, p in enumerate(info["payloads"])).encode())
check("payload copied bit for bit: per-record content digests and capture_content_digest from HIS bytes",
      [r["tensor_content_sha256"] for r in capdoc["records"]] == info["payloads"]
      and m["capture"]["capture_content_digest"] == want_ccd)
check("head identity is his raw_tensor_sha256; quantized null, source unknown (D-1)",
      m["head"]["tensor_content_sha256"] == info["head_content"] and m["head"]["quantized"] is None
      and m["head"]["source"] == "unknown")
af = m["interop"]["adapted_from"] or {}
check("role derived, lane inferred, weights.quantized read from tensor_format (mxfp4), inferred fields named",
      m["dataset"]["role"] == "derived" and m["runtime"]["lane_inferred"] is True and m["weights"]["quantized"] is True
      and af.get("source_format") == "k3v1" and "head.quantized" in af.get("inferred_fields", [])
      and any(f.startswith("weights.quantized") for f in af.get("inferred_fields", [])), af)
check("his suite hash is ours (same compact preimage); strata, clusters, partitions, sentinels carried",
      m["panel"]["suite_token_hash_sha256"] == info["aggregate"]
      and [(r["allocation_stratum"], r["source_cluster_id"], r["partition"], r["sentinel"]) for r in paneldoc["records"]]
      == [(r["allocation_stratum"], r["source_cluster_id"], r["partition"], r["sentinel"]) for r in info["suite_rows"]])
check("sentinel repeat noise imported (max of his pairwise means)",
      m["determinism"]["repeat_noise"]["kl_canonical_to_repeat_mean"] == 0.0032166685936858316
      and m["determinism"]["run_count"] == 3)
check("head_identity_inferred_from_reference_artifact disclosed",
      any(d["code"] == "head_identity_inferred_from_reference_artifact" for d in m["disclosures"]))
rc, out = run(BIN, "compare", "--reference", a1, "--candidate", a1, "--out", W("self"))
check("same directory twice is refused (same_root)", rc == 3 and refusal_code(out) == "same_root", out)

lim = W("lim")
rc, out = run(BIN, "adapt", "--source", "k3v1", "--in", art, "--out", lim, "--limit", "2")
ml = load(os.path.join(lim, "fidelity-dataset.json")) if rc == 0 else {}
check("--limit 2: a partial dataset that says so (coverage 2 of 4, subset_of_panel)",
      rc == 0 and ml["coverage"]["complete"] is False and ml["coverage"]["declared_records"] == 4
      and any(d["code"] == "subset_of_panel" for d in ml["disclosures"]), out)

for dtype in ("F32", "BF16"):
    art2 = W("art-" + dtype)
    info2 = k3_ref.build_artifact(art2, contexts=3, length=5, hidden=8, vocab=24, seed=9, logit=dtype)
    a2 = W("a2-" + dtype)
    rc, out = run(BIN, "adapt", "--source", "k3v0-window", "--in", art2, "--out", a2)
    rc2, out2 = run(BIN, "validate", "--strict", a2)
    check("k3v0-window live logits (%s): adapted to logit form, validates --strict" % dtype,
          rc == 0 and rc2 == 0 and " 0 error(s), 0 warning(s)" in out2, out + out2)
    if rc == 0:
        capdoc = load(os.path.join(a2, "capture", "manifest.json"))
        ok = True
        for i, r in enumerate(capdoc["records"]):
            blob = open(os.path.join(a2, "capture", r["file"]), "rb").read()
            n = int.from_bytes(blob[:8], "little")
            src_blob = open(os.path.join(art2, "ref", "logits_%04d.safetensors" % i), "rb").read()
            sn = int.from_bytes(src_blob[:8], "little")
            raw = src_blob[8 + sn:]
            if dtype == "BF16":
                raw = b"".join(b"\0\0" + raw[j:j + 2] for j in range(0, len(raw), 2))
            ok = ok and blob[8 + n:] == raw
        check("k3v0-window (%s): every logit value carried exactly (BF16 widened to F32)" % dtype, ok)

# logit form through its own compat/ view (reference-logits/) and back: exactly 0.0
lg, lg2 = W("lg"), W("lg-back")
rc, out = run(BIN, "adapt", "--source", "k3v0-window", "--in", W("art-F32"), "--out", lg, "--emit-k3-compat")
check("k3v0-window adapt --emit-k3-compat", rc == 0, out)
compat_matches_oracle(lg, "logit form")
rc, out = run(BIN, "adapt", "--source", "k3v0-window", "--in", os.path.join(lg, "compat"), "--out", lg2)
check("adapt of a logit-form compat/ view", rc == 0, out)
rc, out = run(BIN, "compare", "--reference", lg, "--candidate", lg2, "--out", W("lg-cmp"), "--force-compute")
rec = load(os.path.join(W("lg-cmp"), "comparison-receipt.json")) if rc in (0, 2) else {}
check("logit round trip: advisory, KL exactly 0.0", rc == 2 and rec.get("kl", {}).get("max") == 0.0, out)

# 4. refusals: nothing written, a named code
def refused(label, code, args, in_dir):
    out_dir = W("refused-%d" % len(results))
    rc, out = run(BIN, "adapt", "--in", in_dir, "--out", out_dir, *args)
    check("refused: %s -> %s" % (label, code), rc == 3 and refusal_code(out) == code and not os.path.exists(out_dir), out)


def mutant(name, edit):
    d = W("mut-" + name)
    k3_ref.build_artifact(d, contexts=3, length=6, hidden=8, vocab=32, seed=2)
    edit(d)
    return d


def edit_json(rel, fn):
    def go(d):
        p = os.path.join(d, rel)
        doc = load(p)
        fn(doc)
        with open(p, "w") as f:
            json.dump(doc, f)
    return go


refused("not an artifact", "not_k3_artifact", ["--source", "k3v1"], W("m"))
refused("--role root (ROOT-1, D-1)", "role_refused", ["--source", "k3v1", "--role", "root"], art)
refused("a token file edited", "k3_token_mismatch", ["--source", "k3v1"],
        mutant("tok", lambda d: open(os.path.join(d, "tokens", "context-0001.json"), "w").write("[1,2,3,4,5,6]")))
refused("suite hash wrong", "k3_suite_hash_mismatch", ["--source", "k3v1"],
        mutant("agg", edit_json("suite-manifest.json", lambda s: s.update(suite_token_hash_sha256="a" * 64))))
refused("tensor manifest on another suite", "k3_suite_hash_mismatch", ["--source", "k3v1"],
        mutant("tagg", edit_json("reference-hidden/manifest.json", lambda s: s.update(suite_token_hash_sha256="b" * 64))))
refused("tensor file digest wrong", "k3_file_digest_mismatch", ["--source", "k3v1"],
        mutant("fsha", edit_json("reference-hidden/manifest.json", lambda s: s["contexts"][2].update(sha256="c" * 64))))
refused("tensor key wrong", "k3_bad_tensor_manifest", ["--source", "k3v1"],
        mutant("key", edit_json("reference-hidden/manifest.json", lambda s: s["contexts"][0].update(key="hidden"))))
refused("duplicate tensor record", "k3_bad_tensor_manifest", ["--source", "k3v1"],
        mutant("dup", edit_json("reference-hidden/manifest.json", lambda s: s["contexts"].append(s["contexts"][0]))))
refused("a suite context without a tensor record", "k3_bad_tensor_manifest", ["--source", "k3v1"],
        mutant("absent", edit_json("reference-hidden/manifest.json", lambda s: s["contexts"].pop())))
refused("record token digest differs from the suite", "k3_token_mismatch", ["--source", "k3v1"],
        mutant("rtok", edit_json("reference-hidden/manifest.json",
                                 lambda s: s["contexts"][1].update(token_ids_json_sha256="d" * 64))))
refused("gapped indices", "k3_bad_suite", ["--source", "k3v1"],
        mutant("gap", edit_json("suite-manifest.json", lambda s: s["contexts"][2].update(context_index=7, index=7))))
refused("absolute token_file", "k3_bad_suite", ["--source", "k3v1"],
        mutant("abs", edit_json("suite-manifest.json", lambda s: s["contexts"][0].update(token_file="/etc/passwd"))))
refused("contexts not a list", "k3_bad_suite", ["--source", "k3v1"],
        mutant("nolist", edit_json("suite-manifest.json", lambda s: s.update(contexts=3))))
refused("missing tensor file", "missing_file", ["--source", "k3v1"],
        mutant("gone", lambda d: os.remove(os.path.join(d, "reference-hidden", "hidden_0001.safetensors"))))
refused("rows != context_length - 1", "k3_bad_tensor", ["--source", "k3v1"],
        mutant("rows", edit_json("suite-manifest.json", lambda s: s.update(context_length=9))))
refused("head raw_tensor_sha256 wrong", "k3_head_mismatch", ["--source", "k3v1"],
        mutant("head", edit_json("manifest.json", lambda s: s["lm_head"].update(raw_tensor_sha256="e" * 64))))
refused("no head for a hidden-form artifact", "k3_head_missing", ["--source", "k3v1"],
        mutant("nohead", lambda d: (shutil.rmtree(os.path.join(d, "lm-head")),
                                    edit_json("manifest.json", lambda s: s.pop("lm_head"))(d))))
refused("no tensor manifest", "k3_no_tensors", ["--source", "k3v1"],
        mutant("notens", lambda d: shutil.rmtree(os.path.join(d, "reference-hidden"))))
refused("malaiwah-serving-v2", "not_implemented", ["--source", "malaiwah-serving-v2"], art)
# compare --emit-k3-compat (no longer refused): the full checks are tests/py/test_k3_compare.py
rc, out = run(BIN, "compare", "--reference", cap, "--candidate", back, "--out", W("k3cmp"), "--emit-k3-compat",
              "--force-compute")
rec = load(os.path.join(W("k3cmp"), "comparison-receipt.json")) if rc in (0, 2) else {}
check("compare --emit-k3-compat of the round trip: advisory, k3-summary.json sealed through the receipt",
      rc == 2 and rec.get("interop", {}).get("k3_summary", {}).get("sha256")
      == sha_file(os.path.join(W("k3cmp"), "k3-summary.json")), out)

shutil.rmtree(WORK, ignore_errors=True)
print("%d/%d passed" % (sum(results), len(results)))
sys.exit(0 if all(results) else 1)
