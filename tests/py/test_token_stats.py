#!/usr/bin/env python3
"""Token statistics of compare (issue 22 items 1 and 3, docs/COMPARE-IMPL.md
"Token statistics"): every figure of the receipt's x_fidelity.token_statistics
block against a numpy oracle, and the terminal summary against llama.cpp.

1. numpy oracle, on a pair written by the independent writer (ref_writer.py;
   the candidate is the same dataset with its hidden states perturbed and
   resealed here) and on a write-fixture pair with contexts long enough for
   two depth buckets: the oracle replays nothing of ours but the canonical
   logits (debug-logits) and the tokenwise KL array; it reads the observed
   tokens from the panel's token files, computes fp64 log-softmax, PPL, the
   llama.cpp standard errors, correlation, delta-p and its 13 percentiles,
   RMS, same-top, top-k both ways, KL percentiles (bit-exact np.quantile),
   KL by reference confidence and by depth;
2. the block is identical under --threads 3 --chunk-positions 5 and every
   kernel path, the receipt validates (ours and the vendored JSON Schema, which
   allows the extension key), the SC-1 hash proof records null with a note;
3. --json prints one JSON document (the receipt; an array with two
   candidates), the human summary going to stderr; --csv writes tokenwise.csv
   (context, row, position, token id, KL = the .npy bits, reverse KL, delta-p,
   both probabilities, top-1 match; numpy);
4. llama.cpp: a .kld-adapted reference (base) against a hidden candidate (Q)
   under HEAD-3; the printed PPL, ln-ratio, correlation, delta-p, RMS and
   same-top lines equal what perplexity.cpp's kl_divergence() prints
   (emulated here in float32 from its source) within the last printed digit.
numpy is required; without it the test says so and exits 0.
usage: test_token_stats.py BINARY"""
import json, os, re, shutil, struct, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dsutil import load, dump, reseal, windowed_copy, run, seal, sha

try:
    import numpy as np
    import kld_ref as K
except ImportError:
    print("numpy not installed: test_token_stats skipped (numpy is the oracle)")
    sys.exit(0)

BIN = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
WORK = tempfile.mkdtemp(prefix="fd-tokstats-")
SAN = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
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


def fid_split(*args):
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True)
    if any(m in p.stderr for m in SAN):
        case("sanitizer-clean (split)", False, p.stderr[-3000:])
    return p.returncode, p.stdout, p.stderr


def canonical_logits(ds, index, vocab):
    path = w("logits.f32")
    subprocess.run([BIN, "debug-logits", ds, str(index), path], check=True, capture_output=True)
    return np.fromfile(path, dtype="<f4").reshape(-1, vocab)


def log_softmax64(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))


def topk_ids(x, k):
    """The k largest columns, value descending, ties to the lower column."""
    return np.argsort(-np.asarray(x, dtype=np.float64), axis=-1, kind="stable")[:, :k]


def mean_se(x):
    """llama.cpp's mean_and_uncertainty over numpy sums."""
    n = len(x)
    f = np.sum(x) / n
    v = np.sum(x * x) / n - f * f
    return f, (np.sqrt(v / (n - 1)) if v > 0 and n > 10 else 0.0)


