#!/usr/bin/env python3
"""`fidelity quantize` end to end (FORMAT.md §7, the port of P
bin/toy_quantize.py).  Builds a small Hugging Face style model directory
(config, tokenizer, index, two .safetensors shards with BF16/F16/F32/F64
tensors, 1-D norms, a 3-D and an empty matched tensor, non-matching 2-D
attention weights), runs the binary and checks:

  - every quantized tensor is bit-identical to two oracles of the formula:
    a pure-Python one (exact fp32 emulation through struct, always run) and
    a numpy float32 one with np.round (skipped with a notice without numpy),
    for --bits 8, 4, 2, 3, 5, 6;
  - untouched tensors (non-matching, 1-D, 3-D) keep their bytes, no dtype or
    shape changes, __metadata__ is dropped, other files are copied byte for
    byte (mode and mtime kept), subdirectories are not copied (as in P);
  - the output files have the safetensors library's exact layout (a Python
    port of it) and, when the `safetensors` package is importable, are
    byte-identical to its serialize() and load with its deserialize();
  - the printed summary, --emit-report and --emit-scope bytes equal P's
    json.dumps(..., indent=2, sort_keys=True), and the scope digest string
    (a port of registry_lib's recipe) is FORMAT §7's for int4 experts;
  - refusals: nothing matched, existing --dst, --dst that is (or holds) the
    source, a bad shard, an unsupported dtype, no shards (exit 3); bad
    --bits, missing options, unknown options or classes (exit 4); --dry-run
    and --force.
usage: test_quantize.py BINARY"""
import ctypes, json, math, os, random, shutil, stat, struct, subprocess, sys, tempfile

try:
    import numpy as np
except ImportError:
    np = None

BIN = os.path.abspath(sys.argv[1])
WORK = tempfile.mkdtemp(prefix="fd-quantize-")
results = []
SAN_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
SCHEME = ("round-to-nearest, per-output-row absmax scale, no calibration, no error "
          "feedback, no grouping, no outlier handling; dequantized back to the source "
          "dtype and stored as a normal safetensors checkpoint")
CLASSES = ["embed_tokens", "attn.qkv", "attn.o", "mlp.gate", "mlp.up", "mlp.down",
           "moe.experts", "norm", "lm_head"]
INT4_EXPERTS_DIGEST = (
    "attn.o=native:bf16@16|attn.qkv=native:bf16@16|embed_tokens=native:bf16@16|"
    "lm_head=native:bf16@16|mlp.down=native:bf16@16|mlp.gate=native:bf16@16|"
    "mlp.up=native:bf16@16|moe.experts=quantized:int4@4|norm=native:bf16@16|head=native|kv=bf16")


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-72s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[:2000]))
    return ok


def note(msg):
    print("     note: " + msg)


def fid(*args):
    p = subprocess.run([BIN, "quantize"] + [str(a) for a in args], capture_output=True, text=True)
    out = p.stdout + p.stderr
    if any(m in out for m in SAN_MARKERS):
        case("sanitizer-clean: quantize " + " ".join(map(str, args))[:80], False, "\n" + out[-4000:])
    return p.returncode, p.stdout, p.stderr


def refused(stdout, code):
    return ("REFUSED [%s]:" % code) in stdout


