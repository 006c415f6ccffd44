#!/usr/bin/env python3
"""`fidelity compare` end to end (COMPARE.md §1-§4): every gate and refusal
the ladder implements (exit 3 and the exact `REFUSED [code]: message (gate
NAME)` line), their overrides, usage errors (exit 4), the SC-1 hash proof and
--force-compute, SC-2, bitwise invariance of tokenwise-kld.npy over threads,
position blocks, kernel paths and candidate grouping, a numpy oracle for the
estimator and for the whole replay, and receipt self-consistency (every
receipt passes `fidelity validate --receipt`).  Small synthetic fixtures
from `fidelity write-fixture`; numpy is optional (its checks are skipped
without it).  usage: test_compare.py BINARY"""
import glob, hashlib, json, math, os, re, shutil, struct, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dsutil import load, dump, reseal, run, refusal_code, seal, sha, sha_file

try:
    import numpy as np
except ImportError:
    np = None

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="fd-compare-")
T0 = time.time()
results = []
RECEIPTS = []          # every receipt a successful compare wrote (validated in section 5)

SAN_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-64s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)))
    return ok


def note(msg):
    print("     note: " + msg)


def fid(*args):
    """Run the binary; a sanitizer report anywhere is itself a failure."""
    rc, out = run(BIN, *args)
    if any(m in out for m in SAN_MARKERS):
        case("sanitizer-clean: " + " ".join(os.path.basename(a.rstrip("/")) for a in args)[:90], False,
             "\n" + out[-4000:])
    return rc, out


# --- fixtures -------------------------------------------------------------------------
SMALL = ("--records", "4", "--tokens", "48", "--hidden", "64", "--vocab", "3000")
SMALL_N = 4 * 47
_fixtures = {}


def fixture(name, *args, base=SMALL):
    if name in _fixtures:
        return _fixtures[name]
    root = os.path.join(WORK, "ds", name)
    rc, out = fid("write-fixture", "--out", root, *(tuple(base) + tuple(args)))
    if rc != 0:
        case("write-fixture " + name, False, out)
        raise SystemExit("cannot build fixture %s" % name)
    _fixtures[name] = root
    return root


def copy_ds(src, name):
    dst = os.path.join(WORK, "ds", name)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


def rewrite_records(root, keep=None, shift=0, declared=None):
    """A forger's edit of a sealed dataset: drop the capture records whose index
    is not in `keep` (the panel keeps every record, so the suite token hash is
    unchanged) and/or shift every record index (capture and panel) by `shift`;
    then recompute the capture_content_digest and coverage and reseal all."""
    capp, panp = os.path.join(root, "capture/manifest.json"), os.path.join(root, "panel/panel.json")
    cap, pan = load(capp), load(panp)
    recs = cap["records"]
    if keep is not None:
        for r in recs:
            if r["index"] not in keep:
                os.remove(os.path.join(root, "capture", r["file"]))
        recs = [r for r in recs if r["index"] in keep]
    for r in recs:
        r["index"] += shift
    for r in pan["records"] if shift else ():
        r["index"] += shift
    recs.sort(key=lambda r: r["index"])
    cap["records"] = recs
    idx = [r["index"] for r in recs]
    rows = sum(r["scored_rows"] for r in recs)
    ccd = sha("\n".join("%d:%s" % (r["index"], r["tensor_content_sha256"]) for r in recs).encode("ascii"))
    decl = declared if declared is not None else len(pan["records"])
    complete = idx == list(range(decl))
    cov = {"complete": complete, "declared_records": decl, "index_range": [idx[0], idx[-1]],
           "missing_indices_sample": [i for i in range(decl) if i not in idx][:8], "present_records": len(recs),
           "shard_of": None, "subset_detail": None if complete else "a test subset of the panel"}
    cap.update(coverage=cov, capture_content_digest=ccd, total_scored_rows=rows,
               total_size_bytes=sum(r["size_bytes"] for r in recs))
    seal(cap, "receipt_sha256")
    dump(capp, cap)
    if complete and keep is not None:
        pan["scored_positions_total"] = rows      # BIND-5 for the now-complete smaller capture
    if shift or (complete and keep is not None):
        seal(pan, "receipt_sha256")
        dump(panp, pan)

    def edit(m):
        m["coverage"] = dict(cov)
        m["capture"].update(capture_content_digest=ccd, records_count=len(recs), scored_rows_total=rows,
                            total_size_bytes=cap["total_size_bytes"])
        m["panel"]["scored_positions_total"] = pan["scored_positions_total"]
    reseal(root, manifest_edit=edit)


# --- compare helpers -------------------------------------------------------------------
_outs = [0]


def new_out(tag):
    _outs[0] += 1
    return os.path.join(WORK, "out", "%03d-%s" % (_outs[0], tag))


def nn_dir(out, i):
    """OUT/NN-LABEL of the i-th candidate (the label defaults to its dataset's name)"""
    hits = sorted(glob.glob(os.path.join(out, "%02d-*" % (i + 1))))
    return hits[0] if hits else os.path.join(out, "%02d-missing" % (i + 1))


def compare(ref, cands, *flags, out=None, tag="cmp"):
    """-> (rc, output, out_dir, [receipt dicts or None per candidate])"""
    if isinstance(cands, str):
        cands = [cands]
    out = out or new_out(tag)
    args = ["compare", "--reference", ref]
    for c in cands:
        args += ["--candidate", c]
    rc, text = fid(*(args + ["--out", out] + list(flags)))
    receipts = []
    for i in range(len(cands)):
        d = out if len(cands) == 1 else nn_dir(out, i)
        p = os.path.join(d, "comparison-receipt.json")
        if rc in (0, 2) and os.path.isfile(p):
            RECEIPTS.append(p)
            receipts.append(load(p))
        else:
            receipts.append(None)
    return rc, text, out, receipts


