# Registry submission cases, run inside test_card.py (shares its helpers and
# datasets): SC-3/SC-4/SC-5 refusals, the sealed submission's values equal
# the receipt's, nothing written on a refusal.
tmpl = json.load(open(prov))
check("template lists every SC-4 field empty",
      all(tmpl[b][k] in ("", {}) for b, ks in (("artifact", ("repository", "revision", "container", "codec", "scope",
                                                             "producer")),
                                               ("panel", ("panel_ref", "panel_token_sha256")),
                                               ("reference", ("reference_ref", "teacher_receipt_sha256")))
          for k in ks), tmpl)
out_dir = os.path.join(WORK, "sub-missing")
rc, out, err = fid("compare", "--reference", REF, "--candidate", CAND, "--out", out_dir, "--emit-submission",
                   "--submission-provenance", prov)
check("SC-4: empty provenance refused, all ten fields named, no submission file",
      rc == 3 and refusal(out) == ("missing_provenance", "SC-4") and "10 required field(s)" in out
      and os.path.isfile(os.path.join(out_dir, "comparison-receipt.json"))
      and not os.path.exists(os.path.join(out_dir, "submission-receipt.json")), out + err)
filled = dict(tmpl)
filled["artifact"] = {"repository": "acme/model-int4", "revision": "a" * 40, "container": "safetensors",
                      "codec": "rtn-int4", "producer": "fidelity quantize",
                      "scope": json.load(open(os.path.join(CAND, "fidelity-dataset.json")))["scope"]}
filled["panel"] = {"panel_ref": "panel--fidelity.synthetic", "panel_token_sha256": r["panel"]["suite_token_hash_sha256"]}
filled["reference"] = {"reference_ref": "reference--fixture", "teacher_receipt_sha256": "b" * 64}
filled["measurer"] = {"handle": "tester", "contact": None}
pf = os.path.join(WORK, "prov-filled.json")
json.dump(filled, open(pf, "w"), indent=2)
out_dir = os.path.join(WORK, "sub-ok")
rc, out, err = fid("compare", "--reference", REF, "--candidate", CAND, "--out", out_dir, "--emit-submission",
                   "--submission-provenance", pf, "--measurer", "tester")
sp = os.path.join(out_dir, "submission-receipt.json")
ok = rc == 0 and os.path.isfile(sp)
check("filled provenance: submission-receipt.json written", ok, out + err)
if ok:
    sub = json.load(open(sp))
    rec = json.load(open(os.path.join(out_dir, "comparison-receipt.json")))
    body = dict(sub); body["receipt_sha256"] = ""
    import hashlib
    want = {
        "schema": (sub["schema"], "quant-fidelity-registry/submission-receipt.v1"),
        "seal recomputes": (sub["receipt_sha256"], hashlib.sha256(json.dumps(
            body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()),
        "metric value": (sub["metric"]["value"], rec["metric"]["value"]),
        "top1": (sub["auxiliary_metrics"]["top1_agreement"], rec["top1_agreement"]),
        "p999": (sub["auxiliary_metrics"]["p999_kld"], rec["kl"]["p99_9"]),
        "float32 -> fp32": (sub["estimator"]["logits_dtype"], "fp32"),
        "scope digest as the dataset's": (sub["artifact"]["scope_digest"], rec["candidate"]["scope_digest"]),
        "evidence by dataset seal": ([e["sha256"] for e in sub["evidence"]],
                                     [rec["reference"]["dataset_sha256"], rec["candidate"]["dataset_sha256"]]),
        "unpublished evidence is no host path": (all(not e["uri"].startswith("/") for e in sub["evidence"]), True),
        "determinism projected (no stddev)": ("population_stddev_of_run_means" in sub["determinism"], False),
        "measurer": (sub["measurer"]["handle"], "tester"),
        "lane": (sub["lane"], rec["candidate"]["lane"]),
    }
    bad = {k: v for k, v in want.items() if v[0] != v[1]}
    check("submission carries the receipt's values, sealed with the receipt recipe", not bad, bad)
out_dir = os.path.join(WORK, "sub-self")
rc, out, err = fid("compare", "--reference", REF, "--candidate", REF + "-copy", "--self-compare", "--out", out_dir,
                   "--emit-submission", "--submission-provenance", pf)
check("SC-3: a reproduction confirmation never becomes a submission",
      rc == 3 and refusal(out) == ("not_a_measurement", "SC-3")
      and not os.path.exists(os.path.join(out_dir, "submission-receipt.json")), out + err)
teacher = dict(filled)
teacher["artifact"] = dict(filled["artifact"], capture_role="bf16_teacher")
tf2 = os.path.join(WORK, "prov-teacher.json")
json.dump(teacher, open(tf2, "w"))
out_dir = os.path.join(WORK, "sub-teacher")
rc, out, err = fid("compare", "--reference", REF, "--candidate", CAND, "--out", out_dir, "--emit-submission",
                   "--submission-provenance", tf2)
check("assert_submittable: a bf16_teacher marker is refused", rc == 3 and refusal(out)[0] == "not_submittable", out)
# SC-5 (a blocking disclosure) is a C unit test (tests/c/test_hub.c): this comparator emits no blocking
# disclosure on the fixtures, and a receipt edited by hand is not what compare submits.
