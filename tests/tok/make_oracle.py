#!/usr/bin/env python3
"""Regenerates tests/tok/oracle.json with the HF `tokenizers` library (the
test oracle; never needed by the tool): for every tested tokenizer whose
file is present, the ids of each corpus file, an add_special_tokens=True
encoding, vocab size, and decode cases (random ids, invalid UTF-8 byte
tokens, skip_special).  usage: make_oracle.py  (run tests/tok/fetch.sh first)"""
import glob, json, os, random, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CORPUS, HERE, TOKENIZERS, digest, sha
import tokenizers

SPECIAL_TEXT = "<|im_start|>user\nHello <s> world<mask> word <sep>  x</s>\n<|begin_of_text|>hi<｜end▁of▁sentence｜>"


def decode_cases(tok, name):
    R = random.Random(name)
    V = tok.get_vocab_size(True)
    vocab = tok.get_vocab(True)
    cases = []
    for i in range(24):
        ids = [R.randrange(V) for _ in range(R.randint(1, 200))]
        if i % 4 == 0:
            ids.append(V + 7)  # unknown ids are skipped
        cases.append(ids)
    b2u = {}
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    b2u = dict(zip(bs, (chr(c) for c in cs)))
    for raw in [b"\xe4\xb8", b"a\xff\xfeb", b"\xf0\x9f\x98", b"\xed\xa0\x80x", b"\xc0\xaf", b"\xe0\x80\x80", b"\xf4\x90\x80\x80",
                b"\xf0\x9f\x98\x80\xe4", b"\x80\x80\x80"]:
        ids = [vocab[b2u[b]] for b in raw if b2u[b] in vocab]
        cases.append(ids)
    out = []
    for ids in cases:
        for skip in (False, True):
            out.append({"ids": ids, "skip_special": skip, "text": tok.decode(ids, skip_special_tokens=skip)})
    return out


def main():
    doc = {"generator": "tests/tok/make_oracle.py", "tokenizers_version": tokenizers.__version__,
           "special_text": SPECIAL_TEXT, "tokenizers": {}}
    old = {}
    path = os.path.join(HERE, "oracle.json")
    if os.path.exists(path):
        old = json.load(open(path, encoding="utf-8"))["tokenizers"]
    files = sorted(glob.glob(os.path.join(CORPUS, "*.txt")))
    for name, (tpath, source) in TOKENIZERS.items():
        if not os.path.exists(tpath):
            if name in old:
                doc["tokenizers"][name] = old[name]
                print("%s: file absent, kept the old oracle" % name)
            continue
        tok = tokenizers.Tokenizer.from_file(tpath)
        raw = open(tpath, "rb").read()
        ent = {"source": source, "sha256": sha(raw), "vocab_size": tok.get_vocab_size(True), "files": {}}
        for f in files:
            text = open(f, encoding="utf-8", newline="").read()
            ids = tok.encode(text, add_special_tokens=False).ids
            ent["files"][os.path.basename(f)] = dict(text_sha256=sha(text.encode()), decoded_sha256=sha(tok.decode(ids, skip_special_tokens=False).encode()), **digest(ids))
        ent["special_ids"] = {"plain": tok.encode(SPECIAL_TEXT, add_special_tokens=False).ids,
                              "add_special": tok.encode(SPECIAL_TEXT, add_special_tokens=True).ids}
        ent["decode_cases"] = decode_cases(tok, name)
        doc["tokenizers"][name] = ent
        print("%s: %d tokens over %d files" % (name, sum(v["n"] for v in ent["files"].values()), len(files)))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
