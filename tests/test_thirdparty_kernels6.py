"""Round 6 of kernels written the way an outside cuTile author writes them: the *inputs* and *launch shapes* rounds
1-5 never tried. Each kernel is this file's own code; each runs in the CPU emulator (``tilecore.cutile.launch`` on
numpy arrays) against numpy, and tileiras compiles its bytecode once per specialisation (round 3's ``_launch``).
Target-independent cases run on sm_80; those whose lowering differs by target (TMA-fed K loops, stride facts of
views) on sm_80 / sm_90a / sm_100a.

Checklist:

- extents 1, tile - 1, tile + 1 and primes; arrays smaller than one tile in every dimension (1-D .. 4-D); a grid of
  one block, grids of 700 blocks on y or z (``ct.num_blocks``);
- numpy layouts: Fortran order, transposed views, steps (``a[:, ::3]``), row steps, offset slices, broadcast
  (stride 0) inputs, zero-size arrays ((0, 17), (17, 0), a 0-extent 4-D array, K = 0 products), shape (1,), a
  0-d array through ``gather`` / ``scatter``; the same layouts feeding TMA K loops on sm_90a / sm_100a; the same
  array (or two views of one memory) as input and output of an in-place kernel, lists of arrays sharing memory;
- every dtype (bool, int8 .. uint64, f16, f32, f64; bf16 / e4m3 / e5m2 through ``bitcast``) as load / store
  element at odd sizes; every ``PaddingMode`` on partial tiles of f16 / f32 / f64; -inf / NaN padding through
  tensor-core K loops;
- int64 index values beyond 2^31 / 2^32 / 2^63 - 1 in gathers / scatters on int32-indexed arrays; int8 / uint8 /
  uint16 / uint64 index tiles at their limits; an array of
  2^33 + 3 elements (a broadcast view: one element of memory) read through ``ct.IndexedWithInt64``: gathers,
  ``num_tiles``, a tile index beyond 2^31 elements; an int64 tile index on an int32-indexed array (cuTile
  truncates it); negative index tiles with masks; ``ct.cdiv`` of odd extents;
- one kernel launched with two shapes / dtypes (two specialisations in one process); 14 arrays of 12 dtypes plus
  three scalars in one kernel;
- tile shapes 1 x 1, 1 x N, N x 1, 1 x 4096, a 4096-element 1-D scan, 3-D tiles with a dimension of 1;
- refusals with a clear error: negative strides, a 0-d ``ct.load``, a grid of 0 / 70000 on y / 2.5, a big-endian
  array, complex / object arrays, a Python list.

Bugs found (fixed, each with its regression test here):

1. ``ct.num_tiles`` (``get_index_space_shape``) of an int64-indexed array with 2^31 elements or more truncated the
   extent to the i32 result before dividing: 2^33 + 3 elements in tiles of 8 gave 1 tile (2^31 + 3: a negative
   count). The division is now done at the extent's width.
2. ``padding_mode=NAN`` / ``NEG_INF`` / ``POS_INF`` / ``NEG_ZERO`` on an integer or bool array compiled (padding
   with zeros) where tileiras' bytecode reader refuses it ("padding_value nan can only be used with floating point
   element types"); and infinities on e4m3 / e2m1, NaN on e2m1, -0 / infinities on e8m0 (no encoding: tileiras
   fails to compile them) compiled to some other value. The verifier now refuses them at the load's line.
3. A broadcast (stride 0) array feeding a TMA K loop on sm_90a / sm_100a failed at launch with "tensor map:
   globalDim in [1, 2^32 - 1], globalStrides multiples of 16 below 2^40" (cuTile's layout facts call a 0 stride a
   multiple of 16 bytes, so the kernel takes TMA unchecked; no tensor map has a 0 stride, cuTile's encoder refuses
   it too). The error now names the argument, its axis and the way out (a copy, or ``tileas.tma=off``).
4. A big-endian numpy array ('>f4') was read as little-endian words: wrong numbers, no error. Now refused.
5. A grid that is neither an int nor a sequence (``2.5``) raised a TypeError traceback. Now a TilecoreError.
6. The same array passed for two parameters (``f(x, x)``, an in-place kernel) lost the kernel's stores when the
   output parameter came first: the emulator copied each argument and wrote both copies back, the unchanged one
   last; the same with lists of arrays (an in-place multi-tensor apply with the output list first; items that are
   rows of an array argument). Arguments and list items whose memory overlaps now share one copy
   (``tilecore.emulate.engine.shared_copies``; a strided view's span is handed over as a view, not a copy, so that
   it is seen to overlap; an isolated launch's child re-creates the overlap from the caller's addresses).
7. ``mma.sync`` in the emulator (sm_80 products) crashed on operands padded with -inf ("internal error in the
   emulator (warp): ValueError: -inf + inf in fsum"): ``math.fsum`` raises on infinities of both signs. It now
   sums as the wgmma / tcgen05 models do (NaN).
"""

from __future__ import annotations

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")

from test_thirdparty_kernels3 import _launch, _tileiras_compiles  # noqa: E402  (emulator run + tileiras check)

import tilecore.cutile as tc  # noqa: E402
from tilecore.errors import TilecoreError  # noqa: E402

SMS = ["sm_80", "sm_90a", "sm_100a"]
TMA_SMS = ["sm_90a", "sm_100a"]
Z = ct.PaddingMode.ZERO
PM = ct.PaddingMode
CI = ct.Constant[int]


def _rng(seed):
    return np.random.default_rng(seed)


def _cdiv(a, b):
    return -(-a // b)


def _line_of(text: str) -> int:
    """The line of this file that holds ``text`` (first one)."""
    with open(__file__) as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line)


# ------------------------------------------------------------------------------ extents, tiny arrays, grids
@ct.kernel
def twice_1d(X, Y, T: CI):
    b = ct.bid(0)
    ct.store(Y, (b,), ct.load(X, (b,), (T,), padding_mode=Z) * 2)


