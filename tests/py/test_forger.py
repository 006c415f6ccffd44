#!/usr/bin/env python3
"""A resealed dataset is a forger's dataset (issue 16.11).

Starts from valid datasets (`write-fixture`, and a real `capture` of the tiny
fixture model), applies one forgery each, then RESEALS everything the way a
forger can: the edited sub-manifests' seals, the token digests and suite hash,
capture_content_digest, the manifest's sub-manifest digests, checksums.txt and
the manifest seal.  Only the meaning is wrong, so `verify` must refuse with the
named code (exit 3) and `validate` must report it.  Then the same for
comparison receipts: impossible values, resealed, must fail `validate --receipt`.

usage: test_forger.py BINARY"""
import json, os, shutil, struct, subprocess, sys, tempfile
from dsutil import load, dump, seal, reseal, run, refusal_code, sha, sha_file

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
WORK = tempfile.mkdtemp(prefix="fd-forger-")
results = []
CAP, PANEL, HEAD, VAL = "capture/manifest.json", "panel/panel.json", "head/head.json", "validation/structural-validation.json"


def check(name, ok, detail=""):
    results.append(ok)
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + str(detail)[-1500:]))


# --- the forger's tools ----------------------------------------------------------------

def edit_json(root, rel, fn):
    """Edit one JSON file; re-seal it when it carries a receipt_sha256."""
    p = os.path.join(root, rel)
    doc = load(p)
    fn(doc)
    if "receipt_sha256" in doc:
        seal(doc, "receipt_sha256")
    dump(p, doc)


def token_digests(ids):
    return sha(json.dumps(ids, separators=(",", ":")).encode()), sha(json.dumps(ids).encode())


def write_tokens(root, index, ids):
    """Replace window `index`'s token ids and recompute every digest that follows from them."""
    prec = [r for r in load(os.path.join(root, PANEL))["records"] if r["index"] == index][0]
    with open(os.path.join(root, prec["token_file"]), "w") as f:
        f.write(json.dumps(ids, separators=(",", ":")))
    new, legacy = token_digests(ids)

    def fix_records(doc):
        for r in doc["records"]:
            if r["index"] == index:
                r["token_ids_json_sha256"], r["token_ids_sha256_legacy"] = new, legacy
                if "token_ids_first16" in r:
                    r["token_ids_first16"], r["token_ids_last16"] = ids[:16], ids[-16:]
                if "num_tokens" in r:
                    r["num_tokens"] = len(ids)
    edit_json(root, CAP, fix_records)
    suite = {}

    def fix_panel(doc):
        fix_records(doc)
        per = [r["token_ids_json_sha256"] for r in sorted(doc["records"], key=lambda r: r["index"])]
        suite["new"] = sha("\n".join(per).encode("ascii"))
        suite["legacy"] = sha("".join(per).encode())
        doc["suite_token_hash_sha256"] = suite["new"]
        if doc.get("panel_token_sha256_legacy"):
            doc["panel_token_sha256_legacy"] = suite["legacy"]
    edit_json(root, PANEL, fix_panel)
    return suite


def write_mask(root, index, values, descr="<i8", shape=None):
    """Replace window `index`'s mask with a numpy.save-style file and re-digest it everywhere."""
    shape = len(values) if shape is None else shape
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, shape)
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    fmt = {"<i8": "q", "<i4": "i", "|u1": "B", "|b1": "B"}[descr]
    data = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + \
        struct.pack("<%d%s" % (len(values), fmt), *values)
    prec = [r for r in load(os.path.join(root, PANEL))["records"] if r["index"] == index][0]
    with open(os.path.join(root, prec["attention_mask_file"]), "wb") as f:
        f.write(data)
    digest = sha(data)

    def fix(doc):
        for r in doc["records"]:
            if r["index"] == index:
                r["attention_mask_sha256"] = digest
    edit_json(root, CAP, fix)
    edit_json(root, PANEL, fix)


