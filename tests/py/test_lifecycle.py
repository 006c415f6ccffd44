#!/usr/bin/env python3
"""The dataset lifecycle commands of the Python tool (issue 23): reseal,
architectures list/show/prepare, panel-binding, qualify-root --local, publish
(docs/LIFECYCLE.md).

reseal: a dataset whose sealed validator verdict names a private path (made
here the way every pre-2026-09-04 capture carried it) is resealed; the output
must verify under our verify and the stdlib oracle ref_check.py, and must equal
BYTE FOR BYTE the tree an independent plain-Python rendering of the Python
tool's dsreseal semantics builds from the same source (the timestamp and tool
identity are taken from our receipt; everything else is recomputed here).
Every refusal of dsreseal is exercised with nothing written.

architectures: the table, `show` refusing an unknown name, `prepare` plans whose
run.sh is executed end to end (root: two cold captures, verify, self-compare
exactly 0.0; FP8-block quant: capture, verify, compare), refusals by name.

panel-binding: upstream panels in both receipt shapes the Python tool's
panel.resolve_panel accepts are built here; the binding must equal the document
rendered independently (the archive digest by Python's own tarfile), and each
refusal of resolve_panel is exercised.

qualify-root --local: the two root captures of the architectures plan (refused
as captured: no weights revision), then the same captures with a weights
revision and a dataset repository pinned; every refusal writes nothing.

publish: a loopback Hub (this file) with the commit API, preupload, the LFS
batch API and an object store on another origin, repo creation, HEAD and
resolve URLs; --dry-run sends nothing; a 5xx on an LFS upload, a 5xx and a
stalled commit are refusals with nothing reported as published; large files go
through LFS with no token to the store; the published commit holds the
exact bytes, resolve reads are anonymous, the token is never printed; tampered
bytes after the commit are publish_verify_failed; --expected-head is enforced.

usage: test_lifecycle.py BINARY"""
import hashlib, json, os, shutil, subprocess, sys, tempfile
from dsutil import load, dump, sha, sha_file, seal, canonical, reseal as forge_reseal, run, refusal_code

BIN = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
WORK = tempfile.mkdtemp(prefix="fd-lifecycle-")
results = []
STATE = {}


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


