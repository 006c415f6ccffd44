#!/usr/bin/env python3
"""MPI as the distributed engine (issue 9, part 2).

usage: test_mpi.py BIN_MPI [BIN_SINGLE]

BIN_MPI is build-mpi/fidelity (`make mpi`); BIN_SINGLE (default
build/fidelity) is the single-process build whose results are the yardstick;
build-mpi/fidelity-testhooks (beside BIN_MPI) kills a rank mid-capture.

- compare under `mpirun -np 1/2/3/7 --oversubscribe`: tokenwise-kld.npy and
  the sealed receipt are byte-identical to the single-process run (pinned
  --created-utc and --threads), also with two candidates and --js; a refusal
  exits 3 on every rank without hanging;
- capture under `mpirun -np 1/2/3`: one verified shard per rank with
  coverage.shard_of, `fidelity merge` seals a dataset with the single-process
  capture_content_digest and the same identity blocks (also with
  --schedule layer-outer, and for an FP8-block checkpoint with its scope and
  disclosures);
- resume: a deleted shard is recaptured while the others are reused
  untouched; a rank killed by SIGKILL after one window leaves a .partial
  directory and no sealed shard, and the rerun completes to the same digest;
- merge refuses a missing shard, shards of two different runs, a dataset
  that is not a shard, and an existing destination; a foreign shard in the
  way is refused by capture;
- the MPI binary started without mpirun is a plain single-process tool.
Prints a skip line and exits 0 when mpirun is not installed.
"""
import glob, hashlib, json, os, shutil, subprocess, sys, tempfile

if not shutil.which("mpirun"):
    print("mpirun not installed (apt-get install openmpi-bin libopenmpi-dev): MPI tests skipped")
    sys.exit(0)

MPI = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build-mpi/fidelity"
ONE = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.abspath("build/fidelity")
HOOKS = os.path.join(os.path.dirname(MPI), "fidelity-testhooks")
WORK = tempfile.mkdtemp(prefix="fd-mpi-")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1")
UTC = "2026-01-02T03:04:05Z"
passed = failed = 0


def case(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, str(detail)[-1500:]))


def W(*p):
    return os.path.join(WORK, *p)


def run(cmd, env=ENV, timeout=300):
    try:
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=WORK, env=env, timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as x:
        return 124, "TIMEOUT %s" % x


def mpirun(n, *args, binary=None, env=ENV):
    flags = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    return run(["mpirun"] + flags + ["-np", n, binary or MPI] + list(args), env=env)


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def manifest(ds, sub="fidelity-dataset.json"):
    return json.load(open(os.path.join(ds, sub)))


VOLATILE = {"created_utc", "dataset_sha256", "receipt_sha256", "file_sha256", "manifest_file_sha256", "checksums_sha256",
            "runtime_manifest_sha256", "cold_run", "sha256", "elapsed_seconds", "size_bytes", "total_size_bytes"}


