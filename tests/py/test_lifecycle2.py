#!/usr/bin/env python3
"""The remaining lifecycle pieces of issue 23 (docs/LIFECYCLE.md).

1. panel build --upstream-layout: a panel we build from text resolves under
   panel-binding; the binding is checked field by field against the document
   the Python tool's panel.resolve_panel computes, rendered here independently
   from the files (numpy for the arrays, tarfile for the archive digest), and
   the receipt against what resolve_panel checks (self-blank seal,
   tokenizer.files_sha256, parameters, final_* counts).
2. capture --panel-binding FILE: the binding's file digest recorded where the
   Python tool's hf_capture.py records it (runtime capture_tool
   resolved_panel_binding*), verified against the panel used; tokenizer files
   admitted through .reference equivalences recorded (tokenizer_equivalences)
   and disclosed as hf_capture does; the manifest's panel tokenizer and
   receipt identity replaced by the binding's (bind_resolved_panel_tokenizer).
3. strict JSON: a duplicate key refused at each lifecycle reader entry point.
4. architectures prepare with the Python tool's flags, panel-binding.json
   written; architectures list = every entry of the engine's table.

usage: test_lifecycle2.py BINARY"""
import hashlib, io, json, os, shutil, subprocess, sys, tarfile, tempfile
from dsutil import load, dump, sha, sha_file, seal, canonical, run, refusal_code

BIN = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
WORK = tempfile.mkdtemp(prefix="fd-lifecycle2-")
REV = "0123456789abcdef0123456789abcdef01234567"
TOK_REPO = "tester/tiny-tokenizer"
ARCHIVE_ALGORITHM = "sha256(ustar: sorted regular files; mode=0644; uid=gid=mtime=0)"
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + str(detail)[-3000:]))


def json_diff(a, b, path="$"):
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


def npy_load(path):
    import numpy as np
    return np.load(path, allow_pickle=False)


def resolved_panel(root, tok_root, role="final"):
    """panel.resolve_panel's document for a panel with a build receipt, from the files alone."""
    panel_raw = open(os.path.join(root, "panel.json"), "rb").read()
    receipt_raw = open(os.path.join(root, "panel.receipt.json"), "rb").read()
    panel, receipt = json.loads(panel_raw), json.loads(receipt_raw)
    files = sorted(os.path.relpath(os.path.join(d, n), root) for d, _, ns in os.walk(root) for n in ns)
    manifest = [{"path": r, "bytes": os.path.getsize(os.path.join(root, r)), "sha256": sha_file(os.path.join(root, r))}
                for r in files]
    by_sha = {m["sha256"]: m["path"] for m in manifest}
    sel, all_digests = [], []
    for row in panel["windows"]:
        wid = row["window_id"]
        tp, mp = "arrays/%s.tokens.npy" % wid, "arrays/%s.mask.npy" % wid
        assert by_sha.get(row["token_ids_sha256"]) == tp, (wid, tp)
        assert sha_file(os.path.join(root, mp)) == row["attention_mask_sha256"], (wid, mp)
        ids = [int(v) for v in npy_load(os.path.join(root, tp))]
        mask = [int(v) for v in npy_load(os.path.join(root, mp))]
        pairs = sum(1 for k in range(1, len(mask)) if mask[k - 1] == 1 and mask[k] == 1)
        js = sha(json.dumps(ids, separators=(",", ":")).encode())
        all_digests.append((wid, js))
        if row["role"] == role:
            sel.append((wid, len(ids), pairs, js))
    sel.sort()
    all_digests.sort()
    h, n = hashlib.sha256(), [0]

    class Sink:
        def write(self, b):
            h.update(b)
            n[0] += len(b)
            return len(b)

    with tarfile.open(fileobj=Sink(), mode="w|", format=tarfile.USTAR_FORMAT) as tar:
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
    assert sha(canonical(body)) == claimed, "receipt seal is not self-blank"
    tk = receipt["tokenizer"]
    fmap = tk["files_sha256"]
    tok_files = []
    for name in sorted(fmap):
        raw = open(os.path.join(tok_root, os.path.basename(name)), "rb").read()
        assert sha(raw) == fmap[name], name
        tok_files.append({"name": os.path.basename(name), "bytes": len(raw), "sha256": fmap[name]})
    identity = sha(canonical({"repository": tk["repository"], "revision": tk["revision"],
                              "files_sha256": dict(sorted(fmap.items())), "vocab_size": tk["vocab_size"]}) + b"\n")
    return {"schema": "malaiwah.resolved-panel.v1",
            "panel": {"id": panel.get("panel_id") or receipt.get("panel_id"), "name": panel.get("name") or receipt.get("panel_name"),
                      "role": role, "contexts": len(sel), "context_length": sel[0][1], "positions_per_context": sel[0][2],
                      "scored_positions_total": sum(s[2] for s in sel),
                      "suite_token_hash_sha256": sha("\n".join(s[3] for s in sel).encode()),
                      "file": "panel.json", "bytes": len(panel_raw), "sha256": sha(panel_raw)},
            "receipt": {"file": "panel.receipt.json", "bytes": len(receipt_raw), "declared_receipt_sha256": claimed,
                        "receipt_seal_mode": "self-blank", "receipt_file_sha256": sha(receipt_raw)},
            "tokenizer": {"id": tk["repository"], "repository": tk["repository"], "revision": tk["revision"],
                          "vocab_size": tk["vocab_size"], "maximum_token_id_exclusive": tk["vocab_size"],
                          "identity_sha256": identity, "files": tok_files, "files_verified": True, "receipt": None},
            "content": {"manifest": manifest, "manifest_sha256": sha(canonical(manifest)),
                        "archive": {"format": "ustar", "compression": "none", "algorithm": ARCHIVE_ALGORITHM,
                                    "bytes": n[0], "sha256": h.hexdigest()}}}, all_digests


