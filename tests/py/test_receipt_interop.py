#!/usr/bin/env python3
"""Comparison receipts and the Python tool (issue 16, items 4 and 5).

1. Receipts written the way the Python tool (malaiwah/quant-fidelity-suite,
   bin/fidelity/dscompare.py::build_receipt) writes them today -- every block and
   field it emits, `gates.decode` included, a panel id declared verbatim by a
   panel.json -- pass `fidelity validate --receipt`; and the receipt it
   published (tests/vectors/python-receipts/) does too.  The validator is still
   closed where the schema is: an unknown gate, a bad seal, a null panel id
   pattern breach still refuse.
2. A dataset whose panel id is the panel.json's declared id (what the Python
   capture writes) verifies, and the dataset manifest the Python tool published
   (tests/vectors/python-datasets/) validates.
3. Our receipts spell what theirs spell: estimator.hidden_dtype / logits_dtype
   are the capture dtype lower-cased ("bf16", "f32") or the replay dtype
   ("float32"), the head_applied_* triple follows theirs (null single field
   under --own-heads and for two logit-form sides), gates.decode is present,
   the scoring_window block is the dataset's whole block, side weights are the
   manifest's weights block, empty per_domain/per_stratum are null, and the
   hash proof records no vocab chunk or position block.
usage: test_receipt_interop.py BINARY"""
import copy, json, os, shutil, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dsutil import load, dump, reseal, run, seal

BIN = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "vectors", "python-receipts")
WORK = tempfile.mkdtemp(prefix="fd-rcpt-interop-")
SAN_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
results = []


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-70s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[-2000:]))
    return ok


def fid(*args):
    rc, out = run(BIN, *args)
    if any(m in out for m in SAN_MARKERS):
        case("sanitizer-clean: " + " ".join(os.path.basename(str(a)) for a in args)[:80], False, out[-3000:])
    return rc, out


def validate_doc(doc, name):
    path = os.path.join(WORK, name + ".json")
    dump(path, doc)
    return fid("validate", "--receipt", path)


H = lambda c: (c * 64)[:64]          # a sha256-shaped hex string


# --- 1. receipts built the way the Python tool builds them --------------------------------
def side(label, form, dsha, ccd, head):
    """dscompare.Dataset.side_block: the manifest's weights block verbatim."""
    return {
        "label": label, "dataset_id": "fidelity--tiny.%s" % label, "dataset_sha256": dsha,
        "capture_content_digest": ccd, "role": "root" if label == "reference" else "quant", "form": form,
        "lane": "other", "repository": None, "revision": None,
        "head": {"tensor_content_sha256": head, "raw_tensor_sha256": head, "quantized": False, "bits": 16,
                 "source": "native"},
        "stack_fingerprint_sha256": H("5"), "lane_identity_sha256": H("6"),
        "weights": {"artifact_ref": None, "checkpoint_identity_sha256": H("7"), "codec": None,
                    "config_sha256": H("8"), "declared_bits": None, "declared_head_bits": 16, "index_sha256": None,
                    "model_ref": None, "model_revision": "a1a973330e4e912678adbd8ea41e8b86b1c9dccb",
                    "quantized": label != "reference", "repository": "malaiwah/tiny-random-bf16",
                    "revision": "a1a973330e4e912678adbd8ea41e8b86b1c9dccb"},
        "scope_digest": "head=native|kv=bf16",
    }


def gate(detail, passed=True, by=None):
    return {"passed": passed, "detail": detail, "overridden_by": by}


