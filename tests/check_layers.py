#!/usr/bin/env python3
"""Nothing inside src/engine/ links in a circle (issue 17; docs/ARCHITECTURE.md
"A new architecture"), checked on the #include lines:

  1. the op library (src/engine/ops/) includes no architecture
     (engine/arch/...), no table (engine/archtable.h) and no driver;
  2. the engine's own files (src/engine/*.c, *.h) include no architecture:
     they reach one only through the table's fd_arch entries;
  3. an architecture may build on another's header (kimi_k25 on
     deepseek_v3), but those folder-to-folder edges form no cycle.

Fails naming the file, the include and the rule.
usage: check_layers.py [SRCDIR]   (default: src)   |   check_layers.py --self-test"""
import os
import re
import sys
import tempfile

INC = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def scan(src):
    """[(file relative to src, included path)] for every engine file."""
    out = []
    root = os.path.join(src, "engine")
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith((".c", ".h", ".inc")):
                p = os.path.join(d, f)
                with open(p, encoding="utf-8", errors="replace") as fh:
                    for inc in INC.findall(fh.read()):
                        out.append((os.path.relpath(p, src).replace(os.sep, "/"), inc))
    return out


def arch_of(path):
    """'engine/arch/X/...' -> X, else None (path relative to src, or as included)."""
    m = re.match(r"engine/arch/([^/]+)/", path)
    return m.group(1) if m else None


def check(src):
    bad, edges = [], {}
    for f, inc in scan(src):
        if f.startswith("engine/ops/") and (arch_of(inc) or inc in ("engine/archtable.h", "engine/driver.h")):
            bad.append("%s includes %s: the op library calls no architecture, table or driver" % (f, inc))
        elif f.count("/") == 1 and arch_of(inc):
            bad.append("%s includes %s: the engine reaches an architecture only through the table" % (f, inc))
        elif arch_of(f) and arch_of(inc) and arch_of(f) != arch_of(inc):
            edges.setdefault(arch_of(f), set()).add(arch_of(inc))
    # a cycle among the architecture folders (depth-first, colours)
    colour, stack = {}, []

    def visit(a):
        colour[a] = 1
        stack.append(a)
        for b in sorted(edges.get(a, ())):
            if colour.get(b) == 1:
                bad.append("architecture folders include each other in a circle: %s"
                           % " -> ".join(stack[stack.index(b):] + [b]))
            elif not colour.get(b):
                visit(b)
        stack.pop()
        colour[a] = 2

    for a in sorted(edges):
        if not colour.get(a):
            visit(a)
    return bad, edges


def self_test():
    def tree(files):
        d = tempfile.mkdtemp(prefix="layers-")
        for p, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
            with open(os.path.join(d, p), "w") as fh:
                fh.write(text)
        return d
    clean = {"engine/ops/a.c": '#include "engine/ops/ops.h"\n', "engine/driver.c": '#include "engine/model.h"\n',
             "engine/arch/x/x.c": '#include "engine/arch/y/y.h"\n', "engine/arch/y/y.h": "\n"}
    if check(tree(clean))[0]:
        return "a clean tree was flagged"
    for extra, what in (({"engine/ops/b.c": '#include "engine/arch/x/x.h"\n'}, "an op including an architecture"),
                        ({"engine/weights.c": '#include "engine/arch/y/y.h"\n'}, "the engine including an architecture"),
                        ({"engine/arch/y/y.c": '#include "engine/arch/x/x.h"\n'}, "two architectures in a circle")):
        if not check(tree(dict(clean, **extra)))[0]:
            return "not caught: " + what
    return None


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        err = self_test()
        print("FAIL check_layers self-test: " + err if err else
              "ok   check_layers self-test: an op or the engine including an architecture, and a circle, are caught")
        sys.exit(1 if err else 0)
    here = os.path.dirname(os.path.abspath(__file__))
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "src")
    bad, edges = check(src)
    for b in bad:
        print("FAIL " + b)
    if not bad:
        print("ok   src/engine: ops call no architecture, the engine reaches architectures only through the table, "
              "architecture folders build on each other without a circle (%s)"
              % ", ".join("%s -> %s" % (a, "/".join(sorted(b))) for a, b in sorted(edges.items())))
    sys.exit(1 if bad else 0)
