#!/usr/bin/env python3
"""GGUFs quantized by llama.cpp's own llama-quantize (issue 18), committed
xz-compressed in tests/vectors/gguf-quant/ (made by its make.py; README.md says
how llama-quantize was built; CI has neither it nor the converter):

  - each file has its recorded sha256 and the ggml type census make.py
    printed (TYPES): what llama-quantize actually wrote, fallbacks included;
  - (a) per file: the capture digest equals the capture of a safetensors
    checkpoint holding gguf-py's gguf.quants.dequantize float32 output
    rounded to bf16 (nearest even, docs/QUANT-FORMATS.md), with the
    converter's rearrangements undone in numpy (tests/py/gguf_quant_fixtures.py),
    and differs from the bf16 root's;
  - (b) compare of the root (safetensors bf16) vs each llama-k candidate
    (--own-heads: llama-quantize quantizes output.weight): a strict receipt
    whose candidate scope_digest is the census of the file's actual types per
    tensor class (q4_k@4.5, q6_k@6.5625, mixed classes as `mixed`) and whose
    declared_bits is the nominal bits of the predominant type; the dataset's
    disclosure gives the effective bits (quantized bytes x 8 / elements);
  - (c) inspect-model --json: the census and bits per weight of the file;
  - (d) `fidelity quantize --format gguf --type q4_k` of the same fixtures:
    the tensors llama-quantize wrote as Q4_K (and its Q5_0 fallback) are
    byte for byte ours, and our file captures as gguf-py decodes it.

usage: test_gguf_quantized.py BINARY   (needs numpy and gguf; no torch)
"""
import hashlib, json, lzma, os, subprocess, sys, tempfile

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/fidelity"
HERE = os.path.dirname(os.path.abspath(__file__))
VEC = os.path.join(HERE, "..", "vectors", "gguf-quant")
WORK = tempfile.mkdtemp(prefix="fd-ggufq-")
passed = failed = 0

try:
    import numpy as np  # noqa: F401
    import gguf
    import gguf.quants  # noqa: F401
except ImportError as exc:  # CI installs both
    print("skipped (%s)" % exc)
    sys.exit(0)
sys.path.insert(0, HERE)
from gguf_quant_fixtures import dequantized_checkpoint, make_fixture  # noqa: E402

REPO = ("--weights-repository", "test/gguf-quant")
FLOAT = ("F32", "F16", "BF16")
NATIVE = {"F32": "fp32", "F16": "fp16", "BF16": "bf16"}  # the scope digest's names of the float types
# llama.cpp's llama tensor names -> the engine's tensor classes (qscope.c)
CLASS = {"token_embd": "embed_tokens", "output": "lm_head", "attn_q": "attn.qkv", "attn_k": "attn.qkv",
         "attn_v": "attn.qkv", "attn_output": "attn.o", "ffn_gate": "mlp.gate", "ffn_up": "mlp.up",
         "ffn_down": "mlp.down", "attn_norm": "norm", "ffn_norm": "norm", "output_norm": "norm"}


def case(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, str(detail)[:700]))


def run(*args):
    p = subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def W(*p):
    return os.path.join(WORK, *p)


def capture(model, panel, out, role):
    rc, o, e = run("capture", "--model", model, "--panel", panel, "--out", out, "--role", role, "--lane", "other",
                   "--dataset-id", "test." + os.path.basename(out), "--dataset-name", "t", "--cold-run", "c1",
                   "--run-name", "c1", *REPO)
    if rc:
        return None, (o + e)[-600:]
    return json.load(open(os.path.join(out, "fidelity-dataset.json"))), ""


def nominal(tname):
    blck, tsize = gguf.constants.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[tname]]
    return tsize * 8 / blck


def fmt_bits(b):
    return "%d" % b if b == int(b) else repr(b)


# ---------------------------------------------------------------- the committed files
sums = dict(reversed(l.split()) for l in open(os.path.join(VEC, "SHA256SUMS")) if l.strip())
want_types = {}
for l in open(os.path.join(VEC, "TYPES")):
    n, rest = l.split(":", 1)
    want_types[n] = dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in rest.split())
for n in sorted(sums):
    open(W(n), "wb").write(lzma.decompress(open(os.path.join(VEC, n + ".xz"), "rb").read()))
case("%d llama-quantize GGUFs have their recorded sha256" % len(sums),
     len(sums) >= 8 and all(hashlib.sha256(open(W(n), "rb").read()).hexdigest() == h for n, h in sums.items()))
