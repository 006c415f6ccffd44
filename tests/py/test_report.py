#!/usr/bin/env python3
"""`fidelity report` and `compare --report` (docs/REPORT.md): receipts from
the demo and from write-fixture datasets that declare their bits; every
<svg> parses as XML; the headline cells carry the receipts' values exactly;
a hostile label is escaped everywhere; the page is byte-stable and
self-contained (no script, nothing fetched); a tampered receipt, a tampered
or missing tokenwise file and a forger's resealed receipt are refused with
exit 3 (or drawn from the summary with a visible note under --summary-only);
usage errors exit 4.  With Chromium present, a headless screenshot must show
the plots (palette colours rendered, many colours, not blank); with
FIDELITY_REQUIRE_CHROMIUM=1 a missing Chromium is a failure.
usage: test_report.py BINARY"""
import csv, hashlib, html, html.parser, io, json, os, re, shutil, struct, subprocess, sys, tempfile, urllib.parse, zlib
import xml.etree.ElementTree as ET
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dsutil import load, dump, seal

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="fd-report-")
results = []
SAN_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
HOSTILE = ["<script>&\"'", "q4 <b>\x01 ' & \u00e9\u2603"]


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-66s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[:2000]))
    return ok


def fid(*args):
    p = subprocess.run([BIN] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if any(m in out + err for m in SAN_MARKERS):
        case("sanitizer-clean: " + " ".join(args)[:80], False, err[-3000:])
    return p.returncode, out, err


def read(path):
    with open(path, "rb") as f:
        return f.read()


# --- receipts -------------------------------------------------------------------------
demo = os.path.join(WORK, "demo")
rc, out, err = fid("demo", "--out", demo)
case("demo runs", rc == 0, out[-2000:] + err[-2000:])
DEMO_CMP = os.path.join(demo, "compare")
demo_receipts = sorted(os.path.join(DEMO_CMP, d, "comparison-receipt.json") for d in os.listdir(DEMO_CMP))
DEMO_ROWS = ["01-rtn-int8", "02-rtn-int4", "03-fp8-experts", "04-nvfp4-experts", "05-gguf-q4_0-experts",
             "06-ct-w4a16-experts", "07-gptq-w4-experts", "08-mlx-4bit-experts"]
case("demo wrote one receipt per candidate (int8, int4, fp8, nvfp4, gguf q4_0, compressed-tensors W4A16, GPTQ 4-bit, "
     "MLX 4-bit)", [os.path.basename(os.path.dirname(r)) for r in demo_receipts] == DEMO_ROWS, demo_receipts)
case("demo prints the KL ordering of all 8 candidates",
     out.count(" < ") == 7 and all(("%s " % r[3:]) in out.split("KL ordering")[-1] for r in DEMO_ROWS), out[-1500:])
DEMO_HTML = os.path.join(demo, "report.html")
if os.path.isfile(DEMO_HTML):  # compare --report reads each candidate's declared bits: every candidate drawn
    dsvg = [s for s in re.findall(r"<svg\b.*?</svg>", open(DEMO_HTML, encoding="utf-8").read(), re.S)
            if "Size against mean KL" in s]
    case("the demo's own report draws every candidate on the size-vs-KL plot (RTN bits from the scope file)",
         len(dsvg) == 1 and "declares no bits" not in dsvg[0] and "Pareto frontier:" in dsvg[0], dsvg[:1])

CAPQ = os.path.join(WORK, "capq")
rc, out, err = fid("capture", "--model", os.path.join(demo, "model-int4"), "--panel", os.path.join(demo, "model", "panel"),
                   "--out", CAPQ, "--role", "quant", "--lane", "other", "--dataset-id", "fidelity--t.int4",
                   "--dataset-name", "t", "--scope-file", os.path.join(demo, "scope-int4.json"), "--windows", "1",
                   "--declared-bits", "4")
case("capture --declared-bits records weights.declared_bits = 4.0 and verifies",
     rc == 0 and load(os.path.join(CAPQ, "fidelity-dataset.json"))["weights"]["declared_bits"] == 4.0
     and fid("verify", CAPQ)[0] == 0, out + err)

CAP8 = os.path.join(WORK, "cap8")
rc, out, err = fid("capture", "--model", os.path.join(demo, "model-int8"), "--panel", os.path.join(demo, "model", "panel"),
                   "--out", CAP8, "--role", "quant", "--lane", "other", "--dataset-id", "fidelity--t.int8",
                   "--dataset-name", "t", "--scope-file", os.path.join(demo, "scope-int8.json"), "--windows", "1")
case("an RTN copy (no quantization_config) declares its --scope-file's quantized bits: declared_bits 8",
     rc == 0 and load(os.path.join(CAP8, "fidelity-dataset.json"))["weights"]["declared_bits"] == 8, out + err)
rc, out, err = fid("capture", "--model", os.path.join(demo, "model-int8"), "--panel", os.path.join(demo, "model", "panel"),
                   "--out", os.path.join(WORK, "cap8x"), "--role", "quant", "--lane", "other", "--dataset-id",
                   "fidelity--t.int8", "--dataset-name", "t", "--scope-file", os.path.join(demo, "scope-int8.json"),
                   "--windows", "1", "--declared-bits", "4")
case("--declared-bits 4 against an int8 scope: declared_bits_mismatch, exit 3, nothing written",
     rc == 3 and "declared_bits_mismatch" in out + err and not os.path.exists(os.path.join(WORK, "cap8x")), out + err)

FX = os.path.join(WORK, "fx")
SMALL = ("--records", "6", "--tokens", "40", "--vocab", "500", "--fixed-time")
ok = fid("write-fixture", "--out", os.path.join(FX, "root"), *SMALL)[0] == 0
for name, noise, pert, bits in (("q8", "4", "0.01", "8"), ("q45", "3", "0.05", "4.5")):
    ok &= fid("write-fixture", "--out", os.path.join(FX, name), *SMALL, "--role", "quant", "--noise-seed", noise,
              "--perturb", pert, "--declared-bits", bits, "--dataset-id", "fidelity--fixture." + name)[0] == 0
case("fixture datasets (declared bits 8 and 4.5)", ok)
case("declared_bits is in the candidate manifest",
     load(os.path.join(FX, "q45", "fidelity-dataset.json"))["weights"]["declared_bits"] == 4.5)
FX_CMP, FX_HTML = os.path.join(FX, "cmp"), os.path.join(FX, "report.html")
rc, out, err = fid("compare", "--reference", os.path.join(FX, "root"), "--candidate", os.path.join(FX, "q8"),
                   "--candidate", os.path.join(FX, "q45"), "--candidate-label", HOSTILE[0],
                   "--candidate-label", HOSTILE[1], "--out", FX_CMP, "--created-utc", "2026-01-01T00:00:00Z",
                   "--report", FX_HTML)
case("compare --report writes receipts and the page", rc == 0 and os.path.isfile(FX_HTML), out + err)
fx_receipts = sorted(os.path.join(FX_CMP, d, "comparison-receipt.json") for d in os.listdir(FX_CMP)
                     if os.path.isdir(os.path.join(FX_CMP, d)))


# --- page parsing ----------------------------------------------------------------------
class Cells(html.parser.HTMLParser):
    """Per headline row: data-field -> (data-value, shown text); the row's receipt seal."""
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows, self.stack, self.in_headline = [], [], False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id") == "headline":
            self.in_headline = True
        if not self.in_headline:
            return
        if tag == "tr" and "data-candidate" in a:
            self.rows.append({"_receipt": a.get("data-receipt"), "_n": a["data-candidate"], "_pareto": a.get("data-pareto")})
        if "data-field" in a and self.rows:
            self.stack.append([a["data-field"], a.get("data-value"), ""])
        elif self.stack and tag not in ("br",):
            self.stack.append(None)

    def handle_endtag(self, tag):
        if tag == "table":
            self.in_headline = False
        if self.stack:
            top = self.stack.pop()
            if top is not None:
                self.rows[-1][top[0]] = (top[1], top[2])

    def handle_data(self, data):
        for s in self.stack:
            if s is not None:
                s[2] += data


def receipt_value(r, path):
    v = r
    for k in path.split("."):
        v = v[k]
    return v


FIELDS = ("kl.mean", "uncertainty.ci95_low", "uncertainty.ci95_high", "kl_reverse_mean", "top1_agreement",
          "kl.median", "kl.p99", "kl.max", "measurement_scope.scored_positions", "measurement_scope.contexts")


def pareto_of(rs, bits):
    """Indices (0-based) of the candidates no other beats on both declared bits and mean KL."""
    pts = [(bits.get(r["candidate"]["dataset_sha256"]) if bits else None, r["kl"]["mean"]) for r in rs]
    return {i for i, (b, k) in enumerate(pts) if b is not None and not any(
        j != i and bo is not None and bo <= b and ko <= k and (bo < b or ko < k) for j, (bo, ko) in enumerate(pts))}


def check_extras(tag, text, svgs, rows, rs, bits):
    """The CSV download, the Pareto frontier, the per-domain bars, the folded seals."""
    m = re.findall(r'<a download="fidelity-headline.csv" href="data:text/csv;charset=utf-8,([A-Za-z0-9%._~-]*)"', text)
    table = list(csv.reader(io.StringIO(urllib.parse.unquote(m[0]) if m else "", newline=""))) if len(m) == 1 else []
    want_p = pareto_of(rs, bits)
    mism = []
    if len(table) != len(rs) + 1:
        mism.append(("rows", len(table)))
    else:
        head = table[0]
        for i, (row, r) in enumerate(zip(table[1:], rs)):
            d = dict(zip(head, row))
            if d["label"] != r["candidate"]["label"] or d["class"] != r["comparability"]["class"] \
                    or d["receipt_sha256"] != r["receipt_sha256"] or d["candidate"] != str(i + 1):
                mism.append(("ids", i, d))
            b = bits.get(r["candidate"]["dataset_sha256"]) if bits else None
            if (float(d["declared_bits"]) if d["declared_bits"] else None) != b:
                mism.append(("declared_bits", i, d["declared_bits"], b))
            if d["pareto"] != ("1" if i in want_p else "0"):
                mism.append(("pareto", i, d["pareto"]))
            for f in FIELDS + ("js.mean",):
                try:
                    want = receipt_value(r, f)
                except (KeyError, TypeError):
                    want = None
                got = d[f]
                if want is None and got != "" or want is not None and (got == "" or type(want)(got) != want):
                    mism.append((f, i, got, want))
    case("%s: the CSV download carries the headline values exactly (labels, bits, Pareto, seals)" % tag, not mism,
         mism or len(m))
    case("%s: headline rows marked data-pareto = the frontier computed from the receipts and bits %s"
         % (tag, sorted(i + 1 for i in want_p)), {i for i, row in enumerate(rows) if row["_pareto"] == "1"} == want_p)
    scat = [s for s in svgs if "Size against mean KL" in s]
    if scat:
        listed = re.findall(r"Pareto frontier:((?: \[\d+\])+)", scat[0])
        got = {int(x) - 1 for x in re.findall(r"\d+", listed[0])} if listed else set()
        case("%s: the size-vs-KL plot rings and lists the same frontier" % tag, got == want_p and
             scat[0].count('r="10.00" fill="none"') == len(want_p), (listed, want_p))
    doms = sorted({k for r in rs for k in (r.get("per_domain") or {})})
    dsvg = [s for s in svgs if "Mean KL per domain" in s]
    if doms:
        texts = "".join(ET.fromstring(dsvg[0]).itertext()) if dsvg else ""
        case("%s: per-domain bars: one figure naming every domain of the receipts %s" % (tag, doms[:4]),
             len(dsvg) == 1 and all(d in texts for d in doms) and dsvg[0].count("<rect") >= len(doms), len(dsvg))
    else:
        case("%s: no per-domain figure when no receipt has per_domain" % tag, not dsvg)
    bad = []
    for i, r in enumerate(rs):
        fig = [s for s in svgs if "[%d] Mean KL per context" % (i + 1) in s]
        wids = [c.get("window_id") or "" for c in r.get("per_context") or []]
        every = 1 if len(wids) <= 40 else -(-len(wids) // 40)
        labels = re.findall(r'class="small" transform="rotate\(-40[^"]*"\>([^<]*)<', fig[0]) if fig else []
        want = [w if len(w) <= 14 else w[:13] + "\u2026" for w in wids[::every]]
        if [html.unescape(x) for x in labels] != want:
            bad.append((i, labels[:3], want[:3]))
    case("%s: per-context bars on a categorical axis: every context's window_id under its bar" % tag, not bad, bad)
    case("%s: each candidate's seals folded in a <details> block" % tag,
         text.count('<details class="ids">') == len(rs) and text.count('<table class="ids"') == len(rs))


def check_page(tag, path, receipts, n_svg, bits=None):
    data = read(path)
    text = data.decode("utf-8")
    svgs = re.findall(r"<svg\b.*?</svg>", text, re.S)
    rs = [load(rp) for rp in receipts]
    n_svg += any(r.get("per_domain") for r in rs)  # the per-domain figure
    case("%s: %d <svg> figures" % (tag, n_svg), len(svgs) == n_svg, len(svgs))
    bad = []
    for i, s in enumerate(svgs):
        try:
            root = ET.fromstring(s)
            if root.tag != "{http://www.w3.org/2000/svg}svg":
                bad.append((i, root.tag))
        except ET.ParseError as ex:
            bad.append((i, str(ex)))
    case("%s: every <svg> is well-formed XML in the SVG namespace" % tag, not bad, bad)
    case("%s: self-contained (no script, no external resource; links only to in-page #anchors)" % tag,
         "<script" not in text.lower() and
         not re.search(r"src\s*=|href\s*=\s*\"(?!#[\w-]+\"|data:text/csv;charset=utf-8,[A-Za-z0-9%._~-]*\")", text, re.I) and
         not re.search(r"url\(", text) and set(re.findall(r"https?://[^\"' ]+", text)) <= {"http://www.w3.org/2000/svg"})
    p = Cells()
    p.feed(text)
    case("%s: one headline row per receipt" % tag, len(p.rows) == len(receipts), len(p.rows))
    mism = []
    for row, rp in zip(p.rows, receipts):
        r = load(rp)
        if row["_receipt"] != r["receipt_sha256"]:
            mism.append(("seal", row["_receipt"]))
        for f in FIELDS:
            want = receipt_value(r, f)
            got = row.get(f)
            if got is None:
                mism.append((f, "missing"))
                continue
            gv = int(got[0]) if isinstance(want, int) else float(got[0])
            if gv != want or type(gv) is not type(want):
                mism.append((f, got[0], want))
            shown = float(got[1].replace("\u2013", "").strip())
            if abs(shown - want) > 5e-4 * abs(want):
                mism.append((f, "shown", got[1], want))
        if row.get("comparability.class", (None,))[0] != r["comparability"]["class"]:
            mism.append(("class", row.get("comparability.class")))
        shown_label = re.sub(r"[\x00-\x08\x0b-\x1f]", "?", r["candidate"]["label"])  # XML 1.0 has no C0 controls
        if row.get("candidate.label", (None, None))[1] != shown_label:
            mism.append(("label", row.get("candidate.label"), r["candidate"]["label"]))
        if bits is not None:
            b = bits.get(r["candidate"]["dataset_sha256"])
            if b is not None and float(row.get("declared_bits", ("nan",))[0]) != b:
                mism.append(("declared_bits", row.get("declared_bits"), b))
        # each seal is printed under the plots that draw from it
        cited = sum(("receipt_sha256 " + r["receipt_sha256"]) in s for s in svgs)
        if cited < 4:
            mism.append(("receipt seal printed under only %d figures" % cited,))
        for key in ("reference", "candidate"):
            if r[key]["dataset_sha256"] not in text:
                mism.append((key + " dataset seal missing",))
    case("%s: headline values equal the receipts exactly (data-value), seals cited" % tag, not mism, mism)
    check_extras(tag, text, svgs, p.rows, rs, bits)
    return text, svgs


# --- the demo receipts ------------------------------------------------------------------
R1, R2, R3 = (os.path.join(WORK, n) for n in ("r1.html", "r2.html", "r3.html"))
rc, out, err = fid("report", DEMO_CMP, "--out", R1)
case("report DIR (compare --out with NN-LABEL/) exits 0", rc == 0, out + err)
check_page("demo", R1, demo_receipts, 3 + 2 * len(demo_receipts))
fid("report", DEMO_CMP, "--out", R2)
case("byte-stable across two runs", read(R1) == read(R2))
fid("report", *demo_receipts, "--out", R3)
case("receipt files in the same order give the same bytes", read(R1) == read(R3))
case("no size-vs-KL plot without declared bits, and it says why",
     b"no size-against-KL plot" in read(R1))
rc, out, err = fid("report", os.path.join(demo, "self-compare"), "--out", os.path.join(WORK, "sc.html"))
case("an exact self-compare (all zeros) renders", rc == 0, err)
if rc == 0:
    check_page("self-compare", os.path.join(WORK, "sc.html"),
               [os.path.join(demo, "self-compare", "comparison-receipt.json")], 3 + 2)

# --- compare --report: declared bits, hostile labels ---------------------------------------
bits = {load(os.path.join(FX, n, "fidelity-dataset.json"))["dataset_sha256"]: b for n, b in (("q8", 8.0), ("q45", 4.5))}
text, svgs = check_page("compare --report", FX_HTML, fx_receipts, 4 + 2 * 2, bits)
case("hostile label: no raw tag from a label anywhere", "<script>" not in text and "<b>" not in text)
case("hostile label: escaped in the table and in the SVG",
     "&lt;script&gt;&amp;&quot;&#39;" in text and sum("&lt;script&gt;&amp;&quot;&#39;" in s for s in svgs) >= 4)
case("hostile label: a control character never reaches the XML", "\x01" not in text)
lab = [ET.fromstring(s) for s in svgs]
texts = ["".join(t.itertext()) for t in lab]
case("hostile label reads back verbatim from the parsed SVG", any(HOSTILE[0] in t for t in texts))
case("size-vs-KL scatter drawn", any("Size against mean KL" in t for t in texts))
rc, out, err = fid("report", FX_CMP, "--dataset", os.path.join(FX, "q45"), "--dataset", os.path.join(FX, "q8"),
                   "--out", os.path.join(WORK, "fx2.html"))
case("report --dataset gives the page compare --report wrote", rc == 0 and read(os.path.join(WORK, "fx2.html")) == read(FX_HTML), err)

# --- a dominated candidate: more bits and more KL than another, off the Pareto frontier -----
ok = fid("write-fixture", "--out", os.path.join(FX, "q6"), *SMALL, "--role", "quant", "--noise-seed", "5",
         "--perturb", "0.2", "--declared-bits", "6", "--dataset-id", "fidelity--fixture.q6")[0] == 0
FX3, P3 = os.path.join(FX, "cmp3"), os.path.join(FX, "p3.html")
rc, out, err = fid("compare", "--reference", os.path.join(FX, "root"), *[a for n in ("q8", "q45", "q6") for a in
                   ("--candidate", os.path.join(FX, n))], "--out", FX3, "--created-utc", "2026-01-01T00:00:00Z",
                   "--report", P3)
if case("compare --report with three candidates that declare 8, 4.5 and 6 bits", ok and rc == 0, out + err):
    rec3 = sorted(os.path.join(FX3, d, "comparison-receipt.json") for d in os.listdir(FX3)
                  if os.path.isdir(os.path.join(FX3, d)))
    bits3 = dict(bits)
    bits3[load(os.path.join(FX, "q6", "fidelity-dataset.json"))["dataset_sha256"]] = 6.0
    check_page("three candidates", P3, rec3, 4 + 2 * 3, bits3)
    kl = [load(r)["kl"]["mean"] for r in rec3]
    case("the 6-bit candidate has more KL than the 4.5-bit one (%.3g > %.3g) and is off the frontier"
         % (kl[2], kl[1]), kl[2] > kl[1] and pareto_of([load(r) for r in rec3], bits3) == {0, 1})

# --- refusals -------------------------------------------------------------------------------
def tampered(name, edit_receipt=None, edit_tokenwise=None, reseal=False):
    d = os.path.join(WORK, "t-" + name)
    shutil.copytree(os.path.dirname(demo_receipts[0]), d)
    rp = os.path.join(d, "comparison-receipt.json")
    if edit_receipt:
        r = load(rp)
        edit_receipt(r)
        if reseal:
            seal(r, "receipt_sha256")
        dump(rp, r)
    if edit_tokenwise:
        edit_tokenwise(os.path.join(d, "tokenwise-kld.npy"))
    return d


def refused(name, d, code, *extra):
    out_html = os.path.join(WORK, name + ".html")
    rc, out, err = fid("report", d, "--out", out_html, *extra)
    case("%s: exit 3 REFUSED [%s], nothing written" % (name, code),
         rc == 3 and ("REFUSED [%s]" % code) in out and not os.path.exists(out_html), (rc, out, err))


def flip(path):
    b = bytearray(read(path))
    b[-3] ^= 1
    with open(path, "wb") as f:
        f.write(bytes(b))


def bump_mean(r):
    r["kl"]["mean"] = r["kl"]["mean"] * 0.5
    r["metric"]["value"] = r["kl"]["mean"]


refused("edited receipt (seal broken)", tampered("edit", bump_mean), "receipt_invalid")
def bump_all_means(r):
    """A consistent forgery: the per-context means follow kl.mean, so validate --receipt's
    count checks pass and only the tokenwise recomputation can catch it."""
    bump_mean(r)
    for c in r.get("per_context") or []:
        c["mean"] = c["mean"] * 0.5


refused("forger reseals an edited receipt", tampered("reseal", bump_all_means, reseal=True), "tokenwise_mismatch")
refused("forger reseals an inconsistent receipt", tampered("reseal2", bump_mean, reseal=True), "receipt_invalid")
refused("tokenwise flipped", tampered("flip", edit_tokenwise=flip), "tokenwise_mismatch")
refused("tokenwise missing", tampered("gone", edit_tokenwise=os.remove), "tokenwise_missing")
refused("not a receipt", os.path.join(FX, "root", "fidelity-dataset.json"), "receipt_invalid")
refused("dataset matching no receipt", DEMO_CMP, "dataset_unmatched", "--dataset", os.path.join(FX, "q8"))
d = tampered("flip2", edit_tokenwise=flip)
SO = os.path.join(WORK, "summary.html")
rc, out, err = fid("report", d, "--out", SO, "--summary-only")
case("--summary-only draws a mismatched tokenwise from the receipt, with a note",
     rc == 0 and b"no usable tokenwise file" in read(SO) and b"tokenwise_mismatch" in read(SO), (rc, err))
if rc == 0:
    check_page("summary-only", SO, [os.path.join(d, "comparison-receipt.json")], 3 + 1)
for args in ((DEMO_CMP,), ("--out", R1), (DEMO_CMP, "--out", R1, "--bogus")):
    rc, out, err = fid("report", *args)
    case("usage error exits 4: %s" % " ".join(os.path.basename(a) for a in args), rc == 4, (rc, err))

# --- headless Chromium screenshot ----------------------------------------------------------------
def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB/RGBA PNG, stdlib only."""
    data = read(path)
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, ihdr
    bpp = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


chrome = next((shutil.which(c) for c in ("chromium", "chromium-headless-shell", "chromium-browser")
               if shutil.which(c)), None)
if not chrome:
    if os.environ.get("FIDELITY_REQUIRE_CHROMIUM") == "1":
        case("chromium present (FIDELITY_REQUIRE_CHROMIUM=1)", False, "install the Debian package chromium")
    else:
        print("     note: chromium not installed: the screenshot check is skipped")
else:
    png = os.path.join(WORK, "shot.png")
    p = subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--screenshot=" + png, "--window-size=1280,2000", "file://" + os.path.abspath(FX_HTML)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if case("chromium wrote a screenshot", os.path.isfile(png), p.stderr.decode(errors="replace")[-2000:]):
        w, h, bpp, rows = png_pixels(png)
        colours, nonwhite, total, blue, orange = set(), 0, 0, 0, 0
        for line in rows:
            for i in range(0, len(line), bpp):
                px = bytes(line[i:i + 3])
                colours.add(px)
                total += 1
                nonwhite += px != b"\xff\xff\xff"
                blue += px == b"\x4e\x79\xa7"
                orange += px == b"\xf2\x8e\x2b"
        case("screenshot is 1280x2000", (w, h) == (1280, 2000), (w, h))
        case("screenshot not blank: >= 200 colours, >= 3%% non-white (%d, %.1f%%)" % (len(colours), 100.0 * nonwhite / total),
             len(colours) >= 200 and nonwhite >= 0.03 * total)
        case("the SVG plots rendered: both series colours painted (%d, %d px)" % (blue, orange),
             blue >= 1000 and orange >= 1000)
        shutil.copy(png, os.path.join(os.path.dirname(os.path.abspath(BIN)), "report-screenshot.png"))

shutil.rmtree(WORK, ignore_errors=True)
npass, nfail = results.count(True), results.count(False)
print("%d passed, %d failed" % (npass, nfail))
sys.exit(1 if nfail else 0)