def tokenwise(out, i=None):
    d = out if i is None else nn_dir(out, i)
    p = os.path.join(d, "tokenwise-kld.npy")
    return p if os.path.isfile(p) else None


def tw_sha(out, i=None):
    p = tokenwise(out, i)
    return sha_file(p) if p else None


REFUSAL_LINE = re.compile(r"^REFUSED \[([a-z0-9_]+)\]: (.+) \(gate ([A-Za-z0-9_-]+)\)$")


def refusal(name, ref, cands, code, *flags, gate=None, out=None):
    rc, out, odir, _ = compare(ref, cands, *flags, tag=name, out=out)
    lines = [l for l in out.splitlines() if l.startswith("REFUSED [")]
    m = REFUSAL_LINE.match(lines[0]) if len(lines) == 1 else None
    ok = rc == 3 and m is not None and m.group(1) == code and (gate is None or m.group(3) == gate)
    # a refusal writes no receipt
    ok = ok and not os.path.isfile(os.path.join(odir, "comparison-receipt.json"))
    case("%s -> REFUSED [%s]%s" % (name, code, " (gate %s)" % gate if gate else ""), ok,
         "rc=%d code=%s\n%s" % (rc, refusal_code(out), out))
    return ok


def disclosure(receipt, code):
    for d in (receipt or {}).get("disclosures", []):
        if d.get("code") == code:
            return d
    return None


def get(d, path, default=None):
    for k in path.split("."):
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


def accepted(name, rc, out, receipt, want_rc, checks):
    """checks: list of (label, bool)."""
    bad = [lab for lab, ok in checks if not ok]
    ok = rc in want_rc and receipt is not None and not bad
    case(name, ok, "rc=%d (want %s) failed checks=%s\n%s" % (rc, want_rc, bad, out[-3000:]))
    return ok


# ======================================================================================
# 1. gates and refusals (COMPARE.md §3)
# ======================================================================================
print("== 1. gates and refusals")
REF = fixture("ref", "--seed", "5")
CAND = fixture("cand", "--seed", "5", "--noise-seed", "2", "--perturb", "0.05", "--role", "quant")

# a plain measurement first: the baseline every override is judged against
rc, out, BASE_OUT, (base,) = compare(REF, CAND, tag="base")
accepted("baseline measurement: exit 0, strict, measurement", rc, out, base, (0,), [
    ("kind", get(base, "comparison_kind") == "measurement"),
    ("class", get(base, "comparability.class") == "strict"),
    ("floor", get(base, "comparability.usable_as_floor") is True),
    ("policy", get(base, "estimator.head_policy") == "shared_reference_head"),
    ("stack", get(base, "estimator.stack_relation") == "same_stack"),
    ("info", disclosure(base, "shared_reference_head") is not None),
    ("gates", all(get(base, "gates.%s.passed" % g) is True for g in
                  ("seal", "form", "panel", "head", "lane", "stack", "geometry", "coverage", "lossy")))])

# same_root: the same directory twice, also spelled differently, also with --self-compare
refusal("same_root", REF, REF, "same_root", gate="cli")
refusal("same_root-spelled-differently", REF, REF + "/./", "same_root", gate="cli")
refusal("same_root-with-self-compare", REF, REF, "same_root", "--self-compare", gate="cli")

# seal_failed: a tampered candidate (tensor byte), a tampered reference (README)
def flip(root, rel, offset=-3):
    p = os.path.join(root, rel)
    data = bytearray(open(p, "rb").read())
    data[offset] ^= 0x01
    open(p, "wb").write(bytes(data))
TAMPER_C = copy_ds(CAND, "tamper-cand")
flip(TAMPER_C, "capture/hidden_0001.safetensors")
refusal("seal_failed-tampered-candidate-tensor", REF, TAMPER_C, "seal_failed", gate="seal")
TAMPER_R = copy_ds(REF, "tamper-ref")
flip(TAMPER_R, "README.md")
refusal("seal_failed-tampered-reference-readme", TAMPER_R, CAND, "seal_failed", gate="seal")
TAMPER_H = copy_ds(CAND, "tamper-head")
flip(TAMPER_H, "head/weight.safetensors")
refusal("seal_failed-tampered-candidate-head", REF, TAMPER_H, "seal_failed", gate="seal")
# a tampered candidate in a multi-candidate run refuses the whole run
refusal("seal_failed-second-of-two-candidates", REF, [CAND, TAMPER_C], "seal_failed", gate="seal")
# both sides tampered: the first candidate is opened on a second thread while
# the reference is, yet the reference's refusal is the one reported (the
# sequential order), every time
for k in range(3):
    rc, out, _, _ = compare(TAMPER_R, TAMPER_C, tag="both-tampered-%d" % k)
    case("both sides tampered (try %d): the reference's seal_failed is reported" % k,
         rc == 3 and "REFUSED [seal_failed]" in out and TAMPER_R in out and TAMPER_C not in out, out)

# panel_mismatch: a different --seed gives different tokens
OTHER_PANEL = fixture("seed9", "--seed", "9")
refusal("panel_mismatch-different-tokens", REF, OTHER_PANEL, "panel_mismatch", gate="panel")
# panel_mismatch cannot be overridden (PANEL-D3)
refusal("panel_mismatch-no-override", REF, OTHER_PANEL, "panel_mismatch", "--allow-partial", "--allow-cross-lane",
        "--own-heads", gate="panel")

# empty_intersection: every index shifted (same tokens, same suite hash, no shared index)
SHIFT = copy_ds(CAND, "shifted")
rewrite_records(SHIFT, shift=10)
refusal("empty_intersection (shifted indices, --allow-partial)", REF, SHIFT, "empty_intersection", "--allow-partial",
        gate="panel")
# without --allow-partial the shifted (incomplete) side does not even open
refusal("incomplete side without --allow-partial -> seal_failed", REF, SHIFT, "seal_failed", gate="seal")

