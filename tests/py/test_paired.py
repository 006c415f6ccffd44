#!/usr/bin/env python3
"""Paired A-vs-B (issue 22 item 2, docs/COMPARE-IMPL.md "Paired A-vs-B").

- `compare --reference R --candidate A --candidate B --paired` writes a sealed
  fidelity.paired-comparison-receipt.v1 whose every figure equals a numpy
  oracle over the two tokenwise-kld.npy arrays: per-context B - A, the
  token-weighted delta, the context-cluster bootstrap CI (stats_oracle's
  splitmix64/Lemire replica, bit for bit), win counts under the stated tie
  tolerance, the document-level exact sign test (documents from the
  reference panel's document_id, several contexts per document here) and the
  largest differences in order; the seal recomputes;
- `fidelity paired A.json B.json --reference R` gives the same receipt bytes;
  `paired --check` verifies the seal and the meaning (counts add up, delta =
  b_mean - a_mean, p in [0, 1]) of a paired receipt;
  without --reference the sign test is per context;
- --json prints one JSON document {receipts, paired}; the summary goes to stderr;
- refusals: other reference (paired_mismatch), a tokenwise array that is not the
  sealed one (tokenwise_mismatch), an edited receipt (receipt_invalid), a
  reference dataset that is not the receipts' (bad_reference), exit 3 and no
  file; --paired with one candidate and a bad tolerance: usage, exit 4.
usage: test_paired.py BINARY"""
import json, math, os, shutil, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dsutil import load, dump, reseal, run, seal, refusal_code

try:
    import numpy as np
    import stats_oracle as SO
except ImportError:
    print("numpy not installed: test_paired skipped (numpy is the oracle)")
    sys.exit(0)

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="fd-paired-")
SAN = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
UTC = "2026-01-02T03:04:05Z"
results = []


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-72s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[-1500:]))
    return ok


def w(*p):
    return os.path.join(WORK, *p)


def fid(*args):
    rc, out = run(BIN, *args)
    if any(m in out for m in SAN):
        case("sanitizer-clean: " + " ".join(os.path.basename(str(a)) for a in args)[:80], False, out[-3000:])
    return rc, out


def fixture(name, *extra):
    rc, out = fid("write-fixture", "--out", w(name), "--records", "8", "--tokens", "40", "--hidden", "24", "--vocab",
                  "300", "--seed", "6", "--fixed-time", *extra)
    assert rc == 0, out
    return w(name)


ref0 = fixture("ref")
A = fixture("a", "--noise-seed", "2", "--perturb", "0.1", "--role", "quant")
B = fixture("b", "--noise-seed", "3", "--perturb", "0.1", "--role", "quant")
C = fixture("c", "--noise-seed", "4", "--perturb", "0.3", "--role", "quant")

# the reference with several contexts per document (a forger-style edit, resealed: the
# panel's document_id is not part of the KL, so this is a valid dataset)
ref = w("ref-docs")
shutil.copytree(ref0, ref)
DOCS = ["doc-a", "doc-a", "doc-b", "doc-c", "doc-c", "doc-c", "doc-d", "doc-e"]


def pan_edit(doc):
    for r in doc["records"]:
        r["document_id"] = DOCS[r["index"]]


def cap_edit(doc):
    for r in doc["records"]:
        if "document_id" in r:
            r["document_id"] = DOCS[r["index"]]


reseal(ref, None, {"panel/panel.json": pan_edit, "capture/manifest.json": cap_edit})
rc, out = fid("verify", ref)
case("reference with shared document ids verifies", rc == 0, out)

out_dir = w("cmp")
rc, out = fid("compare", "--reference", ref, "--candidate", A, "--candidate", B, "--out", out_dir, "--paired",
              "--created-utc", UTC, "--allow-cross-lane")
