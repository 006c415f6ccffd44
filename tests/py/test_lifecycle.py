#!/usr/bin/env python3
"""The dataset lifecycle commands of the Python tool (issue 23): reseal,
architectures list/show/prepare.

reseal: a dataset whose sealed validator verdict names a private path (made
here the way every pre-2026-09-04 capture carried it) is resealed; the output
must verify under our verify and the stdlib oracle ref_check.py, and must equal
BYTE FOR BYTE the tree an independent plain-Python rendering of the Python
tool's dsreseal semantics builds from the same source (the timestamp and tool
identity are taken from our receipt; everything else is recomputed here).
Every refusal of dsreseal is exercised with nothing written.

usage: test_lifecycle.py BINARY"""
import hashlib, json, os, shutil, subprocess, sys, tempfile
from dsutil import load, dump, sha, sha_file, seal, canonical, reseal as forge_reseal, run, refusal_code

BIN = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
WORK = tempfile.mkdtemp(prefix="fd-lifecycle-")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + str(detail)[-3000:]))


def tree(root):
    out = {}
    for d, dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def fixture(name, *extra):
    out = os.path.join(WORK, name)
    rc, text = run(BIN, "write-fixture", "--out", out, "--records", "3", "--tokens", "10", "--hidden", "16",
                   "--vocab", "48", "--seed", "11", "--fixed-time", *extra)
    assert rc == 0, text
    return out


# ------------------------------------------------------------------ reseal
PRIVATE = (b"/home/", b"/root/", b"/Users/", b"/private/", b"/tmp/", b"/var/tmp/", b"/workspace/",
           b"/mnt/c/Users/", b"file:///", b":\\Users\\", b":\\\\Users\\\\", b"\\/home\\/", b"\\/root\\/",
           b"\\/Users\\/", b"\\/private\\/", b"\\/tmp\\/", b"\\/workspace\\/")
TEXT = (".json", ".jsonl", ".txt", ".md", ".yaml", ".yml", ".csv", ".tsv", ".toml", ".ini", ".cfg", ".receipt")
RECORD = "validation/structural-validation.json"
RECEIPT = "validation/reseal-receipt.json"


def pretty(obj):
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def with_private_subject(src, dst, subject="/workspace/fidelity/job-7/attempt-1/dataset", extra=None):
    """A sealed dataset whose validator verdict names a private path, sealed again
    bottom-up as the capture that wrote it would have."""
    shutil.copytree(src, dst)
    p = os.path.join(dst, RECORD)
    d = load(p)
    d["subject"] = subject
    if extra:
        extra(d)
    seal(d, "receipt_sha256")
    dump(p, d)
    forge_reseal(dst)
    return dst