MODEL = os.path.join(WORK, "tiny")
PROSE = os.path.join(WORK, "prose.txt")


def setup():
    rc, text = run(BIN, "fixture", "--preset", "tiny", "--seed", "5", "--out", MODEL)
    assert rc == 0, text
    with open(PROSE, "w") as f:
        f.write("The capital of France is Paris. " * 20 + "A quick brown fox jumps over the lazy dog. " * 20)


def build_upstream(out, *extra, rev=REV, repo=TOK_REPO):
    return run(BIN, "panel", "build", "--out", out, "--tokenizer", os.path.join(MODEL, "tokenizer.json"),
               "--context-length", "24", "--windows", "5", "--upstream-layout", "--tokenizer-repository", repo,
               "--tokenizer-revision", rev, *extra, PROSE)


# ------------------------------------------------------------------ 1. our own panels bind
def test_upstream_panel():
    root = os.path.join(WORK, "up-panel")
    rc, text = build_upstream(root, "--panel-id", "panel--tiny.prose", "--name", "tiny prose")
    check("panel build --upstream-layout: exit 0", rc == 0 and "PANEL WRITTEN" in text, text)
    if rc != 0:
        return None
    files = sorted(os.path.relpath(os.path.join(d, n), root) for d, _, ns in os.walk(root) for n in ns)
    want_files = ["arrays/final-%04d.%s.npy" % (w, k) for w in range(5) for k in ("mask", "tokens")] + \
                 ["panel.json", "panel.receipt.json"]
    check("upstream layout: arrays/<id>.tokens.npy + arrays/<id>.mask.npy per window, panel.json, panel.receipt.json",
          files == sorted(want_files), files)
    receipt = load(os.path.join(root, "panel.receipt.json"))
    panel = load(os.path.join(root, "panel.json"))
    tok_sha = sha_file(os.path.join(MODEL, "tokenizer.json"))
    body = dict(receipt)
    body["receipt_sha256"] = ""
    check("receipt: malaiwah.token-panel-build-receipt.v1, self-blank seal (sha256 of canonical JSON, receipt_sha256 '')",
          receipt.get("schema") == "malaiwah.token-panel-build-receipt.v1" and receipt["receipt_sha256"] == sha(canonical(body)),
          receipt)
    check("receipt: tokenizer pinned (repository, 40-hex revision) and files_sha256 = {tokenizer.json: its sha256}",
          receipt["tokenizer"]["repository"] == TOK_REPO and receipt["tokenizer"]["revision"] == REV
          and receipt["tokenizer"]["files_sha256"] == {"tokenizer.json": tok_sha}
          and panel["tokenizer"]["repository"] == TOK_REPO and panel["tokenizer"]["revision"] == REV, receipt["tokenizer"])
    check("receipt: the builder named honestly (this binary, its version)",
          receipt.get("tool") == "fidelity panel build" and receipt.get("tool_version", "").startswith("fidelity "), receipt)
    out = os.path.join(WORK, "up-binding.json")
    rc, text = run(BIN, "panel-binding", "--panel", root, "--tokenizer-root", MODEL, "--out", out)
    check("panel-binding on a panel we built: exit 0", rc == 0 and "panel binding written" in text, text)
    if rc != 0:
        return None
    got = load(out)
    want, digests = resolved_panel(root, MODEL)
    p = receipt["parameters"]
    check("receipt parameters / final_* = the windows' arrays (resolve_panel's checks)",
          p["context_length"] == 24 and p["windows_total"] == 5 and p["prediction_positions_per_window"] == 23
          and p["scored_positions_total"] == 5 * 23 and receipt["final_windows"] == 5
          and receipt["final_prediction_positions"] == 5 * 23
          and receipt["suite_token_hash_sha256"] == sha("\n".join(d for _, d in digests).encode()), receipt)
    for section in ("panel", "receipt", "tokenizer", "content"):
        check("binding of our panel: %s = the resolve_panel rendering" % section, got.get(section) == want[section],
              json_diff(got.get(section), want[section]))
    check("binding of our panel: the whole document, canonical JSON + newline",
          got == want and open(out, "rb").read() == canonical(got) + b"\n", json_diff(got, want))

    # refusals: nothing written
    for name, args, code in (("a branch name as --tokenizer-revision", dict(rev="main"), "bad_usage"),
                             ("a repository without owner/", dict(repo="tokenizer"), "bad_usage")):
        dst = os.path.join(WORK, "up-refused")
        rc, text = build_upstream(dst, **args)
        check("panel build --upstream-layout refuses %s (nothing written)" % name,
              rc == 3 and refusal_code(text) == code and not os.path.exists(dst), text)
    ids = os.path.join(WORK, "ids.json")
    with open(ids, "w") as f:
        json.dump([[1, 2, 3, 4], [5, 6, 7, 8]], f)
    rc, text = run(BIN, "panel", "build", "--out", os.path.join(WORK, "up-ids"), "--vocab", "100", "--upstream-layout",
                   "--tokenizer-repository", TOK_REPO, "--tokenizer-revision", REV, ids)
    check("panel build --upstream-layout without a tokenizer (token-id input) is a usage error",
          rc == 4 and not os.path.exists(os.path.join(WORK, "up-ids")), text)
    rc, text = run(BIN, "panel", "build", "--out", os.path.join(WORK, "up-norepo"), "--tokenizer",
                   os.path.join(MODEL, "tokenizer.json"), "--context-length", "24", "--tokenizer-revision", REV, PROSE)
    check("--tokenizer-revision without --upstream-layout is a usage error", rc == 4, text)
    return root, out


