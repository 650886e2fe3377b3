"""Emulator: thread-block clusters (issue 16): cluster launches, distributed shared memory, cluster barriers,
remote mbarrier arrives and TMA multicast.

Each kernel is llvm + nvvm dialect MLIR text with ``nvvm.cluster_dim``; expected values come from the PTX ISA
text ("Cluster of Cooperative Thread Arrays", "Special Registers" %clusterid / %cluster_ctaid /
%cluster_ctarank ..., "Distributed Shared Memory", "mapa", "barrier.cluster", "mbarrier.arrive" on
shared::cluster, "cp.async.bulk.tensor" .multicast::cluster), computed here in numpy. The same forms go
through MLIR's NVPTX back end and ptxas for sm_90a.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from support import gpu_module, has_plugin, ptxas_round_trip
from support import parse_module as parse

from tilecore.emulate import launch
from tilecore.errors import TilecoreError

pytestmark = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="needs the gpu_nvvm plugin")


@pytest.fixture(scope="module")
def pm():
    from tilecore.plugins import get_plugin_manager

    return get_plugin_manager()


SREGS = ["ctaid.x", "ctaid.y", "clusterid.x", "clusterid.y", "nclusterid.x", "nclusterid.y", "cluster.ctaid.x",
         "cluster.ctaid.y", "cluster.nctaid.x", "cluster.nctaid.y", "cluster.ctarank", "cluster.nctarank"]


def exchange_kernel(nthreads: int, cluster: tuple[int, int, int]) -> str:
    """Every thread stores cta * 1000 + tid into @buf[tid] (cta: the CTA's linear index), a cluster barrier,
    then it reads @buf[tid] of the CTA of rank (rank + 1) % size through mapa and a shared::cluster load into
    out[cta * nthreads + tid]; thread 0 stores the special registers SREGS to regs[cta * 12 ..]; a second
    cluster barrier keeps every CTA's shared memory alive until its peers have read it."""
    size = cluster[0] * cluster[1] * cluster[2]
    sregs = "\n".join(f"    %s{i} = nvvm.read.ptx.sreg.{r} : i32\n"
                      f"    %sp{i} = llvm.getelementptr %r0[{i}] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i32\n"
                      f"    llvm.store %s{i}, %sp{i} : i32, !llvm.ptr<1>" for i, r in enumerate(SREGS))
    dims = ", ".join(map(str, cluster))
    return f"""
  llvm.mlir.global internal @pad() {{addr_space = 3 : i32, alignment = 8 : i64}} : i64
  llvm.mlir.global internal @buf() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<{nthreads} x i32>
  llvm.func @k(%out: !llvm.ptr<1>, %regs: !llvm.ptr<1>) attributes {{nvvm.kernel,
      nvvm.cluster_dim = array<i32: {dims}>, nvvm.reqntid = array<i32: {nthreads}, 1, 1>, nvvm.blocksareclusters}} {{
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %cx = nvvm.read.ptx.sreg.ctaid.x : i32
    %cy = nvvm.read.ptx.sreg.ctaid.y : i32
    %ncx = nvvm.read.ptx.sreg.nctaid.x : i32
    %rank = nvvm.read.ptx.sreg.cluster.ctarank : i32
    %size = nvvm.read.ptx.sreg.cluster.nctarank : i32
    %cyx = llvm.mul %cy, %ncx : i32
    %cta = llvm.add %cyx, %cx : i32
    %b = llvm.mlir.addressof @buf : !llvm.ptr<3>
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c1000 = llvm.mlir.constant(1000 : i32) : i32
    %cn = llvm.mlir.constant({nthreads} : i32) : i32
    %v0 = llvm.mul %cta, %c1000 : i32
    %v = llvm.add %v0, %tid : i32
    %p = llvm.getelementptr %b[0, %tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<{nthreads} x i32>
    llvm.store %v, %p : i32, !llvm.ptr<3>
    nvvm.cluster.arrive {{aligned}}
    nvvm.cluster.wait {{aligned}}
    %r1 = llvm.add %rank, %c1 : i32
    %next = llvm.urem %r1, %size : i32
    %rp = nvvm.mapa %p, %next : !llvm.ptr<3> -> !llvm.ptr<7>
    %w = llvm.load %rp : !llvm.ptr<7> -> i32
    %o0 = llvm.mul %cta, %cn : i32
    %o = llvm.add %o0, %tid : i32
    %op = llvm.getelementptr %out[%o] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %w, %op : i32, !llvm.ptr<1>
    nvvm.cluster.arrive.relaxed
    nvvm.cluster.wait
    %is0 = llvm.icmp "eq" %tid, %c0 : i32
    llvm.cond_br %is0, ^w, ^e
  ^w:
    %c12 = llvm.mlir.constant(12 : i32) : i32
    %ri = llvm.mul %cta, %c12 : i32
    %r0 = llvm.getelementptr %regs[%ri] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
{sregs}
    llvm.br ^e
  ^e:
    llvm.return
  }}""" if size > 1 else ""


def expected_exchange(grid, cluster, nthreads):
    gx, gy = grid
    cx, cy = cluster[:2]
    size = cx * cy
    out = np.zeros((gy * gx, nthreads), np.int32)
    regs = np.zeros((gy * gx, 12), np.int32)
    for y in range(gy):
        for x in range(gx):
            rx, ry = x % cx, y % cy
            rank = rx + cx * ry
            nxt = (rank + 1) % size
            px, py = x - rx + nxt % cx, y - ry + nxt // cx
            out[y * gx + x] = (py * gx + px) * 1000 + np.arange(nthreads)
            regs[y * gx + x] = [x, y, x // cx, y // cy, gx // cx, gy // cy, rx, ry, cx, cy, rank, size]
    return out.ravel(), regs.ravel()


@pytest.mark.parametrize("grid, cluster, nthreads", [((6, 1), (2, 1, 1), 48), ((4, 4), (2, 2, 1), 40)])
def test_dsmem_exchange_through_mapa_with_cluster_barriers(pm, grid, cluster, nthreads):
    """Each CTA reads its neighbour's shared memory (rank + 1 in the cluster) after a cluster barrier: every
    CTA of a cluster runs at once with shared memory of its own; the special registers split the grid of CTAs
    into clusters (x-fastest ranks)."""
    m = parse(pm, gpu_module(exchange_kernel(nthreads, cluster)))
    n = grid[0] * grid[1]
    out = np.full(n * nthreads, -1, np.int32)
    regs = np.full(n * 12, -1, np.int32)
    launch(m, "k", grid=grid, block=nthreads, args=[out, regs])
    want_out, want_regs = expected_exchange(grid, cluster, nthreads)
    np.testing.assert_array_equal(regs, want_regs)
    np.testing.assert_array_equal(out, want_out)


def test_cluster_kernel_through_ptxas(pm):
    # .blocksareclusters needs PTX 9.0 (not sm_90a's default PTX version)
    ptx = ptxas_round_trip(pm, exchange_kernel(64, (2, 1, 1)).replace(", nvvm.blocksareclusters", ""), "sm_90a")
    assert ".reqnctapercluster 2, 1, 1" in ptx and "mapa.shared::cluster" in ptx
    assert "barrier.cluster.arrive.aligned" in ptx and "barrier.cluster.wait" in ptx
    assert re.search(r"ld\.shared::cluster\.(u|b)32", ptx)


def test_grid_must_be_whole_clusters(pm):
    m = parse(pm, gpu_module(exchange_kernel(32, (2, 1, 1))))
    with pytest.raises(TilecoreError, match=r"grid \(3, 1, 1\) is not a whole number of clusters \(2, 1, 1\)"):
        launch(m, "k", grid=3, block=32, args=[np.zeros(96, np.int32), np.zeros(36, np.int32)])


# ---------------------------------------------------------------- remote mbarrier arrive
MBAR_KERNEL = """
  llvm.mlir.global internal @bar() {addr_space = 3 : i32, alignment = 8 : i64} : i64
  llvm.mlir.global internal @data() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i32>
  llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.cluster_dim = array<i32: 2, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %ntid = nvvm.read.ptx.sreg.ntid.x : i32
    %rank = nvvm.read.ptx.sreg.cluster.ctarank : i32
    %cta = nvvm.read.ptx.sreg.ctaid.x : i32
    %bar = llvm.mlir.addressof @bar : !llvm.ptr<3>
    %data = llvm.mlir.addressof @data : !llvm.ptr<3>
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c7 = llvm.mlir.constant(7 : i32) : i32
    %ticks = llvm.mlir.constant(1000 : i32) : i32
    %is0 = llvm.icmp "eq" %tid, %c0 : i32
    llvm.cond_br %is0, ^init, ^go
  ^init:
    nvvm.mbarrier.init %bar, %ntid : !llvm.ptr<3>, i32
    nvvm.fence.mbarrier.init
    llvm.br ^go
  ^go:
    nvvm.cluster.arrive
    nvvm.cluster.wait
    %peer = llvm.xor %rank, %c1 : i32
    %v0 = llvm.mul %cta, %c7 : i32
    %v = llvm.add %v0, %tid : i32
    %dp = llvm.getelementptr %data[0, %tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<64 x i32>
    %rdp = nvvm.mapa %dp, %peer : !llvm.ptr<3> -> !llvm.ptr<7>
    llvm.store %v, %rdp : i32, !llvm.ptr<7>
    %rbar = nvvm.mapa %bar, %peer : !llvm.ptr<3> -> !llvm.ptr<7>
    nvvm.mbarrier.arrive %rbar {scope = #nvvm.mem_scope<cluster>} : !llvm.ptr<7>
    nvvm.mbarrier.try_wait.parity %bar, %c0, %ticks : !llvm.ptr<3>, i32, i32
    nvvm.fence.sync_restrict {order = #nvvm.mem_order<acquire>}
    nvvm.fence.sc.cluster
    nvvm.memory.barrier #nvvm.mem_scope<cluster>
    %w = llvm.load %dp : !llvm.ptr<3> -> i32
    %o0 = llvm.mul %cta, %ntid : i32
    %o = llvm.add %o0, %tid : i32
    %op = llvm.getelementptr %out[%o] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %w, %op : i32, !llvm.ptr<1>
    nvvm.cluster.arrive
    nvvm.cluster.wait
    llvm.return
  }"""


def test_remote_mbarrier_arrive_publishes_dsmem_stores(pm):
    """Each thread stores into the peer CTA's shared memory, then arrives on the peer's mbarrier
    (mbarrier.arrive.shared::cluster through a mapa address); each CTA waits on its own mbarrier (expected
    count: the peer's threads), fences (fence.acquire.sync_restrict::shared::cluster, fence.sc.cluster,
    fence.acq_rel.cluster) and then reads what the peer wrote."""
    nthreads, grid = 48, 4
    out = np.full(grid * nthreads, -1, np.int32)
    launch(parse(pm, gpu_module(MBAR_KERNEL)), "k", grid=grid, block=nthreads, args=[out])
    cta = np.arange(grid)[:, None]
    np.testing.assert_array_equal(out.reshape(grid, nthreads), (cta ^ 1) * 7 + np.arange(nthreads))


# ---------------------------------------------------------------- failure modes
STALE_KERNEL = """
  llvm.mlir.global internal @bar() {addr_space = 3 : i32, alignment = 8 : i64} : i64
  llvm.mlir.global internal @data() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<32 x i32>
  llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.cluster_dim = array<i32: 2, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %rank = nvvm.read.ptx.sreg.cluster.ctarank : i32
    %bar = llvm.mlir.addressof @bar : !llvm.ptr<3>
    %data = llvm.mlir.addressof @data : !llvm.ptr<3>
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c32 = llvm.mlir.constant(32 : i32) : i32
    %c5 = llvm.mlir.constant(5 : i32) : i32
    %ticks = llvm.mlir.constant(1000 : i32) : i32
    %dp = llvm.getelementptr %data[0, %tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<32 x i32>
    %is0 = llvm.icmp "eq" %tid, %c0 : i32
    llvm.cond_br %is0, ^init, ^go
  ^init:
    nvvm.mbarrier.init %bar, %c32 : !llvm.ptr<3>, i32
    nvvm.fence.mbarrier.init
    llvm.br ^go
  ^go:
    nvvm.cluster.arrive
    nvvm.cluster.wait
    %r0 = llvm.icmp "eq" %rank, %c0 : i32
    llvm.cond_br %r0, ^writer, ^reader
  ^writer:
    nvvm.mbarrier.try_wait.parity %bar, %c0, %ticks : !llvm.ptr<3>, i32, i32
    llvm.store %c5, %dp : i32, !llvm.ptr<3>
    llvm.br ^end
  ^reader:
    %rdp = nvvm.mapa %dp, %c0 : !llvm.ptr<3> -> !llvm.ptr<7>
    %v = llvm.load %rdp : !llvm.ptr<7> -> i32
    %op = llvm.getelementptr %out[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %v, %op : i32, !llvm.ptr<1>
    %rbar = nvvm.mapa %bar, %c0 : !llvm.ptr<3> -> !llvm.ptr<7>
    nvvm.mbarrier.arrive %rbar : !llvm.ptr<7>
    llvm.br ^end
  ^end:
    nvvm.cluster.arrive
    nvvm.cluster.wait
    llvm.return
  }"""


def test_reading_dsmem_without_a_cluster_barrier_reads_stale_data(pm):
    """Rank 1 reads rank 0's shared memory without waiting for rank 0's store (no barrier.cluster between
    them: rank 0 stores only once rank 1 has arrived on its mbarrier): the emulator does not order the
    accesses behind the program's back, so rank 1 reads the old zeros, as the GPU may."""
    out = np.full(32, -1, np.int32)
    launch(parse(pm, gpu_module(STALE_KERNEL)), "k", grid=2, block=32, args=[out])
    np.testing.assert_array_equal(out, np.zeros(32, np.int32))


def test_cluster_wait_that_cannot_complete_is_a_deadlock(pm):
    """Rank 1 never arrives on the cluster barrier the second time (it waits on its own mbarrier nobody
    arrives on): every thread of the cluster waits, and the launch fails naming both waits."""
    text = STALE_KERNEL.replace("""    nvvm.mbarrier.arrive %rbar : !llvm.ptr<7>
    llvm.br ^end""", """    %rb1 = nvvm.mapa %bar, %c1 : !llvm.ptr<3> -> !llvm.ptr<7>
    %rb3 = llvm.addrspacecast %rb1 : !llvm.ptr<7> to !llvm.ptr<3>
    nvvm.mbarrier.try_wait.parity %rb3, %c0, %ticks : !llvm.ptr<3>, i32, i32
    llvm.br ^end""")
    with pytest.raises(TilecoreError) as e:
        launch(parse(pm, gpu_module(text)), "k", grid=2, block=32, args=[np.zeros(32, np.int32)])
    msg = str(e.value)
    assert "deadlock: all 64 running threads of the cluster wait" in msg
    assert re.search(r"mbarrier at shared address 0x[0-9a-f]+ of CTA rank 0 \(phase 0: 0 of 32 arrivals", msg)
    assert re.search(r"mbarrier at shared address 0x[0-9a-f]+ of CTA rank 1 \(phase 0: 0 of 32 arrivals", msg)


def test_mapa_outside_the_cluster_is_a_located_error(pm):
    text = exchange_kernel(32, (2, 1, 1)).replace(
        "%rp = nvvm.mapa %p, %next : !llvm.ptr<3> -> !llvm.ptr<7>",
        '%rp = nvvm.mapa %p, %size : !llvm.ptr<3> -> !llvm.ptr<7> loc("dsmem.py":12:5)')
    with pytest.raises(TilecoreError) as e:
        launch(parse(pm, gpu_module(text)), "k", grid=2, block=32, args=[np.zeros(64, np.int32),
                                                                         np.zeros(24, np.int32)])
    assert "mapa: CTA rank 2 is outside the cluster of 2 CTAs (block (" in str(e.value)
    assert "dsmem.py:12:5" in str(e.value)


def test_shared_cta_pointer_into_the_peer_is_out_of_bounds(pm):
    """A shared::cta (addrspace 3) access reaches the CTA's own shared memory only: a peer's address cast to
    it is an out-of-bounds shared access (the mapa result must be used as shared::cluster)."""
    text = exchange_kernel(32, (2, 1, 1)).replace(
        "%w = llvm.load %rp : !llvm.ptr<7> -> i32",
        "%rp3 = llvm.addrspacecast %rp : !llvm.ptr<7> to !llvm.ptr<3>\n    %w = llvm.load %rp3 : !llvm.ptr<3> -> i32")
    with pytest.raises(TilecoreError, match=r"out-of-bounds shared memory access: load from 4 bytes at 0x[0-9a-f]+ "
                                            r"\(block \(\d, 0, 0\), thread \(\d+, 0, 0\), cluster rank \d\); .* of CTA "
                                            r"rank \d spans"):
        launch(parse(pm, gpu_module(text)), "k", grid=2, block=32, args=[np.zeros(64, np.int32),
                                                                         np.zeros(24, np.int32)])


def test_cluster_wait_without_arrive_fails(pm):
    text = exchange_kernel(32, (2, 1, 1)).replace("    nvvm.cluster.arrive {aligned}\n", "", 1)
    with pytest.raises(TilecoreError, match=r"barrier.cluster.wait without a barrier.cluster.arrive before it"):
        launch(parse(pm, gpu_module(text)), "k", grid=2, block=32, args=[np.zeros(64, np.int32),
                                                                         np.zeros(24, np.int32)])


# ---------------------------------------------------------------- TMA multicast
def multicast_kernel(box_bytes: int, coords: list[int], mask: int) -> str:
    """64 threads per CTA, clusters of 2; thread 0 of each CTA inits its mbarrier and expects the box's
    bytes; after a cluster barrier thread 0 of rank 0 issues one multicast copy (ctaMask ``mask``) into the
    dynamic shared memory; each CTA waits on its own mbarrier and copies its shared box to out[cta]."""
    cs = ", ".join(f"%k{i}" for i in range(len(coords)))
    consts = "\n".join(f"    %k{i} = llvm.mlir.constant({c} : i32) : i32" for i, c in enumerate(coords))
    return f"""
  llvm.mlir.global internal @bar() {{addr_space = 3 : i32, alignment = 8 : i64}} : i64
  llvm.mlir.global external @dyn() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<0 x i8>
  llvm.func @k(%tm: !llvm.ptr<1>, %g: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {{nvvm.kernel,
      nvvm.cluster_dim = array<i32: 2, 1, 1>}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %cta = nvvm.read.ptx.sreg.ctaid.x : i32
    %rank = nvvm.read.ptx.sreg.cluster.ctarank : i32
    %b = llvm.mlir.addressof @bar : !llvm.ptr<3>
    %sm = llvm.mlir.addressof @dyn : !llvm.ptr<3>
    %sm7 = llvm.addrspacecast %sm : !llvm.ptr<3> to !llvm.ptr<7>
    %tmg = llvm.addrspacecast %tm : !llvm.ptr<1> to !llvm.ptr
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c64 = llvm.mlir.constant(64 : i32) : i32
    %nb = llvm.mlir.constant({box_bytes} : i32) : i32
    %nw = llvm.mlir.constant({box_bytes // 4} : i32) : i32
    %mask = llvm.mlir.constant({mask} : i16) : i16
{consts}
    %is0 = llvm.icmp "eq" %t, %c0 : i32
    llvm.cond_br %is0, ^init, ^go
  ^init:
    nvvm.mbarrier.init %b, %c1 : !llvm.ptr<3>, i32
    nvvm.fence.mbarrier.init
    %s = nvvm.mbarrier.arrive.expect_tx %b, %nb : !llvm.ptr<3>, i32 -> i64
    llvm.br ^go
  ^go:
    nvvm.cluster.arrive
    nvvm.cluster.wait
    %r0 = llvm.icmp "eq" %rank, %c0 : i32
    %issue = llvm.and %is0, %r0 : i1
    llvm.cond_br %issue, ^copy, ^wait
  ^copy:
    nvvm.cp.async.bulk.tensor.shared.cluster.global %sm7, %tmg, %b, box[{cs}] multicast_mask = %mask : !llvm.ptr<7>, !llvm.ptr
    llvm.br ^wait
  ^wait:
    nvvm.mbarrier.try_wait.parity %b, %c0, %c64 : !llvm.ptr<3>, i32, i32
    %ob = llvm.mul %cta, %nw : i32
    llvm.br ^h(%t : i32)
  ^h(%i: i32):
    %more = llvm.icmp "ult" %i, %nw : i32
    llvm.cond_br %more, ^body, ^done
  ^body:
    %sp = llvm.getelementptr %sm[%i] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
    %v = llvm.load %sp : !llvm.ptr<3> -> i32
    %oi = llvm.add %ob, %i : i32
    %op = llvm.getelementptr %out[%oi] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %v, %op : i32, !llvm.ptr<1>
    %n = llvm.add %i, %c64 : i32
    llvm.br ^h(%n : i32)
  ^done:
    nvvm.cluster.arrive
    nvvm.cluster.wait
    llvm.return
  }}"""


def test_tma_multicast_lands_the_box_in_every_cta_of_the_mask(pm):
    """One cp.async.bulk.tensor .multicast::cluster with ctaMask 0b11: the same box (a 30 x 50 f32 tensor's
    16 x 32 box at (40, 20), partly outside: zero-filled) at the same offset in both CTAs' shared memory,
    each completing its own mbarrier (PTX ISA "cp.async.bulk.tensor")."""
    from tilecore.emulate.tensormap import encode_tiled

    base = np.arange(30 * 52, dtype=np.float32).reshape(30, 52) + 0.25  # rows padded to 208 bytes
    tensor = base[:, :50]
    box, coords = [16, 32], [40, 20]
    tm = encode_tiled(7, 2, 1, [50, 30], [208], box)
    nbytes = 16 * 32 * 4
    out = np.full(4 * nbytes // 4, -1, np.int32)
    launch(parse(pm, gpu_module(multicast_kernel(nbytes, coords, 3))), "k", grid=4, block=64,
           shared_bytes=nbytes, args=[tm, base, out])
    want = np.zeros((32, 16), np.float32)  # rows 20..51 x columns 40..55 of the tensor, zero outside it
    want[:10, :10] = tensor[20:30, 40:50]
    want = want.view(np.int32).ravel()
    for c in range(4):
        np.testing.assert_array_equal(out[c * (nbytes // 4):(c + 1) * (nbytes // 4)], want)


def test_tma_multicast_mask_outside_the_cluster_fails(pm):
    from tilecore.emulate.tensormap import encode_tiled

    tm = encode_tiled(7, 2, 1, [50, 30], [208], [16, 32])
    with pytest.raises(TilecoreError, match=r"cp.async.bulk.tensor: the ctaMask 0x0005 must name CTAs of the "
                                            r"cluster of 2 CTAs"):
        launch(parse(pm, gpu_module(multicast_kernel(2048, [0, 0], 5))), "k", grid=2, block=64,
               shared_bytes=2048, args=[tm, np.zeros((30, 52), np.float32), np.zeros(1024, np.int32)])


def test_tma_multicast_through_ptxas(pm):
    ptx = ptxas_round_trip(pm, multicast_kernel(2048, [0, 0], 3), "sm_90a", passes="convert-nvvm-to-llvm")
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.(tile\.)?mbarrier::complete_tx::bytes"
                     r"\.multicast::cluster", ptx)


PAIR_TMA_KERNEL = """
  llvm.mlir.global internal @bar() {addr_space = 3 : i32, alignment = 8 : i64} : i64
  llvm.mlir.global external @dyn() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
  llvm.func @k(%tm: !llvm.ptr<1>, %g: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel,
      nvvm.cluster_dim = array<i32: 2, 1, 1>} {
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %cta = nvvm.read.ptx.sreg.ctaid.x : i32
    %rank = nvvm.read.ptx.sreg.cluster.ctarank : i32
    %b = llvm.mlir.addressof @bar : !llvm.ptr<3>
    %sm = llvm.mlir.addressof @dyn : !llvm.ptr<3>
    %sm7 = llvm.addrspacecast %sm : !llvm.ptr<3> to !llvm.ptr<7>
    %tmg = llvm.addrspacecast %tm : !llvm.ptr<1> to !llvm.ptr
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c16 = llvm.mlir.constant(16 : i32) : i32
    %c64 = llvm.mlir.constant(64 : i32) : i32
    %nb2 = llvm.mlir.constant(4096 : i32) : i32
    %nw = llvm.mlir.constant(512 : i32) : i32
    %is0 = llvm.icmp "eq" %t, %c0 : i32
    %r0 = llvm.icmp "eq" %rank, %c0 : i32
    %lead = llvm.and %is0, %r0 : i1
    llvm.cond_br %lead, ^init, ^go
  ^init:
    nvvm.mbarrier.init %b, %c1 : !llvm.ptr<3>, i32
    nvvm.fence.mbarrier.init
    %s = nvvm.mbarrier.arrive.expect_tx %b, %nb2 : !llvm.ptr<3>, i32 -> i64
    llvm.br ^go
  ^go:
    nvvm.cluster.arrive
    nvvm.cluster.wait
    llvm.cond_br %is0, ^copy, ^wait
  ^copy:
    %lb7 = nvvm.mapa %b, %c0 : !llvm.ptr<3> -> !llvm.ptr<7>
    %lb = llvm.addrspacecast %lb7 : !llvm.ptr<7> to !llvm.ptr<3>
    %y = llvm.mul %rank, %c16 : i32
    nvvm.cp.async.bulk.tensor.shared.cluster.global %sm7, %tmg, %lb, box[%c0, %y] {group = #nvvm.cta_group<cta_2>} : !llvm.ptr<7>, !llvm.ptr
    llvm.br ^wait
  ^wait:
    llvm.cond_br %r0, ^lw, ^sync
  ^lw:
    nvvm.mbarrier.try_wait.parity %b, %c0, %c64 : !llvm.ptr<3>, i32, i32
    llvm.br ^sync
  ^sync:
    nvvm.cluster.arrive
    nvvm.cluster.wait
    %ob = llvm.mul %cta, %nw : i32
    llvm.br ^h(%t : i32)
  ^h(%i: i32):
    %more = llvm.icmp "ult" %i, %nw : i32
    llvm.cond_br %more, ^body, ^done
  ^body:
    %sp = llvm.getelementptr %sm[%i] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
    %v = llvm.load %sp : !llvm.ptr<3> -> i32
    %oi = llvm.add %ob, %i : i32
    %op = llvm.getelementptr %out[%oi] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %v, %op : i32, !llvm.ptr<1>
    %n = llvm.add %i, %c64 : i32
    llvm.br ^h(%n : i32)
  ^done:
    llvm.return
  }"""


def test_tma_cta_group_2_completes_on_the_leaders_mbarrier(pm):
    """cp.async.bulk.tensor .cta_group::2: each CTA of the pair loads its own 32 x 16 f32 box (rows 16 r..) into
    its own shared memory, both completing on the leader's mbarrier (a mapa address of rank 0), which expects
    both boxes' bytes; after the leader's wait and a cluster barrier both CTAs hold their boxes."""
    from tilecore.emulate.tensormap import encode_tiled

    base = np.arange(40 * 32, dtype=np.float32).reshape(40, 32) - 7.5
    tm = encode_tiled(7, 2, 1, [32, 40], [128], [32, 16])
    out = np.full(2 * 512, -1, np.int32)
    launch(parse(pm, gpu_module(PAIR_TMA_KERNEL)), "k", grid=2, block=64, shared_bytes=2048, args=[tm, base, out])
    np.testing.assert_array_equal(out.view(np.float32).reshape(2, 16, 32), base[:32].reshape(2, 16, 32))


def test_tma_mbarrier_in_another_cta_needs_cta_group_2(pm):
    from tilecore.emulate.tensormap import encode_tiled

    text = PAIR_TMA_KERNEL.replace(" {group = #nvvm.cta_group<cta_2>}", "")
    tm = encode_tiled(7, 2, 1, [32, 40], [128], [32, 16])
    args = [tm, np.zeros((40, 32), np.float32), np.zeros(1024, np.int32)]
    # the shared::cta mbarrier operand is checked against the CTA's own shared memory ...
    with pytest.raises(TilecoreError, match=r"out-of-bounds shared memory access: atomic on 8 bytes at 0x[0-9a-f]+ "
                                            r"\(block \(1, 0, 0\), thread \(0, 0, 0\), cluster rank 1\)"):
        launch(parse(pm, gpu_module(text)), "k", grid=2, block=64, shared_bytes=2048, args=args)
    # ... and without bounds checks the copy itself refuses it
    with pytest.raises(TilecoreError, match=r"cp.async.bulk.tensor: the mbarrier \(CTA rank 0\) must be in the "
                                            r"destination's CTA \(rank 1\) \(without .cta_group::2\)"):
        launch(parse(pm, gpu_module(text)), "k", grid=2, block=64, shared_bytes=2048, args=args, check_bounds=False)


def test_reading_the_shared_memory_of_an_exited_cta_fails(pm):
    """Rank 1's threads exit at once (no barrier.cluster: exited threads do not hold it); rank 0 passes its
    cluster barrier once they are gone and reads rank 1's shared memory: an out-of-bounds access that names the
    exited CTA (on the GPU its shared memory is no longer there)."""
    text = exchange_kernel(32, (2, 1, 1)).replace("""    llvm.store %v, %p : i32, !llvm.ptr<3>
    nvvm.cluster.arrive {aligned}""", """    llvm.store %v, %p : i32, !llvm.ptr<3>
    %rk1 = llvm.icmp "eq" %rank, %c1 : i32
    llvm.cond_br %rk1, ^gone, ^stay
  ^gone:
    llvm.return
  ^stay:
    nvvm.cluster.arrive {aligned}""")
    with pytest.raises(TilecoreError, match=r"out-of-bounds shared memory access: load from 4 bytes at 0x[0-9a-f]+ "
                                            r"\(block \(0, 0, 0\), thread \(\d+, 0, 0\), cluster rank 0\).*\(the "
                                            r"shared memory of CTA rank 1, which has exited"):
        launch(parse(pm, gpu_module(text)), "k", grid=2, block=32, args=[np.zeros(64, np.int32),
                                                                         np.zeros(24, np.int32)])


def test_cluster_of_one_cta_keeps_the_single_cta_path(pm):
    """nvvm.cluster_dim = [1, 1, 1] is no cluster launch: the module keeps its static shared variables (no
    per-CTA instances) and the cluster registers read rank 0 of 1."""
    from tilecore.emulate import compile_kernel

    text = exchange_kernel(32, (2, 1, 1)).replace("array<i32: 2, 1, 1>", "array<i32: 1, 1, 1>")
    k = compile_kernel(parse(pm, gpu_module(text)), "k")
    assert k.host.cluster_size == 1 and not k.host.smem_vars and "__emu_smem_var" not in str(k.host.module)
    out, regs = np.zeros(96, np.int32), np.zeros(36, np.int32)
    launch(parse(pm, gpu_module(text)), "k", grid=3, block=32, args=[out, regs])
    np.testing.assert_array_equal(out, np.arange(3)[:, None].repeat(32, 1).ravel() * 1000 + np.tile(np.arange(32), 3))
    np.testing.assert_array_equal(regs.reshape(3, 12)[:, 10:], [[0, 1]] * 3)


def test_cluster_launch_in_a_child_process(pm):
    """launch(isolate=True) runs cluster kernels too (the child compiles and launches the same way)."""
    out, regs = np.zeros(4 * 32, np.int32), np.zeros(4 * 12, np.int32)
    launch(parse(pm, gpu_module(exchange_kernel(32, (2, 1, 1)))), "k", grid=4, block=32, args=[out, regs],
           isolate=True, timeout=120)
    want_out, want_regs = expected_exchange((4, 1), (2, 1, 1), 32)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(regs, want_regs)


ATOMIC_KERNEL = """
  llvm.mlir.global internal @cnt() {addr_space = 3 : i32, alignment = 4 : i64} : i32
  llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.cluster_dim = array<i32: 2, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %cta = nvvm.read.ptx.sreg.ctaid.x : i32
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %cnt = llvm.mlir.addressof @cnt : !llvm.ptr<3>
    %is0 = llvm.icmp "eq" %tid, %c0 : i32
    llvm.cond_br %is0, ^z, ^go
  ^z:
    llvm.store %c0, %cnt : i32, !llvm.ptr<3>
    llvm.br ^go
  ^go:
    nvvm.cluster.arrive
    nvvm.cluster.wait
    %r0 = nvvm.mapa %cnt, %c0 : !llvm.ptr<3> -> !llvm.ptr<7>
    %g = llvm.addrspacecast %r0 : !llvm.ptr<7> to !llvm.ptr
    %v1 = llvm.add %tid, %c1 : i32
    %old = llvm.atomicrmw add %r0, %v1 monotonic : !llvm.ptr<7>, i32
    %old2 = llvm.atomicrmw add %g, %c1 monotonic : !llvm.ptr, i32
    nvvm.cluster.arrive
    nvvm.cluster.wait
    llvm.cond_br %is0, ^w, ^e
  ^w:
    %v = llvm.load %cnt : !llvm.ptr<3> -> i32
    %op = llvm.getelementptr %out[%cta] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %v, %op : i32, !llvm.ptr<1>
    llvm.br ^e
  ^e:
    nvvm.cluster.arrive
    nvvm.cluster.wait
    llvm.return
  }"""


def test_atomics_on_the_leaders_shared_memory_through_shared_cluster_and_generic_pointers(pm):
    """Every thread of both CTAs adds tid + 1 (atom.shared::cluster through the mapa address) and 1 (through
    its generic form) to rank 0's counter; rank 0 sees both CTAs' sums, rank 1's own counter stays 0."""
    out = np.full(4, -1, np.int32)
    launch(parse(pm, gpu_module(ATOMIC_KERNEL)), "k", grid=4, block=40, args=[out])
    np.testing.assert_array_equal(out, [2 * (40 * 41 // 2) + 80, 0] * 2)
    ptx = ptxas_round_trip(pm, ATOMIC_KERNEL, "sm_90a")
    assert re.search(r"atom\.shared::cluster\.add\.u32", ptx) and "mapa.shared::cluster" in ptx