def oracle_reseal(src, resealed_utc, tool):
    """dsreseal.reseal_dataset's output tree, rendered in plain Python."""
    files = tree(src)
    m = json.loads(files["fidelity-dataset.json"])
    record = json.loads(files[RECORD])
    original_subject = record["subject"]
    ds = m["dataset"]
    new_record = dict(record, subject="dataset:%s" % ds["id"])
    seal(new_record, "receipt_sha256")
    files[RECORD] = pretty(new_record)
    receipt = {
        "schema": "fidelity-dataset.reseal-receipt.v1", "receipt_sha256": "", "resealed_utc": resealed_utc,
        "reason": "validation_subject_private_path", "dataset_id": ds["id"],
        "from_dataset_sha256": m["dataset_sha256"], "from_checksums_sha256": sha(files["checksums.txt"]),
        "from_created_utc": m.get("created_utc"),
        "capture_content_digest": m["capture"]["capture_content_digest"],
        "capture_manifest_file_sha256": m["capture"]["manifest_file_sha256"],
        "members_rewritten": [{"path": RECORD, "field": "subject",
                               "original_sha256": sha(tree(src)[RECORD]), "resealed_sha256": sha(files[RECORD]),
                               "original_value_sha256": sha(original_subject.encode()),
                               "resealed_value": new_record["subject"]}],
        "members_added": [RECEIPT], "tool": tool}
    seal(receipt, "receipt_sha256")
    files[RECEIPT] = pretty(receipt)
    block = {"schema": "fidelity-dataset.reseal.v1", "reason": "validation_subject_private_path",
             "from_dataset_sha256": m["dataset_sha256"], "resealed_utc": resealed_utc, "receipt": RECEIPT,
             "receipt_sha256": sha(files[RECEIPT]), "members_rewritten": [RECORD]}
    m["dataset"] = dict(ds, resealed=block)
    m["disclosures"] = list(m["disclosures"]) + [{
        "code": "resealed_validation_subject", "severity": "info", "affects_comparability": False,
        "detail": ("re-sealed from dataset_sha256 %s: the validator's sealed verdict (%s) named the capture's "
                   "output directory, a private absolute path the publisher refuses; its subject is now "
                   "'dataset:%s'. No tensor, capture, runtime, panel or head member changed; "
                   "capture_content_digest %s is unchanged. Receipt: %s."
                   % (block["from_dataset_sha256"], RECORD, ds["id"], m["capture"]["capture_content_digest"],
                      RECEIPT))}]
    if "README.md" in files:
        body = files["README.md"].decode().replace("\r\n", "\n").replace("\r", "\n")
        files["README.md"] = (body.rstrip("\n") + (
            "\n\n## Re-sealed\n\nThis tree was re-sealed from `dataset_sha256` `%s` on %s: the validator's "
            "sealed verdict (`%s`) named the capture's output directory, a private absolute path the publisher "
            "refuses. Only that one field changed. Every tensor, the capture, runtime, panel and head members "
            "are byte-identical to the original; `capture_content_digest` `%s` is unchanged. The receipt is "
            "`%s` (`%s`).\n" % (block["from_dataset_sha256"], resealed_utc, RECORD,
                                m["capture"]["capture_content_digest"], RECEIPT, block["receipt_sha256"]))).encode()
    listed = sorted(k for k in files if k not in ("checksums.txt", "fidelity-dataset.json"))
    files["checksums.txt"] = "".join("%s  %s\n" % (sha(files[k]), k) for k in listed).encode()
    anchor = m["seal"].get("external_anchor")
    m["seal"] = {
        "method": "self_blanked_canonical_json_sha256", "seal_field": "dataset_sha256",
        "checksums_file": "checksums.txt", "checksums_format": "sha256sum",
        "checksums_sha256": sha(files["checksums.txt"]),
        "covers": ["every published file except checksums.txt and fidelity-dataset.json, via checksums.txt",
                   "fidelity-dataset.json itself, via the self-blanked seal",
                   "every capture tensor a second time by CONTENT, via capture.capture_content_digest"],
        "excludes": ["checksums.txt", "fidelity-dataset.json"], "external_anchor": anchor}
    m["dataset_sha256"] = ""
    seal(m, "dataset_sha256")
    files["fidelity-dataset.json"] = pretty(m)
    return files


def textual_offenders(root):
    hits = []
    for rel, body in sorted(tree(root).items()):
        name = rel.rsplit("/", 1)[-1].lower()
        if (name in ("checksums.txt", "manifest.json") or name.endswith(TEXT)) and any(p in body for p in PRIVATE):
            hits.append(rel)
    return hits