# head_mismatch and its two overrides
HEADS = fixture("heads", "--seed", "5", "--head-seed", "77", "--noise-seed", "2", "--perturb", "0.05")
refusal("head_mismatch (--head-seed differs)", REF, HEADS, "head_mismatch", gate="head")
rc, out, _, (r,) = compare(REF, HEADS, "--own-heads", tag="own-heads")
accepted("--own-heads: exit 0/2, head_policy native_head", rc, out, r, (0, 2), [
    ("policy", get(r, "estimator.head_policy") == "native_head"),
    ("info", get(disclosure(r, "native_head_replay") or {}, "severity") == "info"),
    ("override", get(r, "gates.head.overridden_by") == "--own-heads"),
    ("cand head", get(r, "comparator.head_applied_candidate_tensor_content_sha256") ==
     load(os.path.join(HEADS, "fidelity-dataset.json"))["head"]["tensor_content_sha256"]),
    ("kind", get(r, "comparison_kind") == "measurement")])

def check_head_substitution(name, *flags):
    rc, out, _, (r,) = compare(REF, HEADS, "--disclose-head-substitution", *flags, tag=name)
    d = disclosure(r, "head_substituted") or {}
    accepted(name + ": advisory exit 2, blocking head_substituted", rc, out, r, (2,), [
        ("class", get(r, "comparability.class") == "advisory"),
        ("blocking", d.get("severity") == "blocking" and d.get("affects_comparability") is True),
        ("bias", get(r, "comparability.bias.kind") == "other"),
        ("floor", get(r, "comparability.usable_as_floor") is False),
        ("override", get(r, "gates.head.overridden_by") == "--disclose-head-substitution")])
check_head_substitution("--disclose-head-substitution")
check_head_substitution("--disclose-head-substitution --head", "--head", os.path.join(REF, "head/weight.safetensors"))

# lane_mismatch and --allow-cross-lane
LANE = fixture("lane", "--seed", "5", "--noise-seed", "2", "--perturb", "0.05", "--lane", "streaming")
refusal("lane_mismatch (--lane streaming vs other)", REF, LANE, "lane_mismatch", gate="lane")
rc, out, _, (r,) = compare(REF, LANE, "--allow-cross-lane", tag="cross-lane")
accepted("--allow-cross-lane: exit 2, advisory, not a floor", rc, out, r, (2,), [
    ("class", get(r, "comparability.class") == "advisory"),
    ("floor", get(r, "comparability.usable_as_floor") is False),
    ("same_lane", get(r, "comparability.same_lane") is False),
    ("caveat", get(disclosure(r, "cross_engine_capture") or {}, "severity") == "caveat"),
    ("override", get(r, "gates.lane.overridden_by") == "--allow-cross-lane")])

# cross_stack: a different stack fingerprint (--engine-tag) is advisory, with a typed bias block
STACK = fixture("stack", "--seed", "5", "--noise-seed", "2", "--perturb", "0.05", "--engine-tag", "other-engine-9.9")
rc, out, _, (r,) = compare(REF, STACK, tag="cross-stack")
accepted("cross_stack (--engine-tag): exit 2, bias cross_stack_capture_replay", rc, out, r, (2,), [
    ("class", get(r, "comparability.class") == "advisory"),
    ("bias", get(r, "comparability.bias.kind") == "cross_stack_capture_replay"),
    ("direction", get(r, "comparability.bias.direction") == "unknown"),
    ("floor", get(r, "comparability.usable_as_floor") is False),
    ("relation", get(r, "estimator.stack_relation") == "cross_stack"),
    ("caveat", disclosure(r, "cross_stack_capture") is not None)])

# geometry_mismatch: same --seed and --vocab give the same tokens; only the hidden width
# differs.  Its head differs too, so the head gate refuses first unless --own-heads.
GEOM = fixture("hidden32", "--seed", "5", "--noise-seed", "2", "--perturb", "0.05", base=(
    "--records", "4", "--tokens", "48", "--hidden", "32", "--vocab", "3000"))
refusal("hidden width differs, no override -> head_mismatch first", REF, GEOM, "head_mismatch", gate="head")
refusal("geometry_mismatch (hidden 64 vs 32, --own-heads)", REF, GEOM, "geometry_mismatch", "--own-heads",
        gate="geometry")
note("a vocab_size difference cannot reach the geometry gate: the tokens (ids mod vocab) and the "
     "panel tokenizer's vocab_size differ first (panel_mismatch)")

# coverage: a complete candidate with fewer records on the same panel (forged: one capture
# record dropped, declared_records lowered, BIND-5 total fixed, resealed)
FEWER = copy_ds(CAND, "fewer")
rewrite_records(FEWER, keep={0, 1, 2}, declared=3)
refusal("coverage_mismatch (complete candidate, 3 of 4 contexts)", REF, FEWER, "coverage_mismatch", gate="coverage")
rc, out, _, (r,) = compare(REF, FEWER, "--allow-partial", tag="allow-partial")
accepted("--allow-partial: subset_of_panel caveat, 3 contexts", rc, out, r, (0,), [
    ("caveat", get(disclosure(r, "subset_of_panel") or {}, "severity") == "caveat"),
    ("class", get(r, "comparability.class") == "strict"),
    ("covers", get(r, "measurement_scope.covers_full_panel") is False),
    ("contexts", get(r, "measurement_scope.contexts") == 3 and len(get(r, "per_context", [])) == 3),
    ("positions", get(r, "measurement_scope.scored_positions") == 3 * 47),
    ("override", get(r, "gates.coverage.overridden_by") == "--allow-partial")])
