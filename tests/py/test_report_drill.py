#!/usr/bin/env python3
"""The report's per-token drill-down (issue 22 item 8, docs/REPORT.md
"Drill-down"): the demo's root against its int8 and int4 candidates through
`compare --csv`, then `report --tokenizer --panel`.  Checked against
independent Python: the worst positions by KL (stable sort of the sealed
tokenwise array) and by delta-p (tokenwise.csv), their exact values, the
observed next token and the left context read from the panel's .npy and
decoded with the fixture's byte-level vocabulary, each side's top-1 id, the
per-token strips (one cell per scored position, the heat level recomputed,
every table link resolving to a strip).  A tokenwise.csv that is not the
sealed array (one kl digit, a dropped row, a moved context) and a panel
whose tokens are not the observed ones are refused (exit 3, no page);
--summary-only leaves the csv out with a note; without --csv the drill-down
comes from the sealed array alone.  With Chromium, a headless screenshot of
the page must show the strips' heat colours (FIDELITY_REQUIRE_CHROMIUM=1:
Chromium required); a copy is left beside the binary as
report-drill-screenshot.png.
usage: test_report_drill.py BINARY"""
import csv, html, json, math, os, re, shutil, struct, subprocess, sys, tempfile, zlib

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="fd-drill-")
results = []
SAN = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-70s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[:1500]))
    return ok