@pytest.mark.parametrize("n", [1, 31, 32, 33, 37, 97])
def test_extents_around_the_tile_size(n):
    """sm_80: extent 1, tile - 1, tile, tile + 1, primes (one specialisation for all but 32: its extent is a
    multiple of 16, a layout fact)."""
    x = _rng(n).standard_normal(n).astype(np.float32)
    y = np.full(n, -1, np.float32)
    _launch("sm_80", (_cdiv(n, 32),), twice_1d, (x, y, 32))
    np.testing.assert_array_equal(y, 2 * x)


@ct.kernel
def plus_one_3d(X, Y, T0: CI, T1: CI, T2: CI):
    i, j, k = ct.bid(0), ct.bid(1), ct.bid(2)
    ct.store(Y, (i, j, k), ct.load(X, (i, j, k), (T0, T1, T2), padding_mode=Z) + 1)


@ct.kernel
def plus_one_4d(X, Y, T3: CI):
    i, j, k = ct.bid(0), ct.bid(1), ct.bid(2)
    ct.store(Y, (i, j, k, 0), ct.load(X, (i, j, k, 0), (1, 2, 4, T3), padding_mode=Z) + 1)


@ct.kernel
def block_counts(OUT):
    i, j, k = ct.bid(0), ct.bid(1), ct.bid(2)
    v = ct.num_blocks(0) * 1000000 + ct.num_blocks(1) * 1000 + ct.num_blocks(2)
    ct.store(OUT, (i, j, k), ct.full((1, 1, 1), v, dtype=ct.int32) + (i + j + k) * 0)


@pytest.mark.parametrize("grid, shape, tile", [((700, 1, 1), (700, 3, 2), (1, 4, 2)),
                                               ((1, 700, 1), (2, 700, 3), (2, 1, 4)),
                                               ((1, 1, 700), (2, 3, 700), (2, 4, 1)),
                                               ((1, 1, 1), (1, 1, 1), (2, 4, 8))])
def test_grids_of_700_blocks_on_each_axis_and_a_single_block(grid, shape, tile):
    """sm_80: a grid with 700 blocks on x, y or z (one element of a 3-D array each) and a single block over a
    1 x 1 x 1 array (a tile of 64 elements for one)."""
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    y = np.zeros_like(x)
    _launch("sm_80", grid, plus_one_3d, (x, y, *tile))
    np.testing.assert_array_equal(y, x + 1)


def test_num_blocks_on_a_grid_long_in_z():
    o = np.zeros((1, 2, 700), np.int32)
    _launch("sm_80", (1, 2, 700), block_counts, (o,))
    assert (o == 1 * 1000000 + 2 * 1000 + 700).all()


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (1, 2, 3, 5), (2, 1, 3, 1)])
def test_4d_arrays_smaller_than_a_tile_in_every_dimension(shape):
    """sm_80: tiles (1, 2, 4, 8) over 4-D arrays no larger than them on any axis (1-D .. 3-D: above)."""
    x = np.arange(np.prod(shape), dtype=np.int16).reshape(shape) - 7
    y = np.zeros_like(x)
    _launch("sm_80", (shape[0], _cdiv(shape[1], 2), _cdiv(shape[2], 4)), plus_one_4d, (x, y, 8))
    np.testing.assert_array_equal(y, x + 1)


# ------------------------------------------------------------------------------ numpy layouts
@ct.kernel
def plus_one_2d(X, Y, T0: CI, T1: CI):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(Y, (i, j), ct.load(X, (i, j), (T0, T1), padding_mode=Z) + 1)


def _layout(kind: str, shape, dtype=np.float32, seed=0):
    """An array of ``shape`` in layout ``kind`` (values small integers: exact in every float type)."""
    m, n = shape
    base = _rng(seed).integers(-4, 5, shape).astype(dtype)
    if kind == "C":
        return base
    if kind == "F":
        return np.asfortranarray(base)
    if kind == "T":  # a transposed view of a C array
        return np.ascontiguousarray(base.T).T
    if kind == "step":  # a[:, ::3]
        big = np.zeros((m, 3 * n), dtype)
        big[:, ::3] = base
        return big[:, ::3]
    if kind == "rows":  # every other row
        big = np.zeros((2 * m, n), dtype)
        big[::2] = base
        return big[::2]
    if kind == "slice":  # an offset window of a wider array (row stride a multiple of 16 bytes)
        big = np.zeros((m + 3, n + 24), dtype)
        big[1:m + 1, 8:n + 8] = base
        return big[1:m + 1, 8:n + 8]
    if kind == "bcast_rows":
        return np.broadcast_to(base[:1], shape)
    if kind == "bcast_cols":
        return np.broadcast_to(base[:, :1], shape)
    raise ValueError(kind)


LAYOUTS = ["C", "F", "T", "step", "rows", "slice", "bcast_rows", "bcast_cols"]


@pytest.mark.parametrize("kind", LAYOUTS)
def test_numpy_layouts_as_inputs_and_outputs(kind):
    """sm_80: each layout as the input (and, where writable, as the output: a Fortran / transposed / stepped
    output view gets exactly its own elements)."""
    x = _layout(kind, (7, 30))
    y = np.zeros((7, 30), np.float32)
    _launch("sm_80", (2, 4), plus_one_2d, (x, y, 4, 8))
    np.testing.assert_array_equal(y, x + 1)
    if x.flags.writeable:
        out = _layout(kind, (7, 30), seed=99)
        before = out.base.copy() if out.base is not None else None
        src = np.ascontiguousarray(x)
        _launch("sm_80", (2, 4), plus_one_2d, (src, out, 4, 8))
        np.testing.assert_array_equal(out, src + 1)
        if before is not None and kind in ("step", "rows", "slice"):  # the gaps of the view are untouched
            mask = np.ones(out.base.shape, bool)
            mask[{"step": (slice(None), slice(None, None, 3)), "rows": (slice(None, None, 2),),
                  "slice": (slice(1, 8), slice(8, 38))}[kind]] = False
            np.testing.assert_array_equal(out.base[mask], before[mask])


