"""Regression tests for compiler bugs found by the random cuTile program generator (tests/fuzz/).

Every kernel runs in ``tilecore.emulate`` on sizes that are not tile multiples and is compared
with numpy, compiled for sm_80, sm_90a and sm_100a. Launch contract: grid = tile blocks,
block = (128, 1, 1).

1. ``break`` / ``continue`` in loops: cuTile ends an iteration early with a ``continue``
   inside an ``if`` (at any depth of nested ifs) whose parent is the ``for`` (a ``break`` in a
   ``for`` becomes a carried flag and such a ``continue``); in a ``while`` loop (a
   ``cuda_tile.loop``) with ``break`` / ``continue`` in ifs. The ``for`` body was rebuilt
   region by region, so a ``continue`` in an ``if`` was rejected ("outside a 'for' or 'loop'
   body"); each path must yield the loop-carried values of its own exit.
2. Bool arrays: a tile of ``ct.bool_`` (i1 registers) was stored with ``vector<4 x i1>`` stores,
   which pack four elements into one byte; numpy (and cuTile) hold a bool in one byte, 0 or 1.
   Memory now holds bools as bytes on every path: tiled views (vector and scalar copies), gather /
   scatter, advanced indexing, pointer tiles; loads read a byte as true when it is nonzero.
   A float -> bool cast (cuTile writes ``ftoi`` to i1) was an ``fptoui`` to i1, poison for
   every value but 0 and 1; it is ``x != 0`` now, as cuTile's int -> bool.
3. ``ftof`` with ``rounding_mode = nearest_away`` (cuTile's ``astype(x, float16, rounding_mode=RA)`` of a bf16 tile,
   drawn by tests/fuzz/idioms.py): it was lowered as a plain ``truncf`` (PTX ``cvt.rn.f16.f32``, ties to even), so
   a value exactly halfway between two f16 codes (in bf16 -> f16 that is the f16 subnormal range) rounded to the
   even one instead of away from zero: 2^-25 gave 0, not 2^-24. Stage 1 now steps such ties one code away.
"""

from __future__ import annotations

import cuda.tile as ct
import numpy as np
import pytest
from emulated_kernels import KernelSet, arr, cdiv
from test_cuda_tile_verifier import AT, error, kernel, tile, verify

ARCHS = ("sm_80", "sm_90a", "sm_100a")
RNG = np.random.default_rng(20261123)
f32, i32 = np.float32, np.int32
ZERO = ct.PaddingMode.ZERO
TILE = 128
N = 300  # three tiles, the last partial


