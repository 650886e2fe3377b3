"""CPU emulator on cuTile kernels: exported to TileIR bytecode, compiled by tilecore, compared with numpy.

Each test here once crashed the emulator's process or was not emulated at all.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from support import has_plugin

HERE = os.path.dirname(__file__)
TILEAS_TESTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "plugins", "tileas", "tests")

ct = pytest.importorskip("cuda.tile")
pytestmark = pytest.mark.skipif(not has_plugin("tileas"), reason="needs the tileas plugin")

sys.path.insert(0, TILEAS_TESTS)
import cutile_kernels as ck  # noqa: E402

from tilecore.compiler import compile_file  # noqa: E402
from tilecore.emulate import launch  # noqa: E402

TILE = 128
BLOCK = (128, 1, 1)


@ct.kernel
def window3_f32(x, y, TILE: ct.Constant[int]):
    """Three overlapping windows (traversal step 1) of x at bid, bid + 1, bid + 2, summed."""
    bid = ct.bid(0)
    v = x.tiled_view((TILE,), traversal_steps=(1,))
    ct.store(y, index=(bid,), tile=v.load((bid,)) + v.load((bid + 1,)) + v.load((bid + 2,)))


def _arr(a: np.ndarray) -> list:
    """An array parameter in the kernel ABI: pointer, shape, strides (in elements)."""
    return [a, *[np.int32(d) for d in a.shape], *[np.int32(s // a.itemsize) for s in a.strides]]


def _compiled(tmp_path, kernel, params, name, arch):
    path = ck.export_spec(kernel, params, name, str(tmp_path / f"{name}.tileirbc"))
    return compile_file(path, arch).module


@pytest.mark.parametrize("n", [1000, 129, 77])
def test_overlapping_windows_step_1_match_numpy(tmp_path, n):
    # Window starts are not multiples of 4 elements: the loads must not be 16-byte vector loads
    # (they were, and the misaligned movaps killed the process with SIGSEGV).
    module = _compiled(tmp_path, window3_f32, ["f32[1]", "f32[1]", TILE], "window3_f32", "sm_80")
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    grid = -(-n // TILE)
    launch(module, "window3_f32", grid, BLOCK, _arr(x) + _arr(y))
    xp = np.concatenate([x, np.zeros(3 * TILE, np.float32)])  # out-of-bounds elements load as zero
    idx = np.arange(grid * TILE)
    start = idx // TILE  # window k starts at element k (step 1); element i of tile k is x[k + i]
    ref = (xp[start + idx % TILE] + xp[start + 1 + idx % TILE] + xp[start + 2 + idx % TILE])[:n]
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_grid_dependency_control_is_a_no_op_for_one_launch(tmp_path, arch):
    # gdc_f32 waits for its prerequisite grid (griddepcontrol.wait) and lets its dependents launch
    # (griddepcontrol.launch_dependents): one emulated launch has neither, so it just copies x to y.
    path = ck.export("gdc_f32", str(tmp_path / "gdc_f32.tileirbc"))
    module = compile_file(path, arch).module
    assert "nvvm.griddepcontrol  wait" in str(module) and "nvvm.griddepcontrol  launch_dependents" in str(module)
    n = 1000
    x = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    launch(module, "gdc_f32", -(-n // TILE), BLOCK, _arr(x) + _arr(y))
    np.testing.assert_array_equal(y, x)
