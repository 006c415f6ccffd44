#!/usr/bin/env python3
"""Test oracle: an independent, stdlib-only check of a fidelity dataset's digests and seals.

Re-derives, from the bytes on disk, everything the `malaiwah.fidelity-dataset.v1` seal chain
claims (FORMAT.md s3): the manifest's self-blanked seal, every sub-manifest's receipt_sha256,
checksums.txt (its digest, its exact format, its coverage of the tree, every line), the file
digests the manifest records, capture_content_digest, each record's file/payload/tensor-content
digests, the panel token digests and suite hash, and the head's tensor-content digest.

usage: ref_check.py DATASET
Prints `OK <dataset_sha256>` and exits 0, or prints each problem and exits 1.
"""
import hashlib, json, os, re, struct, sys

DATASET = "malaiwah.fidelity-dataset.v1"
EXCLUDED = ("checksums.txt", "fidelity-dataset.json")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
SUBS = (  # (label, schema, how the manifest names the file)
    ("capture", "malaiwah.fidelity-capture-manifest.v1", ("capture", "manifest_file")),
    ("panel", "malaiwah.fidelity-panel-binding.v1", ("panel", "panel_file")),
    ("head", "malaiwah.fidelity-head-identity.v1", ("head", "head_json")),
    ("runtime", "malaiwah.fidelity-capture-runtime.v1", ("runtime", "file")),
    ("validation", "malaiwah.fidelity-structural-validation.v1", None),
)


class Problems(list):
    def add(self, fmt, *args):
        self.append(fmt % args if args else fmt)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def file_sha(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def seal_of(doc, field):
    body = dict(doc)
    body[field] = ""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           allow_nan=False)
    return sha(canonical.encode("utf-8"))


def is_v1(value):
    """format_version must be the JSON integer 1: the schema's `const` refuses 1.0 and true."""
    return type(value) is int and value == 1


def no_constants(token):
    raise ValueError("non-finite JSON token %s" % token)


def read_json(path):
    with open(path, "r", encoding="utf-8") as handle:
        return json.load(handle, parse_constant=no_constants)


def safe_rel(path):
    """PATH-1/3: relative, no drive/URI, no '..' segment, not '.'."""
    return (isinstance(path, str) and path != "" and not path.startswith(("/", "\\"))
            and ":" not in path.split("/")[0] and "://" not in path
            and ".." not in path.split("/") and os.path.normpath(path) != ".")


def tree_files(root, problems):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            if os.path.islink(os.path.join(dirpath, name)):
                problems.add("symlink in tree: %s", os.path.relpath(os.path.join(dirpath, name), root))
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if rel not in EXCLUDED:
                found.append(rel)
    return sorted(found)


def tensor_digests(path, key):
    """(file_sha256, payload_sha256, tensor_content_sha256, header entry) of a safetensors file."""
    with open(path, "rb") as handle:
        blob = handle.read()
    if len(blob) < 8:
        raise ValueError("shorter than a safetensors header")
    n = struct.unpack("<Q", blob[:8])[0]
    if 8 + n > len(blob):
        raise ValueError("truncated safetensors header")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    entry = header.get(key) if isinstance(header, dict) else None
    if not isinstance(entry, dict):
        raise ValueError("tensor key %r absent" % key)
    start, stop = entry["data_offsets"]
    if not (0 <= start <= stop <= len(blob) - 8 - n):
        raise ValueError("data_offsets %r outside the data region" % [start, stop])
    return sha(blob), sha(blob[8 + n:]), sha(blob[8 + n + start:8 + n + stop]), entry


