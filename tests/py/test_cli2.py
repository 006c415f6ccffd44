#!/usr/bin/env python3
"""CLI flags from the command table (issue 22 item 4), for EVERY command:

- every flag a command's usage lists, mistyped (one letter doubled), is refused
  with exit 4 and "did you mean FLAG?" naming that flag (one shared check in
  src/cli/flags.c, from main.c's command table); a word nothing is close to
  gets no suggestion; a flag without its value is named;
- every flag that takes one of a fixed set of values refuses anything else
  before any work (exit 4, nothing written), naming the flag and listing every
  accepted value; each accepted value passes; the usage lists the same set;
  the --flag=value form is checked too; a switch given a value is refused.
Defaults a quantizer expects (issue 22 item 7): `capture --model M --panel P
--out D` alone seals a dataset named after the model directory (id
fidelity--local.NAME.hidden), lane other, role root for a plain checkpoint and
quant for one with a quantization_config, each default said on stderr; compare
labels each side with its dataset's name unless --*-label is given; the
README's "Measure your own model" try-it block runs as written.
capture --resume (issue 22 item 6): a capture killed after window 2 and resumed
gives the uninterrupted capture_content_digest, taking the finished windows
from OUT.resume/ (journal and staging gone after the seal); a journal file
edited, or recorded from another checkpoint, is refused (resume_mismatch, exit
3, nothing sealed); a capture without --resume discards an old journal;
--resume with --schedule layer-outer is refused.
Progress (issue 22 item 6): capture (windows), compare (positions) and fetch
(bytes, from a loopback hub with a throttled file) print count, percent, rate
and ETA on stderr with --progress, and nothing of the kind without it when
stderr is not a terminal (one shared line format, src/util/progress.c).
usage: test_cli2.py BINARY"""
import http.server, os, re, shutil, socketserver, subprocess, sys, tempfile, threading, time

BIN = os.path.abspath(sys.argv[1])
WORK = tempfile.mkdtemp(prefix="fd-cli2-")
SAN = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
results = []
LANES = ["sealed-ep8", "streaming", "local-mps", "local-cuda-budget", "other"]
K4 = ["scalar", "avx2", "avx512f", "avx512bf16", "neon", "neon-bf16"]
PRESETS = re.search(r"--preset ([\w.|-]+)", subprocess.run([BIN, "fixture", "--help"], capture_output=True,
                                                            text=True).stdout).group(1).split("|")
CLASSES = ["embed_tokens", "attn.qkv", "attn.o", "mlp.gate", "mlp.up", "mlp.down", "moe.experts", "norm", "lm_head"]
# every flag of the CLI that takes one of a fixed set of values (capture --kernel
# is not here on purpose: an unknown path is the engine's exit-3 refusal naming
# the paths, as one this CPU lacks, tests/py/test_engine_defects.py)
ENUMS = [("capture", "--role", ["root", "quant"]), ("capture", "--lane", LANES), ("capture", "--schedule", ["window-outer", "layer-outer"]), ("capture", "--gemm-order", ["tile", "pair"]),
         ("compare", "--kernel", K4), ("describe", "--format", ["text", "json", "markdown"]),
         ("quantize", "--bits", ["2", "3", "4", "5", "6", "8"]), ("quantize", "--tensor-class", CLASSES),
         ("quantize", "--format", ["fp8-block", "nvfp4", "compressed-tensors", "gptq", "mlx", "gguf"]), ("quantize", "--type", ["bf16", "q8_0", "q4_0", "q4_k"]),
         ("demo", "--preset", PRESETS), ("fixture", "--preset", PRESETS),
         ("write-fixture", "--role", ["root", "quant", "derived"]), ("write-fixture", "--lane", LANES),
         ("adapt", "--source", ["llamacpp-kld", "k3v1", "k3v0-window", "malaiwah-serving-v2"]), ("adapt", "--role", ["derived", "quant", "root"]),
         ("adapt", "--lane", LANES), ("export", "--format", ["llamacpp-kld"]), ("export", "--kernel", K4),
         ("export", "--kld-window", ["16", "24"]), ("debug-logits", "--kernel", K4 + ["amx"]),
         ("architectures", "--lane", LANES)]