# an incomplete shard of the same panel (missing record 3): refused unless --allow-partial
SHARD = copy_ds(CAND, "shard")
rewrite_records(SHARD, keep={0, 1, 2})
refusal("incomplete shard without --allow-partial -> seal_failed", REF, SHARD, "seal_failed", gate="seal")
rc, out, _, (r2,) = compare(REF, SHARD, "--allow-partial", tag="shard")
accepted("incomplete shard --allow-partial: subset_of_panel", rc, out, r2, (0,), [
    ("caveat", disclosure(r2, "subset_of_panel") is not None),
    ("same numbers as the complete 3-record candidate", get(r2, "kl") == get(r, "kl"))])

# not_a_self_compare
refusal("not_a_self_compare (--self-compare on a measurement)", REF, CAND, "not_a_self_compare", "--self-compare",
        gate="classify")

# head_substitution_vacuous: equal capture content, different heads
HEADONLY = fixture("headonly", "--seed", "5", "--head-seed", "77")
refusal("equal capture, other head, no flag -> head_mismatch", REF, HEADONLY, "head_mismatch", gate="head")
refusal("head_substitution_vacuous (--disclose-head-substitution)", REF, HEADONLY, "head_substitution_vacuous",
        "--disclose-head-substitution", gate="classify")
refusal("head_substitution_vacuous with --self-compare", REF, HEADONLY, "head_substitution_vacuous",
        "--disclose-head-substitution", "--self-compare", gate="classify")
rc, out, _, (r,) = compare(REF, HEADONLY, "--own-heads", tag="head-only")
accepted("equal capture + --own-heads: measurement, head_only_difference", rc, out, r, (0, 2), [
    ("kind", get(r, "comparison_kind") == "measurement"),
    ("info", get(disclosure(r, "head_only_difference") or {}, "severity") == "info"),
    ("policy", get(r, "estimator.head_policy") == "native_head"),
    ("nonzero", (get(r, "kl.mean") or 0) > 0)])

# usage errors: exit 4, nothing written
for name, args in (("missing --out", ["--reference", REF, "--candidate", CAND]),
                   ("missing --candidate", ["--reference", REF, "--out", new_out("u")]),
                   ("missing --reference", ["--candidate", CAND, "--out", new_out("u")]),
                   ("--head without --disclose-head-substitution",
                    ["--reference", REF, "--candidate", HEADS, "--out", new_out("u"), "--head",
                     os.path.join(REF, "head/weight.safetensors")]),
                   ("unknown option", ["--reference", REF, "--candidate", CAND, "--out", new_out("u"), "--bogus"]),
                   ("--threads 0", ["--reference", REF, "--candidate", CAND, "--out", new_out("u"), "--threads", "0"]),
                   ("--chunk-positions 0", ["--reference", REF, "--candidate", CAND, "--out", new_out("u"),
                                            "--chunk-positions", "0"]),
                   ("--chunk-positions -1", ["--reference", REF, "--candidate", CAND, "--out", new_out("u"),
                                             "--chunk-positions", "-1"]),
                   ("more labels than candidates", ["--reference", REF, "--candidate", CAND, "--out", new_out("u"),
                                                    "--candidate-label", "a", "--candidate-label", "b"])):
    rc, out = fid("compare", *args)
    odir = args[args.index("--out") + 1] if "--out" in args else None
    case("usage: %s -> exit 4" % name, rc == 4 and (odir is None or not os.path.exists(odir)), "rc=%d\n%s" % (rc, out))
# an output directory that cannot be made (a regular file in its path): refused, nothing leaks
AFILE = os.path.join(WORK, "a-regular-file")
open(AFILE, "w").write("x")
refusal("--out below a regular file -> unwritable", REF, CAND, "unwritable", out=os.path.join(AFILE, "sub"))
rc, out = fid("compare", "--reference", REF, "--candidate", CAND, "--out", new_out("k"), "--kernel", "no-such-path")
case("--kernel no-such-path is a usage error (exit 4), no crash", rc == 4, "rc=%d\n%s" % (rc, out))


# ======================================================================================
# 2. self-compare: SC-1 hash proof, --force-compute, SC-2
# ======================================================================================
print("== 2. self-compare")
SAME = fixture("same", "--seed", "5")                      # same arguments as REF, another directory
SAME_FT = fixture("same-fixed-time", "--seed", "5", "--fixed-time")
mref, mft = load(os.path.join(REF, "fidelity-dataset.json")), load(os.path.join(SAME_FT, "fidelity-dataset.json"))
case("fixed-time copy: other dataset_sha256, same capture_content_digest",
     mref["dataset_sha256"] != mft["dataset_sha256"] and
     mref["capture"]["capture_content_digest"] == mft["capture"]["capture_content_digest"])

ZERO_RE = re.compile(r"-0(\.0+)?(?![0-9.eE])|-0\.0+e")


def npy_zero_ok(path, n):
    """numpy-free: a v1.0 '<f8' header padded to 128 bytes, then n*8 zero bytes."""
    data = open(path, "rb").read()
    if len(data) != 128 + 8 * n or data[:8] != b"\x93NUMPY\x01\x00":
        return False
    hl = struct.unpack("<H", data[8:10])[0]
    hdr = data[10:10 + hl].decode("ascii")
    return (10 + hl == 128 and hdr.endswith("\n") and
            hdr.rstrip() == "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }" % n and
            data[128:] == bytes(8 * n))