def python_receipt(kind="measurement", forms=("hidden", "hidden"), policy="shared_reference_head",
                   capture_dtype="BF16", panel_id="panel--tiny.malaiwah.cpu-smoke-v1", decode_detail=None,
                   short_circuit=False, klass="strict", disclosures=None):
    """One receipt in the shape dscompare.build_receipt writes (quant-fidelity-suite)."""
    ha, hb = H("a"), (H("a") if policy != "native_head" or kind != "measurement" else H("b"))
    ca, cb = H("c"), (H("c") if kind == "reproduction_confirmation" else H("d"))
    any_hidden = "hidden" in forms
    replay = None if not any_hidden else ("none" if short_circuit else "numpy:cpu:float32")
    replayed = bool(replay) and replay != "none"
    if forms == ("logit", "logit"):
        applied = ref_applied = cand_applied = None
    elif policy == "native_head":                 # HEAD-1d: each side through its own head
        applied, ref_applied, cand_applied = None, ha, hb
    else:
        applied = ref_applied = cand_applied = ha
    zero = kind == "reproduction_confirmation"
    mean = 0.0 if zero else 0.0123
    stats = {k: (0.0 if zero else v) for k, v in
             dict(mean=mean, median=0.01, p95=0.03, p99=0.05, p99_9=0.07, max=0.09).items()}
    ctx = [{"index": i, "window_id": "final-%04d" % i, "scored_rows": 63, "mean": stats["mean"],
            "max": stats["max"], "domain": "garden", "allocation_stratum": None} for i in range(4)]
    tok = {"id": "malaiwah/tiny-random-bf16", "repository": "malaiwah/tiny-random-bf16", "revision": None,
           "vocab_size": 260, "add_special_tokens": False, "chat_template_applied": False}
    gates = {
        "seal": gate("both manifests self-seal and checksums.txt verified"),
        "form": gate("%s vs %s" % forms),
        "panel": gate("suite_token_hash_sha256 equal; 4 shared records"),
        "head": gate("HEAD-1d: own heads on both sides" if policy == "native_head" else "HEAD-1a: identical head"),
        "lane": gate("lane=other vs other"),
        "stack": gate("lane_identity equal / stack_fingerprint equal -> same_stack"),
        "geometry": gate("vocab_size 260 equal; hidden_width 64"),
        "coverage": gate("4 of 4/4 declared records shared"),
        "lossy": gate("lossy_codec null on both sides"),
        "decode": gate(decode_detail or "weights_decode reference none; candidate none"),
    }
    r = {
        "schema": "malaiwah.fidelity-comparison-receipt.v1", "format_version": 1, "receipt_sha256": "",
        "created_utc": "2026-09-07T18:01:11Z", "comparison_kind": kind,
        "reference": side("reference", forms[0], H("1"), ca, ha),
        "candidate": side("candidate", forms[1], H("1") if zero else H("2"), cb, hb),
        "panel": {"panel_id": panel_id, "suite_token_hash_sha256": H("e"), "panel_token_sha256_legacy": H("f"),
                  "contexts": 4, "scored_positions": 252, "context_length": 64,
                  "scoring_window": {"score_from": 0, "windowed": False, "min_left_context_tokens": 1,
                                     "dropped_positions_total": 0,
                                     "policy": "every causal prediction position of every window is scored; "
                                               "nothing is dropped"},
                  "tokenizer": tok, "tokenizer_reference": tok, "tokenizer_candidate": dict(tok),
                  "tokenizer_identity_equal": True},
        "gates": gates,
        "comparator": {
            "device": "none" if short_circuit else "cpu", "accumulation_dtype": "float64",
            "logprob_dtype": "float64", "two_pass": True, "vocab_chunk": None,
            "position_block": None if short_circuit else 512, "replay_backend": replay,
            "replay_env": {"library": "numpy", "numpy_version": "2.5.3", "blas_name": "scipy-openblas",
                           "blas_version": "0.3.34", "blas_configuration": "OpenBLAS 0.3.34 Haswell",
                           "blas_threads": 2, "blas_threads_source": "ctypes:openblas_get_num_threads",
                           "cpu_model": "x86", "replay_dtype": "float32"} if replayed else None,
            "replay_peak_device_bytes": None, "tf32": False, "deterministic_algorithms": True,
            "bf16_reduced_precision_reduction": False, "cublas_workspace_config": None,
            "head_applied_tensor_content_sha256": applied,
            "head_applied_reference_tensor_content_sha256": ref_applied,
            "head_applied_candidate_tensor_content_sha256": cand_applied,
            "tensor_content_digests_verified": True, "source_file_hashes_verified": True,
            "short_circuited": short_circuit,
            "estimator_backend": "hash_proof" if short_circuit else "numpy_fp64",
            "tool": {"entrypoint": "bin/fidelity-dataset compare", "note": "the fp64 estimator"},
        },
        "metric": {"name": "mean_tokenwise_kld", "value": stats["mean"], "units": "nats",
                   "direction": "reference_to_candidate", "direction_label": "KL(reference || candidate)",
                   "higher_is_better": False},
        "kl": stats, "top1_agreement": 1.0 if zero else 0.97, "kl_micro_token_mean": stats["mean"],
        "kl_macro_stratum_mean": None, "per_stratum": None,
        "per_domain": None if short_circuit else {"garden": stats["mean"]},
        "context_depth_buckets": None if short_circuit else {"0000-0255": stats["mean"]},
        "per_context": ctx, "high_kld_contexts": ctx[:5], "top1_discordant_contexts": [],
        "uncertainty": {"method": "none", "ci95_low": None, "ci95_high": None, "clusters": None, "samples": None,
                        "cluster_unit": None, "seed": None},
        "estimator": {
            "accumulation_dtype": "float64",
            "logits_dtype": "float32" if replayed else capture_dtype.lower(),
            "hidden_dtype": capture_dtype.lower() if any_hidden else None,
            "two_pass": True, "vocab_chunk": None, "stack_relation": "same_stack", "head_policy": policy,
            "softmax_note": "full vocabulary, torch.log_softmax in float64; no truncation, no top-k, no clamp.",
            "zero_handling": "exact zero asserted, not rounded" if zero else None,
        },
        "determinism": {"run_count": 1, "cold_start_per_run": None, "run_means": [stats["mean"]],
                        "population_stddev_of_run_means": 0.0, "min_run_mean": stats["mean"],
                        "max_run_mean": stats["mean"], "identical_across_runs": None,
                        "evidence_kind": "hidden_state_tensor_sha256" if forms[0] == "hidden"
                        else "logits_tensor_sha256",
                        "evidence_hashes": sorted({ca, cb}), "distinct_evidence_hash_count": len({ca, cb}),
                        "note": "one comparison of two sealed captures."},
        "measurement_scope": {"scored_positions": 252, "contexts": 4, "positions_per_context": 63,
                              "covers_full_panel": True, "subset_detail": None, "position_filter": "all"},
        "comparability": {"class": klass, "usable_as_floor": klass == "strict", "same_lane": True, "key": None,
                          "key_inputs": None, "bias": None},
        "tokenwise": {"path": "tokenwise-kld.npy", "bytes": 2144, "sha256": H("9")},
        "self_compare": None,
        "submission": {"emitted": False, "path": None, "receipt_sha256": None, "submission_schema": None,
                       "refusal": None if kind == "measurement" else
                       "comparison_kind is %s, not measurement" % kind},
        "disclosures": disclosures or [{"code": "no_known_deviations", "severity": "info",
                                        "affects_comparability": False, "detail": "none"}],
    }
    if kind in ("reproduction_confirmation", "run_to_run_floor"):
        r["self_compare"] = {"capture_content_digest_equal": ca == cb, "weights_identity_equal": True,
                             "head_digest_equal": ha == hb, "asserted_exact_zero": zero,
                             "force_compute_agreed": None, "expected_tokenwise_bytes": 2144,
                             "expected_tokenwise_sha256": H("9")}
    return seal(r, "receipt_sha256")


