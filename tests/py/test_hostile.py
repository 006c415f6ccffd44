#!/usr/bin/env python3
"""Hostile dataset trees: each must be refused by `fidelity verify` with the
right code (exit 3) and nothing may crash.  Ports the spirit of the Python
selftest groups F (format/seal), P (panel), H (head), C (coverage), X
(lossy/dtype and hostile checksums).  usage: test_hostile.py BINARY"""
import json, os, shutil, struct, sys, tempfile
from dsutil import load, dump, reseal, run, refusal_code, sha_file

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="fd-hostile-")
BASE = os.path.join(WORK, "base")
rc, out = run(BIN, "write-fixture", "--out", BASE, "--records", "3", "--tokens", "12", "--hidden", "8",
              "--vocab", "32", "--seed", "7")
assert rc == 0, out
results = []

def case(name, expect, mutate, *flags, expect_rc=3):
    root = os.path.join(WORK, name)
    shutil.copytree(BASE, root, symlinks=True)
    mutate(root)
    rc, out = run(BIN, "verify", root, *flags)
    code = refusal_code(out)
    ok = rc == expect_rc and (expect is None or code == expect)
    results.append(ok)
    print("%s %-40s rc=%d code=%s%s" % ("ok  " if ok else "FAIL", name, rc, code,
                                         "" if ok else "  (want %s)\n%s" % (expect, out)))
    shutil.rmtree(root, ignore_errors=True)

def flip(rel, offset=-1):
    def f(root):
        p = os.path.join(root, rel)
        data = bytearray(open(p, "rb").read())
        data[offset] ^= 0x01
        open(p, "wb").write(bytes(data))
    return f

def edit_sub(rel, fn, **kw):
    return lambda root: reseal(root, sub_edits={rel: fn}, **kw)

def edit_manifest(fn):
    return lambda root: reseal(root, manifest_edit=fn)

def setpath(d, path, value):
    keys = path.split(".")
    for k in keys[:-1]:
        d = d[k]
    d[keys[-1]] = value

def write(rel, data=b"x"):
    def f(root):
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "wb").write(data)
    return f

CAP, PANEL, HEAD, RT = "capture/manifest.json", "panel/panel.json", "head/head.json", "runtime/capture-runtime.json"

# --- the untouched base verifies (exit 0) -------------------------------------
case("base-verifies", None, lambda r: None, expect_rc=0)
# F4: re-indenting the manifest keeps the parsed-document seal valid
def reindent(root):
    p = os.path.join(root, "fidelity-dataset.json")
    m = load(p)
    with open(p, "w") as f:
        f.write(json.dumps(dict(reversed(list(m.items()))), indent=7))
case("F4-reindented-reordered-manifest", None, reindent, expect_rc=0)
# F5: an unknown additive top-level key, sealed, is accepted
case("F5-unknown-key-sealed", None, edit_manifest(lambda m: m.update(x_extra={"a": 1})), expect_rc=0)

# --- a flipped byte in every file class -------------------------------------
for rel, code in ((CAP, "tensor_mismatch"), ("capture/hidden_0001.safetensors", "tensor_mismatch"),
                  (PANEL, "seal_failed"), ("panel/tokens/context-0002.json", "seal_failed"),
                  ("panel/masks/context-0000.npy", "seal_failed"), (HEAD, "seal_failed"),
                  ("head/weight.safetensors", "seal_failed"), (RT, "seal_failed"),
                  ("validation/structural-validation.json", "seal_failed"), ("README.md", "seal_failed"),
                  ("checksums.txt", "seal_failed")):
    case("flip-" + rel.replace("/", "_"), code, flip(rel, -3))
def flip_manifest_value(root):
    p = os.path.join(root, "fidelity-dataset.json")
    m = load(p)
    m["created_utc"] = m["created_utc"].replace("2", "3", 1)
    dump(p, m)
case("flip-manifest-value", "seal_failed", flip_manifest_value)
case("flip-manifest-json-syntax", "bad_schema", flip("fidelity-dataset.json", 0))

