"""The operand order of a custom scan's combiner: the elements earlier in scan order on the left.

A reverse scan runs from the end of the line, so its accumulator (the higher elements) is the combiner's left
operand and the current element its right one: ``y[t] = f(y[t + 1], x[t])``. tileiras compiles it so (its SASS for
a two-element reverse scan of ``f(a, b) = 100 a + b`` over [1, 2] stores 201 = f(2, 1)); tilecore passed the lower
elements on the left in every direction (102), which a non-commutative combiner tells apart: the linear recurrence
``h = a h' + b`` of an SSM / Mamba-style scan as a tuple scan. Found by tests/test_thirdparty_kernels4.py's round
(a backward-in-time recurrence). Each shape takes one of the three scan lowerings of ``atoms.reduce``: in one
thread, warp shuffles along a row, a serial loop over shared memory.
"""

from __future__ import annotations

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")
tc = pytest.importorskip("tilecore.cutile")


def _affine(a1, b1, a2, b2):
    """(a1, b1) then (a2, b2): the composition of h -> a1 h + b1 and h -> a2 h + b2 (not commutative)."""
    return a1 * a2, a2 * b1 + b2


@ct.kernel
def recurrences(A, B, H, HR, R: ct.Constant[int], T: ct.Constant[int], AX: ct.Constant[int]):
    a = ct.load(A, (0, 0), (R, T), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(B, (0, 0), (R, T), padding_mode=ct.PaddingMode.ZERO)
    ct.store(H, (0, 0), ct.scan((a, b), axis=AX, func=_affine, identity=(1.0, 0.0))[1])
    ct.store(HR, (0, 0), ct.scan((a, b), axis=AX, func=_affine, identity=(1.0, 0.0), reverse=True)[1])


@ct.kernel
def two_element_scans(X, Y, YR):
    x = ct.load(X, (0,), (2,))
    ct.store(Y, (0,), ct.scan(x, axis=0, func=lambda p, q: p * 100 + q, identity=0))
    ct.store(YR, (0,), ct.scan(x, axis=0, func=lambda p, q: p * 100 + q, identity=0, reverse=True))


def _recurrence(a, b, axis, reverse):
    a, b = np.moveaxis(a.astype(np.float64), axis, -1), np.moveaxis(b.astype(np.float64), axis, -1)
    out, h = np.zeros_like(a), np.zeros(a.shape[:-1])
    for t in (range(a.shape[-1] - 1, -1, -1) if reverse else range(a.shape[-1])):
        h = a[..., t] * h + b[..., t]
        out[..., t] = h
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("sm", ["sm_80", "sm_100a"])
def test_a_reverse_scan_puts_its_accumulator_on_the_left(sm):
    x, y, yr = np.array([1, 2], np.int32), np.zeros(2, np.int32), np.zeros(2, np.int32)
    tc.launch(None, (1,), two_element_scans, (x, y, yr), gpu_name=sm)
    assert list(y) == [1, 102] and list(yr) == [201, 2]


@pytest.mark.parametrize("shape,axis", [((1, 2), 1), ((4, 32), 1), ((2, 128), 1), ((1, 1024), 1), ((32, 4), 0)],
                         ids=["in_thread", "shuffle", "shuffle_vec", "smem_row", "smem_column"])
def test_tuple_scans_of_a_linear_recurrence_both_ways(shape, axis):
    rng = np.random.default_rng(7)
    a = rng.uniform(0.5, 1.0, shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    h, hr = np.zeros_like(a), np.zeros_like(a)
    tc.launch(None, (1,), recurrences, (a, b, h, hr, *shape, axis), gpu_name="sm_80")
    np.testing.assert_allclose(h, _recurrence(a, b, axis, False), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hr, _recurrence(a, b, axis, True), rtol=1e-5, atol=1e-5)