case("compare --paired exits 0", rc in (0, 2), out)
pp = os.path.join(out_dir, "paired-receipt.json")
P = load(pp) if os.path.exists(pp) else None
case("paired-receipt.json written; summary and path printed", P is not None and "====== Paired B - A" in out
     and "paired receipt: " + pp in out, out[-1500:])


def oracle(ra_path, rb_path, tol, docs=None):
    ra, rb = load(ra_path), load(rb_path)
    ka = np.load(os.path.join(os.path.dirname(ra_path), "tokenwise-kld.npy"))
    kb = np.load(os.path.join(os.path.dirname(rb_path), "tokenwise-kld.npy"))
    rows = [c["scored_rows"] for c in ra["per_context"]]
    idx = [c["index"] for c in ra["per_context"]]
    offs = np.concatenate(([0], np.cumsum(rows)))
    ma = np.array([ka[offs[i]:offs[i + 1]].mean() for i in range(len(rows))])
    mb = np.array([kb[offs[i]:offs[i + 1]].mean() for i in range(len(rows))])
    d = mb - ma
    diff = kb - ka
    o = {"a_mean": ka.mean(), "b_mean": kb.mean(), "delta": kb.mean() - ka.mean(), "idx": idx, "ma": ma, "mb": mb}
    o["ci"] = SO.bootstrap(diff, rows, 10000, 20260829)
    o["wins"] = (int((d < -tol).sum()), int((d > tol).sum()), int(((d >= -tol) & (d <= tol)).sum()))
    keys = docs if docs is not None else ["context-%d" % i for i in idx]
    order = []
    for k in keys:
        if k not in order:
            order.append(k)
    dd = []
    for k in order:
        sel = [i for i, x in enumerate(keys) if x == k]
        dd.append(sum(diff[offs[i]:offs[i + 1]].sum() for i in sel) / sum(rows[i] for i in sel))
    dd = np.array(dd)
    bw, aw = int((dd < -tol).sum()), int((dd > tol).sum())
    n, k = bw + aw, min(bw, aw)
    p = 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)
    o["sign"] = (len(order), bw, aw, len(order) - bw - aw, p)
    o["largest"] = [idx[i] for i in sorted(range(len(d)), key=lambda i: (-abs(d[i]), i))[:5]]
    return o


