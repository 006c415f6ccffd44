#!/usr/bin/env python3
"""Token panels (FORMAT.md §5): `fidelity panel build` writes the upstream
format quant-pipeline.glm53-token-panel.v1 and `fidelity panel check` loads
one the way hf_capture.load_panel does.  Panels are built from JSON and .npy
inputs, checked against Python's own digest recipes (FORMAT.md §3) and, when
numpy is installed, against numpy's .npy reader and writer; hand-made
upstream panels (per-window masks, padded |b1 masks, a shared mask found by
sha, mixed roles) exercise the loader; hostile panels must each be refused
with the right code (exit 3) and nothing may crash or trip a sanitizer.
usage: test_panel.py BINARY"""
import hashlib, json, os, shutil, struct, subprocess, sys, tempfile

try:
    import numpy as np
except ImportError:  # the .npy files are then written and read by hand
    np = None

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="fd-panel-")
SCHEMA = "quant-pipeline.glm53-token-panel.v1"
results = []


def sha(data):
    return hashlib.sha256(data).hexdigest()


def sha_file(path):
    with open(path, "rb") as f:
        return sha(f.read())


def json_digest(ids):
    return sha(json.dumps(ids, separators=(",", ":")).encode("utf-8"))


def suite(per, legacy=False):
    return sha(("" if legacy else "\n").join(per).encode("ascii" if not legacy else "utf-8"))


def run(*args):
    p = subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def refusal_code(out):
    for line in out.splitlines():
        if line.startswith("REFUSED ["):
            return line[len("REFUSED ["):line.index("]")]
    return None


def sanitizer_noise(err):
    return any(s in err for s in ("AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer"))


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n    " + str(detail).replace("\n", "\n    ")))


# --- .npy by hand (numpy format 1.0, exactly as numpy.save writes it) -------------------------
CODES = {"<i8": "q", "<i4": "i", "<i2": "h", "|i1": "b", "<u8": "Q", "<u4": "I", "<u2": "H", "|u1": "B",
         "|b1": "?", "<f8": "d"}


