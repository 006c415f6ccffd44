#!/usr/bin/env python3
"""The architecture table (issue 17, items 1-3).

usage: test_arch.py BINARY

glm5_next runs under the generic driver of both schedules: `--schedule
layer-outer` gives window-outer's capture_content_digest and probe record (1
and 2 threads); the flash-0.1b-next fixture (161 MB of weights, two 77 MB
vocabulary matrices) captures layer-outer under an address-space limit
(RLIMIT_AS, as `ulimit -v` sets it) smaller than its weights, with the
unlimited run's digest, while window-outer is refused by name there.  The
tensor list the fixture writes is the one the loader checks (inspect-model
accepts every tensor, none unexpected).  The RLIMIT_AS part runs on the
release binary only (ASan reserves terabytes of address space).
"""
from fdcheck import Checks
import json, os, shutil

T = Checks("arch", "fd-arch-")
case, run, W, manifest, BIN = T.case, T.run, T.path, T.manifest, T.bin


def digest(ds):
    return json.load(open(os.path.join(ds, "fidelity-dataset.json")))["capture"]["capture_content_digest"]


def capture(out, extra=(), limit=None):
    return run("capture", "--model", W("next"), "--panel", W("next", "panel"), "--out", out, "--role", "root",
               "--lane", "other", "--dataset-id", "test." + os.path.basename(out), "--dataset-name", "arch", *extra,
               limit=limit)


try:
    rc, out, err = run("fixture", "--preset", "flash-0.1b-next", "--seed", 3, "--out", W("next"))
    case("flash-0.1b-next fixture", rc == 0, out + err)
    rc, out, err = run("inspect-model", W("next"), "--json")
    chk = json.loads(out)["check"] if rc == 0 else {}
    case("the loader expects exactly the tensors the fixture wrote (one list for both)",
         rc == 0 and chk["expected"] == chk["tensors"] == 223 and not chk["missing"] and not chk["unexpected"]
         and not chk["misshaped"], out + err)

    quick = ["--windows", 2]
    rc1, o1, e1 = capture(W("wo"), quick + ["--threads", 2])
    rc2, o2, e2 = capture(W("lo"), quick + ["--schedule", "layer-outer", "--threads", 1])
    rc3, o3, e3 = capture(W("lo2"), quick + ["--schedule", "layer-outer", "--threads", 2])
    case("glm5_next: window-outer and layer-outer (1 and 2 threads) exit 0", rc1 == rc2 == rc3 == 0,
         o1 + e1 + o2 + e2 + o3 + e3)
    if rc1 == rc2 == rc3 == 0:
        case("glm5_next: layer-outer digest == window-outer digest",
             digest(W("wo")) == digest(W("lo")) == digest(W("lo2")), (digest(W("wo")), digest(W("lo")), digest(W("lo2"))))
        case("glm5_next: the probe (window N+1 of the pass) records the same verdict",
             manifest(W("wo"))["generation_sanity_probe"] == manifest(W("lo"))["generation_sanity_probe"])
        case("verify the glm5_next layer-outer dataset", run("verify", W("lo"))[0] == 0)

    size = os.path.getsize(W("next", "model.safetensors"))
    limit = 150 * 2 ** 20
    if "asan" in BIN:
        print("skip: the RLIMIT_AS run needs the release binary (ASan reserves its shadow address space)")
    else:
        case("the flash-0.1b-next weights exceed the limit (%d MB vs %d MB)" % (size >> 20, limit >> 20), size > limit)
        one = ["--windows", 1, "--no-sanity-check", "--threads", 1]
        rc, out, err = capture(W("n-free"), one)
        case("flash-0.1b-next: unlimited window-outer capture", rc == 0, out + err)
        rc, out, err = capture(W("n-lo"), one + ["--schedule", "layer-outer"], limit=limit)
        case("flash-0.1b-next: layer-outer captures under RLIMIT_AS = %d MB < its weights" % (limit >> 20), rc == 0,
             out + err)
        if rc == 0:
            case("... with the unlimited run's capture_content_digest", digest(W("n-lo")) == digest(W("n-free")))
        rc, out, err = capture(W("n-wo"), one, limit=limit)
        case("flash-0.1b-next: window-outer under the same limit refused by name, nothing written",
             rc == 3 and "insufficient_memory" in out + err and not os.path.exists(W("n-wo")), out + err)
finally:
    T.finish()