# ------------------------------------------------------------------ 2. capture --panel-binding
def runtime_of(ds):
    m = load(os.path.join(ds, "fidelity-dataset.json"))
    return load(os.path.join(ds, m["runtime"]["file"]))


# panel.py's tokenizer_config_equivalent / config_equivalent / _per_model_provenance_equivalent and
# hf_capture.py's disclosures of them, rendered from their text (malaiwah's fidelity/panel.py,
# engines/tools/hf_capture.py), not from our output
LOADER_KEYS = {"tokenizer_config.json": ["local_files_only"], "config.json": ["transformers_version"]}
REASONS = {"tokenizer_config.json": "the panel is transported token ids and is never re-tokenized; the tokenizer "
                                    "files are identity evidence, not computation",
           "config.json": "transformers_version is the saver's version, not a model property; the panel is "
                          "transported token ids and is never re-tokenized"}


def py_equivalence(name, root_raw, cand_raw):
    base = {"name": name, "root_sha256": sha(root_raw), "root_bytes": len(root_raw),
            "candidate_sha256": sha(cand_raw), "candidate_bytes": len(cand_raw)}
    if name not in LOADER_KEYS:
        return dict(base, rule="per-model provenance: the panel's identity is tokenizer.json + tokenizer_config.json; "
                               "this file is the target's own",
                    reason="the panel is transported token ids and is never re-tokenized; this file is identity "
                           "evidence for the target, not the panel")
    keys = LOADER_KEYS[name]
    r, c = json.loads(root_raw), json.loads(cand_raw)
    assert {k: v for k, v in r.items() if k not in keys} == {k: v for k, v in c.items() if k not in keys}
    return dict(base, rule="canonical JSON equal after dropping loader-only keys", loader_keys_allowlist=list(keys),
                keys_dropped_from_root=sorted(k for k in keys if k in r),
                keys_dropped_from_candidate=sorted(k for k in keys if k in c), reason=REASONS[name])


def py_disclosure(q):
    if "keys_dropped_from_root" in q:
        return {"code": "tokenizer_config_loader_keys_ignored", "severity": "info", "affects_comparability": False,
                "detail": "%s differs from the reference root's bound file (root sha256 %s, %d bytes; candidate sha256 "
                          "%s, %d bytes) only by loader-only keys (dropped from root: %s; from candidate: %s; allowlist "
                          "%s); canonical JSON is otherwise identical. Reason: %s."
                          % (q["name"], q["root_sha256"], q["root_bytes"], q["candidate_sha256"], q["candidate_bytes"],
                             q["keys_dropped_from_root"] or "none", q["keys_dropped_from_candidate"] or "none",
                             q["loader_keys_allowlist"], q["reason"])}
    return {"code": "tokenizer_file_provenance_admitted", "severity": "info", "affects_comparability": False,
            "detail": "%s differs from the reference root's bound file (root sha256 %s, %d bytes; candidate sha256 %s, "
                      "%d bytes) and is admitted as per-model provenance. Reason: %s."
                      % (q["name"], q["root_sha256"], q["root_bytes"], q["candidate_sha256"], q["candidate_bytes"],
                         q["reason"])}


def check_bound_identity(label, ds, panel_root, binding, equivalences):
    """hf_capture's bind_resolved_panel_tokenizer + its equivalence disclosures, on a sealed dataset."""
    m = load(os.path.join(ds, "fidelity-dataset.json"))
    pdoc = load(os.path.join(ds, m["panel"]["panel_file"]))
    ev = runtime_of(ds)["capture_tool"]["resolved_panel_binding"]
    check("bound capture (%s): resolved_panel_binding.tokenizer_equivalences = panel.py's records" % label,
          ev["tokenizer_equivalences"] == equivalences and ev["binding"] == binding,
          json_diff(ev["tokenizer_equivalences"], equivalences))
    check("bound capture (%s): manifest and panel.json tokenizer = the binding's tokenizer identity" % label,
          m["panel"]["tokenizer"] == binding["tokenizer"] and pdoc["tokenizer"] == binding["tokenizer"],
          json_diff(m["panel"]["tokenizer"], binding["tokenizer"]))
    raw = open(os.path.join(panel_root, "panel.receipt.json"), "rb").read()
    shipped = os.path.join(ds, "panel", "panel-receipt.json")
    check("bound capture (%s): panel_receipt_sha256 = the receipt's declared identity (manifest, panel.json); "
          "panel/panel-receipt.json = its bytes, digest = binding receipt_file_sha256" % label,
          m["panel"]["panel_receipt_sha256"] == binding["receipt"]["declared_receipt_sha256"]
          and pdoc["panel_receipt_sha256"] == binding["receipt"]["declared_receipt_sha256"]
          and m["panel"].get("panel_receipt_file") == "panel/panel-receipt.json" and os.path.isfile(shipped)
          and open(shipped, "rb").read() == raw and sha(raw) == binding["receipt"]["receipt_file_sha256"], m["panel"])
    want = [py_disclosure(q) for q in equivalences]
    got = [d for d in m["disclosures"] if d["code"] in ("tokenizer_config_loader_keys_ignored",
                                                         "tokenizer_file_provenance_admitted")]
    check("bound capture (%s): the disclosures = hf_capture's, one per equivalence, in order" % label, got == want,
          json_diff(got, want))
    rc, text = run(BIN, "verify", ds)
    check("bound capture (%s): fidelity verify" % label, rc == 0, text)
    rc, text = run(sys.executable, os.path.join(HERE, "ref_check.py"), ds)
    check("bound capture (%s): ref_check.py (independent seal chain, checksums cover panel-receipt.json)" % label,
          rc == 0 and text.startswith("OK "), text)


