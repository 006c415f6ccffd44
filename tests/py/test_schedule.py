#!/usr/bin/env python3
"""`capture --schedule layer-outer` and the memory pre-flight (issue 9, part 1).

usage: test_schedule.py BINARY

Layer-outer gives window-outer's capture_content_digest and probe record
(tiny; an FP8-block checkpoint; 1 and 3 threads); a 222 MB checkpoint
captures under an address-space limit of 100 MB (RLIMIT_AS, as `ulimit -v`
sets it) with the digest of the unlimited run, while window-outer is refused
by name there; the pre-flight refuses a run that cannot fit; nothing is
written by a refused run.  The RLIMIT_AS part runs on the release binary
only (ASan reserves terabytes of address space).
"""
from fdcheck import Checks
import json, os, shutil

T = Checks("schedule", "fd-sched-")
case, run, W, manifest, BIN = T.case, T.run, T.path, T.manifest, T.bin


def digest(ds):
    return json.load(open(os.path.join(ds, "fidelity-dataset.json")))["capture"]["capture_content_digest"]


def capture(model, out, extra=(), limit=None, role="root"):
    return run("capture", "--model", model, "--panel", W(os.path.basename(model) + "-panel"), "--out", out, "--role", role,
               "--lane", "other", "--dataset-id", "test." + os.path.basename(out), "--dataset-name", "schedule", *extra,
               limit=limit)


try:
    for preset, windows in (("tiny", None), ("small", 2)):
        rc, out, err = run("fixture", "--preset", preset, "--seed", 5, "--out", W(preset))
        case("%s fixture" % preset, rc == 0, err)
        shutil.copytree(W(preset, "panel"), W(preset + "-panel"))

    rc1, o1, e1 = capture(W("tiny"), W("wo"))
    rc2, o2, e2 = capture(W("tiny"), W("lo"), ["--schedule", "layer-outer", "--threads", 1])
    rc3, o3, e3 = capture(W("tiny"), W("lo3"), ["--schedule", "layer-outer", "--threads", 3])
    case("tiny: window-outer and layer-outer (1 and 3 threads) exit 0", rc1 == rc2 == rc3 == 0, o1 + e1 + o2 + e2 + o3 + e3)
    if rc1 == rc2 == rc3 == 0:
        case("tiny: layer-outer digest == window-outer digest",
             digest(W("wo")) == digest(W("lo")) == digest(W("lo3")), (digest(W("wo")), digest(W("lo"))))
        case("tiny: the probe (window N+1 of the pass) records the same verdict",
             manifest(W("wo"))["generation_sanity_probe"] == manifest(W("lo"))["generation_sanity_probe"])
        case("verify the layer-outer dataset", run("verify", W("lo"))[0] == 0)

    rc, out, err = run("quantize", "--src", W("tiny"), "--dst", W("tinyfp8"), "--format", "fp8-block")
    case("fp8-block checkpoint", rc == 0, out + err)
    shutil.copytree(W("tiny-panel"), W("tinyfp8-panel"))
    rca, oa, ea = capture(W("tinyfp8"), W("fwo"), role="quant")
    rcb, ob, eb = capture(W("tinyfp8"), W("flo"), ["--schedule", "layer-outer"], role="quant")
    case("fp8-block: layer-outer (scales mapped lazily) == window-outer",
         rca == rcb == 0 and digest(W("fwo")) == digest(W("flo")), oa + ea + ob + eb)

    rc, out, err = capture(W("tiny"), W("tight"), ["--schedule", "layer-outer", "--memory-limit", 1000000])
    case("pre-flight refuses a run that cannot fit (exit 3, insufficient_memory, nothing written)",
         rc == 3 and "insufficient_memory" in out + err and not os.path.exists(W("tight")), out + err)
    rc, out, err = capture(W("tiny"), W("bogus"), ["--schedule", "sideways"])
    case("unknown --schedule refused", rc in (3, 4) and not os.path.exists(W("bogus")), out + err)

    size = os.path.getsize(W("small", "model.safetensors"))
    limit = 100 * 2 ** 20
    if "asan" in BIN:
        print("skip: the RLIMIT_AS run needs the release binary (ASan reserves its shadow address space)")
    else:
        case("the small checkpoint is >= 2x the limit (%d MB vs %d MB)" % (size >> 20, limit >> 20), size >= 2 * limit)
        rc, out, err = capture(W("small"), W("s-free"), ["--windows", 2, "--no-sanity-check"])
        case("small: unlimited window-outer capture", rc == 0, out + err)
        rc, out, err = capture(W("small"), W("s-lo"), ["--windows", 2, "--no-sanity-check", "--schedule", "layer-outer",
                                                     "--threads", 1], limit=limit)
        case("small: layer-outer captures under RLIMIT_AS = 100 MB", rc == 0, out + err)
        if rc == 0:
            case("... with the unlimited run's capture_content_digest", digest(W("s-lo")) == digest(W("s-free")))
        rc, out, err = capture(W("small"), W("s-wo"), ["--windows", 2, "--no-sanity-check", "--threads", 1], limit=limit)
        case("small: window-outer under the same limit refused by name, nothing written",
             rc == 3 and "insufficient_memory" in out + err and not os.path.exists(W("s-wo")), out + err)
finally:
    T.finish()