def oracle(ref, cand, tw, vocab, score_from=0):
    """Every figure of token_statistics from the canonical logits of the two sides."""
    man = load(os.path.join(ref, "fidelity-dataset.json"))
    recs = sorted(load(os.path.join(ref, "capture/manifest.json"))["records"], key=lambda r: r["index"])
    prec = {r["index"]: r for r in load(os.path.join(ref, "panel/panel.json"))["records"]}
    lr, lc, obs, depth, rows = [], [], [], [], []
    for r in recs:
        ids = json.load(open(os.path.join(ref, prec[r["index"]]["token_file"])))
        n = r["scored_rows"]
        lr.append(canonical_logits(ref, r["index"], vocab))
        lc.append(canonical_logits(cand, r["index"], vocab))
        obs += ids[score_from + 1:score_from + 1 + n]
        depth += list(range(n))
        rows.append(n)
    lr, lc, obs, depth = np.concatenate(lr), np.concatenate(lc), np.array(obs), np.array(depth)
    a, b = log_softmax64(lr), log_softmax64(lc)
    N = len(obs)
    lp_r, lp_c = a[np.arange(N), obs], b[np.arange(N), obs]
    nr, nc = -lp_r, -lp_c
    o = {"positions": N}
    mr, sr = mean_se(nr)
    mc, sc = mean_se(nc)
    cov = (np.sum(nc * nr) / N - (np.sum(nc) / N) * (np.sum(nr) / N)) / (N - 1) if N >= 10 else 0.0
    o["ppl_ref"], o["ppl_ref_se"], o["ppl_cand"], o["ppl_cand_se"] = np.exp(mr), np.exp(mr) * sr, np.exp(mc), np.exp(mc) * sc
    o["nll_ref"], o["nll_cand"], o["cov"], o["cor"] = mr, mc, cov, (cov / (sc * sr) if sc > 0 and sr > 0 else None)
    o["ln_ratio"], o["ln_ratio_se"] = mc - mr, np.sqrt(max(sc * sc + sr * sr - 2 * cov, 0.0))
    kl = np.asarray(tw, dtype=np.float64)
    o["kl_mean"], o["kl_se"] = mean_se(kl)
    for q, name in zip((0.001, 0.01, 0.05, 0.10, 0.5, 0.90, 0.95, 0.99, 0.999),
                       ("p0_1", "p1", "p5", "p10", "median", "p90", "p95", "p99", "p99_9")):
        o["kl_" + name] = np.quantile(kl, q)
    o["kl_min"], o["kl_max"] = kl.min(), kl.max()
    dp = np.exp(lp_c) - np.exp(lp_r)
    o["dp_mean"], o["dp_se"] = mean_se(dp)
    for q, name in zip((1.0, 0.999, 0.99, 0.95, 0.90, 0.75, 0.5, 0.25, 0.10, 0.05, 0.01, 0.001, 0.0),
                       ("max", "p99_9", "p99", "p95", "p90", "p75", "median", "p25", "p10", "p5", "p1", "p0_1", "min")):
        o["dp_" + name] = np.quantile(dp, q)
    mse, mse_se = mean_se(dp * dp)
    o["dp_rms"], o["dp_rms_se"] = np.sqrt(mse), 0.5 / np.sqrt(mse) * mse_se
    tr, tc = topk_ids(lr, 10), topk_ids(lc, 10)
    same = tr[:, 0] == tc[:, 0]
    o["same_top"] = same.mean()
    o["same_top_se"] = np.sqrt(o["same_top"] * (1 - o["same_top"]) / (N - 1))
    o["cand_in_ref"] = [float(np.mean([tc[i, 0] in tr[i, :k] for i in range(N)])) for k in (1, 5, 10)]
    o["ref_in_cand"] = [float(np.mean([tr[i, 0] in tc[i, :k] for i in range(N)])) for k in (1, 5, 10)]
    ptop = np.exp(a.max(axis=-1))
    binidx = np.minimum((ptop >= 0.2).astype(int) + (ptop >= 0.4) + (ptop >= 0.6) + (ptop >= 0.8), 4)
    o["conf"] = [(int((binidx == k).sum()), kl[binidx == k].mean() if (binidx == k).any() else None,
                  same[binidx == k].mean() if (binidx == k).any() else None) for k in range(5)]
    edges = ((0, 256), (256, 512), (512, 1024), (1024, 1536), (1536, 2047))
    o["depth"] = []
    for lo, hi in edges:
        m = (depth >= lo) & (depth < hi)
        o["depth"].append((int(m.sum()), kl[m].mean() if m.any() else None, same[m].mean() if m.any() else None))
    return o


def close(x, y, rel=1e-10, ab=1e-15):
    if x is None or y is None:
        return x is None and y is None
    return abs(x - y) <= max(ab, rel * max(abs(x), abs(y)))