def test_capture_equivalences(root, refused):
    """Tokenizer files admitted only through their .reference copies: recorded and disclosed, as hf_capture does."""
    eq_panel, eq_tok = os.path.join(WORK, "up-eq"), os.path.join(WORK, "tok-eq")
    shutil.copytree(root, eq_panel)
    shutil.copytree(MODEL, eq_tok)
    cfg = load(os.path.join(MODEL, "config.json"))
    pairs = {  # name: (the root's bytes, under .reference/; the candidate's, in the tokenizer root)
        "tokenizer_config.json": (b'{"model_max_length": 16, "tokenizer_class": "TokenizersBackend"}\n',
                                  b'{"model_max_length": 16, "tokenizer_class": "TokenizersBackend", '
                                  b'"local_files_only": false}\n'),
        "config.json": (json.dumps(dict(cfg, transformers_version="4.57.1"), indent=2).encode() + b"\n",
                        json.dumps(dict(cfg, transformers_version="5.16.1"), indent=1).encode()),
        "LICENSE": (b"root license\n", b"the target's own license, longer\n"),
    }
    os.makedirs(os.path.join(eq_tok, ".reference"))
    for name, (rraw, craw) in pairs.items():
        with open(os.path.join(eq_tok, ".reference", name), "wb") as f:
            f.write(rraw)
        with open(os.path.join(eq_tok, name), "wb") as f:
            f.write(craw)
    rp = os.path.join(eq_panel, "panel.receipt.json")
    r = load(rp)
    for name, (rraw, _) in pairs.items():
        r["tokenizer"]["files_sha256"][name] = sha(rraw)
    seal(r, "receipt_sha256")
    dump(rp, r)
    eq_bind = os.path.join(WORK, "eq-binding.json")
    rc, text = run(BIN, "panel-binding", "--panel", eq_panel, "--tokenizer-root", eq_tok, "--out", eq_bind)
    check("panel-binding admits the .reference equivalences (the binding names the root's bytes)",
          rc == 0 and {f["name"]: (f["bytes"], f["sha256"]) for f in load(eq_bind)["tokenizer"]["files"]
                       if f["name"] in pairs} == {n: (len(v[0]), sha(v[0])) for n, v in pairs.items()}, text)
    if rc != 0:
        return
    out = os.path.join(WORK, "cap-eq")
    rc, text = run(BIN, "capture", "--model", MODEL, "--panel", eq_panel, "--out", out, "--role", "root", "--windows",
                   "2", "--panel-binding", eq_bind, "--panel-binding-sha256", sha_file(eq_bind),
                   "--panel-tokenizer-root", eq_tok)
    check("capture --panel-binding whose tokenizer files verify only through .reference equivalences: sealed",
          rc == 0 and "SEALED DATASET" in text, text)
    if rc != 0:
        return
    want = [py_equivalence(n, *pairs[n]) for n in sorted(pairs)]
    check("panel.py's records: LICENSE provenance, config.json (transformers_version dropped on both sides), "
          "tokenizer_config.json (local_files_only dropped from the candidate)",
          [q["name"] for q in want] == ["LICENSE", "config.json", "tokenizer_config.json"]
          and want[1]["keys_dropped_from_root"] == want[1]["keys_dropped_from_candidate"] == ["transformers_version"]
          and want[2]["keys_dropped_from_root"] == [] and want[2]["keys_dropped_from_candidate"] == ["local_files_only"],
          want)
    check_bound_identity(".reference equivalences", out, eq_panel, load(eq_bind), want)
    m = load(os.path.join(out, "fidelity-dataset.json"))
    check("bound capture with equivalences: the same capture_content_digest as the plain capture",
          m["capture"]["capture_content_digest"]
          == load(os.path.join(WORK, "cap-plain", "fidelity-dataset.json"))["capture"]["capture_content_digest"], m)
    # refusals stay: a difference beyond the loader key, a serialization-only difference, a wrong .reference copy
    bad = os.path.join(WORK, "tok-eq-bad")
    for name, craw, fragment in (
            ("a tokenizer_config.json differing beyond the loader key",
             b'{"model_max_length": 17, "tokenizer_class": "TokenizersBackend", "local_files_only": false}\n',
             "keys differ beyond ['local_files_only']: ['model_max_length']"),
            ("a tokenizer_config.json differing only in serialization",
             b'{"tokenizer_class": "TokenizersBackend", "model_max_length": 16}',
             "differs from the root's only in serialization")):
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(eq_tok, bad)
        with open(os.path.join(bad, "tokenizer_config.json"), "wb") as f:
            f.write(craw)
        refused(name, eq_panel, eq_bind, sha_file(eq_bind), fragment, extra=("--panel-tokenizer-root", bad))
    shutil.rmtree(bad, ignore_errors=True)
    shutil.copytree(eq_tok, bad)
    with open(os.path.join(bad, ".reference", "LICENSE"), "wb") as f:
        f.write(b"not the root's license\n")
    refused("a .reference copy that is not the root's bound file", eq_panel, eq_bind, sha_file(eq_bind),
            ".reference/LICENSE does not carry the root's bound LICENSE", extra=("--panel-tokenizer-root", bad))
    refused("the equivalence binding against the byte-identical tokenizer root (a different tokenizer identity)",
            eq_panel, eq_bind, sha_file(eq_bind), "panel binding REFUSED")