# ------------------------------------------------------------------------------ 1. break / continue
@ct.kernel
def for_continue(x, y, n, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    acc = ct.full((TILE,), 0, dtype=ct.float32)
    for k in range(n):
        if k % 3 == 1:
            continue
        acc = acc + t * k
    ct.store(y, index=(bid,), tile=acc)


@ct.kernel
def for_break(x, y, n, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    acc = ct.full((TILE,), 0, dtype=ct.float32)
    for k in range(n):
        if k == 5:
            break
        acc = acc + t * k
    ct.store(y, index=(bid,), tile=acc)


@ct.kernel
def for_nested_ifs(x, y, n, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    acc = ct.full((TILE,), 0, dtype=ct.float32)
    for k in range(n):
        if k % 2 == 0:
            if k % 4 == 0:
                acc = acc + 1.0
                continue
            acc = acc * 0.5
        else:
            acc = acc + t
        if k > 6:
            break
        acc = acc - t * 0.25
    ct.store(y, index=(bid,), tile=acc)


@ct.kernel
def while_true_break_continue(x, y, n, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    acc = ct.full((TILE,), 0, dtype=ct.float32)
    k = 0
    while True:
        k = k + 1
        if k > n:
            break
        if k % 2 == 0:
            continue
        acc = acc + t * k
    ct.store(y, index=(bid,), tile=acc)


@ct.kernel
def while_cond_nested(x, y, n, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    acc = ct.full((TILE,), 0, dtype=ct.float32)
    k = 0
    while k < n:
        k = k + 1
        if k % 2 == 0:
            if k % 3 == 0:
                acc = acc - t
                continue
            if k > 9:
                break
            acc = acc + 2.0
        acc = acc + t
    ct.store(y, index=(bid,), tile=acc)


@ct.kernel
def carried_on_some_paths(x, y, z, w, n, TILE: ct.Constant[int]):
    """Three carried values (two tiles, an int tile), each updated on some paths only."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    a = ct.full((TILE,), 0, dtype=ct.float32)
    b = ct.full((TILE,), 1, dtype=ct.float32)
    c = ct.full((TILE,), 0, dtype=ct.int32)
    for k in range(n):
        a = a + t
        if k % 3 == 0:
            b = b + 1.0
            continue
        elif k % 3 == 1:
            c = c + k
            if k > 5:
                break
            b = b * 2.0
        else:
            a = a - 1.0
        b = b - t
    ct.store(y, index=(bid,), tile=a)
    ct.store(z, index=(bid,), tile=b)
    ct.store(w, index=(bid,), tile=c)


@ct.kernel
def nested_loops_exits(x, y, n, m, TILE: ct.Constant[int]):
    """break / continue of an inner for inside an if of an outer for that continues too."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    acc = ct.full((TILE,), 0, dtype=ct.float32)
    for i in range(n):
        if i % 2 == 1:
            for j in range(m):
                if j == i:
                    break
                if (i + j) % 3 == 0:
                    continue
                acc = acc + t * j
            continue
        acc = acc - t
    ct.store(y, index=(bid,), tile=acc)


@ct.kernel
def stores_in_loop(x, y, n, TILE: ct.Constant[int]):
    """Only side effects after the exits: row k of y is written for the iterations that get there."""
    bid = ct.bid(0)
    t = ct.load(x, index=(0, bid), shape=(1, TILE))
    for k in range(n):
        if k % 2 == 1:
            continue
        if k > 6:
            break
        ct.store(y, index=(k, bid), tile=t * k)


def _for_continue(t, n):
    acc = np.zeros_like(t)
    for k in range(n):
        if k % 3 == 1:
            continue
        acc = acc + t * k
    return acc


def _for_break(t, n):
    acc = np.zeros_like(t)
    for k in range(n):
        if k == 5:
            break
        acc = acc + t * k
    return acc


def _for_nested_ifs(t, n):
    acc = np.zeros_like(t)
    for k in range(n):
        if k % 2 == 0:
            if k % 4 == 0:
                acc = acc + 1
                continue
            acc = acc * 0.5
        else:
            acc = acc + t
        if k > 6:
            break
        acc = acc - t * 0.25
    return acc


def _while_true_break_continue(t, n):
    acc, k = np.zeros_like(t), 0
    while True:
        k += 1
        if k > n:
            break
        if k % 2 == 0:
            continue
        acc = acc + t * k
    return acc


def _while_cond_nested(t, n):
    acc, k = np.zeros_like(t), 0
    while k < n:
        k += 1
        if k % 2 == 0:
            if k % 3 == 0:
                acc = acc - t
                continue
            if k > 9:
                break
            acc = acc + 2
        acc = acc + t
    return acc


def _carried_on_some_paths(t, n):
    a, b, c = np.zeros_like(t), np.ones_like(t), np.zeros(t.shape, i32)
    for k in range(n):
        a = a + t
        if k % 3 == 0:
            b = b + 1
            continue
        elif k % 3 == 1:
            c = c + k
            if k > 5:
                break
            b = b * 2
        else:
            a = a - 1
        b = b - t
    return a, b, c


def _nested_loops_exits(t, n, m):
    acc = np.zeros_like(t)
    for i in range(n):
        if i % 2 == 1:
            for j in range(m):
                if j == i:
                    break
                if (i + j) % 3 == 0:
                    continue
                acc = acc + t * j
            continue
        acc = acc - t
    return acc


LOOPS = {  # name -> (kernel, numpy model of one tile)
    "for_continue": (for_continue, _for_continue),
    "for_break": (for_break, _for_break),
    "for_nested_ifs": (for_nested_ifs, _for_nested_ifs),
    "while_true_break_continue": (while_true_break_continue, _while_true_break_continue),
    "while_cond_nested": (while_cond_nested, _while_cond_nested),
}

# ------------------------------------------------------------------------------ 2. bool arrays
@ct.kernel
def bool_store_compare(x, b, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(b, index=(i, j), tile=ct.load(x, index=(i, j), shape=(TM, TN)) > 0)


@ct.kernel
def bool_casts(x, bi, bo, yi, yf, TM: ct.Constant[int], TN: ct.Constant[int]):
    """bool -> int / float, bool as a where condition, float -> bool, a bool xor."""
    i, j = ct.bid(0), ct.bid(1)
    b = ct.load(bi, index=(i, j), shape=(TM, TN), padding_mode=ZERO)
    t = ct.load(x, index=(i, j), shape=(TM, TN), padding_mode=ZERO)
    ct.store(yi, index=(i, j), tile=ct.astype(b, ct.int32) + ct.astype(t, ct.int32))
    ct.store(yf, index=(i, j), tile=ct.where(b, t, -t) + ct.astype(b, ct.float32))
    ct.store(bo, index=(i, j), tile=ct.astype(t, ct.bool_) ^ b)


@ct.kernel
def bool_from_int(x, b, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(b, index=(bid,), tile=ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.bool_))


@ct.kernel
def bool_gather_scatter(b, idx, out, got, TILE: ct.Constant[int]):
    """out[idx[k]] = not b[idx[k]]; got[k] = b[idx[k]]; indices past the end gather the padding value
    (true) and are not scattered."""
    bid = ct.bid(0)
    i = ct.load(idx, index=(bid,), shape=(TILE,))
    g = ct.gather(b, i, padding_value=True)
    ct.scatter(out, i, ~g)
    ct.store(got, index=(bid,), tile=g)


@ct.kernel
def bool_tiled_view(b, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    t = b.tiled_view((TM, TN), padding_mode=ZERO).load((i, j))
    out.tiled_view((TM, TN)).store((i, j), ~t)


@ct.kernel
def bool_advanced_indexing(b, idx, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    """out[idx[r], :] = not b[idx[r], :] through load / store_advanced_indexing."""
    bid = ct.bid(0)
    rows = ct.load(idx, index=(bid,), shape=(TM,), padding_mode=ZERO)
    t = ct.load_advanced_indexing(b, (rows, ct.Slice(0, TN)), padding_mode=ZERO)
    ct.store_advanced_indexing(out, (rows, ct.Slice(0, TN)), ~t)


@ct.kernel
def bool_any_all(b, any_out, all_out, TM: ct.Constant[int], TN: ct.Constant[int]):
    """Row-wise any / all as reductions with | and &."""
    bid = ct.bid(0)
    t = ct.load(b, index=(bid, 0), shape=(TM, TN), padding_mode=ZERO)
    ct.store(any_out, index=(bid,), tile=ct.reduce(t, 1, lambda p, q: p | q, False))
    ct.store(all_out, index=(bid,), tile=ct.reduce(t, 1, lambda p, q: p & q, True))


KERNELS = {
    **{name: (k, ["f32[1]", "f32[1]", "i32", TILE]) for name, (k, _) in LOOPS.items()},
    "carried_on_some_paths": (carried_on_some_paths, ["f32[1]", "f32[1]", "f32[1]", "i32[1]", "i32", TILE]),
    "nested_loops_exits": (nested_loops_exits, ["f32[1]", "f32[1]", "i32", "i32", TILE]),
    "stores_in_loop": (stores_in_loop, ["f32[2]", "f32[2]", "i32", TILE]),
    "bool_store_compare": (bool_store_compare, ["f32[2]", "bool[2]", 16, 32]),
    "bool_casts": (bool_casts, ["f32[2]", "bool[2]", "bool[2]", "i32[2]", "f32[2]", 16, 32]),
    "bool_from_int": (bool_from_int, ["i32[1]", "bool[1]", TILE]),
    "bool_gather_scatter": (bool_gather_scatter, ["bool[1]", "i32[1]", "bool[1]", "bool[1]", TILE]),
    "bool_tiled_view": (bool_tiled_view, ["bool[2]", "bool[2]", 16, 32]),
    "bool_advanced_indexing": (bool_advanced_indexing, ["bool[2]", "i32[1]", "bool[2]", 16, 32]),
    "bool_any_all": (bool_any_all, ["bool[2]", "bool[1]", "bool[1]", 16, 64]),
}
_KERNELS = KernelSet(KERNELS, "tileas-regressions-")
compiled, run = _KERNELS.compiled, _KERNELS.run


def small_ints(shape, dtype=f32):
    """Integer-valued data: every sum and product of the loop kernels is exact in f32."""
    return RNG.integers(-4, 5, size=shape).astype(dtype)


@pytest.mark.parametrize("sm", ARCHS)
@pytest.mark.parametrize("name", sorted(LOOPS))
@pytest.mark.parametrize("n", [0, 1, 4, 13])
def test_loop_exits(sm, name, n):
    x, y = small_ints(N), np.full(N, 99, f32)
    run(name, sm, (cdiv(N, TILE), 1, 1), arr(x) + arr(y) + [i32(n)])
    np.testing.assert_array_equal(y, LOOPS[name][1](x, n))


@pytest.mark.parametrize("sm", ARCHS)
@pytest.mark.parametrize("n", [0, 1, 3, 5, 12])
def test_loop_carried_values_on_some_paths(sm, n):
    x = small_ints(N)
    y, z, w = np.full(N, 99, f32), np.full(N, 99, f32), np.full(N, 99, i32)
    run("carried_on_some_paths", sm, (cdiv(N, TILE), 1, 1), arr(x) + arr(y) + arr(z) + arr(w) + [i32(n)])
    a, b, c = _carried_on_some_paths(x, n)
    np.testing.assert_array_equal(y, a)
    np.testing.assert_array_equal(z, b)
    np.testing.assert_array_equal(w, c)


@pytest.mark.parametrize("sm", ARCHS)
@pytest.mark.parametrize("n,m", [(0, 3), (4, 6), (7, 3)])
def test_nested_loops_break_continue(sm, n, m):
    x, y = small_ints(N), np.full(N, 99, f32)
    run("nested_loops_exits", sm, (cdiv(N, TILE), 1, 1), arr(x) + arr(y) + [i32(n), i32(m)])
    np.testing.assert_array_equal(y, _nested_loops_exits(x, n, m))




@pytest.mark.parametrize("sm", ARCHS)
def test_stores_after_continue_and_break(sm):
    n = 10
    x, y = small_ints((1, N)), np.full((n, N), 99, f32)
    run("stores_in_loop", sm, (cdiv(N, TILE), 1, 1), arr(x) + arr(y) + [i32(n)])
    want = np.full((n, N), 99, f32)
    for k in range(0, 7, 2):
        want[k] = x[0] * k
    np.testing.assert_array_equal(y, want)


def as_bytes(b: np.ndarray) -> np.ndarray:
    """The bytes of a bool array: each must be 0 or 1."""
    return b.view(np.uint8)


def bools(shape) -> np.ndarray:
    return RNG.integers(0, 2, size=shape).astype(np.bool_)


M2, N2 = 37, 45  # 2-D arrays: partial 16 x 32 tiles on both axes


@pytest.mark.parametrize("sm", ARCHS)
def test_bool_store_of_a_comparison_is_one_byte_per_element(sm):
    x, b = RNG.standard_normal((M2, N2)).astype(f32), np.zeros((M2, N2), np.bool_)
    run("bool_store_compare", sm, (cdiv(M2, 16), cdiv(N2, 32), 1), arr(x) + arr(b))
    np.testing.assert_array_equal(as_bytes(b), (x > 0).astype(np.uint8))


@pytest.mark.parametrize("sm", ARCHS)
def test_bool_loads_and_casts(sm):
    x = small_ints((M2, N2)) * f32(0.75)  # zeros (false), fractions (truncated by the int cast)
    bi, bo = bools((M2, N2)), np.zeros((M2, N2), np.bool_)
    yi, yf = np.full((M2, N2), 99, i32), np.full((M2, N2), 99, f32)
    run("bool_casts", sm, (cdiv(M2, 16), cdiv(N2, 32), 1), arr(x) + arr(bi) + arr(bo) + arr(yi) + arr(yf))
    np.testing.assert_array_equal(yi, bi.astype(i32) + x.astype(i32))
    np.testing.assert_array_equal(yf, np.where(bi, x, -x) + bi.astype(f32))
    np.testing.assert_array_equal(as_bytes(bo), ((x != 0) ^ bi).astype(np.uint8))


@pytest.mark.parametrize("sm", ARCHS)
def test_bool_from_int(sm):
    x, b = RNG.integers(-2, 3, size=N).astype(i32), np.zeros(N, np.bool_)
    run("bool_from_int", sm, (cdiv(N, TILE), 1, 1), arr(x) + arr(b))
    np.testing.assert_array_equal(as_bytes(b), (x != 0).astype(np.uint8))


@pytest.mark.parametrize("sm", ARCHS)
def test_bool_gather_scatter(sm):
    b, out = bools(N), np.zeros(N, np.bool_)
    idx = RNG.permutation(np.concatenate([np.arange(N), np.arange(N, 3 * TILE)])).astype(i32)
    got = np.zeros(idx.size, np.bool_)
    run("bool_gather_scatter", sm, (cdiv(idx.size, TILE), 1, 1), arr(b) + arr(idx) + arr(out) + arr(got))
    np.testing.assert_array_equal(as_bytes(out), (~b).astype(np.uint8))
    np.testing.assert_array_equal(as_bytes(got), np.where(idx < N, b[np.minimum(idx, N - 1)], True).astype(np.uint8))


@pytest.mark.parametrize("sm", ARCHS)
def test_bool_tiled_view(sm):
    b, out = bools((M2, N2)), np.zeros((M2, N2), np.bool_)
    run("bool_tiled_view", sm, (cdiv(M2, 16), cdiv(N2, 32), 1), arr(b) + arr(out))
    np.testing.assert_array_equal(as_bytes(out), (~b).astype(np.uint8))


@pytest.mark.parametrize("sm", ARCHS)
def test_bool_advanced_indexing(sm):
    rows, cols = 40, 32
    b, out = bools((rows, cols)), np.zeros((rows, cols), np.bool_)
    idx = RNG.permutation(rows)[:37].astype(i32)  # 37 rows in tiles of 16: the last tile partial
    run("bool_advanced_indexing", sm, (cdiv(idx.size, 16), 1, 1), arr(b) + arr(idx) + arr(out))
    want = np.zeros_like(out)
    want[idx] = ~b[idx]
    np.testing.assert_array_equal(as_bytes(out), want.astype(np.uint8))


@pytest.mark.parametrize("sm", ARCHS)
def test_bool_any_all_reductions(sm):
    rows = 37
    b = bools((rows, 64))
    b[::5] = True
    b[1::7] = False
    any_out, all_out = np.zeros(rows, np.bool_), np.zeros(rows, np.bool_)
    run("bool_any_all", sm, (cdiv(rows, 16), 1, 1), arr(b) + arr(any_out) + arr(all_out))
    np.testing.assert_array_equal(as_bytes(any_out), b.any(1).astype(np.uint8))
    np.testing.assert_array_equal(as_bytes(all_out), b.all(1).astype(np.uint8))

# The verifier: a continue / break ends the nearest for / loop through any depth of ifs, with its values.
I32, I1, F4 = tile([]), tile([], "i1"), tile([4])


def _for(body, carried=F4):
    """A for over 0..%a0 carrying %a1 (of type ``carried``) whose body is ``body`` (lines)."""
    return ([f'%c0 = "cuda_tile.constant"() {{value = dense<0> : tensor<i32>}} : () -> {I32}',
             '%r = "cuda_tile.for"(%c0, %a0, %a0, %a1) ({',
             f'^bb0(%k: {I32}, %acc: {carried}):', *body,
             f'}}) {{operandSegmentSizes = array<i32: 1, 1, 1, 1{", 0" * 63}>, '
             f'resultSegmentSizes = array<i32: 1{", 0" * 63}>}} : ({I32}, {I32}, {I32}, {carried}) -> {carried}'])


def _if(cond, then, other=('"cuda_tile_term.yield"() : () -> ()',), at=""):
    return [f'"cuda_tile.if"({cond}) ({{', *then, '}, {', *other,
            f'}}) {{resultSegmentSizes = array<i32{": " + ", ".join(["0"] * 64)}>}} : ({I1}) -> () {at}']


def test_verifier_accepts_continue_in_nested_ifs_of_a_for():
    inner = _if("%a2", [f'"cuda_tile_term.continue"(%acc) : ({F4}) -> ()'])
    verify(kernel([I32, F4, I1], _for([*_if("%a2", [*inner, '"cuda_tile_term.yield"() : () -> ()']),
                                       f'"cuda_tile_term.continue"(%acc) : ({F4}) -> ()'])))


def test_verifier_rejects_continue_outside_a_loop():
    e = error(kernel([I1, F4], _if("%a0", [f'"cuda_tile_term.continue"(%a1) : ({F4}) -> () {AT}'])))
    assert (e.location, e.message) == ("k.py:7:3", "'cuda_tile.continue' outside a 'for' or 'loop' body")


def test_verifier_rejects_break_in_a_for():
    e = error(kernel([I32, F4, I1], _for([*_if("%a2", [f'"cuda_tile_term.break"(%acc) : ({F4}) -> () {AT}']),
                                          f'"cuda_tile_term.continue"(%acc) : ({F4}) -> ()'])))
    assert e.location == "k.py:7:3"
    assert e.message.startswith("'cuda_tile.break' outside a 'loop' body")


def test_verifier_rejects_continue_with_other_types_than_the_loop_carries():
    e = error(kernel([I32, F4, I1, tile([8])],
                     _for([*_if("%a2", [f'"cuda_tile_term.continue"(%a3) : ({tile([8])}) -> () {AT}']),
                           f'"cuda_tile_term.continue"(%acc) : ({F4}) -> ()'])))
    assert e.location == "k.py:7:3"
    assert e.message == ("'cuda_tile.continue' values (tile<8xf32>) must match the values carried by the "
                         "enclosing 'for' (tile<4xf32>)")


def test_verifier_rejects_a_terminator_before_the_end_of_its_block():
    e = error(kernel([I32, F4, I1], _for([*_if("%a2", [f'"cuda_tile_term.continue"(%acc) : ({F4}) -> () {AT}',
                                                       '"cuda_tile_term.yield"() : () -> ()']),
                                          f'"cuda_tile_term.continue"(%acc) : ({F4}) -> ()'])))
    assert (e.location, e.message) == ("k.py:7:3", "'cuda_tile.continue' must be the last op of its block")



# ------------------------------------------------------------------------------ 3. ftof nearest_away
@ct.kernel
def bf16_to_f16_ra(x, y, TILE: ct.Constant[int]):
    b = ct.bitcast(ct.load(x, index=(0,), shape=(TILE,), padding_mode=ZERO), ct.bfloat16)
    ct.store(y, index=(0,), tile=ct.astype(b, ct.float16, rounding_mode=ct.RoundingMode.RA))


def test_ftof_nearest_away_breaks_ties_away_from_zero():
    """sm_80 (an elementwise conversion: the same code on every target). bf16 codes -> the f16 value rounded to
    nearest, ties away from zero (worked by hand: f16's subnormal step is 2^-24)."""
    import tilecore.cutile as tc

    u = 2.0**-24
    cases = [(0x3300, u), (0xB300, -u),  # 2^-25: halfway between 0 and 2^-24 (ties to even gave 0)
             (0x3420, 3 * u), (0xB420, -3 * u),  # 2.5 * 2^-24: halfway between 2 and 3 steps (even: 2)
             (0x33C0, 2 * u),  # 1.5 * 2^-24: halfway, the even code is the one away from zero too
             (0x3340, u),  # 0.75 * 2^-24: no tie, nearest
             (0x3F81, 1.0078125), (0x3801, 2.0**-15 * (1 + 2.0**-7)),  # exact in f16 (normal, subnormal)
             (0x0000, 0.0), (0x8000, -0.0), (0x477F, 65280.0), (0x4780, np.inf), (0xC780, -np.inf)]
    x = np.array([c for c, _ in cases], np.uint16)
    y = np.zeros(len(cases), np.float16)
    tc.launch(None, (1,), bf16_to_f16_ra, (x, y, 16), gpu_name="sm_80")
    want = np.array([w for _, w in cases], np.float16)
    np.testing.assert_array_equal(y, want)
    assert np.array_equal(np.signbit(y), np.signbit(want))