def check_checksums(root, manifest, problems):
    seal = manifest.get("seal") or {}
    rel = seal.get("checksums_file") or "checksums.txt"
    path = os.path.join(root, rel)
    if rel != "checksums.txt" or not os.path.isfile(path):
        problems.add("checksums.txt missing (seal.checksums_file=%r)", rel)
        return
    if file_sha(path) != seal.get("checksums_sha256"):
        problems.add("sha256(checksums.txt) %s != seal.checksums_sha256 %s",
                     file_sha(path), seal.get("checksums_sha256"))
    raw = open(path, "rb").read()
    if raw and not raw.endswith(b"\n"):
        problems.add("checksums.txt: no final newline")
    if b"\r" in raw:
        problems.add("checksums.txt: contains CR")
    try:
        lines = raw.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        problems.add("checksums.txt is not UTF-8")
        return
    if lines[-1] == "":
        lines.pop()  # the final newline
    listed, order = {}, []
    for number, line in enumerate(lines, 1):
        digest, sep, rel = line[:64], line[64:66], line[66:]
        if not HEX64.match(digest) or sep != "  " or not rel:
            problems.add("checksums.txt line %d is not `<sha256>  <path>`: %r", number, line)
            continue
        if not safe_rel(rel):
            problems.add("checksums.txt line %d: unsafe path %r", number, rel)
        if rel in listed:
            problems.add("checksums.txt lists %r twice", rel)
        if rel in EXCLUDED:
            problems.add("checksums.txt lists %r, which the seal excludes", rel)
        listed[rel] = digest
        order.append(rel)
    if order != sorted(order):
        problems.add("checksums.txt is not sorted by path")
    present = tree_files(root, problems)
    for rel in sorted(set(present) - set(listed)):
        problems.add("unlisted file (present, not in checksums.txt): %s", rel)
    for rel in sorted(set(listed) - set(present) - set(EXCLUDED)):
        problems.add("missing file (in checksums.txt, absent): %s", rel)
    for rel in sorted(set(listed) & set(present)):
        got = file_sha(os.path.join(root, rel))
        if got != listed[rel]:
            problems.add("checksums.txt digest mismatch: %s is %s, listed %s", rel, got, listed[rel])


def load_subs(root, manifest, problems):
    docs = {}
    for label, schema, where in SUBS:
        rel = ((manifest.get(where[0]) or {}).get(where[1]) if where
               else "validation/structural-validation.json")
        if label == "head" and not rel:
            continue  # head_json is optional
        if not safe_rel(rel) or not os.path.isfile(os.path.join(root, rel)):
            problems.add("%s sub-manifest missing or unsafe path: %r", label, rel)
            continue
        try:
            doc = read_json(os.path.join(root, rel))
        except ValueError as exc:
            problems.add("%s: unparseable JSON (%s)", rel, exc)
            continue
        if not isinstance(doc, dict):
            problems.add("%s: not a JSON object", rel)
            continue
        if doc.get("schema") != schema or not is_v1(doc.get("format_version")):
            problems.add("%s: schema/format_version %r/%r, expected %r/1", rel, doc.get("schema"),
                         doc.get("format_version"), schema)
        if "receipt_sha256" not in doc or seal_of(doc, "receipt_sha256") != doc["receipt_sha256"]:
            problems.add("%s: receipt_sha256 does not recompute", rel)
        docs[label] = (rel, doc)
    return docs


def index_of(record):
    index = record.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else -1