def test_capture_binding(up):
    root, bfile = up
    bsha = sha_file(bfile)
    out = os.path.join(WORK, "cap-bound")
    rc, text = run(BIN, "capture", "--model", MODEL, "--panel", root, "--out", out, "--role", "root", "--windows", "2",
                   "--panel-binding", bfile, "--panel-binding-sha256", bsha)
    check("capture --panel-binding: sealed", rc == 0 and "SEALED DATASET" in text, text)
    if rc != 0:
        return
    ev = runtime_of(out)["capture_tool"]["resolved_panel_binding"]
    check("capture --panel-binding: runtime capture_tool.resolved_panel_binding = hf_capture.py's evidence "
          "{binding_file, binding_file_sha256, binding, tokenizer_equivalences}",
          ev == {"binding_file": os.path.basename(bfile), "binding_file_sha256": bsha, "binding": load(bfile),
                 "tokenizer_equivalences": []}, ev)
    rc, text = run(BIN, "verify", out)
    check("capture --panel-binding: the dataset verifies", rc == 0, text)
    plain = os.path.join(WORK, "cap-plain")
    rc, text = run(BIN, "capture", "--model", MODEL, "--panel", root, "--out", plain, "--role", "root", "--windows", "2")
    check("capture without --panel-binding: resolved_panel_binding null, same capture_content_digest",
          rc == 0 and runtime_of(plain)["capture_tool"]["resolved_panel_binding"] is None
          and load(os.path.join(plain, "fidelity-dataset.json"))["capture"]["capture_content_digest"]
          == load(os.path.join(out, "fidelity-dataset.json"))["capture"]["capture_content_digest"], text)

    def refused(name, panel, binding, bsha_, fragment, code="panel_binding_refused", extra=()):
        dst = os.path.join(WORK, "cap-refused")
        args = ["capture", "--model", MODEL, "--panel", panel, "--out", dst, "--role", "root", "--windows", "2"]
        if binding:
            args += ["--panel-binding", binding]
        if bsha_:
            args += ["--panel-binding-sha256", bsha_]
        rc, text = run(BIN, *args, *extra)
        check("capture --panel-binding refuses %s (nothing written)" % name,
              rc == 3 and refusal_code(text) == code and fragment in text and not os.path.exists(dst)
              and not any(n.startswith("cap-refused.") for n in os.listdir(WORK)), text)

    other = os.path.join(WORK, "up-other")
    rc, text = build_upstream(other, "--panel-id", "panel--tiny.other")
    assert rc == 0, text
    obind = os.path.join(WORK, "other-binding.json")
    rc, text = run(BIN, "panel-binding", "--panel", other, "--tokenizer-root", MODEL, "--out", obind)
    assert rc == 0, text
    refused("a binding of another panel, by name", root, obind, sha_file(obind),
            "binds panel 'panel--tiny.other', but the panel used")
    refused("a --panel-binding-sha256 that is not the file's", root, bfile, "0" * 64, "--panel-binding-sha256 mismatch")
    refused("--panel-binding without --panel-binding-sha256", root, bfile, None, "go together", code="bad_usage")
    edited = os.path.join(WORK, "up-edited")
    shutil.copytree(root, edited)
    d = load(os.path.join(edited, "panel.json"))
    d["name"] = "renamed after binding"
    dump(os.path.join(edited, "panel.json"), d)
    refused("a panel whose bytes changed after the binding", edited, bfile, bsha,
            "do not equal the complete --panel-binding contract")
    tok = os.path.join(WORK, "tok-changed")
    os.makedirs(tok)
    with open(os.path.join(tok, "tokenizer.json"), "w") as f:
        f.write("{}")
    refused("tokenizer files that fail under --panel-tokenizer-root", root, bfile, bsha, "tokenizer artifact tokenizer.json",
            extra=("--panel-tokenizer-root", tok))
    # under mpirun: every shard verifies the binding, `merge` keeps the record
    mpi = os.path.join(HERE, "..", "..", "build-mpi", "fidelity")
    if not (shutil.which("mpirun") and os.path.isfile(mpi)):
        print("ok   capture --panel-binding under mpirun + merge: skipped (mpirun or build-mpi/fidelity absent)")
    else:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1")
        mout = os.path.join(WORK, "cap-mpi")
        flags = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        p = subprocess.run(["mpirun"] + flags + ["-np", "2", mpi, "capture", "--model", MODEL, "--panel", root, "--out",
                            mout, "--role", "root", "--windows", "2", "--panel-binding", bfile, "--panel-binding-sha256",
                            bsha], capture_output=True, text=True, env=env, timeout=300)
        shards = ["%s.shard-%d-of-2" % (mout, r) for r in range(2)]
        rc, text = run(BIN, "merge", *shards, "--out", mout) if p.returncode == 0 else (p.returncode, p.stdout + p.stderr)
        check("capture --panel-binding under mpirun -np 2, merged: the record kept, the same content digest",
              rc == 0 and runtime_of(mout)["capture_tool"]["resolved_panel_binding"] == ev
              and load(os.path.join(mout, "fidelity-dataset.json"))["capture"]["capture_content_digest"]
              == load(os.path.join(out, "fidelity-dataset.json"))["capture"]["capture_content_digest"], text)
        if rc == 0:
            check_bound_identity("mpirun -np 2, merged", mout, root, load(bfile), [])

    # the bound capture's panel identity (hf_capture's bind_resolved_panel_tokenizer) and no equivalence
    check_bound_identity("byte-identical tokenizer files", out, root, load(bfile), [])
    pm = load(os.path.join(plain, "fidelity-dataset.json"))["panel"]
    check("capture without --panel-binding: panel_receipt_sha256 null, no panel_receipt_file, the inferred tokenizer",
          pm["panel_receipt_sha256"] is None and "panel_receipt_file" not in pm
          and not os.path.exists(os.path.join(plain, "panel", "panel-receipt.json"))
          and set(pm["tokenizer"]) == {"id", "repository", "revision", "vocab_size", "add_special_tokens",
                                       "chat_template_applied"}, pm)
    rc, text = run(BIN, "compare", "--reference", out, "--candidate", plain, "--out", os.path.join(WORK, "cmp-bound"))
    check("compare: a bound root against an unbound capture of the same panel passes PANEL-D6 (the keys both "
          "tokenizer blocks carry agree)", rc == 0, text)
    tampered = os.path.join(WORK, "binding-tampered.json")
    t = load(bfile)
    t["tokenizer"]["files"][0]["sha256"] = "0" * 64
    with open(tampered, "wb") as f:
        f.write(canonical(t) + b"\n")
    refused("a tampered binding (its own sha256 supplied)", root, tampered, sha_file(tampered),
            "do not equal the complete --panel-binding contract")
    test_capture_equivalences(root, refused)
    dup = os.path.join(WORK, "binding-dup.json")
    raw = open(bfile, "rb").read()
    with open(dup, "wb") as f:
        f.write(b'{"schema":"x",' + raw[1:])
    refused("a binding file with a duplicate key (strict JSON)", root, dup, sha_file(dup), "duplicate")


