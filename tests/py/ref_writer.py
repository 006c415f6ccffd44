#!/usr/bin/env python3
"""Test oracle: write a small, complete, sealed `malaiwah.fidelity-dataset.v1` tree.

Stdlib only.  Mirrors what the Python tool's hf_capture + DatasetWriter write for a hidden-form
ROOT capture on lane "other" (FORMAT.md s2 layout, s3 seal chain): same files, keys, digests and
byte layout.  Values are synthetic (seeded Gaussians rounded to BF16).  Deterministic for a given
--seed except created_utc and cold_run; --fixed-time pins those too.

usage: ref_writer.py OUTDIR [--records N] [--tokens L] [--hidden H] [--vocab V]
                            [--seed S] [--fixed-time] [--emit-k3-compat] [--force]

--emit-k3-compat writes compat/ before the seal as the Python tool's k3compat.emit does
(the emitter is tests/py/k3_ref.py) and records its interop keys.
"""
import argparse, hashlib, json, math, os, random, shutil, struct, sys, time

DATASET = "malaiwah.fidelity-dataset.v1"
CAPTURE = "malaiwah.fidelity-capture-manifest.v1"
PANEL = "malaiwah.fidelity-panel-binding.v1"
HEAD = "malaiwah.fidelity-head-identity.v1"
RUNTIME = "malaiwah.fidelity-capture-runtime.v1"
VALIDATION = "malaiwah.fidelity-structural-validation.v1"
CUT = "after_final_rmsnorm_before_lm_head"
NATIVE_CLASSES = ("embed_tokens", "attn.qkv", "attn.o", "mlp.gate", "mlp.up", "mlp.down",
                  "moe.experts", "norm", "lm_head")
NATIVE_DIGEST = ("attn.o=native:bf16@16|attn.qkv=native:bf16@16|embed_tokens=native:bf16@16|"
                 "lm_head=native:bf16@16|mlp.down=native:bf16@16|mlp.gate=native:bf16@16|"
                 "mlp.up=native:bf16@16|moe.experts=native:bf16@16|norm=native:bf16@16|"
                 "head=native|kv=bf16")
CHECKPOINT_ALGO = ("sha256 over the canonical JSON {\"algorithm\": <this string>, \"files\": "
                   "[{\"name\", \"size\", \"sha256\"}, ...]} of every *.safetensors shard plus "
                   "config.json in the checkpoint directory, sorted by name")
DIVERGENCES = [  # dsmanifest.DIVERGENCES: fixed descriptive data, D-1 .. D-10
    ("D-1", "head", "every capture declares its OWN head identity by tensor content digest; the comparator refuses a hidden-form comparison across differing heads."),
    ("D-2", "runtime.lane", "lane is required and gated at compare time so registry BIAS-006 is checked before a number exists, not at submission."),
    ("D-3", "panel.scoring_window", "scoring_window is part of panel identity, not a comparator flag: a score_from=1024 number is a different panel, not a variant."),
    ("D-4", "comparison_kind", "self-compare is a first-class mode asserting exactly 0.0."),
    ("D-5", "estimator.accumulation_dtype", "required, fp64 default; an fp32 estimator lands in a different comparability class on the same data and that must be visible."),
    ("D-6", "coverage", "declared vs present record counts with shard_of; fixes our own manifest that claimed 5,120 captures in a 512-file repository."),
    ("D-7", "panel", "the panel is a separately referenceable object, which is what makes a candidate capture publishable standalone."),
    ("D-8", "capture.lossy_codec", "lets a llama.cpp .kld be ingested without laundering a lossy capture as exact."),
    ("D-9", "capture.records[].attention_mask_sha256", "our packed and streaming lanes vary mask construction; a single-request capture path makes it invariant and has no equivalent field."),
    ("D-10", "capture.head_separable", "hidden form is the default; logit form must declare head_separable:false with a reason."),
]


def sha(data):
    return hashlib.sha256(data).hexdigest()


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def seal(doc, field):
    """Self-blanked seal: sha256 of the canonical JSON with `field` set to ""."""
    body = dict(doc)
    body[field] = ""
    out = dict(doc)
    out[field] = sha(canonical(body))
    return out


def pretty(obj):
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def compact_ids(ids):
    return json.dumps(list(ids), separators=(",", ":")).encode("utf-8")


