#!/usr/bin/env python3
"""Differential test: our canonical/pretty/ascii/default JSON and seals against
CPython's json + hashlib on random documents (stdlib only).

usage: json_diff.py BINARY [N] [SEED]
"""
import hashlib, json, math, random, struct, subprocess, sys

def canon(d, ascii=False):
    return json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii, allow_nan=False)

def h(s):
    return hashlib.sha256(s.encode("utf-8")).hexdigest()

def rand_float(r):
    k = r.random()
    if k < 0.5:
        bits = r.getrandbits(64)
        f = struct.unpack("<d", struct.pack("<Q", bits))[0]
        return f if math.isfinite(f) else 0.5
    if k < 0.6:
        return struct.unpack("<d", struct.pack("<Q", r.getrandbits(52)))[0]  # subnormal
    return r.choice([0.0, -0.0, 1e16, 1e-05, 1e-4, 1e15, 9.999999999999999e22, 0.1, 2.0, 4.0,
                     1.5, 1e300, 5e-324, 1.7976931348623157e308, 2.2250738585072014e-308,
                     r.uniform(-1e6, 1e6), round(r.uniform(0, 100), r.randint(0, 6)),
                     float(r.randint(-10**17, 10**17)), 2.0 ** r.randint(-1074, 1023)])

def rand_int(r):
    return r.choice([0, -1, 1, r.randint(-1000, 1000), r.randint(-2**63, 2**63 - 1),
                     2**63 - 1, -2**63, 2**63, -2**63 - 1, r.randint(-10**30, 10**30)])

RANGES = [(0x20, 0x7e), (0, 0x1f), (0x7f, 0xff), (0x100, 0x7ff), (0x800, 0xd7ff),
          (0xe000, 0xffff), (0x10000, 0x10ffff), (0x1f600, 0x1f64f)]

def rand_str(r):
    n = r.choice([0, 1, 2, 5, 12, 30])
    out = []
    for _ in range(n):
        lo, hi = r.choice(RANGES)
        out.append(chr(r.randint(lo, hi)))
    if r.random() < 0.2:
        out.append(r.choice(['"', '\\', '/', '\n', '\t', '\x7f', '\u2028', 'é']))
    return "".join(out)

def rand_value(r, depth):
    k = r.random()
    if depth < 4 and k < 0.15:
        return [rand_value(r, depth + 1) for _ in range(r.randint(0, 5))]
    if depth < 4 and k < 0.3:
        return {rand_str(r): rand_value(r, depth + 1) for _ in range(r.randint(0, 6))}
    return r.choice([None, True, False, rand_float, rand_int, rand_str, rand_str])(r) \
        if False else _scalar(r)

def _scalar(r):
    c = r.randint(0, 6)
    return [None, True, False][c] if c < 3 else [rand_float, rand_int, rand_str, rand_float][c - 3](r)

def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    r = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1234)
    docs = []
    for e in range(-1074, 1024):             # every power of two: the asymmetric cases
        docs.append({"p": 2.0 ** e, "receipt_sha256": "x"})
    while len(docs) < n:
        d = {rand_str(r): rand_value(r, 1) for _ in range(r.randint(0, 8))}
        if r.random() < 0.3:
            d["receipt_sha256"] = rand_str(r)
        docs.append(d if r.random() < 0.9 else [rand_value(r, 1) for _ in range(3)])
    lines = []
    for i, d in enumerate(docs):
        text = json.dumps(d, ensure_ascii=(i % 2 == 0))   # both raw UTF-8 and \u input
        if i % 7 == 0 and isinstance(d, dict) and d:     # a duplicate key: last wins
            k = next(iter(d))
            text = "{" + json.dumps(k) + ":0," + text[1:]
        lines.append(text)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    out = subprocess.run([binary, "debug-json"], input=data, capture_output=True, check=True).stdout
    got = out.decode().splitlines()
    assert len(got) == len(docs), (len(got), len(docs))
    bad = 0
    for d, line, g in zip(docs, lines, got):
        d = json.loads(line)
        want = [h(canon(d)), h(json.dumps(d, indent=2, sort_keys=True, ensure_ascii=False) + "\n"),
                h(canon(d, True)), h(json.dumps(d, sort_keys=True))]
        if isinstance(d, dict):
            c = dict(d); c["receipt_sha256"] = ""
            want.append(h(canon(c)))
        else:
            want.append("-")
        if g.split() != want:
            bad += 1
            if bad <= 5:
                print("MISMATCH:", line[:300], "\n  got ", g, "\n  want", " ".join(want))
    print("json_diff: %d documents, %d mismatches" % (len(docs), bad))
    sys.exit(1 if bad else 0)

if __name__ == "__main__":
    main()