# ------------------------------------------------------------------ 4. architectures list / prepare (the Python tool's flags)
PUB_REPO = "tester/tiny-root"
MODEL_REPO = "tester/tiny"
WREV = "89abcdef0123456789abcdef0123456789abcdef"


def test_architectures(up):
    table = open(os.path.join(HERE, "..", "..", "src", "engine", "archtable.c")).read()
    table = table[table.index("FD_ARCHS[] = {"):]
    table = table[:table.index("};")]
    n_table = table.count("&FD_ARCH_")
    rc, text = run(BIN, "architectures", "list", "--json")
    doc = json.loads(text) if rc == 0 else {}
    archs = doc.get("architectures", [])
    check("architectures list --json: every entry of the engine's table (%d), each with its formats" % n_table,
          len(archs) == n_table and len({a["model_type"] for a in archs}) == n_table
          and all(a["formats"] and a["formats"][0] == "bf16" for a in archs), [a.get("model_type") for a in archs])
    rc, text = run(BIN, "architectures", "list")
    check("architectures list: a line per table entry, with its formats",
          rc == 0 and all(any(l.split() and l.split()[0] == a["model_type"] for l in text.splitlines()) for a in archs)
          and text.count("; formats: ") == n_table, text)

    root, bfile = up
    plan = os.path.join(WORK, "plan-py")
    py_flags = ["--architecture", "glm_moe_dsa", "--model-dir", MODEL, "--model-repository", MODEL_REPO,
                "--model-revision", WREV, "--panel", root, "--dataset-repository", PUB_REPO,
                "--dataset-id", "fidelity--test.tiny.root", "--author", "tester"]
    rc, text = run(BIN, "architectures", "prepare", *py_flags, "--out", plan)
    check("architectures prepare with the Python tool's flags: exit 0, panel-binding.json written",
          rc == 0 and os.path.isfile(os.path.join(plan, "panel-binding.json")), text)
    if rc != 0:
        return None
    raw = open(os.path.join(plan, "panel-binding.json"), "rb").read()
    bdoc = json.loads(raw)
    check("panel-binding.json: the panel's resolved binding (= `panel-binding`), written as coverage.prepare_recipe "
          "does (json.dumps(sort_keys=True, indent=2) + newline)",
          bdoc == load(bfile) and raw == (json.dumps(bdoc, sort_keys=True, indent=2, allow_nan=False) + "\n").encode(),
          json_diff(bdoc, load(bfile)))
    wf = load(os.path.join(plan, "workflow.json"))
    bsha = sha(raw)
    check("workflow.json: panel_binding_sha256, model_repository, model_revision, dataset_repository, author",
          wf["panel_binding_sha256"] == bsha and wf["model_repository"] == MODEL_REPO and wf["model_revision"] == WREV
          and wf["dataset_repository"] == PUB_REPO and wf["author"] == "tester"
          and wf["config_sha256"] == sha_file(os.path.join(MODEL, "config.json")), wf)
    caps = [st["argv"] for st in wf["steps"] if st["argv"][1] == "capture"]

    def val(argv, flag):
        return argv[argv.index(flag) + 1] if flag in argv else None
    check("each capture step binds the panel (--panel-binding, its sha256, --panel-tokenizer-root) and carries "
          "--weights-repository, --weights-revision, --repository, --author",
          len(caps) == 2 and all(val(a, "--panel-binding") == os.path.join(plan, "panel-binding.json")
                                 and val(a, "--panel-binding-sha256") == bsha
                                 and val(a, "--panel-tokenizer-root") == os.path.abspath(MODEL)
                                 and val(a, "--weights-repository") == MODEL_REPO and val(a, "--weights-revision") == WREV
                                 and val(a, "--repository") == PUB_REPO and val(a, "--author") == "tester" for a in caps), caps)
    p = subprocess.run(["sh", os.path.join(plan, "run.sh")], capture_output=True, text=True, env=dict(os.environ, FIDELITY=BIN))
    check("run.sh runs: two bound captures, verify, self-compare", p.returncode == 0, p.stdout[-1500:] + p.stderr[-1500:])
    if p.returncode != 0:
        return None
    runs = os.path.join(plan, "runs")
    c1 = os.path.join(runs, "root-cold-1")
    ev = runtime_of(c1)["capture_tool"]["resolved_panel_binding"]
    m = load(os.path.join(c1, "fidelity-dataset.json"))
    check("the plan's captures record the binding evidence and the author",
          ev["binding_file"] == "panel-binding.json" and ev["binding_file_sha256"] == bsha and ev["binding"] == bdoc
          and m["dataset"]["author"]["handle"] == "tester" and m["dataset"]["repository"] == PUB_REPO, (ev.keys(), m["dataset"]))

    # the Python spellings are aliases: the same plan as --model / --weights-revision / --repository
    plan2 = os.path.join(WORK, "plan-ours")
    ours = [{"--model-dir": "--model", "--model-revision": "--weights-revision",
             "--dataset-repository": "--repository"}.get(f, f) for f in py_flags]
    rc, text = run(BIN, "architectures", "prepare", *ours, "--out", plan2)
    wf2 = load(os.path.join(plan2, "workflow.json")) if rc == 0 else {}
    check("--model-dir / --model-revision / --dataset-repository are aliases of --model / --weights-revision / --repository",
          rc == 0 and json.dumps(wf2.get("steps")).replace(plan2, plan) == json.dumps(wf["steps"]), text)

    # a panel that does not resolve (no panel.receipt.json): planned without a binding, said so
    plain = os.path.join(WORK, "plan-nobind")
    rc, text = run(BIN, "architectures", "prepare", "--model", MODEL, "--panel", os.path.join(MODEL, "panel"), "--out", plain)
    wf3 = load(os.path.join(plain, "workflow.json")) if rc == 0 else {}
    check("prepare with a panel that does not resolve: no panel-binding.json, the reason in workflow.json, captures unbound",
          rc == 0 and not os.path.exists(os.path.join(plain, "panel-binding.json")) and wf3["panel_binding_sha256"] is None
          and "panel receipt" in wf3["panel_binding_note"] and "panel binding       none:" in text
          and not any("--panel-binding" in st["argv"] for st in wf3["steps"]), text)

    def refused(name, args, fragment):
        dst = os.path.join(WORK, "plan-refused")
        rc, text = run(BIN, "architectures", "prepare", *args, "--out", dst)
        check("architectures prepare refuses %s (capture_workflow, nothing written)" % name,
              rc == 3 and refusal_code(text) == "capture_workflow" and fragment in text and not os.path.exists(dst)
              and not any(n.startswith("plan-refused.") for n in os.listdir(WORK)), text)

    base = ["--model-dir", MODEL, "--panel", root]
    refused("an --architecture the config does not belong to", base + ["--architecture", "llama"],
            "Model config does not belong to the selected architecture: glm_moe_dsa")
    refused("an unknown --architecture", base + ["--architecture", "mistral"], "Unknown architecture: mistral")
    refused("a --model-revision that is not a 40-hex commit", base + ["--model-revision", "main"],
            "model revision must be a full lowercase 40-character commit")
    refused("a --model-repository without owner/", base + ["--model-repository", "tiny"],
            "model repository must be owner/repository")
    refused("a --dataset-repository without owner/", base + ["--dataset-repository", "a/b/c"],
            "dataset repository must be owner/repository")
    refused("an --author that is not a handle", base + ["--author", "-me"], "author must be your actual HF handle")
    refused("a --dataset-id not beginning fidelity--", base + ["--dataset-id", "tiny.root"],
            "dataset ID must begin fidelity--")
    refused("an explicit --tokenizer-root the panel's tokenizer files do not verify under",
            base + ["--tokenizer-root", os.path.join(WORK, "tok-changed")], "tokenizer artifact tokenizer.json")
    return plan