def json_diff(a, b, path="$"):
    """The first few paths where two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += json_diff(a.get(k, "<absent>"), b.get(k, "<absent>"), "%s.%s" % (path, k))
        return out[:8]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += json_diff(x, y, "%s[%d]" % (path, i))
        return out[:8]
    return [] if a == b and type(a) == type(b) else ["%s: %r != %r" % (path, a, b)]


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
          [a["model_type"] for a in doc.get("architectures", [])][:2] == ["glm_moe_dsa", "glm5_next"]
          and {"deepseek_v3", "deepseek_v32", "llama", "qwen3", "qwen3_moe"} <= {a["model_type"] for a in doc.get("architectures", [])}
          and [f["id"] for f in doc.get("formats", [])] == ["bf16", "fp8-block", "nvfp4", "ct-pack", "gptq", "awq", "mlx", "gguf"]
          and doc["architectures"][0]["formats"] == ["bf16", "fp8-block", "nvfp4", "ct-pack", "gptq", "awq", "mlx", "gguf"]
          and [f["capture_role"] for f in doc["formats"]] == ["root"] + ["quant"] * 6 + ["root|quant"], text)
    rc, text = run(BIN, "architectures", "show", "glm5_next", "--json")
    check("architectures show glm5_next --json", rc == 0 and json.loads(text)["kind"] == "architecture"
          and json.loads(text)["model_type"] == "glm5_next", text)
    rc, text = run(BIN, "architectures", "show", "fp8-block")
    check("architectures show fp8-block: the format and its architectures",
          rc == 0 and "quant_method \"fp8\"" in text and "glm_moe_dsa" in text, text)
    rc, text = run(BIN, "architectures", "show", "mistral")
    check("architectures show mistral: refused by name (the Python tool's code capture_workflow, reason first)",
          rc == 3 and refusal_code(text) == "capture_workflow" and "capture_workflow]: unsupported_model_type: " in text
          and '"mistral"' in text, text)

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
    STATE["runs"], STATE["model"] = runs, model
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
        check("prepare refuses: " + label, rc == 3 and refusal_code(text) == "capture_workflow"
              and ("capture_workflow]: %s: " % code) in text and (existed or not os.path.exists(dst))
              and not any(n.startswith(out_name + ".partial") for n in os.listdir(WORK)), text)
        return text

    other = os.path.join(WORK, "mistral")
    shutil.copytree(model, other)
    cfg = load(os.path.join(other, "config.json"))
    cfg["model_type"] = "mistral"
    dump(os.path.join(other, "config.json"), cfg)
    text = refused("an unsupported model_type, by name", "unsupported_model_type", "--model", other, "--panel", panel)
    check("prepare: the refusal names the model_type", '"mistral"' in text, text)
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


# ------------------------------------------------------------------ panel-binding
PANEL_SCHEMA = "quant-pipeline.glm53-token-panel.v1"
ARCHIVE_ALGORITHM = "sha256(ustar: sorted regular files; mode=0644; uid=gid=mtime=0)"


def npy_bytes(values, dtype):
    import io, numpy as np
    b = io.BytesIO()
    np.save(b, np.array(values, dtype=dtype))
    return b.getvalue()


def legacy_seal(doc):
    body = dict(doc)
    body.pop("receipt_sha256", None)
    doc["receipt_sha256"] = sha(canonical(body) + b"\n")
    return doc


def make_panel(root, tok_root, artifact=False, windows=3, length=12, vocab=500, prefix="calibration/panel-v1"):
    """A sealed upstream panel as the Python tool's panel.resolve_panel reads it: the build-receipt shape
    (receipt.tokenizer) or the artifact-receipt shape (artifacts list + tokenizer.receipt.json, legacy seals)."""
    os.makedirs(os.path.join(root, "arrays"))
    os.makedirs(tok_root, exist_ok=True)
    tok_files = {"tokenizer.json": b'{"model": {"type": "BPE"}}\n', "tokenizer_config.json": b'{"a": 1}\n',
                 "config.json": b'{"model_type": "glm_moe_dsa", "transformers_version": "5.16.1"}\n'}
    for n, b in tok_files.items():
        with open(os.path.join(tok_root, n), "wb") as f:
            f.write(b)
    rows, digests = [], []
    for w in range(windows):
        wid = "final-%04d" % w
        ids = [(w * 37 + k * 11) % vocab for k in range(length)]
        tb, mb = npy_bytes(ids, "<i4"), npy_bytes([True] * length, "|b1")
        for suffix, b in ((".tokens.npy", tb), (".mask.npy", mb)):
            with open(os.path.join(root, "arrays", wid + suffix), "wb") as f:
                f.write(b)
        js = sha(canonical(ids))
        digests.append(js)
        rows.append({"window_id": wid, "role": "final", "token_ids_sha256": sha(tb), "attention_mask_sha256": sha(mb),
                     "token_ids_json_sha256": js, "num_tokens": length, "prediction_positions": length - 1})
    suite = sha("\n".join(digests).encode())
    panel = {"schema": PANEL_SCHEMA, "panel_id": "panel--test.lifecycle", "name": "lifecycle test panel",
             "windows": rows, "suite_token_hash_sha256": suite}
    with open(os.path.join(root, "panel.json"), "wb") as f:
        f.write(pretty(panel))
    repo, rev = "owner/tokenizer-repo", "0123456789abcdef0123456789abcdef01234567"
    if not artifact:
        receipt = {"schema": "malaiwah.token-panel-build-receipt.v1", "suite_token_hash_sha256": suite,
                   "tokenizer": {"repository": repo, "revision": rev, "vocab_size": vocab,
                                 "files_sha256": {n: sha(b) for n, b in tok_files.items()}},
                   "parameters": {"context_length": length, "prediction_positions_per_window": length - 1,
                                  "scored_positions_total": windows * (length - 1), "windows_total": windows},
                   "final_windows": windows, "receipt_sha256": ""}
        seal(receipt, "receipt_sha256")
    else:
        identity = {"model_id": repo, "model_revision": rev,
                    "files": [{"path": "snap/" + n, "bytes": len(b), "sha256": sha(b)} for n, b in tok_files.items()]}
        tr = {"schema": "quant-pipeline.glm53-tokenizer-receipt.v1", "tokenizer_identity": identity,
              "tokenizer_identity_sha256": sha(canonical(identity) + b"\n"), "vocab_size": vocab,
              "minimum_token_id": 0, "maximum_token_id_exclusive": vocab}
        legacy_seal(tr)
        with open(os.path.join(root, "tokenizer.receipt.json"), "wb") as f:
            f.write(pretty(tr))
        files = sorted(os.path.relpath(os.path.join(d, n), root) for d, _, ns in os.walk(root) for n in ns)
        receipt = {"schema": "quant-pipeline.glm53-token-panel-receipt.v1",
                   "token_panel_artifact_sha256": sha_file(os.path.join(root, "panel.json")),
                   "artifacts": [{"path": prefix + "/" + r, "bytes": os.path.getsize(os.path.join(root, r)),
                                  "sha256": sha_file(os.path.join(root, r))} for r in files],
                   "tokenizer_receipt_sha256": tr["receipt_sha256"], "suite_token_hash_sha256": suite}
        legacy_seal(receipt)
    with open(os.path.join(root, "panel.receipt.json"), "wb") as f:
        f.write(pretty(receipt))
    return tok_files, repo, rev


def expected_binding(root, tok_files, repo, rev, vocab, artifact):
    """resolve_panel's document for a valid panel, rendered independently (tarfile for the archive)."""
    import tarfile
    panel = load(os.path.join(root, "panel.json"))
    receipt_raw = open(os.path.join(root, "panel.receipt.json"), "rb").read()
    receipt = json.loads(receipt_raw)
    rows = sorted(panel["windows"], key=lambda r: r["window_id"])
    files = sorted(os.path.relpath(os.path.join(d, n), root) for d, _, ns in os.walk(root) for n in ns)
    manifest = [{"path": r, "bytes": os.path.getsize(os.path.join(root, r)), "sha256": sha_file(os.path.join(root, r))}
                for r in files]

    class Sink:
        def __init__(self):
            self.h, self.n = hashlib.sha256(), 0

        def write(self, b):
            self.h.update(b)
            self.n += len(b)
            return len(b)

    sink = Sink()
    with tarfile.open(fileobj=sink, mode="w|", format=tarfile.USTAR_FORMAT) as tar:
        for row in manifest:
            info = tarfile.TarInfo(row["path"])
            info.size, info.mode = row["bytes"], 0o644
            info.uid = info.gid = info.mtime = 0
            info.uname = info.gname = ""
            with open(os.path.join(root, row["path"]), "rb") as f:
                tar.addfile(info, f)
    body = dict(receipt)
    claimed = body["receipt_sha256"]
    body["receipt_sha256"] = ""
    mode = "self-blank" if sha(canonical(body)) == claimed else "legacy-field-absent"
    if artifact:
        traw = open(os.path.join(root, "tokenizer.receipt.json"), "rb").read()
        tr = json.loads(traw)
        tok = {"files": [{"name": n, "bytes": len(tok_files[n]), "sha256": sha(tok_files[n])} for n in sorted(tok_files)],
               "identity_sha256": tr["tokenizer_identity_sha256"],
               "receipt": {"declared_receipt_sha256": tr["receipt_sha256"], "receipt_seal_mode": "legacy-field-absent",
                           "receipt_file_sha256": sha(traw), "receipt_file_bytes": len(traw)}}
    else:
        fmap = receipt["tokenizer"]["files_sha256"]
        tok = {"files": [{"name": n, "bytes": len(tok_files[n]), "sha256": sha(tok_files[n])} for n in sorted(tok_files)],
               "identity_sha256": sha(canonical({"repository": repo, "revision": rev, "files_sha256": dict(sorted(fmap.items())),
                                                 "vocab_size": vocab}) + b"\n"), "receipt": None}
    praw = open(os.path.join(root, "panel.json"), "rb").read()
    return {"schema": "malaiwah.resolved-panel.v1",
            "panel": {"id": panel["panel_id"], "name": panel["name"], "role": "final", "contexts": len(rows),
                      "context_length": rows[0]["num_tokens"], "positions_per_context": rows[0]["prediction_positions"],
                      "scored_positions_total": sum(r["prediction_positions"] for r in rows),
                      "suite_token_hash_sha256": sha("\n".join(r["token_ids_json_sha256"] for r in rows).encode()),
                      "file": "panel.json", "bytes": len(praw), "sha256": sha(praw)},
            "receipt": {"file": "panel.receipt.json", "bytes": len(receipt_raw), "declared_receipt_sha256": claimed,
                        "receipt_seal_mode": mode, "receipt_file_sha256": sha(receipt_raw)},
            "tokenizer": dict({"id": repo, "repository": repo, "revision": rev, "vocab_size": vocab,
                               "maximum_token_id_exclusive": vocab, "files_verified": True}, **tok),
            "content": {"manifest": manifest, "manifest_sha256": sha(canonical(manifest)),
                        "archive": {"format": "ustar", "compression": "none", "algorithm": ARCHIVE_ALGORITHM,
                                    "bytes": sink.n, "sha256": sink.h.hexdigest()}}}


