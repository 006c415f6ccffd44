#!/usr/bin/env python3
"""CLI conventions (issue 22 items 4 and 5): for every command listed by
`fidelity --help`, `CMD --help`, `CMD -h` and `fidelity help CMD` print the
command's usage on stdout (nothing on stderr) with an EXAMPLES section and
exit 0, running nothing; `fidelity --version`; did-you-mean for an unknown
command and for a mistyped compare flag, and the missing required flag named
(exit 4); `--json` of compare, paired, architectures and inspect-model is one
JSON document on stdout.
usage: test_cli.py BINARY"""
import json, os, re, shutil, subprocess, sys, tempfile

BIN = os.path.abspath(sys.argv[1])
WORK = tempfile.mkdtemp(prefix="fd-cli-")
SAN = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
results = []


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-72s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[-1200:]))
    return ok


def fid(*args, stdin=subprocess.DEVNULL):
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True, cwd=WORK, stdin=stdin, timeout=60)
    if any(m in p.stderr or m in p.stdout for m in SAN):
        case("sanitizer-clean: " + " ".join(args)[:60], False, p.stderr[-2000:])
    return p.returncode, p.stdout, p.stderr


rc, out, err = fid("--help")
cmds = [re.match(r"\s+([a-z0-9-]+)", l).group(1) for l in out.split("commands:\n")[1].split("\n\n")[0].splitlines()
        if l.startswith("  ")]
case("fidelity --help lists the commands on stdout, exit 0 (%d)" % len(cmds), rc == 0 and len(cmds) >= 25 and "compare" in cmds)
bad = []
for c in cmds:
    for form in ((c, "--help"), (c, "-h"), ("help", c)):
        rc, out, err = fid(*form)
        if not (rc == 0 and out.startswith("usage: fidelity") and "\nEXAMPLES\n" in out and "fidelity " + c in out
                and not err.strip()):
            bad.append((" ".join(form), rc, out[:120], err[:120]))
case("every command: CMD --help, CMD -h, help CMD -> usage + EXAMPLES on stdout, exit 0", not bad, bad[:4])
case("--help runs nothing: no file appears in the working directory", os.listdir(WORK) == [], os.listdir(WORK))
rc, out, err = fid("compare", "--reference", "x", "--help")
case("--help after other flags still prints the usage", rc == 0 and out.startswith("usage: fidelity compare"))
rc, out, err = fid("help")
case("fidelity help -> the command list, exit 0", rc == 0 and "commands:" in out)
rc, out, err = fid("--version")
case("fidelity --version -> 'fidelity X.Y.Z (fidelity-c)', exit 0",
     rc == 0 and re.fullmatch(r"fidelity \d+\.\d+\.\d+ \(fidelity-c\)\n", out), out)
rc, out, err = fid("comapre")
case("unknown command: did you mean 'compare'? exit 4", rc == 4 and "did you mean 'compare'" in err, err)
rc, out, err = fid("help", "verfy")
case("help with an unknown command: did you mean 'verify'? exit 4", rc == 4 and "did you mean 'verify'" in err, err)
rc, out, err = fid("zzzzzz")
case("a command nothing is close to: no suggestion, exit 4", rc == 4 and "did you mean" not in err, err)
rc, out, err = fid("compare", "--refrence", "a", "--candidate", "b", "--out", "c")
case("compare --refrence: did you mean --reference? exit 4", rc == 4 and "did you mean --reference?" in err, err)
rc, out, err = fid("compare", "--candidate", "b", "--out", "c")
case("compare without --reference: the missing flag is named, exit 4", rc == 4 and "--reference is required" in err, err)
rc, out, err = fid("compare", "--reference", "a", "--candidate", "b")
case("compare without --out: the missing flag is named, exit 4", rc == 4 and "--out is required" in err, err)

# --json: one document on stdout
ds = os.path.join(WORK, "..", os.path.basename(WORK) + "-ds")
for name, extra in (("ref", ()), ("cand", ("--noise-seed", "2", "--perturb", "0.05", "--role", "quant"))):
    subprocess.run([BIN, "write-fixture", "--out", os.path.join(ds, name), "--records", "2", "--tokens", "20", "--hidden",
                    "16", "--vocab", "200", "--seed", "3", "--fixed-time", *extra], check=True, capture_output=True)
jsons = [("compare", ("compare", "--reference", os.path.join(ds, "ref"), "--candidate", os.path.join(ds, "cand"),
                      "--out", os.path.join(ds, "cmp"), "--json")),
         ("compare --report", ("compare", "--reference", os.path.join(ds, "ref"), "--candidate", os.path.join(ds, "cand"),
                               "--out", os.path.join(ds, "cmp2"), "--json", "--report", os.path.join(ds, "r.html"))),
         ("architectures list", ("architectures", "list", "--json")),
         ("architectures show", ("architectures", "show", "glm_moe_dsa", "--json"))]
for label, args in jsons:
    rc, out, err = fid(*args)
    try:
        json.loads(out)
        ok = True
    except ValueError:
        ok = False
    case("%s --json: stdout is one JSON document (exit %d)" % (label, rc), rc in (0, 2) and ok, out[:200] + err[-300:])

shutil.rmtree(WORK, ignore_errors=True)
shutil.rmtree(ds, ignore_errors=True)
failed = results.count(False)
print("test_cli: %d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed else 0)
