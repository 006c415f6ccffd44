"""Stdlib helpers for the tests: run the binary, and re-seal a tampered
dataset the way a forger would (sub-manifest seals, manifest digests,
checksums.txt, manifest seal), so the deeper checks are what must refuse."""
import hashlib, json, os, shutil, struct, subprocess

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

# ---- forging a tensor: new payload bytes, every digest and seal that names it updated

def st_read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return data[:8 + n], json.loads(data[8:8 + n]), data[8 + n:]


def text_files(root):
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith((".json", ".md")):
                yield os.path.join(d, n)


def replace_everywhere(root, pairs):
    for p in text_files(root):
        t = open(p, encoding="utf-8").read()
        t2 = t
        for a, b in pairs:
            t2 = t2.replace(a, b)
        if t2 != t:
            open(p, "w", encoding="utf-8").write(t2)


def retensor(root, rel, body):
    """A forger's (or a broken engine's) tensor: new payload bytes in the same
    header, every digest naming it updated, every seal recomputed."""
    p = os.path.join(root, rel)
    head, hdr, old = st_read(p)
    assert len(body) == len(old)
    old_content, old_file = sha(old), sha_file(p)
    open(p, "wb").write(head + body)
    pairs = [(old_content, sha(body)), (old_file, sha_file(p))]
    capp = os.path.join(root, "capture/manifest.json")
    old_ccd = load(capp)["capture_content_digest"]
    replace_everywhere(root, pairs)
    recs = sorted(load(capp)["records"], key=lambda r: r["index"])
    ccd = sha("\n".join("%d:%s" % (r["index"], r["tensor_content_sha256"]) for r in recs).encode("ascii"))
    replace_everywhere(root, [(old_ccd, ccd)])
    for q in text_files(root):
        if q.endswith(".json") and "/tokens/" not in q and os.path.basename(q) != "fidelity-dataset.json":
            doc = load(q)
            if isinstance(doc, dict) and "receipt_sha256" in doc:
                seal(doc, "receipt_sha256")
                dump(q, doc)
    reseal(root)


def bf16(x):
    """The bf16 bits of x by truncation (the top 16 bits of its fp32 bits)."""
    return struct.unpack("<I", struct.pack("<f", x))[0] >> 16


def run(binary, *args):
    p = subprocess.run([binary] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr

def refusal_code(output):
    for line in output.splitlines():
        if line.startswith("REFUSED ["):
            return line[len("REFUSED ["):line.index("]")]
    return None


def windowed_copy(src, dst, sw):
    """The hidden dataset restricted to llama.cpp's scored rows (rows score_from..L-1 of each
    record), every digest and seal recomputed (shared by test_kld.py and test_token_stats.py)."""
    shutil.copytree(src, dst)
    first = sw["score_from"]
    cm_path = os.path.join(dst, "capture/manifest.json")
    cm = load(cm_path)
    total, size = 0, 0
    for rec in cm["records"]:
        path = os.path.join(dst, "capture", rec["file"])
        blob = open(path, "rb").read()
        n = struct.unpack("<Q", blob[:8])[0]
        header = json.loads(blob[8:8 + n])
        t = header["hidden_states"]
        rows, hid = t["shape"]
        keep = blob[8 + n + first * hid * 2:8 + n + (rows - 0) * hid * 2]
        t["shape"] = [rows - first, hid]
        t["data_offsets"] = [0, len(keep)]
        enc = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
        new = struct.pack("<Q", len(enc)) + enc + keep
        open(path, "wb").write(new)
        rec.update(shape=t["shape"], size_bytes=len(new), sha256=sha(new), payload_sha256=sha(keep),
                   tensor_content_sha256=sha(keep), prediction_positions=rows - first, scored_rows=rows - first)
        total += rows - first
        size += len(new)
    digest = sha("\n".join("%d:%s" % (r["index"], r["tensor_content_sha256"])
                           for r in sorted(cm["records"], key=lambda r: r["index"])).encode())

    def cap_edit(doc):
        doc.update(records=cm["records"], scored_rows_per_context=cm["records"][0]["scored_rows"],
                   total_scored_rows=total, total_size_bytes=size, capture_content_digest=digest)

    def panel_edit(doc):
        for r in doc["records"]:
            r["prediction_positions"] -= first
        doc.update(positions_per_context=doc["records"][0]["prediction_positions"], scored_positions_total=total,
                   scoring_window=sw)

    def man_edit(m):
        m["panel"].update(scored_positions_total=total, scoring_window=sw)
        m["capture"].update(capture_content_digest=digest, scored_rows_total=total, total_size_bytes=size)
        m["determinism"]["evidence_hashes"] = [digest]

    reseal(dst, man_edit, {"capture/manifest.json": cap_edit, "panel/panel.json": panel_edit})


class CaptureHarness:
    """Shared by the packed-checkpoint tests (test_packed.py, test_packed2.py): a binary, a work folder, the
    pass/fail tally, capture with the usual flags, the manifest's digest, and safetensors / config edits
    (the safetensors ones import dequant_ref, which needs numpy)."""

    def __init__(self, binary, work):
        self.bin, self.work = binary, work
        self.passed = self.failed = 0

    def case(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok   %s" % name)
        else:
            self.failed += 1
            print("FAIL %s %s" % (name, str(detail)[:800]))

    def run(self, *args):
        p = subprocess.run([self.bin] + [str(a) for a in args], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    def W(self, *p):
        return os.path.join(self.work, *p)

    @staticmethod
    def manifest(ds):
        return json.load(open(os.path.join(ds, "fidelity-dataset.json")))

    def digest(self, ds):
        return self.manifest(ds)["capture"]["capture_content_digest"]

    def capture(self, model, out, role="quant", scope=None, panel=None, extra=()):
        a = ["capture", "--model", model, "--panel", panel or self.W("m", "panel"), "--out", out, "--role", role,
             "--lane", "other", "--dataset-id", "test." + os.path.basename(out), "--dataset-name",
             "test " + os.path.basename(out), "--cold-run", "c1", "--run-name", "c1"]
        if scope:
            a += ["--scope-file", scope]
        return self.run(*(a + list(extra)))

    @staticmethod
    def st_tensors(model):
        import dequant_ref as dq
        return dq.read_safetensors(os.path.join(model, "model.safetensors"))

    def rewrite(self, model, edit):
        import dequant_ref as dq
        t = dict(self.st_tensors(model))
        edit(t)
        dq.write_safetensors(os.path.join(model, "model.safetensors"), t)

    @staticmethod
    def edit_config(model, fn):
        p = os.path.join(model, "config.json")
        c = json.load(open(p))
        fn(c["quantization_config"])
        json.dump(c, open(p, "w"), indent=2, sort_keys=True)