readers = {n: gguf.GGUFReader(W(n)) for n in sorted(sums)}
for n, r in readers.items():
    got = {}
    for t in r.tensors:
        got[t.tensor_type.name] = got.get(t.tensor_type.name, 0) + 1
    case("%s: ggml types as TYPES records (%s)" % (n, " ".join("%s=%d" % kv for kv in sorted(got.items()))),
         got == want_types.get(n), want_types.get(n))
# what the fallbacks leave: the 256-wide llama-k keeps the K-quants asked for, the 64-wide glm-dsa tiny cannot
kq = {"llama-k.q4_k_m.gguf": "Q4_K", "llama-k.q5_k_s.gguf": "Q5_K", "llama-k.q6_k.gguf": "Q6_K",
      "llama-k.q2_k.gguf": "Q2_K", "llama-k.iq4_xs.gguf": "IQ4_XS", "llama-k.iq3_s.gguf": "IQ3_S",
      "llama-k.tq1_0.gguf": "TQ1_0",
      "tiny.iq4_xs.gguf": "IQ4_NL", "tiny.q4_k_m.gguf": "Q5_0"}
case("llama-k files hold the type asked for, tiny's its fallback (IQ4_XS -> IQ4_NL, Q4_K -> Q5_0)", all(kq[n] in want_types.get(n, {}) for n in kq), want_types)

# ---------------------------------------------------------------- (a) digests
roots = {}
for fx in sorted({n.split(".")[0] for n in sums}):
    make_fixture(BIN, fx, W(fx))
    m, err = capture(W(fx), W(fx, "panel"), W("root-" + fx), "root")
    roots[fx] = m
    case("%s: safetensors bf16 root capture" % fx, m is not None, err)
cands = {}
for n in sorted(sums):
    fx = n.split(".")[0]
    dq = W("dq-" + n)
    dequantized_checkpoint(W(n), W(fx), dq)
    want, err = capture(dq, W(fx, "panel"), W("c-dq-" + n), "root")
    got, err2 = capture(W(n), W(fx, "panel"), W("c-" + n), "quant")
    cands[n] = got
    dg = [x["capture"]["capture_content_digest"] if x else None for x in (want, got, roots[fx])]
    case("%s: capture digest == the safetensors of gguf-py's dequantized weights (bf16), != the root's" % n,
         dg[0] is not None and dg[0] == dg[1] and dg[1] != dg[2], (dg, err, err2))

# ---------------------------------------------------------------- (b) compare root vs candidate


def census(r):
    """tensor class -> format@bits from the file's types (qscope.c's rule: one type, else mixed with no bits)"""
    cl = {}
    for t in r.tensors:
        base = t.name.split(".")[-2] if t.name.startswith("blk.") else t.name.rsplit(".", 1)[0]
        if base == "rope_freqs":  # llama3 RoPE's factors, read into the config: not a weight
            continue
        cl.setdefault(CLASS[base], set()).add(t.tensor_type.name)
    cl.setdefault("lm_head", set(cl["embed_tokens"]))  # a tied head is embed_tokens's
    out = {}
    for c, ts in cl.items():
        if len(ts) > 1:
            out[c] = ("quantized" if ts - set(FLOAT) else "native") + ":mixed"  # no bits
        else:
            t = ts.pop()
            out[c] = "%s:%s@%s" % ("native" if t in FLOAT else "quantized", NATIVE.get(t, t.lower()),
                                   fmt_bits(nominal(t)))
    return out


def predominant(r):
    el = {}
    for t in r.tensors:
        if t.tensor_type.name not in FLOAT:
            el[t.tensor_type.name] = el.get(t.tensor_type.name, 0) + int(t.n_elements)
    return max(el, key=lambda k: (el[k], nominal(k)))


