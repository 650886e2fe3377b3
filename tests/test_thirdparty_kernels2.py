"""Round 2 of kernels written the way an outside cuTile author ports them (normalisations, GLUs, losses, matmul
variants, attention variants, selections, histograms, scans, convolutions, gathers / scatters with masks,
atomics, views): compiled by tilecore for sm_80 / sm_90a / sm_100a, run in the CPU emulator
(``tilecore.cutile.launch`` on numpy arrays) and checked against numpy on sizes that are not tile multiples.
The kernels are written from cuTile's documented API; a kernel that found a bug says so in its test.
"""

from __future__ import annotations

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")

import tilecore.cutile as tc  # noqa: E402
from tilecore.narrow_floats import decode, encode  # noqa: E402

SMS = ["sm_80", "sm_90a", "sm_100a"]
Z = ct.PaddingMode.ZERO
ConstInt = ct.Constant[int]
ConstBool = ct.Constant[bool]


def _each_sm(run, sms=SMS):
    """``run(sm)`` for every SM (inputs made afresh by ``run``)."""
    for sm in sms:
        run(sm)


def _rng(seed):
    return np.random.default_rng(seed)


def _bf16_bits(x):
    """float32 ``x`` rounded to nearest-even bf16, as uint16 codes (numpy has no bf16 without ml_dtypes)."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def _bf16_value(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


# ------------------------------------------------------------------------------ layer norm forward
@ct.kernel
def layer_norm_fwd(X, W, B, Y, Mean, Rstd, eps, TILE_N: ConstInt):
    row = ct.bid(0)
    nt = ct.num_tiles(X, axis=1, shape=(1, TILE_N))
    n = X.shape[1]
    s = ct.full((1, TILE_N), 0, dtype=ct.float32)
    for j in range(nt):
        s += ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=Z).astype(ct.float32)
    mean = ct.sum(s, axis=1) / n
    ct.store(Mean, index=(row,), tile=mean)
    v = ct.full((1, TILE_N), 0, dtype=ct.float32)
    for j in range(nt):
        t = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=Z).astype(ct.float32)
        inside = (j * TILE_N + ct.arange(TILE_N, dtype=ct.int32)) < n
        d = ct.where(inside, t - mean, 0)
        v += d ** 2
    rstd = 1 / ct.sqrt(ct.sum(v, axis=1) / n + eps)
    ct.store(Rstd, index=(row,), tile=rstd)
    for j in range(nt):
        t = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=Z).astype(ct.float32)
        w = ct.load(W, index=(j,), shape=(TILE_N,), padding_mode=Z)
        b = ct.load(B, index=(j,), shape=(TILE_N,), padding_mode=Z)
        ct.store(Y, index=(row, j), tile=((t - mean) * rstd * w + b).astype(Y.dtype))


def test_layer_norm_forward():
    def run(sm):
        rng = _rng(1)
        m, n = 19, 77
        x = rng.standard_normal((m, n)).astype(np.float16)
        w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        y, mean, rstd = np.zeros((m, n), np.float16), np.zeros(m, np.float32), np.zeros(m, np.float32)
        tc.launch(None, (m,), layer_norm_fwd, (x, w, b, y, mean, rstd, 1e-5, 32), gpu_name=sm)
        xf = x.astype(np.float64)
        mu, var = xf.mean(1), xf.var(1)
        np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(rstd, 1 / np.sqrt(var + 1e-5), rtol=1e-4)
        want = (xf - mu[:, None]) / np.sqrt(var[:, None] + 1e-5) * w + b
        np.testing.assert_allclose(y.astype(np.float64), want, rtol=1e-2, atol=1e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ layer norm backward (lock + partial dW)
@ct.kernel
def layer_norm_bwd(DX, DY, DW, DB, X, W, Mean, Rstd, Locks, TILE_N: ConstInt):
    row = ct.bid(0)
    nt = ct.num_tiles(X, axis=1, shape=(1, TILE_N))
    n = X.shape[1]
    g = row % DW.shape[0]
    mean = ct.load(Mean, index=(row,), shape=(1,))
    rstd = ct.load(Rstd, index=(row,), shape=(1,))
    c1 = ct.full((1, TILE_N), 0, dtype=ct.float32)
    c2 = ct.full((1, TILE_N), 0, dtype=ct.float32)
    for j in range(nt):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=Z)
        w = ct.load(W, index=(j,), shape=(TILE_N,), padding_mode=Z)
        dy = ct.load(DY, index=(row, j), shape=(1, TILE_N), padding_mode=Z)
        inside = j * TILE_N + ct.arange(TILE_N, dtype=ct.int32) < n
        xhat = ct.where(inside, (x - mean) * rstd, 0)
        c1 += xhat * (w * dy)
        c2 += w * dy
    c1 = ct.sum(c1, axis=1) / n
    c2 = ct.sum(c2, axis=1) / n
    for j in range(nt):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=Z)
        w = ct.load(W, index=(j,), shape=(TILE_N,), padding_mode=Z)
        dy = ct.load(DY, index=(row, j), shape=(1, TILE_N), padding_mode=Z)
        inside = j * TILE_N + ct.arange(TILE_N, dtype=ct.int32) < n
        xhat = ct.where(inside, (x - mean) * rstd, 0)
        ct.store(DX, index=(row, j), tile=(w * dy - (xhat * c1 + c2)) * rstd)
        while ct.atomic_cas(Locks, g, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
            pass
        pdw = dy * xhat + ct.load(DW, index=(g, j), shape=(1, TILE_N), padding_mode=Z)
        pdb = dy + ct.load(DB, index=(g, j), shape=(1, TILE_N), padding_mode=Z)
        ct.store(DW, index=(g, j), tile=pdw)
        ct.store(DB, index=(g, j), tile=pdb)
        ct.atomic_xchg(Locks, g, 0, memory_order=ct.MemoryOrder.RELEASE)


def test_layer_norm_backward_with_a_spin_lock():
    def run(sm):
        rng = _rng(2)
        m, n, groups = 13, 45, 3
        x, dy = rng.standard_normal((m, n)).astype(np.float32), rng.standard_normal((m, n)).astype(np.float32)
        w = rng.standard_normal(n).astype(np.float32)
        mu = x.mean(1).astype(np.float32)
        rs = (1 / np.sqrt(x.var(1) + 1e-5)).astype(np.float32)
        dx, dw, db = np.zeros_like(x), np.zeros((groups, n), np.float32), np.zeros((groups, n), np.float32)
        locks = np.zeros(groups, np.int32)
        tc.launch(None, (m,), layer_norm_bwd, (dx, dy, dw, db, x, w, mu, rs, locks, 16), gpu_name=sm)
        xhat = (x - mu[:, None]) * rs[:, None]
        wdy = w * dy
        c1, c2 = (xhat * wdy).mean(1, keepdims=True), wdy.mean(1, keepdims=True)
        np.testing.assert_allclose(dx, (wdy - (xhat * c1 + c2)) * rs[:, None], rtol=1e-4, atol=1e-4)
        want_dw = np.stack([(dy * xhat)[g::groups].sum(0) for g in range(groups)])
        want_db = np.stack([dy[g::groups].sum(0) for g in range(groups)])
        np.testing.assert_allclose(dw, want_dw, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(db, want_db, rtol=1e-4, atol=1e-4)
        assert not locks.any()
    _each_sm(run)


# ------------------------------------------------------------------------------ RMS norm, gather / scatter form
@ct.kernel
def rms_norm_gather(x, w, out, Rstd, N: ConstInt, eps: ct.Constant[float], TILE: ConstInt):
    row = ct.bid(0)
    acc = ct.full((TILE,), 0.0, dtype=ct.float32)
    offsets = ct.arange(TILE, dtype=ct.int32)
    for j in range(ct.cdiv(N, TILE)):
        xj = ct.gather(x, (row, j * TILE + offsets)).astype(ct.float32)
        acc += xj * xj
    r = ct.rsqrt(ct.sum(acc, axis=0) / N + eps)
    ct.scatter(Rstd, row, r)
    for j in range(ct.cdiv(N, TILE)):
        offs = j * TILE + offsets
        y = ct.gather(x, (row, offs)).astype(ct.float32) * r * ct.gather(w, offs).astype(ct.float32)
        ct.scatter(out, (row, offs), y.astype(x.dtype))


def test_rms_norm_gather_scatter():
    def run(sm):
        rng = _rng(3)
        m, n = 11, 70
        x = rng.standard_normal((m, n)).astype(np.float16)
        w = rng.standard_normal(n).astype(np.float16)
        out, r = np.zeros_like(x), np.zeros(m, np.float32)
        tc.launch(None, (m,), rms_norm_gather, (x, w, out, r, n, 1e-6, 32), gpu_name=sm)
        xf = x.astype(np.float64)
        want_r = 1 / np.sqrt((xf * xf).mean(1) + 1e-6)
        np.testing.assert_allclose(r, want_r, rtol=1e-4)
        np.testing.assert_allclose(out.astype(np.float64), xf * want_r[:, None] * w, rtol=1e-2, atol=1e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ RMS norm, static persistent
@ct.kernel
def rms_norm_persistent(X, Y, W, TM: ConstInt, TN: ConstInt, N: ConstInt, eps: ct.Constant[float]):
    bid = ct.bid(0)
    upper = (X.shape[0] + TM - 1) // TM
    ntn = ct.cdiv(N, TN)
    w = ct.load(W, index=(0,), shape=(N,), padding_mode=Z)
    for cur in range(bid, upper, ct.num_blocks(0)):
        ss = ct.full((TM, 1), 0.0, dtype=ct.float32)
        for j in range(ntn):
            x = ct.load(X, index=(cur, j), shape=(TM, TN), padding_mode=Z).astype(ct.float32)
            ss += ct.sum(ct.mul(x, x), axis=1, keepdims=True)
        r = ct.rsqrt(ct.add(ct.truediv(ss, ct.full((TM, 1), N * 1.0, dtype=ct.float32)),
                            ct.full((TM, 1), eps, dtype=ct.float32)))
        for j in range(ntn):
            x = ct.load(X, index=(cur, j), shape=(TM, TN), padding_mode=Z).astype(ct.float32)
            ct.store(Y, index=(cur, j), tile=ct.astype(x * r * w.extract((j,), (TN,)), X.dtype))


def test_rms_norm_static_persistent():
    def run(sm):
        rng = _rng(4)
        m, n = 37, 64
        x = rng.standard_normal((m, n)).astype(np.float32)
        w = rng.standard_normal(n).astype(np.float32)
        y = np.zeros_like(x)
        tc.launch(None, (2,), rms_norm_persistent, (x, y, w, 8, 16, n, 1e-5), gpu_name=sm)
        want = x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-5) * w
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    _each_sm(run)


# ------------------------------------------------------------------------------ rotary embedding
@ct.kernel
def rotary(X, Cos, Sin, Y, TM: ConstInt, D: ConstInt):
    i = ct.bid(0)
    h = ct.bid(1)
    x = ct.load(X, index=(h, i, 0), shape=(1, TM, D), padding_mode=Z).reshape((TM, D)).astype(ct.float32)
    c = ct.load(Cos, index=(i, 0), shape=(TM, D // 2), padding_mode=Z)
    s = ct.load(Sin, index=(i, 0), shape=(TM, D // 2), padding_mode=Z)
    x1 = ct.extract(x, (0, 0), (TM, D // 2))
    x2 = ct.extract(x, (0, 1), (TM, D // 2))
    y = ct.cat((x1 * c - x2 * s, x2 * c + x1 * s), axis=1)
    ct.store(Y, index=(h, i, 0), tile=ct.reshape(y.astype(Y.dtype), (1, TM, D)))


def test_rotary_embedding():
    def run(sm):
        rng = _rng(5)
        heads, seq, d = 3, 21, 32
        x = rng.standard_normal((heads, seq, d)).astype(np.float16)
        ang = np.arange(seq)[:, None] * (10000.0 ** (-np.arange(d // 2) / (d // 2)))[None, :]
        cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
        y = np.zeros_like(x)
        tc.launch(None, (3, heads), rotary, (x, cos, sin, y, 8, d), gpu_name=sm)
        x1, x2 = x[..., :d // 2].astype(np.float32), x[..., d // 2:].astype(np.float32)
        want = np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
        np.testing.assert_allclose(y.astype(np.float32), want, rtol=2e-3, atol=2e-3)
    _each_sm(run)


# ------------------------------------------------------------------------------ SwiGLU on an array's two slices
@ct.kernel
def swiglu_slices(X, Out, N: ConstInt, TN: ConstInt):
    row = ct.bid(0)
    j = ct.bid(1)
    gate = X.slice(1, 0, N)
    up = X.slice(1, N, 2 * N)
    a = ct.load(gate, (row, j), (1, TN), padding_mode=Z).astype(ct.float32)
    b = ct.load(up, (row, j), (1, TN), padding_mode=Z).astype(ct.float32)
    den = ct.add(1, ct.exp(-a), flush_to_zero=True)
    sig = ct.truediv(1.0, den, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(Out, (row, j), ct.mul(ct.mul(a, sig, flush_to_zero=True), b, flush_to_zero=True).astype(Out.dtype))


def test_swiglu_on_array_slices():
    def run(sm):
        rng = _rng(6)
        m, n = 9, 40
        x = rng.standard_normal((m, 2 * n)).astype(np.float16)
        out = np.zeros((m, n), np.float16)
        tc.launch(None, (m, 3), swiglu_slices, (x, out, n, 16), gpu_name=sm)
        a, b = x[:, :n].astype(np.float64), x[:, n:].astype(np.float64)
        np.testing.assert_allclose(out.astype(np.float64), a / (1 + np.exp(-a)) * b, rtol=5e-3, atol=5e-3)
    _each_sm(run)


# ------------------------------------------------------------------------------ GeGLU (tanh form) on bf16
@ct.kernel
def geglu_bf16(A, B, C, TILE: ConstInt):
    i = ct.bid(0)
    a = ct.bitcast(ct.load(A, (i,), (TILE,), padding_mode=Z), ct.bfloat16).astype(ct.float32)
    b = ct.bitcast(ct.load(B, (i,), (TILE,), padding_mode=Z), ct.bfloat16).astype(ct.float32)
    g = 0.5 * a * (1.0 + ct.tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)))
    ct.store(C, (i,), ct.bitcast((g * b).astype(ct.bfloat16), ct.uint16))


def test_geglu_bf16_through_bitcast():
    def run(sm):
        rng = _rng(7)
        n = 100
        a, b = _bf16_bits(rng.standard_normal(n)), _bf16_bits(rng.standard_normal(n))
        c = np.zeros(n, np.uint16)
        tc.launch(None, (4,), geglu_bf16, (a, b, c, 32), gpu_name=sm)
        av, bv = _bf16_value(a).astype(np.float64), _bf16_value(b).astype(np.float64)
        want = 0.5 * av * (1 + np.tanh(0.7978845608028654 * (av + 0.044715 * av ** 3))) * bv
        np.testing.assert_allclose(_bf16_value(c), want, rtol=1e-2, atol=1e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ cross entropy (NEG_INF padding)
@ct.kernel
def cross_entropy(Logits, Target, Loss, TV: ConstInt):
    row = ct.bid(0)
    m = ct.full((1,), -float("inf"), dtype=ct.float32)
    s = ct.full((1,), 0.0, dtype=ct.float32)
    for j in range(ct.num_tiles(Logits, axis=1, shape=(1, TV))):
        t = ct.load(Logits, (row, j), (1, TV), padding_mode=ct.PaddingMode.NEG_INF).reshape((TV,))
        m2 = ct.maximum(m, ct.max(t, axis=0, keepdims=True))
        s = s * ct.exp(m - m2) + ct.sum(ct.exp(t - m2), axis=0, keepdims=True)
        m = m2
    tgt = ct.gather(Target, row)
    picked = ct.gather(Logits, (row, tgt))
    ct.store(Loss, (row,), m + ct.log(s) - picked)


def test_cross_entropy_with_neg_inf_padding():
    def run(sm):
        rng = _rng(8)
        m, v = 7, 150
        logits = (rng.standard_normal((m, v)) * 3).astype(np.float32)
        tgt = rng.integers(0, v, m).astype(np.int32)
        loss = np.zeros(m, np.float32)
        tc.launch(None, (m,), cross_entropy, (logits, tgt, loss, 64), gpu_name=sm)
        l64 = logits.astype(np.float64)
        mx = l64.max(1)
        want = mx + np.log(np.exp(l64 - mx[:, None]).sum(1)) - l64[np.arange(m), tgt]
        np.testing.assert_allclose(loss, want, rtol=1e-5, atol=1e-5)
    _each_sm(run)


# ------------------------------------------------------------------------------ matmul: split-K with locks and counts
def _swizzle(M, N, tm, tn, G, bid):
    nm = ct.cdiv(M, tm)
    nn = ct.cdiv(N, tn)
    per_group = G * nn
    first = (bid // per_group) * G
    gsz = min(nm - first, G)
    return first + (bid % gsz), (bid % per_group) // gsz


@ct.kernel
def matmul_split_k(A, B, C, Locks, Counts, tm: ConstInt, tn: ConstInt, tk: ConstInt, SPLIT: ConstInt):
    bx, by = _swizzle(A.shape[0], B.shape[1], tm, tn, 2, ct.bid(0))
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.bid(1), ct.num_tiles(A, axis=1, shape=(tm, tk)), SPLIT):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=Z), ct.load(B, (k, by), (tk, tn), padding_mode=Z),
                     acc)
    lock = ct.bid(0)
    while ct.atomic_cas(Locks, lock, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
        pass
    count = ct.gather(Counts, lock)
    if count == 0:
        ct.store(C, (bx, by), tile=acc)
    else:
        ct.store(C, (bx, by), tile=ct.load(C, (bx, by), (tm, tn)) + acc)
    ct.scatter(Counts, lock, (count + 1) % SPLIT)
    ct.atomic_xchg(Locks, lock, 0, memory_order=ct.MemoryOrder.RELEASE)


def test_split_k_matmul():
    def run(sm):
        rng = _rng(9)
        m, n, k = 70, 45, 100
        a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
        c = np.full((m, n), 99.0, np.float32)
        tiles = 3 * 2
        locks, counts = np.zeros(tiles, np.int32), np.zeros(tiles, np.int32)
        tc.launch(None, (tiles, 3), matmul_split_k, (a, b, c, locks, counts, 32, 32, 32, 3), gpu_name=sm)
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-3, atol=2e-3)
        assert not counts.any() and not locks.any()
    _each_sm(run)


# ------------------------------------------------------------------------------ matmul: persistent, grouped order, tf32
@ct.kernel
def persistent_matmul(A, B, C, tm: ConstInt, tn: ConstInt, tk: ConstInt):
    M, N = A.shape[0], B.shape[1]
    dt = ct.tfloat32 if A.dtype == ct.float32 else A.dtype
    for cur in range(ct.bid(0), ct.cdiv(M, tm) * ct.cdiv(N, tn), ct.num_blocks(0)):
        bx, by = _swizzle(M, N, tm, tn, 2, cur)
        acc = ct.full((tm, tn), 0, dtype=ct.float32)
        for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
            a = ct.load(A, (bx, k), (tm, tk), padding_mode=Z).astype(dt)
            b = ct.load(B, (k, by), (tk, tn), padding_mode=Z).astype(dt)
            acc = ct.mma(a, b, acc)
        ct.store(C, (bx, by), tile=ct.astype(acc, C.dtype))


def test_persistent_matmul_tf32():
    def run(sm):
        rng = _rng(10)
        m, n, k = 100, 70, 40
        a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        c = np.zeros((m, n), np.float32)
        tc.launch(None, (4,), persistent_matmul, (a, b, c, 32, 32, 16), gpu_name=sm)
        np.testing.assert_allclose(c, a @ b, rtol=2e-2, atol=5e-2)  # tf32 operands
    _each_sm(run)


# ------------------------------------------------------------------------------ FP8 GEMM with per-row / per-column scales
@ct.kernel
def fp8_gemm(A, B, SA, SB, C, tm: ConstInt, tn: ConstInt, tk: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.bitcast(ct.load(A, (i, k), (tm, tk), padding_mode=Z), ct.float8_e4m3fn)
        b = ct.bitcast(ct.load(B, (k, j), (tk, tn), padding_mode=Z), ct.float8_e4m3fn)
        acc = ct.mma(a, b, acc)
    sa = ct.load(SA, (i,), (tm,), padding_mode=Z)
    sb = ct.load(SB, (j,), (tn,), padding_mode=Z)
    out = acc * sa[:, None] * sb[None, :]
    ct.store(C, (i, j), ct.bitcast(out.astype(ct.bfloat16), ct.uint16))


def _e4m3(rng, shape):
    codes = rng.integers(0, 256, shape).astype(np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x38  # no NaN: 1.0 instead
    vals = np.vectorize(lambda c: decode(int(c), "f8E4M3FN"))(codes)
    keep = np.abs(vals) <= 8
    codes[~keep] = 0x30
    return codes, np.vectorize(lambda c: decode(int(c), "f8E4M3FN"))(codes)


def test_fp8_gemm_with_scales():
    def run(sm):
        rng = _rng(11)
        m, n, k = 40, 48, 80
        a, av = _e4m3(rng, (m, k))
        b, bv = _e4m3(rng, (k, n))
        sa, sb = rng.uniform(0.5, 2, m).astype(np.float32), rng.uniform(0.5, 2, n).astype(np.float32)
        c = np.zeros((m, n), np.uint16)
        tc.launch(None, (2, 2), fp8_gemm, (a, b, sa, sb, c, 32, 32, 32), gpu_name=sm)
        want = (av @ bv) * sa[:, None] * sb[None, :]
        np.testing.assert_allclose(_bf16_value(c), want, rtol=1e-2, atol=1e-1)
    _each_sm(run, ["sm_90a", "sm_100a"])


# ------------------------------------------------------------------------------ attention: grouped-query heads, causal
@ct.kernel
def gqa_attention(Q, K, V, Out, scale: float, TM: ConstInt, TN: ConstInt, D: ConstInt, QPK: ConstInt):
    i, h = ct.bid(0), ct.bid(1)
    kvh = h // QPK
    q = ct.load(Q, (h, i, 0), (1, TM, D), padding_mode=Z).reshape((TM, D))
    m = ct.full((TM, 1), -1e30, dtype=ct.float32)
    den = ct.full((TM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((TM, D), 0.0, dtype=ct.float32)
    rows = ct.arange(TM, dtype=ct.int32)[:, None] + i * TM
    n_keys = K.shape[1]
    for j in range(ct.cdiv(min((i + 1) * TM, n_keys), TN)):
        kt = ct.load(K, (kvh, 0, j), (1, D, TN), order=(0, 2, 1), padding_mode=Z).reshape((D, TN))
        v = ct.load(V, (kvh, j, 0), (1, TN, D), padding_mode=Z).reshape((TN, D))
        s = ct.mma(q, kt, ct.zeros((TM, TN), dtype=ct.float32)) * scale
        cols = ct.arange(TN, dtype=ct.int32)[None, :] + j * TN
        s = ct.where((cols <= rows) & (cols < n_keys), s, -1e30)
        m2 = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m2)
        alpha = ct.exp(m - m2)
        den = den * alpha + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m = m2
    ct.store(Out, (h, i, 0), (acc / den).reshape((1, TM, D)).astype(Out.dtype))


def _attention_ref(q, k, v, scale, causal=True):
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)


def test_gqa_causal_attention():
    def run(sm):
        rng = _rng(12)
        h, hkv, s, d = 4, 2, 45, 32
        q = rng.standard_normal((h, s, d)).astype(np.float16)
        k = rng.standard_normal((hkv, s, d)).astype(np.float16)
        v = rng.standard_normal((hkv, s, d)).astype(np.float16)
        out = np.zeros((h, s, d), np.float32)
        tc.launch(None, (2, h), gqa_attention, (q, k, v, out, float(1 / np.sqrt(d)), 32, 32, d, h // hkv), gpu_name=sm)
        want = _attention_ref(q, np.repeat(k, h // hkv, 0), np.repeat(v, h // hkv, 0), 1 / np.sqrt(d))
        np.testing.assert_allclose(out, want, rtol=1e-2, atol=1e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ attention: variable lengths (slices)
@ct.kernel
def varlen_attention(Q, K, V, Out, CuSeq, TM: ConstInt, TN: ConstInt, D: ConstInt):
    i, b = ct.bid(0), ct.bid(1)
    start = ct.gather(CuSeq, b)
    end = ct.gather(CuSeq, b + 1)
    if i * TM >= end - start:
        return
    q_b, k_b, v_b, o_b = Q.slice(0, start, end), K.slice(0, start, end), V.slice(0, start, end), \
        Out.slice(0, start, end)
    q = ct.load(q_b, (i, 0), (TM, D), padding_mode=Z)
    m = ct.full((TM, 1), -1e30, dtype=ct.float32)
    den = ct.full((TM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((TM, D), 0.0, dtype=ct.float32)
    for j in range(ct.num_tiles(k_b, axis=0, shape=(TN, D))):
        kt = ct.load(k_b, (0, j), (D, TN), order=(1, 0), padding_mode=Z)
        v = ct.load(v_b, (j, 0), (TN, D), padding_mode=Z)
        s = ct.mma(q, kt, ct.zeros((TM, TN), dtype=ct.float32))
        s = ct.where(ct.arange(TN, dtype=ct.int32)[None, :] + j * TN < end - start, s, -1e30)
        m2 = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m2)
        alpha = ct.exp(m - m2)
        den = den * alpha + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m = m2
    ct.store(o_b, (i, 0), acc / den)


def test_varlen_attention_on_slices():
    def run(sm):
        rng = _rng(13)
        lens = [20, 45, 7]
        cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        t, d = int(cu[-1]), 16
        q, k, v = (rng.standard_normal((t, d)).astype(np.float16) for _ in range(3))
        out = np.full((t, d), 5.0, np.float32)
        tc.launch(None, (3, len(lens)), varlen_attention, (q, k, v, out, cu, 16, 16, d), gpu_name=sm)
        for b in range(len(lens)):
            sl = slice(cu[b], cu[b + 1])
            np.testing.assert_allclose(out[sl], _attention_ref(q[sl], k[sl], v[sl], 1.0, causal=False), rtol=1e-2,
                                       atol=1e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ top-k per row (argmax and masking)
@ct.kernel
def topk_rows(X, Vals, Idx, TM: ConstInt, TN: ConstInt, K: ConstInt):
    i = ct.bid(0)
    t = ct.load(X, (i, 0), (TM, TN), padding_mode=ct.PaddingMode.NEG_INF)
    cols = ct.arange(TN, dtype=ct.int32)[None, :]
    kk = ct.arange(K, dtype=ct.int32)[None, :]
    vals = ct.zeros((TM, K), dtype=ct.float32)
    idx = ct.zeros((TM, K), dtype=ct.int32)
    for r in range(K):
        a = ct.argmax(t, axis=1, keepdims=True)
        v = ct.max(t, axis=1, keepdims=True)
        vals = ct.where(kk == r, v, vals)
        idx = ct.where(kk == r, a, idx)
        t = ct.where(cols == a, -float("inf"), t)
    ct.store(Vals, (i, 0), vals)
    ct.store(Idx, (i, 0), idx)


def test_topk_by_repeated_argmax():
    def run(sm):
        rng = _rng(14)
        m, n, k = 21, 50, 4
        x = rng.permutation(m * n).reshape(m, n).astype(np.float32)
        vals, idx = np.zeros((m, k), np.float32), np.zeros((m, k), np.int32)
        tc.launch(None, (3,), topk_rows, (x, vals, idx, 8, 64, k), gpu_name=sm)
        want_idx = np.argsort(-x, axis=1)[:, :k]
        np.testing.assert_array_equal(idx, want_idx)
        np.testing.assert_array_equal(vals, np.take_along_axis(x, want_idx, 1))
    _each_sm(run)


# ------------------------------------------------------------------------------ histogram: atomics skip out-of-bounds bins
@ct.kernel
def histogram(X, Counts, lo: float, width: float, TILE: ConstInt):
    b = ct.bid(0)
    offs = b * TILE + ct.arange(TILE, dtype=ct.int32)
    x = ct.gather(X, offs, padding_value=-1e9)
    bins = ct.floor((x - lo) / width).astype(ct.int32)
    ct.atomic_add(Counts, bins, ct.full((TILE,), 1, dtype=ct.int32))


def test_histogram_drops_out_of_range_bins():
    def run(sm):
        rng = _rng(15)
        n, nb = 300, 10
        x = rng.uniform(-1, 11, n).astype(np.float32)
        counts = np.zeros(nb, np.int32)
        tc.launch(None, (3,), histogram, (x, counts, 0.0, 1.0, 128), gpu_name=sm)
        b = np.floor(x).astype(np.int64)
        np.testing.assert_array_equal(counts, np.bincount(b[(b >= 0) & (b < nb)], minlength=nb))
    _each_sm(run)


# ------------------------------------------------------------------------------ prefix sums across blocks, reverse and product
@ct.kernel
def global_scan(X, Incl, RevI, Prod, TILE: ConstInt):
    b = ct.bid(0)
    carry = ct.full((1,), 0, dtype=ct.int32)
    for j in range(b):
        carry += ct.sum(ct.load(X, (j,), (TILE,), padding_mode=Z), axis=0, keepdims=True)
    t = ct.load(X, (b,), (TILE,), padding_mode=Z)
    ct.store(Incl, (b,), ct.cumsum(t, axis=0) + carry)
    ct.store(RevI, (b,), ct.cumsum(t, axis=0, reverse=True))
    ct.store(Prod, (b,), ct.cumprod(t.astype(ct.float64) * 0.5, axis=0))


def test_prefix_sums_across_blocks():
    def run(sm):
        rng = _rng(16)
        n, tile = 150, 64
        x = rng.integers(-3, 8, n).astype(np.int32)
        incl, rev, prod = np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n)
        tc.launch(None, (3,), global_scan, (x, incl, rev, prod, tile), gpu_name=sm)
        np.testing.assert_array_equal(incl, np.cumsum(x))
        for s in range(0, n, tile):
            seg = x[s:s + tile]
            np.testing.assert_array_equal(rev[s:s + tile], np.cumsum(seg[::-1])[::-1])
            np.testing.assert_allclose(prod[s:s + tile], np.cumprod(seg * 0.5), rtol=1e-12)
    _each_sm(run)


# ------------------------------------------------------------------------------ 3-D permute on a 3-D grid
@ct.kernel
def permute3(X, Y, TA: ConstInt, TB: ConstInt, TC: ConstInt):
    a, b, c = ct.bid(0), ct.bid(1), ct.bid(2)
    t = ct.load(X, (a, b, c), (TA, TB, TC), padding_mode=Z)
    ct.store(Y, (c, a, b), ct.permute(t, (2, 0, 1)))


def test_permute_3d_grid():
    def run(sm):
        rng = _rng(17)
        x = rng.standard_normal((10, 13, 20)).astype(np.float32)
        y = np.zeros((20, 10, 13), np.float32)
        tc.launch(None, (2, 2, 3), permute3, (x, y, 8, 8, 8), gpu_name=sm)
        np.testing.assert_array_equal(y, np.transpose(x, (2, 0, 1)))
    _each_sm(run)


# ------------------------------------------------------------------------------ convolution as im2col gather + mma
@ct.kernel
def conv2d_im2col(X, Wm, Y, C: ConstInt, KH: ConstInt, KW: ConstInt, TP: ConstInt, TK: ConstInt, CO: ConstInt):
    p = ct.bid(0)
    OH, OW = Y.shape[1], Y.shape[2]
    pix = p * TP + ct.arange(TP, dtype=ct.int32)
    oh, ow = pix // OW, pix % OW
    acc = ct.zeros((TP, CO), dtype=ct.float32)
    for k in range(ct.cdiv(C * KH * KW, TK)):
        kk = k * TK + ct.arange(TK, dtype=ct.int32)
        c, r = kk // (KH * KW), kk % (KH * KW)
        ih = oh[:, None] + (r // KW)[None, :]
        iw = ow[:, None] + (r % KW)[None, :]
        ok = (pix[:, None] < OH * OW) & (kk[None, :] < C * KH * KW)
        a = ct.gather(X, (ct.broadcast_to(c[None, :], (TP, TK)), ih, iw), mask=ok)
        w = ct.load(Wm, (k, 0), (TK, CO), padding_mode=Z)
        acc = ct.mma(a, w, acc)
    out = ct.transpose(acc)
    ct.scatter(Y, (ct.arange(CO, dtype=ct.int32)[:, None], (oh[None, :] + ct.zeros((CO, 1), dtype=ct.int32)),
                   ow[None, :] + ct.zeros((CO, 1), dtype=ct.int32)), out)


def test_conv2d_im2col():
    def run(sm):
        rng = _rng(18)
        c, h, w, co, kh, kw = 3, 9, 11, 16, 3, 3
        x = rng.standard_normal((c, h, w)).astype(np.float16)
        wt = rng.standard_normal((co, c, kh, kw)).astype(np.float16)
        wm = np.ascontiguousarray(wt.reshape(co, -1).T)
        oh, ow = h - kh + 1, w - kw + 1
        y = np.zeros((co, oh, ow), np.float32)
        tc.launch(None, (-(-oh * ow // 32),), conv2d_im2col, (x, wm, y, c, kh, kw, 32, 16, co), gpu_name=sm)
        want = np.zeros_like(y, np.float64)
        for i in range(kh):
            for j in range(kw):
                want += np.einsum("oc,chw->ohw", wt[:, :, i, j].astype(np.float64),
                                  x[:, i:i + oh, j:j + ow].astype(np.float64))
        np.testing.assert_allclose(y, want, rtol=1e-2, atol=1e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ gemv on bf16 weights (tile @ operator)
@ct.kernel
def gemv_bf16(A, x, y, TM: ConstInt, TN: ConstInt):
    i = ct.bid(0)
    acc = ct.zeros((TM, 1), dtype=ct.float32)
    for j in range(ct.num_tiles(A, axis=1, shape=(TM, TN))):
        a = ct.bitcast(ct.load(A, (i, j), (TM, TN), padding_mode=Z), ct.bfloat16).astype(ct.float32)
        v = ct.load(x, (j,), (TN,), padding_mode=Z)
        acc += ct.sum(a * v[None, :], axis=1, keepdims=True)
    ct.store(y, (i,), acc.reshape((TM,)))


def test_gemv_bf16():
    def run(sm):
        rng = _rng(19)
        m, n = 45, 99
        a = _bf16_bits(rng.standard_normal((m, n)))
        x = rng.standard_normal(n).astype(np.float32)
        y = np.zeros(m, np.float32)
        tc.launch(None, (3,), gemv_bf16, (a, x, y, 16, 32), gpu_name=sm)
        np.testing.assert_allclose(y, _bf16_value(a).astype(np.float64) @ x, rtol=1e-4, atol=1e-4)
    _each_sm(run)


# ------------------------------------------------------------------------------ mixed dtypes with broadcasting
@ct.kernel
def dequant_bias(Q, Scale, Bias, Zp, Out, TM: ConstInt, TN: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    q = ct.load(Q, (i, j), (TM, TN), padding_mode=Z)  # int8
    s = ct.load(Scale, (j,), (TN,), padding_mode=Z)  # f16
    zp = ct.load(Zp, (j,), (TN,), padding_mode=Z)  # uint8
    b = ct.load(Bias, (i, 0), (TM, 1), padding_mode=Z)  # f32 column
    deq = (q.astype(ct.int32) - zp.astype(ct.int32)[None, :]).astype(ct.float32) * s.astype(ct.float32)[None, :]
    ct.store(Out, (i, j), (deq + b).astype(ct.float16))


def test_dequantize_mixed_dtypes_broadcast():
    def run(sm):
        rng = _rng(20)
        m, n = 30, 50
        q = rng.integers(-128, 128, (m, n)).astype(np.int8)
        s = rng.uniform(0.01, 0.1, n).astype(np.float16)
        zp = rng.integers(0, 256, n).astype(np.uint8)
        bias = rng.standard_normal((m, 1)).astype(np.float32)
        out = np.zeros((m, n), np.float16)
        tc.launch(None, (2, 4), dequant_bias, (q, s, bias, zp, out, 16, 16), gpu_name=sm)
        want = (q.astype(np.int32) - zp.astype(np.int32)) * s.astype(np.float32) + bias
        np.testing.assert_allclose(out.astype(np.float32), want, rtol=2e-3, atol=2e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ int64 index arrays and int64 offsets
@ct.kernel
def strided_gather_i64(X, Y, stride: ct.int64, TILE: ConstInt):
    b = ct.bid(0)
    offs = (ct.arange(TILE, dtype=ct.int64) + b * TILE) * stride
    ct.store(Y, (b,), ct.gather(X, offs, padding_value=-1.0))


def test_int64_indices():
    def run(sm):
        x = np.arange(300, dtype=np.float32)
        y = np.zeros(70, np.float32)
        k = tc.compile(strided_gather_i64, ("f32[1]i64", "f32[1]i64", "i64", 32), gpu_name=sm)
        k.launch(None, (3,), (x, y, 4, 32))
        want = np.where(np.arange(70) * 4 < 300, np.arange(70) * 4.0, -1.0)
        np.testing.assert_array_equal(y, want)
    _each_sm(run)


# ------------------------------------------------------------------------------ padding modes
@ct.kernel
def padding_modes(X, Mx, Mn, Nan, Nz, TILE: ConstInt):
    b = ct.bid(0)
    mx = ct.max(ct.load(X, (b, 0), (1, TILE), padding_mode=ct.PaddingMode.NEG_INF), axis=1)
    mn = ct.min(ct.load(X, (b, 0), (1, TILE), padding_mode=ct.PaddingMode.POS_INF), axis=1)
    nan = ct.sum(ct.where(ct.isnan(ct.load(X, (b, 0), (1, TILE), padding_mode=ct.PaddingMode.NAN)), 1, 0), axis=1)
    nz = ct.load(X, (b, 0), (1, TILE), padding_mode=ct.PaddingMode.NEG_ZERO)
    ct.store(Mx, (b,), mx)
    ct.store(Mn, (b,), mn)
    ct.store(Nan, (b,), nan)
    ct.store(Nz, (b, 0), ct.bitcast(nz, ct.int32).reshape((TILE,))[None, :])


def test_padding_modes():
    def run(sm):
        rng = _rng(21)
        x = (rng.standard_normal((5, 45)) + 10).astype(np.float32)
        mx, mn, nan = np.zeros(5, np.float32), np.zeros(5, np.float32), np.zeros(5, np.int32)
        nz = np.zeros((5, 64), np.int32)
        tc.launch(None, (5,), padding_modes, (x, mx, mn, nan, nz, 64), gpu_name=sm)
        np.testing.assert_array_equal(mx, x.max(1))
        np.testing.assert_array_equal(mn, x.min(1))
        np.testing.assert_array_equal(nan, np.full(5, 64 - 45))
        np.testing.assert_array_equal(nz[:, :45], x.view(np.int32))
        assert (nz[:, 45:] == np.int32(-2**31)).all()
    _each_sm(run)


# ------------------------------------------------------------------------------ fused MoE: gathered rows, expert weights, scatter
@ct.kernel
def fused_moe(A, B, C, TopW, TokIds, ExpIds, replicas: int, routed: ConstBool, TM: ConstInt, TN: ConstInt,
              TK: ConstInt):
    bm, bn = ct.bid(0), ct.bid(1)
    tok = ct.gather(TokIds, bm * TM + ct.arange(TM, dtype=ct.int32))
    rows = tok // replicas
    e = ct.load(ExpIds, index=bm, shape=())
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(B.shape[2], TK)):
        a = ct.gather(A, (rows[:, None], k * TK + ct.arange(TK, dtype=ct.int32)[None, :]))
        b = ct.load(B, (e, k, bn), shape=(1, TK, TN), order=(0, 2, 1), padding_mode=Z).reshape((TK, TN))
        acc = ct.mma(a, b, acc)
    if routed:
        acc = acc * ct.gather(TopW, tok)[:, None]
    cols = bn * TN + ct.arange(TN, dtype=ct.int32)
    ct.scatter(C, (tok[:, None], cols[None, :]), acc.astype(C.dtype))


def test_fused_moe():
    def run(sm):
        rng = _rng(22)
        tokens, topk, experts, n, k, tm = 13, 2, 3, 40, 48, 16
        a = rng.standard_normal((tokens, k)).astype(np.float16)
        b = (rng.standard_normal((experts, n, k)) * 0.2).astype(np.float16)
        ids = rng.integers(0, experts, (tokens, topk))
        topw = rng.uniform(0, 1, tokens * topk).astype(np.float32)
        flat = ids.reshape(-1)
        order = np.argsort(flat, kind="stable")
        tok_ids, exp_ids = [], []
        for e in range(experts):
            mine = order[flat[order] == e]
            nb = -(-len(mine) // tm)
            pad = np.full(nb * tm, tokens * topk)
            pad[:len(mine)] = mine
            tok_ids += list(pad)
            exp_ids += [e] * nb
        tok_ids, exp_ids = np.array(tok_ids, np.int32), np.array(exp_ids, np.int32)
        c = np.zeros((tokens * topk, n), np.float32)
        tc.launch(None, (len(exp_ids), 3), fused_moe, (a, b, c, topw, tok_ids, exp_ids, topk, True, tm, 16, 16),
                  gpu_name=sm)
        want = np.stack([(a[t // topk].astype(np.float32) @ b[flat[t]].astype(np.float32).T) * topw[t]
                         for t in range(tokens * topk)])
        np.testing.assert_allclose(c, want, rtol=1e-2, atol=1e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ tiled views: overlapping windows, atomic max
@ct.kernel
def sliding_window_max(X, Out, Peak, W: ConstInt, STEP: ConstInt):
    b = ct.bid(0)
    win = X.tiled_view((W,), padding_mode=ct.PaddingMode.NEG_INF, traversal_steps=(STEP,))
    t = win.load((b,))
    out = Out.tiled_view((1,))
    out.store((b,), ct.max(t, axis=0, keepdims=True))
    Peak.tiled_view((1,)).atomic_store_max((0,), ct.max(t, axis=0, keepdims=True).astype(ct.int32))
    if b == 0:
        Peak.tiled_view((1,)).store((1,), ct.full((1,), win.num_tiles(0), dtype=ct.int32))


def test_tiled_view_sliding_window():
    """``x.tiled_view(W, traversal_steps=STEP).num_tiles(0)`` (``get_index_space_shape`` of a strided view) was
    cdiv(n, W): the traversal step was ignored (7 windows instead of 17 here); it is cdiv(n, STEP), the count
    cuTile's own test asserts (a window starts every STEP elements). Loads of overlapping windows, NEG_INF
    padding of the last ones and ``atomic_store_max`` through a tiled view are checked too."""
    def run(sm):
        rng = _rng(23)
        n, w, step = 50, 8, 3
        x = rng.standard_normal(n).astype(np.float32)
        nwin = -(-n // step)
        out = np.zeros(nwin, np.float32)
        x = np.round(x * 100)
        peak = np.array([-1000, 0], np.int32)
        tc.launch(None, (nwin,), sliding_window_max, (x, out, peak, w, step), gpu_name=sm)
        np.testing.assert_array_equal(out, [x[i * step:i * step + w].max() for i in range(nwin)])
        np.testing.assert_array_equal(peak, [int(x.max()), nwin])
    _each_sm(run)


# ------------------------------------------------------------------------------ custom reductions and scans (tuples)
def _argmax_combine(v1, i1, v2, i2):
    take2 = (v2 > v1) | ((v2 == v1) & (i2 < i1))
    return ct.where(take2, v2, v1), ct.where(take2, i2, i1)


@ct.kernel
def custom_reduce_scan(X, Amax, Run, TM: ConstInt, TN: ConstInt):
    i = ct.bid(0)
    t = ct.load(X, (i, 0), (TM, TN), padding_mode=ct.PaddingMode.NEG_INF)
    cols = ct.broadcast_to(ct.arange(TN, dtype=ct.int32)[None, :], (TM, TN))
    v, a = ct.reduce((t, cols), axis=1, func=_argmax_combine, identity=(-float("inf"), 2**30))
    ct.store(Amax, (i,), a)
    ct.store(Run, (i, 0), ct.scan(t, axis=1, func=lambda p, q: ct.maximum(p, q), identity=-float("inf")))


def test_custom_reduce_and_scan():
    def run(sm):
        rng = _rng(24)
        m, n = 19, 30
        x = rng.integers(0, 6, (m, n)).astype(np.float32)  # ties: the first index wins
        am, run_ = np.zeros(m, np.int32), np.zeros((m, n), np.float32)
        tc.launch(None, (3,), custom_reduce_scan, (x, am, run_, 8, 32), gpu_name=sm)
        np.testing.assert_array_equal(am, x.argmax(1))
        np.testing.assert_array_equal(run_, np.maximum.accumulate(x, axis=1))
    _each_sm(run)


# ------------------------------------------------------------------------------ integer floor division and modulo
@ct.kernel
def int_divmod(X, Y, Q, R, FQ, TILE: ConstInt):
    b = ct.bid(0)
    x = ct.load(X, (b,), (TILE,), padding_mode=Z)
    y = ct.load(Y, (b,), (TILE,), padding_mode=ct.PaddingMode.ZERO) + (ct.arange(TILE, dtype=ct.int64) * 0 + 0)
    y = ct.where(y == 0, 1, y)
    q, r = divmod(x, y)
    ct.store(Q, (b,), q)
    ct.store(R, (b,), r)
    xf = x.astype(ct.float32) + 0.5
    ct.store(FQ, (b,), xf // y.astype(ct.float32))


def test_integer_divmod_floors():
    def run(sm):
        rng = _rng(25)
        n = 90
        x = rng.integers(-50, 50, n).astype(np.int64)
        y = rng.choice([-7, -3, -1, 2, 5], n).astype(np.int64)
        q, r, fq = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.float32)
        tc.launch(None, (3,), int_divmod, (x, y, q, r, fq, 32), gpu_name=sm)
        np.testing.assert_array_equal(q, x // y)
        np.testing.assert_array_equal(r, x % y)
        np.testing.assert_array_equal(fq, np.floor((x + 0.5).astype(np.float32) / y.astype(np.float32)))
    _each_sm(run)


# ------------------------------------------------------------------------------ counter-based random numbers (uint32 hashing)
@ct.kernel
def dropout_hash(X, Out, seed: ct.uint32, p_keep: float, TILE: ConstInt):
    b = ct.bid(0)
    i = ct.arange(TILE, dtype=ct.uint32) + ct.astype(b * TILE, ct.uint32)
    h = i * ct.uint32(0x9E3779B1) + seed
    h = h ^ (h >> 16)
    h = h * ct.uint32(0x85EBCA6B)
    h = h ^ (h >> 13)
    u = (h >> 8).astype(ct.float32) * (1.0 / 16777216.0)
    x = ct.load(X, (b,), (TILE,), padding_mode=Z)
    ct.store(Out, (b,), ct.where(u < p_keep, x / p_keep, 0.0))


def test_dropout_with_uint32_hash():
    def run(sm):
        rng = _rng(26)
        n, seed = 100, 0xDEADBEEF
        x = rng.standard_normal(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        tc.launch(None, (4,), dropout_hash, (x, out, np.uint32(seed), 0.7, 32), gpu_name=sm)
        i = np.arange(n, dtype=np.uint64)
        m = np.uint64(0xFFFFFFFF)
        h = (i * 0x9E3779B1 + seed) & m
        h ^= h >> 16
        h = (h * 0x85EBCA6B) & m
        h ^= h >> 13
        u = (h >> 8).astype(np.float32) * np.float32(1 / 16777216)
        np.testing.assert_array_equal(out, np.where(u < np.float32(0.7), x / np.float32(0.7), 0).astype(np.float32))
    _each_sm(run)


# ------------------------------------------------------------------------------ float atomics with negative values
@ct.kernel
def float_atomics(X, Mx, Mn, Sum, Old, TILE: ConstInt):
    b = ct.bid(0)
    i = b * TILE + ct.arange(TILE, dtype=ct.int32)
    x = ct.gather(X, i)
    slot = i % 4
    ct.atomic_max(Mx, slot, x.astype(ct.int32))
    ct.atomic_min(Mn, slot, x.astype(ct.int32))
    ct.scatter(Old, i, ct.atomic_add(Sum, slot, x))


def test_atomic_max_min_of_negative_ints_and_float_add():
    def run(sm):
        rng = _rng(27)
        n = 96
        x = (rng.standard_normal(n) * 10 - 20).astype(np.float32)
        x[5] = -0.0
        mx = np.full(4, -2**31, np.int32)
        mn = np.full(4, 2**31 - 1, np.int32)
        s = np.zeros(4, np.float32)
        old = np.zeros(n, np.float32)
        tc.launch(None, (3,), float_atomics, (x, mx, mn, s, old, 32), gpu_name=sm)
        np.testing.assert_array_equal(mx, x.astype(np.int32).reshape(-1, 4).max(0))
        np.testing.assert_array_equal(mn, x.astype(np.int32).reshape(-1, 4).min(0))
        np.testing.assert_allclose(s, x.reshape(-1, 4).sum(0), rtol=1e-5)
        assert (old != 0).any()
    _each_sm(run)


@ct.kernel
def bit_atomics(Flags, Bits, And, Xor, Cnt, TILE: ConstInt):
    b = ct.bid(0)
    i = b * TILE + ct.arange(TILE, dtype=ct.int32)
    bits = ct.gather(Bits, i)
    ct.atomic_or(Flags, i % 2, bits)
    ct.atomic_and(And, i % 2, bits | 0x80000000)
    ct.atomic_xor(Xor, i % 3, bits)
    ct.atomic_add(Cnt, i % 2, bits.astype(ct.int64))


def test_bitwise_and_int64_atomics():
    def run(sm):
        rng = _rng(28)
        n = 64
        bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        flags, and_ = np.zeros(2, np.uint32), np.full(2, 0xFFFFFFFF, np.uint32)
        xor, cnt = np.zeros(3, np.uint32), np.zeros(2, np.int64)
        tc.launch(None, (2,), bit_atomics, (flags, bits, and_, xor, cnt, 32), gpu_name=sm)
        idx = np.arange(n)
        np.testing.assert_array_equal(flags, [np.bitwise_or.reduce(bits[idx % 2 == k]) for k in range(2)])
        np.testing.assert_array_equal(and_, [np.bitwise_and.reduce(bits[idx % 2 == k] | np.uint32(0x80000000))
                                             for k in range(2)])
        np.testing.assert_array_equal(xor, [np.bitwise_xor.reduce(bits[idx % 3 == k]) for k in range(3)])
        np.testing.assert_array_equal(cnt, [bits[idx % 2 == k].astype(np.int64).sum() for k in range(2)])
    _each_sm(run)


# ------------------------------------------------------------------------------ batched tile matmul with the @ operator
@ct.kernel
def batched_at(A, B, C, TB: ConstInt, TM: ConstInt, TK: ConstInt, TN: ConstInt):
    b, i = ct.bid(0), ct.bid(1)
    a = ct.load(A, (b, i, 0), (TB, TM, TK), padding_mode=Z).astype(ct.float32)
    w = ct.load(B, (0, 0), (TK, TN), padding_mode=Z).astype(ct.float32)
    ct.store(C, (b, i, 0), a @ w + ct.matmul(a, ct.full((TK, TN), 1.0, dtype=ct.float32)))


def test_batched_matmul_operator_broadcasts_b():
    def run(sm):
        rng = _rng(29)
        a = rng.standard_normal((5, 20, 16)).astype(np.float16)
        w = rng.standard_normal((16, 8)).astype(np.float16)
        c = np.zeros((5, 20, 8), np.float32)
        tc.launch(None, (3, 2), batched_at, (a, w, c, 2, 16, 16, 8), gpu_name=sm)
        af = a.astype(np.float32)
        want = af @ w.astype(np.float32) + af.sum(-1, keepdims=True)
        np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3)
    _each_sm(run)


# ------------------------------------------------------------------------------ constant tables (astile), item(), helpers
@ct.function
def _poly(x, coeffs):
    acc = ct.zeros(x.shape, dtype=ct.float32)
    for c in ct.static_iter(coeffs):
        acc = acc * x + c
    return acc


@ct.kernel
def table_lookup(X, Idx, Y, P, TILE: ConstInt):
    b = ct.bid(0)
    lut = ct.astile((1.5, -2.0, 0.25, 8.0, 3.0, -1.0, 0.5, 4.0), dtype=ct.float32)
    i = ct.load(Idx, (b,), (TILE,), padding_mode=Z)
    ct.store(Y, (b,), ct.gather(X, i) * ct.full((1,), 2, dtype=ct.int32).item() + ct.extract(lut, (1,), (4,))
             .item() if False else ct.gather(X, i) * 2.0 + ct.sum(lut))
    x = ct.load(X, (b,), (TILE,), padding_mode=Z)
    ct.store(P, (b,), _poly(x, (0.5, -1.0, 2.0, 3.0)))


def test_constant_tables_and_helper_functions():
    def run(sm):
        rng = _rng(30)
        n = 70
        x = rng.standard_normal(n).astype(np.float32)
        idx = rng.integers(0, n, n).astype(np.int32)
        y, p = np.zeros(n, np.float32), np.zeros(n, np.float32)
        tc.launch(None, (3,), table_lookup, (x, idx, y, p, 32), gpu_name=sm)
        np.testing.assert_allclose(y, x[idx] * 2 + 14.25, rtol=1e-6)
        np.testing.assert_allclose(p, ((0.5 * x - 1) * x + 2) * x + 3, rtol=1e-5, atol=1e-6)
    _each_sm(run)


# ------------------------------------------------------------------------------ Newton iterations until convergence
@ct.kernel
def newton_cbrt(X, Y, Iters, TILE: ConstInt):
    b = ct.bid(0)
    x = ct.load(X, (b,), (TILE,), padding_mode=ct.PaddingMode.ZERO) + 1.0
    y = x
    it = 0
    while True:
        y2 = y - (y * y * y - x) / (3.0 * y * y)
        err = ct.max(ct.abs(y2 - y))
        y = y2
        it += 1
        if err < 1e-6:
            break
        if it >= 100:
            break
    ct.store(Y, (b,), y)
    ct.scatter(Iters, b, it)


def test_while_true_with_breaks():
    def run(sm):
        rng = _rng(31)
        n = 70
        x = rng.uniform(0, 30, n).astype(np.float32)
        y, iters = np.zeros(n, np.float32), np.zeros(3, np.int32)
        tc.launch(None, (3,), newton_cbrt, (x, y, iters, 32), gpu_name=sm)
        np.testing.assert_allclose(y, np.cbrt(x + 1), rtol=1e-5)
        assert ((iters > 2) & (iters < 100)).all()
    _each_sm(run)


# ------------------------------------------------------------------------------ NaN handling in arg-reductions
@ct.kernel
def nan_argreduce(X, Amin, AminNan, Mx, TM: ConstInt, TN: ConstInt):
    i = ct.bid(0)
    t = ct.load(X, (i, 0), (TM, TN), padding_mode=ct.PaddingMode.POS_INF)
    ct.store(Amin, (i,), ct.argmin(t, axis=1))
    ct.store(AminNan, (i,), ct.argmin(t, axis=1, propagate_nan=True))
    ct.store(Mx, (i,), ct.min(ct.where(ct.isnan(t), 100.0, t), axis=1))


def test_argmin_with_nans():
    def run(sm):
        rng = _rng(32)
        m, n = 12, 20
        x = rng.standard_normal((m, n)).astype(np.float32)
        x[::3, 5] = np.nan
        am, amn, mx = np.zeros(m, np.int32), np.zeros(m, np.int32), np.zeros(m, np.float32)
        tc.launch(None, (2,), nan_argreduce, (x, am, amn, mx, 8, 32), gpu_name=sm)
        np.testing.assert_array_equal(am, np.nanargmin(x, axis=1))
        np.testing.assert_array_equal(amn, np.argmin(x, axis=1))  # numpy: the first NaN
        np.testing.assert_array_equal(mx, np.where(np.isnan(x), 100, x).min(1))
    _each_sm(run)


# ------------------------------------------------------------------------------ bytes: pack / unpack, serialisation
@ct.kernel
def pack_bytes(X, Bytes, Back, TILE: ConstInt):
    b = ct.bid(0)
    t = ct.load(X, (b,), (TILE,), padding_mode=Z)
    by = ct.pack_to_bytes(t)
    ct.store(Bytes, (b,), by)
    ct.store(Back, (b,), ct.unpack_from_bytes(by, ct.int16))


def test_pack_and_unpack_bytes():
    def run(sm):
        rng = _rng(33)
        n = 40
        x = rng.standard_normal(n).astype(np.float32)
        by = np.zeros(4 * 48, np.uint8)
        back = np.zeros(2 * 48, np.int16)
        tc.launch(None, (3,), pack_bytes, (x, by, back, 16), gpu_name=sm)
        np.testing.assert_array_equal(by[:4 * n], x.view(np.uint8))
        np.testing.assert_array_equal(back[:2 * n], x.view(np.int16))
    _each_sm(run)


# ------------------------------------------------------------------------------ advanced indexing: rows by index, columns by slice
@ct.kernel
def embedding_bag(Table, Ids, Out, col0: int, TR: ConstInt, TD: ConstInt):
    b = ct.bid(0)
    ids = ct.gather(Ids, (b, ct.arange(TR, dtype=ct.int32)), padding_value=1 << 20)  # padded lanes: no row
    rows = ct.load_advanced_indexing(Table, (ids, ct.Slice(col0, TD)), padding_mode=ct.PaddingMode.ZERO)
    ct.store_advanced_indexing(Out, (ct.full((1,), b, dtype=ct.int32), ct.Slice(col0, TD)),
                               ct.sum(rows, axis=0, keepdims=True))


def test_embedding_bag_advanced_indexing():
    def run(sm):
        rng = _rng(34)
        v, d, bags, per = 30, 40, 5, 6
        table = rng.standard_normal((v, d)).astype(np.float32)
        ids = rng.integers(0, v, (bags, per)).astype(np.int32)
        ids[1, 2] = 500  # out of bounds: zeros
        out = np.full((bags, d), 9.0, np.float32)
        tc.launch(None, (bags,), embedding_bag, (table, ids, out, 8, 8, 32), gpu_name=sm)
        tpad = np.concatenate([table, np.zeros((600, d), np.float32)])
        want = out.copy()
        want[:, 8:40] = tpad[ids][:, :, 8:40].sum(1)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    _each_sm(run)


# ------------------------------------------------------------------------------ a reverse loop (negative range step)
@ct.kernel
def suffix_max(X, Y, TILE: ConstInt):
    row = ct.bid(0)
    run_ = ct.full((1,), -float("inf"), dtype=ct.float32)
    nt = ct.num_tiles(X, axis=1, shape=(1, TILE))
    for jj in range(nt):
        j = nt - 1 - jj
        t = ct.load(X, (row, j), (1, TILE), padding_mode=ct.PaddingMode.NEG_INF).reshape((TILE,))
        s = ct.scan(t, axis=0, func=ct.maximum, identity=-float("inf"), reverse=True)
        s = ct.maximum(s, run_)
        ct.store(Y, (row, j), s.reshape((1, TILE)))
        run_ = ct.maximum(run_, ct.max(t, axis=0, keepdims=True))


def test_reverse_loop_and_reverse_scan():
    def run(sm):
        rng = _rng(35)
        x = rng.standard_normal((4, 70)).astype(np.float32)
        y = np.zeros_like(x)
        tc.launch(None, (4,), suffix_max, (x, y, 32), gpu_name=sm)
        np.testing.assert_array_equal(y, np.maximum.accumulate(x[:, ::-1], axis=1)[:, ::-1])
    _each_sm(run)


# ------------------------------------------------------------------------------ an array chosen at run time
@ct.kernel
def pick_source(A, B, Y, TILE: ConstInt):
    b = ct.bid(0)
    if b % 2 == 0:
        src = A
    else:
        src = B
    ct.store(Y, (b,), ct.load(src, (b,), (TILE,), padding_mode=Z) * 2)


def test_array_chosen_by_a_runtime_branch():
    def run(sm):
        rng = _rng(36)
        a, b = rng.standard_normal(100).astype(np.float32), rng.standard_normal(100).astype(np.float32)
        y = np.zeros(100, np.float32)
        tc.launch(None, (4,), pick_source, (a, b, y, 32), gpu_name=sm)
        want = np.where((np.arange(100) // 32) % 2 == 0, a, b) * 2
        np.testing.assert_array_equal(y, want)
    _each_sm(run)


# ------------------------------------------------------------------------------ wrap-around of narrow integers
@ct.kernel
def narrow_int_wrap(A, B, S, P, U, TILE: ConstInt):
    b = ct.bid(0)
    a = ct.load(A, (b,), (TILE,), padding_mode=Z)  # int8
    c = ct.load(B, (b,), (TILE,), padding_mode=Z)  # int8
    ct.store(S, (b,), a + c)
    ct.store(P, (b,), a * c)
    u = ct.load(U, (b,), (TILE,), padding_mode=Z)  # uint8
    ct.store(U, (b,), (u.astype(ct.float32) * 0.5).astype(ct.uint8) + ct.uint8(200))


def test_narrow_integers_wrap():
    def run(sm):
        rng = _rng(37)
        n = 100
        a, c = rng.integers(-128, 128, n).astype(np.int8), rng.integers(-128, 128, n).astype(np.int8)
        s, p = np.zeros(n, np.int8), np.zeros(n, np.int8)
        u = rng.integers(0, 256, n).astype(np.uint8)
        u0 = u.copy()
        tc.launch(None, (4,), narrow_int_wrap, (a, c, s, p, u, 32), gpu_name=sm)
        np.testing.assert_array_equal(s, (a.astype(np.int32) + c).astype(np.int8))
        np.testing.assert_array_equal(p, (a.astype(np.int32) * c).astype(np.int8))
        np.testing.assert_array_equal(u, ((u0 * 0.5).astype(np.uint8).astype(np.int32) + 200).astype(np.uint8))
    _each_sm(run)


# ------------------------------------------------------------------------------ f64 matmul and an f16 accumulator
@ct.kernel
def mma_f64_f16acc(A, B, C, A16, B16, C16, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float64)
    acc16 = ct.zeros((TM, TN), dtype=ct.float16)
    for k in range(ct.cdiv(A.shape[1], TK)):
        acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=Z), ct.load(B, (k, j), (TK, TN), padding_mode=Z), acc)
        acc16 = ct.mma(ct.load(A16, (i, k), (TM, TK), padding_mode=Z),
                       ct.load(B16, (k, j), (TK, TN), padding_mode=Z), acc16)
    ct.store(C, (i, j), acc)
    ct.store(C16, (i, j), acc16)


def test_f64_matmul_and_f16_accumulator():
    def run(sm):
        rng = _rng(38)
        m, n, k = 40, 24, 36
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        a16, b16 = (rng.integers(-3, 4, (m, k)) * 0.5).astype(np.float16), \
            (rng.integers(-3, 4, (k, n)) * 0.5).astype(np.float16)
        c, c16 = np.zeros((m, n)), np.zeros((m, n), np.float16)
        tc.launch(None, (2, 2), mma_f64_f16acc, (a, b, c, a16, b16, c16, 32, 16, 16), gpu_name=sm)
        np.testing.assert_allclose(c, a @ b, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(c16, (a16.astype(np.float64) @ b16).astype(np.float16))  # exact small sums
    _each_sm(run)


# ------------------------------------------------------------------------------ the sample matmul: 2 CTAs on sm_100, f16 out
@ct.kernel(num_ctas=ct.ByTarget(sm_100=2))
def sample_matmul(A, B, C, tm: ConstInt, tn: ConstInt, tk: ConstInt):
    bx, by = _swizzle(A.shape[0], B.shape[1], tm, tn, 8, ct.bid(0))
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    dt = ct.tfloat32 if A.dtype == ct.float32 else A.dtype
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=Z, latency=4).astype(dt)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=Z, allow_tma=True).astype(dt)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=ct.astype(acc, C.dtype))


def test_sample_matmul_two_ctas_on_sm100():
    def run(sm):
        rng = _rng(39)
        m, n, k = 100, 70, 40
        a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
        c = np.zeros((m, n), np.float16)
        tc.launch(None, (2 * 2,), sample_matmul, (a, b, c, 64, 64, 32), gpu_name=sm)
        np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2,
                                   atol=2e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ A^T B^T: both operands loaded transposed
@ct.kernel
def matmul_tn(AT, BT, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(AT, axis=0, shape=(TK, TM))):
        a = ct.load(AT, (i, k), (TM, TK), order=(1, 0), padding_mode=Z)
        b = ct.load(BT, (k, j), (TK, TN), order=(1, 0), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (j, i), ct.transpose(acc))


def test_matmul_transposed_operands_and_output():
    def run(sm):
        rng = _rng(40)
        m, n, k = 70, 45, 50
        at, bt = rng.standard_normal((k, m)).astype(np.float16), rng.standard_normal((n, k)).astype(np.float16)
        c = np.zeros((n, m), np.float32)
        tc.launch(None, (2, 2), matmul_tn, (at, bt, c, 64, 32, 16), gpu_name=sm)
        np.testing.assert_allclose(c, (at.T.astype(np.float32) @ bt.T.astype(np.float32)).T, rtol=2e-3, atol=2e-3)
    _each_sm(run)


# ------------------------------------------------------------------------------ bf16 GEMM with a bias + GELU epilogue
@ct.kernel
def bf16_gemm_gelu(A, B, Bias, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        a = ct.bitcast(ct.load(A, (i, k), (TM, TK), padding_mode=Z), ct.bfloat16)
        b = ct.bitcast(ct.load(B, (k, j), (TK, TN), padding_mode=Z), ct.bfloat16)
        acc = ct.mma(a, b, acc)
    acc = acc + ct.load(Bias, (j,), (TN,), padding_mode=Z)[None, :]
    g = 0.5 * acc * (1.0 + ct.tanh(0.7978845608 * (acc + 0.044715 * acc * acc * acc)))
    ct.store(C, (i, j), ct.bitcast(g.astype(ct.bfloat16), ct.uint16))


def test_bf16_gemm_with_epilogue():
    def run(sm):
        rng = _rng(41)
        m, n, k = 40, 72, 56
        a, b = _bf16_bits(rng.standard_normal((m, k)) * 0.3), _bf16_bits(rng.standard_normal((k, n)) * 0.3)
        bias = rng.standard_normal(n).astype(np.float32)
        c = np.zeros((m, n), np.uint16)
        tc.launch(None, (2, 3), bf16_gemm_gelu, (a, b, bias, c, 32, 32, 32), gpu_name=sm)
        x = _bf16_value(a).astype(np.float64) @ _bf16_value(b) + bias
        want = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
        np.testing.assert_allclose(_bf16_value(c), want, rtol=1e-2, atol=1e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ small MMA tiles (16 x 8 x 8)
@ct.kernel
def small_tiles_mma(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=Z), ct.load(B, (k, j), (TK, TN), padding_mode=Z), acc)
    ct.store(C, (i, j), acc)


def test_small_mma_tiles():
    def run(sm):
        rng = _rng(42)
        m, n, k = 20, 13, 21
        a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
        for tm, tn, tk in ((16, 8, 8), (16, 16, 16), (32, 8, 16)):
            c = np.zeros((m, n), np.float32)
            tc.launch(None, (-(-m // tm), -(-n // tn)), small_tiles_mma, (a, b, c, tm, tn, tk), gpu_name=sm)
            np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-3, atol=2e-3,
                                       err_msg=f"{tm}x{tn}x{tk}")
    _each_sm(run)


# ------------------------------------------------------------------------------ fp8 x fp8 into an f16 accumulator, fast acc
@ct.kernel
def fp8_f16acc(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float16)
    for k in range(ct.cdiv(A.shape[1], TK)):
        a = ct.bitcast(ct.load(A, (i, k), (TM, TK), padding_mode=Z), ct.float8_e5m2)
        b = ct.bitcast(ct.load(B, (k, j), (TK, TN), padding_mode=Z), ct.float8_e5m2)
        acc = ct.mma(a, b, acc, use_fast_acc=True)
    ct.store(C, (i, j), acc)


def test_fp8_e5m2_with_f16_accumulator():
    def run(sm):
        rng = _rng(43)
        m, n, k = 40, 24, 72
        codes = np.array([encode(v, "f8E5M2") for v in (0.0, 0.25, 0.5, 1.0, -0.5, -1.0, 0.75, -0.25)], np.uint8)
        a, b = rng.choice(codes, (m, k)), rng.choice(codes, (k, n))
        dec = np.vectorize(lambda c: decode(int(c), "f8E5M2"))
        c = np.zeros((m, n), np.float16)
        tc.launch(None, (2, 2), fp8_f16acc, (a, b, c, 32, 16, 32), gpu_name=sm)
        np.testing.assert_array_equal(c, (dec(a) @ dec(b)).astype(np.float16))  # small exact sums
    _each_sm(run, ["sm_90a", "sm_100a"])


# ------------------------------------------------------------------------------ u8 x i8 integer GEMM
@ct.kernel
def u8_i8_gemm(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.int32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=Z), ct.load(B, (k, j), (TK, TN), padding_mode=Z), acc)
    ct.store(C, (i, j), acc)


def test_unsigned_by_signed_int8_gemm():
    def run(sm):
        rng = _rng(44)
        m, n, k = 40, 20, 70
        a = rng.integers(0, 256, (m, k)).astype(np.uint8)
        b = rng.integers(-128, 128, (k, n)).astype(np.int8)
        c = np.zeros((m, n), np.int32)
        tc.launch(None, (2, 1), u8_i8_gemm, (a, b, c, 32, 32, 32), gpu_name=sm)
        np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
    _each_sm(run)


# ------------------------------------------------------------------------------ printing tiles the way tileiras does
@ct.kernel
def debug_tiles(x, TILE: ConstInt):
    bid = ct.bid(0)
    tx = ct.load(x, index=(bid,), shape=(TILE,))
    ct.printf("tile[%d]:%.5f\n", bid, tx)
    ct.print(f"tile[{bid}]: a={tx:.2f} b={tx + tx:.1f}")
    t2 = ct.reshape(ct.astype(tx, ct.int32), (2, TILE // 2))
    ct.print("original:", t2)
    ct.print(f"keep: {ct.sum(t2, 1, keepdims=True)} all: {ct.sum(t2)}")
    ct.printf("%d%%|%d\n", ct.sum(t2, 1), bid)
    ct.printf("done\n")


def test_printf_of_tiles_prints_each_tile_whole(capfd):
    """A tile argument of ``ct.printf`` / ``ct.print`` printed one line per element (the whole format repeated);
    tileiras prints the line once with the tile as a nested list, each element with the conversion (cuTile's
    test_print.py: ``tile[0]:[0.00000, 1.00000, ...]``, ``original: [[0, 1, 2, 3], [4, 5, 6, 7]]``,
    ``reduce over axis 0 and keep dims: [[6], [22]]``). And ``ct.printf("done\\n")`` (no argument) failed in
    the emulator ('printf's argument buffer ... points into no buffer')."""
    def block(b):
        v = np.arange(8 * b, 8 * b + 8)
        s = [v[:4].sum(), v[4:].sum()]
        return [f"tile[{b}]:[{', '.join(f'{e:.5f}' for e in v)}]",
                f"tile[{b}]: a=[{', '.join(f'{e:.2f}' for e in v)}] b=[{', '.join(f'{2 * e:.1f}' for e in v)}]",
                f"original: [[{', '.join(map(str, v[:4]))}], [{', '.join(map(str, v[4:]))}]]",
                f"keep: [[{s[0]}], [{s[1]}]] all: {v.sum()}", f"[{s[0]}, {s[1]}]%|{b}", "done"]
    for sm in SMS:
        tc.launch(None, (2,), debug_tiles, (np.arange(16, dtype=np.float32), 8), gpu_name=sm)
        assert capfd.readouterr().out.splitlines() == block(0) + block(1), sm


# ------------------------------------------------------------------------------ a whole row per tile: wide softmax
@ct.kernel
def wide_softmax(X, Y, TN: ConstInt):
    row = ct.bid(0)
    t = ct.load(X, (row, 0), (1, TN), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    e = ct.exp2((t - ct.max(t, axis=1, keepdims=True)) * 1.4426950408889634, flush_to_zero=True)
    ct.store(Y, (row, 0), (e / ct.sum(e, axis=1, keepdims=True)).astype(Y.dtype))


def test_wide_row_softmax():
    def run(sm):
        rng = _rng(45)
        x = (rng.standard_normal((3, 1000)) * 4).astype(np.float16)
        y = np.zeros_like(x)
        tc.launch(None, (3,), wide_softmax, (x, y, 1024), gpu_name=sm)
        e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
        np.testing.assert_allclose(y.astype(np.float64), e / e.sum(1, keepdims=True), rtol=1e-2, atol=1e-4)
    _each_sm(run)


# ------------------------------------------------------------------------------ ordered loads, unchecked loads, divisibility hints
@ct.kernel
def flag_then_data(Data, Flag, Out, TILE: ConstInt):
    b = ct.bid(0)
    f = ct.load(Flag, (0,), (1,), memory_order=ct.MemoryOrder.ACQUIRE, memory_scope=ct.MemoryScope.DEVICE)
    n = ct.assume_divisible_by(Data.shape[0], 16)
    full = (b + 1) * TILE <= n
    if full:
        d = ct.load(Data, (b,), (TILE,), check_bounds=False)
    else:
        d = ct.load(Data, (b,), (TILE,), padding_mode=Z)
    ct.store(Out, (b,), d * f.astype(ct.float32))


def test_acquire_load_and_unchecked_loads():
    def run(sm):
        rng = _rng(46)
        data = rng.standard_normal(80).astype(np.float32)
        out = np.zeros(80, np.float32)
        tc.launch(None, (3,), flag_then_data, (data, np.array([3], np.int32), out, 32), gpu_name=sm)
        np.testing.assert_array_equal(out, data * 3)
    _each_sm(run)


# ------------------------------------------------------------------------------ 0-d tiles of a strided 2-D view (subsampling)
@ct.kernel
def subsample(X, Y, SH: ConstInt, SW: ConstInt, NW: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    v = X.tiled_view((), traversal_steps=(SH, SW)).load((i, j))
    Y.tiled_view(()).store(i * NW + j, v)


def test_zero_d_tiles_of_a_strided_view():
    def run(sm):
        x = np.arange(7 * 10, dtype=np.float32).reshape(7, 10)
        nh, nw = -(-7 // 2), -(-10 // 3)
        y = np.zeros(nh * nw, np.float32)
        tc.launch(None, (nh, nw), subsample, (x, y, 2, 3, nw), gpu_name=sm)
        np.testing.assert_array_equal(y, x[::2, ::3].reshape(-1))
    _each_sm(run)


# ------------------------------------------------------------------------------ 3-D reductions over the middle axis
@ct.kernel
def mid_axis_stats(X, Mean, Amax, TB: ConstInt, TM: ConstInt, TN: ConstInt):
    b = ct.bid(0)
    t = ct.load(X, (b, 0, 0), (TB, TM, TN), padding_mode=ct.PaddingMode.NEG_INF)
    valid = ct.arange(TM, dtype=ct.int32)[None, :, None] < X.shape[1]
    s = ct.sum(ct.where(valid, t, 0.0), axis=1)
    ct.store(Mean, (b, 0), s / X.shape[1])
    ct.store(Amax, (b, 0), ct.argmax(t, axis=1))


def test_reductions_over_the_middle_axis_of_3d_tiles():
    def run(sm):
        rng = _rng(47)
        x = rng.standard_normal((5, 13, 6)).astype(np.float32)
        mean, am = np.zeros((5, 6), np.float32), np.zeros((5, 6), np.int32)
        tc.launch(None, (3,), mid_axis_stats, (x, mean, am, 2, 16, 8), gpu_name=sm)
        np.testing.assert_allclose(mean, x.mean(1), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(am, x.argmax(1))
    _each_sm(run)


# ------------------------------------------------------------------------------ fused gate / up GEMM (two accumulators)
@ct.kernel
def gate_up_gemm(X, W1, W3, H, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    g = ct.zeros((TM, TN), dtype=ct.float32)
    u = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(X, axis=1, shape=(TM, TK))):
        a = ct.load(X, (i, k), (TM, TK), padding_mode=Z)
        g = ct.mma(a, ct.load(W1, (k, j), (TK, TN), padding_mode=Z), g)
        u = ct.mma(a, ct.load(W3, (k, j), (TK, TN), padding_mode=Z), u)
    ct.store(H, (i, j), (g / (1.0 + ct.exp(-g)) * u).astype(H.dtype))


def test_fused_gate_up_gemm_with_two_accumulators():
    def run(sm):
        rng = _rng(48)
        m, n, k = 70, 40, 100
        x = (rng.standard_normal((m, k)) * 0.3).astype(np.float16)
        w1, w3 = ((rng.standard_normal((k, n)) * 0.3).astype(np.float16) for _ in range(2))
        h = np.zeros((m, n), np.float16)
        tc.launch(None, (2, 1), gate_up_gemm, (x, w1, w3, h, 64, 64, 32), gpu_name=sm)
        g, u = x.astype(np.float64) @ w1, x.astype(np.float64) @ w3
        np.testing.assert_allclose(h.astype(np.float64), g / (1 + np.exp(-g)) * u, rtol=1e-2, atol=1e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ K shorter than one tile, and K = 0
@ct.kernel
def short_k_matmul(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 1.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=Z), ct.load(B, (k, j), (TK, TN), padding_mode=Z), acc)
    ct.store(C, (i, j), acc)


def test_matmul_with_k_below_a_tile_and_k_zero():
    def run(sm):
        rng = _rng(49)
        for k in (5, 0):
            a, b = rng.standard_normal((70, k)).astype(np.float16), rng.standard_normal((k, 40)).astype(np.float16)
            c = np.zeros((70, 40), np.float32)
            tc.launch(None, (2, 1), short_k_matmul, (a, b, c, 64, 64, 32), gpu_name=sm)
            np.testing.assert_allclose(c, 1 + a.astype(np.float32) @ b.astype(np.float32), rtol=2e-3, atol=2e-3,
                                       err_msg=f"K={k}")
    _each_sm(run)


# ------------------------------------------------------------------------------ accumulator reset inside the K loop (row panel)
@ct.kernel
def row_panel_matmul(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    i = ct.bid(0)
    nk = ct.num_tiles(A, axis=1, shape=(TM, TK))
    for j in range(ct.num_tiles(B, axis=1, shape=(TK, TN))):
        acc = ct.zeros((TM, TN), dtype=ct.float32)
        for k in range(nk):
            acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=Z), ct.load(B, (k, j), (TK, TN), padding_mode=Z),
                         acc)
        ct.store(C, (i, j), acc.astype(C.dtype))


def test_row_panel_matmul_nested_loops():
    def run(sm):
        rng = _rng(50)
        a, b = rng.standard_normal((40, 70)).astype(np.float16), rng.standard_normal((70, 100)).astype(np.float16)
        c = np.zeros((40, 100), np.float16)
        tc.launch(None, (1,), row_panel_matmul, (a, b, c, 64, 32, 32), gpu_name=sm)
        np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2,
                                   atol=2e-2)
    _each_sm(run)


# ------------------------------------------------------------------------------ error text of a rejected specialisation
@ct.kernel
def double_into(x, y, TILE: ConstInt):
    b = ct.bid(0)
    ct.store(y, (b,), ct.load(x, (b,), (TILE,), padding_mode=Z) * 2)


def test_export_error_has_no_unknown_location_line(tmp_path):
    """An output array of the wrong dtype: cuTile's message for it ends with its inner error's location frame,
    'Unknown location', which tilecore printed as a second line of the error. Now one located line (CLI: exit
    1), and an FP8 kernel on sm_80 is a located error (tileiras rejects it too)."""
    from support import run_cli

    from tilecore.errors import TilecoreError
    with pytest.raises(TilecoreError) as e:
        tc.launch(None, (3,), double_into, (np.zeros(70, np.float32), np.zeros(70, np.int32), 32))
    line = double_into._annotated_function.pyfunc.__code__.co_firstlineno + 3  # the decorator's line + 3
    assert str(e.value) == (f"error: {__file__}:{line}:4: cuTile cannot export kernel 'double_into' (float32[1], "
                            "int32[1], 32): Stored tile is incompatible with array's dtype: cannot implicitly cast "
                            "float32 to int32")
    (tmp_path / "k.py").write_text(
        "import cuda.tile as ct\n\n\n@ct.kernel\ndef dbl(x, y, TILE: ct.Constant[int]):\n"
        "    ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (TILE,)) * 2)\n")
    np.save(tmp_path / "x.npy", np.zeros(64, np.float32))
    np.save(tmp_path / "y.npy", np.zeros(64, np.int32))
    r = run_cli("run", "k.py::dbl", "--grid", "2", "--arg", "x.npy", "--arg", "y.npy", "--const", "TILE=32",
                cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [f"error: {tmp_path}/k.py:6:4: cuTile cannot export kernel 'dbl' "
                                             "(float32[1], int32[1], 32): Stored tile is incompatible with array's "
                                             "dtype: cannot implicitly cast float32 to int32"]
    with pytest.raises(TilecoreError, match=r"test_thirdparty_kernels2.py:\d+:\d+: Incompatibility with architecture "
                                            r"'sm_80': unsupported type 'f8E4M3FN' \(it needs sm_89 or newer\)"):
        tc.launch(None, (2, 2), fp8_gemm, (np.zeros((40, 72), np.uint8), np.zeros((72, 48), np.uint8),
                                           np.ones(40, np.float32), np.ones(48, np.float32),
                                           np.zeros((40, 48), np.uint16), 32, 32, 32), gpu_name="sm_80")


# ------------------------------------------------------------------------------ f32 -> tf32 rounding modes
def _to_tf32(mode):
    @ct.kernel
    def to_tf32(x, y, TILE: ConstInt):
        b = ct.bid(0)
        t = ct.load(x, index=(b,), shape=(TILE,), padding_mode=Z)
        ct.store(y, index=(b,), tile=ct.astype(ct.astype(t, ct.tfloat32, rounding_mode=mode), ct.float32))
    return to_tf32


def test_tf32_conversion_rounding_modes():
    """``ct.astype(x, ct.tfloat32)`` rounded ties away from zero (``cvt.rna``); cuTile's test_cast.py wants nearest
    even for the default and RN (1 + 2^-11 -> 1), away for RA (-> 1 + 2^-10); RZ failed to compile ('arith.bitcast'
    op operand type 'f32' and result type 'i19' are cast incompatible: stage 1's directed narrowing took tf32 for a
    19-bit float). Bit for bit, NaN stays NaN."""
    special = np.array([0x3F801000, 0xBF801000, 0x3F803000, 0x3F800FFF, 0x7F7FFFFF, 0x7F800000, 0xFF800000,
                        0x00001000, 0x7FC00000, 0x7F800001], np.uint32).view(np.float32)
    x = np.concatenate([special, _rng(51).standard_normal(60).astype(np.float32)])
    bits = x.view(np.uint32).astype(np.uint64)
    keep = (bits & 0x7F800000) == 0x7F800000
    want = {None: bits + 0xFFF + ((bits >> 13) & 1), ct.RoundingMode.RN: bits + 0xFFF + ((bits >> 13) & 1),
            ct.RoundingMode.RA: bits + 0x1000, ct.RoundingMode.RZ: bits}
    for sm in ("sm_80", "sm_90a"):
        for mode, w in want.items():
            y = np.zeros_like(x)
            tc.launch(None, (3,), _to_tf32(mode), (x, y, 32), gpu_name=sm)
            w = np.where(keep, bits, w & 0xFFFFE000).astype(np.uint32).view(np.float32)
            nan = np.isnan(x)
            np.testing.assert_array_equal(y[~nan].view(np.uint32), w[~nan].view(np.uint32), err_msg=f"{sm} {mode}")
            assert np.isnan(y[nan]).all(), f"{sm} {mode}"


# ------------------------------------------------------------------------------ NaN in max / min / argmax / argmin reductions
def _nan_reduce(op, propagate):
    @ct.kernel
    def nan_reduce(inp, out, TM: ConstInt, N: ConstInt):
        t = ct.load(inp, index=(0, 0), shape=(TM, N), padding_mode=ct.PaddingMode.NAN)
        ct.store(out, index=(0,), tile=op(t, axis=1, propagate_nan=propagate))
    return nan_reduce


def test_nan_handling_of_reductions():
    """The semantics cuTile's test_reduction.py asserts: without propagate_nan NaN is ignored (all-NaN rows give
    NaN for max / min and index 0 for argmax / argmin), with it the first NaN wins."""
    inf, nan = np.inf, np.nan
    x = np.array([[3.0, 0.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0], [3.0, inf, nan, 1.5, 5.0, -2.0, 2.0, 6.0],
                  [nan, nan, 7.0, 1.0, nan, 8.0, nan, 0.5], [5.0, -3.0, 2.0, nan, 4.0, 0.0, -inf, 1.0],
                  [nan] * 8], np.float32)
    want = {(ct.min, False): [0.0, -2.0, 0.5, -inf, nan], (ct.min, True): [0.0, nan, nan, nan, nan],
            (ct.max, False): [9.0, inf, 8.0, 5.0, nan], (ct.max, True): [9.0, nan, nan, nan, nan],
            (ct.argmin, False): [1, 5, 7, 6, 0], (ct.argmin, True): [1, 2, 0, 3, 0],
            (ct.argmax, False): [5, 1, 5, 0, 0], (ct.argmax, True): [5, 2, 0, 3, 0]}
    for sm in ("sm_80", "sm_100a"):
        for (op, prop), w in want.items():
            out = np.zeros(5, np.int32 if op in (ct.argmin, ct.argmax) else np.float32)
            tc.launch(None, (1,), _nan_reduce(op, prop), (x, out, 8, 8), gpu_name=sm)
            np.testing.assert_array_equal(out, np.array(w, out.dtype), err_msg=f"{sm} {op.__name__} {prop}")


# ------------------------------------------------------------------------------ 16-bit float atomics, float exchange, scalar atomics
@ct.kernel
def half_atomics(H, X, Tgt, Old, S, TILE: ConstInt):
    b = ct.bid(0)
    i = b * TILE + ct.arange(TILE, dtype=ct.int64)
    v = ct.gather(X, i)
    ct.atomic_add(H, i % 3, v.astype(ct.float16))
    ct.scatter(Old, i, ct.atomic_xchg(Tgt, i, v.astype(ct.float64) * 2))
    ct.atomic_add(S, 0, ct.sum(v))


def test_f16_atomic_add_f64_exchange_and_scalar_atomics():
    def run(sm):
        x = (np.arange(64) % 7 * 0.25).astype(np.float32)  # exact in f16: sums exact
        h = np.zeros(3, np.float16)
        tgt, old = np.arange(64, dtype=np.float64), np.zeros(64)
        s = np.zeros(1, np.float32)
        tc.launch(None, (2,), half_atomics, (h, x, tgt, old, s, 32), gpu_name=sm)
        np.testing.assert_array_equal(h, [x[np.arange(64) % 3 == k].sum() for k in range(3)])
        np.testing.assert_array_equal(tgt, x.astype(np.float64) * 2)
        np.testing.assert_array_equal(old, np.arange(64.0))
        np.testing.assert_array_equal(s, [x.sum()])
    _each_sm(run)


@ct.kernel
def print_accumulator(A, B, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    acc = ct.mma(ct.load(A, (0, 0), (TM, TK)), ct.load(B, (0, 0), (TK, TN)), ct.zeros((TM, TN), dtype=ct.float32))
    ct.printf("acc=%.0f\n", acc)


def test_printf_of_an_mma_accumulator_and_of_a_large_tile(capfd):
    """An MMA fragment prints whole like any tile (every SM's fragment layout); a 64 x 64 tile prints as one line
    (4096 elements in 32 printf calls: a printf per element in a loop piled up its argument buffers, 'more than
    128 local buffers (alloca) live at once' in the emulator)."""
    a, b = np.ones((16, 16), np.float16), np.ones((16, 8), np.float16)
    for sm in SMS:
        tc.launch(None, (1,), print_accumulator, (a, b, 16, 8, 16), gpu_name=sm)
        assert capfd.readouterr().out.splitlines() == ["acc=[" + ", ".join(["[" + ", ".join(["16"] * 8) + "]"] * 16)
                                                       + "]"], sm
    a, b = np.ones((64, 16), np.float16), np.ones((16, 64), np.float16)
    tc.launch(None, (1,), print_accumulator, (a, b, 64, 64, 16))
    assert capfd.readouterr().out.splitlines() == ["acc=[" + ", ".join(["[" + ", ".join(["16"] * 64) + "]"] * 64)
                                                   + "]"]


# ------------------------------------------------------------------------------ a four-step FFT (batched 3-D matmuls, permutes)
def _cmm(ar, ai, br, bi):
    """(ar + i ai) @ (br + i bi) with ct.matmul (3-D operands broadcast over the batch)."""
    return ct.matmul(ar, br) - ct.matmul(ai, bi), ct.matmul(ar, bi) + ct.matmul(ai, br)


@ct.kernel
def fft_four_step(X, Y, W0, W1, T, BS: ConstInt, F0: ConstInt, F1: ConstInt):
    b = ct.bid(0)
    n = F0 * F1
    xri = ct.load(X, (b, 0, 0), (BS, n, 2), padding_mode=Z)
    xr = ct.reshape(ct.extract(xri, (0, 0, 0), (BS, n, 1)), (BS, F0, F1))
    xi = ct.reshape(ct.extract(xri, (0, 0, 1), (BS, n, 1)), (BS, F0, F1))
    w0 = ct.load(W0, (0, 0, 0), (F0, F0, 2))
    w1 = ct.load(W1, (0, 0, 0), (F1, F1, 2))
    t = ct.load(T, (0, 0, 0), (F0, F1, 2))
    w0r = ct.reshape(ct.extract(w0, (0, 0, 0), (F0, F0, 1)), (1, F0, F0))
    w0i = ct.reshape(ct.extract(w0, (0, 0, 1), (F0, F0, 1)), (1, F0, F0))
    w1r = ct.reshape(ct.extract(w1, (0, 0, 0), (F1, F1, 1)), (1, F1, F1))
    w1i = ct.reshape(ct.extract(w1, (0, 0, 1), (F1, F1, 1)), (1, F1, F1))
    tr = ct.reshape(ct.extract(t, (0, 0, 0), (F0, F1, 1)), (1, F0, F1))
    ti = ct.reshape(ct.extract(t, (0, 0, 1), (F0, F1, 1)), (1, F0, F1))
    ar, ai = _cmm(w0r, w0i, xr, xi)  # over n0
    ar, ai = ar * tr - ai * ti, ar * ti + ai * tr  # twiddles W_N^(n1 k0)
    br, bi = _cmm(ar, ai, w1r, w1i)  # over n1: [b, k0, k1]
    yr = ct.reshape(ct.permute(br, (0, 2, 1)), (BS, n, 1))  # k = k0 + F0 k1
    yi = ct.reshape(ct.permute(bi, (0, 2, 1)), (BS, n, 1))
    ct.store(Y, (b, 0, 0), ct.cat((yr, yi), axis=-1))


def test_four_step_fft():
    """FFT of 64 points as 8 x 8 (cuTile's FFT sample's structure: real / imaginary planes extracted from a
    trailing axis of 2, batched 3-D matmuls against (1, F, F) DFT matrices, twiddles, permutes, a cat back)."""
    def run(sm):
        rng = _rng(52)
        bs, f0, f1 = 2, 8, 8
        n = f0 * f1
        batch = 5
        x = rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))
        xin = np.stack([x.real, x.imag], -1).astype(np.float32)
        y = np.zeros_like(xin)

        def dft(m):
            k = np.arange(m)
            return np.exp(-2j * np.pi * np.outer(k, k) / m)
        tw = np.exp(-2j * np.pi * np.outer(np.arange(f0), np.arange(f1)) / n)
        packed = [np.stack([m.real, m.imag], -1).astype(np.float32) for m in (dft(f0), dft(f1), tw)]
        tc.launch(None, (3,), fft_four_step, (xin, y, *packed, bs, f0, f1), gpu_name=sm)
        want = np.fft.fft(x, axis=1)
        np.testing.assert_allclose(y[..., 0] + 1j * y[..., 1], want, rtol=1e-4, atol=1e-4)
    _each_sm(run)


# ------------------------------------------------------------------------------ transposed numpy views as matmul operands
def test_matmul_on_transposed_and_sliced_views():
    """Operands passed as ``b.T`` (last-axis stride != 1: no TMA, no unit-stride fact) and a column slice of a wider
    array, into a strided output view."""
    def run(sm):
        rng = _rng(53)
        m, n, k = 70, 45, 50
        a_wide = rng.standard_normal((m, k + 9)).astype(np.float16)
        bt = rng.standard_normal((n, k)).astype(np.float16)
        out = np.zeros((m, 2 * n), np.float32)
        tc.launch(None, (2, 2), small_tiles_mma, (a_wide[:, 3:3 + k], bt.T, out[:, ::2], 64, 32, 16), gpu_name=sm)
        np.testing.assert_allclose(out[:, ::2], a_wide[:, 3:3 + k].astype(np.float32) @ bt.T.astype(np.float32),
                                   rtol=2e-3, atol=2e-3)
        assert not out[:, 1::2].any()
    _each_sm(run)