def test_panel_binding():
    for artifact in (False, True):
        tag = "artifact receipt + tokenizer.receipt.json, legacy seals" if artifact else "build receipt, self-blank seal"
        root, tok = os.path.join(WORK, "pb-%d" % artifact), os.path.join(WORK, "pb-tok-%d" % artifact)
        tok_files, repo, rev = make_panel(root, tok, artifact=artifact)
        out = os.path.join(WORK, "pb-%d.binding.json" % artifact)
        rc, text = run(BIN, "panel-binding", "--panel", root, "--tokenizer-root", tok, "--out", out)
        check("panel-binding (%s): exit 0" % tag, rc == 0 and "panel binding written" in text, text)
        if rc != 0:
            continue
        raw = open(out, "rb").read()
        got = json.loads(raw)
        want = expected_binding(root, tok_files, repo, rev, 500, artifact)
        check("panel-binding (%s): the document resolve_panel computes (archive by tarfile)" % tag, got == want,
              json_diff(got, want))
        check("panel-binding (%s): canonical JSON + newline, its sha256 printed" % tag,
              raw == canonical(got) + b"\n" and sha(raw) in text and "--panel-binding-sha256 " + sha(raw) in text, text)
        rc, text = run(BIN, "panel-binding", "--panel", root, "--tokenizer-root", tok, "--out", out)
        check("panel-binding refuses an existing --out (written once)", rc == 3 and refusal_code(text) == "destination_exists"
              and open(out, "rb").read() == raw, text)

    base_root, base_tok = os.path.join(WORK, "pb-0"), os.path.join(WORK, "pb-tok-0")

    def variant(name, edit, fragment, code="panel_unresolvable", tok_edit=None):
        root, tok = os.path.join(WORK, "pbv-" + name), os.path.join(WORK, "pbv-tok-" + name)
        shutil.copytree(base_root, root, symlinks=True)
        shutil.copytree(base_tok, tok)
        if edit:
            edit(root)
        if tok_edit:
            tok_edit(tok)
        out = os.path.join(WORK, "pbv-%s.json" % name)
        rc, text = run(BIN, "panel-binding", "--panel", root, "--tokenizer-root", tok, "--out", out)
        return rc, text, out

    def refuses(name, edit, fragment, tok_edit=None, code="panel_unresolvable"):
        rc, text, out = variant(name, edit, fragment, tok_edit=tok_edit)
        check("panel-binding refuses: " + name, rc == 3 and refusal_code(text) == code and fragment in text
              and not os.path.exists(out) and not any(".partial" in n for n in os.listdir(WORK)), text)

    def write(path, b):
        with open(path, "wb") as f:
            f.write(b)

    def reseal_receipt(root, edit):
        p = os.path.join(root, "panel.receipt.json")
        r = load(p)
        edit(r)
        r["receipt_sha256"] = ""
        seal(r, "receipt_sha256")
        write(p, pretty(r))

    refuses("a tokenizer file that fails its sha256", None, "tokenizer artifact tokenizer.json fails its SHA-256",
            tok_edit=lambda t: write(os.path.join(t, "tokenizer.json"), b"{}"))
    refuses("an extra file in the panel tree", lambda r: write(os.path.join(r, "arrays", "stray.npy"), b"x"),
            "not the exact sealed file closure")
    refuses("a receipt whose seal does not recompute",
            lambda r: write(os.path.join(r, "panel.receipt.json"),
                            open(os.path.join(r, "panel.receipt.json"), "rb").read().replace(b'"final_windows": 3',
                                                                                          b'"final_windows": 4')),
            "receipt seal is neither")
    refuses("a receipt parameter that disagrees with the windows",
            lambda r: reseal_receipt(r, lambda d: d["parameters"].__setitem__("scored_positions_total", 1)),
            "receipt.parameters.scored_positions_total disagrees")
    refuses("a suite token hash that does not match",
            lambda r: reseal_receipt(r, lambda d: d.__setitem__("suite_token_hash_sha256", "0" * 64)),
            "receipt suite token hash does not match")
    refuses("a symlink in the panel", lambda r: os.symlink("panel.json", os.path.join(r, "arrays", "link.npy")),
            "symlink")
    refuses("a token outside the pinned vocabulary",
            lambda r: reseal_receipt(r, lambda d: d["tokenizer"].__setitem__("vocab_size", 5)), "outside pinned tokenizer range")

    def bad_mask(r):
        p = os.path.join(r, "panel.json")
        d = load(p)
        mb = npy_bytes([True] * 6 + [False] * 6, "|b1")
        write(os.path.join(r, "arrays", "final-0001.mask.npy"), mb)
        d["windows"][1]["attention_mask_sha256"] = sha(mb)
        write(p, pretty(d))
        reseal_receipt(r, lambda x: None)

    refuses("a mask whose valid pairs differ from prediction_positions", bad_mask, "valid shifted next-token pairs")
    refuses("an unpinned tokenizer revision",
            lambda r: reseal_receipt(r, lambda d: d["tokenizer"].__setitem__("revision", "main")),
            "revision must be a lowercase 40-hex commit")
    ref = lambda t, b: (os.makedirs(os.path.join(t, ".reference")),
                        shutil.copy(os.path.join(t, "tokenizer_config.json"), os.path.join(t, ".reference")),
                        write(os.path.join(t, "tokenizer_config.json"), b))
    rc, text, out = variant("loader-key", None, "", tok_edit=lambda t: ref(t, b'{"a": 1, "local_files_only": true}'))
    check("panel-binding admits a tokenizer_config.json differing only in local_files_only (.reference copy); the "
          "binding keeps the root's bytes", rc == 0 and load(out)["tokenizer"]["files"][2]["bytes"] == len(b'{"a": 1}\n'), text)
    refuses("a tokenizer_config.json differing beyond the loader key", None, "keys differ beyond ['local_files_only']: ['a']",
            tok_edit=lambda t: ref(t, b'{"a": 2, "local_files_only": true}'))

    # our own panels: the fixture panel has no panel.receipt.json, a text panel carries our build receipt
    model = os.path.join(WORK, "tiny")
    rc, text = run(BIN, "panel-binding", "--panel", os.path.join(model, "panel"), "--tokenizer-root", model, "--out",
                   os.path.join(WORK, "pb-own.json"))
    check("panel-binding refuses a panel without panel.receipt.json", rc == 3 and refusal_code(text) == "panel_unresolvable"
          and "panel receipt" in text, text)
    text_panel = os.path.join(WORK, "pb-text-panel")
    with open(os.path.join(WORK, "prose.txt"), "w") as f:
        f.write("The capital of France is Paris. " * 60)
    rc, text = run(BIN, "panel", "build", "--out", text_panel, "--tokenizer", os.path.join(model, "tokenizer.json"),
                   "--context-length", "32", os.path.join(WORK, "prose.txt"))
    assert rc == 0, text
    rc, text = run(BIN, "panel-binding", "--panel", text_panel, "--tokenizer-root", model, "--out",
                   os.path.join(WORK, "pb-text.json"))
    check("panel-binding refuses our own text panel's fidelity.panel-build-receipt.v1 (as resolve_panel does)",
          rc == 3 and refusal_code(text) == "panel_unresolvable" and "unsupported panel receipt schema" in text, text)
    rc, text = run(BIN, "panel-binding", "--panel", base_root, "--out", os.path.join(WORK, "pb-x.json"))
    check("panel-binding without --tokenizer-root is a usage error", rc == 4, text)