def check_sc1(name, cand, n=SMALL_N, ref=REF):
    rc, out, odir, (r,) = compare(ref, cand, "--self-compare", tag=name)
    text = open(os.path.join(odir, "comparison-receipt.json")).read() if r else ""
    kl = get(r, "kl", {}) or {}
    ok = accepted(name + ": SC-1 hash proof", rc, out, r, (0,), [
        ("kind", get(r, "comparison_kind") == "reproduction_confirmation"),
        ("kl +0.0", len(kl) == 6 and all(v == 0.0 and math.copysign(1.0, v) == 1.0 for v in kl.values())),
        ("metric", get(r, "metric.value") == 0.0 and math.copysign(1.0, get(r, "metric.value", -1.0)) == 1.0),
        ("no -0.0 in text", not ZERO_RE.search(text)),
        ("0.0 in text", '"p99_9": 0.0' in text and '"mean": 0.0' in text),
        ("top1", get(r, "top1_agreement") == 1.0),
        ("short", get(r, "comparator.short_circuited") is True),
        ("backend", get(r, "comparator.estimator_backend") == "hash_proof" and
         get(r, "comparator.replay_backend") == "none" and get(r, "comparator.device") == "none"),
        ("self_compare", get(r, "self_compare.asserted_exact_zero") is True and
         get(r, "self_compare.capture_content_digest_equal") is True and
         get(r, "self_compare.force_compute_agreed") is None),
        ("buckets", get(r, "context_depth_buckets", 1) is None),
        ("key", get(r, "comparability.key", 1) is None),
        ("per_context", all(c["mean"] == 0.0 and c["max"] == 0.0 and c["top1_agreement"] == 1.0
                            for c in get(r, "per_context", []) or [None])),
        ("npy", tokenwise(odir) is not None and npy_zero_ok(tokenwise(odir), n)),
        ("expected sha", get(r, "self_compare.expected_tokenwise_sha256") == tw_sha(odir) ==
         get(r, "tokenwise.sha256"))])
    return odir if ok else None


sc_out = check_sc1("identical independent copy", SAME)
sc_ft_out = check_sc1("fixed-time copy (file shas differ)", SAME_FT)
rc, out, _, (r,) = compare(REF, SAME, tag="sc1-no-flag")
accepted("equal capture without --self-compare is still SC-1", rc, out, r, (0,),
         [("kind", get(r, "comparison_kind") == "reproduction_confirmation")])

rc, out, fodir, (r,) = compare(REF, SAME_FT, "--self-compare", "--force-compute", tag="force")
accepted("--force-compute: agreed, same tokenwise sha as the hash proof", rc, out, r, (0,), [
    ("agreed", get(r, "self_compare.force_compute_agreed") is True),
    ("sha", sc_ft_out is not None and tw_sha(fodir) == tw_sha(sc_ft_out)),
    ("npy", tokenwise(fodir) is not None and npy_zero_ok(tokenwise(fodir), SMALL_N)),
    ("computed", get(r, "comparator.estimator_backend") != "hash_proof" and
     get(r, "comparator.short_circuited") is False),
    ("kl +0.0", all(v == 0.0 and math.copysign(1.0, v) == 1.0 for v in (get(r, "kl", {}) or {"x": -1}).values())),
    ("top1", get(r, "top1_agreement") == 1.0)])

# the spec's frozen constant: N=51,175 zeros (dsformat.ZERO_TOKENWISE_SHA256_51175), from
# 25 windows x 2048 tokens (2047 scored rows each) of a tiny hidden/vocab
Z = ("--records", "25", "--tokens", "2048", "--hidden", "8", "--vocab", "16")
Z1, Z2 = fixture("zero-a", "--seed", "3", base=Z), fixture("zero-b", "--seed", "3", "--fixed-time", base=Z)
ZERO_51175 = "3ffddc61af8350782afd24c7a69de1f37c260bf5489c4e0f6e3ad89b0ab9be17"
for flags in ((), ("--force-compute",)):
    rc, out, zo, (r,) = compare(Z1, Z2, "--self-compare", *flags, tag="zero51175")
    case("N=51175 zero tokenwise sha = spec constant %s" % " ".join(flags),
         rc == 0 and tw_sha(zo) == ZERO_51175 and get(r, "tokenwise.bytes") == 409528,
         "rc=%d sha=%s\n%s" % (rc, tw_sha(zo), out[-2000:]))

# SC-2: equal non-null weights identity, different capture content.  The fixture leaves
# model_revision and checkpoint_identity null, so a plain perturbed pair is a measurement;
# with both filled in (resealed) it is a run-to-run floor.
PERT_ROOT = fixture("pert-root", "--seed", "5", "--noise-seed", "4", "--perturb", "0.01")
rc, out, _, (r,) = compare(REF, PERT_ROOT, tag="no-weights-identity")
accepted("fixture pair with null weights identity is a measurement", rc, out, r, (0,),
         [("kind", get(r, "comparison_kind") == "measurement")])


def with_weights(src, name):
    d = copy_ds(src, name)
    reseal(d, manifest_edit=lambda m: m["weights"].update(
        model_revision="0123456789abcdef0123456789abcdef01234567", checkpoint_identity_sha256="ab" * 32))
    return d


S2R, S2C = with_weights(REF, "sc2-ref"), with_weights(PERT_ROOT, "sc2-cand")
rc, out, _, (r,) = compare(S2R, S2C, tag="sc2")
accepted("SC-2 run_to_run_floor (resealed weights identity)", rc, out, r, (0,), [
    ("kind", get(r, "comparison_kind") == "run_to_run_floor"),
    ("weights", get(r, "self_compare.weights_identity_equal") is True),
    ("digests", get(r, "self_compare.capture_content_digest_equal") is False),
    ("zero", get(r, "self_compare.asserted_exact_zero") is False),
    ("key", get(r, "comparability.key", 1) is None),
    ("positive", (get(r, "kl.mean") or 0) > 0)])
refusal("--self-compare on SC-2 -> not_a_self_compare", S2R, S2C, "not_a_self_compare", "--self-compare",
        gate="classify")


# ======================================================================================
# 3. bitwise invariance of tokenwise-kld.npy
# ======================================================================================
print("== 3. bitwise invariance")
flags = set()
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
            break
KERNELS = []
for k, need in (("avx2", ("avx2", "fma")), ("avx512f", ("avx512f",)), ("avx512bf16", ("avx512f", "avx512_bf16"))):
    if all(n in flags for n in need):
        KERNELS.append(k)
    else:
        note("kernel %s skipped: the CPU lacks %s" % (k, " ".join(n for n in need if n not in flags)))