PY_CASES = [
    ("measurement, shared head, hidden/hidden", python_receipt()),
    ("measurement, own heads (HEAD-1d), weights_reconstructed decode caveat",
     python_receipt(policy="native_head", klass="advisory",
                    decode_detail="weights_decode reference none; candidate fp8-block-dequant-to-bf16",
                    disclosures=[{"code": "weights_reconstructed", "severity": "caveat",
                                  "affects_comparability": True, "detail": "candidate was reconstructed"},
                                 {"code": "native_head_replay", "severity": "info",
                                  "affects_comparability": False, "detail": "HEAD-1d"}])),
    ("measurement, logit/logit (f32 captures, no replay)",
     python_receipt(forms=("logit", "logit"), policy="native_head", capture_dtype="F32")),
    ("SC-1 hash proof, decode gate self-compare exemption",
     python_receipt(kind="reproduction_confirmation", short_circuit=True,
                    decode_detail="self-compare: both sides are the same artifact; the weights-decode caveats "
                                  "apply to a measurement against a reference, not to SC-1")),
    ("panel id declared verbatim by panel.json (no panel-- prefix)",
     python_receipt(panel_id="fixture-tiny-seed7")),
]
for name, doc in PY_CASES:
    rc, out = validate_doc(doc, "py-" + str(len(results)))
    case("Python-shaped receipt validates: " + name, rc == 0, out)

