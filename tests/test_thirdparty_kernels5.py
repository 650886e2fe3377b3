"""Round 5 of kernels written the way an outside cuTile author writes them: cuTile's public API argument by
argument (``cuda.tile`` 1.7), the items rounds 1-4 did not exercise. Each kernel is this file's own code; each
runs in the CPU emulator (``tilecore.cutile.launch`` on numpy arrays) against numpy on sizes that are not tile
multiples, and its bytecode is compiled by NVIDIA's tileiras for the same target (where installed; the
``_launch`` of round 3). Target-independent features (elementwise / scalar / reduction lowering, the same code
on every SM) run on sm_80 only; loads / stores / views / gathers / atomics / products, whose lowering differs
by target (TMA on sm_90a / sm_100a, the tensor-core ops), run on sm_80 / sm_90a / sm_100a.

Checklist of what this round covers that earlier rounds did not:

- ``ct.arange`` with ``start`` / ``step`` (negative step, float and int8 dtypes);
- ``ct.full`` of int64 / uint64 beyond 32 bits, NaN / -inf in f16 / bf16, bool; ``ct.ones`` * 255 in uint8;
- reductions with axis tuples mixing negative axes (``axis=(0, -1)``, ``(-3, 2)``), ``keepdims`` on a tuple,
  ``argmax(axis=-1)`` on 3-D; ``propagate_nan`` on ``max`` / ``argmax`` / ``maximum`` in f16 / f32 / f64;
- wrap-around ``sum`` / ``prod`` / ``cumsum`` / ``argmin`` of int8 / uint8 / int16 / uint64 tiles, sums of bools;
- scalars on the left of operators (``3.0 - t``, ``2.0 ** t``, ``7 // t``, ``-7 % t``), ``~t ^ 5``, ``abs``;
  float ``//`` / ``%`` of negatives in f16 / f32 / f64; the functional comparisons (``ct.equal`` ...);
- ``ct.bitcast`` f32 / f16 / f64 / bf16 <-> integers; ``floor`` / ``ceil`` on f16 / bf16 / f64, ``isnan`` on f16;
- ``ct.pow`` on floats (tile ** tile, tile ** int); sinh / cosh / tan / atan2 / log2 / rsqrt on f16 and f64;
- ``astype`` f64 -> f32 with ``RZ`` / ``RM`` / ``RP``; ``sum(rounding_mode=RZ)``, ``cumsum`` / ``prod`` with
  ``flush_to_zero``;
- every ``atomic_*`` (add / max / min / xchg / and / or / xor / cas) on int32 / int64 / uint32 / uint64 with
  each ``MemoryOrder`` and ``MemoryScope``, on 2-D arrays through tuple indices; scalar atomics;
- ``Array.get_raw_memory()``'s ``atomic_*_offset`` with masks / orders; ``Array.foreign_pointer`` +
  ``Array.from_foreign`` (a transposed view through swapped strides, constant metadata);
- runtime scalar parameters of every width (int8 ... uint64, f16, bool), ``ct.ScalarInt64``,
  ``ct.IndexedWithInt64``; scalar arithmetic (``//`` / ``%`` of negatives, ``cdiv``, ``min`` / ``max``, shifts,
  ``and`` / ``or`` / ``not`` on runtime bools, ``ct.sqrt`` / ``exp`` / ``floor`` of scalars);
- ``range`` with a runtime step, ``while not done`` on a scalar bool;
- ``load`` with ``order=(2, 0, 1)`` / ``"F"`` on 3-D arrays with NaN padding, ``num_tiles`` with ``order``;
- ``tiled_view`` with ``traversal_steps`` larger than the tile (gaps) and NEG_INF padding;
  ``atomic_store_add`` with an int16 update broadcast into an int32 view, ``atomic_store_max``;
- ``gather`` on a 2-D array with 3-D broadcast indices, a broadcast ``padding_value`` tile and a mask;
- ``load_advanced_indexing`` / ``store_advanced_indexing`` on 3-D with the sparse dimension in the middle;
- ``Array.shape`` / ``strides`` / ``ndim`` / ``dtype`` of a strided numpy view; ``t[:, None]``, ``t[None, ...]``,
  ``t[..., None]``, ``Tile.item()``;
- ``@`` on 1-D @ 1-D, 1-D @ 2-D, 2-D @ 1-D, 3-D @ 2-D (broadcast batch); ``ct.mma`` int8 x int8 -> int32;
- ``ct.transpose(x, 0, 2)``, ``ct.cat`` of bool tiles, ``broadcast_to`` of a 0-d tile, ``expand_dims(axis=-2)``;
- ``ct.ensure_constant``, ``raise ct.static_exception(...)`` (a located compile error), ``ct.static_eval``;
- ``ct.print`` with ``sep`` / ``end``; ``ct.printf`` whose length modifiers differ from the argument widths;
- ``ct.mma_scaled`` (MXFP8: e4m3 x e8m0 scales) on partial tiles; ``pack_to_bytes`` / ``unpack_from_bytes`` to
  int32 / f16 / uint64; ``astype`` to tf32, to e8m0 with ``RP``, to e5m2 / e4m3; bool tiles under ``& | ^ ~``, a
  runtime bool in ``where`` and arithmetic, a ``Constant[float]`` keeping f16, int64 / int64 true division;
- ``ct.reduce`` of three broadcast operands with ``keepdims``; ``ct.scan`` / ``cumsum`` / ``cumprod`` reversed
  on axis 0 / -2 in int8 and f64;
- ``ct.store`` of a scalar, ``ct.scatter`` of a scalar through broadcast int32 / int16 indices with a mask, a 0-d
  ``gather``; ``Array.slice`` with runtime bounds on ``axis=-1`` then ``tiled_view`` / ``TiledView.num_tiles``;
  ``store(order="F")`` of a transposed tile; 3-D grids with ``num_blocks``;
- host arguments: a strided output after a list of arrays, read-only numpy arrays (inputs and outputs), tuples
  of arrays / scalars as parameters;
- ``load`` / ``store`` with ``order=(1, 0)`` + ``latency`` + ``allow_tma`` beside an ``ACQUIRE`` load, a
  ``RELEASE`` store with ``allow_tma=False`` and a ``check_bounds=False`` pair, on the TMA targets;
- ``@ct.function`` with default and keyword-only arguments, a conditional expression choosing between two calls
  on a runtime scalar, recursion on a constant depth, nested tuple unpacking, ``len(t.shape)`` / ``t.ndim``.

cuTile itself refuses (located errors, not tilecore's): ``divmod`` of floats, ``pow`` of integer tiles, float
``atomic_max``, ``range`` with a negative step, ``rounding_mode`` on float -> int casts, string constants.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")

from test_thirdparty_kernels3 import _launch, _tileiras_compiles  # noqa: E402  (emulator run + tileiras check)

import tilecore.cutile as tc  # noqa: E402
from tilecore.errors import TilecoreError  # noqa: E402
from tilecore.narrow_floats import decode, encode  # noqa: E402

SMS = ["sm_80", "sm_90a", "sm_100a"]
Z = ct.PaddingMode.ZERO
CI = ct.Constant[int]
RM = ct.RoundingMode
MO, MS = ct.MemoryOrder, ct.MemoryScope


def _rng(seed):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------------------ arange start / step, full
@ct.kernel
def arange_start_step(O1, O2, O3, O4):
    ct.store(O1, (0,), ct.arange(16, dtype=ct.int32, start=5, step=3))
    ct.store(O2, (0,), ct.arange(8, dtype=ct.int64, start=7, step=-1))
    ct.store(O3, (0,), ct.arange(8, dtype=ct.float32, start=0.5, step=0.25))
    ct.store(O4, (0,), ct.arange(16, dtype=ct.int8, start=-8, step=1))


@ct.kernel
def full_values(A, B, C, D, E, F):
    ct.store(A, (0,), ct.full((8,), 2**40 + 7, dtype=ct.int64))
    ct.store(B, (0,), ct.full((8,), 2**63 + 5, dtype=ct.uint64))
    ct.store(C, (0,), ct.full((8,), float("nan"), dtype=ct.float16))
    ct.store(D, (0,), ct.full((8,), -float("inf"), dtype=ct.bfloat16).astype(ct.float32))
    ct.store(E, (0,), ct.full((8,), True, dtype=ct.bool_))
    ct.store(F, (0,), ct.ones((8,), dtype=ct.uint8) * 255)


def test_arange_start_step_and_full_values():
    """sm_80 (the same constants on every target)."""
    o1, o2, o3, o4 = np.zeros(16, np.int32), np.zeros(8, np.int64), np.zeros(8, np.float32), np.zeros(16, np.int8)
    _launch("sm_80", (1,), arange_start_step, (o1, o2, o3, o4))
    np.testing.assert_array_equal(o1, 5 + 3 * np.arange(16))
    np.testing.assert_array_equal(o2, 7 - np.arange(8))
    np.testing.assert_array_equal(o3, 0.5 + 0.25 * np.arange(8))
    np.testing.assert_array_equal(o4, np.arange(-8, 8))
    a, b, c, d = np.zeros(8, np.int64), np.zeros(8, np.uint64), np.zeros(8, np.float16), np.zeros(8, np.float32)
    e, f = np.zeros(8, np.bool_), np.zeros(8, np.uint8)
    _launch("sm_80", (1,), full_values, (a, b, c, d, e, f))
    assert (a == 2**40 + 7).all() and (b == np.uint64(2**63 + 5)).all() and np.isnan(c).all()
    assert (d == -np.inf).all() and e.all() and (f == 255).all()


# ------------------------------------------------------------------------------ reductions: axis tuples, negative axes
@ct.kernel
def reduce_axes_3d(X, S, M, P, A):
    x = ct.load(X, (0, 0, 0), (4, 8, 16), padding_mode=Z)
    ct.store(S, (0, 0, 0), ct.sum(x, axis=(0, -1), keepdims=True))
    ct.store(M, (0,), ct.max(x, axis=(-3, 2)))
    ct.store(P, (0, 0), ct.min(x, axis=-2))
    ct.store(A, (0, 0), ct.argmax(x, axis=-1))


def test_reductions_over_axis_tuples_with_negative_axes():
    """sm_80 (reductions lower the same on every target)."""
    x = _rng(0).integers(-50, 50, (3, 7, 13)).astype(np.float32)
    xp = np.zeros((4, 8, 16), np.float32)
    xp[:3, :7, :13] = x
    s, m = np.zeros((1, 7, 1), np.float32), np.zeros(7, np.float32)
    p, a = np.zeros((3, 13), np.float32), np.zeros((3, 7), np.int32)
    _launch("sm_80", (1,), reduce_axes_3d, (x, s, m, p, a))
    np.testing.assert_array_equal(s, xp.sum(axis=(0, 2), keepdims=True)[:, :7])
    np.testing.assert_array_equal(m, xp.max(axis=(0, 2))[:7])
    np.testing.assert_array_equal(p, xp.min(axis=1)[:3, :13])
    np.testing.assert_array_equal(a, xp.argmax(axis=-1)[:3, :7])


@ct.kernel
def nan_reductions(X, Y, O1, O2, O3, O4, O5, T: CI):
    x = ct.load(X, (0, 0), (4, T), padding_mode=ct.PaddingMode.NEG_INF)
    y = ct.load(Y, (0, 0), (4, T), padding_mode=ct.PaddingMode.NEG_INF)
    ct.store(O1, (0,), ct.max(x, axis=1, propagate_nan=True))
    ct.store(O2, (0,), ct.min(ct.load(X, (0, 0), (4, T), padding_mode=ct.PaddingMode.POS_INF), axis=-1,
                              propagate_nan=False))
    ct.store(O3, (0, 0), ct.maximum(x, y, propagate_nan=True))
    ct.store(O4, (0, 0), ct.minimum(x, y))
    ct.store(O5, (0,), ct.argmax(x, axis=1, propagate_nan=True))


@pytest.mark.parametrize("dt", [np.float16, np.float64])
def test_propagate_nan_in_reductions_and_elementwise(dt):
    """sm_80 (the same selects on every target)."""
    rng = _rng(13)
    x, y = rng.standard_normal((4, 13)).astype(dt), rng.standard_normal((4, 13)).astype(dt)
    x[1, 3] = y[2, 5] = y[0, 0] = x[0, 0] = np.nan
    x[3, :] = np.nan
    x[3, 4] = 1
    o1, o2, o5 = np.zeros(4, dt), np.zeros(4, dt), np.zeros(4, np.int32)
    o3, o4 = np.zeros_like(x), np.zeros_like(x)
    _launch("sm_80", (1,), nan_reductions, (x, y, o1, o2, o3, o4, o5, 16))
    np.testing.assert_array_equal(o1, np.max(x, axis=1))
    np.testing.assert_array_equal(o2, np.fmin.reduce(x, axis=1))
    np.testing.assert_array_equal(o3, np.maximum(x, y))
    np.testing.assert_array_equal(o4, np.fmin(x, y))
    np.testing.assert_array_equal(o5, np.argmax(x, axis=1))


@ct.kernel
def narrow_int_reductions(X, B, O1, O2, O3, O4, O5, T: CI):
    x = ct.load(X, (0, 0), (2, T), padding_mode=Z)
    b = ct.load(B, (0, 0), (2, T), padding_mode=Z)
    inside = ct.arange(T, dtype=ct.int32)[None, :] < X.shape[1]
    ct.store(O1, (0,), ct.sum(x, axis=1))
    ct.store(O2, (0,), ct.prod(ct.where(inside, x, 1), axis=1))
    ct.store(O3, (0, 0), ct.cumsum(x, axis=1))
    ct.store(O4, (0,), ct.sum(b, axis=1))
    ct.store(O5, (0,), ct.argmin(ct.where(inside, x, 127), axis=1))


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.uint64])
def test_wrapping_reductions_of_narrow_and_unsigned_integers(dt):
    """sm_80. Sums / products / running sums wrap in the element type (numpy's ``dtype=``); bools sum as int32."""
    rng, info = _rng(14), np.iinfo(dt)
    x = rng.integers(max(info.min, -100), min(info.max, 120), (2, 11)).astype(dt)
    b = rng.integers(0, 2, (2, 11)).astype(np.bool_)
    x[1, 4] = x[1, 7] = x[1].min()  # argmin ties: the first
    o1, o2, o3 = np.zeros(2, dt), np.zeros(2, dt), np.zeros((2, 16), dt)
    o4, o5 = np.zeros(2, np.int32), np.zeros(2, np.int32)
    _launch("sm_80", (1,), narrow_int_reductions, (x, b, o1, o2, o3, o4, o5, 16))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(o1, x.sum(axis=1, dtype=dt))
        np.testing.assert_array_equal(o2, x.prod(axis=1, dtype=dt))
        np.testing.assert_array_equal(o3[:, :11], np.cumsum(x, axis=1, dtype=dt))
    np.testing.assert_array_equal(o4, b.sum(axis=1))
    np.testing.assert_array_equal(o5, x.argmin(axis=1))


# ------------------------------------------------------------------------------ operators with scalars on the left
@ct.kernel
def scalar_left_operands(X, ID, O1, O2, O3, O4, O5, O6, T: CI):
    b = ct.bid(0)
    x = ct.load(X, (b,), (T,), padding_mode=Z)
    i = ct.load(ID, (b,), (T,), padding_mode=ct.PaddingMode.ZERO)
    i = ct.where(i == 0, 1, i)
    ct.store(O1, (b,), 3.0 - x)
    ct.store(O2, (b,), 2.0 ** x)
    ct.store(O3, (b,), abs(-x) / 4)
    ct.store(O4, (b,), ~i ^ 5)
    ct.store(O5, (b,), 7 // i)
    ct.store(O6, (b,), -7 % i)


@ct.kernel
def float_floordiv_mod(X, Y, Q, R, Q2, R2, T: CI):
    b = ct.bid(0)
    x = ct.load(X, (b,), (T,), padding_mode=Z)
    y = ct.load(Y, (b,), (T,), padding_mode=Z)
    y = ct.where(y == 0, 1.0, y)
    ct.store(Q, (b,), x // y)
    ct.store(R, (b,), ct.mod(x, y))
    ct.store(Q2, (b,), ct.floordiv(x.astype(ct.float16), 2.5))
    ct.store(R2, (b,), x.astype(ct.float64) % -2.5)


@ct.kernel
def functional_compares(X, Y, OUT, T: CI):
    b = ct.bid(0)
    x = ct.load(X, (b,), (T,), padding_mode=Z)
    y = ct.load(Y, (b,), (T,), padding_mode=Z)
    m = (ct.equal(x, y).astype(ct.int32) + 2 * ct.not_equal(x, 0).astype(ct.int32)
         + 4 * ct.greater(x, y).astype(ct.int32) + 8 * ct.greater_equal(y, 1.5).astype(ct.int32)
         + 16 * ct.less_equal(x, y).astype(ct.int32) + 32 * ct.less(-1, x).astype(ct.int32))
    ct.store(OUT, (b,), m)


def test_operators_with_scalars_on_the_left_float_floordiv_and_functional_compares():
    """sm_80 (elementwise lowering is the same on every target)."""
    rng, n = _rng(1), 45
    x = rng.uniform(-3, 3, n).astype(np.float32)
    i = (rng.integers(1, 9, n) * rng.choice([-1, 1], n)).astype(np.int32)
    o = [np.zeros(n, np.float32) for _ in range(3)] + [np.zeros(n, np.int32) for _ in range(3)]
    _launch("sm_80", (3,), scalar_left_operands, (x, i, *o, 16))
    np.testing.assert_allclose(o[0], 3 - x)
    np.testing.assert_allclose(o[1], 2.0 ** x.astype(np.float64), rtol=2e-6)
    np.testing.assert_allclose(o[2], abs(x) / 4)
    np.testing.assert_array_equal(o[3], ~i ^ 5)
    np.testing.assert_array_equal(o[4], 7 // i)
    np.testing.assert_array_equal(o[5], -7 % i)

    n = 40
    x, y = rng.uniform(-20, 20, n).astype(np.float32), rng.uniform(-5, 5, n).astype(np.float32)
    q, r, q2, r2 = np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.float16), np.zeros(n)
    _launch("sm_80", (3,), float_floordiv_mod, (x, y, q, r, q2, r2, 16))
    np.testing.assert_allclose(q, np.floor_divide(x, y))
    np.testing.assert_allclose(r, np.mod(x, y), atol=1e-5)
    np.testing.assert_array_equal(q2, np.floor_divide(x.astype(np.float16), np.float16(2.5)))
    np.testing.assert_allclose(r2, np.mod(x.astype(np.float64), -2.5), atol=1e-12)

    n = 35
    x, y = rng.integers(-3, 4, n).astype(np.float32), rng.integers(-3, 4, n).astype(np.float32) / 2
    out = np.zeros(n, np.int32)
    _launch("sm_80", (3,), functional_compares, (x, y, out, 16))
    np.testing.assert_array_equal(out, (x == y) + 2 * (x != 0) + 4 * (x > y) + 8 * (y >= 1.5) + 16 * (x <= y)
                                  + 32 * (-1 < x))


# ------------------------------------------------------------------------------ bitcasts, rounding functions, pow, math
@ct.kernel
def bitcasts(F, H, D, O1, O2, O3, O4, T: CI):
    b = ct.bid(0)
    f = ct.load(F, (b,), (T,), padding_mode=Z)
    h = ct.load(H, (b,), (T,), padding_mode=Z)
    d = ct.load(D, (b,), (T,), padding_mode=Z)
    ct.store(O1, (b,), ct.bitcast(f, ct.int32) >> 23)
    ct.store(O2, (b,), ct.bitcast(ct.bitcast(h, ct.uint16) ^ 0x8000, ct.float16))
    ct.store(O3, (b,), ct.bitcast(d, ct.uint64) >> 52)
    ct.store(O4, (b,), ct.bitcast(h.astype(ct.bfloat16), ct.int16))


@ct.kernel
def floor_ceil_isnan(H, D, ID, O1, O2, O3, O4, O5, T: CI):
    b = ct.bid(0)
    h = ct.load(H, (b,), (T,), padding_mode=Z)
    d = ct.load(D, (b,), (T,), padding_mode=Z)
    i = ct.load(ID, (b,), (T,), padding_mode=Z)
    ct.store(O1, (b,), ct.floor(h))
    ct.store(O2, (b,), ct.ceil(d))
    ct.store(O3, (b,), ct.ceil(h.astype(ct.bfloat16)).astype(ct.float32))
    ct.store(O4, (b,), ct.isnan(h) | ct.isnan(d))
    ct.store(O5, (b,), ct.floor(i.astype(ct.float32)).astype(ct.int32) + ct.cdiv(i, 4))


@ct.kernel
def float_pows(X, Y, O1, O2, T: CI):
    b = ct.bid(0)
    x = ct.load(X, (b,), (T,), padding_mode=Z)
    y = ct.load(Y, (b,), (T,), padding_mode=Z)
    ct.store(O1, (b,), ct.pow(x, y))
    ct.store(O2, (b,), x ** 3)


def test_bitcasts_floor_ceil_isnan_and_pow():
    """sm_80 (elementwise)."""
    rng, n = _rng(4), 21
    f = (rng.standard_normal(n) * 100).astype(np.float32)
    h = rng.standard_normal(n).astype(np.float16)
    d = rng.standard_normal(n) * 1e10
    o1, o2, o3, o4 = np.zeros(n, np.int32), np.zeros(n, np.float16), np.zeros(n, np.uint64), np.zeros(n, np.int16)
    _launch("sm_80", (2,), bitcasts, (f, h, d, o1, o2, o3, o4, 16))
    np.testing.assert_array_equal(o1, f.view(np.int32) >> 23)
    np.testing.assert_array_equal(o2, -h)
    np.testing.assert_array_equal(o3, d.view(np.uint64) >> np.uint64(52))
    w = h.astype(np.float32).view(np.uint32).astype(np.uint64)
    np.testing.assert_array_equal(o4, ((w + 0x7FFF + ((w >> 16) & 1)) >> 16).astype(np.uint16).view(np.int16))

    n = 37
    h = (rng.standard_normal(n) * 10).astype(np.float16)
    h[3] = np.nan
    d = rng.standard_normal(n) * 10
    d[5] = np.nan
    i = rng.integers(-100, 100, n).astype(np.int32)
    o1, o2, o3 = np.zeros(n, np.float16), np.zeros(n), np.zeros(n, np.float32)
    o4, o5 = np.zeros(n, np.bool_), np.zeros(n, np.int32)
    _launch("sm_80", (3,), floor_ceil_isnan, (h, d, i, o1, o2, o3, o4, o5, 16))
    np.testing.assert_array_equal(o1, np.floor(h))
    np.testing.assert_array_equal(o2, np.ceil(d))
    ok = ~np.isnan(h)
    np.testing.assert_array_equal(o3[ok], np.ceil(h.astype(np.float32))[ok])
    np.testing.assert_array_equal(o4, np.isnan(h) | np.isnan(d))
    np.testing.assert_array_equal(o5, i + -(-i // 4))

    n = 33
    x, y = rng.uniform(0.1, 4, n).astype(np.float32), rng.uniform(-2, 2, n).astype(np.float32)
    o1, o2 = np.zeros(n, np.float32), np.zeros(n, np.float32)
    _launch("sm_80", (3,), float_pows, (x, y, o1, o2, 16))
    np.testing.assert_allclose(o1, x.astype(np.float64) ** y, rtol=2e-6)
    np.testing.assert_allclose(o2, x.astype(np.float64) ** 3, rtol=2e-6)


@ct.kernel
def hyperbolic_and_friends(X, O1, O2, O3, O4, O5, O6, T: CI):
    x = ct.load(X, (0,), (T,), padding_mode=Z)
    ct.store(O1, (0,), ct.sinh(x))
    ct.store(O2, (0,), ct.cosh(x))
    ct.store(O3, (0,), ct.tan(x))
    ct.store(O4, (0,), ct.atan2(x, x + 0.5))
    ct.store(O5, (0,), ct.log2(abs(x) + 1))
    ct.store(O6, (0,), ct.rsqrt(abs(x) + 1, flush_to_zero=False))


@pytest.mark.parametrize("dt,tol", [(np.float16, 4e-3), (np.float64, 1e-13)])
def test_math_functions_in_f16_and_f64(dt, tol):
    """sm_80 (libdevice calls, the same on every target)."""
    x = _rng(15).uniform(-1.4, 1.4, 27).astype(dt)
    outs = [np.zeros(27, dt) for _ in range(6)]
    _launch("sm_80", (1,), hyperbolic_and_friends, (x, *outs, 32))
    xd = x.astype(np.float64)
    wants = [np.sinh(xd), np.cosh(xd), np.tan(xd), np.arctan2(xd, (x + dt(0.5)).astype(np.float64)),
             np.log2(abs(xd) + 1), 1 / np.sqrt(abs(xd) + 1)]
    for got, want in zip(outs, wants):
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


# ------------------------------------------------------------------------------ directed casts, rounded reductions
@ct.kernel
def directed_narrowing(D, ID, F, O1, O2, O3, O4, O5, T: CI):
    d = ct.load(D, (0,), (T,), padding_mode=Z)
    i = ct.load(ID, (0,), (T,), padding_mode=Z)
    f = ct.load(F, (0,), (T,), padding_mode=Z)
    ct.store(O1, (0,), ct.astype(d, ct.float32, rounding_mode=RM.RZ))
    ct.store(O2, (0,), ct.astype(d, ct.float32, rounding_mode=RM.RM))
    ct.store(O3, (0,), d.astype(ct.float32, rounding_mode=RM.RP))
    ct.store(O4, (0,), ct.astype(i, ct.float32))
    ct.store(O5, (0,), ct.astype(f, ct.int32))


@ct.kernel
def rounded_reductions(X, O1, O2, O3, T: CI):
    x = ct.load(X, (0, 0), (2, T), padding_mode=ct.PaddingMode.ZERO)
    ct.store(O1, (0,), ct.sum(x, axis=1, rounding_mode=RM.RZ))
    ct.store(O2, (0, 0), ct.cumsum(x, axis=1, flush_to_zero=True))
    inside = ct.arange(T, dtype=ct.int32)[None, :] < X.shape[1]
    ct.store(O3, (0,), ct.prod(ct.where(inside, x, 1.0), axis=-1, rounding_mode=RM.RN, flush_to_zero=True))


def test_directed_narrowing_casts_and_rounded_reductions():
    """sm_80 (cvt / add.rz / ftz are the same on every target)."""
    rng = _rng(17)
    d = rng.standard_normal(29) * 1e3
    i = rng.integers(-2**31, 2**31, 29).astype(np.int32)
    f = rng.uniform(-200, 300, 29).astype(np.float32)
    outs = [np.zeros(29, np.float32) for _ in range(4)] + [np.zeros(29, np.int32)]
    _launch("sm_80", (1,), directed_narrowing, (d, i, f, *outs, 32))
    rn = d.astype(np.float32)
    down = np.where(rn.astype(np.float64) > d, np.nextafter(rn, np.float32(-np.inf)), rn)
    up = np.where(rn.astype(np.float64) < d, np.nextafter(rn, np.float32(np.inf)), rn)
    np.testing.assert_array_equal(outs[0], np.where(d > 0, down, up))
    np.testing.assert_array_equal(outs[1], down)
    np.testing.assert_array_equal(outs[2], up)
    np.testing.assert_array_equal(outs[3], i.astype(np.float32))
    np.testing.assert_array_equal(outs[4], np.trunc(f).astype(np.int32))

    x = np.ones((2, 11), np.float32)
    x[0, 1:5] = 2.0**-24  # each lost under RZ: 1 + 2^-24 rounds back to 1
    x[1, 0], x[1, 1], x[1, 10] = 1e-39, 2.0, 3.0  # a subnormal: flushed
    o1, o2, o3 = np.zeros(2, np.float32), np.zeros((2, 16), np.float32), np.zeros(2, np.float32)
    _launch("sm_80", (1,), rounded_reductions, (x, o1, o2, o3, 16))
    assert o1[1] == 13.0 and 7.0 <= o1[0] < 7.0 + 2**-21, o1
    np.testing.assert_array_equal(o2[1, :3], [0.0, 2.0, 3.0])
    np.testing.assert_array_equal(o3, [np.float32(2.0**-96), 0.0])


# ------------------------------------------------------------------------------ atomics: every op, dtype, order, scope
@ct.kernel
def atomic_arith_orders(A, ID, U, OLD, T: CI):
    i = ct.load(ID, (0,), (T,))
    u = ct.load(U, (0,), (T,))
    ct.store(OLD, (0, 0), ct.atomic_add(A, (i, 0), u, memory_order=MO.RELAXED, memory_scope=MS.BLOCK).reshape((1, T)))
    ct.store(OLD, (1, 0), ct.atomic_max(A, (i, 1), u, memory_order=MO.ACQUIRE).reshape((1, T)))
    ct.store(OLD, (2, 0), ct.atomic_min(A, (i, 2), u, memory_order=MO.RELEASE, memory_scope=MS.SYS).reshape((1, T)))
    ct.store(OLD, (3, 0), ct.atomic_xchg(A, (i, 3), u).reshape((1, T)))


@ct.kernel
def atomic_bits_orders(A, ID, U, OLD, T: CI):
    i = ct.load(ID, (0,), (T,))
    u = ct.load(U, (0,), (T,))
    ct.store(OLD, (0, 0), ct.atomic_and(A, (i, 0), u, memory_order=MO.RELAXED).reshape((1, T)))
    ct.store(OLD, (1, 0), ct.atomic_or(A, (i, 1), u, memory_order=MO.ACQUIRE, memory_scope=MS.BLOCK).reshape((1, T)))
    ct.store(OLD, (2, 0), ct.atomic_xor(A, (i, 2), u, memory_order=MO.RELEASE, memory_scope=MS.SYS).reshape((1, T)))
    ct.store(OLD, (3, 0), ct.atomic_cas(A, (i, 3), u, u + 1, memory_order=MO.ACQ_REL).reshape((1, T)))


@ct.kernel
def scalar_atomics(C, OLD):
    b = ct.bid(0)
    o = ct.atomic_add(C, 0, 1)
    ct.atomic_max(C, 1, b * 3)
    ct.store(OLD, (b,), ct.full((1,), o, dtype=ct.int32))


@pytest.mark.parametrize("dt", [np.int32, np.uint64])  # int64 / uint32: the same atom widths / signedness
def test_atomics_of_every_op_order_and_scope(dt):
    """sm_80 for the orders / scopes / dtypes (atom.<sem>.<scope> is the same instruction on every target; round 1
    ran the ops per SM). Distinct indices: the old values are deterministic."""
    rng, n, info = _rng(7), 16, np.iinfo(dt)
    idx = rng.permutation(n).astype(np.int32)
    lo = 0 if info.min == 0 else -20
    upd, a0 = rng.integers(lo, 40, n).astype(dt), rng.integers(lo, 40, (n, 4)).astype(dt)
    a, old = a0.copy(), np.zeros((4, n), dt)
    _launch("sm_80", (1,), atomic_arith_orders, (a, idx, upd, old, n))
    np.testing.assert_array_equal(old, a0[idx].T)
    w = a0.copy()
    w[idx, 0] += upd
    w[idx, 1] = np.maximum(w[idx, 1], upd)
    w[idx, 2] = np.minimum(w[idx, 2], upd)
    w[idx, 3] = upd
    np.testing.assert_array_equal(a, w)

    wide = np.int64 if info.min < 0 else np.uint64
    upd = rng.integers(info.min, int(info.max) + 1, n, dtype=wide).astype(dt)
    a0 = rng.integers(info.min, int(info.max) + 1, (n, 4), dtype=wide).astype(dt)
    a0[idx[::2], 3] = upd[::2]  # half the CAS match
    a, old = a0.copy(), np.zeros((4, n), dt)
    _launch("sm_80", (1,), atomic_bits_orders, (a, idx, upd, old, n))
    np.testing.assert_array_equal(old, a0[idx].T)
    w = a0.copy()
    w[idx, 0] &= upd
    w[idx, 1] |= upd
    w[idx, 2] ^= upd
    w[idx, 3] = np.where(a0[idx, 3] == upd, upd + dt(1), a0[idx, 3])
    np.testing.assert_array_equal(a, w)


def test_scalar_atomics_return_scalars():
    c, old = np.zeros(2, np.int32), np.zeros(5, np.int32)
    _launch("sm_80", (5,), scalar_atomics, (c, old))
    assert c[0] == 5 and c[1] == 12 and sorted(old) == [0, 1, 2, 3, 4], (c, old)


@ct.kernel
def raw_memory_atomics(A, C, T: CI):
    m = A.get_raw_memory()
    off = ct.arange(T, dtype=ct.int32)
    m.atomic_add_offset(off % 5, 1, mask=off % 3 != 1, memory_order=MO.RELAXED)
    m.atomic_max_offset(off + 8, off, mask=off < 6, memory_scope=MS.BLOCK)
    m.atomic_xor_offset(16 + off // 2, ct.full((T,), 0x5, dtype=ct.int32), memory_order=MO.ACQ_REL)
    c = C.get_raw_memory()
    c.atomic_cas_offset(off, off * 2.0, -1.0, mask=off < T - 1)
    c.atomic_xchg_offset(off + T, 3.5, memory_order=MO.RELEASE)


@pytest.mark.parametrize("sm", SMS)
def test_raw_memory_atomics_with_masks_and_orders(sm):
    T = 16
    a = np.zeros(32, np.int32)
    a[8:24] = np.arange(16) - 3
    c = np.arange(32, dtype=np.float32)
    c[:16] = np.arange(16) * 2.0
    c[4] = 99
    a0, c0 = a.copy(), c.copy()
    _launch(sm, (1,), raw_memory_atomics, (a, c, T))
    off = np.arange(T)
    w = a0.copy()
    for o in off[off % 3 != 1]:
        w[o % 5] += 1
    for o in off[off < 6]:
        w[o + 8] = max(w[o + 8], o)
    for o in off:
        w[16 + o // 2] ^= 5
    np.testing.assert_array_equal(a, w)
    wc = c0.copy()
    wc[:T - 1] = np.where(wc[:T - 1] == off[:T - 1] * 2.0, -1.0, wc[:T - 1])
    wc[T:] = 3.5
    np.testing.assert_array_equal(c, wc)


# ------------------------------------------------------------------------------ foreign pointers, array attributes
@ct.kernel
def foreign_transpose(X, OUT, T: CI):
    v = ct.Array.from_foreign(X.foreign_pointer, (X.shape[1], X.shape[0]), (X.strides[1], X.strides[0]))
    b = ct.bid(0)
    ct.store(OUT, (b, 0), ct.load(v, (b, 0), (T, T), padding_mode=Z) * 2)


@ct.kernel
def foreign_every_third(X, OUT):
    w = ct.Array.from_foreign(X.foreign_pointer, (4,), (3,))
    ct.store(OUT, (0,), ct.load(w, (0,), (4,)))


@pytest.mark.parametrize("sm", SMS)
def test_arrays_from_foreign_pointers(sm):
    x = np.arange(7 * 10, dtype=np.float32).reshape(7, 10)
    o = np.zeros((10, 8), np.float32)
    _launch(sm, (2,), foreign_transpose, (x, o, 8))
    np.testing.assert_array_equal(o[:, :7], x.T * 2)
    x16, o16 = np.arange(20, dtype=np.int16), np.zeros(4, np.int16)
    _launch(sm, (1,), foreign_every_third, (x16, o16))
    np.testing.assert_array_equal(o16, x16[::3][:4])


@ct.kernel
def array_attributes(X, OUT):
    v = X.shape[0] * 1000 + X.shape[1] * 100 + X.strides[0] * 10 + X.strides[1] + X.ndim * 100000
    ct.store(OUT, (0,), ct.full((2,), v, dtype=ct.int64))
    if X.dtype == ct.float16:
        ct.store(OUT, (1,), ct.full((1,), 7, dtype=ct.int64))


@ct.kernel
def wide_indices(X: ct.IndexedWithInt64, OUT, big: ct.ScalarInt64, small, T: CI):
    b = ct.bid(0)
    ct.store(OUT, (b,), ct.load(X, (b,), (T,), padding_mode=Z) + big + small + X.shape[0])


def test_array_attributes_and_int64_annotations():
    """sm_80 (scalar arithmetic on the parameters)."""
    x, o = np.zeros((8, 12), np.float16)[1:7:2, ::3], np.zeros(2, np.int64)
    _launch("sm_80", (1,), array_attributes, (x, o))
    np.testing.assert_array_equal(o, [2 * 100000 + 3 * 1000 + 4 * 100 + 24 * 10 + 3, 7])
    x, o = np.arange(40, dtype=np.int64), np.zeros(40, np.int64)
    _launch("sm_80", (3,), wide_indices, (x, o, 5, -2, 16))
    np.testing.assert_array_equal(o, x + 5 - 2 + 40)
    _launch("sm_80", (3,), wide_indices, (x, o, 2**40, 7, 16))
    np.testing.assert_array_equal(o, x + 2**40 + 7 + 40)


# ------------------------------------------------------------------------------ runtime scalars of every width
@ct.kernel
def scalar_widths(OUT, a, b, c, d, e, f, g, h, k):
    t = ct.full((1,), a, dtype=ct.float64) + b + c + d + e + f + g + h
    ct.store(OUT, (0,), ct.where(k, t, -t))


@ct.kernel
def scalar_arithmetic(OUT, F, a, b, x, y, flag):
    ct.store(OUT, (0,), ct.full((1,), a // b, dtype=ct.int64))
    ct.store(OUT, (1,), ct.full((1,), a % b, dtype=ct.int64))
    ct.store(OUT, (2,), ct.full((1,), ct.cdiv(a, 4), dtype=ct.int64))
    ct.store(OUT, (3,), ct.full((1,), ct.minimum(a, b) * 1000 + max(a, b), dtype=ct.int64))
    ct.store(OUT, (4,), ct.full((1,), abs(b), dtype=ct.int64))
    ct.store(OUT, (5,), ct.full((1,), (a << 2) ^ (b >> 1) | 1, dtype=ct.int64))
    t = 0
    if flag and a < 0:
        t = 1
    elif not flag or b > 0:
        t = 2
    ct.store(OUT, (6,), ct.full((1,), t, dtype=ct.int64))
    ct.store(F, (0,), ct.full((1,), ct.sqrt(x) + ct.exp(y) + x ** 2 + x // 0.75 + x % 0.75, dtype=ct.float32))
    ct.store(F, (1,), ct.full((1,), ct.floor(y) + ct.ceil(y) + ct.minimum(x, y) - ct.maximum(x, 1), dtype=ct.float32))
    ct.store(F, (2,), ct.full((1,), a / b + x * a, dtype=ct.float32))


@ct.kernel
def runtime_loops(OUT, lo, hi, st):
    acc = ct.zeros((4,), dtype=ct.int32)
    for i in range(lo, hi, 3):
        acc = acc + ct.full((4,), i, dtype=ct.int32) * ct.arange(4, dtype=ct.int32)
    for j in range(lo, hi, st):
        acc = acc + j
    k = 0
    done = False
    while not done:
        k += 1
        done = k * k > hi
    ct.store(OUT, (0,), acc + k * 1000)


def test_runtime_scalars_of_every_width_arithmetic_and_loops():
    """sm_80 (scalar code is the same on every target)."""
    o = np.zeros(1)
    args = (np.int8(-5), np.int16(300), np.uint8(200), np.uint16(60000), np.uint32(4000000000), np.float16(0.5),
            np.float32(1.25), np.uint64(2**40), False)
    _launch("sm_80", (1,), scalar_widths, (o, *args))
    assert o[0] == -sum(float(v) for v in args[:-1]), o
    for a, b, flag in [(-17, 5, True), (23, -4, False), (-9, -2, True)]:
        o, f, x, y = np.zeros(7, np.int64), np.zeros(3, np.float32), 2.25, -1.5
        _launch("sm_80", (1,), scalar_arithmetic, (o, f, a, b, x, y, flag))
        t = 1 if (flag and a < 0) else (2 if (not flag or b > 0) else 0)
        assert list(o) == [a // b, a % b, -(-a // 4), min(a, b) * 1000 + max(a, b), abs(b),
                           ((a << 2) ^ (b >> 1)) | 1, t], (a, b, list(o))
        np.testing.assert_allclose(f, [math.sqrt(x) + math.exp(y) + x * x + x // 0.75 + x % 0.75,
                                       math.floor(y) + math.ceil(y) + min(x, y) - max(x, 1), a / b + x * a],
                                   rtol=1e-6)
    for lo, hi, st in [(-5, 17, 4), (3, 3, 1), (10, -2, 2)]:
        o = np.zeros(4, np.int32)
        _launch("sm_80", (1,), runtime_loops, (o, lo, hi, st))
        k = math.isqrt(hi) + 1 if hi >= 0 else 1
        np.testing.assert_array_equal(o, sum(range(lo, hi, 3)) * np.arange(4) + sum(range(lo, hi, st)) + k * 1000)


# ------------------------------------------------------------------------------ loads with orders, views, gathers
@ct.kernel
def load_orders_3d(X, O1, O2, N, A0: CI, A1: CI, A2: CI):
    b = ct.bid(0)
    ct.store(O1, (0, b, 0), ct.load(X, (0, b, 0), (A0, A1, A2), order=(2, 0, 1), padding_mode=ct.PaddingMode.NAN))
    ct.store(O2, (0, 0, b), ct.load(X, (0, 0, b), (A2, A1, A0), order="F", padding_mode=Z))
    n = ct.num_tiles(X, 1, (A0, A1, A2), order=(2, 0, 1)) * 100 + ct.num_tiles(X, 2, (A2, A1, A0), order="F")
    ct.store(N, (0,), ct.full((4,), n, dtype=ct.int32))


@ct.kernel
def view_with_gaps(X, OUT, A, T0: CI, T1: CI):
    i, j = ct.bid(0), ct.bid(1)
    tv = X.tiled_view((T0, T1), padding_mode=ct.PaddingMode.NEG_INF, traversal_steps=(T0 + 1, T1 + 2))
    m = ct.max(tv.load((i, j)), axis=1, keepdims=True)
    ct.store(OUT, (i, j), ct.broadcast_to(m, (T0, T1)))
    av = A.tiled_view((T0, T1))
    av.atomic_store_add((i, j), ct.full((1, T1), 3, dtype=ct.int16))  # int16 update, rows broadcast
    av.atomic_store_max((i, j), ct.arange(T1, dtype=ct.int32)[None, :] * (i + 1))


@ct.kernel
def gather_3d_indices(X, OUT, M: CI, N: CI, K: CI):
    i0 = ct.arange(M, dtype=ct.int32).reshape((M, 1, 1)) + ct.arange(N, dtype=ct.int32).reshape((1, N, 1)) - 1
    i1 = ct.arange(K, dtype=ct.int64).reshape((1, 1, K)) * 2 - 3
    pad = ct.full((1, N, 1), -7.0, dtype=ct.float32)
    keep = (ct.arange(K, dtype=ct.int32) % 3 != 0).reshape((1, 1, K))
    ct.store(OUT, (0, 0, 0), ct.gather(X, (i0, i1), mask=keep, padding_value=pad))


@ct.kernel
def advanced_indexing_3d(X, R, OUT, c0, L0: CI, L2: CI, NR: CI):
    rows = ct.load(R, (0,), (NR,))
    t = ct.load_advanced_indexing(X, (ct.Slice(c0, L0), rows, ct.Slice(c0 + 1, L2)), padding_mode=Z)
    ct.store(OUT, (0, 0, 0), t)
    ct.store_advanced_indexing(X, (ct.Slice(c0, L0), rows, ct.Slice(c0 + 1, L2)), t * 2)


@pytest.mark.parametrize("sm", SMS)
def test_loads_with_orders_views_with_gaps_and_broadcast_gathers(sm):
    rng = _rng(10)
    x = rng.standard_normal((5, 6, 7)).astype(np.float32)
    A0, A1, A2, nb = 8, 4, 8, 2
    o1, o2 = np.full((A0, A1 * nb, A2), -1, np.float32), np.full((A2, A1, A0 * nb), -1, np.float32)
    n = np.zeros(4, np.int32)
    _launch(sm, (nb,), load_orders_3d, (x, o1, o2, n, A0, A1, A2))
    xn = np.full((8, 8, 8), np.nan, np.float32)
    xn[:5, :6, :7] = x
    np.testing.assert_array_equal(o1, xn.transpose(2, 0, 1)[:A0, :A1 * nb, :A2])
    xz = np.zeros((16, 8, 8), np.float32)
    xz[:5, :6, :7] = x
    np.testing.assert_array_equal(o2, xz.transpose(2, 1, 0)[:A2, :A1, :A0 * nb])
    assert (n == 201).all(), n

    x = rng.standard_normal((11, 23)).astype(np.float32)
    T0, T1 = 4, 8
    g0, g1 = len(range(0, 11, T0 + 1)), len(range(0, 23, T1 + 2))
    o, a = np.zeros((g0 * T0, g1 * T1), np.float32), np.zeros((11, 23), np.int32)
    _launch(sm, (g0, g1), view_with_gaps, (x, o, a, T0, T1))
    for i in range(g0):
        for j in range(g1):
            blk = x[i * (T0 + 1): i * (T0 + 1) + T0, j * (T1 + 2): j * (T1 + 2) + T1]
            want = np.full(T0, -np.inf, np.float32)
            want[:blk.shape[0]] = blk.max(axis=1)
            np.testing.assert_array_equal(o[i * T0:(i + 1) * T0, j * T1], want)
    cols, rows = np.arange(23) % T1, np.arange(11) // T0
    np.testing.assert_array_equal(a, np.maximum(3, cols[None, :] * (rows[:, None] + 1)))

    x = rng.standard_normal((6, 9)).astype(np.float32)
    M = N = 4
    K = 8
    o = np.zeros((M, N, K), np.float32)
    _launch(sm, (1,), gather_3d_indices, (x, o, M, N, K))
    r = np.arange(M)[:, None, None] + np.arange(N)[None, :, None] - 1
    q = np.broadcast_to(2 * np.arange(K)[None, None, :] - 3, (M, N, K))
    r = np.broadcast_to(r, (M, N, K))
    ok = (np.arange(K) % 3 != 0)[None, None, :] & (r >= 0) & (r < 6) & (q >= 0) & (q < 9)
    np.testing.assert_array_equal(o, np.where(ok, x[np.clip(r, 0, 5), np.clip(q, 0, 8)], -7.0))

    x = rng.standard_normal((3, 10, 7)).astype(np.float32)
    x0, rr = x.copy(), np.array([9, 0, 4, 2], np.int32)
    o = np.zeros((4, 4, 8), np.float32)
    _launch(sm, (1,), advanced_indexing_3d, (x, rr, o, 1, 4, 8, 4))
    want = np.zeros((4, 4, 8), np.float32)
    want[:2, :, :5] = x0[1:3][:, rr][:, :, 2:7]
    np.testing.assert_array_equal(o, want)
    x0[1:3, rr[:, None], np.arange(2, 7)[None, :]] *= 2
    np.testing.assert_array_equal(x, x0)


# ------------------------------------------------------------------------------ tile indexing, shapes, products
@ct.kernel
def tile_indexing(X, OUT, O2, T: CI):
    x = ct.load(X, (0,), (T,), padding_mode=Z)
    c = (x[:, None] * x[None, :])[None, ...][..., None]
    ct.store(OUT, (0, 0, 0, 0), c)
    ct.store(O2, (0,), ct.full((1,), ct.sum(x, axis=0, keepdims=True).item(), dtype=ct.float32))


@ct.kernel
def shape_functions(X, B, O1, O2, O3, O4):
    x = ct.load(X, (0, 0, 0), (2, 4, 8))
    b = ct.load(B, (0,), (8,))
    ct.store(O1, (0, 0, 0), ct.transpose(x, 0, 2))
    ct.store(O2, (0,), ct.cat((b, ~b), axis=0))
    ct.store(O3, (0, 0), ct.broadcast_to(ct.sum(x), (2, 4)))
    ct.store(O4, (0, 0, 0, 0), ct.expand_dims(x, axis=-2))


def test_tile_indexing_and_shape_functions():
    """sm_80 (register shuffles, the same on every target)."""
    x = np.arange(1, 6, dtype=np.float32)
    o, o2 = np.zeros((1, 8, 8, 1), np.float32), np.zeros(1, np.float32)
    _launch("sm_80", (1,), tile_indexing, (x, o, o2, 8))
    xp = np.zeros(8, np.float32)
    xp[:5] = x
    np.testing.assert_array_equal(o[0, :, :, 0], np.outer(xp, xp))
    assert o2[0] == 15
    x, b = np.arange(64, dtype=np.float32).reshape(2, 4, 8), np.arange(8) % 3 == 0
    o1, o2 = np.zeros((8, 4, 2), np.float32), np.zeros(16, np.bool_)
    o3, o4 = np.zeros((2, 4), np.float32), np.zeros((2, 4, 1, 8), np.float32)
    _launch("sm_80", (1,), shape_functions, (x, b, o1, o2, o3, o4))
    np.testing.assert_array_equal(o1, x.transpose(2, 1, 0))
    np.testing.assert_array_equal(o2, np.concatenate([b, ~b]))
    assert (o3 == x.sum()).all()
    np.testing.assert_array_equal(o4, x[:, :, None, :])


@ct.kernel
def matmul_forms(A, B, V, O1, O2, O3, O4, I8, J8, O5):
    a = ct.load(A, (0, 0, 0), (2, 16, 16), padding_mode=Z)
    bm = ct.load(B, (0, 0), (16, 16), padding_mode=Z)
    v = ct.load(V, (0,), (16,), padding_mode=Z)
    ct.store(O1, (0,), ct.full((1,), v @ v, dtype=ct.float32))
    ct.store(O2, (0,), v @ bm)
    ct.store(O3, (0, 0, 0), a @ bm)
    ct.store(O4, (0,), bm @ v)
    i8 = ct.load(I8, (0, 0), (16, 32), padding_mode=Z)
    j8 = ct.load(J8, (0, 0), (32, 16), padding_mode=Z)
    ct.store(O5, (0, 0), ct.mma(i8, j8, ct.zeros((16, 16), dtype=ct.int32)))


@pytest.mark.parametrize("sm", SMS)
def test_matmul_of_vectors_and_broadcast_batches(sm):
    rng = _rng(16)
    a, b = rng.standard_normal((2, 13, 11)).astype(np.float32), rng.standard_normal((11, 9)).astype(np.float32)
    v = rng.standard_normal(11).astype(np.float32)
    ap, bp, vp = np.zeros((2, 16, 16)), np.zeros((16, 16)), np.zeros(16)
    ap[:, :13, :11], bp[:11, :9], vp[:11] = a, b, v
    i8, j8 = rng.integers(-128, 128, (10, 30)).astype(np.int8), rng.integers(-128, 128, (30, 12)).astype(np.int8)
    o1, o2, o4 = np.zeros(1, np.float32), np.zeros(16, np.float32), np.zeros(16, np.float32)
    o3, o5 = np.zeros((2, 16, 16), np.float32), np.zeros((10, 12), np.int32)
    _launch(sm, (1,), matmul_forms, (a, b, v, o1, o2, o3, o4, i8, j8, o5))
    tol = dict(rtol=2e-2, atol=3e-2)  # f32 @ may take tf32
    np.testing.assert_allclose(o1, [vp @ vp], **tol)
    np.testing.assert_allclose(o2, vp @ bp, **tol)
    np.testing.assert_allclose(o3, ap @ bp, **tol)
    np.testing.assert_allclose(o4, bp @ vp, **tol)
    np.testing.assert_array_equal(o5, i8.astype(np.int32) @ j8.astype(np.int32))


# ------------------------------------------------------------------------------ compile-time helpers
@ct.kernel
def static_helpers(OUT, T: CI, MODE: CI):
    if ct.ensure_constant(T > 8):
        v = ct.full((T,), 1, dtype=ct.int32)
    else:
        v = ct.full((T,), 2, dtype=ct.int32)
    if MODE == -1:
        v = -v
    elif MODE != 1:
        raise ct.static_exception(ValueError(f"unknown MODE {MODE}"))
    ct.store(OUT, (0,), v * ct.static_eval(T * 3))


def test_ensure_constant_static_eval_and_static_exception():
    o = np.zeros(16, np.int32)
    _launch("sm_80", (1,), static_helpers, (o, 16, -1))
    assert (o == -48).all()
    o = np.zeros(4, np.int32)
    _launch("sm_80", (1,), static_helpers, (o, 4, 1))
    assert (o == 24).all()
    with pytest.raises(TilecoreError, match=r"test_thirdparty_kernels5.py:\d+:\d+: .*unknown MODE 7"):
        _launch("sm_80", (1,), static_helpers, (o, 4, 7))


# ------------------------------------------------------------------------------ print / printf
@ct.kernel
def print_sep_end(X, H):
    ct.print("x", ct.load(X, (0,), (4,)), ct.load(H, (0,), (2,)), sep="|", end=";\n")


@ct.kernel
def printf_lengths(X, Y):
    x = ct.load(X, (0,), (1,)).item()  # int32
    y = ct.load(Y, (0,), (1,)).item()  # int64
    ct.printf("x=%d y=%lld\n", x, y)
    ct.printf("A%lldB%hhdC%ldD%uE%d\n", x, x, x, x, y)
    ct.printf("t=%lld u=%d\n", ct.load(X, (0,), (2,), padding_mode=Z), ct.load(Y, (0,), (1,)))  # tiles: per element


@pytest.mark.parametrize("sm", SMS)
def test_print_sep_end_and_printf_length_modifiers(sm, capfd):
    """The emulator failed ``ct.printf("x=%d y=%lld", int32, int64)`` with a false out-of-bounds store to the
    argument buffer: the host JIT module had no data layout, so the size of ``struct<(i32, i64)>`` folded with
    LLVM's default (i64 aligned to 4: 12 bytes, the host's struct is 16). And a ``%lld`` / ``%ld`` of an int32
    read 4 bytes past its value (tileiras prints the stack's garbage there; vprintf reads by the format): each
    integer now goes out in the width its length modifier reads, extended (signed for ``%d``) or truncated."""
    x, h = np.array([1, -2, 3, 4], np.int8), np.array([0.5, -1.25], np.float16)
    _launch(sm, (1,), print_sep_end, (x, h))
    assert capfd.readouterr().out == "x|[1, -2, 3, 4]|[0.500000, -1.250000];\n"
    _launch(sm, (1,), printf_lengths, (np.array([-7], np.int32), np.array([2**40 + 5], np.int64)))
    assert capfd.readouterr().out.splitlines() == ["x=-7 y=1099511627781", "A-7B-7C-7D4294967289E5", "t=[-7, 0] u=[5]"]


# ------------------------------------------------------------------------------ block-scaled products, bytes, narrow casts
@ct.kernel
def mxfp8_matmul(A, SA, B, SB, C, TM: CI, TN: CI, TK: CI):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.bitcast(ct.load(A, (i, k), (TM, TK), padding_mode=Z), ct.float8_e4m3fn)
        b = ct.bitcast(ct.load(B, (k, j), (TK, TN), padding_mode=Z), ct.float8_e4m3fn)
        sa = ct.bitcast(ct.load(SA, (i, k), (TM, TK // 32), padding_mode=Z), ct.float8_e8m0fnu)
        sb = ct.bitcast(ct.load(SB, (k, j), (TK // 32, TN), padding_mode=Z), ct.float8_e8m0fnu)
        acc = ct.mma_scaled(a, sa, b, sb, acc)
    ct.store(C, (i, j), acc)


def _codes(x, fmt):
    return np.vectorize(lambda v: encode(float(v), fmt), otypes=[np.uint8])(x)


def _values(c, fmt):
    return np.vectorize(lambda v: decode(int(v), fmt), otypes=[np.float64])(c)


@pytest.mark.parametrize("sm", SMS)
def test_mma_scaled_mxfp8_on_partial_tiles(sm):
    """``ct.mma_scaled`` (e4m3 operands, e8m0 scales per 32 of K) on 40 x 24 x 128 with 32 x 32 x 64 tiles. tileiras
    compiles it for sm_100a only; tilecore refuses sm_80 / sm_90a with a located error, as tileiras does."""
    rng = _rng(20)
    M, N, K = 40, 24, 128
    a, b = _codes(rng.uniform(-2, 2, (M, K)), "f8E4M3FN"), _codes(rng.uniform(-2, 2, (K, N)), "f8E4M3FN")
    sa = rng.integers(124, 130, (M, K // 32)).astype(np.uint8)
    sb = rng.integers(124, 130, (K // 32, N)).astype(np.uint8)
    c = np.zeros((M, N), np.float32)
    args = (a, sa, b, sb, c, 32, 32, 64)
    if sm != "sm_100a":
        with pytest.raises(TilecoreError, match=r"test_thirdparty_kernels5.py:\d+:\d+: mma block scale"):
            tc.launch(None, (2, 1), mxfp8_matmul, args, gpu_name=sm)
        assert _tileiras_compiles(mxfp8_matmul, args, sm) in (False, None)
        return
    _launch(sm, (2, 1), mxfp8_matmul, args)
    av = _values(a, "f8E4M3FN") * np.repeat(_values(sa, "f8E8M0FNU"), 32, axis=1)
    bv = _values(b, "f8E4M3FN") * np.repeat(_values(sb, "f8E8M0FNU"), 32, axis=0)
    np.testing.assert_allclose(c, av @ bv, rtol=1e-4, atol=1e-3)


@ct.kernel
def byte_views(X, O1, O2, O3):
    x = ct.load(X, (0,), (32,))
    ct.store(O1, (0,), ct.unpack_from_bytes(x, ct.int32))
    ct.store(O2, (0,), ct.unpack_from_bytes(x, ct.float16))
    ct.store(O3, (0,), ct.pack_to_bytes(ct.unpack_from_bytes(x, ct.uint64) + 1))


@ct.kernel
def bool_tiles_and_promotions(X, Y, O1, O2, O3, O4, O5, O6, flag, s: ct.Constant[float], T: CI):
    x = ct.load(X, (0,), (T,), padding_mode=Z)
    y = ct.load(Y, (0,), (T,), padding_mode=Z)
    a, b = x.astype(ct.bool_), y > 0
    ct.store(O1, (0,), (a & ~b) | (a ^ b))
    ct.store(O2, (0,), ct.where(flag, x, y) * flag)
    ct.store(O3, (0,), x.astype(ct.float16) * s)  # a Python float constant keeps f16
    ct.store(O4, (0,), ct.minimum(x.astype(ct.int32), 2.5))
    ct.store(O5, (0,), x.astype(ct.int64) / y.astype(ct.int64))  # int / int: float64 for 64-bit
    ct.store(O6, (0,), x.astype(ct.int8).astype(ct.int16) + ct.abs(y).astype(ct.uint8).astype(ct.int16))


def test_byte_views_bool_tiles_and_promotions():
    """sm_80 (register reinterpretation and elementwise code, the same on every target)."""
    x = _rng(21).integers(0, 256, 32).astype(np.uint8)
    x[::2] &= 0x3F  # no f16 NaNs
    o1, o2, o3 = np.zeros(8, np.int32), np.zeros(16, np.float16), np.zeros(32, np.uint8)
    _launch("sm_80", (1,), byte_views, (x, o1, o2, o3))
    np.testing.assert_array_equal(o1, x.view(np.int32))
    np.testing.assert_array_equal(o2.view(np.uint16), x.view(np.uint16))
    np.testing.assert_array_equal(o3, (x.view(np.uint64) + np.uint64(1)).view(np.uint8))

    rng = _rng(22)
    x, y = rng.integers(-3, 4, 13).astype(np.float32), rng.integers(-3, 4, 13).astype(np.float32)
    y[y == 0] = 1
    for flag in (True, False):
        outs = [np.zeros(13, np.bool_), np.zeros(13, np.float32), np.zeros(13, np.float16), np.zeros(13, np.float32),
                np.zeros(13), np.zeros(13, np.int16)]
        _launch("sm_80", (1,), bool_tiles_and_promotions, (x, y, *outs, flag, 0.3, 16))
        a, b = x != 0, y > 0
        np.testing.assert_array_equal(outs[0], (a & ~b) | (a ^ b))
        np.testing.assert_array_equal(outs[1], np.where(flag, x, y) * flag)
        np.testing.assert_array_equal(outs[2], x.astype(np.float16) * np.float16(0.3))
        np.testing.assert_array_equal(outs[3], np.minimum(x.astype(np.int32), 2.5))
        np.testing.assert_allclose(outs[4], x.astype(np.int64) / y.astype(np.int64))
        np.testing.assert_array_equal(outs[5], x.astype(np.int16) + np.abs(y).astype(np.int16))


@ct.kernel
def narrow_float_casts(X, O1, O2, O3, O4):
    x = ct.load(X, (0,), (16,))
    ct.store(O1, (0,), x.astype(ct.tfloat32).astype(ct.float32))
    ct.store(O2, (0,), ct.bitcast(x.astype(ct.float8_e8m0fnu, rounding_mode=RM.RP), ct.uint8))
    ct.store(O3, (0,), ct.bitcast(x.astype(ct.float8_e5m2), ct.uint8))
    ct.store(O4, (0,), x.astype(ct.float8_e4m3fn).astype(ct.float32))


def test_tf32_and_e8m0_round_up_casts():
    """sm_100a (e8m0 needs it; tileiras refuses the type on sm_80 / sm_90a as tilecore does). tf32 rounds to
    nearest, ties away (cvt.rna.tf32.f32); e8m0 with RP is 2 ** ceil(log2(x))."""
    x = _rng(23).uniform(0.01, 300, 16).astype(np.float32)
    x[:3] = [1.0, 448.0, 500.0]
    o1, o2, o3, o4 = np.zeros(16, np.float32), np.zeros(16, np.uint8), np.zeros(16, np.uint8), np.zeros(16, np.float32)
    _launch("sm_100a", (1,), narrow_float_casts, (x, o1, o2, o3, o4))
    u = x.view(np.uint32)
    np.testing.assert_array_equal(o1, ((u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32))
    np.testing.assert_array_equal(o2, (np.ceil(np.log2(x.astype(np.float64))) + 127).astype(np.uint8))
    np.testing.assert_array_equal(o3, _codes(x, "f8E5M2"))
    np.testing.assert_array_equal(o4, _values(_codes(x, "f8E4M3FN"), "f8E4M3FN"))


# ------------------------------------------------------------------------------ custom reductions / scans, scalars in memory ops
@ct.function
def _max_first_count(a0, a1, a2, b0, b1, b2):
    take = (b0 > a0) | ((b0 == a0) & (b1 < a1))
    return ct.where(take, b0, a0), ct.where(take, b1, a1), a2 + b2


@ct.kernel
def three_operand_reduce(X, V, ID, S, T: CI):
    x = ct.load(X, (0, 0), (4, T), padding_mode=ct.PaddingMode.NEG_INF)
    cols = ct.arange(T, dtype=ct.int32)[None, :]  # (1, T) and (4, 1) broadcast against (4, T)
    ones = ct.full((4, 1), 1, dtype=ct.int64)
    v, i, s = ct.reduce((x, cols, ones), axis=1, func=_max_first_count, identity=(-math.inf, 2**30, 0), keepdims=True)
    ct.store(V, (0, 0), v)
    ct.store(ID, (0, 0), i)
    ct.store(S, (0, 0), s)


@ct.kernel
def reverse_scans(X, D, O1, O2, O3, T: CI):
    x = ct.load(X, (0, 0), (T, 4), padding_mode=Z)
    d = ct.load(D, (0,), (T,), padding_mode=Z)
    ct.store(O1, (0, 0), ct.scan(x, 0, lambda a, b: ct.maximum(a, b), -128, reverse=True))
    ct.store(O2, (0, 0), ct.cumsum(x, axis=-2, reverse=True))
    ct.store(O3, (0,), ct.cumprod(ct.where(ct.arange(T, dtype=ct.int32) < D.shape[0], d, 1.0), reverse=True))


def test_three_operand_broadcast_reduce_and_reverse_scans():
    """sm_80 (reductions and scans lower the same on every target)."""
    x = _rng(30).integers(-5, 5, (3, 13)).astype(np.float32)
    v, i, s = np.zeros((3, 1), np.float32), np.zeros((3, 1), np.int32), np.zeros((3, 1), np.int64)
    _launch("sm_80", (1,), three_operand_reduce, (x, v, i, s, 16))
    np.testing.assert_array_equal(v[:, 0], x.max(1))
    np.testing.assert_array_equal(i[:, 0], x.argmax(1))
    assert (s == 16).all(), s
    rng = _rng(31)
    x, d = rng.integers(-100, 100, (11, 4)).astype(np.int8), rng.uniform(0.5, 1.5, 11)
    o1, o2, o3 = np.zeros((11, 4), np.int8), np.zeros((11, 4), np.int8), np.zeros(11)
    _launch("sm_80", (1,), reverse_scans, (x, d, o1, o2, o3, 16))
    np.testing.assert_array_equal(o1, np.maximum.accumulate(x[::-1], axis=0)[::-1])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(o2, np.cumsum(x[::-1], axis=0, dtype=np.int8)[::-1])
    np.testing.assert_allclose(o3, np.cumprod(d[::-1])[::-1], rtol=1e-14)


@ct.kernel
def scalars_in_memory_ops(A, B, C, OUT, n):
    b = ct.bid(0)
    ct.store(A, (b,), 2.5)  # store of a scalar
    r = ct.arange(4, dtype=ct.int32)[:, None]
    c = ct.arange(8, dtype=ct.int16)[None, :]
    ct.scatter(B, (r + b * 4, c * 2), 7, mask=(r + c) % 2 == 0)  # scalar value, broadcast int32 / int16 indices
    ct.store(OUT, (b,), ct.gather(C, (b, n)).reshape((1,)) + 1)  # 0-d indices: a 0-d gather


@ct.kernel
def slice_view_store_f(X, OUT, N, lo, hi, T: CI):
    s = X.slice(axis=-1, start=lo, stop=hi)
    tv = s.tiled_view((4, T), padding_mode=ct.PaddingMode.ZERO)
    b = ct.bid(0)
    ct.store(OUT, (b, 0), tv.load((0, b)).transpose(), order="F")
    ct.store(N, (0,), ct.full((2,), tv.num_tiles(1) * 10 + ct.num_tiles(s, 0, (4, T)), dtype=ct.int32))


@ct.kernel
def grid_3d(OUT):
    i, j, k = ct.bid(0), ct.bid(1), ct.bid(2)
    v = (((i * ct.num_blocks(1) + j) * ct.num_blocks(2) + k) * 1000 + ct.num_blocks(0) * 100 + ct.num_blocks(1) * 10
         + ct.num_blocks(2))
    ct.store(OUT, (i, j, k), ct.full((1, 1, 1), v, dtype=ct.int32))


@pytest.mark.parametrize("sm", SMS)
def test_scalar_stores_scatters_gathers_sliced_views_and_3d_grids(sm):
    a, bb, o = np.zeros(3, np.float32), np.zeros((12, 15), np.int32), np.zeros(3, np.float32)
    c = np.arange(30, dtype=np.float32).reshape(3, 10)
    _launch(sm, (3,), scalars_in_memory_ops, (a, bb, c, o, 4))
    assert (a == 2.5).all()
    r, cc = np.meshgrid(np.arange(12), np.arange(15), indexing="ij")
    col = cc // 2
    np.testing.assert_array_equal(bb, np.where((cc % 2 == 0) & (col < 8) & ((r % 4 + col) % 2 == 0), 7, 0))
    np.testing.assert_array_equal(o, c[:, 4] + 1)

    x = np.arange(3 * 20, dtype=np.float32).reshape(3, 20)
    o, n = np.full((3, 16), -1, np.float32), np.zeros(2, np.int32)
    _launch(sm, (2,), slice_view_store_f, (x, o, n, 5, 17, 8))
    want = np.zeros((3, 16), np.float32)
    want[:, :12] = x[:, 5:17]
    np.testing.assert_array_equal(o, want)
    assert (n == 21).all(), n

    o = np.zeros((2, 3, 4), np.int32)
    _launch(sm, (2, 3, 4), grid_3d, (o,))
    np.testing.assert_array_equal(o, np.arange(24).reshape(2, 3, 4) * 1000 + 234)


# ------------------------------------------------------------------------------ host arrays: lists before strided views, read-only
@ct.kernel
def sum_of_list(Xs, Y, T: CI):
    acc = ct.zeros((T,), dtype=ct.float32)
    for i in range(len(Xs)):
        acc += ct.load(Xs[i], (0,), (T,), padding_mode=Z)
    ct.store(Y, (0,), acc)


@ct.kernel
def increment_each(Xs, T: CI):
    for i in range(len(Xs)):
        ct.store(Xs[i], (0,), ct.load(Xs[i], (0,), (T,), padding_mode=Z) + 1)


@ct.kernel
def add_one(X, Y, T: CI):
    b = ct.bid(0)
    ct.store(Y, (b,), ct.load(X, (b,), (T,), padding_mode=Z) + 1)


def test_strided_output_after_a_list_of_arrays():
    """A strided output array (``big[::2]``) after a list-of-arrays argument got the list's table words (device
    addresses read as floats) written into it: the CPU path numbered the launch's outputs by arrays only, and the
    list's table is a pointer parameter too. Found by this round's list / strided / read-only argument checks."""
    xs = [np.arange(13, dtype=np.float32), np.ones(13, np.float32)]
    big = np.zeros(26, np.float32)
    _launch("sm_80", (1,), sum_of_list, (xs, big[::2], 16))
    np.testing.assert_array_equal(big[::2], np.arange(13) + 1)
    assert not big[1::2].any()


def test_a_store_into_a_read_only_array_is_an_error():
    """A read-only numpy output (``np.broadcast_to``, a frozen array; an item of a list of arrays too) took the
    kernel's stores and dropped them silently (no copy back into a read-only array); now a TilecoreError names the
    argument. Read-only inputs stay fine."""
    x = np.broadcast_to(np.float32(2.0), (40,))
    y = np.zeros(40, np.float32)
    tc.launch(None, (3,), add_one, (x, y, 16), gpu_name="sm_80")
    assert (y == 3).all()
    with pytest.raises(TilecoreError, match="stored into argument 'Y', a read-only numpy array"):
        tc.launch(None, (3,), add_one, (y, np.broadcast_to(np.float32(0), (40,)), 16), gpu_name="sm_80")
    ro = np.zeros(40, np.float32)
    ro.flags.writeable = False
    with pytest.raises(TilecoreError, match="stored into argument 'Y'"):
        tc.launch(None, (3,), add_one, (y, ro, 16), gpu_name="sm_80")
    # items of a list of arrays: read-only inputs are fine, a store into one names the item
    w, s = np.zeros(13, np.float32), np.zeros(26, np.float32)[::2]
    tc.launch(None, (1,), sum_of_list, ([ro[:13], np.broadcast_to(np.float32(1), (13,)), s], w, 16), gpu_name="sm_80")
    assert (w == 1).all()
    with pytest.raises(TilecoreError, match=r"stored into argument 'Xs\[1\]', a read-only numpy array"):
        tc.launch(None, (1,), increment_each, ([w, ro], 16), gpu_name="sm_80")
    assert (w == 2).all()  # the writable arguments keep what the kernel stored
    tc.launch(None, (1,), increment_each, ([w, s], 16), gpu_name="sm_80")
    assert (w == 3).all() and (s == 1).all()


# ------------------------------------------------------------------------------ hints and orderings together, tuple parameters
@ct.kernel
def hints_and_orders(X, Y, Z2, W, TM: CI, TN: CI):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(X, (j, i), (TN, TM), order=(1, 0), padding_mode=ct.PaddingMode.NAN, latency=3, allow_tma=True)
    ct.store(Y, (i, j), t.transpose(), order=(1, 0), latency=7, allow_tma=True)
    u = ct.load(X, (i, j), (TM, TN), padding_mode=Z, memory_order=MO.ACQUIRE, memory_scope=MS.DEVICE)
    ct.store(Z2, (i, j), u * 2, memory_order=MO.RELEASE, memory_scope=MS.BLOCK, allow_tma=False)
    v = ct.load(W, (i, j), (TM, TN), check_bounds=False, latency=1)
    ct.store(W, (i, j), v + 1, check_bounds=False)


@pytest.mark.parametrize("sm", ["sm_90a", "sm_100a"])
def test_transposed_tma_loads_and_stores_next_to_acquire_release_and_unchecked_ones(sm):
    """sm_90a / sm_100a: the targets with TMA (a transposed load / store pair may take it, the acquire load and
    the release store must not, the unchecked pair has no bounds). 37 x 45 f16 on 16 x 16 tiles, a 4 x 2 grid."""
    rng = _rng(40)
    x = rng.standard_normal((37, 45)).astype(np.float16)
    y, z = np.zeros((45, 37), np.float16), np.zeros((37, 45), np.float16)
    w = rng.standard_normal((64, 32)).astype(np.float16)
    w0 = w.copy()
    _launch(sm, (4, 2), hints_and_orders, (x, y, z, w, 16, 16))
    want = np.zeros((45, 37), np.float16)
    want[:32, :] = x[:, :32].T
    np.testing.assert_array_equal(y, want)
    want = np.zeros((37, 45), np.float16)
    want[:, :32] = x[:, :32] * 2
    np.testing.assert_array_equal(z, want)
    np.testing.assert_array_equal(w, w0 + np.float16(1))


@ct.kernel
def tuple_parameters(pair, scale_off, OUT, T: CI):
    a, b = pair
    s, o = scale_off
    i = ct.bid(0)
    ct.store(OUT, (i,), ct.load(a, (i,), (T,), padding_mode=Z) * s + ct.load(b, (i,), (T,), padding_mode=Z) + o)


def test_tuples_of_arrays_and_scalars_as_parameters():
    """sm_80 (parameter passing is target-independent); the second array of the tuple strided."""
    a, out = np.arange(20, dtype=np.float32), np.zeros(20, np.float32)
    _launch("sm_80", (2,), tuple_parameters, ((a, np.full(20, 3, np.float32)), (2.0, 5), out, 16))
    np.testing.assert_array_equal(out, 2 * a + 8)
    _launch("sm_80", (2,), tuple_parameters, ((a, np.ones(40, np.float32)[::2]), (0.5, -1), out, 16))
    np.testing.assert_array_equal(out, 0.5 * a)


# ------------------------------------------------------------------------------ Python forms inside kernels
@ct.function
def _affine(x, scale=2.0, *, shift=1.0):
    return x * scale + shift


@ct.function
def _add_depth(x, d):
    return x if d == 0 else _add_depth(x + 1, d - 1)  # recursion on a constant depth


@ct.kernel
def python_forms(X, OUT, n, T: CI):
    x = ct.load(X, (0,), (T,), padding_mode=Z)
    y = _affine(x) if n > 3 else _affine(x, 3.0, shift=-1.0)  # a runtime condition between two calls
    k = 0
    for s in ct.static_iter((1, 2, 3)):
        k += s * n
    a, (b, c) = 1.0, (2.0, 3.0)
    q = ct.full((T,), len(x.shape) + x.ndim + x.shape[0], dtype=ct.float32)
    ct.store(OUT, (0, 0), (y + k + a + b + c).reshape((1, T)))
    ct.store(OUT, (1, 0), (max(max(x, y), 0.5) + min(x, 0.0) + q).reshape((1, T)))
    ct.store(OUT, (2, 0), _add_depth(ct.zeros((T,), dtype=ct.float32), 3).reshape((1, T)))


def test_defaults_keywords_conditional_calls_and_recursion_in_functions():
    """sm_80 (front-end forms; cuTile itself refuses ``max`` of three values and ``for`` over a plain tuple)."""
    x = np.linspace(-2, 2, 13).astype(np.float32)
    xp = np.zeros(16, np.float32)
    xp[:13] = x
    for n in (2, 5):
        o = np.zeros((3, 16), np.float32)
        _launch("sm_80", (1,), python_forms, (x, o, n, 16))
        y = xp * 2 + 1 if n > 3 else xp * 3 - 1
        np.testing.assert_allclose(o[0], y + 6 * n + 6, rtol=1e-6)
        np.testing.assert_allclose(o[1], np.maximum(np.maximum(xp, y), 0.5) + np.minimum(xp, 0) + 18, rtol=1e-6)
        assert (o[2] == 3).all()