# 4 x 128 tokens, hidden 256 like the small fixture; vocab 154880/8 by default so the ASan
# build stays within its budget (19360 = 9*2048 + 928 keeps a partial KL chunk).
BW_VOCAB = os.environ.get("FIDELITY_TEST_BITWISE_VOCAB", "19360")
BW = ("--records", "4", "--tokens", "128", "--hidden", "256", "--vocab", BW_VOCAB)
BW_N = 4 * 127
BWR = fixture("bw-ref", "--seed", "11", base=BW)
BWC1 = fixture("bw-c1", "--seed", "11", "--noise-seed", "3", "--perturb", "0.05", base=BW)
BWC2 = fixture("bw-c2", "--seed", "11", "--noise-seed", "4", "--perturb", "0.1", "--role", "quant", base=BW)
t = time.time()
rc, out, bw_base, (r,) = compare(BWR, BWC1, "--threads", "2", "--chunk-positions", "128", tag="bw-base")
BASE_SHA = tw_sha(bw_base)
case("bitwise baseline (vocab %s, %d positions, %.1fs)" % (BW_VOCAB, BW_N, time.time() - t),
     rc == 0 and BASE_SHA and get(r, "tokenwise.sha256") == BASE_SHA and (get(r, "kl.mean") or 0) > 0, out)
variants = [("--threads 1", ("--threads", "1")), ("--threads 3", ("--threads", "3")),
            ("--chunk-positions 1", ("--chunk-positions", "1")), ("--chunk-positions 7", ("--chunk-positions", "7")),
            ("--threads 3 --chunk-positions 100 (units of 100 shrinking to 64)", ("--threads", "3", "--chunk-positions", "100")),
            ("--vocab-chunk 1000", ("--vocab-chunk", "1000"))]
variants += [("--kernel " + k, ("--kernel", k)) for k in KERNELS]
for label, fl in variants:
    t = time.time()
    rc, out, o, (r,) = compare(BWR, BWC1, *fl, tag="bw")
    case("tokenwise bit-identical: %s (%.1fs)" % (label, time.time() - t), rc == 0 and tw_sha(o) == BASE_SHA,
         "rc=%d sha=%s want %s\n%s" % (rc, tw_sha(o), BASE_SHA, out[-1500:]))
rc, out, o2, (r2,) = compare(BWR, BWC2, tag="bw-c2")
rc, out, both, (rb1, rb2) = compare(BWR, [BWC1, BWC2], tag="bw-both")
case("two candidates in one run = each alone (per-candidate tokenwise sha)",
     rc == 0 and tw_sha(both, 0) == BASE_SHA and tw_sha(both, 1) == tw_sha(o2) and BASE_SHA != tw_sha(o2),
     "rc=%d %s/%s %s/%s\n%s" % (rc, tw_sha(both, 0), BASE_SHA, tw_sha(both, 1), tw_sha(o2), out[-1500:]))
bw_base_r = load(os.path.join(bw_base, "comparison-receipt.json")) if BASE_SHA else None
case("two candidates: receipts carry the single runs' statistics",
     rb1 is not None and rb2 is not None and get(rb2, "kl") == get(r2, "kl") and
     get(rb1, "kl") == get(bw_base_r, "kl") and get(rb1, "per_context") == get(bw_base_r, "per_context"))

# the scalar emulation is slow: prove it against every SIMD path on a smaller pair
SC = ("--records", "3", "--tokens", "24", "--hidden", "256", "--vocab", "4000")
SCR = fixture("sc-ref", "--seed", "13", base=SC)
SCC = fixture("sc-cand", "--seed", "13", "--noise-seed", "5", "--perturb", "0.05", base=SC)
t = time.time()
rc, out, so, _ = compare(SCR, SCC, "--kernel", "scalar", tag="scalar")
SCALAR_SHA = tw_sha(so)
case("scalar kernel baseline (%.1fs)" % (time.time() - t), rc == 0 and SCALAR_SHA is not None, out)
for k in KERNELS:
    rc, out, o, _ = compare(SCR, SCC, "--kernel", k, "--threads", "1", "--chunk-positions", "5", tag="k")
    case("tokenwise bit-identical: scalar vs %s" % k, rc == 0 and tw_sha(o) == SCALAR_SHA, out[-1500:])


# ======================================================================================
# 4. numpy oracle
# ======================================================================================
print("== 4. numpy oracle")


def read_st(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def bf16_tensor(path, key):
    """bf16 widened exactly (uint16 << 16 viewed as fp32), as dscompare.load_tensor does."""
    hdr, body = read_st(path)
    t = hdr[key]
    s, e = t["data_offsets"]
    assert t["dtype"] == "BF16"
    u = np.frombuffer(body[s:e], dtype="<u2").astype(np.uint32) << 16
    return u.view(np.float32).reshape(t["shape"])


def log_softmax64(x):
    """Two-pass fp64 log-softmax over the full vocabulary (max, then log-sum-exp)."""
    x = x.astype(np.float64)
    s = x - x.max(axis=1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))


def kl64(lr, lc):
    return (np.exp(lr) * (lr - lc)).sum(axis=1)


if np is None:
    print("compare: numpy not installed, numpy checks skipped")
elif base is None:
    case("numpy oracle needs the baseline receipt", False)
