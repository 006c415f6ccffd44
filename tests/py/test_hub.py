#!/usr/bin/env python3
"""hf:// datasets against a loopback Hub: a threaded stdlib HTTP server on
127.0.0.1 serves the Hub's resolve URLs for a dataset our writer made, one the
Python-stdlib reference writer made, and hostile variants, and misbehaves on
demand (429 + Retry-After, 500, a dropped connection mid-file, bytes that do
not match their checksum, checksums.txt with ../ or an absolute path, a
redirect to another origin).  Every case must end in a verified dataset or a
named refusal with nothing unverified left in the cache; a killed fetch must
resume with a Range request; the token must never reach another origin or the
output.  usage: test_hub.py BINARY"""
import http.server, json, os, shutil, signal, socketserver, stat, subprocess, sys, tempfile, threading, time
from dsutil import load, dump, sha, seal, canonical

BIN = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
WORK = tempfile.mkdtemp(prefix="fd-hub-")
TOKEN = "hf_" + "Q7tZ" * 8                 # a token shape the redactor also knows
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + str(detail)[-3000:]))


# ------------------------------------------------------------------ datasets
def tree(root):
    out = {}
    for d, dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def build():
    ours = os.path.join(WORK, "src-ours")
    big = os.path.join(WORK, "src-big")
    py = os.path.join(WORK, "src-py")
    for args in (["--out", ours, "--records", "3", "--tokens", "12", "--hidden", "8", "--vocab", "32", "--seed", "7"],
                 ["--out", big, "--records", "2", "--tokens", "256", "--hidden", "2048", "--vocab", "64", "--seed", "3"]):
        p = subprocess.run([BIN, "write-fixture"] + args, capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([sys.executable, os.path.join(HERE, "ref_writer.py"), py, "--records", "2", "--tokens", "10",
                        "--hidden", "16", "--vocab", "40", "--seed", "5", "--fixed-time"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    return tree(ours), tree(big), tree(py)


OURS, BIG, PY = build()
BIG_FILE = max((k for k in BIG if k.startswith("capture/hidden_")), key=lambda k: len(BIG[k]))


def hostile(base, checksum_lines=None, manifest_edit=None, keep_checksums_sha=False, reseal_manifest=True):
    """A copy of base whose checksums.txt / manifest are rewritten the way a
    forger would (so the only thing wrong is the thing under test)."""
    files = dict(base)
    m = json.loads(files["fidelity-dataset.json"])
    if checksum_lines is not None:
        text = files["checksums.txt"].decode() + "".join(checksum_lines)
        files["checksums.txt"] = text.encode()
        if not keep_checksums_sha:
            m["seal"]["checksums_sha256"] = sha(files["checksums.txt"])
    if manifest_edit:
        manifest_edit(m)
    if reseal_manifest:
        seal(m, "dataset_sha256")
    files["fidelity-dataset.json"] = (json.dumps(m, indent=2, sort_keys=True) + "\n").encode()
    return files


EVIL = "0" * 64
REPOS = {
    "ours/ds": OURS, "py/ds": PY, "ours/big": BIG, "priv/ds": OURS,
    "evil/dotdot": hostile(OURS, ["%s  ../escaped.txt\n" % EVIL]),
    "evil/abs": hostile(OURS, ["%s  /tmp/fd-hub-absolute.txt\n" % EVIL]),
    "evil/cksfile": hostile(OURS, manifest_edit=lambda m: m["seal"].__setitem__("checksums_file", "../checksums.txt")),
    "evil/seal": hostile(OURS, manifest_edit=lambda m: m["dataset"].__setitem__("name", "forged"),
                         reseal_manifest=False),
    "evil/ckssha": hostile(OURS, ["%s  extra.txt\n" % EVIL], keep_checksums_sha=True),
    "evil/corrupt": OURS, "flaky/429": OURS, "flaky/429x": OURS, "flaky/500": OURS, "flaky/drop": BIG,
    "redir/ds": OURS, "slow/big": BIG,
}


# ------------------------------------------------------------------ servers
class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.log = []              # (server, path, headers dict)
        self.counts = {}
        self.sent = {}             # path -> bytes sent so far (throttled file)
        self.throttle = 0.0

    def record(self, server, path, headers):
        with self.lock:
            self.log.append((server, path, dict(headers)))
            self.counts[path] = self.counts.get(path, 0) + 1
            return self.counts[path]

    def reset(self):
        with self.lock:
            self.log, self.counts, self.sent = [], {}, {}


S = State()
PORT2 = None


class Hub(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_label = "hub"

    def log_message(self, *a):
        pass

    def send_bytes(self, code, body, extra=()):
        self.send_response(code)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        n = S.record(self.server_label, self.path, self.headers)
        parts = self.path.split("/", 6)       # '', datasets, owner, name, resolve, rev, path
        if len(parts) < 7 or parts[1] != "datasets" or parts[4] != "resolve":
            return self.send_bytes(404, b"not found")
        repo, rev, rel = parts[2] + "/" + parts[3], parts[5], parts[6]
        if repo not in REPOS or rev not in ("main", "v1") or rel not in REPOS[repo]:
            return self.send_bytes(404, b"Entry not found")
        body = REPOS[repo][rel]
        auth = self.headers.get("Authorization")
        if self.server_label == "hub":
            if repo in ("priv/ds", "redir/ds") and auth != "Bearer " + TOKEN:
                return self.send_bytes(401, b"Invalid credentials")
            if repo == "redir/ds" and rel != "fidelity-dataset.json":
                return self.send_bytes(302, b"", [("Location", "http://localhost:%d%s" % (PORT2, self.path))])
            if repo == "flaky/429" and rel == "fidelity-dataset.json" and n <= 2:
                return self.send_bytes(429, b"slow down", [("Retry-After", "1")])
            if repo == "flaky/429x":
                return self.send_bytes(429, b"slow down", [("Retry-After", "0")])
            if repo == "flaky/500" and rel.startswith("capture/hidden_0001") and n == 1:
                return self.send_bytes(500, b"oops")
            if repo == "evil/corrupt" and rel.startswith("capture/hidden_0001"):
                body = body[:-1] + bytes([body[-1] ^ 1])
        start = 0
        rng = self.headers.get("Range")
        if rng:
            start = int(rng.split("=")[1].split("-")[0])
        code = 206 if rng else 200
        self.send_response(code)
        if rng:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(body) - 1, len(body)))
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        payload = body[start:]
        if repo == "flaky/drop" and rel == BIG_FILE and n == 1:
            self.wfile.write(payload[:len(payload) // 3])     # then the connection drops
            self.wfile.flush()
            self.close_connection = True
            return
        if repo == "slow/big" and rel == BIG_FILE and S.throttle:
            for i in range(0, len(payload), 16384):
                try:
                    self.wfile.write(payload[i:i + 16384])
                    self.wfile.flush()
                except OSError:           # the client was killed: expected
                    return
                with S.lock:
                    S.sent[rel] = S.sent.get(rel, 0) + len(payload[i:i + 16384])
                time.sleep(S.throttle)
            return
        self.wfile.write(payload)


class Cdn(Hub):
    server_label = "cdn"


class TS(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


hub = TS(("127.0.0.1", 0), Hub)
cdn = TS(("127.0.0.1", 0), Cdn)
PORT2 = cdn.server_address[1]
for srv in (hub, cdn):
    threading.Thread(target=srv.serve_forever, daemon=True).start()
ENDPOINT = "http://127.0.0.1:%d" % hub.server_address[1]
HOME = os.path.join(WORK, "home")
os.makedirs(HOME)
ALL_OUTPUT = []


def env(token=None, **kw):
    e = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "FIDELITY_CACHE")}
    e.update(HF_ENDPOINT=ENDPOINT, HOME=HOME, XDG_CACHE_HOME=os.path.join(HOME, ".cache"))
    if token:
        e["HF_TOKEN"] = token
    e.update(kw)
    return e


def fid(*args, token=None, **kw):
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True, env=env(token, **kw), timeout=300)
    ALL_OUTPUT.append(p.stdout + p.stderr)
    return p.returncode, p.stdout, p.stderr


def cache(name):
    return os.path.join(WORK, "cache-" + name)


def unverified_left(c):
    """Any .part / staging / temp file anywhere under the cache."""
    bad = []
    for d, dirs, names in os.walk(c):
        bad += [os.path.join(d, x) for x in dirs if x.startswith(".partial-")]
        bad += [os.path.join(d, n) for n in names if n.endswith(".part") or ".tmp." in n]
    return bad


def rule_of(out):
    for line in out.splitlines():
        if line.startswith("REFUSED ["):
            return line[len("REFUSED ["):line.index("]")], line[line.rindex("(") + 1:line.rindex(")")]
    return None, None


def same_tree(root, files):
    got = tree(root)
    return got == files, sorted(set(got) ^ set(files))


def refused(name, args, want_rule, token=None, **kw):
    c = cache(name)
    S.reset()
    rc, out, err = fid(*args, "--cache", c, token=token, **kw)
    code, rule = rule_of(out)
    left = unverified_left(c)
    check("%s: refused hub_error/%s, nothing unverified kept" % (name, want_rule),
          rc == 3 and code == "hub_error" and rule == want_rule and not left, (rc, out, err, left))
    return c, out, err


# ------------------------------------------------------------------ cases
# 1. our dataset and the Python-written one fetch, verify and land per repo and revision
for repo, files, rev in (("ours/ds", OURS, None), ("py/ds", PY, "v1")):
    ref = "hf://" + repo + ("@" + rev if rev else "")
    c = cache("fetch")
    rc, out, err = fid("fetch", ref, "--cache", c)
    root = os.path.join(c, repo.replace("/", "__"), rev or "main")
    eq, diff = same_tree(root, files) if os.path.isdir(root) else (False, "no " + root)
    check("fetch %s: VERIFIED, cache layout <cache>/owner__name/<rev>, bytes identical" % ref,
          rc == 0 and "VERIFIED " + root in out and eq and not unverified_left(c), (rc, out, err, diff))

# 2. a second run re-verifies and reuses everything
S.reset()
rc, out, err = fid("fetch", "hf://ours/ds", "--cache", cache("fetch"))
payload_gets = [p for (_, p, _) in S.log if not p.endswith(("fidelity-dataset.json", "checksums.txt"))]
check("second fetch reuses every verified file (no payload GET)",
      rc == 0 and "downloaded 0, reused %d" % (len(OURS) - 2) in out and not payload_gets, (out, payload_gets))

# 3. a stale file of an earlier fetch is dropped; a tampered cached file is re-downloaded
root = os.path.join(cache("fetch"), "ours__ds", "main")
open(os.path.join(root, "stale.txt"), "w").write("x")
victim = os.path.join(root, "capture", "hidden_0000.safetensors")
data = bytearray(open(victim, "rb").read()); data[-1] ^= 1; open(victim, "wb").write(bytes(data))
rc, out, err = fid("fetch", "hf://ours/ds", "--cache", cache("fetch"))
check("refetch drops an unlisted stale file and replaces a tampered cached file",
      rc == 0 and "downloaded 1," in out and not os.path.exists(os.path.join(root, "stale.txt")), (out, err))

# 4. hf:// wherever a dataset path is: verify, validate, describe (manifest only), compare
rc, out, err = fid("verify", "hf://ours/ds", "--cache", cache("fetch"))
check("verify hf://ours/ds", rc == 0 and out.startswith("VERIFIED "), out + err)
rc, out, err = fid("validate", "hf://py/ds@v1", "--cache", cache("fetch"))
check("validate hf://py/ds@v1 (Python-written)", rc == 0 and "0 error(s)" in out, out + err)
S.reset()
rc, out, err = fid("describe", "hf://py/ds", "--format", "json", "--cache", cache("describe"))
paths = [p.rsplit("/", 1)[-1] for (_, p, _) in S.log]
check("describe hf:// fetches only the manifest",
      rc == 0 and json.loads(out)["dataset_sha256"] == json.loads(PY["fidelity-dataset.json"])["dataset_sha256"]
      and paths == ["fidelity-dataset.json"], (out, err, paths))
rc, out, err = fid("compare", "--reference", "hf://ours/ds", "--candidate", "hf://ours/ds", "--out",
                   os.path.join(WORK, "cmp-same"), "--cache", cache("fetch"))
check("compare hf://X against hf://X is same_root (one cache dir per repo and revision)",
      rc == 3 and "REFUSED [same_root]" in out, out + err)
rc, out, err = fid("compare", "--reference", "hf://ours/ds", "--candidate", "hf://ours/ds@v1", "--self-compare",
                   "--out", os.path.join(WORK, "cmp-self"), "--cache", cache("fetch"))
check("compare hf://ours/ds vs @v1 --self-compare: two revision dirs, exact zero",
      rc == 0 and os.path.isfile(os.path.join(WORK, "cmp-self", "comparison-receipt.json")), out + err)

# 5. --manifest-only and --allow-partial
S.reset()
c = cache("partial")
rc, out, err = fid("fetch", "hf://ours/ds", "--manifest-only", "--cache", c)
check("--manifest-only: one GET, only the manifest in the cache",
      rc == 0 and len(S.log) == 1 and os.listdir(os.path.join(c, "ours__ds", "main")) == ["fidelity-dataset.json"],
      (out, err, S.log))
S.reset()
rc, out, err = fid("fetch", "hf://ours/big", "--allow-partial", "--cache", c)
got = [p for (_, p, _) in S.log if "/capture/hidden_" in p]
check("--allow-partial: no capture tensor requested, verifies as partial", rc == 0 and not got, (out, err, got))

# 6. transient statuses: 429 with Retry-After, 500 with backoff, exhaustion
S.reset()
rc, out, err = fid("fetch", "hf://flaky/429", "--cache", cache("429"))
check("429 Retry-After: 1 twice, announced, then verified",
      rc == 0 and err.count("HTTP 429") == 2 and "waiting 1.0s (attempt 1 of 5)" in err
      and "waiting 1.0s (attempt 2 of 5)" in err, (out, err))
c, out, err = refused("429-forever", ["fetch", "hf://flaky/429x"], "HUB-HTTP")
check("429 forever: five attempts, then refused with the rate-limit remedy",
      err.count("HTTP 429") == 4 and "retries exhausted" in out and "rate-limiting" in out and len(S.log) == 5,
      (out, err, len(S.log)))
S.reset()
rc, out, err = fid("fetch", "hf://flaky/500", "--cache", cache("500"))
check("500 once: backoff 2**1 s announced, then verified",
      rc == 0 and "HTTP 500" in err and "waiting 2.0s (attempt 1 of 5)" in err, (out, err))

# 7. a dropped connection mid-file resumes with a Range request in the same run
S.reset()
rc, out, err = fid("fetch", "hf://flaky/drop", "--cache", cache("drop"))
ranges = [h.get("Range") for (_, p, h) in S.log if p.endswith(BIG_FILE)]
check("dropped connection mid-file: resumed with Range from the bytes on disk, verified",
      rc == 0 and ranges[0] is None and len(ranges) == 2 and ranges[1] == "bytes=%d-" % (len(BIG[BIG_FILE]) // 3)
      and "resuming with a Range request" in err, (out, err, ranges))

# 8. bytes that do not match their checksum: nothing of that file lands
c, out, err = refused("corrupt", ["fetch", "hf://evil/corrupt"], "HUB-DIGEST")
root = os.path.join(c, "evil__corrupt", "main")
check("corrupt file: absent from the cache, manifest never written",
      not os.path.exists(os.path.join(root, "capture", "hidden_0001.safetensors"))
      and not os.path.exists(os.path.join(root, "fidelity-dataset.json")) and "Nothing was written" in out, out)
rc, out, err = fid("verify", "hf://evil/corrupt", "--cache", c)
check("verify hf:// of the corrupt dataset refuses too", rc == 3 and "HUB-DIGEST" in out, out)

# 9. hostile listings: refused before any write or any payload GET
for name, repo in (("dotdot", "evil/dotdot"), ("absolute", "evil/abs"), ("checksums_file", "evil/cksfile")):
    c, out, err = refused("path-" + name, ["fetch", "hf://" + repo], "HUB-PATH")
    files = [os.path.join(d, n) for d, _, ns in os.walk(c) for n in ns if not n.startswith(".lock-")]
    payload = [p for (_, p, _) in S.log if not p.endswith(("fidelity-dataset.json", "checksums.txt"))]
    check("%s: no file written anywhere, no payload requested" % name,
          not files and not payload and not os.path.exists(os.path.join(WORK, "escaped.txt"))
          and not os.path.exists("/tmp/fd-hub-absolute.txt"), (files, payload))
refused("manifest-seal", ["fetch", "hf://evil/seal"], "HUB-SEAL")
refused("checksums-sha", ["fetch", "hf://evil/ckssha"], "HUB-SEAL")
c, out, err = refused("http-404", ["fetch", "hf://nobody/here"], "HUB-HTTP")
check("404: remedy names the repository and revision", "HTTP 404" in out and "revision" in out, out)

# 10. bad references never reach the network
for bad in ("hf://a", "hf://a/b/c", "hf://a/b@", "hf://a/b@../x", "hf://-a/b", "hf://a/b.git", "hf://a--b/c"):
    S.reset()
    rc, out, err = fid("fetch", bad, "--cache", cache("ref"))
    check("bad reference %s: HUB-REF, no request" % bad, rc == 3 and rule_of(out) == ("hub_error", "HUB-REF")
          and not S.log, (out, err))

# 11. tokens: anonymous first; the token only after a 401, only to the endpoint's origin
S.reset()
rc, out, err = fid("fetch", "hf://ours/ds", "--cache", cache("anon"), token=TOKEN)
check("public repo with HF_TOKEN set: no request carries Authorization",
      rc == 0 and not any("Authorization" in h for (_, _, h) in S.log), S.log)
S.reset()
rc, out, err = fid("fetch", "hf://redir/ds", "--cache", cache("redir"), token=TOKEN)
hub_auth = [h.get("Authorization") for (s, _, h) in S.log if s == "hub"]
cdn_hdrs = [h for (s, _, h) in S.log if s == "cdn"]
check("redirect to another origin (localhost:PORT2): token used on the endpoint, never sent to the other origin",
      rc == 0 and "Bearer " + TOKEN in hub_auth and None in hub_auth and cdn_hdrs
      and not any("Authorization" in h for h in cdn_hdrs), (out, err, hub_auth, cdn_hdrs))
c, out, err = refused("private-anonymous", ["fetch", "hf://priv/ds"], "HUB-HTTP")
check("private repo without a token: HTTP 401 and the token remedy", "HTTP 401" in out and "--token-file" in out, out)
tokdir = os.path.join(WORK, "tok")
os.makedirs(tokdir)
tf = os.path.join(tokdir, "token")
with open(tf, "w") as f:
    f.write(TOKEN + "\n")
for mode in (0o644, 0o640, 0o400):
    os.chmod(tf, mode)
    S.reset()
    c, out, err = refused("token-mode-%o" % mode, ["fetch", "hf://priv/ds", "--token-file", tf], "HUB-TOKEN",
                          token=TOKEN)
    check("token file mode %o refused before any request (HF_TOKEN not used instead)" % mode,
          "0600" in out and not S.log, (out, S.log))
os.chmod(tf, 0o600)
link = os.path.join(tokdir, "link")
os.symlink(tf, link)
refused("token-symlink", ["fetch", "hf://priv/ds", "--token-file", link], "HUB-TOKEN")
empty = os.path.join(tokdir, "empty")
open(empty, "w").close()
os.chmod(empty, 0o600)
refused("token-empty", ["fetch", "hf://priv/ds", "--token-file", empty], "HUB-TOKEN")
refused("token-missing", ["fetch", "hf://priv/ds", "--token-file", os.path.join(tokdir, "nope")], "HUB-TOKEN")
rc, out, err = fid("fetch", "hf://priv/ds", "--token-file", tf, "--cache", cache("priv"))
check("0600 token file: private repo verifies", rc == 0 and "VERIFIED" in out, out + err)
hfc = os.path.join(HOME, ".cache", "huggingface")
os.makedirs(hfc)
with open(os.path.join(hfc, "token"), "w") as f:
    f.write(TOKEN)
rc, out, err = fid("fetch", "hf://priv/ds", "--cache", cache("priv-home"))
check("~/.cache/huggingface/token is the last source", rc == 0, out + err)
os.remove(os.path.join(hfc, "token"))
rc, out, err = fid("fetch", "hf://priv/ds", "--cache", cache("priv-env"), HUGGING_FACE_HUB_TOKEN=TOKEN)
check("HUGGING_FACE_HUB_TOKEN is a source", rc == 0, out + err)

# 12. killed mid-file, restarted: the part continues with a Range request and verifies
S.reset()
S.throttle = 0.03
c = cache("kill")
proc = subprocess.Popen([BIN, "fetch", "hf://slow/big", "--cache", c, "--progress"], env=env(),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
deadline = time.time() + 60
while time.time() < deadline and S.sent.get(BIG_FILE, 0) < len(BIG[BIG_FILE]) // 2:
    time.sleep(0.05)
proc.send_signal(signal.SIGKILL)
k_out, k_err = proc.communicate()
ALL_OUTPUT.append(k_out + k_err)
parts = [os.path.join(d, n) for d, _, ns in os.walk(c) for n in ns if n.endswith(".part")]
part_size = os.path.getsize(parts[0]) if parts else 0
check("killed fetch left its partial file in the staging area, not in the dataset",
      len(parts) == 1 and 0 < part_size < len(BIG[BIG_FILE]) and "/.partial-main/" in parts[0]
      and not os.path.exists(os.path.join(c, "slow__big", "main", BIG_FILE)), (parts, part_size))
check("--progress printed bytes/s on stderr", "B/s" in k_err, k_err[-500:])
S.throttle = 0.0
S.reset()
rc, out, err = fid("fetch", "hf://slow/big", "--cache", c)
ranges = [h.get("Range") for (_, p, h) in S.log if p.endswith(BIG_FILE)]
check("restart: Range request from the part's size, resumed 1, verified, nothing unverified left",
      rc == 0 and ranges == ["bytes=%d-" % part_size] and "resumed 1" in out and "VERIFIED" in out
      and not unverified_left(c) and same_tree(os.path.join(c, "slow__big", "main"), BIG)[0], (out, err, ranges))

# 13. the token never appears in any output of any run above
leaks = [o for o in ALL_OUTPUT if TOKEN in o]
check("the token never appears in stdout/stderr of %d runs" % len(ALL_OUTPUT), not leaks, leaks[:1])

hub.shutdown(); cdn.shutdown()
shutil.rmtree(WORK, ignore_errors=True)
print("%d/%d hub checks passed" % (sum(results), len(results)))
sys.exit(0 if all(results) else 1)