# ------------------------------------------------------------------ qualify-root --local
PUB_REPO = "tester/tiny-root"
QUAL_KEYS = {"schema", "receipt_sha256", "qualified_at", "canonical_job_sha256", "job_file_sha256", "dataset_repository",
             "destination_repository", "job_contract", "captures", "comparison", "comparator", "verification",
             "reproduction_confirmation", "local_execution"}


def job_v2_target_errors(t):
    """The target-block rules of the Python tool's jobcontract.validate_job for a single-file local CPU root
    (execution_attempt.kind local, capture.device cpu, surface native-bf16), as read from its code; [] when met."""
    import re
    from pathlib import PurePosixPath
    err = []
    hex64 = lambda v: isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) is not None
    canon_path = lambda v: (isinstance(v, str) and v and "\\" not in v and not PurePosixPath(v).is_absolute()
                            and PurePosixPath(v).as_posix() == v and all(x not in ("", ".", "..") for x in PurePosixPath(v).parts))
    if not isinstance(t.get("repo_id"), str) or not t["repo_id"] or not re.fullmatch(r"[0-9a-f]{40}", str(t.get("revision", ""))):
        err.append("repo_id/revision")
    single = t.get("surface") == "native-bf16" and t.get("index_source") in ("single-safetensors", "gguf-files")
    if t.get("index_source") == "single-safetensors" and not single:
        err.append("an unindexed checkpoint requires a local CPU root")
    if single and (t.get("index_sha256") is not None or t.get("index_bytes") is not None):
        err.append("an unindexed checkpoint must not claim an index digest or size")
    for name in ("config_sha256", "index_sha256", "shard_manifest_sha256"):
        if not (name == "index_sha256" and single) and not hex64(t.get(name)):
            err.append("lacks exact " + name)
    shards = t.get("shards")
    if not isinstance(shards, list) or not shards:
        return err + ["shard census"]
    if single and (len(shards) != 1 or not str(shards[0].get("path", "")).endswith(".safetensors")):
        err.append("exactly one safetensors file")
    if any(set(r) != {"path", "bytes"} or not canon_path(r["path"]) or type(r["bytes"]) is not int or r["bytes"] <= 0
           for r in shards) or shards != sorted(shards, key=lambda r: r["path"]):
        err.append("shard census noncanonical")
    if t.get("shard_manifest_sha256") != sha(canonical(shards)) or t.get("model_bytes") != sum(r["bytes"] for r in shards):
        err.append("shard digest/model_bytes")
    if t.get("path") is not None and not canon_path(t["path"]):
        err.append("path")
    dl = t.get("download_manifest")
    if (not isinstance(dl, list) or dl != sorted(dl, key=lambda r: r.get("path", ""))
            or any(set(r) != {"path", "bytes"} or type(r["bytes"]) is not int or r["bytes"] < 0 or not canon_path(r["path"])
                   for r in dl) or len({r["path"] for r in dl}) != len(dl)):
        return err + ["download manifest noncanonical"]
    if t.get("download_bytes_total") != sum(r["bytes"] for r in dl) or t.get("download_manifest_sha256") != sha(canonical(dl)):
        err.append("download total/digest")
    by = {r["path"]: r["bytes"] for r in dl}
    if single and "model.safetensors.index.json" in by:
        err.append("unindexed root lists an index")
    for req in ("config.json",) if single else ("config.json", "model.safetensors.index.json"):
        if by.get(req, 0) <= 0:
            err.append("download manifest lacks positive " + req)
    if any(by.get(r["path"]) != r["bytes"] for r in shards):
        err.append("download manifest differs from shard census")
    for name in ("surface", "codec", "bits", "path"):
        if name not in t:
            err.append("lacks authored " + name)
    return err


