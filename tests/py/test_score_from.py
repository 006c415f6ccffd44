#!/usr/bin/env python3
"""capture --score-from N (docs/ADAPTERS.md): a capture that scores rows
N .. L-2 of each window lands on the same panel as an adapted llama.cpp .kld
(N = n_ctx/2), so the two compare directly (mixed hidden <-> logit, HEAD-3).
Checked: the stored rows are byte for byte the score_from-0 capture's rows
[N:], the scoring_window block equals the adapter's, the mixed compare passes
the panel gate (thread-invariant, only the codec's error left), a
score_from-0 capture is a different panel,
a generic N validates, refusals.  usage: test_score_from.py BINARY"""
import json, os, shutil, struct, sys, tempfile
from dsutil import load, run, refusal_code

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="fd-sf-")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n    " + str(detail)[:1500]))


def W(*p):
    return os.path.join(WORK, *p)


def payload(root, rec):
    blob = open(os.path.join(root, "capture", rec["file"]), "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def capture(out, *extra):
    return run(BIN, "capture", "--model", W("m"), "--panel", W("m", "panel"), "--out", out, "--role", "root",
               "--lane", "other", "--dataset-id", "test.sf", "--dataset-name", "score-from", "--windows", "2", *extra)


rc, out = run(BIN, "fixture", "--preset", "tiny", "--seed", "1", "--out", W("m"))
check("tiny model fixture", rc == 0, out)
FULL = W("full")
rc, out = capture(FULL)
check("capture (score_from 0)", rc == 0, out)
mf = load(os.path.join(FULL, "fidelity-dataset.json"))
L = mf["panel"]["context_length"]
N = L // 2
tok = mf["panel"]["tokenizer"]
rc, out = run(BIN, "export", "--format", "llamacpp-kld", "--dataset", FULL, "--out", W("f.kld"))
check("export --format llamacpp-kld", rc == 0, out)
KLD = W("kld")
rc, out = run(BIN, "adapt", "--source", "llamacpp-kld", "--in", W("f.kld"), "--out", KLD, "--head",
              os.path.join(FULL, "head", "weight.safetensors"), "--tokenizer-id", tok["id"],
              "--vocab", str(mf["capture"]["vocab_size"]))
check("adapt --source llamacpp-kld (declared head, tokenizer id)", rc == 0, out)

HALF = W("half")
rc, out = capture(HALF, "--score-from", str(N))
check("capture --score-from n_ctx/2 = %d" % N, rc == 0, out)
rc, out = run(BIN, "validate", "--strict", HALF)
check("it validates --strict", rc == 0 and " 0 error(s), 0 warning(s)" in out, out)
mh, mk = load(os.path.join(HALF, "fidelity-dataset.json")), load(os.path.join(KLD, "fidelity-dataset.json"))
check("scoring_window equals the .kld adapter's (score_from, windowed, min_left_context_tokens, dropped total, policy)",
      mh["panel"]["scoring_window"] == mk["panel"]["scoring_window"]
      and mh["panel"]["scoring_window"]["score_from"] == N, (mh["panel"]["scoring_window"], mk["panel"]["scoring_window"]))
capf, caph = load(os.path.join(FULL, "capture", "manifest.json")), load(os.path.join(HALF, "capture", "manifest.json"))
H = mf["capture"]["hidden_width"]
same = True
for rf, rh in zip(capf["records"], caph["records"]):
    hf, pf = payload(FULL, rf)
    hh, ph = payload(HALF, rh)
    same = same and rh["scored_rows"] == L - 1 - N and hh["hidden_states"]["shape"] == [L - 1 - N, H] \
        and ph == pf[N * H * 2:]
check("each window stores rows N .. L-2: byte for byte the full capture's rows [N:]", same and len(caph["records"]) == 2)
check("same tokens, masks and suite hash as the full capture (only the scoring window differs)",
      mh["panel"]["suite_token_hash_sha256"] == mf["panel"]["suite_token_hash_sha256"]
      and [r["token_ids_json_sha256"] for r in caph["records"]] == [r["token_ids_json_sha256"] for r in capf["records"]])

# the mixed compare the .kld could only reach through a resealed copy before
C1 = W("c1")
rc, out = run(BIN, "compare", "--reference", KLD, "--candidate", HALF, "--out", C1)
r1 = load(os.path.join(C1, "comparison-receipt.json")) if rc in (0, 2) else {}
check("compare .kld (logit) vs capture --score-from (hidden): panel gate passes, HEAD-3, advisory (exit 2)",
      rc == 2 and r1["panel"]["scoring_window"]["score_from"] == N and r1["panel"]["scored_positions"] == 2 * (L - 1 - N),
      out)

rc, out = run(BIN, "compare", "--reference", KLD, "--candidate", HALF, "--out", W("c1b"), "--threads", "1")
check("the mixed compare is thread-invariant (tokenwise bytes)", rc == 2 and
      open(os.path.join(W("c1b"), "tokenwise-kld.npy"), "rb").read()
      == open(os.path.join(C1, "tokenwise-kld.npy"), "rb").read(), out)
tw = open(os.path.join(C1, "tokenwise-kld.npy"), "rb").read()
vals = struct.unpack("<%dd" % ((len(tw) - 128) // 8), tw[128:])
check("tokenwise KL: %d finite values, mean %.2e (the uint16 codec's error only)" % (len(vals), sum(vals) / len(vals)),
      len(vals) == 2 * (L - 1 - N) and all(v == v and abs(v) < 1e-2 for v in vals))

# a score_from-0 capture is another panel; the same capture twice is SC-1
rc, out = run(BIN, "compare", "--reference", KLD, "--candidate", FULL, "--out", W("c2"))
check("score_from 0 capture vs the .kld -> panel_mismatch (PANEL-D3)", rc == 3 and refusal_code(out) == "panel_mismatch", out)
rc, out = run(BIN, "compare", "--reference", FULL, "--candidate", HALF, "--out", W("c3"))
check("score_from 0 vs score_from n_ctx/2 captures -> panel_mismatch", rc == 3 and refusal_code(out) == "panel_mismatch", out)
HALF2 = W("half2")
capture(HALF2, "--score-from", str(N))
rc, out = run(BIN, "compare", "--reference", HALF, "--candidate", HALF2, "--out", W("c4"), "--self-compare")
r4 = load(os.path.join(W("c4"), "comparison-receipt.json")) if rc in (0, 2) else {}
check("two --score-from captures: SC-1 reproduction (same capture digest)",
      rc in (0, 2) and r4.get("comparison_kind") == "reproduction_confirmation", out)

# another N: a generic policy, still valid; refusals
G = W("g3")
rc, out = capture(G, "--score-from", "3")
mg = load(os.path.join(G, "fidelity-dataset.json")) if rc == 0 else {"panel": {"scoring_window": {}}}
rc2, out2 = run(BIN, "validate", "--strict", G)
check("--score-from 3: rows L-4, generic policy text, validates --strict",
      rc == 0 and rc2 == 0 and mg["panel"]["scoring_window"]["score_from"] == 3
      and not mg["panel"]["scoring_window"]["policy"].startswith("llama.cpp")
      and load(os.path.join(G, "capture", "manifest.json"))["records"][0]["scored_rows"] == L - 4, out + out2)
rc, out = capture(W("bad"), "--score-from", str(L - 1))
check("--score-from L-1 leaves no row: refused bad_score_from, nothing written",
      rc == 3 and refusal_code(out) == "bad_score_from" and not os.path.exists(W("bad")), out)
rc, out = capture(W("bad2"), "--score-from", "-1")
check("--score-from -1: usage error (exit 4)", rc == 4 and not os.path.exists(W("bad2")), out)
rc, out = capture(W("bad3"), "--score-from", str(N), "--emit-k3-compat")
check("capture --score-from with --emit-k3-compat: k3_incompatible_panel, nothing written",
      rc == 3 and refusal_code(out) == "k3_incompatible_panel" and not os.path.exists(W("bad3")), out)
rc, out = run(BIN, "compare", "--reference", KLD, "--candidate", HALF, "--out", W("c5"), "--emit-k3-compat")
check("compare --emit-k3-compat on the windowed panel: k3_incompatible_panel",
      rc == 3 and refusal_code(out) == "k3_incompatible_panel", out)

shutil.rmtree(WORK, ignore_errors=True)
print("%d/%d passed" % (sum(results), len(results)))
sys.exit(0 if all(results) else 1)
