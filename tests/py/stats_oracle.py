#!/usr/bin/env python3
"""numpy oracle for src/compare/stats.c (the receipt statistics).

`python3 tests/py/stats_oracle.py` prints the expected table that
tests/c/test_stats.c hard-codes (between its GENERATED markers), as C source:
every expected double is its IEEE-754 bit pattern (uint64 hex).  The inputs
are generated identically in C and here from splitmix64, so a reviewer can
regenerate the table with another numpy and diff it:
  diff <(python3 tests/py/stats_oracle.py) \
       <(sed -n '/BEGIN GENERATED/,/END GENERATED/p' tests/c/test_stats.c)

`--sweep` additionally re-checks, in pure Python, that numpy's float64 mean is
pairwise_sum over the whole array (not 8192-element chunks) on random lengths
1..3000 and 10^5..10^6, and that np.quantile matches the _lerp formula.

Shared input generator (C: tests/c/test_stats.c gen_values):
  splitmix64 with state = seed; each value uses two outputs u, v:
    mant = u >> 11 (53 bits);
    kind 0 ("wide"): x = ldexp(mant, (v % 81) - 40 - 53), negated if v >> 63;
    kind 1 ("kl"):   e = -(v % 30) + (8 if v % 97 == 0 else 0);
                     x = ldexp(mant, e - 53)           (>= 0, heavy-ish tail)
  a uniform q in [0, 1) is (next() >> 11) * 2**-53.
"""
import math
import sys

import numpy as np

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
BOOT_SEED = 20260829
FNV_OFF, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


class SplitMix64:
    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + GAMMA) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)


