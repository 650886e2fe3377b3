"""cuTile ``num_ctas``: a tile block is a whole cluster (tileiras' reading; ``stage4_tileas_to_llvm/clusters.py``).

Any grid is valid whatever ``num_ctas`` is; ``ct.bid`` / ``ct.num_blocks`` count clusters; only the CTA of rank 0
has side effects. Checked in the CPU emulator against numpy (through ``tilecore.cutile.launch``, which launches
grid x cluster CTAs), and in the lowered code.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")

import tilecore.cutile as tc  # noqa: E402

CLUSTER_SMS = ["sm_90a", "sm_100a"]
ConstInt = ct.Constant[int]
Z = ct.PaddingMode.ZERO
TWO = ct.ByTarget(sm_90=2, sm_100=2)


@ct.kernel(num_ctas=TWO)
def tile_ids(X, Y, Ids, Counter, TM: ConstInt, TN: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    x = ct.load(X, (i, j), (TM, TN), padding_mode=Z)
    ct.store(Y, (i, j), x * 2.0 + 1.0)
    k = i * ct.num_blocks(1) + j
    ids = ct.full((1, 4), 0, dtype=ct.int32)
    ids = ids + ct.where(ct.arange(4, dtype=ct.int32) == 0, i, 0)[None, :]
    ids = ids + ct.where(ct.arange(4, dtype=ct.int32) == 1, j, 0)[None, :]
    ids = ids + ct.where(ct.arange(4, dtype=ct.int32) == 2, ct.num_blocks(0), 0)[None, :]
    ids = ids + ct.where(ct.arange(4, dtype=ct.int32) == 3, ct.num_blocks(1), 0)[None, :]
    ct.store(Ids, (k, 0), ids)
    ct.atomic_add(Counter, 0, 1)


@pytest.mark.parametrize("sm", CLUSTER_SMS + ["sm_80"])
@pytest.mark.parametrize("grid", [(3, 5), (1, 1), (5, 2)])
def test_odd_grids_count_tile_blocks(sm, grid):
    """An odd grid of a num_ctas=2 kernel runs every tile block once: bid / num_blocks are the tile block's, the
    atomic counter sees one add per tile block (the rank-1 CTA of each cluster leaves before any side effect)."""
    tm, tn = 16, 32
    m, n = grid[0] * tm - 5, grid[1] * tn - 7
    x = np.random.default_rng(1).standard_normal((m, n)).astype(np.float32)
    y = np.zeros_like(x)
    ids = np.full((grid[0] * grid[1], 4), -1, np.int32)
    counter = np.zeros(1, np.int32)
    tc.launch(None, grid, tile_ids, (x, y, ids, counter, tm, tn), gpu_name=sm)
    np.testing.assert_array_equal(y, x * 2 + 1)
    want = [(i, j, grid[0], grid[1]) for i in range(grid[0]) for j in range(grid[1])]
    np.testing.assert_array_equal(ids, np.array(want, np.int32))
    assert counter[0] == grid[0] * grid[1]


@ct.kernel(num_ctas=TWO)
def persistent_rows(X, Y, TM: ConstInt):
    for t in range(ct.bid(0), ct.cdiv(X.shape[0], TM), ct.num_blocks(0)):
        ct.store(Y, (t,), ct.load(X, (t,), (TM,), padding_mode=Z) + 1.0)


@pytest.mark.parametrize("sm", CLUSTER_SMS)
def test_persistent_loop_over_clusters(sm):
    x = np.arange(301, dtype=np.float32)
    y = np.zeros_like(x)
    tc.launch(None, (3,), persistent_rows, (x, y, 32), gpu_name=sm)
    np.testing.assert_array_equal(y, x + 1)


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2))
def mm_two_ctas(A, B, C, tm: ConstInt, tn: ConstInt, tk: ConstInt):
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, (ct.bid(0), k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, ct.bid(1)), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (ct.bid(0), ct.bid(1)), acc)


def test_tcgen05_matmul_odd_grid_sm100():
    """A tcgen05 matmul of 2-CTA clusters on an odd grid (3 x 1 tile blocks): the rank-0 CTA of each cluster
    computes its tile (tensor memory allocated and freed by it alone)."""
    rng = np.random.default_rng(2)
    m, n, k = 300, 50, 72
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    tc.launch(None, (3, 1), mm_two_ctas, (a, b, c, 128, 64, 32), gpu_name="sm_100a")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_lowered_kernel_reads_cluster_ids():
    """The kernel says a tile block is a cluster; its PTX reads %clusterid / %nclusterid (not %ctaid / %nctaid)
    and leaves at entry on %cluster_ctarank != 0; the launch contract counts tile blocks (CTAs = grid x 2)."""
    x = np.zeros((20, 40), np.float32)
    ck = tc.compile(tile_ids, (x, x, np.zeros((4, 4), np.int32), np.zeros(1, np.int32), 16, 32), gpu_name="sm_90a")
    c = ck.contract
    assert c.cluster == (2, 1, 1) and c.block_ctas == (2, 1, 1) and c.cta_grid((3, 5, 1)) == (6, 5, 1)
    ptx = ck.ptx
    assert re.search(r"%clusterid\.x", ptx) and re.search(r"%nclusterid\.y", ptx) and "%cluster_ctarank" in ptx
    assert "%ctaid" not in ptx and "%nctaid" not in ptx
    assert ".reqnctapercluster 2, 1, 1" in ptx