def check_block(label, t, o):
    p = t["perplexity"]
    case("%s: positions = the scored positions (%d)" % (label, o["positions"]), t["positions"] == o["positions"])
    bad = [k for k, got, want in (
        ("ppl_ref", p["reference"]["ppl"], o["ppl_ref"]), ("ppl_ref_se", p["reference"]["ppl_se"], o["ppl_ref_se"]),
        ("ppl_cand", p["candidate"]["ppl"], o["ppl_cand"]), ("ppl_cand_se", p["candidate"]["ppl_se"], o["ppl_cand_se"]),
        ("nll_ref", p["reference"]["mean_nll"], o["nll_ref"]), ("nll_cand", p["candidate"]["mean_nll"], o["nll_cand"]),
        ("cov", p["covariance"], o["cov"]), ("cor", p["correlation"], o["cor"]),
        ("ln_ratio", p["ln_ratio"]["value"], o["ln_ratio"]), ("ln_ratio_se", p["ln_ratio"]["se"], o["ln_ratio_se"]),
        ("ratio", p["ratio"]["value"], np.exp(o["ln_ratio"])))
        if not close(got, want, 1e-9)]
    case("%s: PPL both sides, SEs, covariance, correlation, ln ratio (numpy, rel 1e-9)" % label, not bad,
         [(k) for k in bad])
    dp = t["delta_p"]
    bad = [k for k in ("mean", "se", "max", "p99_9", "p99", "p95", "p90", "p75", "median", "p25", "p10", "p5", "p1",
                       "p0_1", "min", "rms", "rms_se") if not close(dp[k], o["dp_" + k], 1e-7, 1e-15)]
    case("%s: delta-p mean, SE, 13 percentiles, RMS +- SE (numpy, rel 1e-7)" % label, not bad,
         [(k, dp[k], o["dp_" + k]) for k in bad])
    kl = t["kl"]
    exact = all(kl[k] == o["kl_" + k] for k in ("p0_1", "p1", "p5", "p10", "median", "p90", "p95", "p99", "p99_9",
                                                 "min", "max"))
    case("%s: KL min, percentiles 0.1..99.9, max bit-exact with np.quantile of tokenwise-kld.npy" % label, exact, kl)
    case("%s: KL mean and SE equal numpy" % label, kl["mean"] == o["kl_mean"] and close(kl["se"], o["kl_se"], 1e-12))
    st = t["same_top"]
    case("%s: same top p +- SE" % label, close(st["value"], o["same_top"], 1e-15) and close(st["se"], o["same_top_se"], 1e-12),
         (st, o["same_top"], o["same_top_se"]))
    tk = t["top_k_agreement"]
    case("%s: top-k agreement k=1,5,10 both ways" % label, tk["k"] == [1, 5, 10]
         and tk["candidate_top1_in_reference_topk"] == o["cand_in_ref"]
         and tk["reference_top1_in_candidate_topk"] == o["ref_in_cand"], (tk, o["cand_in_ref"], o["ref_in_cand"]))
    got = [(b["positions"], b["kl_mean"], b["same_top"]) for b in t["kl_by_reference_confidence"]]
    ok = len(got) == 5 and all(g[0] == w_[0] and close(g[1], w_[1], 0, 0) and close(g[2], w_[2], 1e-15)
                               for g, w_ in zip(got, o["conf"]))
    case("%s: KL by reference confidence, 5 bins (%s positions)" % (label, [g[0] for g in got]), ok, (got, o["conf"]))
    got = [(b["positions"], b["kl_mean"], b["same_top"]) for b in t["kl_by_depth"]]
    ok = len(got) == 5 and all(g[0] == w_[0] and close(g[1], w_[1], 0, 0) and close(g[2], w_[2], 1e-15)
                               for g, w_ in zip(got, o["depth"]))
    case("%s: KL by depth bucket (%s positions)" % (label, [g[0] for g in got]), ok, (got, o["depth"]))
    return t


# ---- 1a. the independent writer's dataset, perturbed ---------------------------------
def perturbed_copy(src, dst, seed):
    """The dataset with every hidden state's bf16 bits moved by a few ulps, resealed."""
    shutil.copytree(src, dst)
    rng = np.random.default_rng(seed)
    cm_path = os.path.join(dst, "capture/manifest.json")
    cm = load(cm_path)
    for rec in cm["records"]:
        path = os.path.join(dst, "capture", rec["file"])
        blob = open(path, "rb").read()
        n = struct.unpack("<Q", blob[:8])[0]
        head = blob[:8 + n]
        raw = np.frombuffer(blob[8 + n:], "<u2").copy()
        raw = (raw.astype(np.int32) + rng.integers(-3, 4, raw.shape)).astype("<u2")
        new = head + raw.tobytes()
        open(path, "wb").write(new)
        payload = sha(raw.tobytes())
        rec.update(sha256=sha(new), payload_sha256=payload, tensor_content_sha256=payload)
    digest = sha("\n".join("%d:%s" % (r["index"], r["tensor_content_sha256"])
                           for r in sorted(cm["records"], key=lambda r: r["index"])).encode())

    def cap_edit(doc):
        doc.update(records=cm["records"], capture_content_digest=digest)

    def man_edit(m):
        m["capture"]["capture_content_digest"] = digest
        m["determinism"]["evidence_hashes"] = [digest]
        m["dataset"]["role"] = "quant"

    reseal(dst, man_edit, {"capture/manifest.json": cap_edit})