def splitmix_block(seed, n):
    """Outputs 1..n of splitmix64(seed), vectorised (output k mixes seed+k*GAMMA)."""
    with np.errstate(over="ignore"):
        k = np.arange(1, n + 1, dtype=np.uint64)
        z = np.uint64(seed) + k * np.uint64(GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def gen_values(seed, n, kind):
    out = splitmix_block(seed, 2 * n)
    u, v = out[0::2], out[1::2]
    mant = (u >> np.uint64(11)).astype(np.float64)
    if kind == 0:
        e = (v % np.uint64(81)).astype(np.int64) - 40
        x = np.ldexp(mant, e - 53)
        x[(v >> np.uint64(63)) == 1] *= -1.0
    else:
        e = -(v % np.uint64(30)).astype(np.int64)
        e[(v % np.uint64(97)) == 0] += 8
        x = np.ldexp(mant, e - 53)
    return x


def uniforms(seed, n):
    return (splitmix_block(seed, n) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def bits(x):
    return int(np.float64(x).view(np.uint64))


def hx(x):
    return f"0x{bits(x):016x}ull"


def fnv(vals):
    h = FNV_OFF
    for x in vals:
        b = bits(x)
        for i in range(8):
            h ^= (b >> (8 * i)) & 0xFF
            h = (h * FNV_PRIME) & M64
    return h


def quant(sorted_x, q):
    return np.quantile(sorted_x, q)  # default method 'linear'


# ---- cases shared with tests/c/test_stats.c ------------------------------------
MEAN_LENGTHS = [1, 7, 8, 9, 127, 128, 129, 1000, 8191, 8192, 8193, 100000, 1000000]
Q_LENGTHS = [1, 2, 7, 8, 9, 127, 128, 129, 1000, 8193, 100000]
Q_FIXED = [0.5, 0.95, 0.99, 0.999, 0.025, 0.975, 0.0, 1.0]
Q_RANDOM = 4  # per length, from uniforms(5000 + length)
SWEEP_N = 3000


def dataset(which):
    """Returns (kl, rows, domain, stratum, top1) of a fixed stats dataset.
    A: 37 contexts, rows 1 + (next % 2200) from splitmix64(77), values kind 1
       from seed 78, domains by c % 3, strata by (c * 7) % 4, top1 matches =
       rows - (u % (rows + 1) if u % 3 == 0) with u = next() of splitmix64(79).
    B: 9 contexts of ties (rows < 1536: the last bucket is absent): context c
       has rows 5 + 40 * (c % 3) and every value equal to (c % 4) * 0.25, except
       context 8 whose values are kind 1 from seed 80; every context has
       rows - (c % 2) matches, domains "x"/"y" by c % 2, strata "only"."""
    if which == "A":
        g = SplitMix64(77)
        rows = [1 + g.next() % 2200 for _ in range(37)]
        kl = gen_values(78, sum(rows), 1)
        dom = [["prose", "code", "math"][c % 3] for c in range(37)]
        strat = [["s0", "s1", "s2", "s3"][(c * 7) % 4] for c in range(37)]
        g = SplitMix64(79)
        top1 = []
        for r in rows:
            u = g.next()
            top1.append(r - (u % (r + 1) if u % 3 == 0 else 0))
        return kl, rows, dom, strat, top1
    rows = [5 + 40 * (c % 3) for c in range(9)]
    parts = [np.full(rows[c], (c % 4) * 0.25) for c in range(8)]
    parts.append(gen_values(80, rows[8], 1))
    kl = np.concatenate(parts)
    dom = [["x", "y"][c % 2] for c in range(9)]
    strat = ["only"] * 9
    top1 = [r - (c % 2) for c, r in enumerate(rows)]
    return kl, rows, dom, strat, top1


BUCKETS = [("0000-0255", 0, 256), ("0256-0511", 256, 512), ("0512-1023", 512, 1024),
           ("1024-1535", 1024, 1536), ("1536-2046", 1536, 2047)]


def kl_stats(kl, rows, dom, strat, top1):
    """The receipt statistics as dscompare/dsformat compute them with numpy."""
    offs = np.concatenate(([0], np.cumsum(rows)))
    ctx = []
    for c, r in enumerate(rows):
        x = kl[offs[c]:offs[c + 1]]
        ctx.append(dict(index=c, mean=float(x.mean()), max=float(x.max()), sum=float(x.sum()),
                        agree=top1[c] / r, rows=r))
    out = dict(mean=kl.mean(), median=quant(kl, 0.5), p95=quant(kl, 0.95),
               p99=quant(kl, 0.99), p99_9=quant(kl, 0.999), max=kl.max())
    out["ctx_fnv"] = fnv(v for c in ctx for v in (c["mean"], c["max"], c["sum"], c["agree"]))

    def groups(keys):
        g = {}
        for c, k in enumerate(keys):
            g.setdefault(k, []).append(ctx[c]["mean"])
        return [(k, float(np.mean(np.array(g[k]))), len(g[k])) for k in sorted(g)]
    out["domains"] = groups(dom)
    out["strata"] = groups(strat)
    out["macro"] = float(np.mean(np.array([m for _, m, _ in out["strata"]])))
    bk = []
    for _, lo, hi in BUCKETS:
        per = [float(kl[offs[c] + lo:offs[c] + min(hi, r)].mean())
               for c, r in enumerate(rows) if r > lo]
        bk.append((float(np.mean(np.array(per))), len(per)) if per else None)
    out["buckets"] = bk
    out["high"] = [c["index"] for c in sorted(ctx, key=lambda c: c["mean"], reverse=True)][:5]
    disc = [c for c in ctx if c["agree"] < 1]
    out["disc"] = [c["index"] for c in sorted(disc, key=lambda c: (c["agree"], c["index"]))][:5]
    out["top1"] = sum(top1) / sum(rows)
    return out


def draws(seed, c, count):
    """`count` indices in [0, c): splitmix64 + Lemire multiply-shift with
    rejection (vectorised; falls back to the sequential form on a rejection
    candidate, which has probability about count * c / 2**64)."""
    x = splitmix_block(seed, count)
    with np.errstate(over="ignore"):
        low = x * np.uint64(c)  # the low 64 bits of x * c
    if np.any(low < np.uint64(c)):
        g, t, res = SplitMix64(seed), ((1 << 64) - c) % c, []
        for _ in range(count):
            m = g.next() * c
            while (m & M64) < c and (m & M64) < t:
                m = g.next() * c
            res.append(m >> 64)
        return np.array(res, dtype=np.int64)
    xh, xl = x >> np.uint64(32), x & np.uint64(0xFFFFFFFF)
    hi = (xh * np.uint64(c) + ((xl * np.uint64(c)) >> np.uint64(32))) >> np.uint64(32)
    return hi.astype(np.int64)


def bootstrap(kl, rows, samples, seed):
    c = len(rows)
    offs = np.concatenate(([0], np.cumsum(rows)))
    sums = np.array([kl[offs[i]:offs[i + 1]].sum() for i in range(c)])
    rws = np.array(rows, dtype=np.int64)
    idx = draws(seed, c, samples * c).reshape(samples, c)
    s = np.zeros(samples)
    r = np.zeros(samples, dtype=np.int64)
    for j in range(c):  # left to right in draw order, per resample
        s = s + sums[idx[:, j]]
        r = r + rws[idx[:, j]]
    means = s / r.astype(np.float64)
    return quant(means, 0.025), quant(means, 0.975)


BOOT_CASES = [("A", 10000, BOOT_SEED), ("B", 2000, 1)]


def table():
    L = ["/* BEGIN GENERATED by tests/py/stats_oracle.py (numpy %s) */" % np.__version__]
    L.append("static const mean_case MEAN_CASES[] = {")
    for kind in (0, 1):
        for n in MEAN_LENGTHS:
            seed = (1000 if kind == 0 else 2000) + n
            L.append(f"    {{{kind}, {seed}u, {n}u, {hx(gen_values(seed, n, kind).mean())}}},")
    L.append("};")
    L.append("static const q_case Q_CASES[] = {")
    for n in Q_LENGTHS:
        xs = np.sort(gen_values(4000 + n, n, 1))
        for q in Q_FIXED + list(uniforms(5000 + n, Q_RANDOM)):
            L.append(f"    {{{n}u, {hx(q)}, {hx(quant(xs, float(q)))}}},")
    L.append("};")
    x = gen_values(42, SWEEP_N, 0)
    L.append(f"#define SWEEP_MEAN_FNV 0x{fnv(x[:n].mean() for n in range(1, SWEEP_N + 1)):016x}ull")
    xs = np.sort(gen_values(43, SWEEP_N, 1))
    qs = uniforms(44, SWEEP_N)
    L.append("#define SWEEP_QUANTILE_FNV 0x%016xull"
             % fnv(quant(xs[:n], float(qs[n - 1])) for n in range(1, SWEEP_N + 1)))
    for name in ("A", "B"):
        o = kl_stats(*dataset(name))
        L.append(f"static const kl_expect KL_{name} = {{")
        L.append("    " + ", ".join(hx(o[k]) for k in ("mean", "median", "p95", "p99", "p99_9", "max")) + ",")
        L.append(f"    0x{o['ctx_fnv']:016x}ull,")
        for g in ("domains", "strata"):
            L.append(f"    {len(o[g])}, {{" + ", ".join(f'{{"{k}", {hx(m)}, {n}}}' for k, m, n in o[g]) + "},")
        L.append(f"    {hx(o['macro'])},")
        L.append("    {" + ", ".join(f"{{1, {hx(b[0])}, {b[1]}}}" if b else "{0, 0, 0}" for b in o["buckets"]) + "},")
        L.append(f"    {len(o['high'])}, {{" + ", ".join(map(str, o["high"])) + "},")
        L.append(f"    {len(o['disc'])}, {{" + ", ".join(map(str, o["disc"])) + "},")
        L.append(f"    {hx(o['top1'])},")
        L.append("};")
    L.append("static const boot_case BOOT_CASES[] = {")
    for name, b, seed in BOOT_CASES:
        kl, rows = dataset(name)[:2]
        lo, hi = bootstrap(kl, rows, b, seed)
        L.append(f"    {{'{name}', {b}u, {seed}u, {hx(lo)}, {hx(hi)}}},")
    L.append("};")
    L.append("/* END GENERATED */")
    return "\n".join(L)


# ---- --sweep: independent pure-Python checks of what numpy does ---------------------
def py_pairwise(a, lo, n):
    if n < 8:
        r = 0.0
        for i in range(lo, lo + n):
            r += a[i]
        return r
    if n <= 128:
        r = [a[lo + k] for k in range(8)]
        i = 8
        while i < n - n % 8:
            for k in range(8):
                r[k] += a[lo + i + k]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for j in range(i, n):
            res += a[lo + j]
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return py_pairwise(a, lo, n2) + py_pairwise(a, lo + n2, n - n2)


def py_quantile(xs, q):
    n = len(xs)
    v = (n - 1) * q
    if v >= n - 1:
        prev, lo, hi = -1.0, n - 1, n - 1
    else:
        prev = float(math.floor(v))
        lo, hi = int(prev), int(prev) + 1
    t = v - prev
    a, b = xs[lo], xs[hi]
    d = b - a
    return b - d * (1 - t) if t >= 0.5 else a + d * t


def sweep():
    rng = np.random.default_rng(20260829)
    bad = 0
    lengths = list(range(1, 3001)) + [100000, 131072, 262145, 500000, 999999, 1000000]
    for n in lengths:
        x = rng.standard_normal(n) * np.exp2(rng.integers(-60, 60, n))
        xl = x.tolist()
        want = x.mean()
        got = (0.0 + py_pairwise(xl, 0, n)) / n
        if bits(got) != bits(want):
            bad += 1
            print(f"mean mismatch n={n}")
        if n <= 3000:
            xs = np.sort(x)
            xsl = xs.tolist()
            for q in [0.5, 0.95, 0.99, 0.999, 0.025, 0.975] + list(rng.random(3)):
                if bits(py_quantile(xsl, float(q))) != bits(np.quantile(xs, float(q))):
                    bad += 1
                    print(f"quantile mismatch n={n} q={q!r}")
    g = SplitMix64(123)
    assert [g.next() for _ in range(5)] == [int(v) for v in splitmix_block(123, 5)]
    d = draws(9, 37, 1000)
    g, seq = SplitMix64(9), []
    for _ in range(1000):
        seq.append((g.next() * 37) >> 64)
    assert seq == d.tolist()
    print(f"sweep: {len(lengths)} lengths, {bad} mismatches")
    return bad


if __name__ == "__main__":
    if "--sweep" in sys.argv[1:]:
        sys.exit(1 if sweep() else 0)
    print(table())