for f in sorted(os.listdir(VECTORS)):
    if f.endswith(".json"):
        rc, out = fid("validate", "--receipt", os.path.join(VECTORS, f))
        case("receipt the Python tool published validates: " + f, rc == 0, out)
        doc = load(os.path.join(VECTORS, f))
        case("  ... and it carries gates.decode (the block the old schema refused)", "decode" in doc["gates"])

DS_VECTORS = os.path.join(HERE, "..", "vectors", "python-datasets")
for f in sorted(os.listdir(DS_VECTORS)):
    if f.endswith(".json"):
        rc, out = fid("validate", "--manifest-only", os.path.join(DS_VECTORS, f))
        case("dataset manifest the Python tool published validates: " + f, rc == 0, out)

# still closed: an unknown gate, a broken seal, a non-string/empty panel id
bad = python_receipt()
bad["gates"]["bogus"] = gate("not a gate of the ladder")
rc, out = validate_doc(seal(bad, "receipt_sha256"), "bad-gate")
case("an unknown gate name is still refused (schema_invalid)", rc == 3 and "schema_invalid" in out, out)
bad = python_receipt()
bad["gates"]["decode"] = {"detail": "no verdict"}
rc, out = validate_doc(seal(bad, "receipt_sha256"), "bad-decode")
case("a decode gate without its verdict is refused", rc == 3 and "schema_invalid" in out, out)
bad = python_receipt()
bad["panel"]["panel_id"] = ""
rc, out = validate_doc(seal(bad, "receipt_sha256"), "empty-panel-id")
case("an empty panel id is refused", rc == 3 and "schema_invalid" in out, out)
bad = python_receipt()
bad["estimator"]["hidden_dtype"] = "fp8"
rc, out = validate_doc(bad, "bad-seal")
case("an edited Python receipt fails its seal", rc == 3 and "seal_failed" in out, out)


# --- 2. a dataset with a declared (un-prefixed) panel id verifies ----------------------------
SMALL = ("--records", "3", "--tokens", "24", "--hidden", "32", "--vocab", "300", "--fixed-time")


def fixture(name, *args):
    root = os.path.join(WORK, name)
    rc, out = fid("write-fixture", "--out", root, *(SMALL + tuple(args)))
    if rc != 0:
        case("write-fixture " + name, False, out)
        raise SystemExit(1)
    return root


REF = fixture("ref", "--seed", "3")
decl = os.path.join(WORK, "declared-panel-id")
shutil.copytree(REF, decl)


def set_pid(doc):
    doc["panel_id"] = "fixture-tiny-seed7"


reseal(decl, manifest_edit=lambda m: m["panel"].update(panel_id="fixture-tiny-seed7"),
       sub_edits={"panel/panel.json": set_pid})
rc, out = fid("verify", decl)
case("a dataset whose panel id is the panel.json's own (Python capture) verifies", rc == 0, out)


