"""IRDL definition of the ``sm100`` companion dialect: the tensor-memory MMA atom's ops (stage 4 emits them
through :mod:`.mma_sm100`, stage 5 lowers them, :mod:`.tcgen05`). TMEM addresses are i32 (PTX ISA "Tensor
Memory Addressing": lane in bits 31-16, column in bits 15-0); shared addresses ``!llvm.ptr<3>``.

- ``sm100.tmem_alloc %slot {ncols}`` / ``sm100.tmem_dealloc %taddr {ncols}`` / ``sm100.tmem_relinquish``:
  ``tcgen05.alloc`` (the TMEM address written to ``%slot``) / ``dealloc`` / ``relinquish_alloc_permit``,
  cta_group::1, by a whole warp.
- ``sm100.umma %d_tmem, %a_desc, %b_desc, %idesc, %enable_input_d {kind = "f16"|"tf32"|"i8"|"f8f6f4"}``:
  one ``tcgen05.mma.cta_group::1.kind::<kind>`` (one thread issues it).
- ``sm100.umma_bs %d_tmem, %a_desc, %b_desc, %idesc, %enable_input_d, %sfa_tmem, %sfb_tmem {kind = "mxf8f6f4" |
  "mxf4" | "mxf4nvf4"[, block = "block16" | "block32"]}``: one ``tcgen05.mma.cta_group::1.kind::<kind>.block_scale``
  (scale factors at the two TMEM addresses; ``block``: the scale vector size, else the kind's default).
- ``sm100.tmem_cp %taddr, %desc``: ``tcgen05.cp.cta_group::1.32x128b.warpx4`` (32 rows of 16 bytes from
  shared memory, K-major canonical layout, to each 32-lane partition; one thread issues it).
- ``sm100.umma_commit %mbar``: ``tcgen05.commit.cta_group::1.mbarrier::arrive::one`` (the MMAs issued
  before it arrive on the mbarrier when done).
- ``sm100.tmem_load %taddr {num}`` -> ``vector<num x i32>`` / ``sm100.tmem_store %taddr, %v``:
  ``tcgen05.ld`` / ``st .sync.aligned.32x32b.x<num>.b32``; ``sm100.tmem_wait {kind = "load"|"store"}``:
  ``tcgen05.wait::ld`` / ``::st``.
- ``cta_group = 2 : i32`` on ``tmem_alloc`` / ``tmem_dealloc`` / ``tmem_relinquish`` / ``umma`` / ``umma_commit``:
  the ``.cta_group::2`` forms (a CTA pair, :mod:`.mma_sm100`); ``umma_commit``'s ``multicast = <mask> : i32``: its
  ``.multicast::cluster`` form (an arrival on the mbarrier at the same offset in every CTA of the mask).
- ``sm100.cluster_sync``: ``barrier.cluster.arrive.aligned`` + ``barrier.cluster.wait.aligned`` (every thread of
  both CTAs of a pair).
- the mbarrier the commits arrive on is the ``cute`` plugin's (``cute_nvgpu.mbarrier_init`` /
  ``mbarrier_try_wait_parity``, shared with the TMA copy atom).
"""

from tilecore.dialects import DialectDef

SM100_IRDL = """
irdl.dialect @sm100 {
  irdl.operation @tmem_alloc {
    %p = irdl.any
    irdl.operands(slot: %p)
  }
  irdl.operation @tmem_dealloc {
    %t = irdl.is i32
    irdl.operands(taddr: %t)
  }
  irdl.operation @tmem_relinquish {
  }
  irdl.operation @umma {
    %t = irdl.is i32
    %d = irdl.is i64
    %e = irdl.is i1
    irdl.operands(d_tmem: %t, a_desc: %d, b_desc: %d, idesc: %t, enable_input_d: %e)
  }
  irdl.operation @umma_bs {
    %t = irdl.is i32
    %d = irdl.is i64
    %e = irdl.is i1
    irdl.operands(d_tmem: %t, a_desc: %d, b_desc: %d, idesc: %t, enable_input_d: %e, sfa_tmem: %t, sfb_tmem: %t)
  }
  irdl.operation @tmem_cp {
    %t = irdl.is i32
    %d = irdl.is i64
    irdl.operands(taddr: %t, desc: %d)
  }
  irdl.operation @umma_commit {
    %p = irdl.any
    irdl.operands(mbar: %p)
  }
  irdl.operation @tmem_load {
    %t = irdl.is i32
    %v = irdl.any
    irdl.operands(taddr: %t)
    irdl.results(v: %v)
  }
  irdl.operation @tmem_store {
    %t = irdl.is i32
    %v = irdl.any
    irdl.operands(taddr: %t, v: %v)
  }
  irdl.operation @tmem_wait {
  }
  irdl.operation @cluster_sync {
  }
}
"""


def dialects() -> list[DialectDef]:
    return [DialectDef("sm100", SM100_IRDL)]