def check_records(root, manifest, capture_rel, capture_doc, problems):
    capture = manifest.get("capture") or {}
    records = capture_doc.get("records") or []
    parts, seen = [], set()
    for record in sorted(records, key=index_of):
        index, content = record.get("index"), record.get("tensor_content_sha256")
        if index_of(record) < 0 or index in seen:
            problems.add("capture record index %r is not a unique int >= 0", index)
        seen.add(index)
        if not content:
            problems.add("capture record %r has no tensor_content_sha256", index)
        parts.append("%d:%s" % (index_of(record), content or ""))
    derived = sha("\n".join(parts).encode("ascii"))
    for label, claimed in (("manifest capture.capture_content_digest", capture.get("capture_content_digest")),
                           ("capture/manifest.json capture_content_digest",
                            capture_doc.get("capture_content_digest"))):
        if claimed != derived:
            problems.add("%s %s != recomputed %s", label, claimed, derived)
    base = os.path.dirname(capture_rel)
    for record in records:
        rel, key, index = record.get("file"), record.get("key"), record.get("index")
        if not safe_rel(rel) or not os.path.isfile(os.path.join(root, base, rel)):
            problems.add("record %r: tensor file %r missing or unsafe", index, rel)
            continue
        full = os.path.join(root, base, rel)
        try:
            got_file, got_payload, got_content, entry = tensor_digests(full, key)
        except (ValueError, KeyError, TypeError) as exc:
            problems.add("record %r: %s: %s", index, rel, exc)
            continue
        for field, got in (("sha256", got_file), ("payload_sha256", got_payload),
                           ("tensor_content_sha256", got_content), ("size_bytes", os.path.getsize(full))):
            if record.get(field) != got:
                problems.add("record %r: %s %s != recomputed %s", index, field, record.get(field), got)
        if str(entry.get("dtype", "")).upper() != str(record.get("dtype", "")).upper() \
                or entry.get("shape") != record.get("shape"):
            problems.add("record %r: header %s%s != declared %s%s", index, entry.get("dtype"),
                         entry.get("shape"), record.get("dtype"), record.get("shape"))


def check_panel(root, manifest, panel_doc, capture_doc, problems):
    panel = manifest.get("panel") or {}
    records = sorted(panel_doc.get("records") or [], key=index_of)
    per_record = [r.get("token_ids_json_sha256") or "" for r in records]
    suite = sha("\n".join(per_record).encode("ascii"))
    for label, claimed in (("manifest panel", panel.get("suite_token_hash_sha256")),
                           ("panel.json", panel_doc.get("suite_token_hash_sha256"))):
        if claimed != suite:
            problems.add("%s suite_token_hash_sha256 %s != recomputed %s", label, claimed, suite)
    legacy = panel_doc.get("panel_token_sha256_legacy")
    if legacy and legacy != sha("".join(per_record).encode("utf-8")):
        print("warning: panel_token_sha256_legacy does not recompute (advisory only)")
    for record in records:
        index, rel = record.get("index"), record.get("token_file")
        if not safe_rel(rel) or not os.path.isfile(os.path.join(root, rel)):
            problems.add("panel record %r: token file %r missing or unsafe", index, rel)
        else:
            try:
                ids = read_json(os.path.join(root, rel))
            except ValueError as exc:
                problems.add("%s: unparseable token file (%s)", rel, exc)
                ids = None
            if ids is not None:
                compact = sha(json.dumps(ids, separators=(",", ":")).encode("utf-8"))
                if compact != record.get("token_ids_json_sha256"):
                    problems.add("%s: token_ids_json_sha256 %s != recomputed %s", rel,
                                 record.get("token_ids_json_sha256"), compact)
                legacy = record.get("token_ids_sha256_legacy")
                if legacy and legacy != sha(json.dumps(ids).encode("utf-8")):
                    problems.add("%s: token_ids_sha256_legacy does not recompute", rel)
                if record.get("num_tokens") is not None and len(ids) != record["num_tokens"]:
                    problems.add("%s: %d tokens, record says %r", rel, len(ids), record["num_tokens"])
        mask_rel = record.get("attention_mask_file")
        if mask_rel and record.get("attention_mask_sha256"):
            if not safe_rel(mask_rel) or not os.path.isfile(os.path.join(root, mask_rel)):
                problems.add("panel record %r: mask file %r missing or unsafe", index, mask_rel)
            elif file_sha(os.path.join(root, mask_rel)) != record["attention_mask_sha256"]:
                problems.add("%s: file sha256 != attention_mask_sha256", mask_rel)
    by_index = {r.get("index"): r for r in records}
    for record in (capture_doc or {}).get("records") or []:
        twin = by_index.get(record.get("index"))
        if twin is None or twin.get("token_ids_json_sha256") != record.get("token_ids_json_sha256"):
            problems.add("capture record %r: token digest has no equal panel record",
                         record.get("index"))