def npy_header(descr, shape):
    shp = "(%d,)" % shape[0] if len(shape) == 1 else "(" + ", ".join(str(s) for s in shape) + ")"
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shp)
    h += " " * (21 - len(str(shape[0])))
    total = len(h) + 1
    total += 64 - ((10 + total) % 64)
    h = h.ljust(total - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode("latin1")


def npy_bytes(values, descr="<i8", shape=None):
    flat = [v for row in values for v in row] if values and isinstance(values[0], list) else list(values)
    if shape is None:
        shape = (len(values), len(values[0])) if values and isinstance(values[0], list) else (len(values),)
    return npy_header(descr, shape) + struct.pack("<%d%s" % (len(flat), CODES[descr]), *flat)


def npy_read(path):
    """(descr, shape, values) of a 1-D/2-D .npy; numpy when present, else by hand."""
    if np is not None:
        a = np.load(path, allow_pickle=False)
        return a.dtype.str, a.shape, a.reshape(-1).tolist()
    data = open(path, "rb").read()
    hl = struct.unpack("<H", data[8:10])[0]
    hdr = eval(data[10:10 + hl].decode("latin1"))  # trusted: our own test files
    n = 1
    for s in hdr["shape"]:
        n *= s
    vals = list(struct.unpack("<%d%s" % (n, CODES[hdr["descr"]]), data[10 + hl:]))
    return hdr["descr"], hdr["shape"], vals


def write(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def dump(path, doc):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, sort_keys=True)


# --- hand-made upstream panels ------------------------------------------------------------------
def make_panel(root, windows, shared_mask_name=None, panel_id="panel--handmade", extra=None):
    """windows: dicts with id, role, ids, and optionally mask (list), mask_descr,
    tok_descr, mask_mode ('own' -> arrays/<id>.mask.npy, 'shared' -> the shared file)."""
    os.makedirs(os.path.join(root, "arrays"), exist_ok=True)
    out = []
    for w in windows:
        tok = npy_bytes(w["ids"], w.get("tok_descr", "<i8"))
        write(os.path.join(root, "arrays", w["id"] + ".tokens.npy"), tok)
        mask = w.get("mask", [1] * len(w["ids"]))
        mb = npy_bytes(mask, w.get("mask_descr", "<i8"))
        if w.get("mask_mode", "shared") == "own":
            write(os.path.join(root, "arrays", w["id"] + ".mask.npy"), mb)
        else:
            write(os.path.join(root, "arrays", shared_mask_name or "causal-mask-%d.npy" % len(w["ids"])), mb)
        pred = sum(1 for a, b in zip(mask[:-1], mask[1:]) if a and b)
        out.append({"window_id": w["id"], "role": w.get("role", "final"), "domain": w.get("domain", "prose"),
                    "document_id": w.get("doc", "doc-" + w["id"]), "num_tokens": len(w["ids"]),
                    "prediction_positions": pred, "token_ids_sha256": sha(tok), "attention_mask_sha256": sha(mb),
                    "token_ids_json_sha256": json_digest(w["ids"])})
    per = [o["token_ids_json_sha256"] for o in sorted(out, key=lambda o: o["window_id"])]
    doc = {"schema": SCHEMA, "name": "hand-made", "contexts": len(out),
           "context_length": len(windows[0]["ids"]), "positions_per_context": len(windows[0]["ids"]) - 1,
           "suite_token_hash_sha256": suite(per), "panel_token_sha256_legacy": suite(per, True),
           "tokenizer": {"id": None, "vocab_size": 1000}, "provenance": {"tool": "test_panel.py"}, "windows": out}
    if panel_id:
        doc["panel_id"] = panel_id
    if extra:
        doc.update(extra)
    dump(os.path.join(root, "panel.json"), doc)
    return doc


def rng_ids(seed, n, vocab):
    out, s = [], seed
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append((s >> 33) % vocab)
    return out


VOCAB = 1000
L = 16
seqs = [rng_ids(i + 1, L, VOCAB) for i in range(3)]

# === 1. build from JSON (a list of lists) ======================================================
inp = os.path.join(WORK, "inputs")
os.makedirs(inp)
write(os.path.join(inp, "docs.json"), json.dumps(seqs).encode())
write(os.path.join(inp, "one.json"), json.dumps(rng_ids(99, L, VOCAB)).encode())
P1 = os.path.join(WORK, "p1")
rc, out, err = run("panel", "build", "--out", P1, "--vocab", VOCAB, "--domain", "prose",
                   os.path.join(inp, "docs.json"), os.path.join(inp, "one.json"))
check("build from JSON (list of lists + single list)", rc == 0 and not sanitizer_noise(err), out + err)
allids = seqs + [rng_ids(99, L, VOCAB)]


def verify_built(name, root, expect_ids, role="final", Lw=L, docs=None):
    doc = load(os.path.join(root, "panel.json"))
    ok = doc["schema"] == SCHEMA and doc["contexts"] == len(expect_ids) and doc["context_length"] == Lw
    ok &= doc["positions_per_context"] == Lw - 1 and doc["tokenizer"] == {"id": None, "vocab_size": VOCAB}
    ok &= doc["provenance"]["tool"] == "fidelity panel build"
    problems = [] if ok else ["top-level fields: %r" % {k: v for k, v in doc.items() if k != "windows"}]
    per = []
    for k, (w, ids) in enumerate(zip(doc["windows"], expect_ids)):
        wid = "%s-%04d" % (role, k)
        tp = os.path.join(root, "arrays", wid + ".tokens.npy")
        descr, shape, vals = npy_read(tp)
        if w["window_id"] != wid or w["role"] != role or w["num_tokens"] != Lw or w["prediction_positions"] != Lw - 1:
            problems.append("window %d fields %r" % (k, w))
        if docs and w["document_id"] != docs[k]:
            problems.append("window %d document_id %s != %s" % (k, w["document_id"], docs[k]))
        if descr != "<i8" or tuple(shape) != (Lw,) or vals != ids:
            problems.append("window %d tokens .npy: %s %s" % (k, descr, shape))
        if sha_file(tp) != w["token_ids_sha256"]:
            problems.append("window %d token_ids_sha256 is not the file sha" % k)
        if open(tp, "rb").read() != npy_bytes(ids):
            problems.append("window %d tokens .npy bytes differ from numpy.save's" % k)
        if np is not None:
            import io
            buf = io.BytesIO()
            np.save(buf, np.array(ids, dtype=np.int64))
            if buf.getvalue() != open(tp, "rb").read():
                problems.append("window %d tokens .npy is not byte-identical to numpy.save" % k)
        if w["token_ids_json_sha256"] != json_digest(ids):
            problems.append("window %d token_ids_json_sha256 differs from hashlib" % k)
        mp = os.path.join(root, "arrays", "causal-mask-%d.npy" % Lw)
        mdescr, mshape, mvals = npy_read(mp)
        if mdescr != "<i8" or tuple(mshape) != (Lw,) or mvals != [1] * Lw or sha_file(mp) != w["attention_mask_sha256"]:
            problems.append("window %d mask" % k)
        per.append(json_digest(ids))
    if len(doc["windows"]) != len(expect_ids):
        problems.append("%d windows, want %d" % (len(doc["windows"]), len(expect_ids)))
    if doc["suite_token_hash_sha256"] != suite(per) or doc["panel_token_sha256_legacy"] != suite(per, True):
        problems.append("suite hashes differ from hashlib")
    check("built panel matches numpy + hashlib: " + name, not problems, "\n".join(problems))
    # the loader accepts it and prints the same suite hash
    rc2, out2, err2 = run("panel", "check", root, "--vocab", VOCAB)
    want = "suite_token_hash_sha256  " + suite(per)
    check("panel check accepts: " + name, rc2 == 0 and want in out2 and "declared suite hash      matches" in out2
          and sum(1 for l in out2.splitlines() if l[:4].isdigit()) == len(expect_ids) and not sanitizer_noise(err2),
          out2 + err2)
    return doc


d1 = verify_built("JSON inputs", P1, allids, docs=["docs.json#0", "docs.json#1", "docs.json#2", "one.json#0"])
check("provenance lists the inputs with their file sha",
      d1["provenance"]["inputs"] == [{"name": "docs.json", "sha256": sha_file(os.path.join(inp, "docs.json"))},
                                     {"name": "one.json", "sha256": sha_file(os.path.join(inp, "one.json"))}],
      d1["provenance"])
check("panel_id and name default to panel--<basename>", d1["panel_id"] == "panel--p1" and d1["name"] == "panel--p1",
      (d1["panel_id"], d1["name"]))
check("no temporary directory left behind", sorted(os.listdir(WORK)) == ["inputs", "p1"], os.listdir(WORK))

# === 2. build from .npy: a 2-D int64 array split to --context-length, a 1-D int32 array ========
long_rows = [rng_ids(10 + r, 2 * L + 5, VOCAB) for r in range(2)]  # 2 full windows + a 5-token tail each
if np is not None:
    np.save(os.path.join(inp, "rows.npy"), np.array(long_rows, dtype=np.int64))
    np.save(os.path.join(inp, "flat.npy"), np.array(rng_ids(77, L, VOCAB), dtype=np.int32))
else:
    write(os.path.join(inp, "rows.npy"), npy_bytes(long_rows, "<i8"))
    write(os.path.join(inp, "flat.npy"), npy_bytes(rng_ids(77, L, VOCAB), "<i4"))
P2 = os.path.join(WORK, "p2")
rc, out, err = run("panel", "build", "--out", P2, "--vocab", VOCAB, "--context-length", L, "--role", "calib",
                   "--panel-id", "panel--npy.test", "--name", "npy test", os.path.join(inp, "rows.npy"),
                   os.path.join(inp, "flat.npy"))
check("build from .npy (2-D int64 split, 1-D int32)", rc == 0 and "dropped tails            2" in out
      and "(10 tokens)" in out and not sanitizer_noise(err), out + err)
expect2 = [long_rows[0][:L], long_rows[0][L:2 * L], long_rows[1][:L], long_rows[1][L:2 * L], rng_ids(77, L, VOCAB)]
d2 = verify_built(".npy inputs", P2, expect2, role="calib",
                  docs=["rows.npy#0", "rows.npy#1", "rows.npy#2", "rows.npy#3", "flat.npy#0"])
check("--panel-id / --name are written", d2["panel_id"] == "panel--npy.test" and d2["name"] == "npy test")

# --role / --windows on check
rc, out, err = run("panel", "check", P2, "--vocab", VOCAB, "--role", "calib", "--windows", 2)
check("check --role calib --windows 2 keeps the first two", rc == 0 and "2 of 5" in out
      and "suite_token_hash_sha256  " + suite([json_digest(x) for x in expect2[:2]]) in out
      and "not comparable" in out, out + err)
rc, out, err = run("panel", "check", P2, "--vocab", VOCAB, "--role", "final")
check("check --role with no such windows is refused", rc == 3 and refusal_code(out) == "panel_invalid", out + err)

# === 3. determinism, --force, refusal of an existing destination ================================
P3a, P3b = os.path.join(WORK, "det-a"), os.path.join(WORK, "det-b")
args = ["--vocab", VOCAB, "--panel-id", "panel--det", os.path.join(inp, "docs.json")]
run("panel", "build", "--out", P3a, *args)
run("panel", "build", "--out", P3b, *args)


def tree(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = sha_file(p)
    return out


check("deterministic: the same inputs give byte-identical panels", tree(P3a) == tree(P3b) and tree(P3a),
      (tree(P3a), tree(P3b)))
rc, out, err = run("panel", "build", "--out", P3a, *args)
check("an existing destination is refused without --force", rc == 3 and refusal_code(out) == "destination_exists", out)
rc, out, err = run("panel", "build", "--out", P3a, "--force", "--vocab", VOCAB, os.path.join(inp, "one.json"))
check("--force replaces it", rc == 0 and load(os.path.join(P3a, "panel.json"))["contexts"] == 1
      and not os.path.exists(os.path.join(P3a, "arrays", "final-0001.tokens.npy")), out + err)
check("no .partial/.old directories left", not [n for n in os.listdir(WORK) if ".partial" in n or ".old" in n],
      os.listdir(WORK))

# === 4. usage errors (exit 4) ==================================================================
for name, a in (("build without --vocab", ["build", "--out", os.path.join(WORK, "u"), os.path.join(inp, "one.json")]),
                ("build without inputs", ["build", "--out", os.path.join(WORK, "u"), "--vocab", 5]),
                ("build --context-length 1", ["build", "--out", os.path.join(WORK, "u"), "--vocab", 5,
                                              "--context-length", 1, os.path.join(inp, "one.json")]),
                ("check without --vocab", ["check", P1]),
                ("check --vocab 0", ["check", P1, "--vocab", 0]),
                ("unknown subcommand", ["frobnicate"])):
    rc, out, err = run("panel", *a)
    check("usage: " + name, rc == 4 and not sanitizer_noise(err), out + err)

# === 5. hand-made upstream panels: the loader's reading rules ==================================
H = os.path.join(WORK, "hand")
padded = [0, 0, 1, 1, 1, 1, 1, 1]  # left padding: 5 prediction positions
make_panel(H, [
    {"id": "final-0002", "ids": rng_ids(5, 8, VOCAB)},                                  # shared causal-mask-8
    {"id": "final-0000", "ids": rng_ids(6, 8, VOCAB), "mask": padded, "mask_descr": "|b1", "mask_mode": "own"},
    {"id": "final-0001", "ids": rng_ids(7, 8, VOCAB), "tok_descr": "<i4", "mask": padded, "mask_descr": "|u1",
     "mask_mode": "own"},
    {"id": "heldout-0000", "role": "heldout", "ids": rng_ids(8, 8, VOCAB), "mask": [1] * 8, "mask_descr": "<i4",
     "mask_mode": "own"},
], panel_id=None)
write(os.path.join(H, "panel.receipt.json"), b'{"schema":"x","tokenizer":{"id":"org/tok"}}\n')
rc, out, err = run("panel", "check", H, "--vocab", VOCAB, "--role", "final")
lines = [l for l in out.splitlines() if l[:4].isdigit()]
want_order = ["final-0000", "final-0001", "final-0002"]
check("hand-made panel: role filter, window_id order, own/shared masks, |b1 |u1 <i4 dtypes",
      rc == 0 and [l.split()[1] for l in lines] == want_order
      and "prediction_positions=5" in lines[0] and "prediction_positions=5" in lines[1]
      and "prediction_positions=7" in lines[2] and "mask=final-0000.mask.npy" in lines[0]
      and "mask=causal-mask-8.npy" in lines[2] and not sanitizer_noise(err), out + err)
check("panel_id derived as panel--<basename(dir)>", "panel--hand (derived" in out, out)
check("panel_receipt_sha256 is the receipt file sha",
      "panel_receipt_sha256     " + sha_file(os.path.join(H, "panel.receipt.json")) in out, out)
rc, out, err = run("panel", "check", H + "/", "--vocab", VOCAB, "--windows", 2)
check("empty role keeps all, --windows 2 keeps the first two by window_id (trailing slash on DIR)",
      rc == 0 and [l.split()[1] for l in out.splitlines() if l[:4].isdigit()] == ["final-0000", "final-0001"]
      and "panel--hand (derived" in out, out + err)
rc, out, err = run("panel", "check", H, "--vocab", VOCAB, "--role", "heldout")
check("role heldout", rc == 0 and "heldout-0000" in out and "prediction_positions=7" in out, out + err)

# a shared mask under a name other than causal-mask-<len>.npy, found by its sha
G = os.path.join(WORK, "glob")
make_panel(G, [{"id": "final-0000", "ids": rng_ids(1, 6, VOCAB)}, {"id": "final-0001", "ids": rng_ids(2, 6, VOCAB)}],
           shared_mask_name="causal-mask-v2-all-ones.npy")
write(os.path.join(G, "arrays", "causal-mask-zzz.npy"), npy_bytes([0] * 6))  # a decoy that must not match
rc, out, err = run("panel", "check", G, "--vocab", VOCAB)
check("a shared mask found among arrays/causal-mask-*.npy by its sha",
      rc == 0 and out.count("mask=causal-mask-v2-all-ones.npy") == 2, out + err)

# === 6. hostile panels: each refused with its code (exit 3), no crash ==========================
BASE = P1  # 4 windows x 16 tokens, vocab 1000


def hostile(name, expect, mutate, vocab=VOCAB, extra=(), word=None):
    root = os.path.join(WORK, "h-" + name)
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(BASE, root)
    mutate(root)
    rc, out, err = run("panel", "check", root, "--vocab", vocab, *extra)
    code = refusal_code(out)
    ok = rc == 3 and code == expect and not sanitizer_noise(err) and (word is None or word in out)
    check("hostile %-34s -> %s" % (name, expect), ok, "rc=%d code=%s\n%s%s" % (rc, code, out, err))
    shutil.rmtree(root, ignore_errors=True)


def edit_doc(fn):
    def f(root):
        p = os.path.join(root, "panel.json")
        d = load(p)
        fn(d)
        dump(p, d)
    return f


def set_win(k, **kv):
    return edit_doc(lambda d: d["windows"][k].update(kv))


def rewrite_tokens(k, data_fn, fix_sha=True):
    """Replaces window k's tokens .npy with data_fn(old bytes); re-declares its sha like a forger."""
    def f(root):
        p = os.path.join(root, "panel.json")
        d = load(p)
        tp = os.path.join(root, "arrays", d["windows"][k]["window_id"] + ".tokens.npy")
        new = data_fn(open(tp, "rb").read())
        write(tp, new)
        if fix_sha:
            d["windows"][k]["token_ids_sha256"] = sha(new)
            dump(p, d)
    return f


def with_ids(k, ids, descr="<i8", fix_json=True):
    def f(root):
        rewrite_tokens(k, lambda old: npy_bytes(ids, descr))(root)
        if fix_json:
            set_win(k, token_ids_json_sha256=json_digest(ids), num_tokens=len(ids))(root)
    return f


def replace_mask(data, own=None):
    """Replaces the shared mask; re-declares every window's mask sha."""
    def f(root):
        mp = os.path.join(root, "arrays", "causal-mask-%d.npy" % L)
        write(mp, data)
        edit_doc(lambda d: [w.update(attention_mask_sha256=sha(data)) for w in d["windows"]])(root)
    return f


def flip_byte(off):
    def f(old):
        b = bytearray(old)
        b[off] ^= 1
        return bytes(b)
    return f


def header_len(delta=None, value=None):
    def f(old):
        hl = struct.unpack("<H", old[8:10])[0]
        return old[:8] + struct.pack("<H", value if value is not None else hl + delta) + old[10:]
    return f


# token ids
hostile("token-id-equals-vocab", "token_out_of_range", with_ids(1, [5] * (L - 1) + [VOCAB]), word="position 15")
hostile("token-id-negative", "token_out_of_range", with_ids(2, [-1] + [5] * (L - 1)))
hostile("check-vocab-smaller-than-ids", "token_out_of_range", lambda r: None, vocab=3)
# ragged
def replace_mask_for_len(root, k, n):
    mb = npy_bytes([1] * n)
    write(os.path.join(root, "arrays", "causal-mask-%d.npy" % n), mb)
    set_win(k, attention_mask_sha256=sha(mb), prediction_positions=n - 1)(root)


hostile("ragged-panel", "ragged_panel", lambda r: (with_ids(3, rng_ids(3, L + 2, VOCAB))(r),
                                                    replace_mask_for_len(r, 3, L + 2)))
# digests
hostile("tokens-npy-tampered", "panel_digest_mismatch", rewrite_tokens(0, flip_byte(-1), fix_sha=False))
hostile("tokens-npy-appended", "panel_digest_mismatch", rewrite_tokens(0, lambda o: o + b"\0", fix_sha=False))
hostile("token-json-digest-lie", "panel_digest_mismatch", set_win(0, token_ids_json_sha256="0" * 64))
hostile("tokens-changed-json-digest-stale", "panel_digest_mismatch", with_ids(1, rng_ids(42, L, VOCAB), fix_json=False),
        word="token_ids_json_sha256")
hostile("mask-tampered", "panel_digest_mismatch",
        lambda r: write(os.path.join(r, "arrays", "causal-mask-%d.npy" % L), npy_bytes([1] * (L - 1) + [0])))
hostile("mask-sha-declared-wrong", "panel_digest_mismatch", set_win(2, attention_mask_sha256="a" * 64))
# files
hostile("missing-mask", "missing_file", lambda r: os.remove(os.path.join(r, "arrays", "causal-mask-%d.npy" % L)))
hostile("missing-tokens", "missing_file", lambda r: os.remove(os.path.join(r, "arrays", "final-0002.tokens.npy")))
hostile("missing-panel-json", "missing_file", lambda r: os.remove(os.path.join(r, "panel.json")))
hostile("tokens-npy-is-a-directory", "unreadable",
        lambda r: (os.remove(os.path.join(r, "arrays", "final-0000.tokens.npy")),
                   os.mkdir(os.path.join(r, "arrays", "final-0000.tokens.npy"))))
# panel.json structure
hostile("wrong-schema", "panel_invalid", edit_doc(lambda d: d.update(schema="quant-pipeline.glm53-token-panel.v2")))
hostile("schema-absent", "panel_invalid", edit_doc(lambda d: d.pop("schema")))
hostile("malformed-panel-json", "panel_invalid",
        lambda r: write(os.path.join(r, "panel.json"), open(os.path.join(r, "panel.json"), "rb").read()[:-40]))
hostile("panel-json-not-object", "panel_invalid", lambda r: write(os.path.join(r, "panel.json"), b"[1,2,3]"))
hostile("panel-json-empty", "panel_invalid", lambda r: write(os.path.join(r, "panel.json"), b""))
hostile("panel-json-nan", "panel_invalid",
        lambda r: write(os.path.join(r, "panel.json"), b'{"schema":"%s","windows":[],"x":NaN}' % SCHEMA.encode()))
hostile("windows-not-list", "panel_invalid", edit_doc(lambda d: d.update(windows={"a": 1})))
hostile("windows-empty", "panel_invalid", edit_doc(lambda d: d.update(windows=[])))
hostile("window-not-object", "panel_invalid", edit_doc(lambda d: d["windows"].append(7)))
hostile("window-id-path-escape", "panel_invalid", set_win(0, window_id="../../etc/passwd"))
hostile("window-id-missing", "panel_invalid", edit_doc(lambda d: d["windows"][0].pop("window_id")))
hostile("window-id-duplicate", "panel_invalid", set_win(1, window_id="final-0000"))
hostile("digest-not-hex", "panel_invalid", set_win(0, token_ids_sha256="XYZ"))
hostile("digest-missing", "panel_invalid", edit_doc(lambda d: d["windows"][0].pop("attention_mask_sha256")))
hostile("prediction-positions-lie", "panel_invalid", set_win(2, prediction_positions=L), word="prediction positions")
hostile("prediction-positions-missing", "panel_invalid", edit_doc(lambda d: d["windows"][2].pop("prediction_positions")))
hostile("prediction-positions-string", "panel_invalid", set_win(2, prediction_positions="15"))
hostile("num-tokens-lie", "panel_invalid", set_win(1, num_tokens=L + 1))
# masks
hostile("mask-wrong-length", "panel_invalid", replace_mask(npy_bytes([1] * (L + 1))), word="mask length")
hostile("mask-all-zero", "panel_invalid", replace_mask(npy_bytes([0] * L)), word="prediction positions")
hostile("mask-float-dtype", "panel_invalid", replace_mask(npy_bytes([1.0] * L, "<f8")), word="dtype")
hostile("mask-2d", "panel_invalid", replace_mask(npy_bytes([[1] * L], "<i8")), word="2-D")
hostile("mask-not-npy", "panel_invalid", replace_mask(b"hello, world"))
# .npy headers that lie
hostile("npy-header-length-longer", "panel_invalid", rewrite_tokens(0, header_len(delta=16)))
hostile("npy-header-length-shorter", "panel_invalid", rewrite_tokens(0, header_len(delta=-16)))
hostile("npy-header-length-past-eof", "panel_invalid", rewrite_tokens(0, header_len(value=0xFFFF)))
hostile("npy-header-length-zero", "panel_invalid", rewrite_tokens(0, header_len(value=0)))
hostile("npy-shape-lie", "panel_invalid",
        rewrite_tokens(0, lambda o: o.replace(b"'shape': (%d,)" % L, b"'shape': (%d,)" % (L + 1), 1)))
hostile("npy-shape-huge", "panel_invalid",
        rewrite_tokens(0, lambda o: o.replace(b"'shape': (%d,)" % L, b"'shape': (99999999999999999999,)", 1)))
hostile("npy-truncated", "panel_invalid", rewrite_tokens(0, lambda o: o[:9]))
hostile("npy-fortran-order", "panel_invalid",
        rewrite_tokens(0, lambda o: o.replace(b"'fortran_order': False", b"'fortran_order': True ", 1)))
hostile("tokens-float-dtype", "panel_invalid", with_ids(0, [1.0] * L, "<f8"))
hostile("tokens-2d", "panel_invalid", rewrite_tokens(0, lambda o: npy_bytes([[1] * L], "<i8")))
hostile("tokens-one-token", "panel_invalid", with_ids(0, [1]))

# === 7. hostile build inputs ===================================================================
def build_refused(name, expect, files, *flags):
    paths = []
    for i, data in enumerate(files):
        p = os.path.join(WORK, "in-%s-%d%s" % (name, i, ".npy" if data[:6] == b"\x93NUMPY" else ".json"))
        write(p, data)
        paths.append(p)
    out_dir = os.path.join(WORK, "b-" + name)
    rc, out, err = run("panel", "build", "--out", out_dir, "--vocab", VOCAB, *flags, *paths)
    code = refusal_code(out)
    ok = rc == 3 and code == expect and not sanitizer_noise(err) and not os.path.exists(out_dir)
    ok &= not [n for n in os.listdir(WORK) if n.startswith("b-" + name + ".")]
    check("build refuses %-28s -> %s" % (name, expect), ok, "rc=%d code=%s\n%s%s" % (rc, code, out, err))


build_refused("id-equals-vocab", "token_out_of_range", [json.dumps([[1, 2, 3, VOCAB]]).encode()])
build_refused("id-negative", "token_out_of_range", [json.dumps([1, -2, 3]).encode()])
build_refused("id-bigint", "token_out_of_range", [b"[1, 2, 123456789012345678901234567890]"])
build_refused("npy-id-too-big", "token_out_of_range", [npy_bytes([1, 2, 2 ** 63 + 5], "<u8")])
build_refused("ragged", "ragged_panel", [json.dumps([[1, 2, 3], [1, 2, 3, 4]]).encode()])
build_refused("ragged-across-files", "ragged_panel", [json.dumps([1, 2, 3]).encode(), npy_bytes([1, 2], "<i8")])
build_refused("float-id", "bad_input", [b"[[1, 2.0, 3]]"])
build_refused("bool-id", "bad_input", [b"[true, 2, 3]"])
build_refused("mixed-list", "bad_input", [b"[[1, 2, 3], 4]"])
build_refused("not-a-list", "bad_input", [b'{"ids": [1, 2]}'])
build_refused("empty-list", "bad_input", [b"[]"])
build_refused("malformed-json", "bad_input", [b"[[1, 2, 3"])
build_refused("one-token-windows", "bad_input", [b"[[1], [2]]"])
build_refused("npy-lying-header", "bad_input", [header_len(delta=8)(npy_bytes([1, 2, 3, 4]))])
build_refused("npy-float", "bad_input", [npy_bytes([1.0, 2.0], "<f8")])
build_refused("npy-3d", "bad_input", [npy_header("<i8", (1, 1, 2)) + struct.pack("<2q", 1, 2)])
build_refused("all-shorter-than-L", "bad_input", [json.dumps([1, 2, 3]).encode()], "--context-length", 8)
build_refused("bad-role", "bad_usage", [json.dumps([1, 2, 3]).encode()], "--role", "../x")
rc, out, err = run("panel", "build", "--out", os.path.join(WORK, "b-missing"), "--vocab", VOCAB,
                   os.path.join(WORK, "no-such-input.json"))
check("build refuses a missing input -> missing_file", rc == 3 and refusal_code(out) == "missing_file", out + err)

shutil.rmtree(WORK, ignore_errors=True)
passed = sum(results)
failed = len(results) - passed
print("panel: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
