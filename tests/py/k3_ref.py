#!/usr/bin/env python3
"""Test oracle for the kimi-k3 interop, stdlib only, written from the sources
rather than from our C code:

* emit()/verify(): the compat/ view exactly as the Python tool's
  bin/fidelity/k3compat.py (malaiwah/glm53-flash-fidelity-suite) writes and
  checks it: json.dumps(indent=2, sort_keys=True) + "\\n" with the DEFAULT
  ensure_ascii=True, the README template verbatim.
* build_artifact(): a kimi-k3 distribution-fidelity artifact in his exact
  shape (the layout of models/kimi-k3/distribution-fidelity-1024x2048.md, the
  field names the Python selftest's _k3_fixture uses, the digests his
  compare-kimi-k3-hidden-replay.py checks), with real tensors and a real head.

usage: k3_ref.py emit DATASET OUTDIR   (writes the compat/ files the oracle expects)
       k3_ref.py verify DATASET        (prints problems; exit 1 if any)
"""
import hashlib, json, os, posixpath, random, struct, sys

README = """# kimi-k3 compatibility view

Three JSON files that let the kimi-k3 comparator read **%(name)s** without a
patch. They are inside the seal: `checksums.txt` lists them, and editing one
makes the dataset refuse itself.

    python3 compare-kimi-k3-hidden-replay.py \\
        --suite-manifest  ../compat/suite-manifest.json \\
        --reference-dir   ../compat/%(subdir)s \\
        --candidate-dir   <the other dataset>/compat/%(subdir)s \\
        --lm-head         ../%(head)s

Nothing here is a second copy of the data. `file` and `token_file` are relative
aliases onto the one real tensor and the one real token file. %(count)d contexts.

The normative documents are `../panel/panel.json` and the capture manifest; if
the two ever disagree, those win and this view is a bug.
"""


def sha(b):
    return hashlib.sha256(b).hexdigest()


def dumps(obj):
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode("utf-8")


def emit(panel_doc, capture_doc, manifest_capture, head_relpath, dataset_name):
    """-> ({relpath: bytes}, interop update), as k3compat.emit."""
    form = capture_doc.get("form") or manifest_capture.get("form") or "hidden"
    capture_rel = posixpath.dirname(manifest_capture["manifest_file"]) or "capture"
    subdir = "reference-hidden" if form == "hidden" else "reference-logits"
    contexts = []
    for record in sorted(panel_doc["records"], key=lambda r: int(r["index"])):
        row = dict(record)
        row["context_index"] = int(record["index"])
        row["window_index"] = int(record["index"])
        row["token_file"] = posixpath.join("..", record["token_file"])
        contexts.append(row)
    suite = {
        "kind": "malaiwah fidelity panel, kimi-k3 compatibility view",
        "format_version": 1,
        "x_malaiwah_note": (
            "A DERIVED VIEW. The normative panel is ../panel/panel.json; this file exists "
            "because `contexts` is an integer record count there and a record list here "
            "(PANEL-D5), which one file cannot spell both ways. token_file entries are "
            "relative to THIS directory and point at the one real copy of each token file."),
        "x_malaiwah_panel_id": panel_doc.get("panel_id"),
        "x_malaiwah_normative_panel": "../panel/panel.json",
        "context_count": len(contexts),
        "context_length": panel_doc["context_length"],
        "scored_positions_per_context": panel_doc["positions_per_context"],
        "total_scored_positions": panel_doc["scored_positions_total"],
        "suite_token_hash_sha256": panel_doc["suite_token_hash_sha256"],
        "tokenizer": panel_doc.get("tokenizer"),
        "contexts": contexts,
    }
    records = []
    for record in sorted(capture_doc["records"], key=lambda r: int(r["index"])):
        out = dict(record)
        out["context_index"] = int(record["index"])
        out["window_index"] = int(record["index"])
        out["file"] = posixpath.join("../" * 2, capture_rel, record["file"])
        records.append(out)
    source = {
        "kind": "malaiwah fidelity capture, kimi-k3 compatibility view",
        "format_version": 1,
        "x_malaiwah_note": ("A DERIVED VIEW of ../../%s/manifest.json, which is the normative "
                            "capture manifest and the one the seal covers. `file` entries are "
                            "relative aliases: there is exactly one copy of each tensor." % capture_rel),
        "run_name": capture_doc.get("run_name") or dataset_name,
        "semantic_point": capture_doc.get("semantic_point"),
        "tensor_key": capture_doc.get("tensor_key"),
        "context_length": capture_doc.get("context_length"),
        "hidden_width": capture_doc.get("hidden_width"),
        "scored_rows_per_context": (capture_doc["records"][0]["scored_rows"]
                                    if capture_doc.get("records") else None),
        "suite_token_hash_sha256": panel_doc["suite_token_hash_sha256"],
        "total_size_bytes": capture_doc.get("total_size_bytes"),
        "contexts": records,
    }
    readme = README % {"name": dataset_name, "subdir": subdir,
                       "head": head_relpath or "head/weight.safetensors", "count": len(contexts)}
    files = {"compat/suite-manifest.json": dumps(suite),
             "compat/%s/manifest.json" % subdir: dumps(source),
             "compat/README.md": readme.encode("utf-8")}
    update = {
        "k3_compat_emitted": True,
        "k3_compat_files": ["compat/suite-manifest.json", "compat/%s/manifest.json" % subdir, "compat/README.md"],
        "k3_compat_tensor_bytes_duplicated": 0,
        "k3_compat_note": ("metadata only: `file` and `token_file` are relative aliases onto "
                           "the one real copy of each tensor and token file, so the view "
                           "costs three small JSON files at any panel size."),
    }
    return files, update


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def verify(root):
    """k3compat.verify: the list of problems (empty when the view is faithful)."""
    problems = []
    compat = os.path.join(root, "compat")
    suite_path = os.path.join(compat, "suite-manifest.json")
    if not os.path.isfile(suite_path):
        return ["compat/suite-manifest.json is absent"]
    manifest = read_json(os.path.join(root, "fidelity-dataset.json"))
    panel = read_json(os.path.join(root, manifest["panel"]["panel_file"]))
    suite = read_json(suite_path)
    if suite.get("suite_token_hash_sha256") != panel["suite_token_hash_sha256"]:
        problems.append("suite token hash differs")
    if not isinstance(suite.get("contexts"), list):
        return problems + ["contexts is not a list"]
    if len(suite["contexts"]) != len(panel["records"]):
        problems.append("context count differs")
    by_index = {int(r["index"]): r for r in panel["records"]}
    for row in suite["contexts"]:
        index = int(row.get("context_index", row.get("index")))
        real = by_index.get(index)
        if real is None:
            problems.append("context %d not in panel" % index)
            continue
        if row.get("token_ids_json_sha256") != real["token_ids_json_sha256"]:
            problems.append("context %d token digest differs" % index)
        if not os.path.isfile(os.path.normpath(os.path.join(compat, row["token_file"]))):
            problems.append("context %d token_file does not resolve" % index)
    capture = read_json(os.path.join(root, manifest["capture"]["manifest_file"]))
    real_records = {int(r["index"]): r for r in capture["records"]}
    for name in sorted(os.listdir(compat)):
        source_path = os.path.join(compat, name, "manifest.json")
        if not os.path.isfile(source_path):
            continue
        source = read_json(source_path)
        if source.get("suite_token_hash_sha256") != panel["suite_token_hash_sha256"]:
            problems.append("%s suite token hash differs" % name)
        for row in source.get("contexts") or []:
            index = int(row.get("context_index", row.get("index")))
            real = real_records.get(index)
            if real is None or row.get("sha256") != real["sha256"]:
                problems.append("%s record %d digest differs or is absent" % (name, index))
            elif not os.path.isfile(os.path.normpath(os.path.join(compat, name, row["file"]))):
                problems.append("%s record %d file does not resolve" % (name, index))
    return problems