# ------------------------------------------------------------------ 3. strict JSON: a duplicate key at each lifecycle reader
def with_dup(src, dst):
    """A copy whose top-level object repeats its first key before the original: Python's json keeps the last
    (the original) value, so to it the document and every seal in it are unchanged."""
    raw = open(src, "rb").read()
    d = json.loads(raw)
    k = sorted(d)[0]
    with open(dst, "wb") as f:
        f.write(b"{" + json.dumps(k).encode() + b": " + json.dumps(d[k]).encode() + b", " + raw.lstrip()[1:])
    return dst


def test_dupkeys(up, plan):
    root, bfile = up
    dup = os.path.join(WORK, "dup")
    os.makedirs(dup)

    def refused(name, args, code, out=None):
        rc, text = run(BIN, *args)
        check("duplicate key refused: %s (%s, exit 3%s)" % (name, code, ", nothing written" if out else ""),
              rc == 3 and refusal_code(text) == code and "duplicate object key" in text
              and (not out or not os.path.exists(out)), text)

    # panel-binding: panel.json, panel.receipt.json (resolve_panel's _json_file: PanelError -> panel_unresolvable)
    for member in ("panel.json", "panel.receipt.json"):
        d = os.path.join(dup, "panel-" + member)
        shutil.copytree(root, d)
        with_dup(os.path.join(root, member), os.path.join(d, member))
        out = os.path.join(dup, "b-%s.json" % member)
        refused("panel-binding, " + member, ["panel-binding", "--panel", d, "--tokenizer-root", MODEL, "--out", out],
                "panel_unresolvable", out)
    # capture --panel-binding: the binding file
    b = with_dup(bfile, os.path.join(dup, "binding.json"))
    out = os.path.join(dup, "cap")
    refused("capture --panel-binding, the binding file", ["capture", "--model", MODEL, "--panel", root, "--out", out,
            "--role", "root", "--panel-binding", b, "--panel-binding-sha256", sha_file(b)], "panel_binding_refused", out)
    # architectures prepare: config.json
    m = os.path.join(dup, "model")
    shutil.copytree(MODEL, m)
    with_dup(os.path.join(MODEL, "config.json"), os.path.join(m, "config.json"))
    out = os.path.join(dup, "plan")
    refused("architectures prepare, config.json", ["architectures", "prepare", "--model", m, "--panel", root, "--out", out],
            "capture_workflow", out)
    if not plan:
        check("duplicate keys: the architectures plan ran (qualify-root / publish / reseal inputs)", False)
        return
    runs = os.path.join(plan, "runs")
    c1, c2 = os.path.join(runs, "root-cold-1"), os.path.join(runs, "root-cold-2")
    cmp_ = os.path.join(runs, "root-repro", "comparison-receipt.json")
    # reseal: the dataset manifest
    ds = os.path.join(dup, "dataset")
    shutil.copytree(c1, ds)
    with_dup(os.path.join(c1, "fidelity-dataset.json"), os.path.join(ds, "fidelity-dataset.json"))
    out = os.path.join(dup, "resealed")
    refused("reseal, fidelity-dataset.json", ["reseal", ds, "--out", out], "reseal_refused", out)

    def qargs(v1, comparison, out):
        return ["qualify-root", "--local", "--model-dir", MODEL, "--first", c1, "--repeat", c2, "--first-label",
                "root-cold-1", "--repeat-label", "root-cold-2", "--first-verify", v1, "--repeat-verify",
                c2 + ".verify.json", "--comparison", comparison, "--out", out]
    out = os.path.join(dup, "q1", "root-qualification.json")
    refused("qualify-root, a verify report", qargs(with_dup(c1 + ".verify.json", os.path.join(dup, "v1.json")), cmp_, out),
            "root_qualification_refused", out)
    refused("qualify-root, the comparison receipt",
            qargs(c1 + ".verify.json", with_dup(cmp_, os.path.join(dup, "cmp.json")), out), "root_qualification_refused", out)
    qdir = os.path.join(dup, "q", "receipts")
    os.makedirs(qdir)
    qual = os.path.join(qdir, "root-qualification.json")
    rc, text = run(BIN, *qargs(c1 + ".verify.json", cmp_, qual))
    check("qualify-root on the plan's bound captures (the qualification publish reads)", rc == 0, text)
    if rc != 0:
        return
    job = os.path.join(qdir, "job.json")

    def pub(q, j):
        return ["publish", c1, "--repo", PUB_REPO, "--qualification", q, "--job", j, "--expected-head", "absent",
                "--dry-run"]
    rc, text = run(BIN, *pub(qual, job))
    check("publish --dry-run on the untouched qualification: accepted", rc == 0 and "DRY RUN" in text, text)
    refused("publish, job.json", pub(qual, with_dup(job, os.path.join(dup, "job.json"))), "qualification_invalid")
    refused("publish, the qualification (routing reads it as Python's None)",
            pub(with_dup(qual, os.path.join(dup, "qual.json")), job), "result_archive_required")


def main():
    setup()
    up = test_upstream_panel()
    if up:
        test_capture_binding(up)
        plan = test_architectures(up)
        test_dupkeys(up, plan)
    shutil.rmtree(WORK, ignore_errors=True)
    print("%d/%d checks passed" % (sum(results), len(results)))
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