@ct.kernel
def plus_one_into_first(Y, X, T0: CI, T1: CI):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(Y, (i, j), ct.load(X, (i, j), (T0, T1), padding_mode=Z) + 1)


@pytest.mark.parametrize("kind", ["C", "F", "step", "slice"])
def test_the_same_array_as_input_and_output(kind):
    """Bug 6: ``f(x, x)`` (an in-place kernel): the emulator gave each parameter its own copy and wrote both back,
    the later parameter's (unchanged) copy over the earlier's results: with the output parameter first nothing
    changed. Arguments sharing memory now share one copy (sm_80; both parameter orders)."""
    for kernel in (plus_one_2d, plus_one_into_first):
        x = _layout(kind, (7, 30))
        want = x + 1
        _launch("sm_80", (2, 4), kernel, (x, x, 4, 8))
        np.testing.assert_array_equal(x, want)
    base = np.arange(7 * 30, dtype=np.float32).reshape(7, 30)  # a strided view and its C-contiguous base
    view = base[:, ::3]
    want = base.copy()
    want[:, ::3] += 1
    _launch("sm_80", (2, 2), plus_one_into_first, (view, base[:, ::3], 4, 8))
    np.testing.assert_array_equal(base, want)
    if kind == "step":  # an isolated launch (a child process: the arrays travel pickled, each a copy of its own)
        x = _layout(kind, (7, 30))
        want = x + 1
        tc.launch(None, (2, 4), plus_one_into_first, (x, x, 4, 8), isolate=True)
        np.testing.assert_array_equal(x, want)


@ct.kernel
def foreach_double(Ys, Xs, TILE: CI):
    i, j = ct.bid(0), ct.bid(1)
    x, y = Xs[i], Ys[i]
    if j * TILE < x.shape[0]:
        ct.store(y, (j,), ct.load(x, (j,), (TILE,), padding_mode=Z) * 2)


@ct.kernel
def rows_from_list(Y, Xs, TILE: CI):
    i, j = ct.bid(0), ct.bid(1)
    x = Xs[i]
    if j * TILE < x.shape[0]:
        ct.store(Y, (i, j), ct.reshape(ct.load(x, (j,), (TILE,), padding_mode=Z) * 2, (1, TILE)))


def test_lists_of_arrays_sharing_memory_with_each_other_and_an_array_argument():
    """Bug 6 for lists: an in-place multi-tensor apply (the same list, C-contiguous and strided items, as output and
    input), and list items that are rows of the array argument written (each item and argument had its own copy;
    the items' unchanged copies were written back last)."""
    xs = [np.arange(n, dtype=np.float32) + 1 for n in (7, 33)]
    want = [2 * x for x in xs]
    _launch("sm_80", (2, 2), foreach_double, (xs, xs, 32))
    for x, w in zip(xs, want):
        np.testing.assert_array_equal(x, w)
    base = np.arange(80, dtype=np.float32).reshape(2, 40) + 1
    want = base.copy()
    want[0, :14:2] *= 2
    want[1, ::3] *= 2
    _launch("sm_80", (2, 2), foreach_double, ([base[0, :14:2], base[1, ::3]], [base[0, :14:2], base[1, ::3]], 32))
    np.testing.assert_array_equal(base, want)
    y = np.zeros((2, 64), np.float32)
    y[0, :7], y[1, :33] = 1, 3
    _launch("sm_80", (2, 2), rows_from_list, (y, [y[0, :7], y[1, :33]], 32))
    want = np.zeros((2, 64), np.float32)
    want[0, :7], want[1, :33] = 2, 6
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("shape", [(0, 17), (17, 0)])
def test_zero_size_arrays(shape):
    """sm_80: a launch over zero-size arrays runs (the tile is all padding; nothing is stored)."""
    x, y = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    _launch("sm_80", (1, 1), plus_one_2d, (x, y, 4, 8))
    assert y.shape == shape


@ct.kernel
def sum_4d(X, OUT, T0: CI, T1: CI, T2: CI, T3: CI):
    t = ct.load(X, (0, 0, 0, 0), (T0, T1, T2, T3), padding_mode=Z)
    ct.store(OUT, (0, 0), ct.sum(ct.sum(t, axis=3), axis=0).astype(OUT.dtype))


@pytest.mark.parametrize("shape, kind", [((2, 3, 1, 5), "F"), ((3, 5, 2, 7), "T"), ((0, 3, 2, 5), "C"),
                                         ((4, 8, 2, 8), "F")])
def test_4d_fortran_transposed_and_empty_arrays_reduced(shape, kind):
    """sm_80: a 4-D reduction (axes 0 and 3) of a Fortran-order array, of a view with axes 0 and 3 swapped, and
    of an array with a 0 extent (sums 0)."""
    x = _rng(5).integers(-9, 9, shape).astype(np.int32)
    if kind == "F":
        x = np.asfortranarray(x)
    elif kind == "T":
        x = np.ascontiguousarray(x.transpose(3, 1, 2, 0)).transpose(3, 1, 2, 0)
    o = np.full((shape[1], shape[2]), 5, np.int64)
    _launch("sm_80", (1,), sum_4d, (x, o, 4, 8, 2, 8))
    np.testing.assert_array_equal(o, x.sum(axis=(0, 3)))


@ct.kernel
def zero_d_through_gather(S, OUT, ONE):
    s = ct.gather(S, ())  # a 0-d array: a gather with no indices (ct.load of it is refused, round 3)
    v = ct.load(ONE, (0,), (1,))
    ct.scatter(OUT, (), s * 3 + ct.sum(v))
    ct.store(ONE, (0,), v + s)


def test_zero_d_and_one_element_arrays():
    s, out, one = np.array(2.5, np.float32), np.array(0.0, np.float32), np.array([4.0], np.float32)
    _launch("sm_80", (1,), zero_d_through_gather, (s, out, one))
    assert out == 11.5 and one[0] == 6.5


