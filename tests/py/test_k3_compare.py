#!/usr/bin/env python3
"""compare --emit-k3-compat (issue 7 part 3): every number of k3-summary.json
recomputed in plain Python from the receipt's tokenwise-kld.npy and per-context
values with his compare-kimi-k3-hidden-replay.py definitions (numpy pairwise
mean, median, linear quantiles, pooled depth buckets, stable top-20 lists,
macro stratum mean); numpy, when installed, checks the plain-Python oracle
itself.  The views: verify-k3-compat --view, his reader's checks, the round
trip through adapt --source k3v1; the seal chain (receipt -> summary ->
tokenwise); multi-candidate layout, SC-1, thread invariance, refusals.
usage: test_k3_compare.py BINARY"""
import json, math, os, shutil, struct, subprocess, sys, tempfile
from dsutil import load, run, refusal_code, sha, sha_file
import k3_ref

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="fd-k3c-")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n    " + str(detail)[:1500]))


def W(*p):
    return os.path.join(WORK, *p)


# ---- the oracle: numpy's float64 algorithms in plain Python --------------------------
def pairwise(x, lo, n):
    if n < 8:
        r = 0.0
        for i in range(lo, lo + n):
            r += x[i]
        return r
    if n <= 128:
        r = list(x[lo:lo + 8])
        full = n - n % 8
        for i in range(8, full, 8):
            for k in range(8):
                r[k] += x[lo + i + k]
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for i in range(full, n):
            res += x[lo + i]
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return pairwise(x, lo, n2) + pairwise(x, lo + n2, n - n2)


def np_mean(x):
    return (0.0 + pairwise(x, 0, len(x))) / len(x)


def np_quantile(s, q):
    n = len(s)
    v = (n - 1) * q
    if v >= n - 1:
        return s[-1]
    lo = math.floor(v)
    g = v - lo
    a, b = s[lo], s[lo + 1]
    d = b - a
    return a + d * g if g < 0.5 else b - d * (1 - g)