else:
    V = 3000
    cap = load(os.path.join(REF, "capture/manifest.json"))
    tw = np.load(tokenwise(BASE_OUT))
    case("tokenwise-kld.npy: 1-D '<f8' of every scored position", tw.dtype == np.dtype("<f8") and tw.shape == (SMALL_N,))
    # (a) the estimator on our own canonical logits (fidelity debug-logits)
    at, worst = 0, 0.0
    for rec in sorted(cap["records"], key=lambda r: r["index"]):
        i, rows = rec["index"], rec["scored_rows"]
        fr, fc = os.path.join(WORK, "lr.f32"), os.path.join(WORK, "lc.f32")
        rc1, o1 = fid("debug-logits", REF, str(i), fr)
        rc2, o2 = fid("debug-logits", CAND, str(i), fc)
        if rc1 or rc2:
            case("debug-logits context %d" % i, False, o1 + o2)
            continue
        lr_, lc_ = np.fromfile(fr, "<f4").reshape(rows, V), np.fromfile(fc, "<f4").reshape(rows, V)
        ref_kl = kl64(log_softmax64(lr_), log_softmax64(lc_))
        ours = tw[at:at + rows]
        at += rows
        d = np.abs(ours - ref_kl)
        worst = max(worst, float(d.max()))
        case("estimator context %d: |dKL| <= 1e-12 + 1e-9*KL on all %d rows" % (i, rows),
             bool(np.all(d <= 1e-12 + 1e-9 * np.abs(ref_kl))), "max |d| %.3e" % d.max())
        agree = float(np.mean(lr_.argmax(axis=1) == lc_.argmax(axis=1)))   # first maximum on ties
        pc = [c for c in base["per_context"] if c["index"] == i][0]
        case("top-1 context %d: numpy argmax agreement == receipt (%.4f)" % (i, agree),
             pc["top1_agreement"] == agree, "receipt %r" % pc["top1_agreement"])
    note("estimator max |dKL| vs numpy fp64 two-pass log-softmax: %.3e nats" % worst)
    # (b) end to end against the QFS default numpy path: fp32 GEMM h @ W.T, fp64 log-softmax.
    # The fp32 GEMM's summation order (BLAS) differs from our canonical bf16 pair order by
    # design (docs/NUMERICS.md), so only the mean KL is held to 1e-3 relative; the per-position
    # difference is reported, not asserted.
    W = bf16_tensor(os.path.join(REF, "head/weight.safetensors"), "lm_head.weight")
    ccap = load(os.path.join(CAND, "capture/manifest.json"))
    kls, tops_np, n = [], 0, 0
    for rr, rc_ in zip(sorted(cap["records"], key=lambda r: r["index"]),
                       sorted(ccap["records"], key=lambda r: r["index"])):
        hr = bf16_tensor(os.path.join(REF, "capture", rr["file"]), "hidden_states")
        hc = bf16_tensor(os.path.join(CAND, "capture", rc_["file"]), "hidden_states")
        lr_, lc_ = (hr @ W.T).astype(np.float32), (hc @ W.T).astype(np.float32)
        kls.append(kl64(log_softmax64(lr_), log_softmax64(lc_)))
        tops_np += int(np.sum(lr_.argmax(axis=1) == lc_.argmax(axis=1)))
        n += lr_.shape[0]
    kn = np.concatenate(kls)
    rel = abs(float(kn.mean()) - base["kl"]["mean"]) / float(kn.mean())
    case("end to end vs numpy fp32 GEMM: mean KL within 1e-3 relative (%.2e)" % rel, rel <= 1e-3,
         "numpy %.9e ours %.9e" % (kn.mean(), base["kl"]["mean"]))
    note("end to end: max per-position |dKL| %.3e nats; top-1 numpy %.4f vs ours %.4f"
         % (float(np.abs(kn - tw).max()), tops_np / n, base["top1_agreement"]))
    # (c) the statistics are numpy's own (mean is pairwise, quantiles linear)
    kl = base["kl"]
    case("kl block == numpy mean/quantile(linear)/max of the tokenwise array",
         kl["mean"] == float(tw.mean()) and kl["max"] == float(tw.max()) and
         [kl[k] for k in ("median", "p95", "p99", "p99_9")] ==
         [float(np.quantile(tw, q)) for q in (0.5, 0.95, 0.99, 0.999)], kl)
    at, okc = 0, True
    for c in base["per_context"]:
        s = tw[at:at + c["scored_rows"]]
        at += c["scored_rows"]
        okc &= c["mean"] == float(s.mean()) and c["max"] == float(s.max())
    case("per_context mean/max == numpy over each context's slice", okc)


# ======================================================================================
# 5. receipts
# ======================================================================================
print("== 5. receipts")
rc, out, _, (small,) = compare(REF, fixture("p001", "--seed", "5", "--noise-seed", "6", "--perturb", "0.01"), tag="p001")
rc2, out2, _, (large,) = compare(REF, fixture("p01", "--seed", "5", "--noise-seed", "6", "--perturb", "0.1"), tag="p01")
case("ordering: --perturb 0.01 < --perturb 0.1 (both strict, exit 0)",
     rc == 0 and rc2 == 0 and small and large and get(small, "comparability.class") == "strict" and
     get(large, "comparability.class") == "strict" and 0 < small["kl"]["mean"] < large["kl"]["mean"],
     "%s %s" % (get(small, "kl.mean"), get(large, "kl.mean")))