def bf16_values(rng, count, scale):
    """Seeded Gaussian values, rounded float32 -> bf16 (round to nearest even), LE bytes."""
    out = bytearray()
    for _ in range(count):
        bits = struct.unpack("<I", struct.pack("<f", rng.gauss(0.0, scale)))[0]
        out += struct.pack("<H", (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)
    return bytes(out)


def safetensors(key, shape, raw, metadata=None):
    header = {key: {"dtype": "BF16", "shape": list(shape), "data_offsets": [0, len(raw)]}}
    if metadata:
        header["__metadata__"] = dict(metadata)
    encoded = json.dumps(header, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return struct.pack("<Q", len(encoded)) + encoded + raw


def tensor_digests(blob, key):
    """(file_sha256, payload_sha256, tensor_content_sha256) from the file bytes."""
    n = struct.unpack("<Q", blob[:8])[0]
    start, stop = json.loads(blob[8:8 + n].decode("utf-8"))[key]["data_offsets"]
    return sha(blob), sha(blob[8 + n:]), sha(blob[8 + n + start:8 + n + stop])


def npy_ones_int64(length):
    """numpy .npy format v1.0 of int64 ones, shape (length,), 64-byte aligned header."""
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d,), }" % length
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin-1")
            + struct.pack("<%dq" % length, *([1] * length)))


def scope_digest(scope):
    def bpw(bits):
        return str(int(bits)) if float(bits).is_integer() else repr(float(bits))
    segments = sorted("%s=%s:%s%s" % (a["tensor_class"], a["treatment"], a["format"],
                                      "" if a.get("bits_per_weight") is None
                                      else "@" + bpw(a["bits_per_weight"]))
                      for a in scope["assignments"])
    return "|".join(segments) + "|head=%s|kv=%s" % (scope["head_policy"], scope["kv_cache_dtype"])


def recorded_probe(rng, vocab):
    """A 'recorded' generation sanity probe over synthetic logits (exercises float output)."""
    logits = [rng.gauss(0.0, 2.0) for _ in range(vocab)]
    top = max(logits)
    weights = [math.exp(x - top) for x in logits]
    total = sum(weights)
    probs = [w / total for w in weights]
    order = sorted(range(vocab), key=lambda i: (-probs[i], i))[:min(5, vocab)]
    return {"schema": "malaiwah.generation-sanity-probe.v1",
            "prompt": "The capital of France is", "expect": None, "vocab_size": vocab,
            "top1_id": order[0], "top1_text": "<tok:%d>" % order[0],
            "top1_probability": probs[order[0]],
            "top_k": [{"id": i, "text": "<tok:%d>" % i, "probability": probs[i]} for i in order],
            "entropy_nats": -sum(p * math.log(max(p, 1e-300)) for p in probs),
            "uniform_entropy_nats": math.log(vocab), "logit_spread": max(logits) - min(logits),
            "degenerate": False, "status": "recorded", "enforced": False,
            "note": "one extra window through the same schedule; its hidden state is "
                    "discarded and never enters the dataset."}


def put(root, rel, data):
    """Write one member (creating its folder) and return its file sha256."""
    os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
    with open(os.path.join(root, rel), "wb") as handle:
        handle.write(data)
    return sha(data)


def dataset_files(root):
    """Every file under root except the two the seal excludes, as sorted POSIX relpaths."""
    found = [os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")
             for d, _, files in os.walk(root) for f in files]
    return sorted(r for r in found if r not in ("checksums.txt", "fidelity-dataset.json"))