@pytest.mark.parametrize("view", ["rows", "cols"])
def test_negative_strides_are_refused_by_name(view):
    """cuTile's specialisation has no negative strides (it refuses them too)."""
    base = np.arange(7 * 30, dtype=np.float32).reshape(7, 30)
    x = base[::-1] if view == "rows" else base[:, ::-1]
    with pytest.raises(TilecoreError, match=r"argument 'X' has negative strides .* strides >= 0"):
        tc.launch(None, (2, 4), plus_one_2d, (x, np.zeros((7, 30), np.float32), 4, 8))


# ------------------------------------------------------------------------------ layouts into TMA K loops
@ct.kernel
def kloop_mm(A, B, C, TM: CI, TN: CI, TK: CI):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        a = ct.load(A, (i, k), (TM, TK), padding_mode=Z)
        b = ct.load(B, (k, j), (TK, TN), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (i, j), acc.astype(C.dtype))


@pytest.mark.parametrize("sm", TMA_SMS)
@pytest.mark.parametrize("ka, kb", [("C", "C"), ("slice", "slice"), ("F", "C"), ("C", "T")])
def test_layouts_feeding_tma_k_loops(sm, ka, kb):
    """70 x 45 x 100 f16 products whose operands are C arrays, offset windows of wider arrays, Fortran order and
    transposed views, into a stepped f32 output; the K loop reads them by TMA (asserted in the PTX)."""
    m, n, k = 70, 45, 100
    a, b = _layout(ka, (m, k), np.float16, 1), _layout(kb, (k, n), np.float16, 2)
    c = np.zeros((m, n + 3), np.float32)[:, :n]
    _launch(sm, (_cdiv(m, 64), _cdiv(n, 64)), kloop_mm, (a, b, c, 64, 64, 32))
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64))
    assert "cp.async.bulk.tensor" in tc.compile(kloop_mm, (a, b, c, 64, 64, 32), gpu_name=sm).ptx


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("mnk", [(70, 45, 0), (1, 1, 1), (65, 1, 17)])
def test_degenerate_products(sm, mnk):
    """K = 0 (no iteration: C = 0), a 1 x 1 x 1 product, one output column."""
    if sm == "sm_80" and mnk != (70, 45, 0):
        pytest.skip("one sm_80 case (mma.sync emulation costs 2 s a case)")
    m, n, k = mnk
    a, b = _layout("C", (m, k), np.float16, 3), _layout("C", (k, n), np.float16, 4)
    c = np.full((m, n), 7, np.float32)
    _launch(sm, (_cdiv(m, 64), _cdiv(n, 64)), kloop_mm, (a, b, c, 64, 64, 32))
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64))


def _padded_product_kernel(mode):
    @ct.kernel
    def padded_mm(A, B, C, TM: CI, TN: CI, TK: CI):
        i, j = ct.bid(0), ct.bid(1)
        acc = ct.zeros((TM, TN), ct.float32)
        for k in range(ct.cdiv(A.shape[1], TK)):
            acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=mode),
                         ct.load(B, (k, j), (TK, TN), padding_mode=mode), acc)
        ct.store(C, (i, j), acc.astype(C.dtype))
    return padded_mm


PADDED_MM = {m: _padded_product_kernel(m) for m in (PM.NEG_INF, PM.NAN)}


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("mode", [PM.NEG_INF, PM.NAN], ids=lambda m: m.name)
def test_inf_and_nan_padding_through_tensor_core_products(sm, mode):
    """Bug 7: K loops over operands padded with -inf / NaN (70 x 48 x 50 in 64 x 64 x 32 tiles: the padded rows
    and K columns meet in the products): (-inf) x (-inf) = inf, -inf x 0 and inf - inf = NaN. The sm_80
    emulator's mma.sync summed the products with ``math.fsum``, which raises on inf - inf ("internal error in
    the emulator (warp): ValueError: -inf + inf in fsum"); it now gives NaN as the hardware's adder does (as the
    wgmma / tcgen05 models did). The numbers: numpy on the padded operands."""
    m, n, k = 70, 48, 50
    a, b = _layout("slice", (m, k), np.float16, 9), _layout("slice", (k, n), np.float16, 10)
    b[:, 5] = 0  # -inf x 0 in the padded K rows of A: NaN in column 5
    c = np.zeros((m, n), np.float32)
    _launch(sm, (_cdiv(m, 64), _cdiv(n, 64)), PADDED_MM[mode], (a, b, c, 64, 64, 32))
    fill = -np.inf if mode == PM.NEG_INF else np.nan
    ap, bp = np.full((128, 64), fill), np.full((64, 64), fill)
    ap[:m, :k], bp[:k, :n] = a, b
    with np.errstate(invalid="ignore"):
        want = (ap[:, None, :] * bp.T[None, :, :]).sum(axis=2)[:m, :n]
    np.testing.assert_array_equal(c, want.astype(np.float32))


@pytest.mark.parametrize("sm", TMA_SMS)
@pytest.mark.parametrize("which", ["A", "B"])
def test_a_broadcast_operand_of_a_tma_k_loop_is_a_clear_error(sm, which):
    """Bug 3: a stride-0 operand (``np.broadcast_to``) of a TMA K loop failed with the encoder's bare "tensor map:
    globalDim ..., globalStrides multiples of 16 below 2^40"; now the error names the argument and the way out,
    which works."""
    m, n, k = 70, 45, 100
    a = _layout("bcast_rows" if which == "A" else "slice", (m, k), np.float16, 5)
    b = _layout("bcast_rows" if which == "B" else "slice", (k, n), np.float16, 6)
    c = np.zeros((m, n), np.float32)
    args = (a, b, c, 64, 64, 32)
    with pytest.raises(TilecoreError, match=rf"argument '{which}' has stride 0 on axis 0 \(a broadcast view\), but "
                                            r"kernel 'kloop_mm' reads it by TMA.*tileas.tma"):
        tc.launch(None, (2, 1), kloop_mm, args, gpu_name=sm)
    tc.launch(None, (2, 1), kloop_mm, args, gpu_name=sm, options={"tileas.tma": "off"})
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64))