# --- tree membership ----------------------------------------------------------
case("extra-file", "unlisted_file", write("panel/extra.bin"))
case("extra-dotfile", "unlisted_file", write(".hidden"))
case("removed-file", "missing_file", lambda r: os.remove(os.path.join(r, "panel/masks/context-0001.npy")))
case("removed-readme", "missing_file", lambda r: os.remove(os.path.join(r, "README.md")))
case("removed-checksums", "seal_failed", lambda r: os.remove(os.path.join(r, "checksums.txt")))
case("symlink-file", "symlink", lambda r: os.symlink("README.md", os.path.join(r, "link.md")))
case("symlink-dir", "symlink", lambda r: os.symlink("/tmp", os.path.join(r, "panel/outside")))
for cred in (".env", "id_rsa", ".ssh/config", "keys/server.pem", ".git/HEAD", "hf_token"):
    case("credential-" + cred.replace("/", "_"), "credential_in_tree", write(cred))

# --- hostile checksums.txt lines (X group) -------------------------------------
def bad_checksums(extra_line):
    def f(root):
        def edit(m):
            pass
        reseal(root)
        p = os.path.join(root, "checksums.txt")
        text = open(p).read() + extra_line
        open(p, "w").write(text)
        m = load(os.path.join(root, "fidelity-dataset.json"))
        m["seal"]["checksums_sha256"] = sha_file(p)
        from dsutil import seal
        seal(m, "dataset_sha256")
        dump(os.path.join(root, "fidelity-dataset.json"), m)
    return f
for name, line in (("abs", "0" * 64 + "  /etc/passwd\n"), ("dotdot", "0" * 64 + "  ../outside\n"),
                   ("dotdot-mid", "0" * 64 + "  panel/../../x\n"), ("uri", "0" * 64 + "  http://x/y\n"),
                   ("drive", "0" * 64 + "  c:/x\n"), ("one-space", "0" * 64 + " panel/x\n"),
                   ("upper-hex", "A" * 64 + "  panel/x\n"), ("dup", None)):
    if line is None:
        line = open(os.path.join(BASE, "checksums.txt")).read().splitlines(True)[0]
    case("X-checksums-" + name, "seal_failed", bad_checksums(line))

# --- path fields: absolute and '..' ---------------------------------------------
for path, val in (("capture.manifest_file", "/etc/passwd"), ("panel.panel_file", "../x.json"),
                  ("head.file", "/abs/weight.safetensors"), ("head.head_json", "head/../../x"),
                  ("runtime.file", "c:/runtime.json")):
    case("path-" + path + "-" + ("abs" if "/" == val[0] else "up"), None,
         edit_manifest(lambda m, p=path, v=val: setpath(m, p, v)))
def rec_path(doc):
    doc["records"][1]["file"] = "../../../etc/passwd"
case("path-capture-record-dotdot", "path_escape", edit_sub(CAP, rec_path))
def tok_path(doc):
    doc["records"][0]["token_file"] = "/etc/hostname"
case("path-panel-token-abs", "path_escape", edit_sub(PANEL, tok_path))

# --- safetensors lies (resealed so only the tensor checks can notice) ---------------
def tensor_edit(fn):
    def f(root):
        p = os.path.join(root, "capture/hidden_0000.safetensors")
        data = bytearray(open(p, "rb").read())
        n = struct.unpack("<Q", data[:8])[0]
        header, body = json.loads(data[8:8 + n]), data[8 + n:]
        header, body, n2 = fn(header, body, n)
        hb = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
        open(p, "wb").write(struct.pack("<Q", n2 if n2 is not None else len(hb)) + hb + body)
        reseal(root)
    return f
case("st-truncated", "bad_tensor_file", tensor_edit(lambda h, b, n: (h, b[:-5], None)))
case("st-header-len-past-eof", "bad_tensor_file", tensor_edit(lambda h, b, n: (h, b, 1 << 40)))
def overlap(h, b, n):
    h["hidden_states"]["data_offsets"] = [0, len(b)]
    h["extra"] = {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}
    return h, b, None