# words of a usage text that are not flags of that command (prose)
PROSE = {"export": {"--kl-divergence-base"}, "verify-k3-compat": {"--emit-k3-compat"}}


def case(name, ok, detail=""):
    ok = bool(ok)
    results.append(ok)
    print("%s %-72s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  " + str(detail)[-1500:]))
    return ok


def fid(*args):
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True, cwd=WORK, stdin=subprocess.DEVNULL,
                       timeout=60)
    if any(m in p.stderr or m in p.stdout for m in SAN):
        case("sanitizer-clean: " + " ".join(args)[:60], False, p.stderr[-2000:])
    return p.returncode, p.stdout, p.stderr


rc, out, err = fid("--help")
cmds = [re.match(r"\s+([a-z0-9-]+)", l).group(1) for l in out.split("commands:\n")[1].split("\n\n")[0].splitlines()
        if l.startswith("  ")]
case("fidelity --help lists the commands (%d)" % len(cmds), rc == 0 and len(cmds) >= 25)

usages, bad, nflags = {}, [], 0
for c in cmds:
    rc, out, err = fid(c, "--help")
    usage = out.split("\nEXAMPLES\n")[0]
    usages[c] = usage
    flags = sorted(set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", usage)) - PROSE.get(c, set()) - {"--help"})
    for f in flags:
        typo = f[:3] + f[2] + f[3:]  # the first letter doubled: one edit away from f
        rc, out, err = fid(c, typo)
        nflags += 1
        if not (rc == 4 and ("did you mean %s?" % f) in err):
            bad.append((c, typo, rc, err.strip()[:160]))
case("every command: each flag of its usage, mistyped -> did you mean FLAG? exit 4 (%d flags)" % nflags,
     not bad and nflags > 200, bad[:6])

rc, out, err = fid("capture", "--zzzzzzzz")
case("a flag nothing is close to: no suggestion, named, exit 4",
     rc == 4 and "did you mean" not in err and "--zzzzzzzz" in err, err)
rc, out, err = fid("merge", "-q")
case("a single-dash unknown option is refused, exit 4", rc == 4 and "unknown option -q" in err, err)
for c, args, flag in (("capture", ("--model",), "--model"), ("report", ("x", "--out"), "--out"),
                      ("publish", ("ds", "--repo"), "--repo"), ("tokenize", ("--tokenizer",), "--tokenizer")):
    rc, out, err = fid(c, *args)
    case("%s %s without its value: '%s needs a value', exit 4" % (c, flag, flag),
         rc == 4 and ("%s needs a value" % flag) in err, err)
rc, out, err = fid("capture", "--force=yes")
case("a switch given a value (--force=yes) is refused, exit 4", rc == 4 and "--force takes no value" in err, err)

for c, flag, values in ENUMS:
    dest = os.path.join(WORK, "out-" + c + flag)
    rc, out, err = fid(c, flag, "bogus-value", "--out", dest)
    line = next((l for l in err.splitlines() if "must be one of" in l), "")
    listed = line.split("must be one of ", 1)[-1].split(", not ")[0].split("|") if line else []
    case("%s %s bogus-value: exit 4 before any work, the flag and every accepted value named" % (c, flag),
         rc == 4 and flag in line and "'bogus-value'" in line and sorted(listed) == sorted(values)
         and not os.path.exists(dest) and not out.strip(), (rc, err[:300], out[:200]))
    passing = []
    for v in values:
        if v == "malaiwah-serving-v2":
            continue  # accepted by the check, refused by adapt itself (below)
        rc, out, err = fid(c, flag, v, "--zz-after")
        if "must be one of" in err or "unknown option --zz-after" not in err:
            passing.append((v, err[:200]))
    case("%s %s: each of the %d accepted values passes the check" % (c, flag, len(values)), not passing, passing)
    u = usages.get(c, "")
    if c != "architectures":  # its usage is another helper's (prepare's lane is checked above)
        case("%s --help lists %s's values" % (c, flag), all(v in u for v in values), u[:400])

rc, out, err = fid("quantize", "--bits=7", "--src", "a", "--dst", "b", "--match", "mlp")
case("quantize --bits=7 (the --flag=value form): refused listing 2|3|4|5|6|8, exit 4",
     rc == 4 and "--bits must be one of 2|3|4|5|6|8, not '7'" in err, err)
rc, out, err = fid("capture", "--lane", "othr")
case("a near value gets did-you-mean (--lane othr -> other)", rc == 4 and "did you mean other?" in err, err)
rc, out, err = fid("compare", "--reference", "a", "--candidate", "b", "--out", os.path.join(WORK, "cmpk"),
                   "--kernel", "avx9000")
case("compare --kernel avx9000: refused before anything runs, no DIR",
     rc == 4 and "--kernel must be one of scalar|avx2|avx512f|avx512bf16|neon|neon-bf16" in err and not os.path.exists(os.path.join(WORK, "cmpk")), err)
rc, out, err = fid("adapt", "--source", "malaiwah-serving-v2", "--in", "x", "--out", os.path.join(WORK, "ad"))
case("adapt --source malaiwah-serving-v2 keeps its own refusal (not_implemented, exit 3)",
     rc == 3 and "not_implemented" in out, (rc, out, err))

# ---- progress: capture windows, compare positions, fetch bytes
LINE = r"%s: (\d+)/(\d+) %s +(\d+\.\d)%% \([\d.]+ %s/s, ETA (\d+:\d\d:\d\d|--)\)"
M = os.path.join(WORK, "m")
rc, out, err = fid("fixture", "--preset", "tiny", "--seed", "1", "--out", M)
assert rc == 0, out + err
cap = ["capture", "--model", M, "--panel", os.path.join(M, "panel"), "--role", "root", "--lane", "other",
       "--dataset-id", "fidelity--me.tiny.hidden", "--dataset-name", "tiny"]
rc, out, err = fid(*cap, "--out", os.path.join(WORK, "ds1"), "--progress")
got = re.findall(LINE % ("capture", "windows", "windows"), err)
case("capture --progress: 'capture: k/N windows P% (rate, ETA)' per window, the last N/N 100.0%",
     rc == 0 and got and [int(g[0]) for g in got] == list(range(1, int(got[0][1]) + 1))
     and got[-1][0] == got[-1][1] and got[-1][2] == "100.0", err[-800:])
rc, out, err = fid(*cap, "--out", os.path.join(WORK, "ds2"))
case("capture without --progress, stderr not a terminal: no progress line", rc == 0 and "windows" not in err
     and '"stage"' not in err, err[-500:])
rc, out, err = fid(*cap, "--out", os.path.join(WORK, "ds3"), "--progress", "--schedule", "layer-outer")
got = re.findall(LINE % (r"capture \(layer-outer\)", "layers", "layers"), err)
case("capture --schedule layer-outer --progress: 'k/L layers' with percent and ETA",
     rc == 0 and got and got[-1][0] == got[-1][1] and got[-1][2] == "100.0", err[-800:])
cmp = ["compare", "--reference", os.path.join(WORK, "ds1"), "--candidate", os.path.join(WORK, "ds2"), "--self-compare",
       "--force-compute", "--no-bootstrap"]
rc, out, err = fid(*cmp, "--out", os.path.join(WORK, "c1"), "--progress")
got = re.findall(LINE % ("compare", "positions", "positions"), err)
case("compare --progress: 'compare: N/N positions 100.0% (rate, ETA)' at the end", rc in (0, 2) and got
     and got[-1][0] == got[-1][1] and got[-1][2] == "100.0", err[-800:])
rc, out, err = fid(*cmp, "--out", os.path.join(WORK, "c2"))
case("compare without --progress: no progress line", rc in (0, 2) and "positions" not in err, err[-500:])

BIGDS = os.path.join(WORK, "big")
rc, out, err = fid("write-fixture", "--out", BIGDS, "--records", "2", "--tokens", "256", "--hidden", "2048",
                   "--vocab", "64", "--seed", "3")
assert rc == 0, out + err
FILES = {}
for d, _, ns in os.walk(BIGDS):
    for n in ns:
        FILES[os.path.relpath(os.path.join(d, n), BIGDS)] = open(os.path.join(d, n), "rb").read()
BIG = max((k for k in FILES if k.startswith("capture/hidden_")), key=lambda k: len(FILES[k]))


class Hub(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        parts = self.path.split("/", 6)  # '', datasets, owner, name, resolve, rev, path
        rel = parts[6] if len(parts) == 7 else ""
        if rel not in FILES:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = FILES[rel]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        step = 16384 if rel == BIG else len(body) or 1
        for i in range(0, len(body), step):
            try:
                self.wfile.write(body[i:i + step])
                self.wfile.flush()
            except OSError:
                return
            if rel == BIG:
                time.sleep(0.03)


class TS(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = TS(("127.0.0.1", 0), Hub)
threading.Thread(target=srv.serve_forever, daemon=True).start()
env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "FIDELITY_CACHE")}
env.update(HF_ENDPOINT="http://127.0.0.1:%d" % srv.server_address[1], HOME=os.path.join(WORK, "home"))


def fetch(tag, *extra):
    p = subprocess.run([BIN, "fetch", "hf://me/big", "--cache", os.path.join(WORK, "cache-" + tag), *extra],
                       capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=120)
    return p.returncode, p.stdout, p.stderr


rc, out, err = fetch("p", "--progress")
got = re.findall(LINE % ("hub: " + re.escape(BIG), "B", "B"), err)
case("fetch --progress: 'hub: FILE k/N B P% (rate B/s, ETA h:mm:ss)' for a slow file, counts rising",
     rc == 0 and got and all(g[1] == str(len(FILES[BIG])) for g in got)
     and [int(g[0]) for g in got] == sorted(int(g[0]) for g in got) and re.fullmatch(r"\d+:\d\d:\d\d", got[0][3]),
     err[-800:])
rc, out, err = fetch("q")
case("fetch without --progress, stderr not a terminal: no progress line", rc == 0 and "B/s" not in err, err[-500:])
srv.shutdown()

# ---- defaults: capture with only --model/--panel/--out; compare labels = dataset names
import json
Q = os.path.join(WORK, "tiny-fp8")
rc, out, err = fid("quantize", "--format", "fp8-block", "--src", M, "--dst", Q)
assert rc == 0, out + err
for model, role in ((M, "root"), (Q, "quant")):
    d = os.path.join(WORK, "dflt-" + role)
    rc, out, err = fid("capture", "--model", model + "/", "--panel", os.path.join(M, "panel"), "--out", d)
    man = json.load(open(os.path.join(d, "fidelity-dataset.json"))) if rc == 0 else {}
    name = os.path.basename(model)
    case("capture --model %s/ --panel P --out D alone: name %s, id fidelity--local.%s.hidden, role %s, lane other"
         % (name, name, name, role),
         rc == 0 and man["dataset"]["name"] == name and man["dataset"]["id"] == "fidelity--local.%s.hidden" % name
         and man["dataset"]["role"] == role and man["runtime"]["lane"] == "other"
         and "--role %s (default" % role in err and "--lane other (default)" in err, (rc, out, err[-600:]))
    rc, out, err = fid("verify", d)
    case("the defaulted %s capture verifies" % role, rc == 0, out + err)
c = os.path.join(WORK, "cmp-dflt")
rc, out, err = fid("compare", "--reference", os.path.join(WORK, "dflt-root"), "--candidate",
                   os.path.join(WORK, "dflt-quant"), "--out", c, "--no-bootstrap")
r = json.load(open(os.path.join(c, "comparison-receipt.json"))) if rc in (0, 2) else {}
case("compare without labels: each side labelled with its dataset name",
     rc in (0, 2) and r["reference"]["label"] == "m" and r["candidate"]["label"] == "tiny-fp8", (rc, out[-300:], err[-300:]))
rc, out, err = fid("compare", "--reference", os.path.join(WORK, "dflt-root"), "--candidate",
                   os.path.join(WORK, "dflt-quant"), "--out", c + "2", "--no-bootstrap", "--reference-label", "base",
                   "--candidate-label", "q8")
r = json.load(open(os.path.join(c + "2", "comparison-receipt.json"))) if rc in (0, 2) else {}
case("compare with --reference-label/--candidate-label: those labels", rc in (0, 2) and r["reference"]["label"] == "base"
     and r["candidate"]["label"] == "q8", (rc, err[-300:]))

# ---- README "Measure your own model": the try-it block runs as written (fresh directory)
readme = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")).read()
sec = readme.split("## Measure your own model", 1)[1].split("\n## ", 1)[0]
block = sec.split("To try the same path", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
arch = json.loads(subprocess.run([BIN, "architectures", "list", "--json"], capture_output=True, text=True).stdout)
missing = [a["model_type"] for a in arch["architectures"] if "| `%s` |" % a["model_type"] not in sec]
case("README 'Measure your own model' lists every architecture of `architectures list` (%d)" % len(arch["architectures"]),
     not missing, missing)
TRY = os.path.join(WORK, "try-readme")
os.makedirs(TRY)
shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md"), TRY)
steps, bad = 0, []
for line in block.strip().splitlines():
    if line.startswith("make "):
        continue
    argv = line.split()
    assert argv[0] == "./build/fidelity", line
    p = subprocess.run([BIN] + argv[1:], capture_output=True, text=True, cwd=TRY, timeout=300)
    steps += 1
    if p.returncode not in (0, 2) or any(m in p.stderr for m in SAN):
        bad.append((line, p.returncode, (p.stdout + p.stderr)[-400:]))
case("README try-it block: %d commands, each exit 0 (2: advisory), report written" % steps,
     steps >= 6 and not bad and os.path.exists(os.path.join(TRY, "try", "report.html")), bad[:2])

# ---- capture --resume
import signal
SM = os.path.join(WORK, "small")
rc, out, err = fid("fixture", "--preset", "small", "--seed", "1", "--out", SM)
assert rc == 0, out + err
SM2 = os.path.join(WORK, "small2")
rc, out, err = fid("fixture", "--preset", "small", "--seed", "2", "--out", SM2)
assert rc == 0, out + err


def cap_small(out, *extra, model=SM):
    return fid("capture", "--model", model, "--panel", os.path.join(SM, "panel"), "--out", out, "--dataset-name", "s",
               "--dataset-id", "fidelity--local.s.hidden", *extra)


def digest(d):
    return json.load(open(os.path.join(d, "fidelity-dataset.json")))["capture"]["capture_content_digest"]


rc, out, err = cap_small(os.path.join(WORK, "whole"))
WHOLE = digest(os.path.join(WORK, "whole")) if rc == 0 else None
case("capture: an uninterrupted capture leaves no journal behind", rc == 0 and not os.path.exists(
    os.path.join(WORK, "whole.resume")), err[-300:])
R = os.path.join(WORK, "res")
p = subprocess.Popen([BIN, "capture", "--model", SM, "--panel", os.path.join(SM, "panel"), "--out", R, "--dataset-name",
                      "s", "--dataset-id", "fidelity--local.s.hidden", "--progress"], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, cwd=WORK)
seen = 0
while seen < 2:
    line = p.stderr.readline()
    if not line:
        break
    seen += b'"stage":"window"' in line
p.send_signal(signal.SIGKILL)
p.communicate()
journal = sorted(os.listdir(R + ".resume")) if os.path.isdir(R + ".resume") else []
case("capture killed after window 2: no dataset, a journal of >= 2 windows",
     not os.path.exists(R) and len([j for j in journal if j.endswith(".json")]) >= 2, journal)
for k in ("tamper", "other", "fresh"):
    if os.path.isdir(R + ".resume"):
        shutil.copytree(R + ".resume", os.path.join(WORK, k + ".resume"))
    else:  # a binary without the journal: the cases below fail, not crash
        os.makedirs(os.path.join(WORK, k + ".resume"))
rc, out, err = cap_small(R, "--resume")
m = re.search(r"capture: (\d+) of (\d+) window\(s\) taken from the journal", err)
case("capture --resume: the uninterrupted capture_content_digest, finished windows taken (each verified)",
     rc == 0 and digest(R) == WHOLE and m and int(m.group(1)) >= 2 and int(m.group(1)) < int(m.group(2)),
     (rc, out[-300:], err[-500:]))
case("after the seal the journal and the killed run's staging are gone", not os.path.exists(R + ".resume")
     and not [n for n in os.listdir(WORK) if n.startswith("res.partial-")], os.listdir(WORK))
rc, out, err = fid("verify", R)
case("the resumed dataset verifies", rc == 0, out + err)
T = os.path.join(WORK, "tamper")
tf = os.path.join(T + ".resume", "window-0001.safetensors")
blob = bytearray(open(tf, "rb").read() if os.path.exists(tf) else b"\0" * 16)
if os.path.exists(tf):
    os.unlink(tf)  # a hard link to the killed run's file: write a new one
blob[-5] ^= 0x01
open(tf, "wb").write(bytes(blob))
rc, out, err = cap_small(T, "--resume")
case("capture --resume over an edited journal file: resume_mismatch naming window 1, exit 3, nothing sealed",
     rc == 3 and "REFUSED [resume_mismatch]" in out and "window-0001" in out and not os.path.exists(T), (rc, out[-400:]))
O = os.path.join(WORK, "other")
rc, out, err = cap_small(O, "--resume", model=SM2)
case("capture --resume with another checkpoint: resume_mismatch (checkpoint identity), exit 3",
     rc == 3 and "REFUSED [resume_mismatch]" in out and "checkpoint_identity_sha256" in out and not os.path.exists(O),
     (rc, out[-400:]))
Fr = os.path.join(WORK, "fresh")
rc, out, err = cap_small(Fr)
case("capture without --resume: an old journal is discarded, a fresh capture (same digest)",
     rc == 0 and digest(Fr) == WHOLE and not os.path.exists(Fr + ".resume") and "taken from the journal" not in err,
     (rc, err[-300:]))
rc, out, err = fid("capture", "--model", M, "--panel", os.path.join(M, "panel"), "--out", os.path.join(WORK, "slash") + "/")
case("capture --out DIR/ seals DIR (no DIR/ left holding a journal or staging)",
     rc == 0 and os.path.isfile(os.path.join(WORK, "slash", "fidelity-dataset.json"))
     and not [n for n in os.listdir(os.path.join(WORK, "slash")) if n.startswith(".")], (rc, out[-300:]))
rc, out, err = cap_small(os.path.join(WORK, "lo"), "--resume", "--schedule", "layer-outer")
case("capture --resume --schedule layer-outer: refused (bad_usage, exit 3)", rc == 3 and "bad_usage" in out, out[-300:])

shutil.rmtree(WORK, ignore_errors=True)
print("%d/%d passed" % (sum(results), len(results)))
sys.exit(0 if all(results) else 1)