# --- fp32 arithmetic, exactly --------------------------------------------------------
def f32(x):
    """Nearest float32 (round half to even) of a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bf16_to_f32(h):
    return struct.unpack("<f", struct.pack("<I", h << 16))[0]


def f32_to_bf16(x):
    u = f32_bits(x)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


ESZ = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I32": 4}


def decode(dtype, raw):
    n = len(raw) // ESZ[dtype]
    if dtype == "BF16":
        return [bf16_to_f32(h) for h in struct.unpack("<%dH" % n, raw)]
    return list(struct.unpack("<%d%s" % (n, {"F16": "e", "F32": "f", "F64": "d", "I32": "i"}[dtype]), raw))


def encode(dtype, vals):
    if dtype == "BF16":
        return struct.pack("<%dH" % len(vals), *[f32_to_bf16(v) for v in vals])
    return struct.pack("<%d%s" % (len(vals), {"F16": "e", "F32": "f", "F64": "d", "I32": "i"}[dtype]), *vals)


def rne(x):
    """Round half to even keeping the sign of zero, as nearbyintf / np.round do."""
    return math.copysign(float(round(x)), x)


def oracle_python(dtype, raw, rows, cols, bits):
    """The formula in exact fp32: f32(a op b) on f32 inputs is the correctly
    rounded fp32 result (double has more than 2*24+2 bits)."""
    levels = 2 ** (bits - 1) - 1
    w = [f32(v) for v in decode(dtype, raw)]  # F64 is narrowed, as torch's .float() does
    out = []
    for i in range(rows):
        row = w[i * cols:(i + 1) * cols]
        m = max(abs(v) for v in row)
        s = f32(max(m, f32(1e-12)) / levels)
        out += [f32(rne(f32(v / s)) * s) for v in row]
    return encode(dtype, out)


def oracle_numpy(dtype, raw, rows, cols, bits):
    levels = np.float32(2 ** (bits - 1) - 1)
    if dtype == "BF16":
        w = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        w = np.frombuffer(raw, {"F16": "<f2", "F32": "<f4", "F64": "<f8"}[dtype]).astype(np.float32)
    w = w.reshape(rows, cols)
    m = np.maximum(np.abs(w).max(axis=1, keepdims=True), np.float32(1e-12))
    s = m / levels
    wh = np.round(w / s) * s
    assert wh.dtype == np.float32
    if dtype == "BF16":
        u = wh.view(np.uint32).astype(np.uint64)
        return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF).astype("<u2").tobytes()
    return wh.astype({"F16": "<f2", "F32": "<f4", "F64": "<f8"}[dtype]).tobytes()


# --- safetensors, in Python ----------------------------------------------------------
def read_st(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", None)
    base = 8 + n
    tensors = {k: (v["dtype"], v["shape"], data[base + v["data_offsets"][0]:base + v["data_offsets"][1]])
               for k, v in header.items()}
    return tensors, meta, n, data[8:8 + n]


def write_st_simple(path, tensors, metadata=None, pad=False, reverse=False):
    """A valid but non-library layout: sorted JSON keys, data in reverse
    name order, optional padding."""
    header, blobs, at = {}, [], 0
    for name in sorted(tensors, reverse=reverse):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


RANK = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32",
        "F32", "F64", "I64", "U64"]


def library_bytes(tensors):
    """The Rust crate's serialize(): dtype descending, then name; serde field
    order; padded to 8 with spaces; no metadata."""
    names = sorted(tensors, key=lambda k: (-RANK.index(tensors[k][0]), k.encode()))
    parts, at, blobs = [], 0, []
    for k in names:
        dtype, shape, raw = tensors[k]
        parts.append('%s:{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}' % (
            json.dumps(k, ensure_ascii=False), dtype, ",".join(map(str, shape)), at, at + len(raw)))
        at += len(raw)
        blobs.append(raw)
    h = ("{" + ",".join(parts) + "}").encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


try:
    import safetensors as st_lib
    from safetensors import deserialize as st_deserialize, serialize as st_serialize
except Exception:
    st_lib = None
LIB_DTYPE = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "F64": "float64"}


def library_serialize(tensors):
    keep = []
    try:
        from safetensors import TensorSpec
    except ImportError:
        TensorSpec = None
    flat = {}
    for k, (dtype, shape, raw) in tensors.items():
        if TensorSpec is not None:
            buf = ctypes.create_string_buffer(raw, max(len(raw), 1))
            keep.append(buf)
            flat[k] = TensorSpec(dtype=LIB_DTYPE[dtype], shape=shape, data_ptr=ctypes.addressof(buf),
                                 data_len=len(raw))
        else:
            flat[k] = {"dtype": LIB_DTYPE[dtype], "shape": shape, "data": raw}
    return bytes(st_serialize(flat, metadata=None))


# --- scope digest (registry_lib recipe, as fidelity implements it) --------------------
def format_bpw(b):
    return str(int(b)) if float(b).is_integer() else repr(float(b))


def scope_digest(scope):
    segs = []
    for a in scope["assignments"]:
        s = "%s=%s:%s" % (a["tensor_class"], a["treatment"], a["format"])
        if a["bits_per_weight"] is not None:
            s += "@" + format_bpw(a["bits_per_weight"])
        segs.append(s)
    return "|".join(sorted(segs)) + "|head=%s|kv=%s" % (scope["head_policy"], scope["kv_cache_dtype"])


def expected_scope(report, tensor_class):
    fmt = {8: "int8", 4: "int4"}.get(report["bits"], "unknown")
    asg = [{"tensor_class": c, "treatment": "quantized", "format": fmt, "bits_per_weight": report["bits"],
            "layer_range": None} if c == tensor_class else
           {"tensor_class": c, "treatment": "native", "format": "bf16", "bits_per_weight": 16, "layer_range": None}
           for c in CLASSES]
    return {"policy": "mixed", "head_policy": "native", "kv_cache_dtype": "bf16", "assignments": asg,
            "_scheme": report["scheme"], "_match_patterns": report["patterns"],
            "_tensors_quantized": report["tensors_quantized"],
            "_elements_quantized": report["elements_quantized"]}


# --- the fixture model ----------------------------------------------------------------
rng = random.Random(20260101)


def rand_vals(n, scale=0.05):
    return [f32(rng.gauss(0.0, scale)) for _ in range(n)]


def tensor(dtype, shape, vals=None):
    n = 1
    for d in shape:
        n *= d
    if vals is None:
        vals = rand_vals(n)
    if dtype == "F16":
        vals = [max(-60000.0, min(60000.0, v)) for v in vals]
    return (dtype, list(shape), encode(dtype, vals))


SPECIAL = ([7.0, 0.5, 1.5, 2.5, -0.5, -2.5]            # ties at bits=4 (s = 1): half to even
           + [0.0] * 6                                   # an all-zero row: the 1e-12 floor
           + [1e-13, -2e-13, 3e-14, 0.0, -1e-15, 5e-13]  # below the floor
           + [3e30, -1e29, 1.0, -7e25, 2e-20, 0.25])     # a wide dynamic range
EXPERT = ".mlp.experts."
SHARD1 = {
    "model.embed_tokens.weight": tensor("BF16", (16, 8)),
    "model.layers.1.input_layernorm.weight": tensor("BF16", (8,)),
    "model.layers.1.self_attn.q_proj.weight": tensor("BF16", (8, 8)),
    "model.layers.1.mlp.experts.0.gate_proj.weight": tensor("BF16", (6, 8)),
    "model.layers.1.mlp.experts.0.up_proj.weight": tensor("BF16", (6, 8)),
    "model.layers.1.mlp.experts.0.down_proj.weight": tensor("BF16", (8, 6), rand_vals(48, 3.0)),
    "model.layers.1.mlp.experts.0.gate_proj.bias": tensor("BF16", (6,)),
    "model.layers.1.mlp.experts.special.weight": tensor("BF16", (4, 6), SPECIAL),
}
SHARD2 = {
    "model.layers.1.mlp.experts.1.gate_proj.weight": tensor("F32", (5, 7)),
    "model.layers.1.mlp.experts.1.up_proj.weight": tensor("F16", (5, 7), rand_vals(35, 1.0)),
    "model.layers.1.mlp.experts.1.down_proj.weight": tensor("F64", (7, 5), [rng.gauss(0, 1) for _ in range(35)]),
    "model.layers.1.mlp.experts.1.special_f16.weight": tensor("F16", (2, 6), [7.0, 0.5, 1.5, 2.5, 6e-8, -3.5,
                                                                            6e-5, 1e-5, -3e-6, 2e-7, 0.0, 5e-6]),
    "model.layers.1.mlp.experts.2.w3d": tensor("BF16", (2, 3, 4)),
    "model.layers.1.mlp.experts.9.gate_proj.weight": tensor("BF16", (0, 4)),
    "model.layers.1.mlp.experts.3.\u00e9_proj.weight": tensor("BF16", (2, 3)),
    "model.layers.1.self_attn.o_proj.weight": tensor("BF16", (8, 8)),
    "model.norm.weight": tensor("F32", (8,)),
    "lm_head.weight": tensor("F32", (16, 8)),
}
OTHER_FILES = {
    "config.json": json.dumps({"architectures": ["Glm4MoeForCausalLM"], "num_hidden_layers": 2}, indent=2).encode(),
    "tokenizer.json": json.dumps({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0}}}).encode(),
    "tokenizer_config.json": b'{"model_max_length": 4096}\n',
    "model.safetensors.index.json": json.dumps({"metadata": {"total_size": 1}, "weight_map": {}}).encode(),
    "vocab.bin": bytes(range(256)) * 3,
    ".gitattributes": b"*.safetensors filter=lfs\n",
}
SHARD_NAMES = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


def build_model(root):
    os.makedirs(root)
    write_st_simple(os.path.join(root, SHARD_NAMES[0]), SHARD1, metadata={"format": "pt"})
    write_st_simple(os.path.join(root, SHARD_NAMES[1]), SHARD2, pad=True, reverse=True)
    for name, data in OTHER_FILES.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(data)
    os.chmod(os.path.join(root, "vocab.bin"), 0o600)
    os.utime(os.path.join(root, "config.json"), ns=(1_600_000_000_123_456_789, 1_600_000_000_987_654_321))
    os.makedirs(os.path.join(root, "original"))
    with open(os.path.join(root, "original", "consolidated.safetensors"), "wb") as f:
        f.write(b"not copied: P copies top-level files only")
    return root


SRC = build_model(os.path.join(WORK, "model"))
ALL = {**SHARD1, **SHARD2}


def matched(name, shape, patterns):
    return len(shape) == 2 and any(p in name for p in patterns)


def expected_report(bits, patterns):
    touched, skipped, elems = [], 0, 0
    for shard in (SHARD1, SHARD2):  # shards sorted by name, names sorted
        for k in sorted(shard):
            dtype, shape, _ = shard[k]
            if matched(k, shape, patterns):
                touched.append({"tensor": k, "shape": shape, "elements": shape[0] * shape[1]})
                elems += shape[0] * shape[1]
            else:
                skipped += 1
    return {"bits": bits, "patterns": patterns, "scheme": SCHEME, "tensors_quantized": len(touched),
            "tensors_untouched": skipped, "elements_quantized": elems, "quantized": touched}


def no_temp_left(parent):
    return not [n for n in os.listdir(parent) if ".quantize-tmp." in n or ".quantize-old." in n]


# --- 1. the formula against both oracles, every width -----------------------------------
if np is None:
    note("numpy is not installed: the numpy oracle is skipped (the exact pure-Python oracle still runs)")
if st_lib is None:
    note("the `safetensors` package is not importable: the library byte-identity and load checks are skipped")
for bits in (8, 4, 2, 3, 5, 6):
    dst = os.path.join(WORK, "q%d" % bits)
    scope_f, report_f = os.path.join(WORK, "scope%d.json" % bits), os.path.join(WORK, "report%d.json" % bits)
    rc, out, err = fid("--src", SRC, "--dst", dst, "--bits", bits, "--match", EXPERT,
                       "--emit-scope", scope_f, "--emit-report", report_f)
    if not case("bits=%d: exit 0" % bits, rc == 0, out + err):
        continue
    exp_rep = expected_report(bits, [EXPERT])
    summary = {k: v for k, v in exp_rep.items() if k != "quantized"}
    case("bits=%d: stdout is P's summary, byte for byte" % bits,
         out == json.dumps(summary, indent=2, sort_keys=True) + "\n", out)
    with open(report_f, "rb") as f:
        case("bits=%d: --emit-report is P's report, byte for byte" % bits,
             f.read() == json.dumps(exp_rep, indent=2, sort_keys=True).encode())
    with open(scope_f, "rb") as f:
        scope_bytes = f.read()
    exp_scope = expected_scope(exp_rep, "moe.experts")
    case("bits=%d: --emit-scope is P's scope document, byte for byte" % bits,
         scope_bytes == json.dumps(exp_scope, indent=2, sort_keys=True).encode(), scope_bytes[:400])
    digest = scope_digest(json.loads(scope_bytes))
    fmt = {8: "int8", 4: "int4"}.get(bits, "unknown")
    case("bits=%d: scope digest carries moe.experts=quantized:%s@%d" % (bits, fmt, bits),
         "moe.experts=quantized:%s@%d|" % (fmt, bits) in digest and digest.count("native:bf16@16") == 8, digest)
    if bits == 4:
        case("bits=4: scope digest is FORMAT §7's int4-experts string", digest == INT4_EXPERTS_DIGEST, digest)

    bad_py, bad_np, bad_keep, bad_layout, bad_lib = [], [], [], [], []
    seen = {}
    for shard_name, shard in zip(SHARD_NAMES, (SHARD1, SHARD2)):
        path = os.path.join(dst, shard_name)
        got, meta, hlen, hbytes = read_st(path)
        seen[shard_name] = (got, meta, hlen)
        expect = {}
        for k, (dtype, shape, raw) in shard.items():
            if matched(k, shape, [EXPERT]):
                rows, cols = shape
                e_py = oracle_python(dtype, raw, rows, cols, bits)
                expect[k] = (dtype, shape, e_py)
                if got.get(k, (None, None, None))[2] != e_py:
                    bad_py.append(k)
                if np is not None and oracle_numpy(dtype, raw, rows, cols, bits) != e_py:
                    bad_np.append(k)
            else:
                expect[k] = (dtype, shape, raw)
                if got.get(k) != (dtype, shape, raw):
                    bad_keep.append(k)
        if set(got) != set(shard):
            bad_keep.append("tensor set of " + shard_name)
        with open(path, "rb") as f:
            ours = f.read()
        if ours != library_bytes(expect):
            bad_layout.append(shard_name)
        if st_lib is not None:
            try:
                if ours != library_serialize(expect):
                    bad_lib.append(shard_name + " (bytes)")
                loaded = {k: (v["dtype"], list(v["shape"]), bytes(v["data"])) for k, v in st_deserialize(ours)}
                lib_norm = {k: ({"bfloat16": "BF16", "float16": "F16", "float32": "F32", "float64": "F64",
                                 "BF16": "BF16", "F16": "F16", "F32": "F32", "F64": "F64"}[d], s, r)
                            for k, (d, s, r) in loaded.items()}
                if lib_norm != expect:
                    bad_lib.append(shard_name + " (deserialize)")
            except Exception as exc:
                bad_lib.append("%s: %r" % (shard_name, exc))
    case("bits=%d: quantized tensors bit-identical to the exact fp32 oracle" % bits, not bad_py, bad_py)
    if np is not None:
        case("bits=%d: numpy float32 / np.round oracle agrees bit for bit" % bits, not bad_np, bad_np)
    case("bits=%d: untouched tensors (1-D, 3-D, non-matching) keep bytes, dtype, shape" % bits, not bad_keep, bad_keep)
    case("bits=%d: files have the safetensors library layout (padded, dtype-ordered)" % bits, not bad_layout, bad_layout)
    case("bits=%d: __metadata__ dropped, headers padded to 8" % bits,
         all(m is None and h % 8 == 0 for _, m, h in seen.values()))
    if st_lib is not None:
        case("bits=%d: byte-identical to safetensors %s serialize(), loads back" % (bits, st_lib.__version__),
             not bad_lib, bad_lib)
    if bits == 4:
        got1 = seen[SHARD_NAMES[0]][0]
        sp = decode("BF16", got1["model.layers.1.mlp.experts.special.weight"][2])
        case("bits=4: ties round half to even (0.5->0, 1.5->2, 2.5->2, -2.5->-2)",
             sp[:6] == [7.0, 0.0, 2.0, 2.0, -0.0, -2.0] and sp[6:12] == [0.0] * 6, sp[:12])
        tiny = [v for v in sp[12:18]]
        s_floor = f32(f32(1e-12) / 7)
        case("bits=4: a row below the 1e-12 floor is scaled by the floor (1e-12/7)",
             any(tiny) and all(abs(v / s_floor - round(v / s_floor)) < 1e-2 for v in tiny), tiny)
        src1, _, _, _ = read_st(os.path.join(SRC, SHARD_NAMES[0]))
        case("bits=4: something actually changed", got1["model.layers.1.mlp.experts.0.gate_proj.weight"][2]
             != src1["model.layers.1.mlp.experts.0.gate_proj.weight"][2])

    other_ok, other_bad = True, []
    for name, data in OTHER_FILES.items():
        p = os.path.join(dst, name)
        if not os.path.isfile(p) or open(p, "rb").read() != data:
            other_bad.append(name)
    case("bits=%d: non-safetensors files copied byte for byte" % bits, not other_bad, other_bad)
    if bits == 8:
        case("copy keeps permission bits (copy2)",
             stat.S_IMODE(os.stat(os.path.join(dst, "vocab.bin")).st_mode) == 0o600)
        case("copy keeps the modification time to the nanosecond (copy2)",
             os.stat(os.path.join(dst, "config.json")).st_mtime_ns == 1_600_000_000_987_654_321)
        case("subdirectories are not copied (P copies top-level files only)",
             not os.path.exists(os.path.join(dst, "original")))
        case("the output holds exactly the shards and the copied files",
             sorted(os.listdir(dst)) == sorted(SHARD_NAMES + list(OTHER_FILES)), sorted(os.listdir(dst)))
    case("bits=%d: no temporary directory left behind" % bits, no_temp_left(WORK))

# --- 2. options ----------------------------------------------------------------------
dst = os.path.join(WORK, "multi")
rc, out, err = fid("--src", SRC, "--dst", dst, "--match", "experts.0.", "--match=experts.1.gate",
                   "--tensor-class", "mlp.down", "--bits", "8", "--emit-scope", os.path.join(WORK, "scope-md.json"))
if case("several --match (and --match=VALUE): exit 0", rc == 0, out + err):
    s = json.loads(out)
    case("several --match: a tensor is quantized if it contains any of them",
         s["tensors_quantized"] == 4 and s["patterns"] == ["experts.0.", "experts.1.gate"], s)
    sc = json.load(open(os.path.join(WORK, "scope-md.json")))
    d = scope_digest(sc)
    case("--tensor-class mlp.down --bits 8: mlp.down=quantized:int8@8, moe.experts native",
         "mlp.down=quantized:int8@8|" in d and "moe.experts=native:bf16@16|" in d, d)

rc, out, err = fid("--src", SRC, "--dst", os.path.join(WORK, "dry"), "--match", EXPERT, "--dry-run",
                   "--emit-scope", os.path.join(WORK, "scope-dry.json"))
case("--dry-run: exit 0, the same summary, nothing written under --dst",
     rc == 0 and json.loads(out) == {k: v for k, v in expected_report(4, [EXPERT]).items() if k != "quantized"}
     and not os.path.exists(os.path.join(WORK, "dry")) and os.path.isfile(os.path.join(WORK, "scope-dry.json")),
     out + err)

# --- 3. refusals (exit 3) --------------------------------------------------------------
dst = os.path.join(WORK, "none")
rc, out, err = fid("--src", SRC, "--dst", dst, "--match", "no.such.tensor")
case("nothing matched: exit 3, REFUSED [nothing_matched], --dst not created",
     rc == 3 and refused(out, "nothing_matched") and not os.path.exists(dst), out + err)
rc, out, err = fid("--src", SRC, "--dst", dst, "--match", "input_layernorm")
case("only 1-D tensors matched: nothing_matched", rc == 3 and refused(out, "nothing_matched"), out + err)

existing = os.path.join(WORK, "q8")
before = sorted(os.listdir(existing))
rc, out, err = fid("--src", SRC, "--dst", existing, "--match", EXPERT)
case("existing --dst: exit 3, REFUSED [destination_exists], left alone",
     rc == 3 and refused(out, "destination_exists") and sorted(os.listdir(existing)) == before, out + err)
with open(os.path.join(existing, "stray.txt"), "w") as f:
    f.write("stale")
rc, out, err = fid("--src", SRC, "--dst", existing + "/", "--match", EXPERT, "--force", "--bits", "4")
case("--force replaces an existing --dst (stale files gone, new content in)",
     rc == 0 and not os.path.exists(os.path.join(existing, "stray.txt"))
     and open(os.path.join(existing, SHARD_NAMES[0]), "rb").read() == open(os.path.join(WORK, "q4", SHARD_NAMES[0]), "rb").read()
     and no_temp_left(WORK), out + err)

src_copy = os.path.join(WORK, "holder", "model")
shutil.copytree(SRC, src_copy)
rc, out, err = fid("--src", src_copy, "--dst", src_copy, "--match", EXPERT, "--force")
case("--dst == --src with --force: REFUSED [destination_is_source]",
     rc == 3 and refused(out, "destination_is_source") and os.path.isfile(os.path.join(src_copy, SHARD_NAMES[0])), out + err)
rc, out, err = fid("--src", src_copy, "--dst", os.path.join(WORK, "holder"), "--match", EXPERT, "--force")
case("--dst holding --src with --force: REFUSED [destination_is_source]",
     rc == 3 and refused(out, "destination_is_source") and os.path.isdir(src_copy), out + err)

bad = os.path.join(WORK, "bad-model")
shutil.copytree(SRC, bad)
with open(os.path.join(bad, SHARD_NAMES[1]), "r+b") as f:
    f.truncate(os.path.getsize(os.path.join(bad, SHARD_NAMES[1])) - 3)
rc, out, err = fid("--src", bad, "--dst", os.path.join(WORK, "bad-out"), "--match", EXPERT)
case("a truncated shard: REFUSED [bad_tensor_file], no --dst",
     rc == 3 and refused(out, "bad_tensor_file") and not os.path.exists(os.path.join(WORK, "bad-out")), out + err)

intm = os.path.join(WORK, "int-model")
os.makedirs(intm)
write_st_simple(os.path.join(intm, "model.safetensors"),
                {"x.mlp.experts.0.w": ("I32", [2, 2], encode("I32", [1, 2, 3, 4]))})
rc, out, err = fid("--src", intm, "--dst", os.path.join(WORK, "int-out"), "--match", EXPERT)
case("a matched integer tensor: REFUSED [unsupported_dtype]",
     rc == 3 and refused(out, "unsupported_dtype") and not os.path.exists(os.path.join(WORK, "int-out")), out + err)

empty = os.path.join(WORK, "empty-model")
os.makedirs(empty)
open(os.path.join(empty, "config.json"), "w").write("{}")
rc, out, err = fid("--src", empty, "--dst", os.path.join(WORK, "empty-out"), "--match", EXPERT)
case("no *.safetensors: REFUSED [no_safetensors]", rc == 3 and refused(out, "no_safetensors"), out + err)
rc, out, err = fid("--src", os.path.join(WORK, "missing"), "--dst", os.path.join(WORK, "m-out"), "--match", EXPERT)
case("missing --src: REFUSED [missing_file]", rc == 3 and refused(out, "missing_file"), out + err)

# --- 4. usage (exit 4) ---------------------------------------------------------------
base = ["--src", SRC, "--dst", os.path.join(WORK, "u-out"), "--match", EXPERT]
for label, args in [("--bits 7 (not one of P's choices)", base + ["--bits", "7"]),
                    ("--bits 9", base + ["--bits", "9"]), ("--bits 1", base + ["--bits", "1"]),
                    ("--bits x", base + ["--bits", "x"]), ("--bits ''", base + ["--bits", ""]),
                    ("--bits without a value", base + ["--bits"]),
                    ("no --match", base[:4]), ("no --src", base[2:]), ("no --dst", base[:2] + base[4:]),
                    ("unknown option", base + ["--frobnicate"]),
                    ("--tensor-class outside the nine classes", base + ["--tensor-class", "moe.router"]),
                    ("--dry-run=1", base + ["--dry-run=1"])]:
    rc, out, err = fid(*args)
    case("usage: %s -> exit 4" % label, rc == 4 and not os.path.exists(os.path.join(WORK, "u-out")), (rc, out + err))

shutil.rmtree(WORK, ignore_errors=True)
passed = sum(results)
failed = len(results) - passed
print("quantize: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