def test_reseal():
    clean = fixture("clean")
    src = with_private_subject(clean, os.path.join(WORK, "private"))
    before = tree(src)
    rc, text = run(BIN, "verify", src)
    check("reseal: the private-subject source verifies (the defect is publication, not science)", rc == 0, text)
    check("reseal: the source carries exactly one publisher-refused member", textual_offenders(src) == [RECORD],
          textual_offenders(src))

    out = os.path.join(WORK, "dry-out")
    rc, text = run(BIN, "reseal", src, "--out", out, "--dry-run")
    check("reseal --dry-run: exit 0, names the member, writes nothing",
          rc == 0 and "DRY RUN" in text and RECORD + ".subject" in text and not os.path.exists(out)
          and tree(src) == before and not any(n.startswith("dry-out") for n in os.listdir(WORK)), text)

    out = os.path.join(WORK, "resealed")
    rcpt = os.path.join(WORK, "reseal-outer.json")
    rc, text = run(BIN, "reseal", src, "--out", out, "--receipt", rcpt)
    check("reseal: exit 0, RESEALED, source untouched", rc == 0 and text.startswith("RESEALED ") and tree(src) == before,
          text)
    if rc != 0:
        return
    rc2, vtext = run(BIN, "verify", out)
    check("reseal: the output verifies (ours)", rc2 == 0, vtext)
    p = subprocess.run([sys.executable, os.path.join(HERE, "ref_check.py"), out], capture_output=True, text=True)
    check("reseal: the output passes the stdlib oracle ref_check.py", p.returncode == 0, p.stdout + p.stderr)
    inner = load(os.path.join(out, RECEIPT))
    expect = oracle_reseal(src, inner["resealed_utc"], inner["tool"])
    got = tree(out)
    diff = sorted(k for k in set(expect) | set(got) if expect.get(k) != got.get(k))
    check("reseal: byte-identical to the plain-Python rendering of dsreseal (every member)", not diff, diff)
    m0, m1 = load(os.path.join(src, "fidelity-dataset.json")), load(os.path.join(out, "fidelity-dataset.json"))
    check("reseal: capture_content_digest unchanged, dataset_sha256 changed",
          m0["capture"]["capture_content_digest"] == m1["capture"]["capture_content_digest"]
          and m0["dataset_sha256"] != m1["dataset_sha256"], (m0["dataset_sha256"], m1["dataset_sha256"]))
    untouched = [k for k in before if k not in ("checksums.txt", "fidelity-dataset.json", RECORD, "README.md")]
    check("reseal: every tensor, panel, capture, runtime and head member byte-identical",
          all(before[k] == got[k] for k in untouched), [k for k in untouched if before[k] != got[k]])
    check("reseal: the output carries no publisher-refused member", textual_offenders(out) == [], textual_offenders(out))
    outer = load(rcpt)
    check("reseal --receipt: the inner receipt plus resealed_dataset_sha256 / checksums / output null",
          outer["resealed_dataset_sha256"] == m1["dataset_sha256"]
          and outer["resealed_checksums_sha256"] == m1["seal"]["checksums_sha256"] and outer["output"] is None
          and {k: v for k, v in outer.items() if not k.startswith("resealed_d") and not k.startswith("resealed_c")
               and k != "output"} == inner, outer)
    check("reseal: the receipt's seal recomputes", seal(dict(inner), "receipt_sha256")["receipt_sha256"]
          == inner["receipt_sha256"])
    check("reseal: the printed identities are the receipt's",
          m1["dataset_sha256"] in text and m0["dataset_sha256"] in text
          and m0["capture"]["capture_content_digest"] in text, text)

    # refusals: each ends in reseal_refused, exit 3, nothing written
    def refused(name, source, fragment, out_name="refused-out"):
        dst = os.path.join(WORK, out_name)
        snap = tree(source) if os.path.isdir(source) else None
        rc, text = run(BIN, "reseal", source, "--out", dst)
        ok = (rc == 3 and refusal_code(text) == "reseal_refused" and fragment in text
              and (out_name == "existing" or not os.path.exists(dst))
              and not any(n.startswith(out_name + ".partial") for n in os.listdir(WORK))
              and (snap is None or tree(source) == snap))
        check("reseal refuses: " + name, ok, text)

    refused("a dataset that is already publishable (nothing to repair)", clean,
            "publisher-refused members are []")
    refused("a dataset already resealed (not repeatable)", out, "a reseal is not repeatable")
    os.makedirs(os.path.join(WORK, "existing"))
    refused("an existing --out", src, "already exists", out_name="existing")
    readme = with_private_subject(clean, os.path.join(WORK, "private-readme"))
    with open(os.path.join(readme, "README.md"), "a") as f:
        f.write("\ncaptured in /home/alice/runs\n")
    forge_reseal(readme)
    refused("a second publisher-refused member (README.md)", readme,
            "publisher-refused members are ['README.md', 'validation/structural-validation.json']")
    elsewhere = with_private_subject(clean, os.path.join(WORK, "private-elsewhere"),
                                     extra=lambda d: d.__setitem__("checks", list(d.get("checks") or [])
                                                                   + ["read from /tmp/x"]))
    refused("a private path outside the subject of the record", elsewhere, "outside its subject")
    public = with_private_subject(clean, os.path.join(WORK, "public-subject"), subject="hf://owner/ds",
                                  extra=lambda d: d.__setitem__("checks", list(d.get("checks") or [])
                                                                + ["read from /tmp/x"]))
    refused("a record whose private path is not its subject (nothing a reseal may repair)",
            public, "is not a private path; nothing to reseal")
    tampered = os.path.join(WORK, "tampered")
    shutil.copytree(src, tampered)
    cap = sorted(k for k in tree(tampered) if k.startswith("capture/") and k.endswith(".safetensors"))[0]
    with open(os.path.join(tampered, cap), "r+b") as f:
        f.seek(-1, 2)
        b = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([b[0] ^ 1]))
    refused("a source that does not verify (a flipped tensor byte)", tampered, "source dataset does not verify")
    rc, text = run(BIN, "reseal", src)
    check("reseal without --out (and without --dry-run) is a usage error", rc == 4, text)


test_reseal()
shutil.rmtree(WORK, ignore_errors=True)
print("%d/%d passed" % (sum(results), len(results)))
sys.exit(0 if all(results) else 1)