def content_digest(records):
    return sha("\n".join("%d:%s" % (r["index"], r["tensor_content_sha256"])
                         for r in sorted(records, key=lambda r: r["index"])).encode())


def safetensors_blob(key, shape, dtype="BF16"):
    n = 1
    for d in shape:
        n *= d
    width = {"BF16": 2, "F32": 4}[dtype]
    payload = bytes((i * 7) & 0x3f for i in range(n * width))
    hdr = json.dumps({key: {"dtype": dtype, "shape": shape, "data_offsets": [0, len(payload)]}},
                     separators=(",", ":")).encode()
    hdr += b" " * (-len(hdr) % 8)
    return struct.pack("<Q", len(hdr)) + hdr + payload, sha(payload)


def finish(root, manifest_edit=None):
    """capture_content_digest from the (edited) records, then every digest and seal up to the manifest."""
    cm = load(os.path.join(root, CAP))
    ccd = content_digest(cm["records"])
    if cm.get("capture_content_digest") != ccd:
        edit_json(root, CAP, lambda d: d.__setitem__("capture_content_digest", ccd))
    panel = load(os.path.join(root, PANEL))

    def m_edit(m):
        m["capture"]["capture_content_digest"] = ccd
        m["panel"]["suite_token_hash_sha256"] = panel["suite_token_hash_sha256"]
        if panel.get("panel_token_sha256_legacy"):
            m["panel"]["panel_token_sha256_legacy"] = panel["panel_token_sha256_legacy"]
        if ccd not in m["determinism"]["evidence_hashes"] and m["determinism"]["evidence_kind"] == "hidden_state_tensor_sha256":
            m["determinism"]["evidence_hashes"] = [ccd]
        if os.path.isfile(os.path.join(root, HEAD)):  # the head identity follows head/head.json
            h = load(os.path.join(root, HEAD))
            for k in ("file_sha256", "tensor_content_sha256", "raw_tensor_sha256"):
                if k in h:
                    m["head"][k] = h[k]
        if manifest_edit:
            manifest_edit(m)
    reseal(root, manifest_edit=m_edit)


def setpath(d, path, value):
    keys = path.split(".")
    for k in keys[:-1]:
        d = d[int(k)] if isinstance(d, list) else d[k]
    if isinstance(d, list):
        d[int(keys[-1])] = value
    else:
        d[keys[-1]] = value


def both(root, edits):
    """Set values in sub-manifests ({(rel, dotted.path): value}), each re-sealed."""
    for (rel, path), value in edits.items():
        edit_json(root, rel, lambda d, p=path, v=value: setpath(d, p, v))


# --- the cases ----------------------------------------------------------------------------

def expect(base, name, code, forge, *flags):
    root = os.path.join(WORK, name)
    shutil.copytree(base, root, symlinks=True)
    forge(root)
    rc, out = run(BIN, "verify", root, *flags)
    got = refusal_code(out)
    check("verify   %-34s -> %s" % (name, code), rc == 3 and got == code, "rc=%d code=%s\n%s" % (rc, got, out))
    rc, out = run(BIN, "validate", root, *flags)
    check("validate %-34s -> %s" % (name, code), rc == 3 and ("[%s/" % code) in out, "rc=%d\n%s" % (rc, out))
    shutil.rmtree(root, ignore_errors=True)


def untouched(base, name):
    root = os.path.join(WORK, name)
    shutil.copytree(base, root, symlinks=True)
    finish(root)  # a reseal that changes nothing must keep the dataset valid
    rc, out = run(BIN, "verify", root)
    check("verify   %-34s -> VERIFIED" % name, rc in (0, 2) and "VERIFIED" in out, out)
    shutil.rmtree(root, ignore_errors=True)


def rm(rel):
    return lambda root: os.remove(os.path.join(root, rel))


def then(*steps, manifest_edit=None):
    def f(root):
        for s in steps:
            s(root)
        finish(root, manifest_edit)
    return f