KEY_RE = re.compile(r"^cmp--[0-9a-f]{16}$")
bad = []
for p in RECEIPTS:
    r = load(p)
    tp = os.path.join(os.path.dirname(p), "tokenwise-kld.npy")
    problems = []
    if r["tokenwise"]["sha256"] != sha_file(tp) or r["tokenwise"]["bytes"] != os.path.getsize(tp):
        problems.append("tokenwise binding")
    if not (r["metric"]["value"] == r["kl"]["mean"] == r["kl_micro_token_mean"]):
        problems.append("metric.value/kl.mean/kl_micro_token_mean")
    if not (len(r["per_context"]) == r["panel"]["contexts"] == r["measurement_scope"]["contexts"]):
        problems.append("per_context length")
    if sum(c["scored_rows"] for c in r["per_context"]) != r["measurement_scope"]["scored_positions"]:
        problems.append("scored positions")
    if r["metric"]["direction"] != "reference_to_candidate" or r["metric"]["units"] != "nats":
        problems.append("metric")
    if r["comparison_kind"] == "measurement":
        if not KEY_RE.match(r["comparability"]["key"] or ""):
            problems.append("comparability.key")
        u = r["uncertainty"]
        if r["measurement_scope"]["contexts"] >= 2 and not (
                u["method"] == "context_cluster_bootstrap" and u["ci95_low"] <= r["kl"]["mean"] <= u["ci95_high"]):
            problems.append("uncertainty %r" % u)
    if any(d["severity"] == "blocking" for d in r["disclosures"]) and r["comparability"]["class"] != "advisory":
        problems.append("a blocking disclosure on a strict receipt")
    if r["comparability"]["usable_as_floor"] and (r["comparability"]["class"] != "strict" or
                                                  not r["comparability"]["same_lane"]):
        problems.append("usable_as_floor")
    rcv, outv = fid("validate", "--receipt", p)
    if rcv != 0:
        problems.append("validate rc=%d %s" % (rcv, outv.strip()[-300:]))
    if problems:
        bad.append("%s: %s" % (os.path.relpath(p, WORK), "; ".join(problems)))
case("all %d receipts: validate exit 0, tokenwise binding, metric/kl/per_context/key/CI consistent"
     % len(RECEIPTS), RECEIPTS and not bad, "\n      " + "\n      ".join(bad))

# a hand edit breaks the seal; a resealed -0.0 is still refused
edited = os.path.join(WORK, "edited-receipt.json")
r = load(os.path.join(BASE_OUT, "comparison-receipt.json"))
r["metric"]["value"] = r["metric"]["value"] * 0.5
dump(edited, r)
rc, out = fid("validate", "--receipt", edited)
case("hand-edited metric.value -> validate exit 3, seal_failed", rc == 3 and "seal_failed" in out, out)
if sc_out:
    r = load(os.path.join(sc_out, "comparison-receipt.json"))
    r["kl"]["max"] = -0.0
    seal(r, "receipt_sha256")
    dump(edited, r)
    rc, out = fid("validate", "--receipt", edited)
    case("resealed SC-1 receipt with kl.max -0.0 -> validate exit 3 (not a seal failure)",
         rc == 3 and "seal_failed" not in out, out)
# --json prints the canonical receipt on stdout
rc, out = fid("compare", "--reference", REF, "--candidate", CAND, "--out", new_out("json"), "--json")
docs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
case("--json prints the receipt (same seal as the file)",
     rc == 0 and len(docs) == 1 and docs[0]["receipt_sha256"] == seal(dict(docs[0]), "receipt_sha256")["receipt_sha256"]
     and docs[0]["kl"] == base["kl"], out[-1500:])

# ======================================================================================
# 6. Jensen-Shannon (--js): numpy oracle, invariance, exact zero on a self-compare
# ======================================================================================
print("== 6. --js")
js_blocks = []
for tag, flags in (("t1", ("--threads", "1")), ("t3", ("--threads", "3", "--chunk-positions", "5"))) + \
        tuple(("k-" + k, ("--kernel", k)) for k in KERNELS):
    rc, out, _, rs = compare(REF, [CAND], "--js", *flags, tag="js-" + tag)
    r = rs[0]
    js_blocks.append(r.get("js") if r else None)
    case("--js %s: exit 0, js block present" % tag, rc == 0 and r and isinstance(r.get("js"), dict), out)
case("--js block identical for every thread count, block size and kernel path",
     all(b == js_blocks[0] for b in js_blocks) and js_blocks[0] is not None, js_blocks)
if np is not None and js_blocks[0]:
    V = 3000
    vals = []
    for rec in sorted(load(os.path.join(REF, "capture/manifest.json"))["records"], key=lambda r: r["index"]):
        fr, fc = os.path.join(WORK, "jr.f32"), os.path.join(WORK, "jc.f32")
        fid("debug-logits", REF, str(rec["index"]), fr)
        fid("debug-logits", CAND, str(rec["index"]), fc)
        lr_ = log_softmax64(np.fromfile(fr, "<f4").reshape(rec["scored_rows"], V))
        lc_ = log_softmax64(np.fromfile(fc, "<f4").reshape(rec["scored_rows"], V))
        p_, q_ = np.exp(lr_), np.exp(lc_)
        lm = np.log((p_ + q_) / 2)
        vals.append(0.5 * (p_ * (lr_ - lm)).sum(axis=1) + 0.5 * (q_ * (lc_ - lm)).sum(axis=1))
    jn = np.concatenate(vals)
    d = abs(float(jn.mean()) - js_blocks[0]["mean"])
    case("--js mean vs numpy two-pass fp64 JS: |d| <= 1e-12 + 1e-9*JS (%.2e)" % d,
         d <= 1e-12 + 1e-9 * float(jn.mean()), "numpy %.15e ours %.15e" % (jn.mean(), js_blocks[0]["mean"]))
    case("--js max vs numpy: |d| <= 1e-12 + 1e-9*max", abs(float(jn.max()) - js_blocks[0]["max"]) <= 1e-12 + 1e-9 * float(jn.max()))
rc, out, _, rs = compare(REF, [fixture("ref-js-twin", "--seed", "5")], "--js", "--self-compare", "--force-compute", tag="js-sc")
r = rs[0]
case("--js on a force-computed self-compare: every js statistic is exactly +0.0",
     rc == 0 and r and all(v == 0.0 and not str(v).startswith("-") for v in r["js"].values()), out)

shutil.rmtree(WORK, ignore_errors=True)
passed = sum(results)
print("compare: %d passed, %d failed (%.1fs)" % (passed, len(results) - passed, time.time() - T0))
sys.exit(0 if passed == len(results) else 1)
