#!/usr/bin/env python3
"""GGUF: the reader, the dequantization of every ggml type we decode, and
`inspect-model FILE.gguf` (issue 18, items 1-2).

usage: test_gguf.py BINARY

1. Committed vectors (always; tests/vectors/gguf/dequant.bin, made by
   gguf_vectors.py with the reference decoder gguf.quants.dequantize):
   `debug-gguf-dequant TYPE` gives the oracle's float32 bit for bit and its
   bf16 rounding (round to nearest even, NaN quiet) for all 26 types.
2. Live oracle (needs numpy + the `gguf` package; otherwise a printed SKIP):
   the vectors regenerate identically; per type, fresh random blocks and
   blocks with every extreme fp16 scale (max, -max, zero, -zero, subnormal,
   min normal) decode bit for bit, f32 and bf16.
3. GGUF files from our small writer (gguf_ref.gguf_file, always) and from the
   gguf package's GGUFWriter (when installed), a split set among them:
   inspect-model's architecture, metadata summary, tensors, census and
   bits per weight; `debug-gguf-dequant --tensor` reads tensors across the
   set row by row and equals the oracle.
4. Hostile files (lying counts, string/array lengths past the end, offsets
   past the end, misalignment, overlap, unknown tensor and value types,
   truncation, wrong split sets): refused by name, exit 3, no crash.
"""
import json, os, shutil, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_ref as g
from gguf_ref import U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
WORK = tempfile.mkdtemp(prefix="fd-gguf-")
VECTORS = os.path.join(HERE, "..", "vectors", "gguf", "dequant.bin")
passed = failed = 0


def case(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, str(detail)[:1500]))


def run(*args):
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def code_of(out):
    for line in out.splitlines():
        if line.startswith("REFUSED ["):
            return line[len("REFUSED ["):line.index("]")]
    return None