def check_head(root, manifest, head_doc, problems):
    head = manifest.get("head") or {}
    if head.get("raw_tensor_sha256") != head.get("tensor_content_sha256"):
        problems.add("head.raw_tensor_sha256 != head.tensor_content_sha256")
    if head_doc is not None:
        for field in ("file", "tensor_key", "file_sha256", "tensor_content_sha256"):
            if head_doc.get(field) != head.get(field):
                problems.add("head/head.json %s %r != manifest head.%s %r", field,
                             head_doc.get(field), field, head.get(field))
    rel = head.get("file")
    if not rel:
        return
    if not safe_rel(rel) or not os.path.isfile(os.path.join(root, rel)):
        problems.add("head file %r missing or unsafe", rel)
        return
    try:
        got_file, _, got_content, _ = tensor_digests(os.path.join(root, rel), head.get("tensor_key"))
    except (ValueError, KeyError, TypeError) as exc:
        problems.add("head %s: %s", rel, exc)
        return
    if got_content != head.get("tensor_content_sha256"):
        problems.add("head tensor_content_sha256 %s != recomputed %s",
                     head.get("tensor_content_sha256"), got_content)
    if head.get("file_sha256") and got_file != head["file_sha256"]:
        problems.add("head file_sha256 %s != recomputed %s", head["file_sha256"], got_file)


def check(root):
    problems = Problems()
    path = os.path.join(root, "fidelity-dataset.json")
    try:
        manifest = read_json(path)
    except (OSError, ValueError) as exc:
        return None, ["fidelity-dataset.json unreadable: %s" % exc]
    if not isinstance(manifest, dict) or manifest.get("schema") != DATASET \
            or not is_v1(manifest.get("format_version")):
        return None, ["not a %s manifest with format_version 1" % DATASET]
    claimed = manifest.get("dataset_sha256")
    if seal_of(manifest, "dataset_sha256") != claimed:
        problems.add("dataset_sha256 %s does not recompute (%s)", claimed,
                     seal_of(manifest, "dataset_sha256"))
    check_checksums(root, manifest, problems)
    docs = load_subs(root, manifest, problems)
    for label, block, field in (("capture", "capture", "manifest_file_sha256"),
                                ("panel", "panel", "panel_file_sha256"),
                                ("runtime", "runtime", "file_sha256")):
        if label in docs:
            got = file_sha(os.path.join(root, docs[label][0]))
            if (manifest.get(block) or {}).get(field) != got:
                problems.add("%s.%s %s != file sha256 %s", block, field,
                             (manifest.get(block) or {}).get(field), got)
    capture_doc = docs["capture"][1] if "capture" in docs else None
    if capture_doc is not None:
        runtime_rel = os.path.normpath(os.path.join(os.path.dirname(docs["capture"][0]),
                                                    capture_doc.get("runtime_manifest") or ""))
        if runtime_rel.startswith(".."):
            problems.add("capture/manifest.json runtime_manifest escapes the root: %s", runtime_rel)
        elif capture_doc.get("runtime_manifest_sha256") is not None and (
                not os.path.isfile(os.path.join(root, runtime_rel))
                or file_sha(os.path.join(root, runtime_rel)) != capture_doc["runtime_manifest_sha256"]):
            problems.add("capture/manifest.json runtime_manifest_sha256 does not match %s", runtime_rel)
        check_records(root, manifest, docs["capture"][0], capture_doc, problems)
    if "panel" in docs:
        check_panel(root, manifest, docs["panel"][1], capture_doc, problems)
    check_head(root, manifest, docs["head"][1] if "head" in docs else None, problems)
    return claimed, problems


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    claimed, problems = check(argv[1])
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print("OK %s" % claimed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
