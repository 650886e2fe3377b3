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
"""

from __future__ import annotations

import os
import tempfile

import cuda.tile as ct
import cutile_kernels as ck
import numpy as np
import pytest

from test_cuda_tile_verifier import AT, error, kernel, tile, verify

from tilecore.compiler import compile_file

emulate = pytest.importorskip("tilecore.emulate")

BLOCK = (128, 1, 1)
ARCHS = ("sm_80", "sm_90a", "sm_100a")
RNG = np.random.default_rng(20261123)
f32, i32 = np.float32, np.int32
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

KERNELS = {
    **{name: (k, ["f32[1]", "f32[1]", "i32", TILE]) for name, (k, _) in LOOPS.items()},
    "carried_on_some_paths": (carried_on_some_paths, ["f32[1]", "f32[1]", "f32[1]", "i32[1]", "i32", TILE]),
    "nested_loops_exits": (nested_loops_exits, ["f32[1]", "f32[1]", "i32", "i32", TILE]),
}
_DIR = tempfile.mkdtemp(prefix="tileas-regressions-fuzz-")
_COMPILED: dict = {}


def compiled(name: str, sm: str):
    """Kernel ``name`` exported once and compiled once per architecture."""
    if (name, sm) not in _COMPILED:
        path = os.path.join(_DIR, f"{name}.tileirbc")
        if not os.path.exists(path):
            kernel, params = KERNELS[name]
            ck.export_spec(kernel, params, name, path)
        _COMPILED[name, sm] = compile_file(path, sm).module
    return _COMPILED[name, sm]


def run(name: str, sm: str, grid, args) -> None:
    """Launch ``name`` compiled for ``sm``; the array arguments are updated in place."""
    emulate.launch(compiled(name, sm), name, grid, BLOCK, args)


def arr(a: np.ndarray) -> list:
    """An array parameter in the kernel ABI: pointer, shape, strides (in elements)."""
    return [a, *[i32(d) for d in a.shape], *[i32(s // a.itemsize) for s in a.strides]]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


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


# The verifier: a continue / break ends the nearest for / loop through any depth of ifs, with its values.
I32, I1, F4 = tile([]), tile([], "i1"), tile([4])


def _for(body, carried=F4):
    """A for over 0..%a0 carrying %a1 (of type ``carried``) whose body is ``body`` (lines)."""
    return ([f'%c0 = "cuda_tile.constant"() {{value = dense<0> : tensor<i32>}} : () -> {I32}',
             f'%r = "cuda_tile.for"(%c0, %a0, %a0, %a1) ({{',
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