if P:
    ra_path, rb_path = P["a"]["receipt_path"], P["b"]["receipt_path"]
    o = oracle(ra_path, rb_path, 1e-6, DOCS)
    dl = P["delta"]
    case("delta: A and B means, B - A (numpy, exact)", dl["a_mean"] == o["a_mean"] and dl["b_mean"] == o["b_mean"]
         and dl["value"] == o["delta"], (dl, o["delta"]))
    u = dl["uncertainty"]
    case("context-cluster bootstrap CI = stats_oracle replica bit for bit (B=10000, seed 20260829)",
         u["method"] == "context_cluster_bootstrap" and (u["ci95_low"], u["ci95_high"]) == o["ci"] and u["clusters"] == 8,
         (u, o["ci"]))
    pc = P["per_context"]
    case("per-context A, B, B - A equal numpy", [c["index"] for c in pc] == o["idx"]
         and all(c["a"] == a and c["b"] == b and c["delta"] == b - a for c, a, b in zip(pc, o["ma"], o["mb"])))
    wn = P["wins"]
    case("wins: B better / A better / ties with the stated tolerance 1e-6 %s" % (o["wins"],),
         (wn["b_better"], wn["a_better"], wn["ties"]) == o["wins"] and wn["tie_tolerance_nats"] == 1e-6 and wn["unit"] == "context")
    sg = P["sign_test"]
    case("sign test at the document level (%d documents): counts and exact p %.4g" % (o["sign"][0], o["sign"][4]),
         sg["unit"] == "document" and (sg["documents"], sg["b_better"], sg["a_better"], sg["ties"]) == o["sign"][:4]
         and abs(sg["p_value"] - o["sign"][4]) <= 1e-12 * o["sign"][4] and sg["documents"] == 5, (sg, o["sign"]))
    case("largest differences: 5 contexts by |B - A| descending", [x["index"] for x in P["largest_differences"]] == o["largest"])
    case("schema, direction and seal", P["schema"] == "fidelity.paired-comparison-receipt.v1" and P["direction"] == "b_minus_a"
         and P["receipt_sha256"] == seal(dict(P), "receipt_sha256")["receipt_sha256"]
         and P["a"]["receipt_sha256"] == load(ra_path)["receipt_sha256"])
    # the same from the two receipts
    rc, out = fid("paired", ra_path, rb_path, "--out", w("p2.json"), "--reference", ref, "--created-utc", UTC)
    case("fidelity paired A B --reference R = the compare --paired receipt, byte for byte",
         rc == 0 and open(w("p2.json"), "rb").read() == open(pp, "rb").read(), out)
    # a wide tolerance makes ties; no --reference: per-context sign test
    tol = float(np.median(np.abs(o["mb"] - o["ma"])))
    rc, out = fid("paired", ra_path, rb_path, "--out", w("p3.json"), "--tie-tolerance", repr(tol), "--created-utc", UTC)
    if case("paired --tie-tolerance (median |d|) without --reference exits 0", rc == 0, out):
        P3, o3 = load(w("p3.json")), oracle(ra_path, rb_path, tol)
        case("wide tolerance: ties counted %s; sign test per context %s" % (o3["wins"], o3["sign"][:4]),
             (P3["wins"]["b_better"], P3["wins"]["a_better"], P3["wins"]["ties"]) == o3["wins"] and o3["wins"][2] > 0
             and P3["sign_test"]["unit"] == "context"
             and (P3["sign_test"]["documents"], P3["sign_test"]["b_better"], P3["sign_test"]["a_better"],
                  P3["sign_test"]["ties"]) == o3["sign"][:4] and abs(P3["sign_test"]["p_value"] - o3["sign"][4]) <= 1e-12)
    # a clear winner: A (0.1) against C (0.3)
    rc, out = fid("compare", "--reference", ref, "--candidate", A, "--candidate", C, "--out", w("cmp-ac"), "--paired",
                  "--allow-cross-lane", "--json")
    try:
        doc = json.loads(subprocess.run([BIN, "compare", "--reference", ref, "--candidate", A, "--candidate", C, "--out",
                                         w("cmp-ac2"), "--paired", "--allow-cross-lane", "--json"],
                                        capture_output=True, text=True).stdout)
    except ValueError:
        doc = None
    case("--paired --json: stdout is one document {receipts: [A, B], paired}", isinstance(doc, dict)
         and len(doc.get("receipts", [])) == 2 and doc["paired"]["schema"] == "fidelity.paired-comparison-receipt.v1")
    if isinstance(doc, dict):
        pa = doc["paired"]
        case("A (perturb 0.1) vs C (0.3): A better in every context, CI above zero, sign test p = 2/2^5",
             pa["wins"]["a_better"] == 8 and pa["delta"]["uncertainty"]["ci95_low"] > 0
             and pa["sign_test"]["a_better"] == 5 and abs(pa["sign_test"]["p_value"] - 2 / 32) < 1e-12, pa["sign_test"])

    # ---- paired --check: seal and meaning
    rc, out = fid("paired", "--check", pp)
    case("paired --check on the written receipt -> OK, exit 0", rc == 0 and out.startswith("OK "), out)
    bad = dict(P)
    bad["wins"] = dict(P["wins"], ties=P["wins"]["ties"] + 1)
    dump(w("chk1.json"), bad)
    rc, out = fid("paired", "--check", w("chk1.json"))
    case("edited, not resealed -> exit 3 [seal_failed]", rc == 3 and refusal_code(out) == "seal_failed", out)
    seal(bad, "receipt_sha256")
    dump(w("chk2.json"), bad)
    rc, out = fid("paired", "--check", w("chk2.json"))
    case("resealed with wins that do not add up -> exit 3 [paired_invalid]", rc == 3 and refusal_code(out) == "paired_invalid", out)
    bad = dict(P)
    bad["delta"] = dict(P["delta"], value=P["delta"]["value"] * 2)
    seal(bad, "receipt_sha256")
    dump(w("chk3.json"), bad)
    rc, out = fid("paired", "--check", w("chk3.json"))
    case("resealed with delta != b_mean - a_mean -> exit 3 [paired_invalid]", rc == 3 and refusal_code(out) == "paired_invalid", out)
    bad = dict(P)
    bad["sign_test"] = dict(P["sign_test"], p_value=1.5)
    seal(bad, "receipt_sha256")
    dump(w("chk4.json"), bad)
    rc, out = fid("paired", "--check", w("chk4.json"))
    case("resealed with p = 1.5 -> exit 3 [paired_invalid]", rc == 3 and refusal_code(out) == "paired_invalid", out)
    rc, out = fid("paired", "--check", ra_path)
    case("a comparison receipt is not a paired receipt -> exit 3 [bad_schema]", rc == 3 and refusal_code(out) == "bad_schema", out)

    # ---- refusals
    rc, out = fid("compare", "--reference", ref0, "--candidate", A, "--out", w("cmp-other"), "--allow-cross-lane")
    rc, out = fid("paired", ra_path, w("cmp-other", "comparison-receipt.json"), "--out", w("bad1.json"))
    case("receipts of different references -> exit 3 [paired_mismatch], nothing written",
         rc == 3 and refusal_code(out) == "paired_mismatch" and not os.path.exists(w("bad1.json")), out)
    shutil.copytree(os.path.dirname(rb_path), w("tam"))
    k = np.load(w("tam", "tokenwise-kld.npy"))
    k[0] += 1e-3
    np.save(w("tam", "tokenwise-kld.npy"), k)
    rc, out = fid("paired", ra_path, w("tam", "comparison-receipt.json"), "--out", w("bad2.json"))
    case("tokenwise array not the sealed one -> exit 3 [tokenwise_mismatch]",
         rc == 3 and refusal_code(out) == "tokenwise_mismatch" and not os.path.exists(w("bad2.json")), out)
    shutil.copytree(os.path.dirname(rb_path), w("tam2"))
    r = load(w("tam2", "comparison-receipt.json"))
    r["kl"]["mean"] = 0.0
    dump(w("tam2", "comparison-receipt.json"), r)
    rc, out = fid("paired", ra_path, w("tam2", "comparison-receipt.json"), "--out", w("bad3.json"))
    case("edited receipt -> exit 3 [receipt_invalid]", rc == 3 and refusal_code(out) == "receipt_invalid", out)
    rc, out = fid("paired", ra_path, rb_path, "--out", w("bad4.json"), "--reference", ref0)
    case("--reference that is not the receipts' reference -> exit 3 [bad_reference]",
         rc == 3 and refusal_code(out) == "bad_reference" and not os.path.exists(w("bad4.json")), out)

rc, out = fid("compare", "--reference", ref, "--candidate", A, "--out", w("one"), "--paired")
case("--paired with one candidate -> usage, exit 4", rc == 4 and "exactly two candidates" in out, out)
rc, out = fid("paired", "x.json", "y.json", "--out", w("t.json"), "--tie-tolerance", "-1")
case("paired --tie-tolerance -1 -> usage, exit 4", rc == 4, out)
p = subprocess.run([BIN, "paired", "--help"], capture_output=True, text=True)
case("paired --help: usage with EXAMPLES on stdout, exit 0", p.returncode == 0 and "EXAMPLES" in p.stdout)

shutil.rmtree(WORK, ignore_errors=True)
failed = results.count(False)
print("test_paired: %d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed else 0)