def fid(*args):
    p = subprocess.run([BIN] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if any(m in out + err for m in SAN):
        case("sanitizer-clean: " + " ".join(map(str, args))[:80], False, err[-3000:])
    return p.returncode, out + err


def W(*p):
    return os.path.join(WORK, *p)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def npy(path):
    """A 1-D .npy of <f8 / <i8 / <i4 / <u4 (stdlib only)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<H", data[8:10])[0]
    hdr = data[10:10 + n].decode()
    descr = re.search(r"'descr': *'([^']+)'", hdr).group(1)
    body = data[10 + n:]
    code = {"<f8": "d", "<i8": "q", "<i4": "i", "<u4": "I", "<i2": "h", "<u2": "H"}[descr]
    return list(struct.unpack("<%d%s" % (len(body) // struct.calcsize(code), code), body))


def pyrepr(v):
    return repr(float(v))


def refusal(text):
    m = re.search(r"REFUSED \[([a-z_]+)\]", text)
    return m.group(1) if m else None


# ------------------------------------------------------------------ inputs
demo = W("demo")
rc, text = fid("demo", "--out", demo)
case("demo runs", rc == 0, text[-1500:])
CMP = W("cmp")
rc, text = fid("compare", "--reference", os.path.join(demo, "root"), "--candidate", os.path.join(demo, "int8"),
               "--candidate", os.path.join(demo, "int4"), "--out", CMP, "--csv", "--created-utc", "2026-01-01T00:00:00Z")
case("compare --csv: two candidates", rc == 0, text[-1500:])
cands = sorted(d for d in os.listdir(CMP) if os.path.isdir(os.path.join(CMP, d)))
TOKJ = os.path.join(demo, "model", "tokenizer.json")
PANEL = os.path.join(demo, "model", "panel")
tj = load(TOKJ)
specials = {t["id"]: t["content"] for t in tj["added_tokens"]}
vocab = tj["model"]["vocab"]
case("the fixture tokenizer is byte-level: byte b is id 4 + b (the oracle below relies on it)",
     all(vocab.get(c) == 4 + b for b, c in [(33, "!"), (65, "A"), (97, "a")]) and set(specials) == {0, 1, 2, 3}, specials)


def decode(ids):
    """The byte-level decode for ASCII bytes and the special tokens; None where the oracle does not apply."""
    out = ""
    for i in ids:
        if i in specials:
            out += specials[i]
        elif 4 + 32 <= i <= 4 + 126:
            out += chr(i - 4)
        else:
            return None
    return out


panel = load(os.path.join(PANEL, "panel.json"))
windows = {}
for w in panel["windows"]:
    rel = os.path.join(PANEL, "arrays", w["window_id"] + ".tokens.npy")  # the panel's implicit layout
    windows[w["window_id"]] = npy(rel) if os.path.isfile(rel) else None
case("panel windows read with the stdlib (.npy)", windows and all(windows.values()), sorted(os.listdir(PANEL)))

HTML = W("drill.html")
rc, text = fid("report", CMP, "--out", HTML, "--tokenizer", TOKJ, "--panel", PANEL)
case("report --tokenizer --panel writes the page", rc == 0 and os.path.isfile(HTML), text)
page = open(HTML, encoding="utf-8").read() if rc == 0 else ""


def section(page, n):
    m = re.search(r'<section class="drill" id="drill-%d">(.*?)</section>' % n, page, re.S)
    return m.group(1) if m else ""


def table(sec, tid):
    m = re.search(r'<table class="worst" id="%s">(.*?)</table>' % tid, sec, re.S)
    return m.group(1) if m else ""


def rows_of(tab):
    return re.findall(r'<tr data-position="(\d+)">(.*?)</tr>', tab, re.S)


def cells(row):
    return re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)


def value(row, field):
    m = re.search(r'data-field="%s" data-value="([^"]+)"' % field, row)
    return m.group(1) if m else None


def span_text(cell):
    m = re.search(r'<span class="tk">(.*?)</span>', cell, re.S)
    return html.unescape(m.group(1)) if m else None


# ------------------------------------------------------------------ the drill-down against Python
for n, d in enumerate(cands, 1):
    rdir = os.path.join(CMP, d)
    receipt = load(os.path.join(rdir, "comparison-receipt.json"))
    kl = npy(os.path.join(rdir, "tokenwise-kld.npy"))
    with open(os.path.join(rdir, "tokenwise.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    sec = section(page, n)
    case("[%d] a drill-down section, linked from the candidate's heading" % n,
         sec and ('href="#drill-%d"' % n) in page, d)
    want = sorted((i for i in range(len(kl)) if kl[i] > 0), key=lambda i: (-kl[i], i))[:20]
    got = rows_of(table(sec, "worst-kl-%d" % n))
    case("[%d] worst by KL: the 20 largest positions of the sealed array, in order" % n,
         [int(p) for p, _ in got] == want, ([int(p) for p, _ in got], want))
    case("[%d] worst by KL: KL cells carry the array's exact value (repr)" % n,
         got and all(value(r, "kl") == pyrepr(kl[int(p)]) for p, r in got))
    case("[%d] worst by KL: reverse KL, delta-p, p ref, p cand = tokenwise.csv exactly" % n,
         got and all(value(r, "reverse_kl") == pyrepr(rows[int(p)]["reverse_kl"]) and value(r, "delta_p")
                     == pyrepr(rows[int(p)]["delta_p"]) and value(r, "p_reference") == pyrepr(rows[int(p)]["p_reference"])
                     and value(r, "p_candidate") == pyrepr(rows[int(p)]["p_candidate"]) for p, r in got))
    dp = [float(x["delta_p"]) for x in rows]
    want_dp = sorted((i for i in range(len(dp)) if dp[i] < 0), key=lambda i: (dp[i], i))[:20]
    got_dp = rows_of(table(sec, "worst-dp-%d" % n))
    case("[%d] worst by delta-p: the 20 most negative, in order" % n,
         want_dp and [int(p) for p, _ in got_dp] == want_dp, ([int(p) for p, _ in got_dp], want_dp))
    # context, row, observed token, top-1 ids, left context
    pc = {c["index"]: c for c in receipt["per_context"]}
    ok_ids, ok_left, ok_ctx, checked_left, miss_ok = True, True, True, 0, True
    for p, r in got + got_dp:
        x = rows[int(p)]
        c = cells(r)
        ctx, row, pos, tok = int(x["context"]), int(x["row"]), int(x["position"]), int(x["token_id"])
        wid = pc[ctx]["window_id"]
        ok_ctx &= ('href="#win-%d-%d"' % (n, ctx)) in c[1] and wid in c[1] and c[2] == str(row)
        ids = windows[wid]
        ok_ids &= ids[pos + 1] == tok and ('<span class="id">%d</span>' % tok) in c[4]
        ok_ids &= ('<span class="id">%s</span>' % x["top1_reference"]) in c[5]
        ok_ids &= ('<span class="id">%s</span>' % x["top1_candidate"]) in c[6]
        miss_ok &= ('class="miss"' in r) == (x["top1_match"] == "0")
        left = ids[max(0, pos + 1 - 16):pos + 1]
        oracle = decode(left)
        if oracle is not None:
            checked_left += 1
            shown = span_text(c[3])
            ok_left &= shown == oracle and c[3].startswith("&#8230;") == (pos + 1 > 16)
    case("[%d] each worst row: context link, window id, row" % n, ok_ctx)
    case("[%d] each worst row: observed next token = panel ids[p+1] = csv token_id; top-1 ids = csv" % n, ok_ids)
    case("[%d] top-1 disagreements are marked" % n, miss_ok)
    case("[%d] left context = the panel's 16 tokens up to p, decoded (%d rows with an ASCII oracle)" % (n, checked_left),
         ok_left and checked_left >= 10)
    # per-token strips
    strips = dict(re.findall(r'<div class="win" id="win-%d-(\d+)">.*?<div class="strip">(.*?)</div></div>' % n, sec, re.S))
    hk = [c["index"] for c in receipt["high_kld_contexts"]]
    case("[%d] strips: the receipt's high-KL contexts first, every table link resolves" % n,
         [int(k) for k in re.findall(r'<div class="win" id="win-%d-(\d+)"' % n, sec)][:len(hk)] == hk[:8]
         and all(("win-%d-%s" % (n, ctx)) in " ".join("win-%d-%s" % (n, k) for k in strips)
                 for ctx in re.findall(r'href="#win-%d-(\d+)"' % n, sec)), list(strips))
    mx = max(kl)
    start, ok_strip = {}, True
    at = 0
    for c in receipt["per_context"]:
        start[c["index"]] = at
        at += c["scored_rows"]
    marked = {int(p) for p, _ in got + got_dp}
    for k, body in strips.items():
        spans = re.findall(r'<span class="t h(\d)( w)?" title="row (\d+), KL ([^",]+)[^"]*">(<span class="tk">.*?</span>|\d+)'
                           r'</span>', body, re.S)
        k = int(k)
        ok_strip &= len(spans) == pc[k]["scored_rows"]
        for q, (h, w, rq, klt, inner) in enumerate(spans):
            v = kl[start[k] + q]
            lv = 0 if v <= 0 else max(0, min(7, 7 + math.floor(2 * math.log10(v / mx))))
            ok_strip &= int(h) == lv and int(rq) == q and klt == "%.3e" % v and bool(w) == (start[k] + q in marked)
            tok = int(rows[start[k] + q]["token_id"])
            o = decode([tok])
            ok_strip &= o is None or span_text(inner) == o
    case("[%d] strips: one cell per scored position, heat level, outline and decoded token recomputed" % n,
         strips and ok_strip)

# ------------------------------------------------------------------ determinism, no script
rc, _ = fid("report", CMP, "--out", W("again.html"), "--tokenizer", TOKJ, "--panel", PANEL)
case("the page is byte-stable", rc == 0 and open(W("again.html"), encoding="utf-8").read() == page)
case("still no script and nothing fetched", page and "<script" not in page.lower() and "http://" not in page
     .replace("http://www.w3.org", ""))

# ------------------------------------------------------------------ without tokenizer, panel, csv
rc, _ = fid("report", CMP, "--out", W("plain.html"))
plain = open(W("plain.html"), encoding="utf-8").read() if rc == 0 else ""
sec = section(plain, 2)
got = rows_of(table(sec, "worst-kl-2"))
case("without --tokenizer/--panel: token ids shown as numbers, left context n/a",
     got and '<span class="tk">' not in sec and all(cells(r)[3] == "n/a" for _, r in got), sec[:500])
NOCSV = W("cmp-nocsv")
rc, text = fid("compare", "--reference", os.path.join(demo, "root"), "--candidate", os.path.join(demo, "int4"), "--out",
               NOCSV, "--created-utc", "2026-01-01T00:00:00Z")
rc2, text2 = fid("report", NOCSV, "--out", W("nocsv.html"), "--tokenizer", TOKJ, "--panel", PANEL)
nocsv = open(W("nocsv.html"), encoding="utf-8").read() if rc2 == 0 else ""
sec = section(nocsv, 1)
kl = npy(os.path.join(NOCSV, "tokenwise-kld.npy"))
want = sorted((i for i in range(len(kl)) if kl[i] > 0), key=lambda i: (-kl[i], i))[:20]
case("without tokenwise.csv: worst by KL from the sealed array, a note, no delta-p table",
     rc == 0 and rc2 == 0 and [int(p) for p, _ in rows_of(table(sec, "worst-kl-1"))] == want
     and "no tokenwise.csv beside the receipt" in sec and "worst-dp-1" not in sec, text + text2)
rc, text = fid("report", os.path.join(demo, "self-compare"), "--out", W("self.html"))
case("an exact self-compare: the drill-down says every KL is 0",
     rc == 0 and "exactly 0" in section(open(W("self.html"), encoding="utf-8").read(), 1), text)


# ------------------------------------------------------------------ refusals
def tampered(name, edit, code, fragment="", extra=()):
    dst = W("t-" + name)
    shutil.copytree(CMP, dst)
    path = os.path.join(dst, cands[1], "tokenwise.csv")
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    lines = edit(lines)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    out = W("t-" + name + ".html")
    rc, text = fid("report", dst, "--out", out, *extra)
    case("refused: " + name, rc == 3 and refusal(text) == code and fragment in text and not os.path.exists(out), text)
    return dst


def bump_kl(lines):
    f = lines[5].split(",")
    f[4] = repr(float(f[4]) * (1 + 2 ** -50))
    lines[5] = ",".join(f)
    return lines


def move_context(lines):
    f = lines[70].split(",")
    f[0] = str(int(f[0]) + 1)
    lines[70] = ",".join(f)
    return lines


def bad_dp(lines):
    f = lines[9].split(",")
    f[6] = "nan?"
    lines[9] = ",".join(f)
    return lines


bumped = tampered("a kl value one ulp-ish off the sealed array", bump_kl, "tokenwise_mismatch", "sealed tokenwise array")
tampered("a dropped row", lambda l: l[:10] + l[11:], "tokenwise_mismatch")
tampered("a row moved to another context", move_context, "tokenwise_mismatch")
tampered("an unparsable delta-p", bad_dp, "tokenwise_mismatch", "not a compare --csv row")
tampered("another header", lambda l: ["ctx" + l[0]] + l[1:], "tokenwise_mismatch", "header")
rc, text = fid("report", bumped, "--out", W("summary.html"), "--summary-only")
s = open(W("summary.html"), encoding="utf-8").read() if rc == 0 else ""
case("--summary-only: a mismatched tokenwise.csv is left out with a note (worst by KL still drawn)",
     rc == 0 and "tokenwise.csv left out: [tokenwise_mismatch]" in section(s, 2) and "worst-kl-2" in s
     and "worst-dp-2" not in s and "worst-dp-1" in s, text)
other = W("other-model")
fid("fixture", "--preset", "tiny", "--seed", "2", "--out", other)
rc, text = fid("report", CMP, "--out", W("wrong-panel.html"), "--panel", os.path.join(other, "panel"))
case("refused: a --panel whose tokens are not the observed ones (panel_mismatch)",
     rc == 3 and refusal(text) == "panel_mismatch" and not os.path.exists(W("wrong-panel.html")), text)
rc, text = fid("report", CMP, "--out", W("no-panel.html"), "--panel", W("nowhere"))
case("refused: a --panel that does not load (panel_invalid)", rc == 3 and refusal(text) == "panel_invalid", text)
with open(W("bad-tok.json"), "w") as f:
    f.write("{}")
rc, text = fid("report", CMP, "--out", W("bad-tok.html"), "--tokenizer", W("bad-tok.json"))
case("refused: a --tokenizer that does not load (bad_tokenizer)", rc == 3 and refusal(text) == "bad_tokenizer", text)


# ------------------------------------------------------------------ a real browser
def png_pixels(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        if typ == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", data[pos + 8:pos + 8 + n])
        elif typ == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    w, h, depth, ctype, _, _, il = ihdr
    assert depth == 8 and ctype in (2, 6) and il == 0
    bpp = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


chrome = next((shutil.which(c) for c in ("chromium", "chromium-headless-shell", "chromium-browser") if shutil.which(c)), None)
if not chrome:
    if os.environ.get("FIDELITY_REQUIRE_CHROMIUM") == "1":
        case("chromium present (FIDELITY_REQUIRE_CHROMIUM=1)", False, "install the Debian package chromium")
    else:
        print("     note: chromium not installed: the screenshot check is skipped")
elif page:
    # the drill-down alone, as a reader scrolled to it sees it: the same page with everything above the
    # first drill-down section hidden by one added rule (the page itself is not changed)
    focus = W("drill-focus.html")
    with open(focus, "w", encoding="utf-8") as f:
        f.write(page.replace("</style>", "figure,#headline,table.ids,body>p{display:none}</style>"))
    png = W("drill.png")
    p = subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--screenshot=" + png,
                        "--window-size=1280,4800", "file://" + focus], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    if case("chromium wrote a screenshot of the drill-down", os.path.isfile(png), p.stderr.decode(errors="replace")[-1500:]):
        w, h, bpp, rows = png_pixels(png)
        heat = {bytes.fromhex(c): 0 for c in ("fdae6b", "fd8d3c", "e6550d", "a63603")}
        miss, colours, nonwhite = 0, set(), 0
        for line in rows:
            for i in range(0, len(line), bpp):
                px = bytes(line[i:i + 3])
                colours.add(px)
                nonwhite += px != b"\xff\xff\xff"
                if px in heat:
                    heat[px] += 1
                miss += px == b"\xfd\xe0\xdd"
        drawn = {bytes.fromhex(c) for c, h in (("fdae6b", 4), ("fd8d3c", 5), ("e6550d", 6), ("a63603", 7))
                 if page.count('class="t h%d' % h) >= 1}
        case("screenshot: every heat colour the strips use painted, the maximum's included (%s)"
             % ", ".join("%s %d" % (k.hex(), v) for k, v in heat.items()),
             bytes.fromhex("a63603") in drawn and all(heat[k] >= 50 for k in drawn), [k.hex() for k in drawn])
        case("screenshot: top-1 disagreement cells painted (%d px), text rendered (%d colours, %.1f%% non-white)"
             % (miss, len(colours), 100.0 * nonwhite / (w * h)), miss >= 200 and len(colours) >= 100
             and nonwhite >= 0.03 * w * h)
        shutil.copy(png, os.path.join(os.path.dirname(os.path.abspath(BIN)), "report-drill-screenshot.png"))

shutil.rmtree(WORK, ignore_errors=True)
print("%d passed, %d failed" % (results.count(True), results.count(False)))
sys.exit(1 if results.count(False) else 0)