# ------------------------------------------------------------------------------ every dtype, padding modes
@ct.kernel
def select_copy_compare(X, Y, S, W, C, T: CI):
    b = ct.bid(0)
    x = ct.load(X, (b,), (T,), padding_mode=Z)
    y = ct.load(Y, (b,), (T,), padding_mode=Z)
    ct.store(S, (b,), ct.where(x > y, x, y))
    ct.store(W, (b,), x)
    ct.store(C, (b,), (x == y).astype(ct.int8) + (x < y).astype(ct.int8) * 2)


DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
          np.float32, np.float64]


def _values(rng, dt, n):
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(dt)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    return (rng.standard_normal(n) * 100).astype(dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_dtype_as_load_and_store_element_at_odd_sizes(dt):
    """sm_80: 37 and 1 elements in tiles of 16 (full ranges of the integer types; equal pairs every third)."""
    rng = _rng(7)
    for n in (37, 1):
        x, y = _values(rng, dt, n), _values(rng, dt, n)
        y[::3] = x[::3]
        s, w, c = np.zeros(n, dt), np.zeros(n, dt), np.zeros(n, np.int8)
        _launch("sm_80", (_cdiv(n, 16),), select_copy_compare, (x, y, s, w, c, 16))
        np.testing.assert_array_equal(s, np.where(x > y, x, y))
        np.testing.assert_array_equal(w, x)
        np.testing.assert_array_equal(c, (x == y).astype(np.int8) + (x < y).astype(np.int8) * 2)


@ct.kernel
def narrow_floats_by_bitcast(BF, F8A, F8B, OUT, T: CI):
    b = ct.bid(0)
    bf = ct.bitcast(ct.load(BF, (b,), (T,), padding_mode=Z), ct.bfloat16)
    e4 = ct.bitcast(ct.load(F8A, (b,), (T,), padding_mode=Z), ct.float8_e4m3fn)
    e5 = ct.bitcast(ct.load(F8B, (b,), (T,), padding_mode=Z), ct.float8_e5m2)
    ct.store(OUT, (b,), bf.astype(ct.float32) + e4.astype(ct.float32) * 10 + e5.astype(ct.float32) * 100)


@pytest.mark.parametrize("sm", ["sm_90a"])
def test_bf16_and_8_bit_floats_through_bitcast_at_odd_sizes(sm):
    """numpy has no bf16 / 8-bit float arrays here (no ml_dtypes): their codes travel as uint16 / uint8 and are
    bitcast in the kernel (8-bit floats: sm_89+). Values: small integers, exact in each format."""
    n = 23
    v = np.arange(n) % 7 - 3
    bf = (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    from tilecore.narrow_floats import encode

    f8a = np.array([encode(float(x), "f8E4M3FN") for x in v], np.uint8)
    f8b = np.array([encode(float(x), "f8E5M2") for x in v], np.uint8)
    o = np.zeros(n, np.float32)
    _launch(sm, (_cdiv(n, 16),), narrow_floats_by_bitcast, (bf, f8a, f8b, o, 16))
    np.testing.assert_array_equal(o, v * 111.0)


def _pad_kernel(mode):
    @ct.kernel
    def pad_rows(X, Y, T0: CI, T1: CI):
        i = ct.bid(0)
        ct.store(Y, (i, 0), ct.load(X, (i, 0), (T0, T1), padding_mode=mode))
    return pad_rows


PAD = {m: _pad_kernel(m) for m in PM}
PAD_VALUE = {PM.ZERO: 0.0, PM.NEG_ZERO: -0.0, PM.NAN: np.nan, PM.POS_INF: np.inf, PM.NEG_INF: -np.inf}


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_every_padding_mode_on_partial_tiles(dt):
    """sm_80: a 5 x 13 array in (4, 16) tiles: the 3 columns right of it and the 3 rows below it (second tile)
    hold the mode's value (signs of zeros checked); UNDETERMINED only keeps the array's own elements."""
    x = (np.arange(5 * 13) % 7 - 3).astype(dt).reshape(5, 13)
    for mode, kernel in PAD.items():
        y = np.full((8, 16), 9, dt)
        _launch("sm_80", (2,), kernel, (x, y, 4, 16))
        np.testing.assert_array_equal(y[:5, :13], x)
        if mode in PAD_VALUE:
            pad = np.concatenate([y[:5, 13:].ravel(), y[5:].ravel()])
            np.testing.assert_array_equal(pad, np.full(pad.shape, PAD_VALUE[mode], dt))
            assert (np.signbit(pad) == np.signbit(dt(PAD_VALUE[mode]))).all()


@pytest.mark.parametrize("dt", [np.int32, np.uint8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_float_padding_of_an_integer_array_is_a_located_error(dt):
    """Bug 2: tileiras' bytecode reader refuses a NaN / inf / -0 padding on an integer or bool array; tilecore
    padded with zeros. Now a located error (ZERO and UNDETERMINED still work: the dtype test above)."""
    x, y = np.zeros((3, 5), dt), np.zeros((4, 8), dt)
    for mode in (PM.NAN, PM.NEG_INF, PM.POS_INF, PM.NEG_ZERO):
        with pytest.raises(TilecoreError) as e:
            tc.launch(None, (1,), PAD[mode], (x, y, 4, 8))
        where = f"test_thirdparty_kernels6.py:{_line_of('padding_mode=mode))')}:"
        assert where in str(e.value) and f"padding_value {mode.value} can only be used with floating point" \
            in str(e.value)
    assert _tileiras_compiles(PAD[PM.NAN], (x, y, 4, 8), "sm_80") in (False, None)


def _narrow_pad_kernel(mode):
    @ct.kernel
    def pad_narrow(X, Y, T0: CI, T1: CI):
        ct.store(Y, (0, 0), ct.load(X, (0, 0), (T0, T1), padding_mode=mode).astype(ct.float32))
    return pad_narrow


@pytest.mark.parametrize("dt, mode", [("f8e4m3", PM.POS_INF), ("f8e8m0", PM.NEG_ZERO), ("f4", PM.NAN),
                                      ("f8e5m2", PM.NEG_INF), ("f8e4m3", PM.NAN)])
def test_padding_values_a_narrow_float_cannot_hold(dt, mode):
    """Bug 2: e4m3 has no infinities, e2m1 no NaN / infinities, e8m0 no sign; tileiras fails to compile such a
    padding (exit 5, no message), tilecore padded with another value. Now a located error naming the type; e5m2
    infinities and e4m3 NaN still compile. (Compiled from spellings: numpy has no such arrays here.)"""
    import subprocess
    import tempfile

    from tilecore.cutile.kernel import export_bytecode
    from tilecore.cutile.specialize import specs_of
    from tilecore.serialize import find_nvidia_tool

    kernel, sig = _narrow_pad_kernel(mode), (f"{dt}[2]", "f32[2]", 4, 8)
    holds = (dt, mode) in (("f8e5m2", PM.NEG_INF), ("f8e4m3", PM.NAN))
    if holds:
        tc.compile(kernel, sig, gpu_name="sm_100a")
    else:
        with pytest.raises(TilecoreError, match=rf"padding_value {mode.value} has no encoding in f"):
            tc.compile(kernel, sig, gpu_name="sm_100a")
    exe = find_nvidia_tool("tileiras")
    if exe is not None:
        with tempfile.TemporaryDirectory() as d:
            with open(f"{d}/k.tileirbc", "wb") as fh:
                fh.write(export_bytecode(kernel, specs_of(kernel, sig), "pad_narrow"))
            r = subprocess.run([exe, "--gpu-name=sm_100", "-o", f"{d}/k.cubin", f"{d}/k.tileirbc"],
                               capture_output=True)
        assert (r.returncode == 0) == holds


# ------------------------------------------------------------------------------ index values near the limits
@ct.kernel
def gather_by(X, IDX, OUT, T: CI):
    b = ct.bid(0)
    ct.store(OUT, (b,), ct.gather(X, ct.load(IDX, (b,), (T,), padding_mode=Z), padding_value=-1))


@ct.kernel
def scatter_odd(X, IDX, V, T: CI):
    b = ct.bid(0)
    idx = ct.load(IDX, (b,), (T,), padding_mode=Z)
    ct.scatter(X, idx, ct.load(V, (b,), (T,), padding_mode=Z), mask=(idx % 2) == 1)


BIG = np.array([0, 3, 2**32 + 3, -1, 2**31, -2**31, 2**31 - 1, 9, 10, -(2**32) + 2, 2**63 - 1, -2**63, 5], np.int64)


def test_int64_index_values_beyond_32_bits_on_an_int32_indexed_array():
    """sm_80: gathers / scatters through int64 index tiles whose values pass 2^31, 2^32 and 2^63 - 1 (out of
    bounds: padding / no store; never wrapped to the low 32 bits: 2^32 + 3 is not 3)."""
    x = np.arange(10, dtype=np.int32) * 10
    o = np.zeros(BIG.size, np.int32)
    _launch("sm_80", (_cdiv(BIG.size, 8),), gather_by, (x, BIG, o, 8))
    inside = (BIG >= 0) & (BIG < 10)
    np.testing.assert_array_equal(o, np.where(inside, x[np.clip(BIG, 0, 9)], -1))
    t = np.zeros(11, np.float32)
    idx = np.array([1, 3, 2**32 + 5, -1, 2**31 + 1, 7, -(2**32) + 9, 9, 2, 11, 13], np.int64)
    v = np.arange(1, 12, dtype=np.float32)
    _launch("sm_80", (2,), scatter_odd, (t, idx, v, 8))
    want = np.zeros(11, np.float32)
    keep = (idx % 2 == 1) & (idx >= 0) & (idx < 11)
    want[idx[keep]] = v[keep]
    np.testing.assert_array_equal(t, want)


@ct.kernel
def scatter_where_nonzero(X, IDX, T: CI):
    b = ct.bid(0)
    i = ct.load(IDX, (b,), (T,), padding_mode=Z)
    ct.scatter(X, i, ct.arange(T, dtype=ct.int32) + 100, mask=i != 0)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.uint16, np.uint64], ids=lambda d: np.dtype(d).name)
def test_narrow_and_unsigned_index_tiles_at_their_limits(dt):
    """sm_80: gathers / scatters by int8 (-1, -128: out of bounds), uint8 / uint16 (255, 65535) and uint64 (2^64 - 1:
    out of bounds, not -1) index tiles."""
    info = np.iinfo(dt)
    idx = np.array([0, 1, -1 if info.min < 0 else info.max, info.max, info.min, 5, min(info.max, 200), 3], dt)
    wide = [int(v) for v in idx]
    x = np.arange(300, dtype=np.int32) * 10
    o = np.zeros(idx.size, np.int32)
    _launch("sm_80", (1,), gather_by, (x, idx, o, 8))
    np.testing.assert_array_equal(o, [x[v] if 0 <= v < 300 else -1 for v in wide])
    y = np.zeros(300, np.int32)
    _launch("sm_80", (1,), scatter_where_nonzero, (y, idx, 8))
    want = np.zeros(300, np.int32)
    for k, v in enumerate(wide):
        if v != 0 and 0 <= v < 300:
            want[v] = 100 + k
    np.testing.assert_array_equal(y, want)


@ct.kernel
def huge_array(X: ct.IndexedWithInt64, IDX, OUT, N: ct.ScalarInt64, T: CI):
    ct.store(OUT, (0,), ct.gather(X, ct.load(IDX, (0,), (T,), padding_mode=Z), padding_value=-1.0))
    n = ct.num_tiles(X, 0, (T,))
    ct.store(OUT, (1,), ct.load(X, (n - 1,), (T,), padding_mode=PM.NAN))
    ct.store(OUT, (2,), ct.full((T,), n, dtype=ct.int64).astype(ct.float32))
    ct.store(OUT, (3,), ct.load(X, (N,), (T,), padding_mode=PM.NAN))


@pytest.mark.parametrize("n", [2**20 + 3, 2**31 + 3, 2**33 + 3])
def test_arrays_of_more_than_2_to_the_31_elements(n):
    """Bug 1: an array of n elements (a broadcast view: one element of memory, int64 index): gathers at 2^31,
    2^32 + 1, n - 1, n; ``num_tiles`` in tiles of 8 (was 1 for 2^33 + 3, negative for 2^31 + 3: the extent was
    truncated to the i32 count before dividing), the last tile by that count and by an int64 scalar (3 elements,
    then NaN)."""
    x = np.broadcast_to(np.float32(2.5), (n,))
    idx = np.array([0, 2**31, 2**32 + 1, n - 1, n, -1, 5, 2**40], np.int64)
    o = np.zeros(32, np.float32)
    _launch("sm_80", (1,), huge_array, (x, idx, o, np.int64(n // 8), 8))
    np.testing.assert_array_equal(o[:8], np.where((idx >= 0) & (idx < n), 2.5, -1.0).astype(np.float32))
    tail = np.array([2.5] * 3 + [np.nan] * 5, np.float32)
    np.testing.assert_array_equal(o[8:16], tail)
    assert (o[16:24] == np.float32(_cdiv(n, 8))).all()
    np.testing.assert_array_equal(o[24:], tail)


@ct.kernel
def tile_at(X, OUT, far, T: CI):
    ct.store(OUT, (0,), ct.load(X, (far,), (T,), padding_mode=PM.NEG_INF))


def test_an_int64_tile_index_on_an_int32_indexed_array_wraps_as_cutile_exports_it():
    """cuTile exports ``ct.load(X, (far,), ...)`` of an int64 ``far`` on an int32-indexed array with a ``trunci``
    to i32 (tileiras compiles the same bytecode): 2^32 + 1 is tile 1, -(2^32) + 1 tile 1, -1 out of bounds."""
    x = np.arange(20, dtype=np.float32)
    for far, tile in ((2**32 + 1, 1), (-(2**32) + 1, 1), (2**33, 0), (-1, None)):
        o = np.zeros(8, np.float32)
        _launch("sm_80", (1,), tile_at, (x, o, np.int64(far), 8))
        want = np.full(8, -np.inf, np.float32) if tile is None else x[8 * tile:8 * tile + 8]
        np.testing.assert_array_equal(o, want)


@ct.kernel
def shifted_masked(X, OUT, T: CI):
    b = ct.bid(0)
    i = ct.arange(T, dtype=ct.int32) - 3 + b * T
    ok = i >= 0
    g = ct.gather(X, i, mask=ok, padding_value=7)
    ct.scatter(OUT, i - 1, g, mask=ok & (i - 1 >= 0))


def test_negative_index_tiles_under_masks():
    """sm_80: indices from -3, masked off below 0 (gather pads 7 there) and shifted by -1 for the scatter."""
    x = np.arange(21, dtype=np.float32) + 100
    o = np.full(21, -5, np.float32)
    _launch("sm_80", (3,), shifted_masked, (x, o, 8))
    i = np.arange(24) - 3
    g = np.where(i >= 0, np.where(i < 21, x[np.clip(i, 0, 20)], 7), 7)
    want = np.full(21, -5, np.float32)
    for ii, gg in zip(i, g):
        if 0 <= ii - 1 < 21:
            want[ii - 1] = gg
    np.testing.assert_array_equal(o, want)


@ct.kernel
def cdiv_sum(X, OUT, T: CI):
    n = ct.cdiv(X.shape[0], T)
    acc = ct.zeros((T,), ct.int64)
    for k in range(n):
        acc = acc + ct.load(X, (k,), (T,), padding_mode=Z)
    ct.store(OUT, (0,), ct.full((1,), n, dtype=ct.int64))
    ct.store(OUT, (1,), ct.sum(acc, axis=0, keepdims=True))


def test_cdiv_of_odd_extents():
    for n in (1, 7, 9, 13, 97):
        x = np.arange(n, dtype=np.int64) * 3 + 1
        o = np.zeros(2, np.int64)
        _launch("sm_80", (1,), cdiv_sum, (x, o, 8))
        assert o[0] == _cdiv(n, 8) and o[1] == x.sum()


# ------------------------------------------------------------------------------ specialisations, many parameters
def test_one_kernel_two_specialisations_in_one_process():
    """sm_80: ``twice_1d`` on f32 / 33 then int16 / 64 then f32 / 33 again: two compiled variants, each right."""
    a, b = np.arange(33, dtype=np.float32), np.arange(64, dtype=np.int16) - 30
    ya, yb = np.zeros_like(a), np.zeros_like(b)
    _launch("sm_80", (2,), twice_1d, (a, ya, 32))
    _launch("sm_80", (2,), twice_1d, (b, yb, 32))
    ya2 = np.zeros_like(a)
    _launch("sm_80", (2,), twice_1d, (a + 1, ya2, 32))
    np.testing.assert_array_equal(ya, 2 * a)
    np.testing.assert_array_equal(yb, 2 * b)
    np.testing.assert_array_equal(ya2, 2 * (a + 1))
    ka, kb = tc.compile(twice_1d, (a, ya, 32)), tc.compile(twice_1d, (b, yb, 32))
    assert ka is not kb and ka.ptx != kb.ptx


@ct.function
def _f64(X, b, T):
    return ct.load(X, (b,), (T,), padding_mode=Z).astype(ct.float64)


@ct.kernel
def fourteen_arrays(A, B, C, D, E, F, G, H, I, J, K, L, M, N, s1, s2: CI, s3, T: CI):  # noqa: E741
    b = ct.bid(0)
    a = _f64(A, b, T) + _f64(B, b, T) + _f64(C, b, T) + _f64(D, b, T) + _f64(E, b, T) + _f64(F, b, T)
    a = a + _f64(G, b, T) + _f64(H, b, T) + _f64(I, b, T) + _f64(J, b, T) + _f64(K, b, T)
    a = a * s1 + s2 + s3
    ct.store(L, (b,), a)
    ct.store(M, (b,), a.astype(ct.int16))
    ct.store(N, (b,), a > 10)


def test_fourteen_arrays_of_twelve_dtypes_and_three_scalars():
    n = 37
    rng = _rng(0)
    dts = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
           np.float32]
    ins = [rng.integers(0, 5, n).astype(d) for d in dts]
    L, M, N = np.zeros(n, np.float64), np.zeros(n, np.int16), np.zeros(n, np.bool_)
    _launch("sm_80", (_cdiv(n, 16),), fourteen_arrays, (*ins, L, M, N, np.float64(1.5), 3, np.int8(-2), 16))
    want = sum(x.astype(np.float64) for x in ins) * 1.5 + 3 - 2
    np.testing.assert_array_equal(L, want)
    np.testing.assert_array_equal(M, want.astype(np.int16))
    np.testing.assert_array_equal(N, want > 10)


# ------------------------------------------------------------------------------ tile shapes at the edges
@ct.kernel
def triple_2d(X, Y, T0: CI, T1: CI):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(Y, (i, j), ct.load(X, (i, j), (T0, T1), padding_mode=Z) * 3)


@pytest.mark.parametrize("sm", SMS)
def test_tiles_of_one_row_one_column_one_element_and_4096(sm):
    """Tiles 1 x 1, 1 x 64, 64 x 1, 2 x 1, 1 x 4096 over a 13 x 37 window of a 13 x 64 array (16-byte rows:
    the view facts that let sm_90a / sm_100a choose vector / bulk copies)."""
    x = _layout("C", (13, 64), np.float32, 8)[:, :37]
    for t0, t1 in ((1, 1), (1, 64), (64, 1), (2, 1), (1, 4096)):
        y = np.zeros((13, 64), np.float32)[:, :37]
        _launch(sm, (_cdiv(13, t0), _cdiv(37, t1)), triple_2d, (x, y, t0, t1))
        np.testing.assert_array_equal(y, x * 3)


@ct.kernel
def scan_1d(X, Y, T: CI):
    b = ct.bid(0)
    ct.store(Y, (b,), ct.cumsum(ct.load(X, (b,), (T,), padding_mode=Z), axis=0))


def test_a_4096_element_1d_tile_scan():
    """sm_80: 5001 elements in two 4096-element tiles, a running sum in each."""
    x = (np.arange(5001) % 5).astype(np.int32)
    y = np.zeros_like(x)
    _launch("sm_80", (2,), scan_1d, (x, y, 4096))
    np.testing.assert_array_equal(y, np.concatenate([np.cumsum(x[:4096]), np.cumsum(x[4096:])]))


@ct.kernel
def minus_row_sums_3d(X, Y, T0: CI, T1: CI, T2: CI):
    i, j, k = ct.bid(0), ct.bid(1), ct.bid(2)
    t = ct.load(X, (i, j, k), (T0, T1, T2), padding_mode=Z)
    ct.store(Y, (i, j, k), t - ct.sum(t, axis=1, keepdims=True))


@pytest.mark.parametrize("sm", SMS)
def test_3d_tiles_with_a_dimension_of_one(sm):
    x = (np.arange(5 * 9 * 17, dtype=np.float32).reshape(5, 9, 17) % 11)
    for sh in ((1, 8, 16), (4, 1, 16), (4, 8, 1)):
        y = np.zeros_like(x)
        g = tuple(_cdiv(n, t) for n, t in zip(x.shape, sh))
        _launch(sm, g, minus_row_sums_3d, (x, y, *sh))
        xp = np.zeros(tuple(a * t for a, t in zip(g, sh)), np.float32)
        xp[:5, :9, :17] = x
        blocks = xp.reshape(g[0], sh[0], g[1], sh[1], g[2], sh[2])
        want = (blocks - blocks.sum(axis=3, keepdims=True)).reshape(xp.shape)[:5, :9, :17]
        np.testing.assert_array_equal(y, want)


# ------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize("grid, msg", [((0,), "has a size below 1"), ((1, 70000), "axis y has 70000 tile blocks"),
                                       ((1, 1, 70000), "axis z has 70000"), ((1, 2, 3, 4), "1 to 3 ints"),
                                       (2.5, "1 to 3 ints, got 2.5"), (None, "1 to 3 ints, got None")])
def test_bad_grids_are_clear_errors(grid, msg):
    """Bug 5: a grid that is neither an int nor a sequence raised a TypeError ("'float' object is not
    iterable")."""
    x = np.zeros(5, np.float32)
    with pytest.raises(TilecoreError, match=msg.replace("(", r"\(")):
        tc.launch(None, grid, twice_1d, (x, np.zeros_like(x), 8))


@pytest.mark.parametrize("bad, msg", [
    (np.arange(5, dtype=">f4"), "dtype '>f4' is not in the machine's byte order"),
    (np.arange(5).astype(np.complex64), "numpy dtype 'complex64' cannot be"),
    (np.arange(5).astype(object), "numpy dtype 'object' cannot be"),
    ([1.0, 2.0], "a list is not a kernel argument")])
def test_unusable_arrays_are_clear_errors(bad, msg):
    """Bug 4: a big-endian array was read as little-endian words (wrong numbers, no error)."""
    with pytest.raises(TilecoreError, match=msg):
        tc.launch(None, (1,), twice_1d, (bad, np.zeros(8, np.float32), 8))
