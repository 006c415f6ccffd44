#!/usr/bin/env python3
"""Function and file sizes (issue 17 item 6): no function over 150 lines, no
source file over 700 lines (docs/ARCHITECTURE.md: aim for ~120 and ~600).

A function is counted from the first line of its signature to its closing
brace (the project's style: the body's braces at column 0).  Files are every
.c/.h/.inc under src/.  The present exceptions are listed by name below with
their size today: an exception may not grow, and one that is back under the
limit must be removed from the list (so the list can only shrink).

usage: tests/check_sizes.py [SRCDIR]     (default: src)
       tests/check_sizes.py --self-test  (the check catches each case)
exit 0 ok, 1 a limit broken (each named: file:line function lines)
"""
import os
import re
import sys
import tempfile

FUNC_MAX = 150
FILE_MAX = 700

# name -> lines today (a function named NAME in any file).  Not split yet:
#   fd_publish, fd_qualify_root_local: the lifecycle work rewrites them.
FUNC_EXCEPTIONS = {}
# path under SRCDIR -> lines today.  Tables (data, not code) and files not split yet.
FILE_EXCEPTIONS = {
    "tokenizer/nfc_data.inc": 4343,   # Unicode NFC tables (generated data)
    "format/ggml_tables.inc": 2344,   # ggml's quantization grids (data)
}
DATA_FILES = {"tokenizer/nfc_data.inc", "format/ggml_tables.inc"}


def functions(text):
    """(name, first line, lines) of each function definition of a C file."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("{"):
            j = i - 1
            while (j >= 0 and lines[j].strip() and not lines[j].startswith(("}", "#", "/*", " *"))
                   and not lines[j].rstrip().endswith((";", "*/"))):
                j -= 1
            start = j + 1
            k = i + 1
            while k < len(lines) and not lines[k].startswith("}"):
                k += 1
            sig = " ".join(x.strip() for x in lines[start:i])
            m = re.search(r"(\w+)\s*\(", sig)
            if m:  # a function (a brace after "static const T X[] =" is a table: no '(' before '=')
                if "=" not in sig.split("(")[0]:
                    out.append((m.group(1), start + 1, k - start + 1))
            i = k + 1
            continue
        i += 1
    return out


def check(src):
    bad, seen_f, seen_file = [], {}, {}
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".inc")):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            text = open(path, encoding="utf-8", errors="replace").read()
            n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if n > FILE_MAX:
                cap = FILE_EXCEPTIONS.get(rel)
                seen_file[rel] = n
                if cap is None:
                    bad.append("%s: %d lines (over %d: split it)" % (rel, n, FILE_MAX))
                elif n > cap:
                    bad.append("%s: %d lines, more than its listed %d (an exception may not grow)" % (rel, n, cap))
            if rel in DATA_FILES or f.endswith(".h"):
                continue
            for name, line, cnt in functions(text):
                if cnt <= FUNC_MAX:
                    continue
                cap = FUNC_EXCEPTIONS.get(name)
                seen_f[name] = max(cnt, seen_f.get(name, 0))
                if cap is None:
                    bad.append("%s:%d %s: %d lines (over %d: split it)" % (rel, line, name, cnt, FUNC_MAX))
                elif cnt > cap:
                    bad.append("%s:%d %s: %d lines, more than its listed %d (an exception may not grow)"
                               % (rel, line, name, cnt, cap))
    for name in FUNC_EXCEPTIONS:
        if name not in seen_f:
            bad.append("exception %s is no longer over %d lines: remove it from FUNC_EXCEPTIONS" % (name, FUNC_MAX))
    for rel in FILE_EXCEPTIONS:
        if rel not in seen_file:
            bad.append("exception %s is no longer over %d lines: remove it from FILE_EXCEPTIONS" % (rel, FILE_MAX))
    return bad


def self_test():
    global FUNC_EXCEPTIONS, FILE_EXCEPTIONS
    saved = FUNC_EXCEPTIONS, FILE_EXCEPTIONS
    body = lambda n: "int f%d(int x)\n{\n" % n + "    x++;\n" * n + "    return x;\n}\n"
    cases = [  # (files, exceptions of functions, of files, must pass)
        ({"a.c": body(10)}, {}, {}, True),
        ({"a.c": body(FUNC_MAX - 4)}, {}, {}, True),                   # exactly FUNC_MAX lines
        ({"a.c": body(FUNC_MAX - 3)}, {}, {}, False),                  # one over
        ({"a.c": "static int\ng(int a,\n  int b)\n{\n" + "    a++;\n" * 150 + "    return a + b;\n}\n"}, {}, {},
         False),                                                       # a signature over lines
        ({"a.c": body(200)}, {"f200": 205}, {}, True),                 # listed
        ({"a.c": body(200)}, {"f200": 180}, {}, False),                # listed, grown
        ({"a.c": body(10)}, {"f10": 300}, {}, False),                  # listed, no longer needed
        ({"a.c": "int x;\n" * (FILE_MAX + 1)}, {}, {}, False),         # a long file
        ({"a.c": "int x;\n" * (FILE_MAX + 1)}, {}, {"a.c": 800}, True),
        ({"a.c": "int x;\n" * 10}, {}, {"a.c": 800}, False),           # file exception no longer needed
        ({"t.c": "static const int T[] = {\n" + "1,\n" * 400 + "};\n"}, {}, {}, True),  # a table is no function
    ]
    ok = True
    for i, (files, fe, fle, want) in enumerate(cases):
        with tempfile.TemporaryDirectory() as d:
            for name, text in files.items():
                open(os.path.join(d, name), "w").write(text)
            FUNC_EXCEPTIONS, FILE_EXCEPTIONS = fe, fle
            got = not check(d)
            if got != want:
                print("FAIL self-test case %d: %s, want %s" % (i, "passed" if got else "failed", "pass" if want else "fail"))
                ok = False
    FUNC_EXCEPTIONS, FILE_EXCEPTIONS = saved
    if ok:
        print("ok   check_sizes self-test: long functions and files caught, listed exceptions held to their size")
    return 0 if ok else 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        return self_test()
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    bad = check(src)
    if bad:
        print("FAIL sizes (functions <= %d lines, files <= %d):" % (FUNC_MAX, FILE_MAX))
        for b in bad:
            print("  " + b)
        return 1
    print("ok   functions <= %d lines, files <= %d lines (exceptions listed: %d functions, %d files)"
          % (FUNC_MAX, FILE_MAX, len(FUNC_EXCEPTIONS), len(FILE_EXCEPTIONS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