def build(out, args):
    rng = random.Random(args.seed)
    n_rec, length, hidden, vocab = args.records, args.tokens, args.hidden, args.vocab
    if args.fixed_time:
        created, cold_run = "2026-01-01T00:00:00Z", "20260101T000000Z-0"
    else:
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        cold_run = "%s-%d" % (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), os.getpid())
    tag = "s%d-r%d-l%d-h%d-v%d" % (args.seed, n_rec, length, hidden, vocab)
    dataset_id = "fidelity--ref-writer.synthetic-%s.hidden" % tag
    model_repo = "synthetic/ref-writer-model"
    revision = sha(("revision:" + tag).encode())[:40]
    panel_id = "panel--ref-writer.synthetic-%s" % tag

    # 1. payload files: tokens, masks, capture tensors (per window), then the head.
    mask = npy_ones_int64(length)
    rows = length - 1  # all-ones mask: causal = mask[:-1] & mask[1:] keeps the first L-1 rows
    panel_records, capture_records = [], []
    for index in range(n_rec):
        ids = [rng.randrange(vocab) for _ in range(length)]
        window_id = "final-%04d" % index
        token_rel = "panel/tokens/context-%04d.json" % index
        mask_rel = "panel/masks/context-%04d.npy" % index
        put(out, token_rel, compact_ids(ids))
        mask_sha = put(out, mask_rel, mask)
        blob = safetensors("hidden_states", [rows, hidden], bf16_values(rng, rows * hidden, 1.0),
                           {"capture_role": "hidden_states_pre_lm_head", "cut_point": CUT,
                            "window_id": window_id, "cold_run": cold_run, "dtype": "bfloat16"})
        name = "hidden_%04d.safetensors" % index
        put(out, "capture/" + name, blob)
        file_sha, payload_sha, content_sha = tensor_digests(blob, "hidden_states")
        tok_sha, tok_legacy = sha(compact_ids(ids)), sha(json.dumps(ids).encode("utf-8"))
        common = {"index": index, "context_index": index, "window_index": index,
                  "window_id": window_id, "token_ids_json_sha256": tok_sha,
                  "token_ids_sha256_legacy": tok_legacy, "attention_mask_sha256": mask_sha,
                  "prediction_positions": rows, "role": "final", "domain": "synthetic",
                  "document_id": "doc-%04d" % index, "allocation_stratum": None,
                  "semantic_class": None, "source_cluster_id": None}
        panel_records.append(dict(common, token_file=token_rel, token_ids_first16=ids[:16],
                                  token_ids_last16=ids[-16:], num_tokens=len(ids),
                                  attention_mask_file=mask_rel, partition=None, sentinel=False))
        capture_records.append(dict(common, file=name, key="hidden_states", dtype="BF16",
                                    shape=[rows, hidden], size_bytes=len(blob), sha256=file_sha,
                                    payload_sha256=payload_sha, tensor_content_sha256=content_sha,
                                    scored_rows=rows, elapsed_seconds=round(rng.uniform(0.05, 3.0), 3),
                                    request_id=None, raw_chunks_retained=False))
    head_blob = safetensors("lm_head.weight", [vocab, hidden], bf16_values(rng, vocab * hidden, 0.02))
    head_file_sha = put(out, "head/weight.safetensors", head_blob)
    head_content = tensor_digests(head_blob, "lm_head.weight")[2]
    probe = recorded_probe(rng, vocab)

    # 2. derived identities.
    per_record = [r["token_ids_json_sha256"] for r in panel_records]
    suite = sha("\n".join(per_record).encode("ascii"))
    suite_legacy = sha("".join(per_record).encode("utf-8"))
    content_digest = sha("\n".join("%d:%s" % (r["index"], r["tensor_content_sha256"])
                                   for r in capture_records).encode("ascii"))
    scope = {"policy": "native", "head_policy": "native", "kv_cache_dtype": "bf16",
             "assignments": [{"tensor_class": c, "treatment": "native", "format": "bf16",
                              "bits_per_weight": 16, "layer_range": None} for c in NATIVE_CLASSES]}
    scope["scope_digest"] = scope_digest(scope)
    assert scope["scope_digest"] == NATIVE_DIGEST
    config = pretty({"architectures": ["SyntheticForCausalLM"], "hidden_size": hidden,
                     "torch_dtype": "bfloat16", "vocab_size": vocab})
    ckpt_files = [{"name": "config.json", "size": len(config), "sha256": sha(config)},
                  {"name": "model.safetensors", "size": len(head_blob), "sha256": head_file_sha}]
    ckpt_identity = sha(json.dumps({"algorithm": CHECKPOINT_ALGO, "files": ckpt_files},
                                   sort_keys=True, separators=(",", ":")).encode("utf-8"))
    fingerprint = {"schema": "malaiwah.stack-fingerprint.v1", "engine": "transformers-eager",
                   "torch_version": "2.11.0+cpu", "device": "cpu", "device_name": None,
                   "cuda_runtime_version": None, "attention_backend": "model default",
                   "numeric_policy": "default torch matmul precision; no TF32 override applied",
                   "transformers_version": "5.16.1"}
    stack_sha = sha(json.dumps(fingerprint, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    lane_sha = sha(("other|%s|%s" % (fingerprint["torch_version"], None)).encode("utf-8"))
    scoring = {"score_from": 0, "windowed": False, "min_left_context_tokens": 1,
               "dropped_positions_total": 0,
               "policy": "every causal prediction position of every window is scored; nothing is dropped"}
    tokenizer = {"id": model_repo, "repository": model_repo, "revision": None, "vocab_size": vocab,
                 "add_special_tokens": False, "chat_template_applied": False}
    contamination = {"checked": False, "method": "not established", "hits": None, "receipt": None}
    coverage = {"declared_records": n_rec, "present_records": n_rec, "complete": True,
                "index_range": [0, n_rec - 1], "shard_of": None, "subset_detail": None,
                "missing_indices_sample": []}
    total_rows = rows * n_rec
    total_size = sum(r["size_bytes"] for r in capture_records)
    final_norm = {"file": None, "tensor_key": None, "shape": None, "dtype": None,
                  "file_sha256": None, "tensor_content_sha256": None,
                  "applied_in_capture": True, "applied_at_replay": False}

    # 3. the sub-manifests (sealed as they are written, in DatasetWriter.finish order).
    panel_doc = seal({"schema": PANEL, "format_version": 1, "receipt_sha256": "",
                      "panel_id": panel_id, "name": "token panel %s" % panel_id,
                      "suite_token_hash_sha256": suite, "panel_token_sha256_legacy": suite_legacy,
                      "token_digest_algorithm": {
                          "per_record": "sha256(json.dumps(ids, separators=(',',':')).encode('utf-8'))",
                          "aggregate": "sha256('\\n'.join(per_record_hex).encode('ascii'))",
                          "legacy_per_record": "sha256(json.dumps(ids).encode('utf-8'))",
                          "legacy_aggregate": "sha256(''.join(per_record_hex).encode('utf-8'))"},
                      "repository": None, "revision": None, "panel_receipt_sha256": None,
                      "contexts": n_rec, "context_length": length, "positions_per_context": rows,
                      "scored_positions_total": total_rows, "scoring_window": scoring,
                      "tokenizer": tokenizer, "contamination": contamination, "strata": {},
                      "records": panel_records}, "receipt_sha256")
    capture_tool_sha = sha(b"synthetic:engines/tools/hf_capture.py")
    runtime_doc = seal({
        "schema": RUNTIME, "format_version": 1, "receipt_sha256": "", "lane": "other",
        "lane_inferred": False, "lane_identity_sha256": lane_sha,
        "lane_identity_inputs": ["torch_version", "cuda_runtime_version", "device_name",
                                 "grouped_mm_kernel", "numeric_policy", "attention_backend",
                                 "experts_implementation", "parallelism", "ep_emulate",
                                 "reduce_order"],
        "stack_fingerprint": fingerprint, "stack_fingerprint_sha256": stack_sha,
        "container": {"image_digest": None, "image_reference": None, "image_repository_digest": None},
        "runtime_environment": {"python": "3.12.3", "cold_run": cold_run},
        "source_files": {"engines/tools/hf_capture.py": capture_tool_sha,
                         "bin/fidelity/panel.py": sha(b"synthetic:bin/fidelity/panel.py")},
        "capture_tool": {"file": "engines/tools/hf_capture.py", "sha256": capture_tool_sha,
                         "version": "hf_capture/1", "wraps": [], "schedule": "window-outer",
                         "unexpected_tensor_allowlist": None, "weights_license": None,
                         "resolved_panel_binding": None, "parallel_plan_dropped": False,
                         "layer_residency": None, "mechanism": "transformers forward pass; "
                         "forward pre-hook on model.get_output_embeddings()"},
        "weights": {"repository": model_repo, "revision": revision, "model_revision": revision,
                    "checkpoint_identity_sha256": ckpt_identity,
                    "checkpoint_identity_algorithm": CHECKPOINT_ALGO, "checkpoint_files": ckpt_files},
        "upstream_receipts": []}, "receipt_sha256")
    head_block = {"present": True, "file": "head/weight.safetensors", "tensor_key": "lm_head.weight",
                  "compat_tensor_key": "weight", "shape": [vocab, hidden], "dtype": "BF16",
                  "bias": None, "file_sha256": head_file_sha, "raw_tensor_sha256": head_content,
                  "tensor_content_sha256": head_content, "quantized": False, "bits": 16,
                  "source": "native", "applied_in_capture": False, "final_norm": final_norm,
                  "equality_receipt": None}
    head_doc = seal(dict(head_block, schema=HEAD, format_version=1, receipt_sha256="",
                         note="the head is shipped verbatim from the checkpoint so a third party "
                              "can replay logits = hidden @ head^T without the weights"),
                    "receipt_sha256")

    # 4. the top-level manifest (before the README, which the card is rendered from).
    manifest = {
        "schema": DATASET, "format_version": 1, "dataset_sha256": "", "created_utc": created,
        "dataset": {"id": dataset_id, "name": "ref_writer synthetic root (%s)" % tag,
                    "role": "root", "structural_status": "sealed", "qualification": None,
                    "author": {"name": "ref-writer", "role": "capture-author", "handle": None,
                               "url": None, "is_registry_maintainer": False},
                    "license": "mit", "repository": None, "revision": None, "base_capture": None},
        "weights": {"repository": model_repo, "revision": revision, "model_revision": revision,
                    "quantized": False, "checkpoint_identity_sha256": ckpt_identity,
                    "config_sha256": sha(config), "index_sha256": None, "artifact_ref": None,
                    "model_ref": None, "codec": None, "declared_bits": None, "declared_head_bits": 16},
        "scope": scope,
        "panel": {"panel_id": panel_id, "panel_file": "panel/panel.json", "panel_file_sha256": "0" * 64,
                  "suite_token_hash_sha256": suite, "panel_token_sha256_legacy": suite_legacy,
                  "panel_receipt_sha256": None, "repository": None, "revision": None,
                  "contexts": n_rec, "context_length": length, "scored_positions_total": total_rows,
                  "scoring_window": scoring, "tokenizer": tokenizer, "remap_file": None,
                  "contamination": contamination},
        "capture": {"manifest_file": "capture/manifest.json", "manifest_file_sha256": "0" * 64,
                    "capture_content_digest": content_digest, "form": "hidden",
                    "semantic_point": CUT, "tensor_key": "hidden_states", "dtype": "BF16",
                    "dtype_lossless": True, "hidden_width": hidden, "vocab_size": vocab,
                    "head_separable": True, "head_not_separable_reason": None,
                    "records_count": n_rec, "scored_rows_total": total_rows,
                    "total_size_bytes": total_size, "lossy_codec": None},
        "head": dict(head_block, head_json="head/head.json"),
        "runtime": {"file": "runtime/capture-runtime.json", "file_sha256": "0" * 64, "lane": "other",
                    "lane_inferred": False, "lane_identity_sha256": lane_sha,
                    "stack_fingerprint_sha256": stack_sha, "backend_identity_sha256": None,
                    "runtime_reader_sha256": None, "source": "native"},
        "determinism": {"run_count": 1, "cold_start_per_run": True,
                        "evidence_kind": "hidden_state_tensor_sha256",
                        "evidence_hashes": [content_digest], "distinct_evidence_hash_count": 1,
                        "identical_across_runs": None, "repeats": [], "repeat_noise": None,
                        "note": "a single cold capture; cross-run determinism is NOT asserted here. "
                                "Capture a second cold run and run `fidelity-dataset compare "
                                "--self-compare` -- an exactly 0.0 result is the SC-1 reproduction "
                                "confirmation."},
        "coverage": coverage,
        "seal": None,  # set by the seal chain below
        "interop": {"compatible_with": ["kimi-k3-distribution-fidelity/1"], "k3_compat_emitted": False,
                    "adapted_from": None, "note": None,
                    "divergences": [{"id": i, "field": f, "reason": r} for i, f, r in DIVERGENCES]},
        "upstream_receipts": [],
        "disclosures": [
            {"code": "no_known_deviations", "severity": "info", "affects_comparability": False,
             "detail": "captured by engines/tools/hf_capture.py"},
            {"code": "reduced_run_count", "severity": "caveat", "affects_comparability": False,
             "detail": "this dataset is ONE cold capture (run_count 1, the DET-D4 floor is 5). "
                       "Cross-run determinism is not asserted by the dataset; it is established by "
                       "a second cold capture plus `fidelity-dataset compare --self-compare`, whose "
                       "exactly-0.0 result is the SC-1 reproduction confirmation."}],
        "generation_sanity_probe": probe,
    }
    readme = ("---\nlicense: mit\ntags:\n- fidelity\n- kl-divergence\n- fidelity-provenance\n"
              "- fidelity-dataset\n- fidelity-root\nx_fidelity:\n  spec_version: fidelity-provenance/v1\n"
              "  role: fidelity-dataset\n  fidelity_dataset:\n    id: %s\n"
              "    capture_content_digest: '%s'\n  seal:\n    dataset_sha256: null\n"
              "    checksums_sha256: null\n---\n# %s\n\nA **root** fidelity dataset in **hidden form**"
              " written by tests/py/ref_writer.py (synthetic values, seed %d).\n\n| | |\n|---|---|\n"
              "| records | %d |\n| scored positions | %d |\n| context length | %d |\n"
              "| hidden width | %d |\n| vocab size | %d |\n" % (
                  dataset_id, content_digest, manifest["dataset"]["name"], args.seed,
                  n_rec, total_rows, length, hidden, vocab))
    put(out, "README.md", readme.encode("utf-8"))

    # 5. seal chain: panel, runtime, head, capture, validation, checksums, manifest.
    manifest["panel"]["panel_file_sha256"] = put(out, "panel/panel.json", pretty(panel_doc))
    runtime_sha = put(out, "runtime/capture-runtime.json", pretty(runtime_doc))
    manifest["runtime"]["file_sha256"] = runtime_sha
    put(out, "head/head.json", pretty(head_doc))
    capture_doc = seal({"schema": CAPTURE, "format_version": 1, "receipt_sha256": "",
                        "created_utc": created, "run_name": "hf-capture", "form": "hidden",
                        "semantic_point": CUT, "tensor_key": "hidden_states", "dtype": "BF16",
                        "dtype_lossless": True, "hidden_width": hidden, "vocab_size": vocab,
                        "context_length": length, "scored_rows_per_context": rows,
                        "total_scored_rows": total_rows, "total_size_bytes": total_size,
                        "capture_content_digest": content_digest,
                        "runtime_manifest": "../runtime/capture-runtime.json",
                        "runtime_manifest_sha256": runtime_sha, "coverage": coverage,
                        "records": capture_records}, "receipt_sha256")
    manifest["capture"]["manifest_file_sha256"] = put(out, "capture/manifest.json", pretty(capture_doc))
    if args.emit_k3_compat:
        import k3_ref
        files, update = k3_ref.emit(panel_doc, capture_doc, manifest["capture"], "head/weight.safetensors",
                                    manifest["dataset"]["name"])
        for rel, data in files.items():
            put(out, rel, data)
        manifest["interop"].update(update)
    put(out, "validation/structural-validation.json", pretty(seal({
        "schema": VALIDATION, "format_version": 1, "receipt_sha256": "",
        "subject": "dataset:%s" % dataset_id, "structural_status": "sealed",
        "checks_run": ["pre-seal"], "errors": [], "warnings": [], "error_count": 0,
        "warning_count": 0}, "receipt_sha256")))
    lines = ["%s  %s" % (sha(open(os.path.join(out, rel), "rb").read()), rel) for rel in dataset_files(out)]
    checksums = ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")
    manifest["seal"] = {
        "method": "self_blanked_canonical_json_sha256", "seal_field": "dataset_sha256",
        "checksums_file": "checksums.txt", "checksums_format": "sha256sum",
        "checksums_sha256": put(out, "checksums.txt", checksums),
        "covers": ["every published file except checksums.txt and fidelity-dataset.json, via checksums.txt",
                   "fidelity-dataset.json itself, via the self-blanked seal",
                   "every capture tensor a second time by CONTENT, via capture.capture_content_digest"],
        "excludes": ["checksums.txt", "fidelity-dataset.json"], "external_anchor": None}
    manifest = seal(manifest, "dataset_sha256")
    put(out, "fidelity-dataset.json", pretty(manifest))
    return manifest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    for flag, default in (("--records", 3), ("--tokens", 16), ("--hidden", 64), ("--vocab", 256),
                          ("--seed", 0)):
        parser.add_argument(flag, type=int, default=default)
    parser.add_argument("--fixed-time", action="store_true",
                        help="pin created_utc and cold_run so the whole tree is reproducible")
    parser.add_argument("--force", action="store_true", help="replace an existing OUTDIR")
    parser.add_argument("--emit-k3-compat", action="store_true", help="also write the compat/ kimi-k3 view")
    args = parser.parse_args(argv)
    if args.records < 1 or args.tokens < 2 or args.hidden < 1 or args.vocab < 1:
        parser.error("need --records >= 1, --tokens >= 2, --hidden >= 1, --vocab >= 1")
    if os.path.lexists(args.outdir):
        if not args.force:
            parser.error("%s exists (pass --force to replace it)" % args.outdir)
        shutil.rmtree(args.outdir)
    manifest = build(args.outdir, args)
    print("dataset_sha256 %s" % manifest["dataset_sha256"])
    print("capture_content_digest %s" % manifest["capture"]["capture_content_digest"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
