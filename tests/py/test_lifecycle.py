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


# ------------------------------------------------------------------ architectures
def test_architectures():
    rc, text = run(BIN, "architectures", "list")
    check("architectures list: both model types and the three formats",
          rc == 0 and all(w in text for w in ("glm_moe_dsa", "glm5_next", "bf16", "fp8-block", "nvfp4")), text)
    rc, text = run(BIN, "architectures", "list", "--json")
    doc = json.loads(text) if rc == 0 else {}
    check("architectures list --json: the table",
          [a["model_type"] for a in doc.get("architectures", [])] == ["glm_moe_dsa", "glm5_next"]
          and [f["id"] for f in doc.get("formats", [])] == ["bf16", "fp8-block", "nvfp4"]
          and doc["architectures"][0]["formats"] == ["bf16", "fp8-block", "nvfp4"]
          and [f["capture_role"] for f in doc["formats"]] == ["root", "quant", "quant"], text)
    rc, text = run(BIN, "architectures", "show", "glm5_next", "--json")
    check("architectures show glm5_next --json", rc == 0 and json.loads(text)["kind"] == "architecture"
          and json.loads(text)["model_type"] == "glm5_next", text)
    rc, text = run(BIN, "architectures", "show", "fp8-block")
    check("architectures show fp8-block: the format and its architectures",
          rc == 0 and "quant_method \"fp8\"" in text and "glm_moe_dsa" in text, text)
    rc, text = run(BIN, "architectures", "show", "llama")
    check("architectures show llama: refused by name", rc == 3 and refusal_code(text) == "unsupported_model_type"
          and '"llama"' in text, text)

    model = os.path.join(WORK, "tiny")
    rc, text = run(BIN, "fixture", "--preset", "tiny", "--seed", "5", "--out", model)
    assert rc == 0, text
    panel = os.path.join(model, "panel")
    plan = os.path.join(WORK, "plan-root")
    name = "tiny it's $HOME `x` \"q\""
    rc, text = run(BIN, "architectures", "prepare", "--model", model, "--panel", panel, "--out", plan,
                   "--dataset-name", name, "--dataset-id", "fidelity--test.tiny.root")
    check("prepare (bf16 -> root): exit 0, PREPARED", rc == 0 and text.startswith("PREPARED "), text)
    if rc != 0:
        return
    wf = load(os.path.join(plan, "workflow.json"))
    mp = wf["memory_plan"]
    check("prepare: workflow.json names the architecture, format, role and a consistent memory plan",
          wf["architecture"]["model_type"] == "glm_moe_dsa" and wf["format"]["id"] == "bf16" and wf["role"] == "root"
          and mp["schedule"] == ("window-outer" if mp["window_outer"]["fits"] else "layer-outer")
          and all(mp[k]["total_bytes"] > mp[k]["working_bytes"] > 0 for k in ("window_outer", "layer_outer"))
          and wf["model"]["config_sha256"] == sha_file(os.path.join(model, "config.json"))
          and [s["argv"][1] for s in wf["steps"]] == ["capture", "capture", "verify", "verify", "compare"], wf)
    sh = os.path.join(plan, "run.sh")
    check("prepare: run.sh is executable", os.access(sh, os.X_OK))
    p = subprocess.run(["sh", sh], capture_output=True, text=True, env=dict(os.environ, FIDELITY=BIN))
    runs = wf["runs_dir"]
    ok = p.returncode == 0
    if ok:
        r = load(os.path.join(runs, "root-repro", "comparison-receipt.json"))
        m = load(os.path.join(runs, "root-cold-1", "fidelity-dataset.json"))
        ok = (r["comparison_kind"] == "reproduction_confirmation" and r["metric"]["value"] == 0.0
              and m["dataset"]["name"] == name and m["dataset"]["role"] == "root"
              and load(os.path.join(runs, "root-cold-2.verify.json"))["error_count"] == 0)
    check("prepare: run.sh runs: two cold captures (the quoted name intact), verify, self-compare exactly 0.0",
          ok, p.stdout[-2000:] + p.stderr[-2000:])

    q = os.path.join(WORK, "tiny-fp8")
    rc, text = run(BIN, "quantize", "--format", "fp8-block", "--src", model, "--dst", q, "--match", ".mlp.experts.")
    assert rc == 0, text
    qplan = os.path.join(WORK, "plan-quant")
    rc, text = run(BIN, "architectures", "prepare", "--model", q, "--panel", panel, "--out", qplan)
    qwf = load(os.path.join(qplan, "workflow.json")) if rc == 0 else {}
    check("prepare (fp8-block -> quant): role quant, the codec, REFERENCE left to the caller",
          rc == 0 and qwf["format"]["id"] == "fp8-block" and qwf["role"] == "quant"
          and qwf["format"]["codec"].startswith("fp8-e4m3-block") and "REFERENCE" in open(os.path.join(qplan, "run.sh")).read(),
          text)
    if rc == 0:
        p = subprocess.run(["sh", os.path.join(qplan, "run.sh")], capture_output=True, text=True,
                           env=dict(os.environ, FIDELITY=BIN, REFERENCE=os.path.join(runs, "root-cold-1")))
        rp = os.path.join(qwf["runs_dir"], "compare", "comparison-receipt.json")
        ok = p.returncode == 0 and os.path.isfile(rp) and load(rp)["comparison_kind"] == "measurement"
        check("prepare: the quant run.sh captures, verifies and compares against the root", ok,
              p.stdout[-2000:] + p.stderr[-2000:])
        p = subprocess.run(["sh", os.path.join(qplan, "run.sh")], capture_output=True, text=True,
                           env={k: v for k, v in dict(os.environ, FIDELITY=BIN).items() if k != "REFERENCE"})
        check("prepare: the quant run.sh without REFERENCE stops before any capture", p.returncode != 0
              and "REFERENCE" in p.stderr, p.stderr)

    def refused(label, code, *args, out_name="plan-refused"):
        dst = os.path.join(WORK, out_name)
        existed = os.path.exists(dst)
        rc, text = run(BIN, "architectures", "prepare", *args, "--out", dst)
        check("prepare refuses: " + label, rc == 3 and refusal_code(text) == code and (existed or not os.path.exists(dst))
              and not any(n.startswith(out_name + ".partial") for n in os.listdir(WORK)), text)
        return text

    llama = os.path.join(WORK, "llama")
    shutil.copytree(model, llama)
    cfg = load(os.path.join(llama, "config.json"))
    cfg["model_type"] = "llama"
    dump(os.path.join(llama, "config.json"), cfg)
    text = refused("an unsupported model_type, by name", "unsupported_model_type", "--model", llama, "--panel", panel)
    check("prepare: the refusal names the model_type", '"llama"' in text, text)
    refused("a memory limit neither schedule fits", "insufficient_memory", "--model", model, "--panel", panel,
            "--memory-limit", "1000")
    refused("an existing --out", "destination_exists", "--model", model, "--panel", panel, out_name="plan-root")
    missing = os.path.join(WORK, "no-tensors")
    shutil.copytree(model, missing)
    os.remove(os.path.join(missing, "model.safetensors"))
    rc, text = run(BIN, "architectures", "prepare", "--model", missing, "--panel", panel, "--out",
                   os.path.join(WORK, "plan-missing"))
    check("prepare refuses a directory without its tensors (nothing written)", rc == 3
          and not os.path.exists(os.path.join(WORK, "plan-missing")), text)
    rc, text = run(BIN, "architectures", "prepare", "--model", model, "--panel", panel, "--out",
                   os.path.join(WORK, "plan-lo"), "--memory-limit", str(mp["layer_outer"]["total_bytes"] + (1 << 20)))
    lwf = load(os.path.join(WORK, "plan-lo", "workflow.json")) if rc == 0 else {}
    check("prepare --memory-limit: the plan uses it and its schedule follows the fits",
          rc == 0 and lwf["memory_plan"]["limit_source"] == "--memory-limit"
          and lwf["memory_plan"]["schedule"] == ("window-outer" if lwf["memory_plan"]["window_outer"]["fits"]
                                                 else "layer-outer")
          and all("--memory-limit" in s["argv"] for s in lwf["steps"] if s["argv"][1] == "capture"), text)


test_reseal()
test_architectures()
shutil.rmtree(WORK, ignore_errors=True)
print("%d/%d passed" % (sum(results), len(results)))
sys.exit(0 if all(results) else 1)