def test_qualify_root():
    runs, model = STATE.get("runs"), STATE.get("model")
    if not runs:
        check("qualify-root: the architectures plan produced two root runs", False)
        return
    qdir = os.path.join(WORK, "qual")
    os.makedirs(qdir)

    def qargs(first, repeat, l1="root-cold-1", l2="root-cold-2", v1=None, v2=None, comparison=None, out=None,
              model_dir=model, extra=()):
        return ["qualify-root", "--local", "--model-dir", model_dir, "--first", first, "--repeat", repeat,
                "--first-label", l1, "--repeat-label", l2, "--first-verify", v1 or first + ".verify.json",
                "--repeat-verify", v2 or repeat + ".verify.json",
                "--comparison", comparison or os.path.join(os.path.dirname(first), "root-repro", "comparison-receipt.json"),
                "--out", out or os.path.join(qdir, "receipts", "root-qualification.json")] + list(extra)

    def refused(name, args, code, fragment):
        out = args[args.index("--out") + 1]
        rc, text = run(BIN, *args)
        job = os.path.join(os.path.dirname(out), "job.json")
        check("qualify-root refuses: " + name, rc == 3 and refusal_code(text) == code and fragment in text
              and not os.path.exists(out) and not os.path.exists(job), text)

    c1, c2 = os.path.join(runs, "root-cold-1"), os.path.join(runs, "root-cold-2")
    # the C capture records no weights revision, so its self-compare cannot assert one weights identity
    refused("C-engine captures without a weights revision (weights_identity_equal false)", qargs(c1, c2),
            "root_qualification_refused", "forced exact reproduction-confirmation semantics")

    # the plan again, the captures now recording the weights revision and the dataset repository
    rev = "89abcdef0123456789abcdef0123456789abcdef"
    plan = os.path.join(qdir, "plan")
    rc, text = run(BIN, "architectures", "prepare", "--model", model, "--panel", os.path.join(model, "panel"), "--out",
                   plan, "--dataset-id", "fidelity--test.tiny.root", "--weights-revision", rev, "--repository", PUB_REPO)
    assert rc == 0, text
    p = subprocess.run(["sh", os.path.join(plan, "run.sh")], capture_output=True, text=True,
                       env=dict(os.environ, FIDELITY=BIN))
    check("qualify-root: the plan with --weights-revision/--repository runs (captures record both)", p.returncode == 0,
          p.stdout[-1500:] + p.stderr[-1500:])
    qruns = os.path.join(plan, "runs")
    q1, q2 = os.path.join(qruns, "root-cold-1"), os.path.join(qruns, "root-cold-2")
    mq = load(os.path.join(q1, "fidelity-dataset.json"))
    check("capture --weights-revision/--repository: recorded in weights.model_revision and dataset.repository",
          mq["weights"]["model_revision"] == rev and mq["dataset"]["repository"] == PUB_REPO, mq["weights"])
    rc, text = run(BIN, "capture", "--model", model, "--panel", os.path.join(model, "panel"), "--out",
                   os.path.join(qdir, "bad-rev"), "--role", "root", "--lane", "other", "--dataset-id", "x",
                   "--dataset-name", "x", "--weights-revision", "main")
    check("capture refuses a --weights-revision that is not a 40-hex commit", rc == 3 and "40-hex" in text
          and not os.path.exists(os.path.join(qdir, "bad-rev")), text)
    out = os.path.join(qdir, "receipts", "root-qualification.json")
    os.makedirs(os.path.dirname(out))
    refused("the same dataset twice", qargs(q1, q1), "same_root", "two distinct dataset paths")
    refused("one process label twice", qargs(q1, q2, l2="root-cold-1"), "same_process_label", "must differ")
    a = qargs(q1, q2)
    a.remove("--local")
    refused("neither --job nor --local", a, "job_or_local", "exactly one of")
    refused("--job (the pod path)", qargs(q1, q2, extra=("--job", os.path.join(qdir, "job-in.json"))), "job_or_local", "")
    a = qargs(q1, q2)
    i = a.index("--model-dir")
    del a[i:i + 2]
    refused("--local without --model-dir", a, "model_dir_required", "--model-dir")
    refused("swapped process labels", qargs(q1, q2, l1="root-cold-2", l2="root-cold-1"), "root_qualification_refused",
            "process label mismatch")
    refused("a verification receipt of the other root", qargs(q1, q2, v1=q2 + ".verify.json"),
            "root_qualification_refused", "verification receipt names")
    bad = os.path.join(qdir, "bad-comparison.json")
    r = load(os.path.join(qruns, "root-repro", "comparison-receipt.json"))
    r["top1_agreement"] = 0.5
    dump(bad, r)
    refused("a comparison receipt that does not validate", qargs(q1, q2, comparison=bad), "root_qualification_refused",
            "does not validate")
    other = os.path.join(qdir, "other-model")
    shutil.copytree(model, other)
    cfg = load(os.path.join(other, "config.json"))
    cfg["rms_norm_eps"] = 1e-3
    dump(os.path.join(other, "config.json"), cfg)
    refused("a --model-dir that is not the checkpoint the captures ran from", qargs(q1, q2, model_dir=other),
            "root_qualification_refused", "not the checkpoint they ran from")

    rc, text = run(BIN, *qargs(q1, q2))
    check("qualify-root --local: ROOT QUALIFIED", rc == 0 and text.startswith("ROOT QUALIFIED"), text)
    if rc != 0:
        return
    doc = load(out)
    job_path = os.path.join(os.path.dirname(out), "job.json")
    job = load(job_path)
    m1 = load(os.path.join(q1, "fidelity-dataset.json"))
    check("qualify-root: the receipt carries the v1 key set (+ local_execution) and its seal recomputes",
          set(doc) == QUAL_KEYS and doc["schema"] == "fidelity.root-qualification-receipt.v1"
          and seal(dict(doc), "receipt_sha256")["receipt_sha256"] == doc["receipt_sha256"], sorted(doc))
    check("qualify-root: bound to the job contract it wrote (file sha and canonical sha)",
          doc["job_file_sha256"] == sha_file(job_path) and doc["canonical_job_sha256"] == sha(canonical(job))
          and doc["job_contract"]["execution_kind"] == "local" and job["execution_kind"] == "local", doc["job_contract"])
    can, rep = doc["captures"]["canonical"], doc["captures"]["repeat"]
    check("qualify-root: both captures named by dataset_sha256, equal capture_content_digest, distinct labels",
          can["dataset_sha256"] == m1["dataset_sha256"] and can["capture_content_digest"] == rep["capture_content_digest"]
          and can["process_label"] == "root-cold-1" and rep["process_label"] == "root-cold-2"
          and can["dataset_manifest_file_sha256"] == sha_file(os.path.join(q1, "fidelity-dataset.json")), can)
    check("qualify-root: comparison and verifications bound by file digest",
          doc["comparison"]["file_sha256"] == sha_file(os.path.join(qruns, "root-repro", "comparison-receipt.json"))
          and doc["comparison"]["mean_kld"] == 0.0 and doc["verification"]["canonical"]["file_sha256"]
          == sha_file(q1 + ".verify.json") and all(doc["reproduction_confirmation"].values()), doc["comparison"])
    check("qualify-root: the job binds the checkpoint directory (config and shard census)",
          job["target"]["config_sha256"] == sha_file(os.path.join(model, "config.json"))
          and job["target"]["shards"] == [{"path": "model.safetensors",
                                           "bytes": os.path.getsize(os.path.join(model, "model.safetensors"))}], job["target"])
    # the job.v2 target fields of the Python tool's _local_model_dir_identity / _local_root_job, recomputed here
    dl = [{"path": n, "bytes": os.path.getsize(os.path.join(model, n))} for n in sorted(os.listdir(model))
          if not os.path.islink(os.path.join(model, n)) and os.path.isfile(os.path.join(model, n))]
    idx = os.path.join(model, "model.safetensors.index.json")
    t = job["target"]
    want = {"download_manifest": dl, "download_bytes_total": sum(r["bytes"] for r in dl),
            "download_manifest_sha256": sha(canonical(dl)),
            "index_sha256": sha_file(idx) if os.path.isfile(idx) else None,
            "index_bytes": os.path.getsize(idx) if os.path.isfile(idx) else None,
            "config_bytes": os.path.getsize(os.path.join(model, "config.json")),
            "shard_manifest_sha256": sha(canonical(t["shards"])), "model_bytes": sum(r["bytes"] for r in t["shards"]),
            "repo_id": m1["weights"]["repository"], "revision": rev, "requested_revision": rev, "path": None,
            "index_source": "model.safetensors.index.json" if os.path.isfile(idx) else "single-safetensors"}
    if m1["capture"]["dtype"] == "BF16":
        want.update(surface="native-bf16", codec="bf16", bits=16)
    check("qualify-root: the job target carries the job.v2 fields with the Python tool's spelling and values "
          "(download manifest, index and index_source, requested_revision, path, surface/codec/bits)",
          all(k in t and t[k] == v for k, v in want.items()) and len(dl) >= 3,
          {k: (t.get(k), v) for k, v in want.items() if t.get(k) != v})
    check("qualify-root: the job target passes jobcontract.validate_job's target rules for a local CPU root "
          "(rendered here from its code at quant-fidelity-suite 086d4503)", not job_v2_target_errors(t), job_v2_target_errors(t))
    # _local_model_dir_identity: an unindexed CPU root is exactly one complete safetensors file, and an index that
    # is there must be a regular file (the Python tool's own messages)
    for name, edit, fragment in (
            ("a second .safetensors file beside an unindexed checkpoint",
             lambda d: open(os.path.join(d, "extra.safetensors"), "wb").write(b"x"),
             "an unindexed local CPU root must contain exactly one complete safetensors file"),
            ("model.safetensors.index.json that is a symlink",
             lambda d: os.symlink("config.json", os.path.join(d, "model.safetensors.index.json")),
             "--model-dir lacks model.safetensors.index.json (a regular file)")):
        mdir = os.path.join(qdir, "model-" + str(abs(hash(name)) % 10000))
        shutil.copytree(model, mdir, symlinks=True)
        edit(mdir)
        refused(name, qargs(q1, q2, model_dir=mdir, out=os.path.join(mdir + "-q", "root-qualification.json")),
                "root_qualification_refused", fragment)
    STATE["qual"] = {"dataset": q1, "qualification": out, "job": job_path}
    before = open(out, "rb").read()
    rc, text = run(BIN, *qargs(q1, q2))
    check("qualify-root refuses an existing --out (written once)", rc == 3 and refusal_code(text) ==
          "root_qualification_refused" and "written once" in text and open(out, "rb").read() == before, text)


