"""Independent reference for the llama.cpp `--kl-divergence-base` (.kld) file,
written from ggml-org/llama.cpp tools/perplexity/perplexity.cpp (revision
050fc7f): the header written in kl_divergence(), the packing in
log_softmax(n_vocab, logits, log_prob, tok) and the decode in the KL reader.
numpy only (plus ctypes for the C library's expf/log, which llama.cpp calls:
numpy's own SIMD exp is not bit-identical to libm's expf).

Every float operation below is an IEEE binary32 operation in llama.cpp's
order (no fused multiply-add), except the exp sum, which is a sequential
double accumulation of float expf values, and log(sum), which is a double
log rounded to float."""
import ctypes, ctypes.util, math, struct
import numpy as np

_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
_libm.expf.restype = ctypes.c_float
_libm.expf.argtypes = [ctypes.c_float]

F = np.float32
MAGIC = b"_logits_"


def row_stride(n_vocab):
    """nv = 2*((n_vocab+1)/2) + 4 uint16 per row."""
    return 2 * ((n_vocab + 1) // 2) + 4


def rows_per_chunk(n_ctx):
    return n_ctx - 1 - n_ctx // 2


def file_size(n_ctx, n_vocab, n_chunk):
    return 20 + 4 * n_chunk * n_ctx + n_chunk * rows_per_chunk(n_ctx) * row_stride(n_vocab) * 2


def nearest_int(fval):
    val = F(F(fval) + F(12582912.0))
    i = int(np.array([val], dtype=np.float32).view(np.int32)[0])
    return (i & 0x007FFFFF) - 0x00400000


def pack_row(logits, window=16):
    """One row of uint16 (scale, min_log_prob, codes, pad) from fp32 logits."""
    x = np.asarray(logits, dtype=np.float32)
    n = x.size
    maxl = x[0]
    minl = x[0]
    for v in x[1:]:
        maxl = v if maxl < v else maxl
        minl = v if v < minl else minl
    floor = F(maxl - F(window))
    minl = floor if minl < floor else minl
    s = 0.0
    for v in x:
        s += float(_libm.expf(float(F(v - maxl))))
    lse = F(math.log(s))
    minlp = F(F(minl - maxl) - lse)
    scale = F(F(maxl - minl) / F(65535.0))
    out = np.zeros(row_stride(n), dtype=np.uint16)
    out[0:2] = np.array([scale], dtype=np.float32).view(np.uint16)
    out[2:4] = np.array([minlp], dtype=np.float32).view(np.uint16)
    if scale != 0:
        inv = F(F(1.0) / scale)
        for i, v in enumerate(x):
            if v > minl:
                out[4 + i] = nearest_int(F(inv * F(v - minl))) & 0xFFFF
    return out


def decode_row(row, n_vocab):
    """log p[i] = scale*q[i] + min_log_prob, two binary32 roundings."""
    row = np.asarray(row, dtype=np.uint16)
    scale = row[0:2].view(np.float32)[0]
    minlp = row[2:4].view(np.float32)[0]
    q = row[4:4 + n_vocab].astype(np.float32)
    return (q * scale).astype(np.float32) + minlp


def write_kld(path, n_ctx, n_vocab, tokens, rows):
    """tokens: n_chunk*n_ctx ints; rows: n_chunk*R packed rows (uint16 arrays)."""
    n_chunk = len(tokens) // n_ctx
    assert len(tokens) == n_chunk * n_ctx and len(rows) == n_chunk * rows_per_chunk(n_ctx)
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<iii", n_ctx, n_vocab, n_chunk))
        f.write(np.asarray(tokens, dtype="<i4").tobytes())
        for r in rows:
            assert r.size == row_stride(n_vocab)
            f.write(np.asarray(r, dtype="<u2").tobytes())


def read_kld(path):
    """(n_ctx, n_vocab, n_chunk, tokens, decoded [n_chunk*R, n_vocab] float32, raw rows)."""
    data = open(path, "rb").read()
    assert data[:8] == MAGIC
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<iii", data, 8)
    assert len(data) == file_size(n_ctx, n_vocab, n_chunk)
    tokens = np.frombuffer(data, dtype="<i4", count=n_chunk * n_ctx, offset=20)
    nv = row_stride(n_vocab)
    body = np.frombuffer(data, dtype="<u2", offset=20 + 4 * n_chunk * n_ctx).reshape(-1, nv)
    decoded = np.stack([decode_row(r, n_vocab) for r in body])
    return n_ctx, n_vocab, n_chunk, tokens, decoded, body