# ---------------------------------------------------------------------------
# his artifact
# ---------------------------------------------------------------------------

def bf16(rng, n, scale):
    out = bytearray()
    for _ in range(n):
        bits = struct.unpack("<I", struct.pack("<f", rng.gauss(0.0, scale)))[0]
        out += struct.pack("<H", (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)
    return bytes(out)


def safetensors(key, dtype, shape, raw):
    header = json.dumps({key: {"dtype": dtype, "shape": shape, "data_offsets": [0, len(raw)]}},
                        separators=(",", ":"), sort_keys=True).encode()
    header += b" " * ((-len(header)) % 8)     # his writer pads (the safetensors library does)
    return struct.pack("<Q", len(header)) + header + raw


def write(root, rel, data):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, (dict, list)):
        data = (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
    with open(path, "wb") as f:
        f.write(data)
    return sha(data)


def build_artifact(root, contexts=3, length=6, hidden=8, vocab=32, seed=0, logit=None):
    """His layout.  logit None: reference-hidden/ (k3v1); "F32"/"BF16": ref/ live logits
    (the window-form k3v0 predecessor).  Returns a dict of what was written."""
    rng = random.Random(seed)
    rows = length - 1
    suite_rows, tensor_rows, digests, payloads = [], [], [], []
    strata = ("encyclopedic_factual", "source_code")
    for i in range(contexts):
        ids = [rng.randrange(vocab) for _ in range(length)]
        compact = json.dumps(ids, separators=(",", ":")).encode()
        write(root, "tokens/context-%04d.json" % i, compact)
        digest = sha(compact)
        digests.append(digest)
        suite_rows.append({
            "context_index": i, "index": i, "num_tokens": length, "token_file": "tokens/context-%04d.json" % i,
            "token_ids_json_sha256": digest, "token_ids_first16": ids[:16], "token_ids_last16": ids[-16:],
            "allocation_stratum": strata[i % 2], "semantic_class": "class-%d" % (i % 3),
            "source_cluster_id": "cluster-%d" % (i // 2), "partition": "analysis" if i % 4 else "qualification",
            "sentinel": i == 1, "scored_row_start": 0, "scored_row_end_exclusive": rows,
            "dataset": "synthetic/source", "source_content_sha256": sha(b"doc%d" % i)})
        if logit is None:
            raw = bf16(rng, rows * hidden, 1.0)
            blob = safetensors("hidden_states", "BF16", [rows, hidden], raw)
            name, key, shape = "hidden_%04d.safetensors" % i, "hidden_states", [rows, hidden]
            folder = "reference-hidden"
        else:
            if logit == "F32":
                raw = b"".join(struct.pack("<f", rng.gauss(0, 3)) for _ in range(rows * vocab))
            else:
                raw = bf16(rng, rows * vocab, 3.0)
            blob = safetensors("logits", logit, [rows, vocab], raw)
            name, key, shape = "logits_%04d.safetensors" % i, "logits", [rows, vocab]
            folder = "ref"
        file_sha = write(root, "%s/%s" % (folder, name), blob)
        payloads.append(sha(raw))
        tensor_rows.append({"context_index": i, "dtype": logit or "BF16", "file": name, "key": key,
                            "raw_chunks_retained": False, "sha256": file_sha, "shape": shape,
                            "size_bytes": len(blob), "token_ids_json_sha256": digest})
    aggregate = sha("\n".join(digests).encode("ascii"))
    write(root, "suite-manifest.json", {
        "kind": "Kimi K3 teacher-forced distribution-fidelity token suite", "format_version": 1,
        "context_count": contexts, "context_length": length, "scored_positions_per_context": rows,
        "total_scored_positions": rows * contexts, "suite_token_hash_sha256": aggregate,
        "contexts": suite_rows, "status": "implemented",
        "tokenizer": {"class": "TikTokenTokenizer", "vocabulary_size": vocab}})
    tensor_manifest = {
        "kind": "Kimi K3 final-normalized pre-LM-head hidden states", "format_version": 1,
        "semantic_point": "after_final_rmsnorm_before_lm_head" if logit is None else "live_lm_head_output_before_sampling",
        "tensor_key": "hidden_states" if logit is None else "logits", "context_length": length,
        "scored_rows_per_context": rows, "suite_token_hash_sha256": aggregate,
        "runtime_manifest": "../capture-runtime.json", "runtime_manifest_sha256": "1" * 64,
        "contexts": tensor_rows}
    if logit is None:
        tensor_manifest["hidden_width"] = hidden
    write(root, ("reference-hidden" if logit is None else "ref") + "/manifest.json", tensor_manifest)
    head_raw = bf16(rng, vocab * hidden, 0.05)
    head_blob = safetensors("weight", "BF16", [vocab, hidden], head_raw)
    head_file = write(root, "lm-head/weight.safetensors", head_blob)
    head = {"file": "lm-head/weight.safetensors", "file_sha256": head_file,
            "raw_tensor_sha256": sha(head_raw), "shape": [vocab, hidden]}
    write(root, "lm-head/manifest.json", dict(head, kind="Kimi K3 canonical LM-head weight", format_version=1,
                                             file="weight.safetensors", key="weight", dtype="BF16",
                                             size_bytes=len(head_blob)))
    write(root, "capture-runtime.json", {
        "artifact_kind": "synthetic", "format_version": 1,
        "container": {"image_id": "sha256:" + "4" * 64, "image_reference": "x:y",
                      "image_repository_digest": "x@sha256:" + "5" * 64},
        "runtime": {"tensor_parallel_size": 16, "attention_backend": "B12X_MLA"},
        "runtime_environment": {"VLLM_USE_V2_MODEL_RUNNER": "1"},
        "source_files": {"vllm/v1/worker/gpu/model_runner.py": "6" * 64}})
    write(root, "manifest.json", {
        "artifact_kind": "synthetic k3 reference", "format_version": 1, "context_count": contexts,
        "context_length": length, "status": "qualified", "scored_positions_per_context": rows,
        "total_scored_positions": rows * contexts, "lm_head": head,
        "checkpoint": {"repository": "moonshotai/Kimi-K3", "revision": "2496450e92e425c886db095102a52a6682ca3970",
                       "tensor_format": "official MXFP4 routed experts with BF16 dense tensors"},
        "suite": {"manifest": "suite-manifest.json", "suite_token_hash_sha256": aggregate}})
    write(root, "validation/artifact-validation.json", {
        "status": "qualified", "context_count": contexts,
        "sentinel_repeat_mean_kld": {"00-vs-01": 0.0032166685936858316, "00-vs-02": 0.0031814546488495347}})
    return {"aggregate": aggregate, "payloads": payloads, "head_content": sha(head_raw), "digests": digests,
            "suite_rows": suite_rows}


def main(argv):
    if len(argv) == 4 and argv[1] == "emit":
        root = argv[2]
        m = read_json(os.path.join(root, "fidelity-dataset.json"))
        panel = read_json(os.path.join(root, m["panel"]["panel_file"]))
        cap = read_json(os.path.join(root, m["capture"]["manifest_file"]))
        files, _ = emit(panel, cap, m["capture"], m["head"].get("file"), m["dataset"]["name"])
        for rel, data in files.items():
            write(argv[3], rel, data)
        return 0
    if len(argv) == 3 and argv[1] == "verify":
        problems = verify(argv[2])
        for p in problems:
            print(p)
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