def cap_rec(i, key, value):
    return lambda root: edit_json(root, CAP, lambda d: setpath(d, "records.%d.%s" % (i, key), value))


def panel_rec(i, key, value):
    def f(root):
        def g(d):
            if value is DELETE:
                del d["records"][i][key]
            else:
                d["records"][i][key] = value
        edit_json(root, PANEL, g)
    return f


DELETE = object()


def dataset_cases(base, tag, vocab, length, hidden):
    untouched(base, tag + "-resealed-untouched")
    # pointers that lead nowhere, or to a directory
    expect(base, tag + "-tensor-deleted", "missing_file", then(rm("capture/hidden_0001.safetensors")))
    expect(base, tag + "-record-file-nowhere", "missing_file",
           then(rm("capture/hidden_0001.safetensors"), cap_rec(1, "file", "hidden_9999.safetensors")))
    expect(base, tag + "-record-file-dir", "missing_file",
           then(lambda r: os.mkdir(os.path.join(r, "capture", "d.safetensors")), cap_rec(1, "file", "d.safetensors")))
    expect(base, tag + "-token-file-null", "missing_file", then(panel_rec(0, "token_file", None)))
    expect(base, tag + "-token-file-absent", "missing_file", then(panel_rec(0, "token_file", DELETE)))
    expect(base, tag + "-mask-file-nowhere", "missing_file",
           then(panel_rec(0, "attention_mask_file", "panel/masks/none.npy")))
    expect(base, tag + "-mask-file-dir", "missing_file", then(panel_rec(0, "attention_mask_file", "panel/masks")))
    expect(base, tag + "-mask-file-null", "missing_file", then(panel_rec(0, "attention_mask_file", None)))
    # masks are opened
    expect(base, tag + "-mask-all-zero", "geometry_mismatch", then(lambda r: write_mask(r, 0, [0] * length)))
    expect(base, tag + "-mask-value-2", "mask_invalid", then(lambda r: write_mask(r, 0, [1] * (length - 1) + [2])))
    expect(base, tag + "-mask-short", "mask_invalid", then(lambda r: write_mask(r, 0, [1] * (length - 1))))
    expect(base, tag + "-mask-float", "mask_invalid",
           then(lambda r: write_mask(r, 0, [1] * length, descr="<i8", shape=length + 1)))
    # token ids against the vocabulary
    expect(base, tag + "-token-out-of-vocab", "token_out_of_range",
           then(lambda r: write_tokens(r, 1, [vocab] + [1] * (length - 1))))
    expect(base, tag + "-token-negative", "token_out_of_range",
           then(lambda r: write_tokens(r, 1, [-1] + [1] * (length - 1))))
    # sub-manifest identity, the validation sub-manifest
    expect(base, tag + "-capture-schema", "bad_schema",
           then(lambda r: edit_json(r, CAP, lambda d: d.__setitem__("schema", "malaiwah.fidelity-capture-manifest.v2"))))
    expect(base, tag + "-panel-format-version", "bad_schema",
           then(lambda r: edit_json(r, PANEL, lambda d: d.__setitem__("format_version", 2))))
    expect(base, tag + "-head-schema", "bad_schema",
           then(lambda r: edit_json(r, HEAD, lambda d: d.__setitem__("schema", "malaiwah.fidelity-panel-binding.v1"))))
    expect(base, tag + "-runtime-schema", "bad_schema",
           then(lambda r: edit_json(r, "runtime/capture-runtime.json", lambda d: d.__setitem__("schema", "x"))))
    expect(base, tag + "-validation-says-invalid", "validation_mismatch",
           then(lambda r: edit_json(r, VAL, lambda d: d.update(structural_status="invalid", error_count=1, errors=[
               {"code": "seal_failed", "rule": "SEAL-1", "message": "forged", "where": ""}]))))
    expect(base, tag + "-validation-counts", "validation_mismatch",
           then(lambda r: edit_json(r, VAL, lambda d: d.__setitem__("warning_count", 3))))
    def break_val_seal(root):
        p = os.path.join(root, VAL)
        d = load(p)
        d["checks_run"] = ["forged"]  # edited, and NOT re-sealed
        dump(p, d)
    expect(base, tag + "-validation-seal", "seal_failed", then(break_val_seal))
    expect(base, tag + "-validation-schema", "bad_schema",
           then(lambda r: edit_json(r, VAL, lambda d: d.__setitem__("schema", "malaiwah.fidelity-dataset.v1"))))
    # declared geometry against the files
    expect(base, tag + "-context-length", "geometry_mismatch", then(lambda r: both(r, {
        (PANEL, "context_length"): 4096, (CAP, "context_length"): 4096}),
        manifest_edit=lambda m: setpath(m, "panel.context_length", 4096)))
    expect(base, tag + "-context-length-manifest-only", "geometry_mismatch",
           then(manifest_edit=lambda m: setpath(m, "panel.context_length", length + 1)))
    expect(base, tag + "-records-count", "geometry_mismatch",
           then(manifest_edit=lambda m: setpath(m, "capture.records_count", 7)))
    expect(base, tag + "-scored-rows-total", "geometry_mismatch", then(lambda r: both(r, {
        (CAP, "total_scored_rows"): 999}), manifest_edit=lambda m: setpath(m, "capture.scored_rows_total", 999)))
    expect(base, tag + "-contexts", "geometry_mismatch", then(lambda r: both(r, {(PANEL, "contexts"): 9}),
                                                             manifest_edit=lambda m: setpath(m, "panel.contexts", 9)))
    expect(base, tag + "-index-range", "geometry_mismatch",
           then(manifest_edit=lambda m: setpath(m, "coverage.index_range", [0, 7])))
    expect(base, tag + "-missing-sample-present", "geometry_mismatch",
           then(manifest_edit=lambda m: setpath(m, "coverage.missing_indices_sample", [1])))
    expect(base, tag + "-coverage-disagrees", "geometry_mismatch",
           then(lambda r: edit_json(r, CAP, lambda d: setpath(d, "coverage.subset_detail", "forged"))))
    expect(base, tag + "-size-bytes", "geometry_mismatch", then(cap_rec(0, "size_bytes", 12345)))
    expect(base, tag + "-total-size-bytes", "geometry_mismatch", then(lambda r: both(r, {
        (CAP, "total_size_bytes"): 1}), manifest_edit=lambda m: setpath(m, "capture.total_size_bytes", 1)))
    sw = lambda v: (lambda m: setpath(m, "panel.scoring_window.score_from", v))
    expect(base, tag + "-score-from", "geometry_mismatch",
           then(lambda r: both(r, {(PANEL, "scoring_window.score_from"): 3}), manifest_edit=sw(3)))
    expect(base, tag + "-score-from-past-end", "geometry_mismatch",
           then(lambda r: both(r, {(PANEL, "scoring_window.score_from"): length}), manifest_edit=sw(length)))
    expect(base, tag + "-capture-vs-cm-vocab", "geometry_mismatch",
           then(manifest_edit=lambda m: setpath(m, "capture.vocab_size", vocab * 2)))
    expect(base, tag + "-tokenizer-disagrees", "geometry_mismatch",
           then(lambda r: edit_json(r, PANEL, lambda d: setpath(d, "tokenizer.id", "someone/else"))))
    # the head: shape, bits, presence, its sub-manifest
    hs = lambda v: (lambda m: setpath(m, "head.shape", v))
    expect(base, tag + "-head-shape", "geometry_mismatch",
           then(lambda r: both(r, {(HEAD, "shape"): [vocab, hidden * 2]}), manifest_edit=hs([vocab, hidden * 2])))
    expect(base, tag + "-head-bits", "geometry_mismatch", then(lambda r: both(r, {(HEAD, "bits"): 4}),
           manifest_edit=lambda m: (setpath(m, "head.bits", 4), setpath(m, "weights.declared_head_bits", 4))))
    expect(base, tag + "-head-json-disagrees", "head_mismatch",
           then(lambda r: both(r, {(HEAD, "tensor_key"): "model.embed_tokens.weight"})))
    expect(base, tag + "-head-file-deleted", "missing_file", then(rm("head/weight.safetensors")))
    expect(base, tag + "-head-file-null", "missing_file", then(lambda r: both(r, {(HEAD, "file"): None}),
                                                               manifest_edit=lambda m: setpath(m, "head.file", None)))

    def swap_head(shape):
        def f(root):
            m = load(os.path.join(root, "fidelity-dataset.json"))
            blob, content = safetensors_blob(m["head"]["tensor_key"], shape)
            with open(os.path.join(root, m["head"]["file"]), "wb") as fh:
                fh.write(blob)
            edit_json(root, HEAD, lambda d: d.update(file_sha256=sha(blob), tensor_content_sha256=content,
                                                     raw_tensor_sha256=content))
        return f
    expect(base, tag + "-head-tensor-shape", "geometry_mismatch", then(swap_head([vocab, hidden // 2])))


# --- receipts -----------------------------------------------------------------------------

def receipt_cases(receipt_path):
    base = load(receipt_path)

    def rcase(name, code, fn):
        doc = json.loads(json.dumps(base))
        fn(doc)
        seal(doc, "receipt_sha256")
        p = os.path.join(WORK, "receipt-" + name + ".json")
        dump(p, doc)
        rc, out = run(BIN, "validate", "--receipt", p)
        check("receipt  %-34s -> %s" % (name, code), rc == 3 and ("[%s/" % code) in out, "rc=%d\n%s" % (rc, out))

    rc, out = run(BIN, "validate", "--receipt", receipt_path)
    check("receipt  untouched validates", rc == 0, out)
    doc = json.loads(json.dumps(base))
    seal(doc, "receipt_sha256")
    p = os.path.join(WORK, "receipt-resealed.json")
    dump(p, doc)
    rc, out = run(BIN, "validate", "--receipt", p)
    check("receipt  resealed untouched validates", rc == 0, out)
    S = lambda path, v: (lambda d: setpath(d, path, v))
    rcase("negative-kl-mean", "receipt_impossible", lambda d: (setpath(d, "kl.mean", -0.5), setpath(d, "metric.value", -0.5),
                                                                setpath(d, "kl_micro_token_mean", -0.5)))
    rcase("negative-p99", "receipt_impossible", S("kl.p99", -1e-3))
    rcase("percentiles-out-of-order", "receipt_impossible", S("kl.p95", d_max(base) * 2))
    rcase("max-below-mean", "receipt_impossible", S("kl.max", base["kl"]["mean"] / 2))
    rcase("ci-low-above-high", "receipt_impossible",
          lambda d: (setpath(d, "uncertainty.ci95_low", 1.0), setpath(d, "uncertainty.ci95_high", 0.5)))
    rcase("negative-rows", "receipt_impossible", S("per_context.0.scored_rows", -11))
    rcase("negative-scored-positions", "receipt_impossible", S("measurement_scope.scored_positions", -33))
    rcase("top1-above-one", "receipt_impossible", S("top1_agreement", 1.5))
    rcase("top1-negative-context", "receipt_impossible", S("per_context.1.top1_agreement", -0.1))
    rcase("metric-not-mean", "receipt_inconsistent", S("metric.value", base["kl"]["mean"] * 3))
    rcase("negative-reverse-kl", "receipt_impossible", S("kl_reverse_mean", -1.0))
    rcase("negative-entropy", "receipt_impossible", S("reference_entropy_mean", -1.0))
    rcase("rows-disagree", "receipt_inconsistent", S("measurement_scope.scored_positions", 34))
    rcase("contexts-disagree", "receipt_inconsistent", S("measurement_scope.contexts", 4))
    rcase("panel-positions-disagree", "receipt_inconsistent", S("panel.scored_positions", 30))
    rcase("clusters-disagree", "receipt_inconsistent", S("uncertainty.clusters", 7))
    rcase("context-max-below-mean", "receipt_impossible", S("per_context.0.max", base["per_context"][0]["mean"] / 2))
    rcase("context-mean-moved", "receipt_inconsistent", S("per_context.0.mean", base["per_context"][0]["mean"] / 2))
    rcase("max-not-context-max", "receipt_inconsistent", S("kl.max", base["kl"]["max"] * 1.5))
    rcase("negative-ci-low", "receipt_impossible", S("uncertainty.ci95_low", -1e-6))
    rcase("run-means-order", "receipt_impossible", S("determinism.min_run_mean", 1.0))
    rcase("nan-free-huge-js", "receipt_impossible", S("js", 0.9))
    rcase("run-means-disagree", "receipt_inconsistent", S("determinism.run_count", 2))
    # fp64 rounding can leave a KL statistic of (nearly) equal distributions a few ulps below 0: that
    # is a possible receipt (KL_FLOOR = -1e-9 nats); -1e-6 is not
    doc = json.loads(json.dumps(base))
    setpath(doc, "kl_reverse_mean", -1e-16)
    seal(doc, "receipt_sha256")
    p = os.path.join(WORK, "receipt-ulp-negative-min.json")
    dump(p, doc)
    rc, out = run(BIN, "validate", "--receipt", p)
    check("receipt  kl_reverse_mean -1e-16 (rounding) still validates", rc == 0, out)
    rcase("reverse-kl-negative-1e-6", "receipt_impossible", S("kl_reverse_mean", -1e-6))


def d_max(r):
    return r["kl"]["max"]


try:
    # 1. write-fixture
    fx = os.path.join(WORK, "fixture")
    rc, out = run(BIN, "write-fixture", "--out", fx, "--records", "3", "--tokens", "12", "--hidden", "8",
                  "--vocab", "32", "--seed", "7")
    check("write-fixture", rc == 0, out)
    dataset_cases(fx, "fx", vocab=32, length=12, hidden=8)

    # 2. a real capture of the tiny fixture model
    model = os.path.join(WORK, "m")
    rc, out = run(BIN, "fixture", "--preset", "tiny", "--seed", "1", "--out", model)
    check("tiny fixture model", rc == 0, out)
    cap = os.path.join(WORK, "cap")
    rc, out = run(BIN, "capture", "--model", model, "--panel", os.path.join(model, "panel"), "--out", cap, "--role",
                  "root", "--lane", "other", "--dataset-id", "test.forger", "--dataset-name", "test forger",
                  "--cold-run", "c1", "--run-name", "c1")
    check("capture tiny", rc == 0, out)
    m = load(os.path.join(cap, "fidelity-dataset.json"))
    dataset_cases(cap, "cap", vocab=m["capture"]["vocab_size"], length=m["panel"]["context_length"],
                  hidden=m["capture"]["hidden_width"])

    # 3. receipts (a real compare of two fixtures)
    cand = os.path.join(WORK, "cand")
    rc, out = run(BIN, "write-fixture", "--out", cand, "--records", "3", "--tokens", "12", "--hidden", "8",
                  "--vocab", "32", "--seed", "7", "--perturb", "0.01")
    cmp_out = os.path.join(WORK, "cmp")
    rc, out = run(BIN, "compare", "--reference", fx, "--candidate", cand, "--out", cmp_out)
    check("compare fixture vs perturbed", rc == 0, out)
    receipt_cases(os.path.join(cmp_out, "comparison-receipt.json"))
finally:
    shutil.rmtree(WORK, ignore_errors=True)

bad = results.count(False)
print("forger: %d passed, %d failed" % (len(results) - bad, bad))
sys.exit(1 if bad else 0)
