#!/usr/bin/env python3
"""llama.cpp .kld interop (issue 7 part 2, docs/ADAPTERS.md).

- export: a hidden-form dataset -> .kld whose bytes equal tests/py/kld_ref.py
  packing the dataset's own canonical logits (debug-logits), for an odd and an
  even vocabulary, both floor windows; layout checked against the format facts
  (magic, header, token block, size formula, row stride, zero pad);
- adapt: our .kld and an independently written one (kld_ref, logits with a
  wide range so both floors bite) -> sealed logit-form datasets that verify,
  whose stored F32 log-probs equal kld_ref's decode bit for bit, with
  lossy_codec, score_from = n_ctx/2, dtype_lossless false, role derived;
- refusals (exit 3, named code): truncated, trailing bytes, wrong vocab (--vocab
  and --head), bad magic, _logits_v2, out-of-range token, bad row, --role root,
  k3 sources, exporting a logit dataset; usage errors exit 4;
- compare: logit vs logit (numpy fp64 oracle, advisory, lossy disclosure),
  SC-1 self-compare of two adaptations, mixed hidden<->logit with the declared
  head (HEAD-3; oracle from debug-logits) and its refusals (no head: HEAD-3
  head_mismatch; score_from 0 candidate: panel_mismatch).
numpy is required (kld_ref is the oracle); without it the test says so and
exits 0.  usage: test_kld.py BINARY"""
import json, os, shutil, struct, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dsutil import load, dump, reseal, windowed_copy, run, refusal_code, sha

try:
    import numpy as np
    import kld_ref as K
except ImportError:
    print("numpy not installed: test_kld skipped (kld_ref.py is a numpy oracle)")
    sys.exit(0)

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="fd-kld-")
results = []


def case(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %-70s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[:400]))
    return ok


def w(*p):
    return os.path.join(WORK, *p)


def fid(*args):
    return run(BIN, *args)


def fixture(name, records, tokens, hidden, vocab, seed):
    rc, out = fid("write-fixture", "--out", w(name), "--records", str(records), "--tokens", str(tokens),
                  "--hidden", str(hidden), "--vocab", str(vocab), "--seed", str(seed), "--fixed-time")
    assert rc == 0, out
    return w(name)


def canonical_logits(ds, index, vocab):
    path = w("logits.f32")
    subprocess.run([BIN, "debug-logits", ds, str(index), path], check=True, capture_output=True)
    return np.fromfile(path, dtype="<f4").reshape(-1, vocab)


def st_tensor(path):
    blob = open(path, "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    key = [k for k in header if k != "__metadata__"][0]
    return header[key], blob[8 + n:]


def log_softmax64(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))


def kl_oracle(ref_logits, cand_logits):
    a, b = log_softmax64(ref_logits), log_softmax64(cand_logits)
    return (np.exp(a) * (a - b)).sum(axis=-1)


