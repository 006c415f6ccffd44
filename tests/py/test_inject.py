#!/usr/bin/env python3
"""FIDELITY_FORWARD_INJECT=L:PATH (issue 17 item 4, engine/driver.c): before
layer L the engine's residual stream is replaced by PATH, a .npy of bf16 bits
(uint16/int16), so a layer can be fed another implementation's input of that
layer (tests/parity/layer_parity.py --inject feeds transformers' own).

usage: test_inject.py BINARY

For glm_moe_dsa (tiny), deepseek_v3 (deepseek-v3-tiny), llama (llama-tiny),
qwen3_moe (qwen3-moe-tiny) and minimax_m2 (minimax-m2-tiny), one captured
window:
  - injecting our own input of layer L (the dumped embed / layer_out.L-1)
    gives the plain capture's capture_content_digest (the hook moves no bit);
  - injecting that input with one element changed leaves every dump of the
    layers before L unchanged and changes layer L's output and the digest;
  - a size, dtype, spec or file that does not fit is refused (exit 3,
    REFUSED [bad_usage] - or the file's own missing_file / unreadable -
    naming the variable and the reason), no dataset left.
"""
from fdcheck import Checks
import json, os, shutil, struct, subprocess

T = Checks("inject", "fd-inject-")
case, W, BIN = T.case, T.path, T.bin


def npy(path, raw, n, descr="<u2"):
    """a 1-D .npy v1.0 of n 2-byte elements, as numpy.save writes it"""
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, n)
    pad = 64 - (10 + len(hdr) + 1) % 64
    hdr = hdr + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + raw)


def capture(model, tag, inject=None, dump=True):
    out, d = W(tag + "-ds"), W(tag + "-dump")
    os.makedirs(d)
    env = dict(os.environ)
    env.pop("FIDELITY_FORWARD_INJECT", None)
    if dump:
        env["FIDELITY_FORWARD_DUMP"] = d
    if inject:
        env["FIDELITY_FORWARD_INJECT"] = inject
    p = subprocess.run([BIN, "capture", "--model", model, "--panel", os.path.join(model, "panel"), "--out", out,
                        "--role", "root", "--lane", "other", "--windows", "1", "--dataset-id", "test.inject." + tag,
                        "--dataset-name", "inject", "--no-sanity-check"], env=env, capture_output=True, text=True)
    digest = None
    if p.returncode == 0:
        digest = json.load(open(os.path.join(out, "fidelity-dataset.json")))["capture"]["capture_content_digest"]
    return p, digest, d, out


def read(d, name):
    p = os.path.join(d, name)
    return open(p, "rb").read() if os.path.exists(p) else None


for preset, layers in (("tiny", 4), ("deepseek-v3-tiny", 4), ("llama-tiny", 2), ("qwen3-moe-tiny", 2),
                       ("minimax-m2-tiny", None)):
    model = W(preset)
    rc, out, err = T.run("fixture", "--preset", preset, "--seed", "3", "--out", model)
    if rc:
        case("%s: fixture written" % preset, False, out + err)
        continue
    p, base, bd, _ = capture(model, preset + "-plain")
    case("%s: plain capture with dumps" % preset, p.returncode == 0 and base, p.stdout + p.stderr)
    if not base:
        continue
    if layers is None:
        layers = json.load(open(os.path.join(model, "config.json")))["num_hidden_layers"]
    L = layers - 1  # the last layer: every earlier dump can be compared
    own = read(bd, "layer_out.L%d.bf16" % (L - 1))
    n = len(own) // 2
    src = W(preset + "-own.npy")
    npy(src, own, n)
    p, dig, _, _ = capture(model, preset + "-own", "%d:%s" % (L, src), dump=False)
    case("%s: injecting our own input of layer %d gives the same capture_content_digest" % (preset, L),
         p.returncode == 0 and dig == base, (p.stdout + p.stderr, dig, base))
    p, dig, _, _ = capture(model, preset + "-own0", "0:" + (lambda f: (npy(f, read(bd, "embed.bf16"), n), f)[1])(
        W(preset + "-embed.npy")), dump=False)
    case("%s: injecting the embedding rows before layer 0 gives the same digest" % preset,
         p.returncode == 0 and dig == base, (p.stdout + p.stderr, dig, base))
    bad = bytearray(own)
    bad[2 * 5 + 1] ^= 0x01  # element 5: its exponent's lowest bit (a factor of 2 or 1/2)
    src2 = W(preset + "-moved.npy")
    npy(src2, bytes(bad), n)
    p, dig, md, _ = capture(model, preset + "-moved", "%d:%s" % (L, src2))
    before = all(read(md, f) == read(bd, f) for f in os.listdir(bd) if ".L%d." % L not in f and not f.startswith("final"))
    case("%s: a changed input of layer %d: the earlier layers' dumps unchanged, layer %d's output and the digest move"
         % (preset, L, L), p.returncode == 0 and before and dig != base
         and read(md, "layer_out.L%d.bf16" % L) != read(bd, "layer_out.L%d.bf16" % L), (p.stdout + p.stderr, before))

model = W("tiny")
own = W("tiny-own.npy")
short = W("short.npy")
with open(own, "rb") as f:
    data = f.read()
npy(short, b"\0\0" * 10, 10)
f32 = W("f32.npy")
npy(f32, b"\0\0" * 4096, 4096, "<f2")
for what, spec, code, frag in (
        ("a stream of another size", "1:" + short, "bad_usage", "10 elements, layer 1's stream has"),
        ("a dtype other than bf16 bits", "1:" + f32, "bad_usage", "dtype <f2"),
        ("a spec that is not LAYER:PATH", "one:" + own, "bad_usage", "is not LAYER:PATH"),
        ("a missing file", "2:" + W("absent.npy"), "missing_file", "absent.npy"),
        ("a directory", "2:" + W(), "unreadable", "not a regular file")):
    p, dig, _, out = capture(model, "refuse-" + what.replace(" ", "-"), spec, dump=False)
    case("refused: %s (exit 3, %s, the variable and the reason named; no dataset)" % (what, code),
         p.returncode == 3 and "REFUSED [%s]: FIDELITY_FORWARD_INJECT: " % code in p.stdout and frag in p.stdout
         and not os.path.exists(out), p.stdout + p.stderr)
p, dig, _, _ = capture(model, "past-last", "9:" + short, dump=False)
case("a layer past the last is never reached: the capture is the plain one", p.returncode == 0, p.stdout + p.stderr)
T.finish()