# ------------------------------------------------------------------ publish (loopback Hub with the commit API)
TOKEN = "hf_" + "Lc9x" * 8


class Storage:
    """The LFS object store the batch API hands out upload URLs for: another origin."""

    def __init__(self, hub):
        import http.server, threading

        class S(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_PUT(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                hub.log.append(("PUT", "storage:" + self.path, self.headers.get("Authorization")))
                oid = self.path.rsplit("/", 1)[-1]
                ok = (self.headers.get("X-Upload-Signature") == "sig-" + oid and hashlib.sha256(body).hexdigest() == oid
                      and hub.fault != "lfs500")
                if ok:
                    hub.blobs[oid] = body
                self.send_response(200 if ok else (500 if hub.fault == "lfs500" else 403))
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), S)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]


class Hub:
    """The Hub's commit API (inline and LFS files: preupload, the LFS batch API with uploads to another origin,
    verify), repo creation, HEAD and resolve URLs on 127.0.0.1; faults on demand."""

    def __init__(self):
        import http.server, threading
        self.repos, self.log, self.fault, self.blobs, self.lfs_paths = {}, [], None, {}, set()
        self.failed_once = set()
        hub = self
        self.storage = Storage(self)

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, code, body=b"", ctype="application/json"):
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out first (the stall faults)

            def authed(self):
                return self.headers.get("Authorization") == "Bearer " + TOKEN

            def do_GET(self):
                hub.log.append(("GET", self.path, self.headers.get("Authorization")))
                parts = self.path.split("/")
                if self.path.startswith("/api/datasets/") and parts[5] == "revision":
                    if hub.fault == "head_stall":
                        import time
                        time.sleep(6)
                    if hub.fault in ("head503", "head_stall"):
                        return self.reply(503, b'{"error":"unavailable"}')
                    repo = hub.repos.get(parts[3] + "/" + parts[4])
                    if not repo or not repo["main"]:
                        return self.reply(404, b'{"error":"not found"}')
                    return self.reply(200, json.dumps({"sha": repo["main"]}).encode())
                if self.path.startswith("/datasets/") and parts[4] == "resolve":
                    if hub.fault == "resolve503" or (hub.fault == "resolve503once" and self.path not in hub.failed_once):
                        hub.failed_once.add(self.path)
                        self.send_response(503)
                        self.send_header("Retry-After", "0")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    repo = hub.repos.get(parts[2] + "/" + parts[3])
                    rev = parts[5] if repo and parts[5] != "main" else (repo or {}).get("main")
                    files = (repo or {}).get("commits", {}).get(rev)
                    path = "/".join(parts[6:])
                    if files is None or path not in files:
                        return self.reply(404, b"{}")
                    body = files[path]
                    if hub.fault == "tamper" and path.startswith("capture/") and path.endswith(".safetensors"):
                        body = body[:-1] + bytes([body[-1] ^ 1])
                    return self.reply(200, body, "application/octet-stream")
                return self.reply(404, b"{}")

            def do_POST(self):
                import base64, time
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                hub.log.append(("POST", self.path, self.headers.get("Authorization")))
                if self.path == "/lfs-verify":
                    d = json.loads(body)
                    ok = self.headers.get("X-Verify-Token") == "vt" and len(hub.blobs.get(d["oid"], b"")) == d["size"]
                    return self.reply(200 if ok else 404, b"{}")
                if not self.authed():
                    return self.reply(401, b'{"error":"unauthorized"}')
                parts = self.path.split("/")
                if self.path.startswith("/api/datasets/") and parts[5] == "preupload":
                    if hub.fault == "preupload503":
                        return self.reply(503, b'{"error":"unavailable"}')
                    files = json.loads(body)["files"]
                    return self.reply(200, json.dumps({"files": [
                        {"path": f["path"], "uploadMode": "lfs" if f["size"] > 4096 else "regular",
                         "shouldIgnore": False} for f in files]}).encode())
                if self.path.endswith(".git/info/lfs/objects/batch"):
                    req = json.loads(body)
                    assert req["operation"] == "upload" and req["hash_algo"] == "sha256"
                    objs = []
                    for o in req["objects"]:
                        if o["oid"] in hub.blobs:
                            objs.append({"oid": o["oid"], "size": o["size"]})
                            continue
                        objs.append({"oid": o["oid"], "size": o["size"], "actions": {
                            "upload": {"href": hub.storage.url + "/lfs/" + o["oid"],
                                       "header": {"X-Upload-Signature": "sig-" + o["oid"]}},
                            "verify": {"href": hub.url + "/lfs-verify", "header": {"X-Verify-Token": "vt"}}}})
                    return self.reply(200, json.dumps({"transfer": "basic", "objects": objs}).encode(),
                                      "application/vnd.git-lfs+json")
                if self.path == "/api/repos/create":
                    d = json.loads(body)
                    name = d["organization"] + "/" + d["name"]
                    if name in hub.repos:
                        return self.reply(409, b'{"error":"exists"}')
                    hub.repos[name] = {"main": None, "commits": {}, "private": d.get("private")}
                    return self.reply(200, json.dumps({"url": "/datasets/" + name}).encode())
                parts = self.path.split("/")
                if self.path.startswith("/api/datasets/") and parts[5] == "commit":
                    repo = hub.repos.get(parts[3] + "/" + parts[4])
                    if repo is None:
                        return self.reply(404, b"{}")
                    if hub.fault == "commit500":
                        return self.reply(500, b'{"error":"internal"}')
                    if hub.fault == "commit_stall":
                        time.sleep(6)
                        return self.reply(500, b"{}")
                    lines = [json.loads(l) for l in body.decode().splitlines() if l]
                    head = lines[0]["value"]
                    if head.get("parentCommit") != repo["main"]:
                        return self.reply(412, b'{"error":"parent"}')
                    files = dict(repo["commits"].get(repo["main"]) or {})
                    for l in lines[1:]:
                        v = l["value"]
                        if l["key"] == "lfsFile":
                            if v["algo"] != "sha256" or v["oid"] not in hub.blobs or len(hub.blobs[v["oid"]]) != v["size"]:
                                return self.reply(400, b'{"error":"lfs object missing"}')
                            files[v["path"]] = hub.blobs[v["oid"]]
                            hub.lfs_paths.add(v["path"])
                        else:
                            assert l["key"] == "file" and v["encoding"] == "base64"
                            files[v["path"]] = base64.b64decode(v["content"])
                    oid = hashlib.sha1(body).hexdigest()
                    repo["commits"][oid] = files
                    repo["main"] = oid
                    return self.reply(200, json.dumps({"commitOid": oid, "commitUrl": "x"}).encode())
                return self.reply(404, b"{}")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]


