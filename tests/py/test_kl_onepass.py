#!/usr/bin/env python3
"""Issue 24: the replay folds the reference and the first candidate of each
chunk in one pass (ref_pair_chunk; kernel-selftest holds its states and exps
to the two passes bit for bit on every path).  What this adds end to end:
when both a reference row and an earlier candidate row of the same sub-tile
are not finite, compare still names the reference row, as the two passes
(every reference row of the sub-tile first) did; a candidate alone is named
as before; and the refusal leaves no receipt.  Crafted as in
test_numerics_defects.py: a head whose logits are h0*W[v,0] + h1*W[v,1]
exactly, hidden states near the bf16 maximum in the rows that overflow.
usage: test_kl_onepass.py BINARY"""
import json, os, shutil, struct, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dsutil import bf16, load, dump, reseal, refusal_code, retensor, seal, sha, sha_file, st_read

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="fd-kl-onepass-")
results = []
SAN_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-72s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[:3000]))
    return ok


def fid(*args):
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True)
    out = p.stdout + p.stderr
    if any(m in out for m in SAN_MARKERS):
        case("sanitizer-clean: " + " ".join(str(a) for a in args)[:90], False, "\n" + out[-4000:])
    return p.returncode, out


V, H = 600, 64
BIG = struct.unpack("<f", struct.pack("<I", 0x7f7f0000))[0]   # 3.39e38: 1.5 * BIG overflows fp32


def dataset(name, bad_rows, *extra):
    """Two records of 6 tokens; rows in bad_rows get logits of +inf in columns 0..269."""
    root = os.path.join(WORK, name)
    rc, out = fid("write-fixture", "--out", root, "--records", "2", "--tokens", "6", "--hidden", str(H),
                  "--vocab", str(V), "--seed", "3", *extra)
    if not case("write-fixture " + name, rc == 0, out):
        return None
    W = []
    for v in range(V):
        row = [0.0] * H
        row[0] = 1.0 if v == 0 else 0.5
        row[1] = 1.0 if v < 270 else 0.5
        W += row
    retensor(root, "head/weight.safetensors", struct.pack("<%dH" % len(W), *[bf16(x) for x in W]))
    for rec in load(os.path.join(root, "capture/manifest.json"))["records"]:
        p = os.path.join(root, "capture", rec["file"])
        _, hdr, _ = st_read(p)
        rows, width = hdr["hidden_states"]["shape"]
        body = bytearray()
        for i in range(rows):
            h = [BIG, BIG] if i in bad_rows else [0.5 + 0.125 * i, 0.25]
            body += struct.pack("<%dH" % width, *[bf16(x) for x in h + [0.0] * (width - 2)])
        retensor(root, os.path.join("capture", rec["file"]), bytes(body))
    rc, out = fid("verify", root)
    case("crafted dataset %s verifies" % name, rc == 0, out[-800:])
    return root


ref_bad = dataset("ref-row3", {3})
cand_bad = dataset("cand-row1", {1}, "--noise-seed", "11", "--perturb", "0.01")
ref_ok = dataset("ref-ok", set())
if ref_bad and cand_bad and ref_ok:
    for path in ("scalar", "avx2", "avx512f", "avx512bf16"):
        out_dir = os.path.join(WORK, "cmp-both-" + path)
        rc, out = fid("compare", "--reference", ref_bad, "--candidate", cand_bad, "--out", out_dir, "--threads", "1",
                      "--kernel", path)
        if rc == 4 and "not supported" in out:
            print("     note: kernel path %s not available here" % path)
            continue
        case("%s: reference row 3 and candidate row 1 not finite -> REFUSED [non_finite] naming the reference row"
             % path, rc == 3 and refusal_code(out) == "non_finite" and "reference" in out and "row 3" in out
             and "candidate (" not in out, out[-800:])
        case("%s: ... and no receipt left behind" % path,
             not os.path.exists(os.path.join(out_dir, "comparison-receipt.json")))
    out_dir = os.path.join(WORK, "cmp-cand")
    rc, out = fid("compare", "--reference", ref_ok, "--candidate", cand_bad, "--out", out_dir, "--threads", "1")
    case("candidate row 1 alone not finite -> REFUSED [non_finite] naming the candidate row",
         rc == 3 and refusal_code(out) == "non_finite" and "candidate" in out and "row 1" in out, out[-800:])
    case("... and no receipt left behind", not os.path.exists(os.path.join(out_dir, "comparison-receipt.json")))

shutil.rmtree(WORK, ignore_errors=True)
print("kl-onepass: %d passed, %d failed" % (results.count(True), results.count(False)))
sys.exit(0 if all(results) else 1)