# --- 3. our receipts spell what the Python tool spells ---------------------------------------
CAND = fixture("cand", "--seed", "3", "--noise-seed", "4", "--perturb", "0.02", "--role", "quant")
HEADS = fixture("heads", "--seed", "3", "--head-seed", "77", "--noise-seed", "4", "--perturb", "0.02",
                "--role", "quant")
REF2 = os.path.join(WORK, "ref-copy")
shutil.copytree(REF, REF2)


def compare(tag, *args):
    out_dir = os.path.join(WORK, "cmp-" + tag)
    rc, out = fid("compare", "--out", out_dir, "--no-bootstrap", *args)
    path = os.path.join(out_dir, "comparison-receipt.json")
    r = load(path) if os.path.isfile(path) else None
    if r is not None:
        vrc, vout = fid("validate", "--receipt", path)
        case("%s: our receipt validates" % tag, vrc in (0, 2), vout)
    return rc, out, r


def get(r, dotted):
    for k in dotted.split("."):
        r = r.get(k) if isinstance(r, dict) else None
    return r


refm, candm = load(os.path.join(REF, "fidelity-dataset.json")), load(os.path.join(CAND, "fidelity-dataset.json"))
rc, out, r = compare("hidden", "--reference", REF, "--candidate", CAND)
if case("hidden vs hidden compare runs", r is not None and rc in (0, 2), out):
    case("estimator.hidden_dtype is the capture dtype lower-cased ('bf16')",
         get(r, "estimator.hidden_dtype") == refm["capture"]["dtype"].lower() == "bf16", get(r, "estimator"))
    case("estimator.logits_dtype of a replay is 'float32'", get(r, "estimator.logits_dtype") == "float32")
    case("gates carries decode (a verdict)", isinstance(get(r, "gates.decode.passed"), bool), get(r, "gates"))
    case("shared head: the three head_applied fields name the one head",
         get(r, "comparator.head_applied_tensor_content_sha256")
         == get(r, "comparator.head_applied_reference_tensor_content_sha256")
         == get(r, "comparator.head_applied_candidate_tensor_content_sha256")
         == refm["head"]["tensor_content_sha256"], get(r, "comparator"))
    case("panel.scoring_window is the dataset's whole block",
         get(r, "panel.scoring_window") == refm["panel"]["scoring_window"],
         (get(r, "panel.scoring_window"), refm["panel"]["scoring_window"]))
    case("side weights are the manifest's weights block",
         get(r, "reference.weights") == refm["weights"] and get(r, "candidate.weights") == candm["weights"],
         (get(r, "reference.weights"), refm["weights"]))
    recs = load(os.path.join(REF, refm["capture"]["manifest_file"]))["records"]
    pan = load(os.path.join(REF, refm["panel"]["panel_file"])).get("records") or []
    if not any(x.get("domain") for x in recs + pan):
        case("no domains: per_domain is null, not {}", get(r, "per_domain") is None, get(r, "per_domain"))
    else:
        case("domains present: per_domain is an object", isinstance(get(r, "per_domain"), dict))
    case("no strata: per_stratum is null, not {}", get(r, "per_stratum") is None, get(r, "per_stratum"))
    case("source_file_hashes_verified follows --verify-tensors (the default)",
         get(r, "comparator.source_file_hashes_verified") is True
         and get(r, "comparator.tensor_content_digests_verified") is True, get(r, "comparator"))

rc, out, r = compare("own-heads", "--reference", REF, "--candidate", HEADS, "--own-heads")
if case("--own-heads compare runs", r is not None and rc in (0, 2), out):
    hm = load(os.path.join(HEADS, "fidelity-dataset.json"))
    case("--own-heads: head_applied_tensor_content_sha256 is null (each side its own head)",
         get(r, "comparator.head_applied_tensor_content_sha256") is None, get(r, "comparator"))
    case("--own-heads: the reference/candidate fields name each side's head",
         get(r, "comparator.head_applied_reference_tensor_content_sha256") == refm["head"]["tensor_content_sha256"]
         and get(r, "comparator.head_applied_candidate_tensor_content_sha256") == hm["head"]["tensor_content_sha256"])