for n in sorted(sums):
    if not n.startswith("llama-k.") or not cands.get(n):
        continue
    r = readers[n]
    rc, out, err = run("compare", "--reference", W("root-llama-k"), "--candidate", W("c-" + n), "--own-heads", "--out",
                       W("cmp-" + n))
    case("%s: compare root vs candidate --own-heads" % n, rc == 0, out + err)
    if rc:
        continue
    rec = json.load(open(W("cmp-" + n, "comparison-receipt.json")))
    scope = dict(a.split("=", 1) for a in rec["candidate"]["scope_digest"].split("|") if ":" in a)
    want = census(r)
    major = predominant(r)
    q = [t for t in r.tensors if t.tensor_type.name not in FLOAT]
    eff = sum(int(t.n_bytes) for t in q) * 8 / sum(int(t.n_elements) for t in q)
    wt = rec["candidate"]["weights"]
    case("%s: strict receipt, KL > 0, scope census of the file's types %s" % (n, sorted(want.items())),
         rec["comparability"]["class"] == "strict" and rec["kl"]["mean"] > 0 and scope == want, (scope, want))
    case("%s: declared_bits %s = nominal of the predominant %s, codec gguf-%s" % (n, wt.get("declared_bits"), major,
                                                                                   major.lower()),
         wt.get("declared_bits") == nominal(major) and wt.get("codec") == "gguf-" + major.lower(), wt)
    d = [x["detail"] for x in cands[n]["disclosures"] if x["code"] == "activation_quantization_not_captured"]
    case("%s: disclosure gives effective bits %.6g" % (n, eff), len(d) == 1 and ("effective %.6g " % eff) in d[0], d)

# ---------------------------------------------------------------- (c) inspect-model
for n, r in readers.items():
    rc, out, err = run("inspect-model", W(n), "--json")
    o = json.loads(out) if rc == 0 else {}
    c = o.get("census", {})
    bpw = o.get("bits_per_weight", {})
    q = [t for t in r.tensors if t.tensor_type.name not in FLOAT]
    eff = sum(int(t.n_bytes) for t in q) * 8 / sum(int(t.n_elements) for t in q)
    ok = (rc == 0 and o.get("model", {}).get("capturable") is True
          and {k: v["tensors"] for k, v in c.items()} == want_types[n]
          and all(abs(v["nominal_bits"] - nominal(k)) < 1e-12 for k, v in c.items())
          and bpw.get("nominal_type") == predominant(r) and abs(bpw.get("effective_quantized", 0) - eff) < 1e-12)
    case("%s: inspect-model census and bits per weight (%s, effective %.4f)" % (n, bpw.get("nominal_type"), eff), ok,
         (out + err)[-500:])

# ---------------------------------------------------------------- (d) our Q4_K writer vs llama-quantize's bytes
# `fidelity quantize --format gguf --type q4_k` (quantize_row_q4_K_ref; Q5_0 on rows not a multiple of 256, F16
# on rows not a multiple of 32): every tensor llama-quantize wrote as Q4_K or Q5_0 in the committed files is
# byte for byte ours
for fx, ref in (("llama-k", "llama-k.q4_k_m.gguf"), ("tiny", "tiny.q4_k_m.gguf")):
    rc, out, err = run("quantize", "--format", "gguf", "--type", "q4_k", "--src", W(fx), "--dst", W("ours-" + fx + ".gguf"))
    if rc:
        case("%s: quantize --format gguf --type q4_k" % fx, False, out + err)
        continue
    ours = {t.name: t for t in gguf.GGUFReader(W("ours-" + fx + ".gguf")).tensors}
    # indexer.proj (glm-dsa): the converter keeps it F32 and so does our writer; llama-quantize quantizes it
    theirs = [t for t in readers[ref].tensors if t.tensor_type.name in ("Q4_K", "Q5_0") and "indexer.proj." not in t.name]
    keep = [n for n in ours if "indexer.proj." in n]
    case("%s: indexer.proj stays F32 in ours (%d)" % (fx, len(keep)),
         all(ours[n].tensor_type.name == "F32" for n in keep) and (fx != "tiny" or keep), keep)
    same = [t.name for t in theirs if t.name in ours and ours[t.name].tensor_type == t.tensor_type
            and ours[t.name].data.tobytes() == t.data.tobytes()]
    kinds = sorted({t.tensor_type.name for t in theirs})
    case("%s: quantize --type q4_k == llama-quantize's bytes on its %d %s tensors" % (fx, len(theirs), "/".join(kinds)),
         len(theirs) >= 5 and len(same) == len(theirs), sorted(set(t.name for t in theirs) - set(same)))
    dq = W("dq-ours-" + fx)
    dequantized_checkpoint(W("ours-" + fx + ".gguf"), W(fx), dq)
    want, err = capture(dq, W(fx, "panel"), W("c-dq-ours-" + fx), "root")
    got, err2 = capture(W("ours-" + fx + ".gguf"), W(fx, "panel"), W("c-ours-" + fx), "quant")
    dg = [x["capture"]["capture_content_digest"] if x else None for x in (want, got)]
    case("%s: our Q4_K GGUF's capture digest == the safetensors of gguf-py's dequantized weights" % fx,
         dg[0] is not None and dg[0] == dg[1], (dg, err, err2))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