VOCAB = 500
ref_w = w("rw-ref")
p = subprocess.run([sys.executable, os.path.join(HERE, "ref_writer.py"), ref_w, "--records", "3", "--tokens", "300",
                    "--hidden", "32", "--vocab", str(VOCAB), "--seed", "11", "--fixed-time"], capture_output=True, text=True)
case("ref_writer dataset written", p.returncode == 0, p.stderr)
cand_w = w("rw-cand")
perturbed_copy(ref_w, cand_w, 3)
rc, out = fid("verify", cand_w)
case("perturbed, resealed candidate verifies", rc == 0, out)
rc, out = fid("compare", "--reference", ref_w, "--candidate", cand_w, "--out", w("c-rw"), "--allow-cross-lane")
if case("compare ref_writer pair exits 0/2", rc in (0, 2), out):
    r = load(w("c-rw", "comparison-receipt.json"))
    tw = np.load(w("c-rw", "tokenwise-kld.npy"))
    case("x_fidelity block: our schema tag", r["x_fidelity"]["schema"] == "fidelity.receipt-extension.v1")
    o = oracle(ref_w, cand_w, tw, VOCAB)
    RW_BLOCK = check_block("ref_writer", r["x_fidelity"]["token_statistics"], o)
    rc, out = fid("validate", "--receipt", w("c-rw", "comparison-receipt.json"))
    case("receipt with x_fidelity passes validate --receipt", rc == 0, out)
    try:
        import jsonschema
        schema = load(os.path.join(HERE, "..", "..", "schema", "fidelity-comparison-receipt.schema.json"))
        errs = list(jsonschema.Draft202012Validator(schema).iter_errors(r))
        case("receipt validates under the vendored JSON Schema (jsonschema)", not errs, [e.message for e in errs[:3]])
    except ImportError:
        print("     note: jsonschema not installed; schema check by validate --receipt only")
    # the terminal summary is llama.cpp's shape, then the receipt path
    t = r["x_fidelity"]["token_statistics"]
    rc2, so = fid("compare", "--reference", ref_w, "--candidate", cand_w, "--out", w("c-rw2"), "--allow-cross-lane")
    want = ["Mean PPL(Q)                   : %10.6f ± %10.6f" % (t["perplexity"]["candidate"]["ppl"], t["perplexity"]["candidate"]["ppl_se"]),
            "Mean    KLD: %10.6f ± %10.6f" % (t["kl"]["mean"], t["kl"]["se"]),
            "99.9%%   KLD: %10.6f" % t["kl"]["p99_9"], " 0.1%%   KLD: %10.6f" % t["kl"]["p0_1"],
            "Mean    Δp: %6.3f ± %5.3f %%" % (100 * t["delta_p"]["mean"], 100 * t["delta_p"]["se"]),
            "75.0%%   Δp: %6.3f%%" % (100 * t["delta_p"]["p75"]),
            "Same top p: %6.3f ± %5.3f %%" % (100 * t["same_top"]["value"], 100 * t["same_top"]["se"]),
            "receipt: " + w("c-rw2", "comparison-receipt.json")]
    missing = [x for x in want if x not in so.splitlines()]
    case("terminal summary: llama.cpp's lines from the receipt's figures, then the receipt path", not missing, missing)
    lines = so.splitlines()
    case("terminal summary: section order as llama.cpp prints it",
         lines.index("====== Perplexity statistics ======") < lines.index("====== KL divergence statistics ======")
         < lines.index("====== Token probability statistics ======") < len(lines) - 1
         and lines[-1].startswith("receipt: "), so[-800:])

    # --csv: one row per scored position
    rc, out = fid("compare", "--reference", ref_w, "--candidate", cand_w, "--out", w("c-csv"), "--allow-cross-lane", "--csv")
    if case("compare --csv exits 0/2", rc in (0, 2), out):
        import csv as _csv
        rows_ = list(_csv.DictReader(open(w("c-csv", "tokenwise.csv"))))
        man = load(os.path.join(ref_w, "capture/manifest.json"))
        prec = {x["index"]: x for x in load(os.path.join(ref_w, "panel/panel.json"))["records"]}
        want_tok, want_ctx, want_row = [], [], []
        for rec in sorted(man["records"], key=lambda x: x["index"]):
            ids = json.load(open(os.path.join(ref_w, prec[rec["index"]]["token_file"])))
            want_tok += ids[1:rec["scored_rows"] + 1]
            want_ctx += [rec["index"]] * rec["scored_rows"]
            want_row += list(range(rec["scored_rows"]))
        tw_csv = np.load(w("c-csv", "tokenwise-kld.npy"))
        lr_all = np.concatenate([canonical_logits(ref_w, i, VOCAB) for i in sorted(prec)])
        lc_all = np.concatenate([canonical_logits(cand_w, i, VOCAB) for i in sorted(prec)])
        a_, b_ = log_softmax64(lr_all), log_softmax64(lc_all)
        N = len(want_tok)
        dp_ = np.exp(b_[np.arange(N), want_tok]) - np.exp(a_[np.arange(N), want_tok])
        rkl_ = (np.exp(b_) * (b_ - a_)).sum(axis=-1)
        top_ = topk_ids(lr_all, 1)[:, 0] == topk_ids(lc_all, 1)[:, 0]
        case("tokenwise.csv: one row per scored position, header as documented",
             len(rows_) == N and list(rows_[0].keys()) == ["context", "row", "position", "token_id", "kl", "reverse_kl",
                                                           "delta_p", "p_reference", "p_candidate", "top1_match",
                                                           "top1_reference", "top1_candidate"])
        case("tokenwise.csv: context, row, position (= row, score_from 0), observed token id from the panel",
             [int(x["context"]) for x in rows_] == want_ctx and [int(x["row"]) for x in rows_] == want_row
             and [int(x["position"]) for x in rows_] == want_row and [int(x["token_id"]) for x in rows_] == want_tok)
        case("tokenwise.csv: kl column = tokenwise-kld.npy bit for bit",
             np.array([float(x["kl"]) for x in rows_]).tobytes() == tw_csv.tobytes())
        case("tokenwise.csv: reverse KL, delta-p and top-1 match equal numpy (abs 1e-12)",
             np.max(np.abs(np.array([float(x["reverse_kl"]) for x in rows_]) - rkl_)) < 1e-12
             and np.max(np.abs(np.array([float(x["delta_p"]) for x in rows_]) - dp_)) < 1e-12
             and [x["top1_match"] == "1" for x in rows_] == top_.tolist())
        case("tokenwise.csv: top1_reference / top1_candidate = each side's numpy argmax (lowest id on ties)",
             [int(x["top1_reference"]) for x in rows_] == topk_ids(lr_all, 1)[:, 0].tolist()
             and [int(x["top1_candidate"]) for x in rows_] == topk_ids(lc_all, 1)[:, 0].tolist())

    # ---- 2. invariance over threads, blocks, kernel paths
    blocks = []
    kernels = [k for k in ("scalar", "avx2", "avx512f", "avx512bf16")]
    for tag, flags in (("t3", ("--threads", "3", "--chunk-positions", "5")),) + tuple(("k-" + k, ("--kernel", k)) for k in kernels):
        rc, out = fid("compare", "--reference", ref_w, "--candidate", cand_w, "--out", w("inv-" + tag),
                      "--allow-cross-lane", *flags)
        if rc in (0, 2):
            blocks.append((tag, load(w("inv-" + tag, "comparison-receipt.json"))["x_fidelity"]))
        elif "not supported by this CPU" not in out:
            case("invariance run " + tag, False, out)
    case("x_fidelity identical under threads/blocks and %d kernel paths" % (len(blocks) - 1),
         len(blocks) >= 2 and all(b == r["x_fidelity"] for _, b in blocks), [t for t, b in blocks if b != r["x_fidelity"]])