rc, out, r = compare("own-heads-equal", "--reference", REF, "--candidate", CAND, "--own-heads")
if case("--own-heads on equal heads runs", r is not None and rc in (0, 2), out):
    case("--own-heads on equal heads is HEAD-1d (native_head), as the Python tool orders the gate",
         get(r, "estimator.head_policy") == "native_head"
         and get(r, "comparator.head_applied_tensor_content_sha256") is None
         and get(r, "comparator.head_applied_reference_tensor_content_sha256")
         == get(r, "comparator.head_applied_candidate_tensor_content_sha256") == refm["head"]["tensor_content_sha256"],
         (get(r, "estimator.head_policy"), get(r, "comparator")))

hm = load(os.path.join(HEADS, "fidelity-dataset.json"))
rc, out, r = compare("substituted", "--reference", REF, "--candidate", HEADS, "--disclose-head-substitution",
                     "--head", os.path.join(HEADS, hm["head"]["file"]))
if case("--disclose-head-substitution --head runs", r is not None and rc == 2, out):
    case("substituted head: the three head_applied fields name the --head file's content digest",
         get(r, "comparator.head_applied_tensor_content_sha256")
         == get(r, "comparator.head_applied_reference_tensor_content_sha256")
         == get(r, "comparator.head_applied_candidate_tensor_content_sha256") == hm["head"]["tensor_content_sha256"],
         get(r, "comparator"))

rc, out, r = compare("sc1", "--reference", REF, "--candidate", REF2, "--self-compare")
if case("SC-1 hash proof runs", r is not None and rc == 0, out):
    case("hash proof: logits_dtype is the capture dtype ('bf16'), no replay",
         get(r, "estimator.logits_dtype") == "bf16" and get(r, "comparator.replay_backend") == "none",
         get(r, "estimator"))
    case("hash proof: no vocab chunk and no position block were used",
         get(r, "comparator.position_block") is None and get(r, "comparator.vocab_chunk") is None,
         get(r, "comparator"))
    case("hash proof: gates.decode records the self-compare exemption",
         "self-compare" in (get(r, "gates.decode.detail") or ""), get(r, "gates.decode"))

# logit-form: our .kld export of each, adapted back (F32 log-probs, no replay)
kr, kc = os.path.join(WORK, "ref.kld"), os.path.join(WORK, "cand.kld")
ok = all(fid("export", "--format", "llamacpp-kld", "--dataset", d, "--out", k)[0] == 0 for d, k in ((REF, kr), (CAND, kc)))
ar, ac = os.path.join(WORK, "ad-ref"), os.path.join(WORK, "ad-cand")
ok = ok and all(fid("adapt", "--source", "llamacpp-kld", "--in", k, "--out", a, "--tokenizer-id", "t")[0] == 0
                for k, a in ((kr, ar), (kc, ac)))
if case("logit-form datasets adapted from .kld exports", ok):
    arm = load(os.path.join(ar, "fidelity-dataset.json"))
    rc, out, r = compare("logit", "--reference", ar, "--candidate", ac)
    if case("logit vs logit compare runs", r is not None and rc in (0, 2), out):
        case("logit form: logits_dtype is the capture dtype lower-cased (%r)" % arm["capture"]["dtype"].lower(),
             get(r, "estimator.logits_dtype") == arm["capture"]["dtype"].lower(), get(r, "estimator"))
        case("logit form: hidden_dtype is null", get(r, "estimator.hidden_dtype") is None)
        case("logit form: no head applied (all three head_applied fields null)",
             all(get(r, "comparator.%s" % k) is None for k in
                 ("head_applied_tensor_content_sha256", "head_applied_reference_tensor_content_sha256",
                  "head_applied_candidate_tensor_content_sha256")), get(r, "comparator"))

shutil.rmtree(WORK, ignore_errors=True)
failed = results.count(False)
print("%d checks, %d failed" % (len(results), failed))
sys.exit(1 if failed else 0)