case("st-overlapping-offsets", "bad_tensor_file", tensor_edit(overlap))
def shape_lie(h, b, n):
    h["hidden_states"]["shape"] = [h["hidden_states"]["shape"][0] + 1, h["hidden_states"]["shape"][1]]
    return h, b, None
case("st-header-shape-lie", "bad_tensor_file", tensor_edit(shape_lie))
def dtype_lie(h, b, n):
    h["hidden_states"]["dtype"] = "F32"
    return h, b, None
case("st-header-dtype-lie", "bad_tensor_file", tensor_edit(dtype_lie))
case("st-header-not-json", "bad_tensor_file", tensor_edit(lambda h, b, n: ({"x": 1}, b, None)))
def manifest_dtype_lie(doc):
    doc["records"][0]["dtype"] = "F16"
case("record-dtype-lie", "tensor_mismatch", edit_sub(CAP, manifest_dtype_lie))
def manifest_shape_lie(doc):
    doc["records"][0]["shape"] = [doc["records"][0]["shape"][0], 9]
case("record-shape-lie", "schema_invalid", edit_sub(CAP, manifest_shape_lie))

# --- records, panel, head, coverage, role ------------------------------------------
def dup_index(doc):
    doc["records"][2]["index"] = 1
case("duplicate-record-index", "digest_mismatch", edit_sub(CAP, dup_index))
def content_digest_lie(doc):
    doc["records"][0]["tensor_content_sha256"] = "1" * 64
case("record-content-digest-lie", "digest_mismatch", edit_sub(CAP, content_digest_lie))
def malformed(root):
    open(os.path.join(root, CAP), "w").write("{not json")
    reseal(root)
case("malformed-capture-manifest", "bad_schema", malformed)
case("sub-seal-broken", "seal_failed", edit_sub(CAP, lambda d: d.update(run_name="x"), reseal_subs=False))
case("wrong-schema-string", "bad_schema", edit_manifest(lambda m: m.update(schema="malaiwah.fidelity-dataset.v2")))
case("wrong-format-version", "bad_schema", edit_manifest(lambda m: m.update(format_version=1.5)))
def token_tamper(root):
    p = os.path.join(root, "panel/tokens/context-0001.json")
    ids = json.load(open(p)); ids[0] = (ids[0] + 1) % 32
    open(p, "w").write(json.dumps(ids, separators=(",", ":")))
    reseal(root)
case("P-token-file-tampered", "panel_digest_mismatch", token_tamper)
def bind4(doc):
    doc["records"][0]["prediction_positions"] = 5
case("P-scored-rows-binding", "panel_binding", edit_sub(PANEL, bind4))
case("P-suite-hash-lie", "panel_digest_mismatch",
     edit_manifest(lambda m: m["panel"].update(suite_token_hash_sha256="2" * 64)))
case("H-applied-in-capture", "schema_invalid", edit_manifest(lambda m: m["head"].update(applied_in_capture=True)))
case("H-raw-vs-content", "schema_invalid", edit_manifest(lambda m: m["head"].update(raw_tensor_sha256="3" * 64)))
case("H-head-content-lie", "tensor_mismatch",
     edit_manifest(lambda m: m["head"].update(raw_tensor_sha256="4" * 64, tensor_content_sha256="4" * 64)))
case("H-root-without-head", "schema_invalid", edit_manifest(lambda m: m["head"].update(present=False)))
case("C-complete-lie", "incomplete", edit_manifest(lambda m: m["coverage"].update(declared_records=5)))
case("X-root-lossy-codec", "schema_invalid", edit_manifest(lambda m: m["capture"].update(lossy_codec="q8")))
case("L-unknown-lane", "schema_invalid", edit_manifest(lambda m: m["runtime"].update(lane="my-laptop")))
case("DET-container-evidence", "schema_invalid",
     edit_manifest(lambda m: m["determinism"].update(evidence_hashes=[m["head"]["file_sha256"]])))

shutil.rmtree(WORK, ignore_errors=True)
passed = sum(results)
print("hostile: %d passed, %d failed" % (passed, len(results) - passed))
sys.exit(0 if passed == len(results) else 1)
