"""The sm100 emulator's CTA pairs (issue 16): ``.cta_group::2`` tcgen05.alloc / dealloc / relinquish_alloc_permit,
tcgen05.mma and tcgen05.commit ``.multicast::cluster`` in clusters of 2 CTAs.

Hand-written llvm + nvvm MLIR (the forms helper B's stage 5 emits, /tmp/cluster-contract.md) run in the CPU
emulator; expected values from the PTX ISA text (9.7.16.7.1 "tcgen05.alloc" .cta_group::2, 9.7.16.10.9
"tcgen05.mma" .cta_group::2 and 9.7.16.10.5 "Data path layout organization" Layout A (M = 256: 128 rows of A
and D per CTA, each CTA N / 2 rows of B), 9.7.16.12.1 "tcgen05.commit" .multicast::cluster), in numpy.
The same forms go through MLIR's NVPTX back end and ptxas for sm_100a.
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest
from support import gpu_module, has_plugin, ptxas_round_trip
from support import parse_module as parse

from tilecore.emulate import launch
from tilecore.errors import TilecoreError

sys.path.insert(0, os.path.dirname(__file__))
from test_emulate_tcgen05 import (  # noqa: E402 - the single-CTA tests' helpers (images, layouts, kernel pieces)
    GLOBALS,
    PRELUDE,
    SMEM,
    copy_loop,
    desc_high,
    idesc,
    layout_params,
    ld_store,
    operand_image,
    quarters,
    st_from,
    thread0,
    warp0,
)

pytestmark = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="needs the gpu_nvvm plugin")

PAIR = "{group = #nvvm.cta_group<cta_2>}"


@pytest.fixture(scope="module")
def pm():
    from tilecore.plugins import get_plugin_manager

    return get_plugin_manager()


def pair_kernel(n: int, kind: str = "f16", ncols: int = 256, steps: int = 1, issuer: int = 0,
                group: str = "cta_2", m_rows: int = 128) -> str:
    """Clusters of 2 CTAs of 128 threads. Each CTA copies its A image (ga + rank * SMEM) into @sa and its B
    image into dynamic shared memory, warp 0 of each allocates ``ncols`` columns with .cta_group::2, thread 0
    inits @bar (count 1); C of the CTA (gc + cta * 128 n words, a row per lane) goes into tensor memory; a
    cluster barrier; thread 0 of rank ``issuer`` issues ``steps`` tcgen05.mma (``ctaGroup = group``; step s adds
    32 s bytes to both descriptors' start) and a tcgen05.commit .multicast::cluster with ctaMask 0b11 on @bar;
    each CTA waits on its own @bar, loads its D rows to out + cta * 128 n, a cluster barrier, then warp 0 of
    each CTA deallocates (.cta_group::2) and gives up its allocation permit."""
    mmas = []
    for s in range(steps):
        en = "%en0" if s == 0 else "%true"
        mmas.append(f"""
    %ks{s} = llvm.mlir.constant({32 * s} : i64) : i64
    %as{s} = llvm.add %abase, %ks{s} : i64
    %bs{s} = llvm.add %bbase, %ks{s} : i64
    %a4{s} = llvm.lshr %as{s}, %c4 : i64
    %b4{s} = llvm.lshr %bs{s}, %c4 : i64
    %am{s} = llvm.and %a4{s}, %m14 : i64
    %bm{s} = llvm.and %b4{s}, %m14 : i64
    %da{s} = llvm.or %am{s}, %hi_a : i64
    %db{s} = llvm.or %bm{s}, %hi_b : i64
    nvvm.tcgen05.mma %tp, %da{s}, %db{s}, %idesc, {en} {{ctaGroup = #nvvm.cta_group<{group}>, kind = \
#nvvm.tcgen05_mma_kind<{kind}>}} : (!llvm.ptr<6>, i64, i64, i32, i1)""")
    issue = "\n".join(mmas) + f"\n    nvvm.tcgen05.commit %bar, multicast_mask = %mask {PAIR} : !llvm.ptr<3>, i16"
    return f"""
  llvm.mlir.global internal @sa() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<{SMEM} x i8>
  llvm.mlir.global external @dyn() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<0 x i8>
  {GLOBALS}
  llvm.func @k(%ga: !llvm.ptr<1>, %gb: !llvm.ptr<1>, %gc: !llvm.ptr<1>, %out: !llvm.ptr<1>, %hi_a: i64, %hi_b: i64,
               %idesc: i32, %acc: i32) attributes {{nvvm.kernel, nvvm.cluster_dim = array<i32: 2, 1, 1>}} {{
    {PRELUDE}
    %rank = nvvm.read.ptx.sreg.cluster.ctarank : i32
    %cta = nvvm.read.ptx.sreg.ctaid.x : i32
    %sa = llvm.mlir.addressof @sa : !llvm.ptr<3>
    %sb = llvm.mlir.addressof @dyn : !llvm.ptr<3>
    %c4 = llvm.mlir.constant(4 : i64) : i64
    %m14 = llvm.mlir.constant(16383 : i64) : i64
    %true = llvm.mlir.constant(true) : i1
    %mask = llvm.mlir.constant(3 : i16) : i16
    %en0 = llvm.icmp "ne" %acc, %c0 : i32
    %swords = llvm.mlir.constant({SMEM // 4} : i32) : i32
    %cwords = llvm.mlir.constant({128 * n} : i32) : i32
    %ro = llvm.mul %rank, %swords : i32
    %co = llvm.mul %cta, %cwords : i32
    %gar = llvm.getelementptr %ga[%ro] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %gbr = llvm.getelementptr %gb[%ro] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %gcr = llvm.getelementptr %gc[%co] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %outr = llvm.getelementptr %out[%co] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    {copy_loop("ca", "%gar", "%sa", SMEM // 4)}
    {copy_loop("cb", "%gbr", "%sb", SMEM // 4)}
    %ncols = llvm.mlir.constant({ncols} : i32) : i32
    {warp0("alloc", f"nvvm.tcgen05.alloc %slot, %ncols {PAIR} : !llvm.ptr<3>, i32")}
    {thread0("init", "nvvm.mbarrier.init %bar, %c1 : !llvm.ptr<3>, i32")}
    nvvm.tcgen05.fence <before>
    nvvm.barrier0
    nvvm.tcgen05.fence <after>
    %ta = llvm.load %slot : !llvm.ptr<3> -> i32
    %tp = llvm.inttoptr %ta : i32 to !llvm.ptr<6>
    %wsh = llvm.shl %w32, %c16 : i32
    %twarp = llvm.add %ta, %wsh : i32
    %ncol_row = llvm.mlir.constant({n} : i32) : i32
    %rowoff = llvm.mul %wl, %ncol_row : i32
    {st_from(n, "%gcr")}
    nvvm.tcgen05.fence <before>
    nvvm.cluster.arrive {{aligned}}
    nvvm.cluster.wait {{aligned}}
    nvvm.tcgen05.fence <after>
    %abase = llvm.ptrtoint %sa : !llvm.ptr<3> to i64
    %bbase = llvm.ptrtoint %sb : !llvm.ptr<3> to i64
    %cis = llvm.mlir.constant({issuer} : i32) : i32
    %isr = llvm.icmp "eq" %rank, %cis : i32
    %ist0r = llvm.and %ist0, %isr : i1
    llvm.cond_br %ist0r, ^issue, ^issue_end
  ^issue:
    {issue}
    llvm.br ^issue_end
  ^issue_end:
    nvvm.mbarrier.try_wait.parity %bar, %c0, %ticks : !llvm.ptr<3>, i32, i32
    nvvm.tcgen05.fence <after>
    {ld_store(n, "%outr")}
    nvvm.tcgen05.fence <before>
    nvvm.cluster.arrive {{aligned}}
    nvvm.cluster.wait {{aligned}}
    {warp0("dealloc", f"nvvm.tcgen05.dealloc %tp, %ncols {PAIR} : !llvm.ptr<6>, i32{chr(10)}    "
                      f"nvvm.tcgen05.relinquish_alloc_permit {PAIR}")}
    llvm.return
  }}"""


def run_pair(pm, a, b, c, *, n, nclusters=1, issuer=0, acc=True, steps=1, swz=128, k_major=(True, True),
             text=None, m=256):
    """D = A B (+ C) by the pair kernel: A (256 x K) f16, B (K x n) f16, C (clusters x 256 x n) f32; CTA r of a
    cluster holds A's rows 128 r.., B's columns r n / 2.. (as N x K rows) and gets D's rows 128 r.. Returns D
    (clusters x 256 x n)."""
    lbo_a, sbo_a = layout_params(128, k_major[0], swz, 2)
    lbo_b, sbo_b = layout_params(n // 2, k_major[1], swz, 2)
    bt = np.ascontiguousarray(b.T)  # N x K
    img_a = np.concatenate([operand_image(a[128 * r:128 * r + 128], k_major[0], swz, lbo_a, sbo_a) for r in (0, 1)])
    img_b = np.concatenate([operand_image(bt[r * n // 2:(r + 1) * n // 2], k_major[1], swz, lbo_b, sbo_b)
                            for r in (0, 1)])
    out = np.zeros((2 * nclusters, 128, n), np.uint32)
    desc = idesc("f16", "f16", "f32", m, n, trans_a=int(not k_major[0]), trans_b=int(not k_major[1]))
    launch(parse(pm, gpu_module(text or pair_kernel(n, steps=steps, issuer=issuer))), "k", grid=2 * nclusters,
           block=128, shared_bytes=SMEM,
           args=[img_a.view(np.int32), img_b.view(np.int32), c.astype(np.float32).view(np.int32).ravel(),
                 out.view(np.int32), np.int64(np.uint64(desc_high(lbo_a, sbo_a, swz)).view(np.int64)),
                 np.int64(np.uint64(desc_high(lbo_b, sbo_b, swz)).view(np.int64)), np.int32(desc), np.int32(acc)])
    return out.view(np.float32).reshape(nclusters, 256, n)


@pytest.mark.parametrize("n, k_major, swz, issuer", [(64, (True, True), 128, 0), (256, (True, True), 64, 1),
                                                    (96, (True, False), 32, 0)])
def test_pair_mma_m256_against_numpy(pm, n, k_major, swz, issuer):
    """One M = 256 tcgen05.mma.cta_group::2 (issued by either CTA of the pair) over two clusters: each CTA's D
    (its 128 rows, every column) = its A rows times the whole B (both CTAs' halves) + its C; the commit's
    multicast arrival wakes both CTAs."""
    rng = np.random.default_rng(n)
    a = quarters(rng, (256, 16)).astype(np.float16)
    b = quarters(rng, (16, n)).astype(np.float16)
    c = quarters(rng, (2, 256, n))
    d = run_pair(pm, a, b, c, n=n, nclusters=2, issuer=issuer, swz=swz, k_major=k_major)
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_array_equal(d, want.astype(np.float32))


def test_pair_mma_k_steps_without_accumulating_c(pm):
    """Two MMAs (K = 16 each, the second at +32 bytes inside the 128B atom), the first not accumulating."""
    rng = np.random.default_rng(7)
    a = quarters(rng, (256, 32)).astype(np.float16)
    b = quarters(rng, (32, 128)).astype(np.float16)
    c = quarters(rng, (1, 256, 128))
    d = run_pair(pm, a, b, c, n=128, acc=False, steps=2)
    np.testing.assert_array_equal(d[0], (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))


def test_pair_kernel_through_ptxas(pm):
    ptx = ptxas_round_trip(pm, pair_kernel(64), "sm_100a", passes="convert-nvvm-to-llvm")
    for needle in ("tcgen05.alloc.cta_group::2.sync.aligned", "tcgen05.mma.cta_group::2.kind::f16",
                   "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster",
                   "tcgen05.dealloc.cta_group::2", "tcgen05.relinquish_alloc_permit.cta_group::2"):
        assert needle in ptx, needle
    assert re.search(r"\.reqnctapercluster 2, 1, 1", ptx)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t, r"M = 128; the emulator runs \.cta_group::2 MMAs with M = 256 only"),
    (lambda t: t.replace("nvvm.cluster_dim = array<i32: 2, 1, 1>", "nvvm.cluster_dim = array<i32: 1, 1, 1>"),
     r"tcgen05\.alloc\.cta_group::2: CTA rank 0 has no peer CTA \(a cluster of 1 CTA;"),
    (lambda t: t.replace("%mask = llvm.mlir.constant(3 : i16)", "%mask = llvm.mlir.constant(6 : i16)"),
     r"tcgen05\.commit: the ctaMask 0x0006 must name CTAs of the cluster of 2 CTAs \(block \(0, 0, 0\), thread "
     r"\(0, 0, 0\), cluster rank 0\)"),
])
def test_pair_misuse_fails_the_launch(pm, edit, message):
    rng = np.random.default_rng(3)
    a = quarters(rng, (256, 16)).astype(np.float16)
    b = quarters(rng, (16, 64)).astype(np.float16)
    m = 128 if "M = 128" in message else 256
    grid_text = edit(pair_kernel(64))
    with pytest.raises(TilecoreError, match=message):
        run_pair(pm, a, b, np.zeros((1, 256, 64)), n=64, text=grid_text, m=m)
