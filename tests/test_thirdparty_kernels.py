"""Kernels written the way an outside cuTile author writes them, each a regression test of a bug found by
running such kernels (the ``tests/fuzz`` generator did not draw the feature): compiled by tilecore for
sm_80 / sm_90a / sm_100a, run in the CPU emulator (``tilecore.cutile.launch`` on numpy arrays) and checked
against numpy on sizes that are not tile multiples.
"""

from __future__ import annotations

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")

import tilecore.cutile as tc  # noqa: E402

SMS = ["sm_80", "sm_90a", "sm_100a"]
TILE = 32


# ------------------------------------------------------------------------------ atomic_cas on float arrays
@ct.kernel
def cas_float(arr, expected, desired, old, TILE: ct.Constant[int]):
    b = ct.bid(0)
    i = ct.arange(TILE, dtype=ct.int32) + b * TILE
    e = ct.load(expected, index=(b,), shape=(TILE,))
    d = ct.load(desired, index=(b,), shape=(TILE,))
    ct.store(old, index=(b,), tile=ct.atomic_cas(arr, i, e, d))


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_atomic_cas_on_floats_swaps_bit_patterns(sm, dt):
    """``llvm.cmpxchg`` takes integers only: a float CAS failed LLVM verification ('operand #1 must be
    signless integer'); tileiras compiles it. It is a bitwise compare (PTX ``atom.cas.b32`` / ``.b64``):
    -0.0 does not match 0.0."""
    n = 3 * TILE
    arr = (np.arange(n) * 0.5).astype(dt)
    arr[5] = -0.0
    expected = np.where(np.arange(n) % 2 == 0, arr, 7.25).astype(dt)
    expected[5] = 0.0
    desired = (np.arange(n) * -3.0).astype(dt)
    old = np.zeros(n, dt)
    want = np.where(np.arange(n) % 2 == 0, desired, arr)
    want[5] = -0.0
    tc.launch(None, (3,), cas_float, (a := arr.copy(), expected, desired, old, TILE), gpu_name=sm)
    np.testing.assert_array_equal(old, arr)
    np.testing.assert_array_equal(a, want)
    assert np.signbit(a[5])