def put(name, data):
    p = os.path.join(WORK, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def ours(tname, blob):
    src = put("blocks.bin", blob)
    rc, out = run("debug-gguf-dequant", tname, src, os.path.join(WORK, "o.f32"), os.path.join(WORK, "o.bf16"))
    if rc:
        return None, None, out
    return open(os.path.join(WORK, "o.f32"), "rb").read(), open(os.path.join(WORK, "o.bf16"), "rb").read(), out


def first_diff(a, b, width):
    for i in range(0, min(len(a), len(b)), width):
        if a[i:i + width] != b[i:i + width]:
            return "element %d: ours %s oracle %s" % (i // width, a[i:i + width].hex(), b[i:i + width].hex())
    return "lengths %d vs %d" % (len(a), len(b))


def inspect(path):
    rc, out = run("inspect-model", path, "--json")
    try:
        return rc, json.loads(out[:out.rindex("}") + 1]), out
    except ValueError:
        return rc, None, out


# ------------------------------------------------------------ 1. vectors
vectors = g.read_vectors(VECTORS)
case("vectors cover all %d types" % len(g.TYPES), sorted(v[0] for v in vectors) == sorted(g.TYPES),
     sorted(v[0] for v in vectors))
for name, blob, f32, bf16 in vectors:
    f, h, out = ours(name, blob)
    case("vectors %-7s f32 bit-identical to gguf.quants (%d elements)" % (name, len(f32) // 4), f == f32,
         out if f is None else first_diff(f, f32, 4))
    case("vectors %-7s bf16 = the oracle's float32 rounded (RNE)" % name, h == bf16 and g.bf16_rne(f32) == bf16,
         out if h is None else first_diff(h, bf16, 2))

# ---------------------------------------------------------- 2. live oracle
try:
    import numpy as np
    import gguf
    import gguf_vectors
    HAVE_GGUF = True
except ImportError as ex:
    HAVE_GGUF = False
    print("SKIP live gguf.quants oracle and GGUFWriter files: %s (pip install gguf numpy); "
          "the committed vectors above still checked every type" % ex)

if HAVE_GGUF:
    np.seterr(all="ignore")
    regen = gguf_vectors.entries()
    case("vectors regenerate identically from gguf.quants", regen == vectors,
         [e[0] for e, v in zip(regen, vectors) if e != v])
    for name in g.TYPES:
        for seed in (1, 2):
            blob = g.make_blocks(name, 40, seed)
            rf, rh = g.oracle(name, blob)
            nan = any(x != x for x in struct.unpack("<%df" % (len(rf) // 4), rf))
            f, h, out = ours(name, blob)
            case("oracle %-7s seed %d: %d blocks (random + %d extreme scales), f32 and bf16 bit-identical%s"
                 % (name, seed, len(blob) // g.TYPES[name][2], len(g.EDGE_F16), "" if not nan else " (NaN!)"),
                 not nan and f == rf and h == rh and h == g.bf16_rne(rf),
                 out if f is None else first_diff(f, rf, 4) if f != rf else first_diff(h, rh, 2))

    # NaN payloads of the element types (signalling and quiet, both signs): f32 as the oracle's, bf16 quiet
    nan_blobs = {"F32": struct.pack("<4I", 0x7F800001, 0x7FC00000, 0xFFA00000, 0x7FFFFFFF),
                 "F16": struct.pack("<4H", 0x7C01, 0x7E00, 0xFC01, 0x7FFF),
                 "BF16": struct.pack("<4H", 0x7F81, 0x7FC0, 0xFFA0, 0x7FFF)}
    for name, blob in nan_blobs.items():
        rf, rh = g.oracle(name, blob)
        f, h, out = ours(name, blob)
        quiet = all((x & 0x7FC0) == 0x7FC0 for x in struct.unpack("<4H", h or b"\0" * 8))
        case("oracle %-7s NaN payloads: f32 = the oracle's bits, bf16 = its rounding, quiet" % name,
             f == rf and h == rh and quiet, out if f is None else (f.hex(), rf.hex(), h.hex(), rh.hex()))

# --------------------------------------------------- debug command refusals
rc, out = run("debug-gguf-dequant", "Q4_Q", put("x.bin", b"\0" * 18), os.path.join(WORK, "o.f32"))
case("unknown type name refused gguf_unknown_type", rc == 3 and code_of(out) == "gguf_unknown_type", out)
rc, out = run("debug-gguf-dequant", "Q8_K", put("x.bin", b"\0" * 292), os.path.join(WORK, "o.f32"))
case("Q8_K (no reference decoder) refused gguf_unsupported_type", rc == 3 and code_of(out) == "gguf_unsupported_type", out)
rc, out = run("debug-gguf-dequant", "Q4_K", put("x.bin", b"\0" * 145), os.path.join(WORK, "o.f32"))
case("a partial block refused bad_gguf", rc == 3 and code_of(out) == "bad_gguf", out)

# ------------------------------------------------ 3. files: our writer
VEC = {v[0]: v for v in vectors}
ALL_KV = [
    ("general.architecture", STRING, "glm-dsa"), ("general.name", STRING, "tiny \x01 test"),
    ("t.u8", U8, 200), ("t.i8", I8, -100), ("t.u16", U16, 60000), ("t.i16", I16, -30000),
    ("t.u32", U32, 4000000000), ("t.i32", I32, -2000000000), ("t.f32", F32, 0.5), ("t.bool", BOOL, 1),
    ("t.u64", U64, 2 ** 63 + 5), ("t.i64", I64, -2 ** 62), ("t.f64", F64, -1.25),
    ("tokenizer.ggml.tokens", ARRAY, (STRING, ["<s>", "a", "b\u00e9", ""])),
    ("tokenizer.ggml.scores", ARRAY, (F32, [0.0, -1.0, -2.0, -3.0])),
    ("t.bools", ARRAY, (BOOL, [0, 1, 1])), ("t.empty", ARRAY, (U64, [])),
]


def vec_tensor(tname, rows=None):
    """a tensor made of the committed vector blocks of tname: (ne, data, expected f32, expected bf16)"""
    name, blob, f32, bf16 = VEC[tname]
    tid, blck, tsize, _ = g.TYPES[tname]
    nblocks = len(blob) // tsize
    if blck == 1:
        n = nblocks - nblocks % 4
        return [n // 4, 4], blob[:n * tsize], f32[:n * 4], bf16[:n * 2]
    return [blck, nblocks], blob, f32, bf16


def tensors_of(types):
    out, expect = [], {}
    for i, tn in enumerate(types):
        ne, blob, f32, bf16 = vec_tensor(tn)
        nm = "blk.%d.%s.weight" % (i, tn.lower())
        out.append((nm, ne, g.TYPES[tn][0], blob))
        expect[nm] = (tn, ne, blob, f32, bf16)
    return out, expect


def check_tensor_reads(label, path, expect):
    bad = []
    for nm, (tn, ne, blob, f32, bf16) in expect.items():
        of, oh = os.path.join(WORK, "t.f32"), os.path.join(WORK, "t.bf16")
        rc, out = run("debug-gguf-dequant", "--tensor", path, nm, of, oh)
        if rc or open(of, "rb").read() != f32 or open(oh, "rb").read() != bf16:
            bad.append((nm, rc, out[-300:]))
    case("%s: every tensor read row by row = the oracle's decode (f32 and bf16)" % label, not bad, bad)


def check_inspect(label, path, expect, kvs, nfiles=1):
    rc, j, out = inspect(path)
    if rc or not j:
        case("%s: inspect-model" % label, False, out)
        return
    case("%s: inspect-model ok, architecture glm-dsa, %d file(s)" % (label, nfiles),
         j["ok"] and j["architecture"] == "glm-dsa" and len(j["files"]) == nfiles, out[:600])
    md = j["metadata"]
    want = {"t.u8": "200", "t.i8": "-100", "t.u16": "60000", "t.i16": "-30000", "t.u32": "4000000000",
            "t.i32": "-2000000000", "t.f32": "0.5", "t.bool": "true", "t.u64": str(2 ** 63 + 5),
            "t.i64": str(-2 ** 62), "t.f64": "-1.25", "general.name": "tiny \\x01 test",
            "tokenizer.ggml.tokens": "[string x 4] first: <s>", "tokenizer.ggml.scores": "[f32 x 4]",
            "t.bools": "[bool x 3]", "t.empty": "[u64 x 0]"}
    want = {k: v for k, v in want.items() if any(k == kv[0] for kv in kvs)}
    got = {k: md.get(k, {}).get("value") for k in want}
    case("%s: metadata summary of every value type" % label, got == want, [(k, got[k], want[k]) for k in want if got[k] != want[k]])
    tj = {t["name"]: t for t in j["tensors"]}
    bad = [nm for nm, (tn, ne, blob, f32, bf16) in expect.items()
           if nm not in tj or tj[nm]["type"] != tn or tj[nm]["ne"] != ne or tj[nm]["bytes"] != len(blob)
           or tj[nm]["elements"] != len(f32) // 4]
    case("%s: tensor list (names, types, ne, bytes, elements)" % label, not bad and len(tj) == len(expect), bad or sorted(tj))
    cen = {}
    for nm, (tn, ne, blob, f32, bf16) in expect.items():
        c = cen.setdefault(tn, [0, 0, 0])
        c[0] += 1
        c[1] += len(f32) // 4
        c[2] += len(blob)
    got_c = {k: [v["tensors"], v["elements"], v["bytes"]] for k, v in j["census"].items()}
    case("%s: census of types" % label, got_c == cen, (got_c, cen))
    nonq = {"F32", "F16", "BF16"}
    qe = sum(c[1] for k, c in cen.items() if k not in nonq)
    qb = sum(c[2] for k, c in cen.items() if k not in nonq)
    ae, ab = sum(c[1] for c in cen.values()), sum(c[2] for c in cen.values())
    # most elements; ties: more bits per weight, then the lower ggml type id
    major = max((k for k in cen if k not in nonq),
                key=lambda k: (cen[k][1], g.TYPES[k][2] / g.TYPES[k][1], -g.TYPES[k][0]))
    tid, blck, tsize, _ = g.TYPES[major]
    bp = j["bits_per_weight"]
    case("%s: bits per weight: nominal %s %.4g, effective %.4f quantized / %.4f all" % (label, major, tsize * 8 / blck,
                                                                                          qb * 8 / qe, ab * 8 / ae),
         bp["nominal_type"] == major and abs(bp["nominal"] - tsize * 8 / blck) < 1e-12
         and abs(bp["effective_quantized"] - qb * 8 / qe) < 1e-12 and abs(bp["effective_all"] - ab * 8 / ae) < 1e-12
         and bp["quantized_bytes"] == qb and bp["quantized_elements"] == qe, bp)
    rc, out = run("inspect-model", path)
    case("%s: inspect-model text form ends OK" % label, rc == 0 and out.rstrip().endswith("OK") and
         "architecture glm-dsa" in out and "bits per weight: nominal" in out, out[-400:])


tl, expect = tensors_of(sorted(g.TYPES))
p = put("ours.gguf", g.gguf_file(ALL_KV, tl))
check_inspect("our writer, all 26 types", p, expect, ALL_KV)
check_tensor_reads("our writer, all 26 types", p, expect)
p = put("ours-a64.gguf", g.gguf_file(ALL_KV, tl, alignment=64, version=2))
check_inspect("our writer, v2, general.alignment 64", p, expect, ALL_KV)
check_tensor_reads("our writer, v2, general.alignment 64", p, expect)


pi = put("i32.gguf", g.gguf_file(ALL_KV, [("n.weight", [4], 26, b"\1\0\0\0" * 4)] + tl[:2]))
outp = os.path.join(WORK, "never.f32")
rc, out = run("debug-gguf-dequant", "--tensor", pi, "n.weight", outp)
case("--tensor of an I32 tensor refused gguf_unsupported_type, nothing written",
     rc == 3 and code_of(out) == "gguf_unsupported_type" and not os.path.exists(outp), out)
rc, out = run("debug-gguf-dequant", "--tensor", pi, "no.such.weight", outp)
case("--tensor of a missing name refused missing_tensor", rc == 3 and code_of(out) == "missing_tensor", out)
rc, j, out = inspect(pi)
case("an I32 tensor is listed and counted as not quantized",
     rc == 0 and j["census"]["I32"]["quantized"] is False and j["census"]["I32"]["bytes"] == 16, out[-600:])


def split_set(stem, parts, count=None, nos=None, arch=None, tcount=None, kv0=ALL_KV):
    """writes stem-0000i-of-0000N.gguf; parts: a list of tensor lists"""
    n = len(parts)
    count = count or [n] * n
    nos = nos if nos is not None else list(range(n))
    tot = sum(len(x) for x in parts) if tcount is None else tcount
    paths = []
    for i, tl_i in enumerate(parts):
        kv = (list(kv0) if i == 0 else ([("general.architecture", STRING, arch)] if arch else []))
        kv += [("split.no", U16, nos[i]), ("split.count", U16, count[i]), ("split.tensors.count", I32, tot)]
        paths.append(put("%s-%05d-of-%05d.gguf" % (stem, i + 1, n), g.gguf_file(kv, tl_i)))
    return paths


parts = [tl[:9], tl[9:18], tl[18:]]
sp = split_set("set", parts)
check_inspect("our writer, split set of 3", sp[0], expect, ALL_KV, nfiles=3)
check_tensor_reads("our writer, split set of 3", sp[0], expect)

# ---------------------------------------- 3b. files: the gguf package's writer
WRITER_KV = [kv for kv in ALL_KV if kv[0] != "t.empty"]  # GGUFWriter refuses an empty array
if HAVE_GGUF:
    def writer_file(path, split_max_tensors=0):
        w = gguf.GGUFWriter(path, "glm-dsa", split_max_tensors=split_max_tensors)
        w.add_name("tiny \x01 test")
        for k, t, v in WRITER_KV[2:]:
            if t == ARRAY:
                at, items = v
                if at == STRING:
                    w.add_array(k, items)
                else:
                    w.add_key_value(k, items, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType(at))
            else:
                w.add_key_value(k, v, gguf.GGUFValueType(t))
        for nm, (tn, ne, blob, f32, bf16) in expect.items():
            tid, blck, tsize, _ = g.TYPES[tn]
            a = np.frombuffer(blob, dtype=np.uint8).reshape(ne[1], -1)
            w.add_tensor(nm, a, raw_dtype=gguf.GGMLQuantizationType(tid))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    try:
        wp = os.path.join(WORK, "writer.gguf")
        writer_file(wp)
        check_inspect("GGUFWriter, all 26 types", wp, expect, WRITER_KV)
        check_tensor_reads("GGUFWriter, all 26 types", wp, expect)
        os.makedirs(os.path.join(WORK, "wsplit"))
        writer_file(os.path.join(WORK, "wsplit", "m.gguf"), split_max_tensors=10)
        names = sorted(os.listdir(os.path.join(WORK, "wsplit")))
        case("GGUFWriter split set written as m-0000i-of-00003.gguf", names == ["m-%05d-of-00003.gguf" % i for i in (1, 2, 3)], names)
        first = os.path.join(WORK, "wsplit", names[0])
        check_inspect("GGUFWriter, split set of 3", first, expect, WRITER_KV, nfiles=3)
        check_tensor_reads("GGUFWriter, split set of 3", first, expect)
        rc, out = run("inspect-model", os.path.join(WORK, "wsplit", names[1]))
        case("GGUFWriter split set: passing file 2 refused gguf_split_set", rc == 3 and code_of(out) == "gguf_split_set", out)
        os.unlink(os.path.join(WORK, "wsplit", names[2]))
        rc, out = run("inspect-model", first)
        case("GGUFWriter split set: file 3 missing refused gguf_split_set", rc == 3 and code_of(out) == "gguf_split_set", out)
    except Exception as ex:  # an API change of the package is a failure to look at, not a skip
        case("GGUFWriter files", False, repr(ex))

# ------------------------------------------------------------ 4. hostile
KV = [("general.architecture", STRING, "glm-dsa")]
T1 = [("a.weight", [256, 7], 12, VEC["Q4_K"][1]), ("b.weight", [32, 7], 8, VEC["Q8_0"][1])]
good = g.gguf_file(KV, T1)


def hostile(name, data, want, files=None):
    p = put(name + ".gguf", data) if data is not None else files
    rc, out = run("inspect-model", p)
    case("hostile %-34s -> %s" % (name, want), rc == 3 and code_of(out) == want and "AddressSanitizer" not in out, out[-500:])


def patch(data, off, fmt, v):
    d = bytearray(data)
    struct.pack_into(fmt, d, off, v)
    return bytes(d)


rc, out = run("inspect-model", put("good.gguf", good))
case("the hostile cases' base file is accepted", rc == 0, out)
hostile("bad-magic", b"GGUX" + good[4:], "bad_gguf")
hostile("version-1", patch(good, 4, "<I", 1), "bad_gguf")
hostile("version-4", patch(good, 4, "<I", 4), "bad_gguf")
hostile("big-endian", g.gguf_file(KV, T1, endian=">"), "bad_gguf")
hostile("tensor-count-lie-huge", patch(good, 8, "<Q", 2 ** 60), "bad_gguf")
hostile("tensor-count-lie-plus1", patch(good, 8, "<Q", 3), "bad_gguf")
hostile("kv-count-lie-huge", patch(good, 16, "<Q", 2 ** 62), "bad_gguf")
hostile("kv-count-lie-plus1", patch(good, 16, "<Q", 2), "bad_gguf")
hostile("key-length-past-end", patch(good, 24, "<Q", 2 ** 40), "bad_gguf")
hostile("key-length-zero", g.gguf_file([("", U32, 1)] + KV, T1), "bad_gguf")
hostile("string-value-past-end", g.gguf_file(KV, T1)[:24] + g._str("general.architecture") + struct.pack("<IQ", STRING, 2 ** 50), "bad_gguf")
hostile("array-count-past-end", g.gguf_file(KV + [("x", ARRAY, (U32, [1, 2]))], T1).replace(
    struct.pack("<IQ", U32, 2), struct.pack("<IQ", U32, 2 ** 61)), "bad_gguf")
hostile("string-array-count-past-end", g.gguf_file(KV + [("x", ARRAY, (STRING, ["a", "b"]))], T1).replace(
    struct.pack("<IQ", STRING, 2), struct.pack("<IQ", STRING, 2 ** 59)), "bad_gguf")
hostile("nested-array", g.gguf_file(KV + [("x", ARRAY, (ARRAY, []))], T1), "bad_gguf")
hostile("unknown-value-type", good.replace(
    struct.pack("<I", STRING) + struct.pack("<Q", 7) + b"glm-dsa", struct.pack("<I", 13) + struct.pack("<Q", 7) + b"glm-dsa"), "bad_gguf")
hostile("unknown-array-type", g.gguf_file(KV + [("x", ARRAY, (U32, [1]))], T1).replace(
    struct.pack("<IQ", U32, 1), struct.pack("<IQ", 99, 1)), "bad_gguf")
hostile("bool-value-2", g.gguf_file(KV + [("x", BOOL, 2)], T1), "bad_gguf")
hostile("duplicate-key", g.gguf_file(KV + KV, T1), "bad_gguf")
hostile("alignment-not-pow2", g.gguf_file(KV, T1, alignment=48), "bad_gguf")
hostile("alignment-zero", g.gguf_file(KV + [("general.alignment", U32, 0)], T1), "bad_gguf")
hostile("alignment-wrong-type", g.gguf_file(KV + [("general.alignment", U64, 32)], T1), "bad_gguf")
hostile("unknown-tensor-type-99", g.gguf_file(KV, [("a.weight", [256, 7], 99, VEC["Q4_K"][1])]), "gguf_unknown_type")
hostile("retired-tensor-type-4", g.gguf_file(KV, [("a.weight", [32, 1], 4, b"\0" * 20)]), "gguf_unknown_type")
hostile("row-not-whole-blocks", g.gguf_file(KV, [("a.weight", [250, 7], 12, VEC["Q4_K"][1])]), "bad_gguf")
hostile("dims-5", g.gguf_file(KV, [("a.weight", [256, 7, 1, 1, 1], 12, VEC["Q4_K"][1])]), "bad_gguf")
hostile("dims-0", g.gguf_file(KV, [("a.weight", [], 12, b"")]), "bad_gguf")
hostile("shape-overflow", g.gguf_file(KV, [("a.weight", [2 ** 32, 2 ** 32], 0, b"")]), "bad_gguf")
hostile("name-64-bytes", g.gguf_file(KV, [("n" * 64, [32, 7], 8, VEC["Q8_0"][1])]), "bad_gguf")
hostile("duplicate-tensor", g.gguf_file(KV, [T1[1], ("b.weight", [32, 7], 8, VEC["Q8_0"][1])]), "bad_gguf")
hostile("offset-past-end", g.gguf_file(KV, T1, offsets=[0, 2 ** 40]), "bad_gguf")
hostile("offset-misaligned", g.gguf_file(KV, T1, offsets=[0, 1024 + 8]), "bad_gguf")
hostile("tensors-overlap", g.gguf_file(KV, T1, offsets=[0, 992]), "bad_gguf")
hostile("truncated-data", good[:-10], "bad_gguf")
hostile("truncated-header", good[:60], "bad_gguf")
hostile("truncated-tiny", good[:20], "bad_gguf")
hostile("empty", b"", "bad_gguf")
os.makedirs(os.path.join(WORK, "dir.gguf"), exist_ok=True)
hostile("a-directory", None, "unreadable", files=os.path.join(WORK, "dir.gguf"))
# split sets
A, B, C = [tl[:2], tl[2:4], tl[4:6]]


def split_case(label, want, stem, mutate=None, pick=0, **kw):
    d = os.path.join(WORK, stem)
    ps = split_set(stem, [A, B, C], **kw)
    if mutate:
        mutate(ps)
    rc, out = run("inspect-model", ps[pick])
    case("hostile split %-34s -> %s" % (label, want), rc == 3 and code_of(out) == want, out[-400:])


split_case("second file passed", "gguf_split_set", "s1", pick=1)
split_case("file 3 missing", "gguf_split_set", "s2", mutate=lambda ps: os.unlink(ps[2]))
split_case("file 2 split.no lies", "gguf_split_set", "s3", nos=[0, 2, 2])
split_case("file 3 split.count lies", "gguf_split_set", "s4", count=[3, 3, 4])
split_case("split.count says 4 for 3 names", "gguf_split_set", "s5", count=[4, 4, 4])
split_case("other architecture in file 2", "gguf_split_set", "s6", arch="glm5-next")
split_case("split.tensors.count lies", "gguf_split_set", "s7", tcount=7)
split_case("a tensor in two files", "gguf_split_set", "s8",
           mutate=lambda ps: open(ps[2], "wb").write(g.gguf_file(
               [("split.no", U16, 2), ("split.count", U16, 3), ("split.tensors.count", I32, 6)], A)))
split_case("file 2 a directory", "unreadable", "s9",
           mutate=lambda ps: (os.unlink(ps[1]), os.makedirs(ps[1])))
split_case("file 2 truncated", "bad_gguf", "s10", mutate=lambda ps: open(ps[1], "r+b").truncate(100))
lone = put("lone.gguf", g.gguf_file(KV + [("split.no", U16, 0), ("split.count", U16, 2)], T1))
rc, out = run("inspect-model", lone)
case("hostile split.count 2 in a file not named -00001-of-00002 -> gguf_split_set",
     rc == 3 and code_of(out) == "gguf_split_set", out)

shutil.rmtree(WORK, ignore_errors=True)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
