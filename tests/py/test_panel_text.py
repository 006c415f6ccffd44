#!/usr/bin/env python3
"""`fidelity panel build --tokenizer`: panels from text (issue 5).

usage: test_panel_text.py BINARY

Text files, a JSONL and a JSON corpus through the tiny fixture's byte-level
tokenizer.json: windows are the template prefix (<bos>) + consecutive
document tokens, domains and document ids per source, --windows, the sealed
panel.receipt.json (seal recomputed here), byte-identical rebuilds, a capture
on the result, and the refusals.  With the `tokenizers` library installed the
window contents are also checked against its encoding.
"""
from fdcheck import Checks
import hashlib, json, os

T = Checks("panel text", "fd-ptext-")
case, run, W, manifest, BIN = T.case, T.run, T.path, T.manifest, T.bin


def npy_ids(path):
    d = open(path, "rb").read()
    hl = int.from_bytes(d[8:10], "little")
    import struct
    body = d[10 + hl:]
    return list(struct.unpack("<%dq" % (len(body) // 8), body))


def byte_ids(text):  # the fixture tokenizer: <bos>=1, byte b -> 4 + b, no merges
    return [4 + b for b in text.encode("utf-8")]


try:
    rc, out, err = run("fixture", "--preset", "tiny", "--seed", 3, "--out", W("m"))
    case("tiny fixture", rc == 0, err)
    tok = W("m", "tokenizer.json")
    prose = "The capital of France is Paris. " * 40 + "Zürich, 東京 and emoji 🙂 too.\n"
    open(W("prose.txt"), "w", encoding="utf-8").write(prose)
    docs = [{"text": "def f(x):\n    return x * 2\n" * 12, "domain": "code", "id": "code-1"},
            {"text": "1234567890 " * 30, "id": "numbers"},
            "plain string document " * 10]
    open(W("corpus.jsonl"), "w", encoding="utf-8").write("\n".join(json.dumps(d) for d in docs) + "\n")
    json.dump(["json list document, short but long enough " * 3], open(W("corpus.json"), "w"))
    L = 64
    args = ["panel", "build", "--tokenizer", tok, "--context-length", L, "--role", "final",
            "prose=" + W("prose.txt"), W("corpus.jsonl"), "misc=" + W("corpus.json")]
    rc, out, err = run(*(args[:2] + ["--out", W("p1")] + args[2:]))
    case("panel build from text exit 0", rc == 0, out + err)
    os.makedirs(W("again"))
    rc, out, err = run(*(args[:2] + ["--out", W("again", "p1")] + args[2:]))
    same = all(open(W("p1", f), "rb").read() == open(W("again", "p1", f), "rb").read()
               for f in ("panel.json", "panel.receipt.json"))
    case("rebuild is byte-identical (panel.json, panel.receipt.json)", rc == 0 and same)

    pj = json.load(open(W("p1", "panel.json")))
    wins = pj["windows"]
    # expected windows: per document, <bos> + 63 tokens, tails dropped, input order
    sources = [("prose", "prose.txt", prose)]
    sources += [(d.get("domain", "unspecified") if isinstance(d, dict) else "unspecified",
                 (d.get("id") if isinstance(d, dict) else "corpus.jsonl#2"),
                 d["text"] if isinstance(d, dict) else d) for d in docs]
    sources += [("misc", "corpus.json#0", json.load(open(W("corpus.json")))[0])]
    want = []
    for dom, did, text in sources:
        ids = byte_ids(text)
        for k in range(len(ids) // (L - 1)):
            want.append((dom, did, [1] + ids[k * (L - 1):(k + 1) * (L - 1)]))
    got = [(w["domain"], w["document_id"], npy_ids(W("p1", "arrays", w["window_id"] + ".tokens.npy"))) for w in wins]
    case("windows = <bos> + consecutive document tokens, domains and ids per source",
         got == want, (len(got), len(want), [g[:2] for g in got][:8], [x[:2] for x in want][:8]))
    case("panel tokenizer block", pj["tokenizer"]["tokenizer_json_sha256"] == hashlib.sha256(open(tok, "rb").read()).hexdigest()
         and pj["tokenizer"]["add_special_tokens"] is True and pj["tokenizer"]["vocab_size"] == 260, pj["tokenizer"])

    try:
        from tokenizers import Tokenizer
        t = Tokenizer.from_file(tok)
        ok = all(t.encode(text, add_special_tokens=False).ids == byte_ids(text) for _, _, text in sources)
        ok = ok and t.encode("x", add_special_tokens=True).ids[0] == 1
        case("the tokenizers library encodes the sources identically", ok)
    except ImportError:
        print("tokenizers not installed: library cross-check skipped")

    r = json.load(open(W("p1", "panel.receipt.json")))
    blank = dict(r, receipt_sha256="")
    seal = hashlib.sha256(json.dumps(blank, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                          .encode()).hexdigest()
    case("panel.receipt.json seal recomputes", r["receipt_sha256"] == seal, (r["receipt_sha256"], seal))
    case("receipt binds panel.json and the sources",
         r["panel_json_sha256"] == hashlib.sha256(open(W("p1", "panel.json"), "rb").read()).hexdigest()
         and [s["sha256"] for s in r["sources"]] == [hashlib.sha256(open(W(f), "rb").read()).hexdigest()
                                                     for f in ("prose.txt", "corpus.jsonl", "corpus.json")]
         and r["windows"]["template_prefix_ids"] == [1], r)

    rc, out, err = run("panel", "build", "--out", W("p3"), "--tokenizer", tok, "--context-length", L, "--windows", 3,
                       W("prose.txt"))
    case("--windows 3", rc == 0 and len(json.load(open(W("p3", "panel.json")))["windows"]) == 3, out + err)
    rc, out, err = run("panel", "build", "--out", W("p4"), "--tokenizer", tok, "--context-length", L, "--no-prefix",
                       W("prose.txt"))
    w0 = npy_ids(W("p4", "arrays", "final-0000.tokens.npy")) if rc == 0 else []
    case("--no-prefix: windows are document tokens only", w0 == byte_ids(prose)[:L], out + err)

    rc, out, err = run("panel", "check", W("p1"), "--vocab", 260)
    case("panel check on the text panel", rc == 0, out + err)
    rc, out, err = run("capture", "--model", W("m"), "--panel", W("p1"), "--out", W("ds"), "--role", "root", "--lane",
                       "other", "--dataset-id", "test.text", "--dataset-name", "text panel", "--windows", 4)
    case("capture on the text panel", rc == 0 and run("verify", W("ds"))[0] == 0, out + err)

    open(W("bad.txt"), "wb").write(b"valid then \xff\xfe invalid")
    rc, out, err = run("panel", "build", "--out", W("bad"), "--tokenizer", tok, "--context-length", 8, W("bad.txt"))
    case("invalid UTF-8 refused (exit 3, nothing written)", rc == 3 and not os.path.exists(W("bad")), out + err)
    rc, out, err = run("panel", "build", "--out", W("bad2"), "--tokenizer", tok, W("prose.txt"))
    case("text without --context-length: usage (exit 4)", rc == 4, out + err)
    rc, out, err = run("panel", "build", "--out", W("bad3"), "--tokenizer", tok, "--context-length", L, "--vocab", 100,
                       W("prose.txt"))
    case("ids past --vocab refused", rc == 3 and "token_out_of_range" in out, out + err)
    open(W("bad.jsonl"), "w").write('{"text": "ok"}\n{"nope": 1}\n')
    rc, out, err = run("panel", "build", "--out", W("bad4"), "--tokenizer", tok, "--context-length", 8, W("bad.jsonl"))
    case("JSONL item without text refused", rc == 3 and "bad_input" in out, out + err)
    rc, out, err = run("panel", "build", "--out", W("bad5"), "--tokenizer", W("nonesuch.json"), "--context-length", 8,
                       W("prose.txt"))
    case("missing tokenizer refused", rc == 3, out + err)
finally:
    T.finish()
