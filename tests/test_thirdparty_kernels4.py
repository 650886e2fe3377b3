"""Round 4a of kernels written the way an outside cuTile author writes them, in the idioms of NVIDIA's TileGym
(cuTile kernels for LLM workloads; the kernels here are our own, not copies): norms (RMSNorm forward with
gathered chunks and a 0-d scatter of the row statistic, static persistent 2-D tiles with ``latency`` /
``allow_tma`` hints, backward dx / dw, LayerNorm over a (N, C, W) view on a 2-D grid, the flat-gather form
with sentinel scatters, the persistent form with ``[:, None]`` broadcasts, fused residual add), softmax
(persistent gather with ``-inf`` padding and approximate exp / division, ``check_bounds`` derived from the
constants, ``NEG_INF`` loads, the chunked three-pass and the online form, log-softmax, cross entropy forward
and backward), rotary embeddings on 4-D in-place tiles, gated activations (SwiGLU / silu_and_mul / GeGLU /
GELU written with ``ct.add`` / ``ct.mul`` / ``ct.negative``), hash-based dropout with wrap-around int32
arithmetic, transposes and copies with non-square tiles, split-K reductions with ``exp2``, the MoE block
alignment stages (masked gathers, match matrices, cumsums, scalar gathers driving a loop), embedding lookups,
argmax / top-k selections and chunked cumsums, hyper-connection kernels on narrowed views, an SSD-style chunk scan,
multi-tensor apply over lists of arrays, NVFP4 / MXFP8 block quantisation (``pack_to_bytes``, ``Array.slice``, a
binary-search schedule), a MoE activation-backward epilogue, a selective scan (tuple scans both ways), kernel hints
(``occupancy``, ``ByTarget``, ``num_worker_warps``, ``opt_level``, ``replace_hints``). Each runs on sm_80 / sm_90a / sm_100a in the CPU emulator (``tilecore.cutile.launch`` on
numpy arrays) against numpy on sizes that are not tile multiples; each kernel's bytecode is compiled by
NVIDIA's tileiras for the same target too (where it is installed). A kernel that found a bug says so in its
test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")

from test_thirdparty_kernels3 import _launch  # noqa: E402  (the emulator run + the tileiras check)

SMS = ["sm_80", "sm_90a", "sm_100a"]
Z = ct.PaddingMode.ZERO
ConstInt = ct.Constant[int]
ConstFloat = ct.Constant[float]
ConstBool = ct.Constant[bool]
APPROX = ct.RoundingMode.APPROX


def _rng(seed):
    return np.random.default_rng(seed)


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _softmax(x, axis=-1):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


# ------------------------------------------------------------------------------ RMSNorm: gathered chunks, 0-d scatter
@ct.kernel
def rms_norm_chunks(X, W, Y, Rstd, N: ConstInt, EPS: ConstFloat, TILE: ConstInt):
    row = ct.bid(0)
    lanes = ct.arange(TILE, dtype=ct.int32)
    acc = ct.full((TILE,), 0.0, dtype=ct.float32)
    for j in range(ct.cdiv(N, TILE)):
        xs = ct.astype(ct.gather(X, (row, j * TILE + lanes), latency=1), ct.float32)
        acc += xs * xs
    r = ct.rsqrt(ct.sum(acc, axis=0, keepdims=False) / N + EPS)
    ct.scatter(Rstd, row, r)
    for j in range(ct.cdiv(N, TILE)):
        cols = j * TILE + lanes
        w = ct.astype(ct.gather(W, cols, latency=1), ct.float32)
        xs = ct.astype(ct.gather(X, (row, cols), latency=1), ct.float32)
        ct.scatter(Y, (row, cols), ct.astype(xs * r * w, X.dtype), latency=1)


@pytest.mark.parametrize("sm", SMS)
def test_rms_norm_gathered_chunks_and_a_0d_statistic_scatter(sm):
    rng = _rng(1)
    m, n = 5, 45
    x = rng.standard_normal((m, n)).astype(np.float16)
    w = rng.standard_normal(n).astype(np.float16)
    y, rstd = np.zeros((m, n), np.float16), np.zeros(m, np.float32)
    _launch(sm, (m,), rms_norm_chunks, (x, w, y, rstd, n, 1e-5, 16))
    xf = x.astype(np.float64)
    want_r = 1.0 / np.sqrt((xf * xf).mean(1) + 1e-5)
    np.testing.assert_allclose(rstd, want_r, rtol=1e-5)
    np.testing.assert_allclose(y.astype(np.float64), xf * want_r[:, None] * w, rtol=2e-3, atol=2e-3)


# ------------------------------------------------------------------------------ RMSNorm: static persistent 2-D tiles
@ct.kernel
def rms_norm_persistent(X, Y, W, TM: ConstInt, TN: ConstInt, EPS: ConstFloat):
    M = X.shape[0]
    N = X.shape[1]
    w = ct.reshape(ct.astype(ct.load(W, index=(0,), shape=(TN,), padding_mode=Z), ct.float32), (1, TN))
    for t in range(ct.bid(0), (M + TM - 1) // TM, ct.num_blocks(0)):
        # (TileGym hints latency=10 here: tileiras then takes ~40 s for sm_90 on this kernel, 1.4 s with 4)
        x = ct.astype(ct.load(X, index=(t, 0), shape=(TM, TN), padding_mode=Z, latency=4), ct.float32)
        ss = ct.sum(ct.mul(x, x), axis=1, keepdims=True)
        var = ct.truediv(ss, ct.full((TM, 1), N * 1.0, dtype=ct.float32))
        r = ct.rsqrt(ct.add(var, ct.full((TM, 1), EPS, dtype=ct.float32)))
        y = ct.mul(ct.mul(x, r), w)
        ct.store(Y, index=(t, 0), tile=ct.astype(y, Y.dtype), allow_tma=False, latency=3)


@pytest.mark.parametrize("sm", SMS)
def test_rms_norm_static_persistent_with_hints_and_runtime_shapes(sm):
    rng = _rng(2)
    m, n = 37, 50
    x = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    y = np.zeros((m, n), np.float32)
    _launch(sm, (3,), rms_norm_persistent, (x, y, w, 8, 64, 1e-6))
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ RMSNorm backward: dx per row, dw per column
@ct.kernel
def rms_norm_bwd_dx(DX, DY, X, W, Rstd, TILE: ConstInt):
    row = ct.bid(0)
    N = X.shape[1]
    x = ct.load(X, index=(row, 0), shape=(1, TILE), padding_mode=Z)
    dy = ct.load(DY, index=(row, 0), shape=(1, TILE), padding_mode=Z)
    r = ct.reshape(ct.load(Rstd, index=(row,), shape=(1,), padding_mode=Z), (1, 1))
    w = ct.reshape(ct.load(W, index=(0,), shape=(TILE,), padding_mode=Z), (1, TILE))
    dot = ct.sum(x * w * dy, axis=1, keepdims=True)
    corr = x * (r * r * r) / ct.full((1, 1), N * 1.0, dtype=ct.float32) * dot
    ct.store(DX, index=(row, 0), tile=ct.astype(dy * w * r - corr, DX.dtype))


@ct.kernel
def rms_norm_bwd_dw(DW, DY, X, Rstd, TILE: ConstInt):
    col = ct.bid(0)
    x = ct.astype(ct.load(X, index=(0, col), shape=(TILE, 1), padding_mode=Z), ct.float32)
    dy = ct.astype(ct.load(DY, index=(0, col), shape=(TILE, 1), padding_mode=Z), ct.float32)
    r = ct.reshape(ct.load(Rstd, index=(0,), shape=(TILE,), padding_mode=Z), (TILE, 1))
    g = ct.sum(dy * x * r, axis=0, keepdims=False)
    ct.store(DW, index=(col,), tile=ct.astype(ct.reshape(g, (1,)), DW.dtype))


@pytest.mark.parametrize("sm", SMS)
def test_rms_norm_backward_dx_rows_and_dw_columns(sm):
    rng = _rng(3)
    m, n = 13, 27
    x = rng.standard_normal((m, n)).astype(np.float32)
    dy = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    r = (1.0 / np.sqrt((x.astype(np.float64) ** 2).mean(1) + 1e-5)).astype(np.float32)
    dx, dw = np.zeros((m, n), np.float32), np.zeros(n, np.float32)
    _launch(sm, (m,), rms_norm_bwd_dx, (dx, dy, x, w, r, _pow2(n)))
    _launch(sm, (n,), rms_norm_bwd_dw, (dw, dy, x, r, _pow2(m)))
    xd, dyd, rd = x.astype(np.float64), dy.astype(np.float64), r.astype(np.float64)[:, None]
    want_dx = dyd * w * rd - xd * rd**3 / n * (xd * w * dyd).sum(1, keepdims=True)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dw, (dyd * xd * rd).sum(0), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------ softmax: persistent gather, -inf padding, approx
@ct.kernel(occupancy=4)
def softmax_rows_gather(Out, In, N_ROWS: ConstInt, TILE: ConstInt):
    lanes = ct.arange(TILE, dtype=ct.int32)
    for r in range(ct.bid(0), N_ROWS, ct.num_blocks(0)):
        row = ct.astype(ct.gather(In, (r, lanes), check_bounds=True, padding_value=-math.inf), ct.float32)
        e = ct.exp(row - ct.max(row, 0, keepdims=True), rounding_mode=APPROX)
        p = ct.truediv(e, ct.sum(e, 0, keepdims=True), rounding_mode=APPROX, flush_to_zero=True)
        ct.scatter(Out, (r, lanes), ct.astype(p, In.dtype), check_bounds=True)


@pytest.mark.parametrize("sm", SMS)
def test_softmax_persistent_gather_with_neg_inf_padding_and_approx_math(sm):
    rng = _rng(4)
    m, n = 11, 40
    x = (rng.standard_normal((m, n)) * 4).astype(np.float16)
    y = np.zeros((m, n), np.float16)
    _launch(sm, (4,), softmax_rows_gather, (y, x, m, 64))
    np.testing.assert_allclose(y.astype(np.float64), _softmax(x), rtol=3e-3, atol=1e-4)


# ------------------------------------------------------------------------------ softmax: check_bounds from the constants
@ct.kernel
def softmax_one_row(Out, In, N: ConstInt, TILE: ConstInt):
    r = ct.bid(0)
    lanes = ct.arange(TILE, dtype=ct.int32)
    check = TILE != N
    row = ct.astype(ct.gather(In, (r, lanes), check_bounds=check, padding_value=-math.inf), ct.float32)
    e = ct.exp(row - ct.max(row, 0, keepdims=True), rounding_mode=APPROX)
    p = ct.truediv(e, ct.sum(e, 0, keepdims=True), rounding_mode=APPROX, flush_to_zero=True)
    ct.scatter(Out, (r, lanes), ct.astype(p, In.dtype), check_bounds=check)


@pytest.mark.parametrize("sm", SMS)
def test_softmax_check_bounds_decided_by_constants(sm):
    rng = _rng(5)
    for n in (32, 23):
        x = rng.standard_normal((6, n)).astype(np.float32) * 3
        y = np.zeros_like(x)
        _launch(sm, (6,), softmax_one_row, (y, x, n, _pow2(n)))
        np.testing.assert_allclose(y, _softmax(x), rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------ softmax: NEG_INF loads, occupancy replaced
@ct.kernel(occupancy=2)
def softmax_rows_load(Out, In, N_ROWS: ConstInt, TILE: ConstInt):
    for r in range(ct.bid(0), N_ROWS, ct.num_blocks(0)):
        row = ct.astype(ct.load(In, index=(r, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.NEG_INF), ct.float32)
        e = ct.exp(row - ct.max(row, 1, keepdims=True), rounding_mode=APPROX)
        p = ct.truediv(e, ct.sum(e, 1, keepdims=True), rounding_mode=APPROX, flush_to_zero=True)
        ct.store(Out, index=(r, 0), tile=ct.astype(p, In.dtype))


@pytest.mark.parametrize("sm", SMS)
def test_softmax_neg_inf_padded_loads_and_replace_hints(sm):
    rng = _rng(6)
    m, n = 9, 70
    x = rng.standard_normal((m, n)).astype(np.float32)
    for k in (softmax_rows_load, softmax_rows_load.replace_hints(occupancy=8)):
        y = np.zeros_like(x)
        _launch(sm, (4,), k, (y, x, m, 128))
        np.testing.assert_allclose(y, _softmax(x), rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------ softmax: chunked three passes
@ct.kernel(occupancy=4)
def softmax_three_pass(Out, In, N_ROWS: ConstInt, N_COLS: ConstInt, TILE: ConstInt):
    base = ct.arange(TILE, dtype=ct.int32)
    chunks = (N_COLS + TILE - 1) // TILE
    for r in range(ct.bid(0), N_ROWS, ct.num_blocks(0)):
        mx = ct.full((1,), -math.inf, dtype=ct.float32)
        den = ct.full((1,), 0.0, dtype=ct.float32)
        for c in range(chunks):
            cols = ct.full((TILE,), c * TILE, dtype=ct.int32) + base
            v = ct.astype(ct.gather(In, (r, cols), check_bounds=True, padding_value=-math.inf), ct.float32)
            mx = ct.maximum(mx, ct.max(v, 0, keepdims=True))
        for c in range(chunks):
            cols = ct.full((TILE,), c * TILE, dtype=ct.int32) + base
            v = ct.astype(ct.gather(In, (r, cols), check_bounds=True, padding_value=-math.inf), ct.float32)
            den = den + ct.sum(ct.exp(v - mx, rounding_mode=APPROX), 0, keepdims=True)
        inv = ct.truediv(1.0, den, rounding_mode=APPROX, flush_to_zero=True)
        for c in range(chunks):
            cols = ct.full((TILE,), c * TILE, dtype=ct.int32) + base
            v = ct.astype(ct.gather(In, (r, cols), check_bounds=True, padding_value=-math.inf), ct.float32)
            ct.scatter(Out, (r, cols), ct.astype(ct.exp(v - mx, rounding_mode=APPROX) * inv, In.dtype),
                       check_bounds=True)


@pytest.mark.parametrize("sm", SMS)
def test_softmax_chunked_three_pass_with_scalar_first_truediv(sm):
    rng = _rng(7)
    m, n = 7, 83
    x = (rng.standard_normal((m, n)) * 5).astype(np.float32)
    y = np.zeros_like(x)
    _launch(sm, (3,), softmax_three_pass, (y, x, m, n, 32))
    np.testing.assert_allclose(y, _softmax(x), rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------ RoPE: 4-D in-place, half tiles by tile index
def _rotate_halves(T, b, s, c, sn, TH, TRD):
    """Rotate the first ``2 * TRD`` elements of every head of ``T[b, :, s, :]`` in place (a plain helper)."""
    lo = ct.load(T, index=(b, 0, s, 0), shape=(1, TH, 1, TRD), padding_mode=Z).reshape((TH, TRD))
    hi = ct.load(T, index=(b, 0, s, 1), shape=(1, TH, 1, TRD), padding_mode=Z).reshape((TH, TRD))
    ct.store(T, index=(b, 0, s, 0), tile=(lo * c - hi * sn).reshape((1, TH, 1, TRD)).astype(T.dtype))
    ct.store(T, index=(b, 0, s, 1), tile=(hi * c + lo * sn).reshape((1, TH, 1, TRD)).astype(T.dtype))


@ct.kernel
def rope_inplace(Q, K, Cos, Sin, COS_BS: ConstInt, SEQ: ConstInt, TQH: ConstInt, TKH: ConstInt, TRD: ConstInt):
    bid = ct.bid(0)
    b = bid // SEQ
    s = bid % SEQ
    cb = 0 if COS_BS == 1 else b
    c = ct.load(Cos, index=(cb, s, 0), shape=(1, 1, TRD), padding_mode=Z).reshape((1, TRD))
    sn = ct.load(Sin, index=(cb, s, 0), shape=(1, 1, TRD), padding_mode=Z).reshape((1, TRD))
    _rotate_halves(Q, b, s, c, sn, TQH, TRD)
    _rotate_halves(K, b, s, c, sn, TKH, TRD)


def _rope_ref(t, cos, sin, half):
    t = t.astype(np.float64).copy()
    lo, hi = t[..., :half].copy(), t[..., half:2 * half].copy()
    c, s = cos[:, None, :, :half], sin[:, None, :, :half]
    t[..., :half] = lo * c - hi * s
    t[..., half:2 * half] = hi * c + lo * s
    return t


@pytest.mark.parametrize("sm", SMS)
def test_rope_in_place_on_4d_tiles_full_and_partial(sm):
    rng = _rng(8)
    bsz, hq, hk, seq, hd = 2, 3, 1, 5, 16
    for rope_dim, cos_bs in ((16, 1), (8, 2)):
        q = rng.standard_normal((bsz, hq, seq, hd)).astype(np.float32)
        k = rng.standard_normal((bsz, hk, seq, hd)).astype(np.float32)
        ang = rng.uniform(-3, 3, (cos_bs, seq, rope_dim))
        cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
        want_q, want_k = _rope_ref(q, cos, sin, rope_dim // 2), _rope_ref(k, cos, sin, rope_dim // 2)
        _launch(sm, (bsz * seq,), rope_inplace, (q, k, cos, sin, cos_bs, seq, 4, 1, rope_dim // 2))
        np.testing.assert_allclose(q, want_q, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(k, want_k, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------ LayerNorm over (N, C, W) on a 2-D grid
@ct.kernel
def layer_norm_ncw(X, Y, W, B, Mean, Rstd, C: ConstInt, EPS: ConstFloat, SHIFT: ConstFloat, BC: ConstInt,
                   BW: ConstInt):
    n = ct.bid(0)
    wt = ct.bid(1)
    acc = ct.zeros((BC, BW), dtype=ct.float32)
    for c0 in range(0, C, BC):
        t = ct.load(X, index=(n, c0 // BC, wt), shape=(1, BC, BW), padding_mode=Z)
        acc = acc + ct.astype(ct.reshape(t, (BC, BW)), ct.float32)
    mean = ct.sum(acc, axis=0) / C
    ct.store(Mean, index=(n, wt), tile=ct.reshape(mean, (1, BW)), allow_tma=False)
    mrow = ct.reshape(mean, (1, BW))
    acc = ct.zeros((BC, BW), dtype=ct.float32)
    for c0 in range(0, C, BC):
        t = ct.astype(ct.reshape(ct.load(X, index=(n, c0 // BC, wt), shape=(1, BC, BW), padding_mode=Z),
                                 (BC, BW)), ct.float32)
        inside = ct.reshape(c0 + ct.arange(BC, dtype=ct.int32) < C, (BC, 1))
        d = ct.where(inside, t - mrow, ct.zeros((BC, BW), dtype=ct.float32))
        acc = acc + d * d
    rstd = ct.rsqrt(ct.sum(acc, axis=0) / C + EPS)
    ct.store(Rstd, index=(n, wt), tile=ct.reshape(rstd, (1, BW)), allow_tma=False)
    rrow = ct.reshape(rstd, (1, BW))
    for c0 in range(0, C, BC):
        ci = c0 // BC
        t = ct.astype(ct.reshape(ct.load(X, index=(n, ci, wt), shape=(1, BC, BW), padding_mode=Z), (BC, BW)),
                      ct.float32)
        w = ct.reshape(ct.astype(ct.load(W, index=(ci,), shape=(BC,), padding_mode=Z), ct.float32), (BC, 1)) + SHIFT
        bb = ct.reshape(ct.astype(ct.load(B, index=(ci,), shape=(BC,), padding_mode=Z), ct.float32), (BC, 1))
        y = ct.astype((t - mrow) * rrow * w + bb, X.dtype)
        ct.store(Y, index=(n, ci, wt), tile=ct.reshape(y, (1, BC, BW)), allow_tma=False)


def _ln_ref(x, axis, eps):
    x = x.astype(np.float64)
    mean = x.mean(axis=axis, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axis, keepdims=True)
    return mean, 1.0 / np.sqrt(var + eps)


@pytest.mark.parametrize("sm", SMS)
def test_layer_norm_over_the_channel_axis_of_a_3d_view(sm):
    rng = _rng(9)
    nb, c, wd = 3, 21, 19
    x = rng.standard_normal((nb, c, wd)).astype(np.float32) + 1.5
    w, b = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    y = np.zeros_like(x)
    mean, rstd = np.zeros((nb, wd), np.float32), np.zeros((nb, wd), np.float32)
    _launch(sm, (nb, 2), layer_norm_ncw, (x, y, w, b, mean, rstd, c, 1e-5, 0.5, 8, 16))
    m, r = _ln_ref(x, 1, 1e-5)
    np.testing.assert_allclose(mean, m[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, r[:, 0], rtol=1e-4)
    np.testing.assert_allclose(y, (x - m) * r * (w[:, None] + 0.5) + b[:, None], rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------ LayerNorm: flat gathers, sentinel scatters
@ct.kernel
def layer_norm_flat(X, Y, W, B, Mean, Rstd, SN: ConstInt, SC: ConstInt, C: ConstInt, WD: ConstInt, EPS: ConstFloat,
                    BC: ConstInt, BW: ConstInt, NEL: ConstInt, SNEL: ConstInt):
    n = ct.bid(0)
    w_off = ct.bid(1) * BW + ct.arange(BW, dtype=ct.int32)
    in_w = w_off < WD
    acc = ct.zeros((BC, BW), dtype=ct.float32)
    for c0 in range(0, C, BC):
        cols = c0 + ct.arange(BC, dtype=ct.int32)
        offs = n * SN + ct.reshape(cols, (BC, 1)) * SC + ct.reshape(w_off, (1, BW))
        mask = ct.bitwise_and(ct.reshape(cols < C, (BC, 1)), ct.reshape(in_w, (1, BW)))
        acc = acc + ct.where(mask, ct.astype(ct.gather(X, offs, padding_value=0), ct.float32),
                             ct.zeros((BC, BW), dtype=ct.float32))
    mean = ct.sum(acc, axis=0) / C
    ct.scatter(Mean, ct.where(in_w, n * WD + w_off, ct.full((BW,), SNEL, dtype=ct.int32)), mean)
    acc = ct.zeros((BC, BW), dtype=ct.float32)
    for c0 in range(0, C, BC):
        cols = c0 + ct.arange(BC, dtype=ct.int32)
        offs = n * SN + ct.reshape(cols, (BC, 1)) * SC + ct.reshape(w_off, (1, BW))
        mask = ct.bitwise_and(ct.reshape(cols < C, (BC, 1)), ct.reshape(in_w, (1, BW)))
        d = ct.astype(ct.gather(X, offs, padding_value=0), ct.float32) - ct.reshape(mean, (1, BW))
        d = ct.where(mask, d, ct.zeros((BC, BW), dtype=ct.float32))
        acc = acc + d * d
    rstd = ct.rsqrt(ct.sum(acc, axis=0) / C + EPS)
    ct.scatter(Rstd, ct.where(in_w, n * WD + w_off, ct.full((BW,), SNEL, dtype=ct.int32)), rstd)
    for c0 in range(0, C, BC):
        cols = c0 + ct.arange(BC, dtype=ct.int32)
        offs = n * SN + ct.reshape(cols, (BC, 1)) * SC + ct.reshape(w_off, (1, BW))
        mask = ct.bitwise_and(ct.reshape(cols < C, (BC, 1)), ct.reshape(in_w, (1, BW)))
        x = ct.astype(ct.gather(X, offs, padding_value=0), ct.float32)
        w = ct.reshape(ct.gather(W, cols, padding_value=0), (BC, 1))
        b = ct.reshape(ct.gather(B, cols, padding_value=0), (BC, 1))
        y = (x - ct.reshape(mean, (1, BW))) * ct.reshape(rstd, (1, BW)) * w + b
        ct.scatter(Y, ct.where(mask, offs, ct.full((BC, BW), NEL, dtype=ct.int32)), ct.astype(y, Y.dtype))


@pytest.mark.parametrize("sm", SMS)
def test_layer_norm_flat_gathers_and_out_of_range_sentinel_scatters(sm):
    rng = _rng(10)
    nb, c, wd = 2, 13, 3
    x = rng.standard_normal((nb, c, wd)).astype(np.float32)
    w, b = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    y = np.full(nb * c * wd, 7.0, np.float32)
    mean, rstd = np.zeros(nb * wd, np.float32), np.zeros(nb * wd, np.float32)
    _launch(sm, (nb, 1), layer_norm_flat, (x.reshape(-1), y, w, b, mean, rstd, c * wd, wd, c, wd, 1e-5, 8, 4,
                                           nb * c * wd, nb * wd))
    m, r = _ln_ref(x, 1, 1e-5)
    np.testing.assert_allclose(mean, m.reshape(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, r.reshape(-1), rtol=1e-4)
    np.testing.assert_allclose(y.reshape(x.shape), (x - m) * r * w[:, None] + b[:, None], rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------ persistent LayerNorm: [:, None] broadcasts
@ct.kernel
def layer_norm_persistent(X, Y, W, B, Mean, Rstd, N: ConstInt, D: ConstInt, EPS: ConstFloat, TRAINING: ConstInt,
                          BN: ConstInt, BD: ConstInt, NPROG: ConstInt):
    w = ct.astype(ct.load(W, index=(0,), shape=(BD,), padding_mode=Z), ct.float32)
    b = ct.astype(ct.load(B, index=(0,), shape=(BD,), padding_mode=Z), ct.float32)
    for t in range(ct.bid(0), ct.cdiv(N, BN), NPROG):
        x = ct.astype(ct.load(X, index=(t, 0), shape=(BN, BD), padding_mode=Z, latency=4), ct.float32)
        mean = ct.sum(x, axis=1) / D
        var = ct.sum(x * x, axis=1) / D - mean * mean
        rstd = ct.rsqrt(var + EPS)
        if TRAINING:
            ct.store(Mean, index=(t,), tile=mean, allow_tma=False)
            ct.store(Rstd, index=(t,), tile=rstd, allow_tma=False)
        y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
        ct.store(Y, index=(t, 0), tile=ct.bitcast(ct.astype(y, ct.bfloat16), ct.uint16), allow_tma=False)


def _bf16_value(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("sm", SMS)
def test_persistent_layer_norm_with_row_broadcasts_and_bf16_output(sm):
    rng = _rng(11)
    n, d = 19, 24
    x = rng.standard_normal((n, d)).astype(np.float32)
    w, b = rng.standard_normal(d).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    y = np.zeros((n, d), np.uint16)
    mean, rstd = np.zeros(n, np.float32), np.zeros(n, np.float32)
    _launch(sm, (2,), layer_norm_persistent, (x, y, w, b, mean, rstd, n, d, 1e-5, 1, 4, 32, 2))
    m, r = _ln_ref(x, 1, 1e-5)
    np.testing.assert_allclose(mean, m[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, r[:, 0], rtol=1e-3)
    np.testing.assert_allclose(_bf16_value(y), (x - m) * r * w + b, rtol=1e-2, atol=2e-2)


# ------------------------------------------------------------------------------ dropout: int32 wrap-around hash mask
@ct.kernel
def hash_dropout(X, Out, P: ConstFloat, SEED: ConstInt, TILE: ConstInt, TRAINING: ConstBool):
    offs = ct.arange(TILE, dtype=ct.int32) + ct.bid(0) * TILE
    x = ct.gather(X, offs, padding_value=0)
    out = ct.zeros((TILE,), dtype=x.dtype)
    if TRAINING:
        h = offs * 1103515245 + ct.full((TILE,), SEED, dtype=ct.int32)
        h = ct.bitwise_xor(h, ct.bitwise_rshift(h, 16))
        h = ct.bitwise_xor(h, ct.bitwise_lshift(h, 8))
        h = ct.bitwise_xor(h, ct.bitwise_rshift(h, 4))
        u = ct.astype(ct.bitwise_and(h, 0x7FFFFFFF), ct.float32) / 2147483647.0
        if P >= 1.0:
            scale = ct.zeros((TILE,), dtype=x.dtype)
        else:
            scale = ct.full((TILE,), 1.0 / (1.0 - P), dtype=x.dtype)
        out = ct.where(u > P, x * scale, out)
    else:
        out = x
    ct.scatter(Out, offs, out)


def _dropout_ref(x, p, seed):
    offs = np.arange(x.size, dtype=np.int64)
    h = ((offs * 1103515245 + seed) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    h = h ^ (h >> 16)
    h = h ^ (h << 8)
    h = h ^ (h >> 4)
    u = (h & 0x7FFFFFFF).astype(np.float32) / np.float32(2147483647.0)
    scale = np.float16(0.0) if p >= 1.0 else np.float16(1.0 / (1.0 - p))
    return np.where(u > np.float32(p), x * scale, np.float16(0)).astype(np.float16)


@pytest.mark.parametrize("sm", SMS)
def test_hash_dropout_with_wrapping_int32_multiply_and_negative_seed(sm):
    rng = _rng(12)
    n = 150
    x = rng.standard_normal(n).astype(np.float16)
    for p, seed, training in ((0.3, -1640531535, True), (1.0, 7, True), (0.5, 3, False)):
        y = np.full(n, 9, np.float16)
        _launch(sm, (3,), hash_dropout, (x, y, p, seed, 64, training))
        np.testing.assert_array_equal(y, _dropout_ref(x, p, seed) if training else x)


# ------------------------------------------------------------------------------ SwiGLU forward / backward with plain helpers
def _sigmoid_approx(x):
    return ct.truediv(1.0, 1.0 + ct.exp(-x), flush_to_zero=True, rounding_mode=APPROX)


@ct.kernel(occupancy=1, num_worker_warps=8)
def swiglu_fwd(A, B, C, TILE: ConstInt, CHECK: ConstBool):
    row = ct.bid(0)
    lanes = ct.arange(TILE, dtype=ct.int32)
    a = ct.gather(A, (row, lanes), check_bounds=CHECK, padding_value=0.0)
    b = ct.gather(B, (row, lanes), check_bounds=CHECK, padding_value=0.0)
    af = a.astype(ct.float32)
    ct.scatter(C, (row, lanes), (af * _sigmoid_approx(af)).astype(A.dtype) * b, check_bounds=CHECK)


@ct.kernel
def swiglu_bwd(DC, A, B, DA, DB, TILE: ConstInt):
    r, c = ct.bid(0), ct.bid(1)
    dc = ct.load(DC, index=(r, c), shape=(1, TILE), padding_mode=Z).astype(ct.float32)
    a = ct.load(A, index=(r, c), shape=(1, TILE), padding_mode=Z).astype(ct.float32)
    b = ct.load(B, index=(r, c), shape=(1, TILE), padding_mode=Z).astype(ct.float32)
    sg = _sigmoid_approx(a)
    ct.store(DB, index=(r, c), tile=(dc * a * sg).astype(A.dtype))
    ct.store(DA, index=(r, c), tile=(dc * b * (sg * (1.0 + a * (1.0 - sg)))).astype(A.dtype))


@pytest.mark.parametrize("sm", SMS)
def test_swiglu_forward_backward_with_hints_and_helper_functions(sm):
    rng = _rng(13)
    for n in (48, 64):
        a = rng.standard_normal((5, n)).astype(np.float16)
        b = rng.standard_normal((5, n)).astype(np.float16)
        c = np.zeros_like(a)
        _launch(sm, (5,), swiglu_fwd, (a, b, c, 64, n != 64))
        af = a.astype(np.float64)
        silu = (af * _sigmoid(af)).astype(np.float16)
        np.testing.assert_allclose(c.astype(np.float64), (silu * b).astype(np.float64), rtol=4e-3, atol=4e-3)
    a = rng.standard_normal((4, 37)).astype(np.float32)
    b, dc = rng.standard_normal((4, 37)).astype(np.float32), rng.standard_normal((4, 37)).astype(np.float32)
    da, db = np.zeros_like(a), np.zeros_like(a)
    _launch(sm, (4, 3), swiglu_bwd, (dc, a, b, da, db, 16))
    sg = _sigmoid(a)
    np.testing.assert_allclose(db, dc * a * sg, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(da, dc * b * sg * (1 + a * (1 - sg)), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------ silu_and_mul: both halves of one row
@ct.kernel
def silu_and_mul(In, Out, GradOut, GA, GB, TILE: ConstInt, H: ConstInt):
    row = ct.bid(0)
    offs = ct.arange(TILE, dtype=ct.int32)
    a = ct.astype(ct.gather(In, (row, offs), check_bounds=True), ct.float32)
    b = ct.astype(ct.gather(In, (row, offs + H), check_bounds=True), ct.float32)
    sg = ct.truediv(1.0, 1 + ct.exp(-a), flush_to_zero=True, rounding_mode=APPROX)
    silu = a * sg
    ct.scatter(Out, (row, offs), ct.astype(silu * b, Out.dtype), check_bounds=True)
    dc = ct.astype(ct.gather(GradOut, (row, offs), check_bounds=True), ct.float32)
    ct.scatter(GB, (row, offs), ct.astype(dc * silu, In.dtype), check_bounds=True)
    ct.scatter(GA, (row, offs), ct.astype(dc * (b * (sg + silu * (1.0 + -sg))), In.dtype), check_bounds=True)


@pytest.mark.parametrize("sm", SMS)
def test_silu_and_mul_forward_and_recomputing_backward(sm):
    rng = _rng(14)
    rows, h = 6, 21
    x = rng.standard_normal((rows, 2 * h)).astype(np.float32)
    g = rng.standard_normal((rows, h)).astype(np.float32)
    out, ga, gb = (np.full((rows, h), 5.0, np.float32) for _ in range(3))
    _launch(sm, (rows,), silu_and_mul, (x, out, g, ga, gb, 32, h))
    a, b = x[:, :h].astype(np.float64), x[:, h:].astype(np.float64)
    sg = _sigmoid(a)
    np.testing.assert_allclose(out, a * sg * b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb, g * a * sg, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ga, g * b * (sg + a * sg * (1 - sg)), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------ GELU through ct.add / ct.mul / ct.negative
GELU_EXACT_MODE = 0
GELU_TANH_MODE = 1


def _sig_fn(x, BS):
    one = ct.ones((BS,), dtype=x.dtype)
    return ct.truediv(one, ct.add(one, ct.exp(ct.negative(x))))


def _tanh_fn(x, BS):
    two = ct.full((BS,), 2.0, dtype=x.dtype)
    return ct.sub(ct.mul(two, _sig_fn(ct.mul(two, x), BS)), ct.ones((BS,), dtype=x.dtype))


@ct.kernel
def gelu_modes(Y, X, BS: ConstInt, MODE: ConstInt):
    offs = ct.add(ct.arange(BS, dtype=ct.int32), ct.bid(0) * BS)
    x = ct.gather(X, offs, padding_value=0)
    inner = ct.mul(ct.full((BS,), 0.7978845608028654, dtype=x.dtype),
                   ct.add(x, ct.mul(ct.full((BS,), 0.044715, dtype=x.dtype), ct.mul(ct.mul(x, x), x))))
    cdf = ct.mul(ct.full((BS,), 0.5, dtype=x.dtype), ct.add(ct.ones((BS,), dtype=x.dtype), _tanh_fn(inner, BS)))
    if MODE == GELU_TANH_MODE:
        y = ct.mul(ct.mul(ct.full((BS,), 0.5, dtype=x.dtype), x), ct.add(ct.ones((BS,), dtype=x.dtype),
                                                                       _tanh_fn(inner, BS)))
    else:
        y = ct.mul(x, cdf)
    ct.scatter(Y, offs, y, check_bounds=True)


@pytest.mark.parametrize("sm", SMS)
def test_gelu_with_function_style_arithmetic_and_a_global_mode_constant(sm):
    rng = _rng(15)
    n = 100
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    xd = x.astype(np.float64)
    want = 0.5 * xd * (1 + np.tanh(0.7978845608028654 * (xd + 0.044715 * xd**3)))
    for mode in (GELU_EXACT_MODE, GELU_TANH_MODE):
        y = np.zeros(n, np.float32)
        _launch(sm, (4,), gelu_modes, (y, x, 32, mode))
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------ GeGLU with ct.tanh on f16
@ct.kernel
def geglu_rows(A, B, C, TILE: ConstInt):
    r, c = ct.bid(0), ct.bid(1)
    a = ct.load(A, (r, c), (1, TILE), padding_mode=Z).astype(ct.float32)
    b = ct.load(B, (r, c), (1, TILE), padding_mode=Z)
    g = 0.5 * a * (1.0 + ct.tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)))
    ct.store(C, (r, c), g.astype(b.dtype) * b)


@pytest.mark.parametrize("sm", SMS)
def test_geglu_tanh_form_on_f16(sm):
    rng = _rng(16)
    a = rng.standard_normal((3, 50)).astype(np.float16)
    b = rng.standard_normal((3, 50)).astype(np.float16)
    c = np.zeros_like(a)
    _launch(sm, (3, 4), geglu_rows, (a, b, c, 16))
    ad = a.astype(np.float64)
    g = (0.5 * ad * (1 + np.tanh(0.7978845608028654 * (ad + 0.044715 * ad**3)))).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float64), (g * b).astype(np.float64), rtol=4e-3, atol=4e-3)


# ------------------------------------------------------------------------------ transposes with non-square tiles
@ct.kernel
def transpose_tiles(In, Out, BM: ConstInt, BN: ConstInt):
    pm, pn = ct.bid(0), ct.bid(1)
    t = ct.load(In, index=(pm, pn), shape=(BM, BN), padding_mode=Z)
    ct.store(Out, index=(pn, pm), tile=ct.transpose(t))


@pytest.mark.parametrize("sm", SMS)
def test_transpose_with_non_square_tiles_and_dtypes(sm):
    rng = _rng(17)
    for dt, (m, n), (bm, bn) in ((np.float32, (37, 45), (16, 32)), (np.float16, (20, 9), (8, 4)),
                                 (np.int8, (33, 70), (32, 64))):
        x = (rng.standard_normal((m, n)) * 10).astype(dt)
        y = np.zeros((n, m), dt)
        _launch(sm, (-(-m // bm), -(-n // bn)), transpose_tiles, (x, y, bm, bn))
        np.testing.assert_array_equal(y, x.T)


# ------------------------------------------------------------------------------ split-K reduce: exp2 weights, order, ByTarget
@ct.kernel(occupancy=ct.ByTarget(sm_80=2, default=4))
def splitk_reduce(Part, Lse, Out, NSPLIT_P2: ConstInt, TD: ConstInt, USE_DOT: ConstBool):
    b, h, t = ct.bid(0), ct.bid(1), ct.bid(2)
    part = ct.load(Part, (b, h, 0, t), shape=(1, 1, NSPLIT_P2, TD), order=(0, 1, 2, 3), allow_tma=True, latency=2,
                   padding_mode=Z)
    part = ct.reshape(part, (NSPLIT_P2, TD))
    lse = ct.gather(Lse, (b, h, ct.arange(NSPLIT_P2, dtype=ct.int32)), padding_value=-math.inf)
    wts = ct.astype(ct.exp2(lse - ct.max(lse)), ct.float32)
    total = ct.sum(wts)
    if USE_DOT:
        num = ct.extract(ct.mma(wts[None, :], ct.astype(part, ct.float32), ct.zeros((1, TD), dtype=ct.float32)),
                         (0, 0), shape=(1, TD))
    else:
        num = ct.sum(part * ct.reshape(wts, (NSPLIT_P2, 1)), axis=0)
    acc = ct.astype(num / total, Out.dtype)
    ct.store(Out, index=(b, h, t), tile=ct.reshape(acc, (1, 1, TD)), order=(0, 1, 2), allow_tma=True, latency=2)


@pytest.mark.parametrize("sm", SMS)
def test_splitk_reduce_with_exp2_weights_full_reductions_and_order(sm):
    rng = _rng(18)
    bsz, heads, ns, hd = 2, 3, 5, 40
    part = rng.standard_normal((bsz, heads, ns, hd)).astype(np.float32)
    lse = (rng.standard_normal((bsz, heads, ns)) * 2).astype(np.float32)
    wts = np.exp2(lse.astype(np.float64) - lse.max(-1, keepdims=True))
    want = (part * wts[..., None]).sum(2) / wts.sum(-1)[..., None]
    for use_dot in (False, True):
        out = np.zeros((bsz, heads, hd), np.float32)
        _launch(sm, (bsz, heads, 3), splitk_reduce, (part, lse, out, 8, 16, use_dot))
        np.testing.assert_allclose(out, want, rtol=1e-4 if use_dot else 1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ MoE block alignment, four stages
@ct.kernel
def moe_histogram(Ids, Cnts, E: ConstInt, NUMEL: ConstInt, PER: ConstInt, SUB: ConstInt, E2: ConstInt):
    bid = ct.bid(0)
    e_idx = ct.arange(E2, dtype=ct.int32)
    counts = ct.zeros((E2,), dtype=ct.int32)
    sub = ct.arange(SUB, dtype=ct.int32)
    for s0 in range(0, PER, SUB):
        tok = bid * PER + s0 + sub
        ok = (tok < NUMEL) & ((s0 + sub) < PER)
        ids = ct.gather(Ids, tok, mask=ok, padding_value=E)
        counts = counts + ct.sum((ids[:, None] == e_idx[None, :]).astype(ct.int32), axis=0)
    ct.scatter(Cnts, (bid + 1) * E + e_idx, counts, mask=e_idx < E)


@ct.kernel
def moe_prefix(Cnts, E: ConstInt, P2: ConstInt):
    offs = ct.arange(P2, dtype=ct.int32) * E + E + ct.bid(0)
    ct.scatter(Cnts, offs, ct.cumsum(ct.gather(Cnts, offs, padding_value=0), axis=0))


@ct.kernel
def moe_pad_totals(Total, MaxCnt, Cnts, Cum, E: ConstInt, BLOCK: ConstInt, NPROG: ConstInt):
    run = ct.zeros((1,), dtype=ct.int32)
    mx = ct.zeros((1,), dtype=ct.int32)
    for i in range(1, E + 1):
        cnt = ct.gather(Cnts, NPROG * E + i - 1 + ct.arange(1, dtype=ct.int32), padding_value=0)
        mx = ct.maximum(mx, cnt)
        bs = ct.full((1,), BLOCK, dtype=cnt.dtype)
        run = run + (cnt + (bs - ct.ones((1,), dtype=cnt.dtype))) // bs * bs
        ct.scatter(Cum, ct.full((1,), i, dtype=ct.int32), run)
    z = ct.zeros((1,), dtype=ct.int32)
    ct.scatter(Total, z, run)
    ct.scatter(MaxCnt, z, mx)


@ct.kernel
def moe_place(Ids, Sorted, ExpertIds, Cnts, Cum, E: ConstInt, BLOCK: ConstInt, NUMEL: ConstInt, PER: ConstInt,
              SUB: ConstInt, E2: ConstInt):
    bid = ct.bid(0)
    start = ct.gather(Cum, bid, padding_value=0)
    end = ct.gather(Cum, bid + 1, padding_value=0)
    first = start // BLOCK
    nblk = max(0, (end + BLOCK - 1) // BLOCK - first)
    for i in range(nblk):
        ct.scatter(ExpertIds, first + i, bid)
    e_idx = ct.arange(E2, dtype=ct.int32)
    e_ok = e_idx < E
    running = ct.gather(Cnts, bid * E + e_idx, mask=e_ok, padding_value=0) + ct.gather(Cum, e_idx, mask=e_ok,
                                                                                        padding_value=0)
    sub = ct.arange(SUB, dtype=ct.int32)
    for s0 in range(0, PER, SUB):
        tok = bid * PER + s0 + sub
        ok = (tok < NUMEL) & ((s0 + sub) < PER)
        ids = ct.gather(Ids, tok, mask=ok, padding_value=E)
        match = (ids[:, None] == e_idx[None, :]).astype(ct.int32)
        rank = ct.sum((ct.cumsum(match, axis=0) - match) * match, axis=1)
        base = ct.sum(running[None, :] * match, axis=1)
        ct.scatter(Sorted, base + rank, tok, mask=ok)
        running = running + ct.sum(match, axis=0)


def _moe_ref(ids, e, block):
    counts = np.bincount(ids, minlength=e)
    padded = -(-counts // block) * block
    cum = np.concatenate([[0], np.cumsum(padded)])
    sorted_ids = np.full(ids.size + e * (block - 1), ids.size, np.int32)
    expert_ids = np.full(-(-sorted_ids.size // block), -1, np.int32)
    for x in range(e):
        toks = np.nonzero(ids == x)[0]
        sorted_ids[cum[x]:cum[x] + toks.size] = toks
        expert_ids[cum[x] // block:cum[x + 1] // block] = x
    return counts, cum, sorted_ids, expert_ids


@pytest.mark.parametrize("sm", SMS)
def test_moe_block_alignment_stages(sm):
    rng = _rng(19)
    e, block, numel, nprog = 5, 4, 23, 5
    ids = rng.integers(0, e, numel).astype(np.int32)
    ids[ids == 3] = 1  # an expert with no tokens
    per = -(-numel // nprog)
    sub = min(_pow2(per), 256)
    cnts = np.zeros((nprog + 1) * e, np.int32)
    cum = np.zeros(e + 1, np.int32)
    total, mx = np.zeros(1, np.int32), np.zeros(1, np.int32)
    want_counts, want_cum, want_sorted, want_eids = _moe_ref(ids, e, block)
    sorted_ids = np.full(want_sorted.size, numel, np.int32)
    eids = np.full(want_eids.size, -1, np.int32)
    _launch(sm, (nprog,), moe_histogram, (ids, cnts, e, numel, per, sub, _pow2(e)))
    per_prog = np.array([np.bincount(ids[p * per:(p + 1) * per], minlength=e) for p in range(nprog)])
    np.testing.assert_array_equal(cnts.reshape(nprog + 1, e)[1:], per_prog)
    _launch(sm, (e,), moe_prefix, (cnts, e, _pow2(nprog)))
    np.testing.assert_array_equal(cnts.reshape(nprog + 1, e)[1:], np.cumsum(per_prog, 0))
    _launch(sm, (1,), moe_pad_totals, (total, mx, cnts, cum, e, block, nprog))
    np.testing.assert_array_equal(cum, want_cum)
    assert total[0] == want_cum[-1] and mx[0] == want_counts.max()
    _launch(sm, (nprog,), moe_place, (ids, sorted_ids, eids, cnts, cum, e, block, numel, per, sub, _pow2(e)))
    np.testing.assert_array_equal(sorted_ids, want_sorted)
    np.testing.assert_array_equal(eids, want_eids)


# ------------------------------------------------------------------------------ cross entropy: online two-pass, in-place probs
@ct.kernel(occupancy=1)
def cross_entropy_online(Logits, Loss, TgtLogit, N_ROWS: ConstInt, V: ConstInt, TV: ConstInt):
    chunks = ct.cdiv(V, TV)
    base = ct.arange(TV, dtype=ct.int32)
    for row in range(ct.bid(0), N_ROWS, ct.num_blocks(0)):
        mx = ct.full((1,), -1e30, dtype=ct.float32)
        se = ct.full((1,), 0.0, dtype=ct.float32)
        for c in range(chunks):
            cols = ct.add(ct.full((TV,), c * TV, dtype=ct.int32), base)
            v = ct.astype(ct.gather(Logits, (row, cols), check_bounds=True, padding_value=-1e30), ct.float32)
            new = ct.maximum(mx, ct.max(v, 0, keepdims=True))
            se = ct.add(ct.mul(se, ct.exp(ct.sub(mx, new))), ct.sum(ct.exp(ct.sub(v, new)), 0, keepdims=True))
            mx = new
        lse = ct.add(mx, ct.log(se))
        tgt = ct.astype(ct.load(TgtLogit, index=(row,), shape=(1,), padding_mode=Z), ct.float32)
        ct.store(Loss, index=(row,), tile=ct.sub(ct.reshape(lse, (1,)), tgt), allow_tma=False)
        inv = ct.truediv(ct.full((1,), 1.0, dtype=ct.float32), se)
        for c in range(chunks):
            cols = ct.add(ct.full((TV,), c * TV, dtype=ct.int32), base)
            v = ct.astype(ct.gather(Logits, (row, cols), check_bounds=True, padding_value=-1e30), ct.float32)
            ct.scatter(Logits, (row, cols), ct.astype(ct.mul(ct.exp(ct.sub(v, mx)), inv), Logits.dtype),
                       check_bounds=True)


@pytest.mark.parametrize("sm", SMS)
def test_cross_entropy_online_with_probabilities_written_in_place(sm):
    rng = _rng(20)
    rows, v = 6, 300
    logits = (rng.standard_normal((rows, v)) * 3).astype(np.float32)
    tgt = rng.integers(0, v, rows)
    tl = logits[np.arange(rows), tgt].copy()
    want_p = _softmax(logits)
    want_loss = np.log(np.exp(logits.astype(np.float64)).sum(1)) - tl
    loss = np.zeros(rows, np.float32)
    _launch(sm, (4,), cross_entropy_online, (logits, loss, tl, rows, v, 128))
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(logits, want_p, rtol=1e-5, atol=1e-8)


# ------------------------------------------------------------------------------ log-softmax + CE gradient with ignore_index
@ct.kernel
def log_softmax_ce_grad(X, Tgt, LogP, Grad, Loss, N: ConstInt, TILE: ConstInt, IGNORE: ConstInt):
    row = ct.bid(0)
    cols = ct.arange(TILE, dtype=ct.int32)
    x = ct.load(X, (row, 0), (1, TILE), padding_mode=ct.PaddingMode.NEG_INF)
    x = ct.reshape(x, (TILE,))
    shifted = x - ct.max(x, 0, keepdims=True)
    lse = ct.log(ct.sum(ct.exp(shifted), 0, keepdims=True))
    logp = shifted - lse
    ct.store(LogP, (row, 0), ct.reshape(logp, (1, TILE)))
    t = ct.load(Tgt, (row,), (1,))
    valid = t != IGNORE
    hit = cols == t
    loss = -ct.sum(ct.where(hit, logp, 0.0), 0, keepdims=True)
    ct.store(Loss, (row,), ct.where(valid, loss, 0.0))
    g = ct.exp(logp) - ct.where(hit, 1.0, 0.0)
    g = ct.where(valid, g, ct.zeros((TILE,), dtype=ct.float32)) / N
    ct.store(Grad, (row, 0), ct.reshape(g, (1, TILE)))


@pytest.mark.parametrize("sm", SMS)
def test_log_softmax_and_cross_entropy_gradient_with_ignored_rows(sm):
    rng = _rng(21)
    rows, v = 7, 45
    x = (rng.standard_normal((rows, v)) * 2).astype(np.float32)
    tgt = rng.integers(0, v, rows).astype(np.int32)
    tgt[2] = -100
    logp, grad = np.zeros_like(x), np.zeros_like(x)
    loss = np.full(rows, 3.0, np.float32)
    _launch(sm, (rows,), log_softmax_ce_grad, (x, tgt, logp, grad, loss, rows, 64, -100))
    p = _softmax(x)
    want_logp = np.log(p)
    np.testing.assert_allclose(logp, want_logp, rtol=1e-5, atol=1e-5)
    valid = tgt != -100
    want_loss = np.where(valid, -want_logp[np.arange(rows), np.clip(tgt, 0, None)], 0.0)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5, atol=1e-6)
    onehot = np.zeros_like(p)
    onehot[np.arange(rows)[valid], tgt[valid]] = 1
    np.testing.assert_allclose(grad, np.where(valid[:, None], p - onehot, 0) / rows, rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------ gated activations: ct.function, int64 indexing
SWIGLU_ACT = 3
RELU2_ACT = 7


def _activation(x, kind: ConstInt):
    if kind == SWIGLU_ACT:
        return x / (1.0 + ct.exp(-x))
    r = ct.maximum(x, 0.0)
    return r * r


@ct.function
def _gated_body(X, OUT, KIND: ConstInt, HALF: ConstInt, TI: ConstInt, NT: ConstInt):
    row = ct.bid(0)
    offs = ct.bid(1) * TI + ct.arange(TI, dtype=ct.int32)
    check = NT * TI != HALF
    gate = ct.astype(ct.gather(X, (row, offs), check_bounds=check, latency=1), ct.float32)
    up = ct.astype(ct.gather(X, (row, offs + HALF), check_bounds=check, latency=1), ct.float32)
    ct.scatter(OUT, (row, offs), ct.astype(_activation(gate, KIND) * up, OUT.dtype), check_bounds=check, latency=1)


@ct.kernel
def gated_act_i32(X, OUT, KIND: ConstInt, HALF: ConstInt, TI: ConstInt, NT: ConstInt):
    _gated_body(X, OUT, KIND, HALF, TI, NT)


@ct.kernel
def gated_act_i64(X: ct.IndexedWithInt64, OUT: ct.IndexedWithInt64, KIND: ConstInt, HALF: ConstInt, TI: ConstInt,
                  NT: ConstInt):
    _gated_body(X, OUT, KIND, HALF, TI, NT)


@pytest.mark.parametrize("sm", SMS)
def test_gated_activations_through_a_tile_function_with_int64_indexing(sm):
    rng = _rng(22)
    rows = 4
    for kernel in (gated_act_i32, gated_act_i64):
        for kind, i, ti in ((SWIGLU_ACT, 40, 16), (RELU2_ACT, 32, 16)):
            x = rng.standard_normal((rows, 2 * i)).astype(np.float16)
            out = np.zeros((rows, i), np.float16)
            nt = -(-i // ti)
            _launch(sm, (rows, nt), kernel, (x, out, kind, i, ti, nt))
            g, u = x[:, :i].astype(np.float64), x[:, i:].astype(np.float64)
            act = g * _sigmoid(g) if kind == SWIGLU_ACT else np.maximum(g, 0) ** 2
            np.testing.assert_allclose(out.astype(np.float64), act * u, rtol=4e-3, atol=4e-3)


# ------------------------------------------------------------------------------ embedding lookup: 2-D gather by id rows
@ct.kernel
def embedding_lookup(Ids, Table, Out, TT: ConstInt, TD: ConstInt, PAD_ID: ConstInt):
    t, d = ct.bid(0), ct.bid(1)
    ids = ct.load(Ids, (t,), (TT,), padding_mode=Z)
    cols = d * TD + ct.arange(TD, dtype=ct.int32)
    rows = ct.astype(ids, ct.int32)
    v = ct.gather(Table, (rows[:, None], cols[None, :]), mask=(ids != PAD_ID)[:, None], padding_value=0)
    ct.store(Out, (t, d), v)


@pytest.mark.parametrize("sm", SMS)
def test_embedding_lookup_with_int64_ids_and_a_padding_id(sm):
    rng = _rng(23)
    vocab, dim, ntok = 50, 37, 21
    table = rng.standard_normal((vocab, dim)).astype(np.float32)
    ids = rng.integers(0, vocab, ntok).astype(np.int64)
    ids[[3, 9]] = 0
    out = np.full((ntok, dim), 5.0, np.float32)
    _launch(sm, (-(-ntok // 8), -(-dim // 16)), embedding_lookup, (ids, table, out, 8, 16, 0))
    want = np.where((ids != 0)[:, None], table[ids], 0.0)
    np.testing.assert_array_equal(out, want)


# ------------------------------------------------------------------------------ fused residual add + RMSNorm, static_iter rows
@ct.kernel
def residual_rms_norm(X, Res, W, Y, ResOut, ROWS: ConstInt, TILE: ConstInt, EPS: ConstFloat):
    g = ct.bid(0)
    N = X.shape[1]
    w = ct.astype(ct.load(W, (0,), (TILE,), padding_mode=Z), ct.float32)
    for k in ct.static_iter(range(ROWS)):
        r = g * ROWS + k
        h = ct.astype(ct.load(X, (r, 0), (1, TILE), padding_mode=Z), ct.float32) + \
            ct.astype(ct.load(Res, (r, 0), (1, TILE), padding_mode=Z), ct.float32)
        ct.store(ResOut, (r, 0), ct.astype(h, ResOut.dtype))
        rstd = ct.rsqrt(ct.sum(h * h, axis=1, keepdims=True) / N + EPS)
        ct.store(Y, (r, 0), ct.astype(h * rstd * w[None, :], Y.dtype))


@pytest.mark.parametrize("sm", SMS)
def test_fused_residual_add_rms_norm_with_unrolled_rows(sm):
    rng = _rng(24)
    m, n = 10, 30
    x, res = rng.standard_normal((m, n)).astype(np.float16), rng.standard_normal((m, n)).astype(np.float16)
    w = rng.standard_normal(n).astype(np.float32)
    y, ro = np.zeros((m, n), np.float16), np.zeros((m, n), np.float16)
    _launch(sm, (-(-m // 4),), residual_rms_norm, (x, res, w, y, ro, 4, 32, 1e-6))
    h = x.astype(np.float64) + res
    np.testing.assert_array_equal(ro, h.astype(np.float16))
    want = h / np.sqrt((h * h).mean(1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=4e-3, atol=4e-3)


# ------------------------------------------------------------------------------ chunked cumsum with a carried total
@ct.kernel
def chunked_cumsum(X, Y, N: ConstInt, TILE: ConstInt):
    row = ct.bid(0)
    lanes = ct.arange(TILE, dtype=ct.int32)
    carry = ct.zeros((1,), dtype=ct.float32)
    for c in range(ct.cdiv(N, TILE)):
        cols = c * TILE + lanes
        v = ct.astype(ct.gather(X, (row, cols), padding_value=0), ct.float32)
        s = ct.cumsum(v, axis=0) + carry
        ct.scatter(Y, (row, cols), ct.astype(s, Y.dtype))
        carry = ct.reshape(ct.extract(s, (TILE - 1,), shape=(1,)), (1,))


@pytest.mark.parametrize("sm", SMS)
def test_chunked_cumsum_carrying_the_last_element(sm):
    rng = _rng(25)
    x = rng.integers(-5, 6, (4, 75)).astype(np.float32)
    y = np.zeros_like(x)
    _launch(sm, (4,), chunked_cumsum, (x, y, 75, 16))
    np.testing.assert_array_equal(y, np.cumsum(x, 1))


# ------------------------------------------------------------------------------ argmax over chunks, then top-k by masking
@ct.kernel
def chunked_argmax_topk(X, Idx, Val, N: ConstInt, TILE: ConstInt, K: ConstInt, ROW: ConstInt):
    row = ct.bid(0)
    lanes = ct.arange(TILE, dtype=ct.int32)
    best = ct.full((1,), -math.inf, dtype=ct.float32)
    best_i = ct.full((1,), -1, dtype=ct.int32)
    for c in range(ct.cdiv(N, TILE)):
        v = ct.gather(X, (row, c * TILE + lanes), padding_value=-math.inf)
        m = ct.max(v, 0, keepdims=True)
        i = ct.reshape(ct.argmax(v, 0), (1,)) + c * TILE
        better = m > best
        best_i = ct.where(better, i, best_i)
        best = ct.where(better, m, best)
    ct.store(Idx, (row, 0), ct.reshape(best_i, (1, 1)))
    vals = ct.load(X, (row, 0), (1, ROW), padding_mode=ct.PaddingMode.NEG_INF)
    cols = ct.arange(ROW, dtype=ct.int32)[None, :]
    for k in range(K):
        j = ct.argmax(vals, 1, keepdims=True)
        ct.store(Val, (row, k), ct.max(vals, 1, keepdims=True))
        vals = ct.where(cols == j, -math.inf, vals)


@pytest.mark.parametrize("sm", SMS)
def test_chunked_argmax_and_top_k_by_masking_the_winner(sm):
    rng = _rng(26)
    rows, n, k = 5, 60, 3
    x = rng.permutation(rows * n).reshape(rows, n).astype(np.float32)
    idx, val = np.zeros((rows, 1), np.int32), np.zeros((rows, k), np.float32)
    _launch(sm, (rows,), chunked_argmax_topk, (x, idx, val, n, 16, k, 64))
    np.testing.assert_array_equal(idx[:, 0], x.argmax(1))
    np.testing.assert_array_equal(val, -np.sort(-x, 1)[:, :k])


# ------------------------------------------------------------------------------ work stealing: an atomic tile counter
@ct.kernel
def work_stealing_scale(X, Y, Counter, TILES: ConstInt, TILE: ConstInt):
    t = ct.atomic_add(Counter, 0, 1)
    while t < TILES:
        ct.store(Y, (t,), ct.load(X, (t,), (TILE,), padding_mode=Z) * 3.0 + ct.astype(t, ct.float32))
        t = ct.atomic_add(Counter, 0, 1)


@pytest.mark.parametrize("sm", SMS)
def test_work_stealing_loop_on_an_atomic_counter(sm):
    n, tile = 150, 16
    tiles = -(-n // tile)
    x = np.arange(n, dtype=np.float32)
    y, counter = np.zeros(n, np.float32), np.zeros(1, np.int32)
    _launch(sm, (3,), work_stealing_scale, (x, y, counter, tiles, tile))
    np.testing.assert_array_equal(y, x * 3 + np.arange(n) // tile)
    assert counter[0] == tiles + 3


# ------------------------------------------------------------------------------ copies with many tile shapes and orders
@ct.kernel
def copy_3d_tiles(In, Out, T0: ConstInt, T1: ConstInt, T2: ConstInt):
    i = (ct.bid(0), ct.bid(1), ct.bid(2))
    ct.store(Out, i, ct.load(In, i, (T0, T1, T2), padding_mode=Z, latency=2, allow_tma=True), latency=2)


@ct.kernel
def copy_transposed_order(In, Out, TA: ConstInt, TB: ConstInt):
    a, b = ct.bid(0), ct.bid(1)
    t = ct.load(In, (a, b), (TA, TB), order=(1, 0), padding_mode=Z)  # In is (M, N): a tile of In^T
    ct.store(Out, (a, b), t)


@pytest.mark.parametrize("sm", SMS)
def test_copies_with_3d_tiles_and_a_transposing_order(sm):
    rng = _rng(27)
    x = rng.standard_normal((5, 9, 13)).astype(np.float32)
    for shape in ((1, 16, 1), (2, 1, 8), (4, 4, 4), (1, 1, 32)):
        y = np.zeros_like(x)
        grid = tuple(-(-d // s) for d, s in zip(x.shape, shape))
        _launch(sm, grid, copy_3d_tiles, (x, y, *shape))
        np.testing.assert_array_equal(y, x)
    a = rng.standard_normal((23, 41)).astype(np.float16)
    out = np.zeros((41, 23), np.float16)
    _launch(sm, (-(-41 // 16), -(-23 // 8)), copy_transposed_order, (a, out, 16, 8))
    np.testing.assert_array_equal(out, a.T)


# ------------------------------------------------------------------------------ LayerNorm backward: dx and atomically summed dw
@ct.kernel
def layer_norm_bwd(X, DY, W, Mean, Rstd, DX, DW, DB, N: ConstInt, TILE: ConstInt):
    row = ct.bid(0)
    cols = ct.arange(TILE, dtype=ct.int32)
    ok = cols < N
    x = ct.astype(ct.gather(X, (row, cols), padding_value=0), ct.float32)
    dy = ct.astype(ct.gather(DY, (row, cols), padding_value=0), ct.float32)
    w = ct.gather(W, cols, padding_value=0)
    mean = ct.load(Mean, (row,), shape=()).item()
    rstd = ct.load(Rstd, (row,), shape=()).item()
    xhat = ct.where(ok, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = ct.sum(xhat * wdy, axis=0) / N
    c2 = ct.sum(wdy, axis=0) / N
    ct.scatter(DX, (row, cols), ct.astype((wdy - (xhat * c1 + c2)) * rstd, DX.dtype))
    ct.scatter(DW, (row, cols), dy * xhat)
    ct.atomic_add(DB, cols, ct.where(ok, dy, 0.0))


@pytest.mark.parametrize("sm", SMS)
def test_layer_norm_backward_dx_with_0d_statistic_loads_and_atomic_db(sm):
    rng = _rng(28)
    m, n = 9, 27
    x = rng.standard_normal((m, n)).astype(np.float32)
    dy = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    mu, r = _ln_ref(x, 1, 1e-5)
    mean, rstd = mu[:, 0].astype(np.float32), r[:, 0].astype(np.float32)
    dx, dwp, db = np.zeros_like(x), np.zeros_like(x), np.zeros(n, np.float32)
    _launch(sm, (m,), layer_norm_bwd, (x, dy, w, mean, rstd, dx, dwp, db, n, 32))
    xhat = (x - mu) * r
    wdy = w * dy
    want = (wdy - (xhat * (xhat * wdy).mean(1, keepdims=True) + wdy.mean(1, keepdims=True))) * r
    np.testing.assert_allclose(dx, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dwp.sum(0), (dy * xhat).sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(db, dy.sum(0), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ block-scaled FP4 quantisation with swizzled scales
FP4_MAX = 6.0
E4M3_TINY = 1.5258789e-05


@ct.kernel(occupancy=2)
def fp4_block_quant(X, Scales, Packed, SEnc, NNB: ConstInt, NMB: ConstInt, COLS: ConstInt, ROWS: ConstInt,
                    COL_MASK: ConstBool, ROW_MASK: ConstBool):
    bn, bm = ct.bid(0), ct.bid(1)
    blk = ct.reshape(ct.astype(ct.load(X, index=(bm, bn), shape=(32, 32), padding_mode=Z), ct.float32), (32, 2, 16))
    bmax = ct.max(ct.abs(blk), axis=2, keepdims=True)
    s_enc = ct.reshape(ct.load(SEnc, index=(0,), shape=(1,)), (1, 1, 1))
    pre = ct.maximum((bmax / FP4_MAX) * s_enc, E4M3_TINY)
    if COL_MASK and bn == NNB - 1:
        pre = ct.where(ct.reshape(ct.arange(2, dtype=ct.int32), (1, 2, 1)) < (COLS % 32) // 16, pre, 0.0)
    if ROW_MASK and bm == NMB - 1:
        pre = ct.where(ct.reshape(ct.arange(32, dtype=ct.int32), (32, 1, 1)) < ROWS % 32, pre, 0.0)
    s8 = ct.astype(pre, ct.float8_e4m3fn)
    swz = ct.reshape(ct.permute(ct.reshape(ct.bitcast(s8, np.uint8), (2, 16, 1, 2)), (2, 1, 0, 3)), (64,))
    ct.store(Scales, index=(bm * NNB + bn,), tile=swz)
    fp4 = ct.astype(blk * (s_enc / ct.astype(s8, ct.float32)), ct.float4_e2m1fn)
    ct.store(Packed, index=(bm, bn), tile=ct.reshape(ct.pack_to_bytes(fp4), (32, 16)))


def _fp4_quant_ref(x, s_enc, nmb, nnb):
    from tilecore.narrow_floats import decode, encode

    enc8 = np.vectorize(lambda v: encode(float(v), "f8E4M3FN"))
    enc4 = np.vectorize(lambda v: encode(float(v), "f4E2M1FN"))
    dec8 = np.vectorize(lambda c: decode(int(c), "f8E4M3FN"))
    rows, cols = x.shape
    xp = np.zeros((nmb * 32, nnb * 32), np.float32)
    xp[:rows, :cols] = x
    g = xp.reshape(nmb * 32, nnb * 2, 16)
    pre = np.maximum((np.abs(g).max(2) / np.float32(FP4_MAX)) * np.float32(s_enc), np.float32(E4M3_TINY))
    pre[rows:, :] = 0
    pre[:, -(-cols // 16):] = 0
    s8 = enc8(pre.astype(np.float32)).astype(np.uint8)
    scales = np.zeros(nmb * nnb * 64, np.uint8)
    for r in range(nmb * 32):
        for c in range(nnb * 2):
            bm, bn, rr, cc = r // 32, c // 2, r % 32, c % 2
            scales[(bm * nnb + bn) * 64 + (rr % 16) * 4 + (rr // 16) * 2 + cc] = s8[r, c]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = enc4((g * (np.float32(s_enc) / dec8(s8).astype(np.float32))[:, :, None]).astype(np.float32))
    q = q.reshape(nmb * 32, nnb * 32).astype(np.uint8)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)
    return scales, packed[:rows, :cols // 2]


@pytest.mark.parametrize("sm", ["sm_100a"])
def test_fp4_block_quantisation_with_permuted_scale_swizzle_and_byte_packing(sm):
    """Found a bug: ``pack_to_bytes`` of the E2M1 tile gave one code per byte (the shared-memory exchange read the i8
    register each code is held in), so the packed rows held the first half of the codes only (fixed in
    shape_ops.pack; regression test in plugins/tileas/tests/test_narrow_float.py)."""
    rng = _rng(29)
    rows, cols = 40, 48
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    nmb, nnb = -(-rows // 32), -(-cols // 32)
    scales = np.zeros(nmb * nnb * 64, np.uint8)
    packed = np.zeros((rows, cols // 2), np.uint8)
    s_enc = np.array([1.0], np.float32)
    _launch(sm, (nnb, nmb), fp4_block_quant, (x, scales, packed, s_enc, nnb, nmb, cols, rows, cols % 32 != 0,
                                              rows % 32 != 0))
    want_s, want_p = _fp4_quant_ref(x, 1.0, nmb, nnb)
    np.testing.assert_array_equal(scales, want_s)
    np.testing.assert_array_equal(packed, want_p)


# ------------------------------------------------------------------------------ hyper-connections: narrowed views, dynamic extract
LOG2E = 1.4426950408889634


@ct.kernel
def hc_apply_residual(X, F, YPost, YRes, Out, C: int, NS: ConstInt, TC: ConstInt):
    row, ctile = ct.bid(0), ct.bid(1)
    cd = ct.float32 if (X.dtype == ct.float32 or F.dtype == ct.float32) else X.dtype
    f = ct.astype(ct.load(F, index=(row, ctile), shape=(1, TC), padding_mode=Z), cd)
    hp = ct.astype(ct.reshape(ct.load(YPost, index=(row, 0), shape=(1, NS), padding_mode=Z), (NS, 1)), cd)
    hr = ct.astype(ct.reshape(ct.load(YRes, index=(row, 0, 0), shape=(1, NS, NS), padding_mode=Z), (NS, NS)), cd)
    acc = ct.full((NS, TC), 0.0, dtype=cd)
    for j in range(NS):
        xr = ct.astype(ct.reshape(ct.load(X, index=(row, j, ctile), shape=(1, 1, TC), padding_mode=Z), (1, TC)), cd)
        acc = acc + ct.broadcast_to(ct.extract(hr, (0, j), shape=(NS, 1)), (NS, TC)) * ct.broadcast_to(xr, (NS, TC))
    out = acc + ct.broadcast_to(hp, (NS, TC)) * ct.broadcast_to(f, (NS, TC))
    ct.store(Out, index=(row, 0, ctile), tile=ct.reshape(ct.astype(out, Out.dtype), (1, NS, TC)))


@ct.kernel
def hc_sinkhorn(Y, ROWS: ConstInt, NS: ConstInt, ITERS: ConstInt):
    r = ct.bid(0)
    m = ct.exp2(ct.astype(ct.reshape(ct.load(Y, index=(r, 0), shape=(ROWS, NS * NS), padding_mode=Z),
                                     (ROWS, NS, NS)), ct.float32) * LOG2E)
    for _ in range(ITERS):
        m = ct.truediv(m, ct.sum(m, axis=2, keepdims=True))
        m = ct.truediv(m, ct.sum(m, axis=1, keepdims=True))
    ct.store(Y, index=(r, 0), tile=ct.astype(ct.reshape(m, (ROWS, NS * NS)), Y.dtype))


@ct.kernel
def hc_finalize(Acc, RAcc, Y, R, n: int, a_pre: float, a_post: float, a_res: float, Bias, K: int, TM: ConstInt,
                TN: ConstInt):
    bm, bn = ct.bid(0), ct.bid(1)
    y = ct.load(Acc, index=(bm, bn), shape=(TM, TN), padding_mode=Z)
    rms = ct.sqrt(ct.truediv(ct.load(RAcc, index=(bm, 0), shape=(TM, 1), padding_mode=Z),
                             ct.full((TM, 1), K * 1.0, dtype=ct.float32)))
    if bn == 0:
        ct.store(R, index=(bm, 0), tile=ct.astype(rms, R.dtype))
    cols = bn * TN + ct.arange(TN, dtype=ct.int32)
    one, zero = ct.full((TN,), 1.0, dtype=ct.float32), ct.full((TN,), 0.0, dtype=ct.float32)
    pre = ct.where(ct.less(cols, n), one, zero)
    post = ct.where(ct.less(cols, 2 * n), one, zero) - pre
    res = one - pre - post
    scale = ct.reshape(a_pre * pre + a_post * post + a_res * res, (1, TN))
    lin = ct.truediv(y * scale, rms) + ct.reshape(ct.load(Bias, index=(bn,), shape=(TN,), padding_mode=Z), (1, TN))
    sg = 1.0 / (1.0 + ct.exp(-lin))
    out = lin * ct.reshape(res, (1, TN)) + sg * ct.reshape(pre, (1, TN)) + 2.0 * sg * ct.reshape(post, (1, TN))
    ct.store(Y, index=(bm, bn), tile=ct.astype(out, Y.dtype))


@pytest.mark.parametrize("sm", SMS)
def test_hyper_connection_kernels_on_narrowed_views_with_runtime_scalars(sm):
    rng = _rng(30)
    b, ns, c = 3, 4, 40
    x = rng.standard_normal((b, ns * c)).astype(np.float32)
    f = rng.standard_normal((b, c)).astype(np.float32)
    y = rng.standard_normal((b, 2 * ns + ns * ns)).astype(np.float32)
    y_post, y_res = y[:, ns:2 * ns], y[:, 2 * ns:].reshape(b, ns, ns)
    out = np.zeros_like(x)
    _launch(sm, (b, 3), hc_apply_residual, (x.reshape(b, ns, c), f, y_post, y_res, out.reshape(b, ns, c), c, ns, 16))
    want = np.einsum("bij,bjc->bic", y_res, x.reshape(b, ns, c)) + y_post[:, :, None] * f[:, None, :]
    np.testing.assert_allclose(out.reshape(b, ns, c), want, rtol=1e-5, atol=1e-5)

    rows = 5
    yy = rng.standard_normal((rows, 2 * ns + ns * ns)).astype(np.float32)
    view = yy[:, 2 * ns:]
    want = np.exp(view.astype(np.float64).reshape(rows, ns, ns))
    for _ in range(6):
        want /= want.sum(2, keepdims=True)
        want /= want.sum(1, keepdims=True)
    keep = yy[:, :2 * ns].copy()
    _launch(sm, (1,), hc_sinkhorn, (view, 8, ns, 6))
    np.testing.assert_allclose(view.reshape(rows, ns, ns), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(yy[:, :2 * ns], keep)

    m, n_out, n, k = 13, 3 * 4 + 16, 4, 50
    acc = rng.standard_normal((m, n_out)).astype(np.float32)
    racc = rng.uniform(1, 5, (m, 1)).astype(np.float32) * k
    bias = rng.standard_normal(n_out).astype(np.float32)
    yo, ro = np.zeros((m, n_out), np.float32), np.zeros((m, 1), np.float32)
    _launch(sm, (2, 4), hc_finalize, (acc, racc, yo, ro, n, 0.5, 1.5, 0.25, bias, k, 8, 8))
    rms = np.sqrt(racc.astype(np.float64) / k)
    col = np.arange(n_out)
    scale = np.where(col < n, 0.5, np.where(col < 2 * n, 1.5, 0.25))
    lin = acc * scale / rms + bias
    sg = _sigmoid(lin)
    np.testing.assert_allclose(ro, rms, rtol=1e-6)
    np.testing.assert_allclose(yo, np.where(col < n, sg, np.where(col < 2 * n, 2 * sg, lin)), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------ SSD-style chunk scan: decay cumsum, causal exp2 mask
def _chunk_tile(bt, hd, ck, X, DT, A, Y, Last, CH: ConstInt, BH: ConstInt):
    """One (batch, head, chunk) tile of an SSD-like scan without a state: y_i = sum_{j <= i} 2^(d_i - d_j) dt_j x_j
    with d the in-chunk cumsum of dt * a (a plain helper of the kernel below)."""
    dt = ct.load(DT, index=(bt, hd, ck), shape=(1, 1, CH), padding_mode=Z).reshape((CH,)).astype(ct.float32)
    a = ct.load(A, index=(hd,), shape=(1,))
    d = ct.cumsum(dt * a, axis=0)
    idx = ct.arange(CH, dtype=ct.int32)
    w = ct.exp2(ct.where(idx[:, None] >= idx[None, :], d[:, None] - d[None, :], -1.0e30))
    x = ct.load(X, index=(bt, ck, hd, 0), shape=(1, CH, 1, BH), padding_mode=Z).reshape((CH, BH)).astype(ct.float32)
    y = ct.sum(ct.reshape(w, (CH, CH, 1)) * ct.reshape(dt[:, None] * x, (1, CH, BH)), axis=1)
    ct.store(Y, index=(bt, ck, hd, 0), tile=y.reshape((1, CH, 1, BH)).astype(Y.dtype), latency=2)
    ct.store(Last, index=(bt, hd, ck), tile=ct.extract(d, index=(CH - 1,), shape=(1,)).reshape((1, 1, 1)))


@ct.kernel
def ssd_chunk_scan(X, DT, A, Y, Last, CH: ConstInt, BH: ConstInt):
    chunks = X.shape[1] // CH
    heads = X.shape[2]
    total = chunks * heads * X.shape[0]
    for t in range(ct.bid(0), total, ct.num_blocks(0)):
        hd = t % heads
        rest = t // heads
        _chunk_tile(rest // chunks, hd, rest % chunks, X, DT, A, Y, Last, CH, BH)


@pytest.mark.parametrize("sm", SMS)
def test_ssd_style_chunk_scan_with_causal_exp2_decay_and_index_decomposition(sm):
    rng = _rng(31)
    b, ch, nck, h, hdim = 2, 8, 3, 3, 5
    x = rng.standard_normal((b, ch * nck, h, hdim)).astype(np.float32)
    dt = rng.uniform(0.05, 0.5, (b, h, ch * nck)).astype(np.float32)
    a = -rng.uniform(0.5, 2, h).astype(np.float32)
    y = np.zeros_like(x)
    last = np.zeros((b, h, nck), np.float32)
    _launch(sm, (4,), ssd_chunk_scan, (x, dt, a, y, last, ch, 8))
    want_y, want_last = np.zeros_like(x, dtype=np.float64), np.zeros((b, h, nck))
    for bi in range(b):
        for hi in range(h):
            for c in range(nck):
                s = slice(c * ch, (c + 1) * ch)
                d = np.cumsum(dt[bi, hi, s].astype(np.float64) * a[hi])
                w = np.tril(np.exp2(d[:, None] - d[None, :]))
                want_y[bi, s, hi] = w @ (dt[bi, hi, s, None] * x[bi, s, hi])
                want_last[bi, hi, c] = d[-1]
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(last, want_last, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------ multi-tensor apply: lists of arrays
@ct.kernel
def foreach_axpy_sq_norm(Xs, Ys, Norms, alpha: float, TILE: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    x, y = Xs[i], Ys[i]
    if j * TILE < x.shape[0]:
        xv = ct.astype(ct.load(x, (j,), (TILE,), padding_mode=Z), ct.float32)
        yv = ct.astype(ct.load(y, (j,), (TILE,), padding_mode=Z), ct.float32) + alpha * xv
        ct.store(y, (j,), ct.astype(yv, y.dtype))
        ct.atomic_add(Norms, i, ct.sum(yv * yv))


@pytest.mark.parametrize("sm", SMS)
def test_multi_tensor_apply_over_lists_of_arrays_of_different_lengths(sm):
    rng = _rng(32)
    sizes = (70, 5, 33, 130)
    xs = [rng.standard_normal(n).astype(np.float16) for n in sizes]
    ys = [rng.standard_normal(n).astype(np.float16) for n in sizes]
    want = [(y.astype(np.float32) + np.float32(0.5) * x.astype(np.float32)) for x, y in zip(xs, ys)]
    norms = np.zeros(len(sizes), np.float32)
    _launch(sm, (len(sizes), -(-max(sizes) // 32)), foreach_axpy_sq_norm, (xs, ys, norms, 0.5, 32))
    for y, w in zip(ys, want):
        np.testing.assert_array_equal(y, w.astype(np.float16))
    np.testing.assert_allclose(norms, [float((w.astype(np.float64) ** 2).sum()) for w in want], rtol=1e-5)


# ------------------------------------------------------------------------------ grouped MXFP8 quantisation: slices, binary search
QBM, QBK, QGK = 16, 64, 32  # rows per tile, columns per tile, columns per E8M0 scale
MAX_GROUPS = 8


@ct.kernel(opt_level=3)
def mx_prefix_tiles(Sizes, TileOffsets, k_tiles):
    m = ct.reshape(ct.load(Sizes, (0, 0), shape=(MAX_GROUPS, 1), padding_mode=Z), (MAX_GROUPS,))
    counts = (m + QBM - 1) // QBM * k_tiles
    ct.store(TileOffsets, (0,), ct.full((1,), 0, dtype=ct.int32))
    ct.scatter(TileOffsets, ct.arange(MAX_GROUPS, dtype=ct.int32) + 1, ct.cumsum(counts, axis=0), check_bounds=False)


@ct.function
def _e8m0_byte(x):
    e = ct.ceil(ct.log2(ct.maximum(x, 5.877471754111438e-39))).astype(ct.int32) + 127
    return ct.where(x == 0.0, 0, ct.minimum(ct.maximum(e, 0), 254)).astype(ct.uint8)


@ct.kernel(opt_level=3, occupancy=4)
def mx_grouped_quant(In: ct.IndexedWithInt64, Sizes, RowOffsets, TileOffsets, Out: ct.IndexedWithInt64, ScaleFlat):
    groups = Sizes.shape[0]
    total = ct.load(TileOffsets, (groups,), shape=()).item()
    k_tiles = In.shape[1] // QBK
    t = ct.bid(0)
    while t < total:
        lo = 0
        hi = groups
        while lo + 1 < hi:
            mid = (lo + hi) // 2
            if t < ct.load(TileOffsets, (mid,), shape=()).item():
                hi = mid
            else:
                lo = mid
        local = t - ct.load(TileOffsets, (lo,), shape=()).item()
        mt = local // k_tiles
        kt = local - mt * k_tiles
        m = ct.load(Sizes, (lo, 0), shape=()).item()
        r0 = ct.load(RowOffsets, (lo,), shape=()).item()
        src = In.slice(axis=0, start=r0, stop=r0 + m)
        dst = Out.slice(axis=0, start=r0, stop=r0 + m)
        g = ct.reshape(ct.load(src, (mt, kt), shape=(QBM, QBK), padding_mode=Z, latency=8).astype(ct.float32),
                       (QBM, QBK // QGK, QGK))
        amax = ct.max(ct.abs(g), axis=2)
        sb = _e8m0_byte(amax / 448.0)
        inv = ct.where(amax != 0.0, ct.exp2(127.0 - sb.astype(ct.float32)), 0.0)
        q = ct.reshape(g * ct.expand_dims(inv, 2), (QBM, QBK)).astype(ct.float8_e4m3fn)
        ct.store(dst, (mt, kt), ct.bitcast(q, ct.uint8), latency=8)
        rows = ct.reshape(ct.arange(QBM, dtype=ct.int32), (QBM, 1))
        cols = ct.reshape(ct.arange(QBK // QGK, dtype=ct.int32), (1, QBK // QGK))
        base = (r0 // QBM * k_tiles + mt * k_tiles + kt) * (QBM * QBK // QGK)
        ct.scatter(ScaleFlat, base + (rows % 8) * 4 + (rows // 8) * 2 + cols, sb, check_bounds=False, latency=2)
        t = t + ct.num_blocks(0)


def _mx_quant_ref(x, sizes, row_offsets, k_tiles):
    from tilecore.narrow_floats import encode

    enc8 = np.vectorize(lambda v: encode(float(v), "f8E4M3FN"))
    q = np.full(x.shape, 0x77, np.uint8)  # rows of no group keep what they held
    scales = {}
    for m, r0 in zip(sizes, row_offsets):
        for mt in range(-(-m // QBM)):
            for kt in range(k_tiles):
                blk = np.zeros((QBM, QBK), np.float32)
                rows = x[r0 + mt * QBM:r0 + min(m, (mt + 1) * QBM), kt * QBK:(kt + 1) * QBK]
                blk[:rows.shape[0]] = rows
                grp = blk.reshape(QBM, QBK // QGK, QGK)
                amax = np.abs(grp).max(2)
                e = np.clip(np.ceil(np.log2(np.maximum(amax / np.float32(448.0), 5.877471754111438e-39))) + 127,
                            0, 254)
                sb = np.where(amax == 0, 0, e).astype(np.uint8)
                inv = np.where(amax != 0, np.exp2(127.0 - sb.astype(np.float32)), 0).astype(np.float32)
                qb = enc8((grp * inv[:, :, None]).reshape(QBM, QBK)).astype(np.uint8)
                q[r0 + mt * QBM:r0 + mt * QBM + rows.shape[0], kt * QBK:(kt + 1) * QBK] = qb[:rows.shape[0]]
                base = (r0 // QBM * k_tiles + mt * k_tiles + kt) * (QBM * QBK // QGK)
                for r in range(QBM):
                    for c in range(QBK // QGK):
                        scales[base + (r % 8) * 4 + (r // 8) * 2 + c] = sb[r, c]
    return q, scales


@pytest.mark.parametrize("sm", ["sm_90a", "sm_100a"])
def test_grouped_mx_quantisation_with_array_slices_and_a_binary_search_schedule(sm):
    rng = _rng(33)
    sizes = np.array([20, 0, 5, 33], np.int32)
    k = 2 * QBK
    row_offsets = np.array([0, 32, 32, 48], np.int32)  # each group starts on a QBM boundary
    x = (rng.standard_normal((96, k)) * 50).astype(np.float16)
    x[3, :QGK] = 0  # a group of zeros: scale byte 0
    sz = np.zeros((len(sizes), 3), np.int32)
    sz[:, 0] = sizes
    offs = np.zeros(MAX_GROUPS + 1, np.int32)
    _launch(sm, (1,), mx_prefix_tiles, (sz, offs, k // QBK))
    counts = -(-sizes // QBM) * (k // QBK)
    np.testing.assert_array_equal(offs[:len(sizes) + 1], np.concatenate([[0], np.cumsum(counts)]))
    out = np.full(x.shape, 0x77, np.uint8)
    scale_flat = np.full(96 // QBM * (k // QBK) * QBM * (QBK // QGK), 0xEE, np.uint8)
    _launch(sm, (3,), mx_grouped_quant, (x, sz, row_offsets, offs, out, scale_flat))
    want_q, want_s = _mx_quant_ref(x.astype(np.float32), sizes, row_offsets, k // QBK)
    np.testing.assert_array_equal(out, want_q)
    for i, v in want_s.items():
        assert scale_flat[i] == v, i


# ------------------------------------------------------------------------------ MoE activation backward epilogue: nested slices
ACT_SWIGLU, ACT_GEGLU, ACT_RELU_SQ = 0, 1, 6


def _sig_tanh(x):
    return 0.5 * (1.0 + ct.tanh(0.5 * x, rounding_mode=APPROX))


def _erf_as(x):
    """Abramowitz-Stegun 7.1.26 erf with its exp(-x^2) term, as a Horner polynomial."""
    ax = ct.abs(x)
    t = ct.truediv(1.0, 1.0 + 0.3275911 * ax, flush_to_zero=True, rounding_mode=APPROX)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    e = ct.exp2(-ax * ax * 1.4426950408889634, flush_to_zero=True)
    r = 1.0 - poly * e
    return ct.where(x >= 0.0, r, -r), e


def _glu_grad(g, u, dy, ACT: ConstInt):
    if ACT == ACT_SWIGLU:
        s = _sig_tanh(g)
        f = g * s
        return dy * u * (s * (1.0 + g * (1.0 - s))), dy * f, f * u
    erf, e = _erf_as(g * 0.7071067811865475)
    f = 0.5 * g * (1.0 + erf)
    fp = 0.5 * (1.0 + erf) + g * (0.3989422804014327 * e)
    return dy * u * fp, dy * f, f * u


@ct.kernel
def moe_act_bwd(DY, GatherIdx, Scores, ScoreIdx, Offsets, ZIn, DZ, Y1S, DS, NI: ConstInt, BM: ConstInt, BN: ConstInt,
                ACT: ConstInt, IS_GLU: ConstInt, NSUB: ConstInt):
    pm, pn, ex = ct.bid(0), ct.bid(1), ct.bid(2)
    start = ct.load(Offsets, index=(ex,), shape=(1,)).item()
    ntok = ct.load(Offsets, index=(ex + 1,), shape=(1,)).item() - start
    if ntok <= 0:
        return
    if pm * BM >= ntok:
        return
    m_offs = pm * BM + ct.arange(BM, dtype=ct.int32)
    tok = start + m_offs
    rows = ct.gather(GatherIdx, (tok,), check_bounds=True, padding_value=0)
    s = ct.gather(Scores, (ct.gather(ScoreIdx, (tok,), padding_value=0),), padding_value=0.0)[:, None]
    n_offs = pn * BN + ct.arange(BN, dtype=ct.int32)
    dy = ct.gather(DY, (rows[:, None], n_offs[None, :]), padding_value=0.0, latency=10)
    dy = ct.where((n_offs < NI)[None, :], dy, 0.0)
    z = ZIn.slice(axis=0, start=start, stop=start + ntok)
    dz = DZ.slice(axis=0, start=start, stop=start + ntok)
    y1s = Y1S.slice(axis=0, start=start, stop=start + ntok)
    if IS_GLU:
        zg, zu = z.slice(axis=1, start=0, stop=NI), z.slice(axis=1, start=NI, stop=2 * NI)
        dg_v, du_v = dz.slice(axis=1, start=0, stop=NI), dz.slice(axis=1, start=NI, stop=2 * NI)
        BS = BN // NSUB
        ds = ct.zeros((BM,), dtype=ct.float32)
        for j in range(NSUB):
            cb = pn * NSUB + j
            dyj = ct.extract(dy, index=(0, j), shape=(BM, BS))
            g = ct.load(zg, index=(pm, cb), shape=(BM, BS), padding_mode=Z).astype(ct.float32)
            u = ct.load(zu, index=(pm, cb), shape=(BM, BS), padding_mode=Z).astype(ct.float32)
            dg, du, f = _glu_grad(g, u, dyj, ACT)
            ds = ds + ct.sum(dyj * f, axis=1)
            ct.store(dg_v, index=(pm, cb), tile=(dg * s).astype(DZ.dtype), allow_tma=False)
            ct.store(du_v, index=(pm, cb), tile=(du * s).astype(DZ.dtype), allow_tma=False)
            ct.store(y1s, index=(pm, cb), tile=(f * s).astype(Y1S.dtype), allow_tma=False)
    else:
        x = ct.load(z, index=(pm, pn), shape=(BM, BN), padding_mode=Z).astype(ct.float32)
        r = ct.maximum(x, 0.0)
        ds = ct.sum(dy * (r * r), axis=1)
        ct.store(dz, index=(pm, pn), tile=(dy * 2.0 * r * s).astype(DZ.dtype), allow_tma=False)
        ct.store(y1s, index=(pm, pn), tile=(r * r * s).astype(Y1S.dtype), allow_tma=False)
    ct.atomic_add(DS, (tok,), ct.where(m_offs < ntok, ds, 0.0), check_bounds=True,
                  memory_order=ct.MemoryOrder.RELAXED)


def _moe_act_bwd_ref(dy_rows, z, s, act, i_dim):
    from math import erf

    if act == ACT_RELU_SQ:
        r = np.maximum(z, 0)
        return dy_rows * 2 * r * s, None, r * r * s, (dy_rows * r * r).sum(1)
    g, u = z[:, :i_dim], z[:, i_dim:]
    if act == ACT_SWIGLU:
        sg = _sigmoid(g)
        f = g * sg
        dg, du = dy_rows * u * sg * (1 + g * (1 - sg)), dy_rows * f
    else:
        erf_v = np.vectorize(erf)(g / np.sqrt(2))
        f = 0.5 * g * (1 + erf_v)
        dg, du = dy_rows * u * (0.5 * (1 + erf_v) + g * np.exp(-g * g / 2) / np.sqrt(2 * np.pi)), dy_rows * f
    return dg * s, du * s, f * u * s, (dy_rows * f * u).sum(1)


@pytest.mark.parametrize("sm", SMS)
def test_moe_activation_backward_epilogue_with_nested_slices_and_early_returns(sm):
    rng = _rng(34)
    i_dim, n_in, bm, bn = 40, 30, 8, 32
    offsets = np.array([0, 11, 11, 25], np.int32)  # three experts, the middle one empty
    total = int(offsets[-1])
    gidx = rng.integers(0, n_in, total).astype(np.int32)
    sidx = rng.permutation(total).astype(np.int32)
    scores = rng.uniform(0.1, 1, total).astype(np.float32)
    dy = rng.standard_normal((n_in, i_dim)).astype(np.float32)
    grid = (-(-14 // bm), -(-i_dim // bn), 3)
    for act, glu, nsub in ((ACT_SWIGLU, 1, 2), (ACT_GEGLU, 1, 1), (ACT_RELU_SQ, 0, 1)):
        width = 2 * i_dim if glu else i_dim
        z = rng.standard_normal((total, width)).astype(np.float32)
        dz, y1s = np.full((total, width), 9.0, np.float32), np.full((total, i_dim), 9.0, np.float32)
        ds = np.zeros(total, np.float32)
        _launch(sm, grid, moe_act_bwd, (dy, gidx, scores, sidx, offsets, z, dz, y1s, ds, i_dim, bm, bn, act, glu,
                                        nsub))
        s = scores[sidx][:, None].astype(np.float64)
        dg, du, y, dsw = _moe_act_bwd_ref(dy[gidx].astype(np.float64), z.astype(np.float64), s, act, i_dim)
        tol = dict(rtol=2e-4, atol=2e-4) if act != ACT_GEGLU else dict(rtol=2e-3, atol=2e-3)  # A&S erf: 1.5e-7 abs
        np.testing.assert_allclose(dz[:, :i_dim], dg, **tol)
        if du is not None:
            np.testing.assert_allclose(dz[:, i_dim:], du, **tol)
        np.testing.assert_allclose(y1s, y, **tol)
        np.testing.assert_allclose(ds, dsw, **tol)


# ------------------------------------------------------------------------------ split-K partial sums over a grouped tile order
def _grouped_tile(tile_id, per_group, n_m, GROUP: ConstInt):
    g = tile_id // per_group
    first = g * GROUP
    size = ct.minimum(n_m - first, GROUP)
    return first + tile_id % size, (tile_id % per_group) // size


@ct.kernel
def split_k_row_stats(X, SumAcc, SqAcc, M: int, N: int, K: int, TM: ConstInt, TN: ConstInt, TK: ConstInt,
                      SPLIT: ConstInt, GROUP: ConstInt):
    n_m, n_n = ct.cdiv(M, TM), ct.cdiv(N, TN)
    bm, bn = _grouped_tile(ct.bid(0), GROUP * n_n, n_m, GROUP)
    sk = ct.bid(1)
    kt = ct.cdiv(K, TK)
    per = ct.cdiv(kt, SPLIT)
    lo = sk * per
    hi = ct.minimum(lo + per, kt)
    s = ct.full((TM,), 0.0, dtype=ct.float32)
    q = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(lo, hi):
        a = ct.load(X, index=(bm, k), shape=(TM, TK), padding_mode=Z, allow_tma=True).astype(ct.float32)
        s = s + ct.sum(a * a, axis=1, keepdims=False)
        q = q + ct.sum(ct.reshape(a, (TM, TN, TK // TN)), axis=2) * (bn + 1.0)
    ct.store(SumAcc, index=(bm + sk * n_m, bn), tile=ct.reshape(s, (TM, 1)))
    ct.store(SqAcc, index=(bm + sk * n_m, bn), tile=q)


@pytest.mark.parametrize("sm", SMS)
def test_split_k_partials_over_a_grouped_tile_order_with_scalar_minimum_bounds(sm):
    rng = _rng(35)
    m, k, tm, tn, tk, split, group = 37, 150, 8, 4, 16, 3, 2
    n = 3 * tn  # three column tiles (each its own scale)
    x = rng.standard_normal((m, k)).astype(np.float16)
    n_m, n_n = -(-m // tm), -(-n // tn)
    sums = np.full((n_m * tm * split, n_n), 7.0, np.float32)
    sq = np.full((n_m * tm * split, n), 7.0, np.float32)
    _launch(sm, (n_m * n_n, split), split_k_row_stats, (x, sums, sq, m, n, k, tm, tn, tk, split, group))
    kt = -(-k // tk)
    per = -(-kt // split)
    xp = np.zeros((n_m * tm, kt * tk))
    xp[:m, :k] = x
    for sk in range(split):
        cols = xp[:, sk * per * tk:min((sk + 1) * per, kt) * tk]
        rows = slice(sk * n_m * tm, (sk + 1) * n_m * tm)
        for bn in range(n_n):
            np.testing.assert_allclose(sums[rows, bn], (cols * cols).sum(1), rtol=1e-5, atol=1e-5)
        part = cols.reshape(n_m * tm, -1, tk)  # per K tile
        want_q = part.reshape(n_m * tm, part.shape[1], tn, tk // tn).sum(3).sum(1)  # (rows, TN)
        for bn in range(n_n):
            np.testing.assert_allclose(sq[rows, bn * tn:(bn + 1) * tn], want_q * (bn + 1), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ selective scan: a tuple scan, both directions
def _compose(a1, b1, a2, b2):
    return a1 * a2, a2 * b1 + b2


@ct.kernel
def selective_scan_fwd_bwd(DT, A, X, DY, H, G, T: ConstInt, TD: ConstInt):
    """h_t = exp(dt_t a) h_{t-1} + dt_t x_t along time (axis 0) per channel; the adjoint g_t = dy_t +
    exp(dt_{t+1} a) g_{t+1} runs backward (a reverse scan)."""
    d = ct.bid(0)
    dt = ct.load(DT, (0, d), (T, TD), padding_mode=Z)
    a = ct.reshape(ct.load(A, (d,), (TD,), padding_mode=Z), (1, TD))
    decay = ct.exp(dt * a)
    _, h = ct.scan((decay, dt * ct.load(X, (0, d), (T, TD), padding_mode=Z)), axis=0, func=_compose,
                   identity=(1.0, 0.0))
    ct.store(H, (0, d), h)
    rows = ct.arange(T, dtype=ct.int32)[:, None] + 1
    cols = d * TD + ct.arange(TD, dtype=ct.int32)[None, :]
    decay_next = ct.exp(ct.gather(DT, (rows, cols), padding_value=0.0) * a)  # exp(dt_{t+1} a); 1 past the end
    _, g = ct.scan((decay_next, ct.load(DY, (0, d), (T, TD), padding_mode=Z)), axis=0, func=_compose,
                   identity=(1.0, 0.0), reverse=True)
    ct.store(G, (0, d), g)


@pytest.mark.parametrize("sm", SMS)
def test_selective_scan_forward_and_its_reverse_adjoint(sm):
    """Found a bug: a reverse scan passed the lower elements as the combiner's left operand (tileiras passes the
    accumulator, the higher ones), so the backward recurrence composed its steps in the wrong order (fixed in
    atoms/reduce.py; regression tests in plugins/tileas/tests/test_scan_order.py)."""
    rng = _rng(36)
    t, ch = 21, 10
    dt = rng.uniform(0.01, 0.3, (t, ch)).astype(np.float32)
    a = -rng.uniform(0.5, 3, ch).astype(np.float32)
    x, dy = rng.standard_normal((t, ch)).astype(np.float32), rng.standard_normal((t, ch)).astype(np.float32)
    h, g = np.zeros_like(x), np.zeros_like(x)
    _launch(sm, (2,), selective_scan_fwd_bwd, (dt, a, x, dy, h, g, 32, 8))
    decay = np.exp(dt.astype(np.float64) * a)
    want_h, want_g = np.zeros((t, ch)), np.zeros((t, ch))
    acc = np.zeros(ch)
    for i in range(t):
        acc = decay[i] * acc + dt[i] * x[i]
        want_h[i] = acc
    acc = np.zeros(ch)
    for i in reversed(range(t)):
        acc = dy[i] + (decay[i + 1] * acc if i + 1 < t else 0)
        want_g[i] = acc
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g, want_g, rtol=1e-5, atol=1e-5)