# ---- 1. export: bytes equal the independent packing -------------------------
for vocab, n_ctx, hidden in ((37, 12, 16), (40, 13, 24)):
    ds = fixture("ds-%d" % vocab, 3, n_ctx, hidden, vocab, 5)
    m = load(os.path.join(ds, "fidelity-dataset.json"))
    for window in (16, 24):
        out = w("x-%d-%d.kld" % (vocab, window))
        rc, text = fid("export", "--format", "llamacpp-kld", "--dataset", ds, "--out", out, "--kld-window", str(window))
        if not case("export vocab %d window %d exits 0" % (vocab, window), rc == 0, text):
            continue
        data = open(out, "rb").read()
        n_chunk = 3
        R = K.rows_per_chunk(n_ctx)
        nv = K.row_stride(vocab)
        case("layout: magic, header (n_ctx %d, n_vocab %d, n_chunk 3)" % (n_ctx, vocab),
             data[:8] == b"_logits_" and struct.unpack_from("<iii", data, 8) == (n_ctx, vocab, n_chunk))
        case("layout: size = 20 + 4*C*n + C*R*2*nv (nv = %d)" % nv,
             len(data) == 20 + 4 * n_chunk * n_ctx + n_chunk * R * 2 * nv == K.file_size(n_ctx, vocab, n_chunk))
        toks = np.frombuffer(data, "<i4", n_chunk * n_ctx, 20)
        panel = [json.load(open(os.path.join(ds, "panel/tokens/context-%04d.json" % c))) for c in range(n_chunk)]
        case("layout: token block is the panel's tokens in order", toks.tolist() == sum(panel, []))
        body = np.frombuffer(data, "<u2", offset=20 + 4 * n_chunk * n_ctx).reshape(-1, nv)
        want = []
        for c in range(n_chunk):
            L = canonical_logits(ds, c, vocab)
            want += [K.pack_row(L[p], window) for p in range(n_ctx // 2, n_ctx - 1)]
        same = len(want) == body.shape[0] and all((a == b).all() for a, b in zip(want, body))
        case("bytes equal kld_ref packing of the canonical logits (vocab %d, window %d)" % (vocab, window), same)
        if vocab % 2:
            case("odd vocab: the pad uint16 of every row is 0", (body[:, nv - 1] == 0).all())
        else:
            case("even vocab: no pad (nv = vocab + 4)", nv == vocab + 4)
        if window == 16:
            floors = sum(int((r[4:4 + vocab] == 0).sum()) for r in body)
            print("     note: %d codes at the floor (0) in this file" % floors)

# ---- 2. adapt: stored log-probs equal the packed ones ------------------------
ds = w("ds-37")
kld = w("x-37-16.kld")
head = os.path.join(ds, "head/weight.safetensors")
tokz = load(os.path.join(ds, "fidelity-dataset.json"))["panel"]["tokenizer"]["id"]
ad = w("ad")
rc, text = fid("adapt", "--source", "llamacpp-kld", "--in", kld, "--out", ad, "--head", head, "--tokenizer-id", tokz,
               "--vocab", "37")
case("adapt our .kld (with declared head) exits 0", rc == 0, text)
rc, text = fid("verify", ad)
case("adapted dataset verifies (tensors recomputed)", rc == 0, text)
rc, text = fid("validate", "--strict", ad)
case("validate --strict: no errors, no warnings", rc == 0, text)


def check_adapted(root, path_kld, window, label):
    m = load(os.path.join(root, "fidelity-dataset.json"))
    cap, pan = m["capture"], m["panel"]
    n_ctx, vocab, n_chunk, toks, dec, body = K.read_kld(path_kld)
    R = K.rows_per_chunk(n_ctx)
    ok = True
    for c in range(n_chunk):
        meta, payload = st_tensor(os.path.join(root, "capture/logits_%04d.safetensors" % c))
        got = np.frombuffer(payload, "<f4").reshape(meta["shape"])
        ok &= meta["dtype"] == "F32" and meta["shape"] == [R, vocab]
        ok &= got.tobytes() == dec[c * R:(c + 1) * R].astype("<f4").tobytes()
        ids = json.load(open(os.path.join(root, "panel/tokens/context-%04d.json" % c)))
        ok &= ids == toks[c * n_ctx:(c + 1) * n_ctx].tolist()
    case("%s: stored F32 log-probs and tokens equal kld_ref's decode bit for bit" % label, ok)
    lc = cap["lossy_codec"] or {}
    case("%s: logit form, lossy_codec %s, dtype_lossless false, head_separable false" % (label, lc.get("clamp")),
         cap["form"] == "logit" and cap["tensor_key"] == "logits" and cap["hidden_width"] is None
         and lc.get("kind") == "llamacpp-kld-uint16" and lc.get("bits") == 16
         and lc.get("clamp") == "max_logit - %d" % window and cap["dtype_lossless"] is False
         and cap["head_separable"] is False and cap["head_not_separable_reason"])
    sw = pan["scoring_window"]
    case("%s: scoring_window score_from = n_ctx/2 = %d, rows %d per chunk" % (label, n_ctx // 2, R),
         sw["score_from"] == n_ctx // 2 and sw["windowed"] is True and sw["dropped_positions_total"] == n_chunk * (n_ctx // 2)
         and pan["scored_positions_total"] == n_chunk * R and m["head"]["applied_in_capture"] is True)
    af = m["interop"]["adapted_from"] or {}
    case("%s: role derived with base_capture; adapted_from names the source and inferred fields" % label,
         m["dataset"]["role"] == "derived" and m["dataset"]["base_capture"] is not None
         and af.get("source_format") == "llamacpp-kld" and af.get("source_sha256") == sha(open(path_kld, "rb").read())
         and len(af.get("inferred_fields", [])) >= 5)
    return m


m_ad = check_adapted(ad, kld, 16, "our .kld")
case("declared head recorded by content digest", m_ad["head"]["present"] is True and
     m_ad["head"]["tensor_content_sha256"] == load(os.path.join(ds, "fidelity-dataset.json"))["head"]["tensor_content_sha256"])

# an independent writer's file, with wide logits so both floors bite
rng = np.random.default_rng(7)
for window in (16, 24):
    n_ctx, vocab, n_chunk = 9, 301, 2
    toks = rng.integers(0, vocab, n_chunk * n_ctx).tolist()
    rows = []
    for _ in range(n_chunk * K.rows_per_chunk(n_ctx)):
        x = (rng.standard_normal(vocab) * 9).astype(np.float32)
        x[rng.integers(0, vocab)] += 30      # a peaked row: many entries below the floor
        rows.append(K.pack_row(x, window))
    path = w("ref-%d.kld" % window)
    K.write_kld(path, n_ctx, vocab, toks, rows)
    out = w("adref-%d" % window)
    rc, text = fid("adapt", "--source", "llamacpp-kld", "--in", path, "--out", out)
    if case("adapt kld_ref's file (window %d, odd vocab, no head) exits 0" % window, rc == 0, text):
        mm = check_adapted(out, path, window, "kld_ref %d" % window)
        case("kld_ref %d: no head -> present false, null digests" % window,
             mm["head"]["present"] is False and mm["head"]["tensor_content_sha256"] is None)
        rc, text = fid("verify", out)
        case("kld_ref %d: adapted dataset verifies" % window, rc == 0, text)
        nfloor = sum(int((r[4:4 + vocab] == 0).sum()) for r in rows)
        case("kld_ref %d: the floor is exercised (%d codes at 0)" % (window, nfloor), nfloor > 0)

# ---- 3. refusals --------------------------------------------------------------
good = open(kld, "rb").read()


def refuse(name, blob, code, *extra):
    path = w("bad.kld")
    with open(path, "wb") as f:
        f.write(blob)
    shutil.rmtree(w("bad-out"), ignore_errors=True)
    rc, text = fid("adapt", "--source", "llamacpp-kld", "--in", path, "--out", w("bad-out"), *extra)
    case("refused %-34s -> exit 3 [%s]" % (name, code), rc == 3 and refusal_code(text) == code
         and not os.path.exists(w("bad-out")), text)


refuse("truncated by one byte", good[:-1], "kld_truncated")
refuse("truncated inside the header", good[:15], "kld_truncated")
refuse("truncated mid token block", good[:40], "kld_truncated")
refuse("one trailing byte", good + b"\0", "kld_size_mismatch")
refuse("wrong vocab (--vocab 38)", good, "kld_vocab_mismatch", "--vocab", "38")
refuse("header n_vocab edited to 36 (stride 40)", good[:12] + struct.pack("<i", 36) + good[16:], "kld_size_mismatch")
refuse("header n_vocab 38 + --vocab 37 (same stride)", good[:12] + struct.pack("<i", 38) + good[16:], "kld_vocab_mismatch",
       "--vocab", "37")
g40 = open(w("x-40-16.kld"), "rb").read()
refuse("n_vocab 40 edited to 39: non-zero pad", g40[:12] + struct.pack("<i", 39) + g40[16:], "bad_kld_row")
refuse("bad magic", b"_logitz_" + good[8:], "bad_kld_magic")
refuse("_logits_v2 fork layout", b"_logits_v2" + good[8:], "kld_v2_unsupported")
refuse("zero chunks", good[:16] + struct.pack("<i", 0) + good[20:], "bad_kld_header")
refuse("token outside the vocabulary", good[:20] + struct.pack("<i", 37) + good[24:], "bad_kld_tokens")
body0 = 20 + 4 * 3 * 12
refuse("NaN scale in a row", good[:body0] + struct.pack("<f", float("nan")) + good[body0 + 4:], "bad_kld_row")
refuse("row spanning 40 nats", good[:body0] + struct.pack("<f", 40 / 65535) + good[body0 + 4:], "bad_kld_row")
refuse("positive min_log_prob", good[:body0 + 4] + struct.pack("<f", 1.0) + good[body0 + 8:], "bad_kld_row")
other_head = os.path.join(w("ds-40"), "head/weight.safetensors")
refuse("head of another vocabulary (--head)", good, "kld_vocab_mismatch", "--head", other_head)
refuse("--role root (ROOT-1)", good, "role_refused", "--role", "root")
rc, text = fid("adapt", "--source", "malaiwah-serving-v2", "--in", WORK, "--out", w("k3"))
case("adapt --source malaiwah-serving-v2 -> exit 3 [not_implemented]", rc == 3 and refusal_code(text) == "not_implemented", text)
rc, text = fid("adapt", "--source", "nonsense", "--in", kld, "--out", w("u"))
case("adapt unknown source -> exit 4", rc == 4, text)
rc, text = fid("export", "--format", "llamacpp-kld", "--dataset", ad, "--out", w("back.kld"))
case("export of a logit-form dataset -> exit 3 [unsupported_form]", rc == 3 and refusal_code(text) == "unsupported_form", text)
rc, text = fid("export", "--format", "llamacpp-kld", "--dataset", ds, "--out", kld)
case("export onto an existing file -> exit 3 [destination_exists]", rc == 3 and refusal_code(text) == "destination_exists", text)
rc, text = fid("export", "--format", "llamacpp-kld", "--dataset", ds, "--out", w("y.kld"), "--kld-window", "20")
case("export --kld-window 20 -> exit 4", rc == 4, text)

# ---- 4. compare: logit vs logit ----------------------------------------------
b = bytearray(good)
n_ctx, vocab, R, nv = 12, 37, 5, K.row_stride(37)
for r in (2, 7, 13):
    for i in range(4, 4 + vocab, 3):
        p = body0 + (r * nv + i) * 2
        b[p:p + 2] = struct.pack("<H", (struct.unpack_from("<H", b, p)[0] + 2500) % 65536)
bad = w("pert.kld")
open(bad, "wb").write(bytes(b))
adb = w("adb")
rc, text = fid("adapt", "--source", "llamacpp-kld", "--in", bad, "--out", adb, "--head", head, "--tokenizer-id", tokz)
case("adapt a perturbed copy exits 0", rc == 0, text)
rc, text = fid("compare", "--reference", ad, "--candidate", adb, "--out", w("c-ll"))
case("compare logit vs logit -> exit 2 (advisory)", rc == 2, text)
if rc == 2:
    rec = load(w("c-ll", "comparison-receipt.json"))
    tw = np.load(w("c-ll", "tokenwise-kld.npy"))
    ra, rb = K.read_kld(kld)[4], K.read_kld(bad)[4]
    want = kl_oracle(ra, rb)
    err = float(np.max(np.abs(tw - want) / (1e-12 + np.abs(want))))
    case("logit vs logit: tokenwise KL equals the numpy fp64 oracle (rel err %.1e)" % err,
         tw.shape == want.shape and err < 1e-9 and (tw[[2, 7, 13]] > 0).all())
    codes = [d["code"] for d in rec["disclosures"]]
    case("receipt: class advisory, HEAD-2 native_head, lossy_capture_codec disclosed, logit evidence",
         rec["comparability"]["class"] == "advisory" and rec["estimator"]["head_policy"] == "native_head"
         and "lossy_capture_codec" in codes and rec["reference"]["form"] == "logit"
         and rec["determinism"]["evidence_kind"] == "logits_tensor_sha256", codes)
    rc, text = fid("validate", "--receipt", w("c-ll", "comparison-receipt.json"))
    case("receipt passes validate --receipt", rc == 0, text)
ad2 = w("ad-again")
fid("adapt", "--source", "llamacpp-kld", "--in", kld, "--out", ad2, "--head", head, "--tokenizer-id", tokz,
    "--dataset-id", "again")
rc, text = fid("compare", "--reference", ad, "--candidate", ad2, "--self-compare", "--force-compute", "--out", w("c-sc"))
if case("SC-1 on two adaptations of one file: exit 2 (lossy -> advisory), exact zeros", rc == 2, text):
    rec = load(w("c-sc", "comparison-receipt.json"))
    tw = np.load(w("c-sc", "tokenwise-kld.npy"))
    case("SC-1: reproduction_confirmation, force_compute agreed, +0.0 everywhere",
         rec["comparison_kind"] == "reproduction_confirmation" and not np.signbit(tw).any() and (tw == 0).all())

# ---- 5. compare: mixed hidden <-> logit (HEAD-3) --------------------------------


sw = load(os.path.join(ad, "fidelity-dataset.json"))["panel"]["scoring_window"]
dw = w("ds-windowed")
windowed_copy(ds, dw, sw)
rc, text = fid("verify", dw)
case("windowed hidden candidate (score_from 6, resealed) verifies", rc == 0, text)
rc, text = fid("compare", "--reference", ad, "--candidate", dw, "--out", w("c-mix"))
case("compare logit reference vs hidden candidate, same head -> exit 2", rc == 2, text)
if rc == 2:
    rec = load(w("c-mix", "comparison-receipt.json"))
    tw = np.load(w("c-mix", "tokenwise-kld.npy"))
    ref_lp = K.read_kld(kld)[4]
    cand = np.concatenate([canonical_logits(ds, c, vocab)[n_ctx // 2:n_ctx - 1] for c in range(3)])
    want = kl_oracle(ref_lp, cand)
    err = float(np.max(np.abs(tw - want)))
    case("mixed: tokenwise KL equals the oracle (decoded log-probs vs replayed logits; abs err %.1e)" % err,
         tw.shape == want.shape and err < 1e-12 and (tw > 0).any())
    case("mixed: HEAD-3 gate, native_head, advisory, hidden candidate's own head applied",
         rec["gates"]["head"]["detail"].startswith("HEAD-3") and rec["comparability"]["class"] == "advisory"
         and rec["comparator"]["head_applied_candidate_tensor_content_sha256"] == m_ad["head"]["tensor_content_sha256"])
    rc, text = fid("validate", "--receipt", w("c-mix", "comparison-receipt.json"))
    case("mixed receipt passes validate --receipt", rc == 0, text)
adn = w("ad-nohead")
fid("adapt", "--source", "llamacpp-kld", "--in", kld, "--out", adn, "--tokenizer-id", tokz)
rc, text = fid("compare", "--reference", adn, "--candidate", dw, "--out", w("c-nohead"))
case("mixed without a declared head -> exit 3 [head_mismatch] (HEAD-3)",
     rc == 3 and refusal_code(text) == "head_mismatch" and "HEAD-3" in text, text)
rc, text = fid("compare", "--reference", ad, "--candidate", ds, "--out", w("c-sw"))
case("score_from 0 candidate vs .kld reference -> exit 3 [panel_mismatch] (PANEL-D3)",
     rc == 3 and refusal_code(text) == "panel_mismatch", text)
rc, text = fid("compare", "--reference", dw, "--candidate", ad, "--out", w("c-rev"))
case("hidden reference vs logit candidate (HEAD-3) -> exit 2", rc == 2, text)

shutil.rmtree(WORK, ignore_errors=True)
failed = results.count(False)
print("test_kld: %d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed else 0)