def his_stats(x):
    s = sorted(x)
    n = len(s)
    med = np_mean(s[n // 2:n // 2 + 1]) if n % 2 else np_mean(s[n // 2 - 1:n // 2 + 1])
    return {"mean": np_mean(x), "median": med, "p95": np_quantile(s, 0.95), "p99": np_quantile(s, 0.99),
            "p99_9": np_quantile(s, 0.999), "max": max(x)}


def read_npy(path):
    blob = open(path, "rb").read()
    assert blob[:8] == b"\x93NUMPY\x01\x00"
    hl = struct.unpack("<H", blob[8:10])[0]
    body = blob[10 + hl:]
    return list(struct.unpack("<%dd" % (len(body) // 8), body))


def expected_summary(out_dir, ref_root):
    """Everything k3-summary.json claims, from the receipt, the npy and the panel alone."""
    rec = load(os.path.join(out_dir, "comparison-receipt.json"))
    kl = [max(v, 0.0) if v < 0 else v for v in read_npy(os.path.join(out_dir, "tokenwise-kld.npy"))]
    m = load(os.path.join(ref_root, "fidelity-dataset.json"))
    panel = {r["index"]: r for r in load(os.path.join(ref_root, m["panel"]["panel_file"]))["records"]}
    pcs = rec["per_context"]
    reports, off, depth, matches = [], 0, {}, 0
    for pc in pcs:
        R = pc["scored_rows"]
        ck = kl[off:off + R]
        row = panel[pc["index"]]
        sem = row.get("semantic_class", row.get("domain"))
        agree = pc["top1_agreement"]
        matches += round(agree * R)
        rep = {"context_index": pc["index"], "positions": R, "kl_reference_to_candidate": his_stats(ck),
               "top1_agreement": agree, "semantic_class": sem, "allocation_stratum": row.get("allocation_stratum", sem),
               "sentinel": row.get("sentinel", False)}
        for k in ("dataset", "dataset_config", "dataset_revision", "dataset_split", "partition", "representation_type",
                  "language", "source_cluster_id", "source_content_sha256", "source_id"):
            rep[k] = row.get(k)
        reports.append(rep)
        edges = (0, 256, 512, 1024, 1536, R)
        for s_, e_ in zip(edges, edges[1:]):
            if s_ < e_:
                depth.setdefault("%04d-%04d" % (s_, e_ - 1), []).extend(ck[s_:e_])
        off += R
    strata = {}
    for r in reports:
        strata.setdefault(str(r["allocation_stratum"]), []).append(r["kl_reference_to_candidate"]["mean"])
    return {
        "contexts": len(reports),
        "positions": len(kl),
        "kl_reference_to_candidate": his_stats(kl),
        "kl_micro_token_mean": np_mean(kl),
        "kl_macro_allocation_stratum_mean": np_mean([np_mean(v) for v in strata.values()]),
        "context_depth_buckets": {k: his_stats(v) for k, v in depth.items() if v},
        "top1_agreement": matches / len(kl),
        "per_context": reports,
        "high_kld_contexts": sorted(reports, key=lambda r: r["kl_reference_to_candidate"]["mean"], reverse=True)[:20],
        "top1_discordant_contexts": sorted(reports, key=lambda r: r["top1_agreement"])[:20],
        "direction": "KL(reference || candidate)",
    }, rec, kl


def summary_matches(out_dir, ref_root, label):
    want, rec, kl = expected_summary(out_dir, ref_root)
    got = load(os.path.join(out_dir, "k3-summary.json"))
    bad = [k for k, v in want.items() if k not in ("per_context", "high_kld_contexts", "top1_discordant_contexts")
           and got.get(k) != v]
    check("%s: top-level numbers = the oracle's (stats, micro/macro, depth buckets, top-1, counts)" % label, not bad,
          [(k, got.get(k), want[k]) for k in bad])
    sub = lambda r: {k: r.get(k) for k in want["per_context"][0]}
    for key in ("per_context", "high_kld_contexts", "top1_discordant_contexts"):
        g = [sub(r) for r in got.get(key, [])]
        check("%s: %s = the oracle's (fields, stats, order)" % (label, key), g == want[key],
              next(((a, b) for a, b in zip(g, want[key]) if a != b), (len(g), len(want[key]))))
    check("%s: top-1 agrees with the receipt's" % label, got.get("top1_agreement") == rec["top1_agreement"])
    check("%s: x_fidelity.tokenwise names tokenwise-kld.npy's sha256 and size" % label,
          got["x_fidelity"]["tokenwise"] == {"path": "tokenwise-kld.npy", "bytes": rec["tokenwise"]["bytes"],
                                             "sha256": sha_file(os.path.join(out_dir, "tokenwise-kld.npy"))})
    ks = rec.get("interop", {}).get("k3_summary", {})
    check("%s: the sealed receipt names k3-summary.json's sha256 and size" % label,
          ks.get("sha256") == sha_file(os.path.join(out_dir, "k3-summary.json"))
          and ks.get("bytes") == os.path.getsize(os.path.join(out_dir, "k3-summary.json"))
          and rec["interop"]["compatible_with"] == ["kimi-k3-distribution-fidelity/1"]
          and rec["interop"]["k3_compat_emitted"] is True, rec.get("interop"))
    body = dict(rec, receipt_sha256="")
    check("%s: receipt seal covers the interop block" % label,
          rec["receipt_sha256"] == sha(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                                  allow_nan=False).encode()))
    omitted = {o["key"] for o in got["x_fidelity"]["omitted"]}
    check("%s: bootstraps and logit errors are listed as omitted, not present" % label,
          {"kl_context_bootstrap", "kl_source_cluster_bootstrap", "kl_stratified_source_cluster_bootstrap",
           "logit_absolute_error_mean"} <= omitted and not omitted & set(got), omitted)
    text = open(os.path.join(out_dir, "k3-summary.json"), "rb").read()
    check("%s: written as his json.dumps(indent=2, sort_keys=True) + newline" % label,
          text == (json.dumps(got, indent=2, sort_keys=True) + "\n").encode())
    try:
        import numpy as np
    except ImportError:
        print("numpy not installed: the numpy cross-check of the plain-Python oracle is skipped")
        return got, rec
    a = np.asarray(kl, dtype=np.float64)
    npv = {"mean": float(np.mean(a)), "median": float(np.median(a)), "p95": float(np.quantile(a, 0.95)),
           "p99": float(np.quantile(a, 0.99)), "p99_9": float(np.quantile(a, 0.999)), "max": float(np.max(a))}
    check("%s: numpy itself agrees (stats of the whole array)" % label, got["kl_reference_to_candidate"] == npv,
          (got["kl_reference_to_candidate"], npv))
    return got, rec


def views_ok(out_dir, name, root, label):
    view = os.path.join(out_dir, "k3-compat", name)
    rc, out = run(BIN, "verify-k3-compat", root, "--view", view)
    check("%s: verify-k3-compat --view passes" % label, rc == 0 and "K3-COMPAT OK" in out, out)
    suite = load(os.path.join(view, "suite-manifest.json"))
    sub = "reference-hidden" if os.path.isdir(os.path.join(view, "reference-hidden")) else "reference-logits"
    src = load(os.path.join(view, sub, "manifest.json"))
    ok = all(k3_ref.sha(json.dumps(load(os.path.join(view, c["token_file"])), separators=(",", ":")).encode())
             == c["token_ids_json_sha256"] for c in suite["contexts"])
    ok = ok and all(sha_file(os.path.join(view, sub, r["file"])) == r["sha256"] for r in src["contexts"])
    check("%s: his reader's checks pass (token digests via token_file, file sha256 via file, suite hash)" % label,
          ok and src["suite_token_hash_sha256"] == suite["suite_token_hash_sha256"])
    return view, sub


A = ("--records", "24", "--tokens", "1600", "--hidden", "8", "--vocab", "40", "--fixed-time")
REF, CAND, CAND2 = W("ref"), W("cand"), W("cand2")
ok = run(BIN, "write-fixture", "--out", REF, *A, "--seed", "5")[0] == 0
ok &= run(BIN, "write-fixture", "--out", CAND, *A, "--seed", "5", "--noise-seed", "2", "--perturb", "0.05",
          "--role", "quant")[0] == 0
ok &= run(BIN, "write-fixture", "--out", CAND2, *A, "--seed", "5", "--noise-seed", "3", "--perturb", "0.2",
          "--role", "quant")[0] == 0
check("fixtures: 24 contexts x 1599 rows (all five depth buckets), two candidates", ok)

# 1. one candidate, with --js
C1 = W("c1")
rc, out = run(BIN, "compare", "--reference", REF, "--candidate", CAND, "--out", C1, "--emit-k3-compat", "--js")
check("compare --emit-k3-compat --js exits 0", rc == 0, out)
got, rec = summary_matches(C1, REF, "one candidate")
check("depth buckets are his five keys (last one 1536-1598 for 1599 rows)",
      sorted(got["context_depth_buckets"]) == ["0000-0255", "0256-0511", "0512-1023", "1024-1535", "1536-1598"])
check("top-20 lists hold 20 of the 24 contexts", len(got["high_kld_contexts"]) == 20
      and len(got["top1_discordant_contexts"]) == 20)
js = rec["js"]
check("js (--js): mean/p95/p99/p99_9/max equal the receipt's js block (no negative value clamped)",
      got["x_fidelity"]["negative_js_positions_clamped"] == 0
      and all(got["js"][k] == js[k] for k in ("mean", "p95", "p99", "p99_9", "max"))
      and all("js" in r for r in got["per_context"]), (got.get("js"), js))
rview = os.path.join(C1, "k3-compat", "reference")
check("summary binds the views: suite_manifest_sha256 and both manifest_sha256 are the view files' sha256",
      got["suite_manifest_sha256"] == sha_file(os.path.join(rview, "suite-manifest.json"))
      and got["reference"]["manifest_sha256"] == sha_file(os.path.join(rview, "reference-hidden", "manifest.json"))
      and got["candidate"]["manifest_sha256"]
      == sha_file(os.path.join(C1, "k3-compat", "candidate", "reference-hidden", "manifest.json"))
      and got["reference"]["kind"] == "hidden")
check("lm_head_file_sha256 is the reference head file's sha256",
      got["comparator"]["lm_head_file_sha256"] == sha_file(os.path.join(REF, "head", "weight.safetensors")))
views_ok(C1, "reference", REF, "reference view")
cview, _ = views_ok(C1, "candidate", CAND, "candidate view")
rc, out = run(BIN, "verify-k3-compat", CAND, "--view", rview)
check("the reference's view checked against the candidate dataset is refused (k3_compat_mismatch)",
      rc == 3 and refusal_code(out) == "k3_compat_mismatch", out)
rc, out = run(BIN, "validate", "--receipt", os.path.join(C1, "comparison-receipt.json"))
check("validate --receipt accepts the receipt with its interop block", rc == 0, out)

# round trip: the candidate view back into a dataset, compared with the candidate: exactly 0.0
BACK = W("back")
rc, out = run(BIN, "adapt", "--source", "k3v1", "--in", cview, "--out", BACK,
              "--head", os.path.join(CAND, "head", "weight.safetensors"), "--created-utc", "2026-01-01T00:00:00Z")
check("adapt --source k3v1 of the view compare wrote", rc == 0, out)
mo = load(os.path.join(CAND, "fidelity-dataset.json"))
mb = load(os.path.join(BACK, "fidelity-dataset.json")) if rc == 0 else {"capture": {}, "panel": {}}
check("round trip keeps capture_content_digest and suite token hash",
      mo["capture"]["capture_content_digest"] == mb["capture"].get("capture_content_digest")
      and mo["panel"]["suite_token_hash_sha256"] == mb["panel"].get("suite_token_hash_sha256"))
RT = W("rt")
rc, out = run(BIN, "compare", "--reference", CAND, "--candidate", BACK, "--out", RT, "--force-compute", "--emit-k3-compat")
g = load(os.path.join(RT, "k3-summary.json")) if rc in (0, 2) else {}
check("compare candidate vs its round trip --emit-k3-compat: advisory, summary KL exactly 0.0, top-1 1.0",
      rc == 2 and g.get("kl_reference_to_candidate", {}).get("max") == 0.0 and g.get("top1_agreement") == 1.0, out)

# thread invariance: the summary bytes do not depend on the thread count
C1B = W("c1b")
rc, out = run(BIN, "compare", "--reference", REF, "--candidate", CAND, "--out", C1B, "--emit-k3-compat", "--js",
              "--threads", "1")
check("--threads 1: the same k3-summary.json bytes and the same views",
      rc == 0 and open(os.path.join(C1B, "k3-summary.json"), "rb").read()
      == open(os.path.join(C1, "k3-summary.json"), "rb").read(), out)

# 2. two candidates: OUT/NN-label/k3-summary.json, views in OUT/k3-compat/NN-label
C2 = W("c2")
rc, out = run(BIN, "compare", "--reference", REF, "--candidate", CAND, "--candidate", CAND2, "--out", C2,
              "--candidate-label", "q8", "--candidate-label", "q4", "--emit-k3-compat")
check("two candidates exit 0", rc == 0, out)
for d, root in (("01-q8", CAND), ("02-q4", CAND2)):
    got2, rec2 = summary_matches(os.path.join(C2, d), REF, d)
    check("%s: no js without --js (listed as omitted)" % d,
          "js" not in got2 and "js" in {o["key"] for o in got2["x_fidelity"]["omitted"]})
    vp = rec2["interop"]["k3_compat_views"]["candidate"]["path"]
    check("%s: the receipt's view path resolves from the receipt's folder" % d,
          vp == "../k3-compat/" + d and os.path.isdir(os.path.join(C2, d, vp)), vp)
    views_ok(C2, d, root, "view " + d)
check("the 01-q8 summary equals the single-candidate one except labels",
      load(os.path.join(C2, "01-q8", "k3-summary.json"))["kl_reference_to_candidate"]
      == load(os.path.join(C1, "k3-summary.json"))["kl_reference_to_candidate"])

# 3. SC-1 (a byte-identical capture, hash proof): all zeros, device none
TWIN = W("twin")
run(BIN, "write-fixture", "--out", TWIN, *A, "--seed", "5")
C3 = W("c3")
rc, out = run(BIN, "compare", "--reference", REF, "--candidate", TWIN, "--out", C3, "--self-compare", "--emit-k3-compat")
g3 = load(os.path.join(C3, "k3-summary.json")) if rc in (0, 2) else {}
check("SC-1 hash proof: summary of zeros, top-1 1.0, device none",
      rc in (0, 2) and g3.get("kl_reference_to_candidate", {}).get("max") == 0.0 and g3.get("top1_agreement") == 1.0
      and g3.get("comparator", {}).get("device") == "none", out)

# 4. logit form (his live-logit artifact adapted): reference-logits/ views, kind logits
art = W("art")
k3_ref.build_artifact(art, contexts=3, length=7, hidden=8, vocab=32, seed=5, logit="F32")
art2 = W("art2")
shutil.copytree(art, art2)
tm = load(os.path.join(art2, "ref", "manifest.json"))
for r in tm["contexts"]:   # the same suite, other logits: every F32 value scaled by 1.25, digests re-declared
    path = os.path.join(art2, "ref", r["file"])
    blob = open(path, "rb").read()
    hl = 8 + struct.unpack("<Q", blob[:8])[0]
    vals = struct.unpack("<%df" % ((len(blob) - hl) // 4), blob[hl:])
    blob = blob[:hl] + struct.pack("<%df" % len(vals), *(v * 1.25 for v in vals))
    open(path, "wb").write(blob)
    r["sha256"] = sha(blob)
open(os.path.join(art2, "ref", "manifest.json"), "w").write(json.dumps(tm, indent=2, sort_keys=True) + "\n")
LG, LG2 = W("lg"), W("lg2")
ok = run(BIN, "adapt", "--source", "k3v0-window", "--in", art, "--out", LG)[0] == 0
ok &= run(BIN, "adapt", "--source", "k3v0-window", "--in", art2, "--out", LG2)[0] == 0
C4 = W("c4")
rc, out = run(BIN, "compare", "--reference", LG, "--candidate", LG2, "--out", C4, "--emit-k3-compat")
check("logit form vs logit form --emit-k3-compat", ok and rc in (0, 2), out)
if rc in (0, 2):
    g4, _ = summary_matches(C4, LG, "logit form")
    check("logit form: kind logits, reference-logits views, no head", g4["reference"]["kind"] == "logits"
          and g4["comparator"]["lm_head_file_sha256"] is None
          and os.path.isfile(os.path.join(C4, "k3-compat", "candidate", "reference-logits", "manifest.json")))
    views_ok(C4, "candidate", LG2, "logit view")
    check("logit form: depth bucket 0000-0255 only (6 rows)", list(g4["context_depth_buckets"]) == ["0000-0255"])

# 5. without the flag nothing changes; refusals write nothing
C5 = W("c5")
rc, out = run(BIN, "compare", "--reference", REF, "--candidate", CAND, "--out", C5)
r5 = load(os.path.join(C5, "comparison-receipt.json"))
check("without --emit-k3-compat: no interop key, no k3-summary.json, no k3-compat/",
      rc == 0 and "interop" not in r5 and sorted(os.listdir(C5)) == ["comparison-receipt.json", "tokenwise-kld.npy"],
      os.listdir(C5))
S = ("--records", "3", "--tokens", "12", "--hidden", "8", "--vocab", "40", "--fixed-time")
run(BIN, "write-fixture", "--out", W("sr"), *S, "--seed", "5")
run(BIN, "write-fixture", "--out", W("sc"), *S, "--seed", "5", "--noise-seed", "2", "--perturb", "0.05", "--role", "quant")
for n in ("sr", "sc"):
    run(BIN, "export", "--format", "llamacpp-kld", "--dataset", W(n), "--out", W(n + ".kld"))
    run(BIN, "adapt", "--source", "llamacpp-kld", "--in", W(n + ".kld"), "--out", W(n + "-kld"),
        "--head", os.path.join(W("sr"), "head", "weight.safetensors"))
rc, out = run(BIN, "compare", "--reference", W("sr-kld"), "--candidate", W("sc-kld"), "--out", W("c6"), "--emit-k3-compat")
check("a panel scoring from n_ctx/2 (llama.cpp .kld adapted) is refused: k3_incompatible_panel, nothing written",
      rc == 3 and refusal_code(out) == "k3_incompatible_panel" and not os.path.exists(W("c6")), out)
rc, out = run(BIN, "compare", "--reference", W("sr-kld"), "--candidate", W("sc-kld"), "--out", W("c7"))
check("the same comparison without the flag still runs (advisory)", rc == 2, out)

shutil.rmtree(WORK, ignore_errors=True)
print("%d/%d passed" % (sum(results), len(results)))
sys.exit(0 if all(results) else 1)