def stable(v):
    """A manifest without what legitimately differs between two cold runs."""
    if isinstance(v, dict):
        return {k: stable(x) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [stable(x) for x in v]
    return v


try:
    # ---------------------------------------------------------------- compare
    fx = ("--records", "5", "--tokens", "40", "--hidden", "64", "--vocab", "3000", "--fixed-time")
    ok = all(run([ONE, "write-fixture", "--out", W(n), *fx, "--seed", "1", *extra])[0] == 0 for n, extra in
             (("ref", ()), ("cand", ("--perturb", "0.05", "--noise-seed", "3")), ("cand2", ("--perturb", "0.2", "--noise-seed", "9"))))
    case("write-fixture reference and two candidates", ok)
    # the kernel path is pinned: by default each run takes the fastest measured at
    # start-up, and the receipt names it (the numbers are the same on every path)
    base = ["compare", "--reference", "ref", "--candidate", "cand", "--threads", "2", "--created-utc", UTC, "--kernel", "scalar"]
    rc, out = run([ONE] + base + ["--out", "c-one"])
    case("single-process compare", rc == 0, out)
    want_npy, want_rc = sha(W("c-one", "tokenwise-kld.npy")), open(W("c-one", "comparison-receipt.json"), "rb").read()
    for n in (1, 2, 3, 7):
        rc, out = mpirun(n, *base, "--out", "c-%d" % n)
        ok = rc == 0 and os.path.exists(W("c-%d" % n, "tokenwise-kld.npy"))
        case("mpirun -np %d compare exits 0" % n, ok, out)
        if ok:
            case("-np %d: tokenwise sha256 == single process" % n, sha(W("c-%d" % n, "tokenwise-kld.npy")) == want_npy)
            got = open(W("c-%d" % n, "comparison-receipt.json"), "rb").read()
            case("-np %d: receipt byte-identical to single process" % n, got == want_rc,
                 [k for k, v in json.loads(got).items() if json.loads(want_rc).get(k) != v])
    free = [a for a in base if a not in ("--kernel", "scalar")]
    rc, out = mpirun(3, *free, "--out", "c-free")
    case("-np 3 with the default (measured) kernel path: the same tokenwise bytes and statistics",
         rc == 0 and sha(W("c-free", "tokenwise-kld.npy")) == want_npy and
         json.load(open(W("c-free", "comparison-receipt.json")))["kl"] == json.loads(want_rc)["kl"], out)
    multi = ["compare", "--reference", "ref", "--candidate", "cand", "--candidate", "cand2", "--js", "--threads", "1",
             "--created-utc", UTC, "--kernel", "scalar"]
    rc1, o1 = run([ONE] + multi + ["--out", "m-one"])
    rc3, o3 = mpirun(3, *multi, "--out", "m-3")
    same = rc1 == rc3 == 0 and all(
        open(a, "rb").read() == open(b, "rb").read()
        for a, b in zip(sorted(glob.glob(W("m-one", "*", "*"))), sorted(glob.glob(W("m-3", "*", "*")))))
    case("-np 3, two candidates with --js: every output file byte-identical", same and len(glob.glob(W("m-3", "*", "*"))) >= 4,
         o1 + o3)
    rc, out = mpirun(3, "compare", "--reference", "ref", "--candidate", "ref", "--out", "c-same")
    case("-np 3 refusal (same_root): exit 3 on the ranks, no hang, nothing written",
         rc == 3 and "REFUSED [same_root]" in out and out.count("REFUSED") == 1 and not os.path.exists(W("c-same")), out)

    # ---------------------------------------------------------------- capture
    rc, out = run([ONE, "fixture", "--preset", "tiny", "--seed", "5", "--out", "tiny"])
    case("tiny fixture", rc == 0, out)
    cap = ["capture", "--model", "tiny", "--panel", "tiny/panel", "--role", "root", "--lane", "other",
           "--dataset-id", "test.mpi", "--dataset-name", "mpi", "--threads", "1"]
    rc, out = run([ONE] + cap + ["--out", "single"])
    case("single-process capture", rc == 0, out)
    D = manifest(W("single"))["capture"]["capture_content_digest"]
    windows = manifest(W("single"))["coverage"]["declared_records"]

    def shards(out, t):
        return [W("%s.shard-%d-of-%d" % (out, r, t)) for r in range(t)]

    def merge_and_check(label, out, t):
        rc, o = run([ONE, "merge", *shards(out, t), "--out", out + "-merged"])
        ok = rc == 0 and manifest(W(out + "-merged"))["capture"]["capture_content_digest"] == D
        case("%s: merge -> capture_content_digest == single process" % label, ok, o)
        if ok:
            case("%s: the merged dataset verifies" % label, run([ONE, "verify", out + "-merged"])[0] == 0)
            same = all(stable(manifest(W(out + "-merged"), f)) == stable(manifest(W("single"), f)) for f in
                       ("fidelity-dataset.json", "capture/manifest.json", "panel/panel.json", "runtime/capture-runtime.json",
                        "head/head.json"))
            case("%s: manifests equal the single-process ones up to time, cold run and container digests" % label, same)

    for n in (1, 2, 3):
        rc, out = mpirun(n, *cap, "--out", "s%d" % n)
        t = min(n, windows)
        ok = rc == 0 and all(os.path.isdir(p) for p in shards("s%d" % n, t))
        case("mpirun -np %d capture: %d sealed shard(s)" % (n, t), ok, out)
        if not ok:
            continue
        cov = [manifest(p)["coverage"] for p in shards("s%d" % n, t)]
        case("-np %d: shard_of {index r, total %d, stride 1}, contiguous index ranges covering 0..%d" % (n, t, windows - 1),
             [c["shard_of"]["index"] for c in cov] == list(range(t)) and all(c["shard_of"]["total"] == t and
             c["shard_of"]["stride"] == 1 and c["complete"] is False or t == 1 for c in cov) and
             cov[0]["index_range"][0] == 0 and cov[-1]["index_range"][1] == windows - 1 and
             all(cov[i]["index_range"][1] + 1 == cov[i + 1]["index_range"][0] for i in range(t - 1)), cov)
        case("-np %d: every shard verifies (--allow-partial)" % n,
             all(run([ONE, "verify", "--allow-partial", p])[0] == 0 for p in shards("s%d" % n, t)))
        merge_and_check("-np %d" % n, "s%d" % n, t)

    rc, out = mpirun(3, *cap, "--schedule", "layer-outer", "--out", "lo")
    case("mpirun -np 3 capture --schedule layer-outer: 3 shards", rc == 0, out)
    if rc == 0:
        merge_and_check("layer-outer -np 3", "lo", 3)
    # a quantized checkpoint: its scope, codec, bits and weight-only disclosures travel through the merge
    rc, out = run([ONE, "quantize", "--src", "tiny", "--dst", "tinyfp8", "--format", "fp8-block"])
    qcap = [a if a not in ("tiny", "root") else {"tiny": "tinyfp8", "root": "quant"}[a] for a in cap]
    rc1, o1 = run([ONE] + qcap + ["--out", "qsingle"])
    rc2, o2 = mpirun(2, *qcap, "--out", "q")
    rc3, o3 = run([ONE, "merge", *shards("q", 2), "--out", "q-merged"])
    ok = rc == rc1 == rc2 == rc3 == 0
    case("fp8-block checkpoint: -np 2 shards merge to the single-process digest, scope and disclosures",
         ok and manifest(W("q-merged"))["capture"]["capture_content_digest"] ==
         manifest(W("qsingle"))["capture"]["capture_content_digest"] and
         stable(manifest(W("q-merged"))) == stable(manifest(W("qsingle"))), out + o1 + o2 + o3)

    # ----------------------------------------------------------------- resume
    before = {p: manifest(p)["dataset_sha256"] for p in shards("s3", 3)}
    shutil.rmtree(shards("s3", 3)[1])
    rc, out = mpirun(3, *cap, "--out", "s3")
    case("resume: a deleted shard is recaptured, the two others reused",
         rc == 0 and out.count("SHARD REUSED") == 2 and out.count("SHARD SEALED") == 1, out)
    case("resume: the reused shards are untouched",
         all(manifest(p)["dataset_sha256"] == before[p] for p in (shards("s3", 3)[0], shards("s3", 3)[2])))
    shutil.rmtree(W("s3-merged"))
    merge_and_check("resume", "s3", 3)

    if os.access(HOOKS, os.X_OK):
        die = dict(ENV, FIDELITY_TEST_DIE_AFTER_WINDOWS="1", FIDELITY_TEST_DIE_RANK="1")
        rc, out = mpirun(2, *cap, "--out", "k", binary=HOOKS, env=die)
        partial = glob.glob(W("k.shard-1-of-2.partial-*"))
        case("kill: rank 1 dies after one window (mpirun fails), leaving a .partial and no sealed shard 1",
             rc != 0 and partial and not os.path.exists(W("k.shard-1-of-2")), (rc, partial, out))
        rc, out = mpirun(2, *cap, "--out", "k")
        case("kill: the rerun completes both shards and removes the leftovers",
             rc == 0 and all(os.path.isdir(p) for p in shards("k", 2)) and not glob.glob(W("k.shard-*.partial-*")), out)
        merge_and_check("kill and resume", "k", 2)
    else:
        case("build-mpi/fidelity-testhooks exists (make mpi)", False, HOOKS)

    # -------------------------------------------------------------- refusals
    rc, out = run([ONE, "merge", *shards("s3", 3)[:2], "--out", "bad1"])
    case("merge refuses a missing shard (incomplete_shards)", rc == 3 and "incomplete_shards" in out and
         not os.path.exists(W("bad1")), out)
    rc, out = run([ONE, "merge", shards("s2", 2)[0], *shards("s3", 3)[1:], "--out", "bad2"])
    case("merge refuses shards of different runs", rc == 3 and not os.path.exists(W("bad2")), out)
    rc, out = run([ONE, "merge", "single", "--out", "bad3"])
    case("merge refuses a dataset that is not a shard (not_a_shard)", rc == 3 and "not_a_shard" in out, out)
    rc, out = run([ONE, "merge", *shards("s2", 2), "--out", "s2-merged"])
    case("merge refuses an existing destination", rc == 3 and "destination_exists" in out, out)
    other = [a if a != "test.mpi" else "test.other" for a in cap]
    rc, out = mpirun(2, *other, "--out", "s2")
    case("capture refuses a foreign shard in the way (destination_exists), every rank exits 3",
         rc == 3 and "destination_exists" in out, out)
    rc, out = run([MPI] + cap + ["--out", "plain"], env={k: v for k, v in ENV.items()})
    case("the MPI binary without mpirun writes an ordinary dataset with the same digest",
         rc == 0 and manifest(W("plain"))["capture"]["capture_content_digest"] == D and
         manifest(W("plain"))["coverage"]["shard_of"] is None, out)
finally:
    shutil.rmtree(WORK, ignore_errors=True)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