# ---- 1b. write-fixture pair with two depth buckets; two candidates ----------------------
def fixture(name, *extra):
    root = w(name)
    rc, out = fid("write-fixture", "--out", root, "--records", "3", "--tokens", "400", "--hidden", "24", "--vocab",
                  "300", "--seed", "4", "--fixed-time", *extra)
    assert rc == 0, out
    return root


fr = fixture("wf-ref")
fc1 = fixture("wf-c1", "--noise-seed", "2", "--perturb", "0.05", "--role", "quant")
fc2 = fixture("wf-c2", "--noise-seed", "3", "--perturb", "0.3", "--role", "quant")
rc, so, se = fid_split("compare", "--reference", fr, "--candidate", fc1, "--candidate", fc2, "--out", w("c-wf"), "--json")
if case("compare with two candidates --json exits 0", rc == 0, so + se):
    try:
        doc = json.loads(so)
    except ValueError as ex:
        doc = None
        case("--json stdout is one JSON document", False, "%s: %s" % (ex, so[:300]))
    case("--json: stdout is one JSON array of the two receipts; the summary is on stderr",
         isinstance(doc, list) and len(doc) == 2 and "====== Perplexity statistics ======" in se
         and "====== Perplexity statistics ======" not in so)
    for k, cand in ((1, fc1), (2, fc2)):
        d = [x for x in os.listdir(w("c-wf")) if x.startswith("%02d-" % k)][0]
        r = load(w("c-wf", d, "comparison-receipt.json"))
        tw = np.load(w("c-wf", d, "tokenwise-kld.npy"))
        t = check_block("write-fixture c%d" % k, r["x_fidelity"]["token_statistics"], oracle(fr, cand, tw, 300))
        if isinstance(doc, list):
            case("--json receipt %d equals the file" % k, doc[k - 1] == r)