def test_publish_routes(q, pub, hub):
    """cmd_publish's routing by the qualification's job_contract.execution_kind, before any other gate."""
    arch = os.path.join(WORK, "result.tar.gz")
    with open(arch, "wb") as f:
        f.write(b"not an archive")
    triple = ["--result-archive", arch, "--expected-archive-sha256", sha_file(arch), "--expected-archive-bytes", "14"]
    rc, text = pub(*triple)
    check("publish: a local qualification refuses the result-archive flags (publication_has_no_archive)",
          rc == 3 and refusal_code(text) == "publication_has_no_archive" and "local qualification" in text, text)
    rc, text = pub("--result-archive", arch)
    check("publish: one archive flag alone on a local qualification is publication_has_no_archive too",
          rc == 3 and refusal_code(text) == "publication_has_no_archive", text)
    rc, text = pub("--expected-archive-bytes", "0", *triple[:4])
    check("publish: --expected-archive-bytes must be a positive integer (usage)", rc == 4, text)

    def with_kind(kind, where):
        doc = load(q["qualification"])
        if kind is None:
            text = "{ not json"
        else:
            doc["job_contract"]["execution_kind"] = kind
            text = json.dumps(doc)
        os.makedirs(os.path.dirname(where), exist_ok=True)
        with open(where, "w") as f:
            f.write(text)
        return where

    def pub_q(qual, job, dataset, *extra):
        p = subprocess.run([BIN, "publish", dataset, "--repo", PUB_REPO, "--qualification", qual, "--job", job,
                            "--expected-head", "absent", "--dry-run"] + list(extra), capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    qh = with_kind("hf-jobs", os.path.join(WORK, "route", "hf.json"))
    rc, text = pub_q(qh, q["job"], q["dataset"], *triple)
    check("publish: an hf-jobs qualification refuses the archive flags naming its kind",
          rc == 3 and refusal_code(text) == "publication_has_no_archive" and "hf-jobs qualification" in text, text)
    for kind, label in (("runpod-ssh", "a pod (runpod-ssh) qualification"), (None, "an unreadable qualification")):
        qp = with_kind(kind, os.path.join(WORK, "route", "pod.json"))
        rc, text = pub_q(qp, q["job"], q["dataset"])
        check("publish: %s without the archive triple is result_archive_required" % label,
              rc == 3 and refusal_code(text) == "result_archive_required", text)
        rc, text = pub_q(qp, q["job"], q["dataset"], *triple)
        check("publish: %s outside one private extraction is publication_source_invalid" % label,
              rc == 3 and refusal_code(text) == "publication_source_invalid" and "canonical verified extraction" in text,
              text)
    # the extraction layout of _private_publish_inputs: ROOT/dataset, ROOT/receipts/..., ROOT/job.json, ROOT 0700
    root = os.path.join(WORK, "route", "extraction")
    shutil.copytree(q["dataset"], os.path.join(root, "dataset"))
    qp = with_kind("runpod-ssh", os.path.join(root, "receipts", "root-qualification.json"))
    shutil.copyfile(q["job"], os.path.join(root, "job.json"))
    os.chmod(root, 0o755)
    args = (qp, os.path.join(root, "job.json"), os.path.join(root, "dataset"), *triple)
    rc, text = pub_q(*args)
    check("publish: a pod extraction root that is not mode 0700 is publication_source_invalid",
          rc == 3 and refusal_code(text) == "publication_source_invalid" and "mode-0700" in text, text)
    os.chmod(root, 0o700)
    n = len(hub.log)
    rc, text = pub_q(*args)
    check("publish: a pod qualification in a private extraction ends in the named refusal "
          "pod_publication_unsupported (nothing sent)", rc == 3 and refusal_code(text) == "pod_publication_unsupported"
          and "not implemented" in text and len(hub.log) == n, text)
    os.symlink(os.path.join(root, "job.json"), os.path.join(WORK, "route", "job-link.json"))
    rc, text = pub_q(qp, os.path.join(WORK, "route", "job-link.json"), os.path.join(root, "dataset"), *triple)
    check("publish: a symlinked pod input is publication_source_invalid",
          rc == 3 and refusal_code(text) == "publication_source_invalid" and "symlinks" in text, text)


def test_publish():
    q = STATE.get("qual")
    if not q:
        check("publish: qualify-root produced a qualification", False)
        return
    hub = Hub()
    tok = os.path.join(WORK, "token")
    with open(tok, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(tok, 0o600)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env.update(HF_ENDPOINT=hub.url, HOME=WORK, FIDELITY_HUB_TIMEOUT="2", TMPDIR=WORK)

    def pub(*extra, head="absent", repo=PUB_REPO, receipt=None):
        args = [BIN, "publish", q["dataset"], "--repo", repo, "--qualification", q["qualification"], "--job", q["job"],
                "--expected-head", head] + list(extra) + (["--receipt", receipt] if receipt else [])
        p = subprocess.run(args, capture_output=True, text=True, env=env)
        return p.returncode, p.stdout + p.stderr

    rc, text = pub("--dry-run")
    check("publish --dry-run: every gate, no token, nothing sent", rc == 0 and "DRY RUN" in text and not hub.log, text)
    rc, text = pub("--private", "--token-file", tok)
    check("publish --private is refused", rc == 3 and refusal_code(text) == "public_publication_required", text)
    rc, text = pub("--token-file", tok, head="main")
    check("publish --expected-head must be absent or 40 hex (usage)", rc == 4, text)
    test_publish_routes(q, pub, hub)
    rc, text = pub("--token-file", tok, repo="someone/else")
    check("publish to a repository the qualification does not name is refused", rc == 3
          and refusal_code(text) == "qualification_invalid" and "do not match publish repository" in text, text)
    rc, text = pub()
    check("publish without a token is refused before any commit", rc == 3 and refusal_code(text) == "publish_refused"
          and not any(m == "POST" for m, _, _ in hub.log), text)

    hub.fault = "commit500"
    rc, text = pub("--token-file", tok, receipt=os.path.join(WORK, "pub-500.json"))
    repo = hub.repos.get(PUB_REPO) or {}
    check("publish: a 5xx on the commit is a refusal, nothing reported as published", rc == 3
          and refusal_code(text) == "publish_refused" and "not confirmed" in text and "published " not in text
          and not os.path.exists(os.path.join(WORK, "pub-500.json")) and not repo.get("main"), text)
    hub.fault = "commit_stall"
    rc, text = pub("--token-file", tok, receipt=os.path.join(WORK, "pub-stall.json"))
    check("publish: a commit that times out is a refusal, nothing reported as published", rc == 3
          and refusal_code(text) == "publish_refused" and "not confirmed" in text
          and not os.path.exists(os.path.join(WORK, "pub-stall.json")), text)
    hub.fault = "lfs500"
    hub.blobs.clear()
    rc, text = pub("--token-file", tok, receipt=os.path.join(WORK, "pub-lfs500.json"))
    check("publish: a 5xx on an LFS upload is a refusal before any commit", rc == 3
          and refusal_code(text) == "publish_refused" and "no commit was made" in text
          and not (hub.repos.get(PUB_REPO) or {}).get("main") and not os.path.exists(os.path.join(WORK, "pub-lfs500.json")),
          text)
    for fault, what in (("preupload503", "a 5xx on preupload"), ("head503", "a 5xx on the destination HEAD"),
                        ("head_stall", "a destination HEAD that times out")):
        hub.fault = fault
        hub.log.clear()
        out = os.path.join(WORK, "pub-%s.json" % fault)
        rc, text = pub("--token-file", tok, receipt=out)
        check("publish: %s is a refusal before any commit, nothing reported as published" % what, rc == 3
              and refusal_code(text) == "publish_refused" and "published " not in text and not os.path.exists(out)
              and not (hub.repos.get(PUB_REPO) or {}).get("main")
              and not any(m == "POST" and "/commit/" in p for m, p, _ in hub.log), text)
    hub.fault = None
    hub.log.clear()
    rcpt = os.path.join(WORK, "pub-receipt.json")
    rc, text = pub("--token-file", tok, receipt=rcpt)
    check("publish: one commit, anonymous re-download verifies, receipt written", rc == 0 and "published " in text
          and "verify" in text and os.path.isfile(rcpt), text)
    if rc != 0:
        return
    repo = hub.repos[PUB_REPO]
    files = repo["commits"][repo["main"]]
    local = tree(q["dataset"])
    check("publish: the commit holds exactly the dataset's bytes + receipts/root-qualification.json",
          {k: v for k, v in files.items() if k != "receipts/root-qualification.json"} == local
          and files["receipts/root-qualification.json"] == open(q["qualification"], "rb").read(), sorted(files))
    big = sorted(k for k, v in files.items() if len(v) > 4096)
    check("publish: the large files went through LFS (batch, upload to the storage origin, verify), the rest inline",
          big and sorted(hub.lfs_paths) == big, (big, sorted(hub.lfs_paths)))
    stor = [(m, p, a) for m, p, a in hub.log if p.startswith("storage:")]
    check("publish: no token to the LFS storage origin (only the signature its action names)",
          stor and all(a is None for _, _, a in stor), stor)
    api = [(m, p, a) for m, p, a in hub.log if p.startswith("/api/") or p.endswith("/objects/batch")]
    res = [(m, p, a) for m, p, a in hub.log if p.startswith("/datasets/") and "/resolve/" in p]
    check("publish: the token went to the API calls only; every resolve read was anonymous",
          api and all(a == "Bearer " + TOKEN for _, _, a in api) and res and all(a is None for _, _, a in res), hub.log)
    check("publish: the token never appears in the output", TOKEN not in text and "Lc9x" not in text, text)
    r = load(rcpt)
    m = load(os.path.join(q["dataset"], "fidelity-dataset.json"))
    check("publish --receipt: sealed, the immutable revision, verified anonymously",
          r["revision"] == repo["main"] and r["dataset_sha256"] == m["dataset_sha256"] and r["verified_anonymously"] is True
          and r["schema"] == "fidelity.publish-root-receipt.v2"
          and seal(dict(r), "receipt_sha256")["receipt_sha256"] == r["receipt_sha256"], r)
    rc, text = pub("--token-file", tok)
    check("publish: --expected-head absent against an existing HEAD is refused before any commit", rc == 3
          and refusal_code(text) == "publish_refused" and "HEAD is " + repo["main"] in text, text)
    first = repo["main"]
    hub.fault = "tamper"
    rc, text = pub("--token-file", tok, head=first, receipt=os.path.join(WORK, "pub-tamper.json"))
    check("publish: bytes that do not verify after the commit are refused (no receipt)", rc == 3
          and refusal_code(text) == "publish_verify_failed" and not os.path.exists(os.path.join(WORK, "pub-tamper.json")),
          text)
    hub.fault = "resolve503"
    out = os.path.join(WORK, "pub-resolve503.json")
    rc, text = pub("--token-file", tok, head=repo["main"], receipt=out)
    check("publish: a persistent 5xx on the anonymous re-download is publish_verify_failed (the commit is not "
          "re-sent), no receipt, never reported verified", rc == 3 and refusal_code(text) == "publish_verify_failed"
          and "dataset and qualification verify" not in text and not os.path.exists(out)
          and sum(1 for m, p, _ in hub.log if m == "POST" and "/commit/" in p) >= 1, text)
    hub.fault = "resolve503once"
    hub.log.clear()
    out = os.path.join(WORK, "pub-resolve503once.json")
    rc, text = pub("--token-file", tok, head=repo["main"], receipt=out)
    commits = [p for m, p, _ in hub.log if m == "POST" and "/commit/" in p]
    check("publish: a transient 5xx on each anonymous read is retried (idempotent GET), one commit only, verified",
          rc == 0 and "dataset and qualification verify" in text and os.path.isfile(out) and len(commits) == 1
          and hub.failed_once, text)
    hub.fault = None
    rc, text = pub("--token-file", tok, head=repo["main"])
    check("publish: --expected-head at the current HEAD commits on top of it (parentCommit) and verifies", rc == 0
          and repo["main"] != first, text)
    hub.server.shutdown()


test_reseal()
test_architectures()
test_panel_binding()
test_qualify_root()
test_publish()
shutil.rmtree(WORK, ignore_errors=True)
print("%d/%d passed" % (sum(results), len(results)))
sys.exit(0 if all(results) else 1)
