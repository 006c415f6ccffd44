"""Stdlib helpers for the tests: run the binary, and re-seal a tampered
dataset the way a forger would (sub-manifest seals, manifest digests,
checksums.txt, manifest seal), so the deeper checks are what must refuse."""
import hashlib, json, os, subprocess

def sha(data):
    return hashlib.sha256(data).hexdigest()

def sha_file(path):
    with open(path, "rb") as f:
        return sha(f.read())

def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()

def seal(doc, field):
    body = dict(doc)
    body[field] = ""
    doc[field] = sha(canonical(body))
    return doc

def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)

def dump(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")

SUBS = (("capture", "manifest_file", "manifest_file_sha256"), ("panel", "panel_file", "panel_file_sha256"),
        ("runtime", "file", "file_sha256"), ("head", "head_json", None))

def reseal(root, manifest_edit=None, sub_edits=None, reseal_subs=True):
    """Apply edits, then recompute every seal and digest bottom-up."""
    mpath = os.path.join(root, "fidelity-dataset.json")
    m = load(mpath)
    for block, key, digest_key in SUBS:
        rel = m[block][key]
        p = os.path.join(root, rel)
        if sub_edits and rel in sub_edits:
            doc = load(p)
            sub_edits[rel](doc)
            if reseal_subs:
                seal(doc, "receipt_sha256")
            dump(p, doc)
        if digest_key and os.path.isfile(p):
            m[block][digest_key] = sha_file(p)
    files = []
    for d, dirs, names in os.walk(root):
        dirs.sort()
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), root)
            if rel in ("checksums.txt", "fidelity-dataset.json") or os.path.islink(os.path.join(d, n)):
                continue
            files.append(rel)
    text = "".join("%s  %s\n" % (sha_file(os.path.join(root, r)), r) for r in sorted(files))
    with open(os.path.join(root, "checksums.txt"), "w") as f:
        f.write(text)
    m["seal"]["checksums_sha256"] = sha(text.encode())
    if manifest_edit:
        manifest_edit(m)
    seal(m, "dataset_sha256")
    dump(mpath, m)

def run(binary, *args):
    p = subprocess.run([binary] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr

def refusal_code(output):
    for line in output.splitlines():
        if line.startswith("REFUSED ["):
            return line[len("REFUSED ["):line.index("]")]
    return None