rc, so, se = fid_split("compare", "--reference", fr, "--candidate", fc1, "--out", w("c-wf1"), "--json")
try:
    one = json.loads(so)
except ValueError:
    one = None
case("--json with one candidate: stdout is the receipt alone", rc == 0 and isinstance(one, dict)
     and one == load(w("c-wf1", "comparison-receipt.json")), so[:300] + se[-300:])

# ---- 1c. edge: a vocabulary smaller than k = 10 and n <= 10 positions (llama.cpp's SE rule gives 0)
for name, extra in (("tiny-ref", ()), ("tiny-cand", ("--noise-seed", "5", "--perturb", "0.5", "--role", "quant"))):
    rc, out = fid("write-fixture", "--out", w(name), "--records", "1", "--tokens", "9", "--hidden", "8", "--vocab", "7",
                  "--seed", "2", "--fixed-time", *extra)
rc, out = fid("compare", "--reference", w("tiny-ref"), "--candidate", w("tiny-cand"), "--out", w("c-tiny"))
if case("vocab 7, 8 positions: compare exits 0", rc == 0, out):
    r = load(w("c-tiny", "comparison-receipt.json"))
    t = check_block("vocab 7", r["x_fidelity"]["token_statistics"],
                    oracle(w("tiny-ref"), w("tiny-cand"), np.load(w("c-tiny", "tokenwise-kld.npy")), 7))
    case("vocab 7: top-10 is the whole vocabulary (agreement 1 at k = 10); n <= 10 -> SE 0 (llama.cpp)",
         t["top_k_agreement"]["candidate_top1_in_reference_topk"][2] == 1.0
         and t["top_k_agreement"]["reference_top1_in_candidate_topk"][2] == 1.0
         and t["kl"]["se"] == 0 and t["delta_p"]["se"] == 0 and t["perplexity"]["reference"]["ppl_se"] == 0, t)

# ---- 2b. the SC-1 hash proof has no token statistics; --force-compute has them ------------
rc, out = fid("compare", "--reference", fr, "--candidate", fixture("wf-ref2"), "--self-compare", "--out", w("c-sc"))
if case("SC-1 self-compare exits 0", rc == 0, out):
    x = load(w("c-sc", "comparison-receipt.json"))["x_fidelity"]
    case("SC-1 hash proof: token_statistics null with a note, summary says so",
         x["token_statistics"] is None and "hash proof" in x["token_statistics_note"]
         and "(%s)" % x["token_statistics_note"] in out, x)
rc, out = fid("compare", "--reference", fr, "--candidate", w("wf-ref2"), "--self-compare", "--force-compute",
              "--out", w("c-scf"))
if case("SC-1 --force-compute exits 0", rc == 0, out):
    t = load(w("c-scf", "comparison-receipt.json"))["x_fidelity"]["token_statistics"]
    case("SC-1 forced: PPL(Q) = PPL(base), ln ratio 0, delta-p 0, same top 1, top-k 1",
         t["perplexity"]["candidate"]["ppl"] == t["perplexity"]["reference"]["ppl"] and t["perplexity"]["ln_ratio"]["value"] == 0
         and t["delta_p"]["max"] == 0 and t["delta_p"]["min"] == 0 and t["same_top"]["value"] == 1
         and t["top_k_agreement"]["candidate_top1_in_reference_topk"] == [1, 1, 1], t)


# ---- 4. llama.cpp: a .kld-adapted base against a hidden Q ---------------------------------
def llamacpp_summary(base_rows, q_logits, tokens, vocab):
    """perplexity.cpp kl_divergence(): the per-position float32 arithmetic and the
    summary printf lines (PPL, ln ratio, correlation, delta-p, RMS, same top)."""
    f = np.float32
    s = dict(sum_nll=0.0, sum_nll2=0.0, sum_nll_base=0.0, sum_nll_base2=0.0, sum_nll_nll_base=0.0,
             sum_p_diff=0.0, sum_p_diff2=0.0, sum_p_diff4=0.0, n_same_top=0, count=0)
    pdv = []
    for row, x, tok in zip(base_rows, q_logits, tokens):
        x = x.astype(f)
        imax = int(np.argmax(x))
        mx = x[imax]
        sum_exp = float(np.sum(np.exp((x - mx).astype(f)).astype(np.float64)))
        lse = f(np.log(sum_exp))
        nll = f(f(mx + lse) - x[tok])
        scale, minlp = row[0:2].view(f)[0], row[2:4].view(f)[0]
        q = row[4:4 + vocab]
        lpb = (f(scale) * q.astype(f)).astype(f) + f(minlp)
        nll_base = f(-(f(scale * f(q[tok])) + minlp))
        s["sum_nll"] += float(nll); s["sum_nll2"] += float(f(nll * nll))
        s["sum_nll_base"] += float(nll_base); s["sum_nll_base2"] += float(f(nll_base * nll_base))
        s["sum_nll_nll_base"] += float(f(nll * nll_base))
        s["count"] += 1
        s["n_same_top"] += int(np.argmax(lpb)) == imax
        pd = f(f(np.exp(-nll)) - f(np.exp(-nll_base)))
        s["sum_p_diff"] += float(pd); s["sum_p_diff2"] += float(pd) * float(pd); s["sum_p_diff4"] += (float(pd) ** 2) ** 2
        pdv.append(pd)
    n = s["count"]

    def mu(a, b):
        m = a / n
        v = b / n - m * m
        return m, (np.sqrt(v / (n - 1)) if v > 0 and n > 10 else 0.0)
    lq, lb = mu(s["sum_nll"], s["sum_nll2"]), mu(s["sum_nll_base"], s["sum_nll_base2"])
    cov = (s["sum_nll_nll_base"] / n - (s["sum_nll"] / n) * (s["sum_nll_base"] / n)) / (n - 1)
    pdv = np.sort(np.array(pdv, dtype=f))

    def pct(fr_):
        if fr_ <= 0: return pdv[0]
        if fr_ >= 1: return pdv[-1]
        p_ = f(f(fr_) * f(len(pdv) - 1))
        ip = int(p_)
        p_ = f(p_ - ip)
        return f(f(1 - p_) * pdv[ip] + p_ * pdv[min(ip + 1, len(pdv) - 1)])
    med = f(0.5) * (pdv[n // 2] + pdv[n // 2 - 1]) if n % 2 == 0 else pdv[n // 2]
    pm = mu(s["sum_p_diff"], s["sum_p_diff2"])
    mse = mu(s["sum_p_diff2"], s["sum_p_diff4"])
    rms = np.sqrt(mse[0])
    st = s["n_same_top"] / n
    L = ["Mean PPL(Q)                   : %10.6f ± %10.6f" % (np.exp(lq[0]), np.exp(lq[0]) * lq[1]),
         "Mean PPL(base)                : %10.6f ± %10.6f" % (np.exp(lb[0]), np.exp(lb[0]) * lb[1]),
         "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%" % (100 * cov / (lq[1] * lb[1])),
         "Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f" % (lq[0] - lb[0], np.sqrt(lq[1] ** 2 + lb[1] ** 2 - 2 * cov)),
         "Mean    Δp: %6.3f ± %5.3f %%" % (100 * pm[0], 100 * pm[1]),
         "Maximum Δp: %6.3f%%" % (100 * pdv[-1])]
    for fr_, lab in ((0.999, "99.9%"), (0.99, "99.0%"), (0.95, "95.0%"), (0.90, "90.0%"), (0.75, "75.0%")):
        L.append("%s   Δp: %6.3f%%" % (lab, 100 * pct(fr_)))
    L.append("Median  Δp: %6.3f%%" % (100 * med))
    for fr_, lab in ((0.25, "25.0%"), (0.10, "10.0%"), (0.05, " 5.0%"), (0.01, " 1.0%"), (0.001, " 0.1%")):
        L.append("%s   Δp: %6.3f%%" % (lab, 100 * pct(fr_)))
    L += ["Minimum Δp: %6.3f%%" % (100 * pdv[0]),
          "RMS Δp    : %6.3f ± %5.3f %%" % (100 * rms, 100 * 0.5 / rms * mse[1]),
          "Same top p: %6.3f ± %5.3f %%" % (100 * st, 100 * np.sqrt(st * (1 - st) / (n - 1)))]
    return L


NUM = re.compile(r"-?\d+\.\d+")


def within_rounding(ours, theirs):
    """Same text but for numbers, each within one unit of its last printed digit, or
    2e-7 relative where that is coarser: perplexity.cpp keeps each nll in float32
    (2^-24 relative), so its own sixth decimal of a PPL in the hundreds is noise."""
    a, b = NUM.findall(ours), NUM.findall(theirs)
    if NUM.sub("#", ours).strip() != NUM.sub("#", theirs).strip() or len(a) != len(b):
        return False
    return all(abs(float(x) - float(y)) <= max(1.0001 * 10 ** -len(y.split(".")[1]), 2e-7 * abs(float(y)))
               for x, y in zip(a, b))




n_ctx, kv, kh = 24, 41, 16
base_ds = w("k-base")
rc, out = fid("write-fixture", "--out", base_ds, "--records", "12", "--tokens", str(n_ctx), "--hidden", str(kh),
              "--vocab", str(kv), "--seed", "9", "--fixed-time")
q_ds = w("k-q")
rc2, out2 = fid("write-fixture", "--out", q_ds, "--records", "12", "--tokens", str(n_ctx), "--hidden", str(kh),
                "--vocab", str(kv), "--seed", "9", "--noise-seed", "4", "--perturb", "0.2", "--role", "quant", "--fixed-time")
kld = w("base.kld")
rc3, out3 = fid("export", "--format", "llamacpp-kld", "--dataset", base_ds, "--out", kld)
ad = w("k-adapted")
tokz = load(os.path.join(base_ds, "fidelity-dataset.json"))["panel"]["tokenizer"]["id"]
rc4, out4 = fid("adapt", "--source", "llamacpp-kld", "--in", kld, "--out", ad, "--head",
                os.path.join(base_ds, "head/weight.safetensors"), "--tokenizer-id", tokz, "--vocab", str(kv))
if case("llama.cpp fixtures: base/Q datasets, base.kld exported and adapted", rc == rc2 == rc3 == rc4 == 0,
        out + out2 + out3 + out4):
    sw = load(os.path.join(ad, "fidelity-dataset.json"))["panel"]["scoring_window"]
    qw = w("k-q-windowed")
    windowed_copy(q_ds, qw, sw)
    rc, out = fid("compare", "--reference", ad, "--candidate", qw, "--out", w("c-k"))
    if case("compare .kld base vs windowed hidden Q (HEAD-3) exits 2", rc == 2, out):
        _, _, n_chunk, toks, dec, raw = K.read_kld(kld)
        R = K.rows_per_chunk(n_ctx)
        first = n_ctx // 2
        qlog = np.concatenate([canonical_logits(q_ds, c, kv)[first:n_ctx - 1] for c in range(n_chunk)])
        tok = np.concatenate([toks[c * n_ctx + first + 1:c * n_ctx + n_ctx] for c in range(n_chunk)])
        want = llamacpp_summary(raw, qlog, tok, kv)
        lines = out.splitlines()
        bad = []
        for wl in want:
            key = wl.split(":")[0]
            got = [l for l in lines if l.split(":")[0] == key]
            if len(got) != 1 or not within_rounding(got[0], wl):
                bad.append((wl, got))
        case("llama.cpp: %d summary lines (PPL, ln ratio, Cor, 13 Δp lines, RMS, same top) equal perplexity.cpp's "
             "within its rounding (%d positions)" % (len(want), len(tok)), not bad and len(tok) >= 100, bad)
        t = load(w("c-k", "comparison-receipt.json"))["x_fidelity"]["token_statistics"]
        nb = -dec[np.arange(len(tok)), tok].astype(np.float64)
        case("llama.cpp: the base side's nll is the stored log-prob as llama.cpp reads it (numpy, rel 1e-12)",
             close(t["perplexity"]["reference"]["mean_nll"], float(np.sum(nb) / len(nb)), 1e-12))

shutil.rmtree(WORK, ignore_errors=True)
failed = results.count(False)
print("test_token_stats: %d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed else 0)
