"""IRDL definitions of the ``cute`` and ``cute_nvgpu`` companion dialects.

The warp-level MMA atom ops (stage 4 emits them through the atoms of :mod:`.mma_sm80`, stage 5
lowers them, :mod:`.mma_lowering`):

- ``cute_nvgpu.ldmatrix %ptr {num = N : i32, trans}`` -> N i32 words: ``ldmatrix.sync.aligned.m8n8.xN[.trans].b16``;
  ``%ptr`` (``!llvm.ptr<3>``) is this lane's row address.
- ``cute_nvgpu.mma_sync %a..., %b..., %c... {atom = "<atom name>", shape = array<i32: M, N, K>,
  a_type = "f16", b_type = "f16", acc_type = "f32", num_a = 4, num_b = 2}`` -> the D fragment, one
  scalar per accumulator element (a 16-bit float accumulator is packed in pairs by stage 5); the A / B
  operands are 32-bit words, or f64 elements for the f64 atom.
- ``cute_nvgpu.wgmma %desc_a, %desc_b, %c {shape = array<i32: 64, N, K>, a_type, b_type, acc_type}``
  (one warpgroup's m64nNkK; the accumulator an ``!llvm.struct`` of N / 2 scalars, chained from mma to
  mma and unpacked only after the wait), ``cute_nvgpu.wgmma_fence`` / ``_commit`` /
  ``_wait {n}``: the sm_90a warpgroup MMA atom (:mod:`.mma_sm90`);
  ``cute_nvgpu.wgmma_rs %a0, %a1, %a2, %a3, %desc_b, %c {shape, a_type, b_type, acc_type, b_major}``: the same with A
  from registers (four 32-bit words of f16 / bf16 pairs, the thread's A fragment: PTX ISA Figure 148).
- ``cute_nvgpu.cp_async %dst, %src, %src_bytes {size = 16 : i32}``, ``cute_nvgpu.cp_async_commit``,
  ``cute_nvgpu.cp_async_wait {n = N : i32}``: the global -> shared copy atom (:mod:`.copy_sm80`).
- ``cute_nvgpu.tma_load %dst, %tensor_map, %bar, %coords... `` (a tile-mode box of the tensor map at
  ``coords``, innermost first, into shared ``%dst``, completing on mbarrier ``%bar``),
  ``cute_nvgpu.mbarrier_init %bar {count}``, ``mbarrier_arrive_expect_tx %bar, %bytes``,
  ``mbarrier_try_wait_parity %bar, %phase``, ``mbarrier_inval %bar``: the TMA copy atom (:mod:`.copy_sm90`);
  ``cute_nvgpu.tma_store %tensor_map, %src, %coords...`` (the shared box at ``%src`` to the tensor map's
  tensor at ``coords``, in the thread's bulk async-group), ``bulk_commit_group``, ``bulk_wait_group_read
  {n = N : i32}``: its stores.
"""

from tilecore.dialects import DialectDef

CUTE_NVGPU_IRDL = """
irdl.dialect @cute_nvgpu {
  irdl.operation @fence_view_async_shared {
  }
  irdl.operation @elect_one {
    %0 = irdl.is i1
    irdl.results(pred: %0)
  }
  irdl.operation @tcgen05_fence_before_thread_sync {
  }
  irdl.operation @tcgen05_fence_after_thread_sync {
  }
  irdl.operation @ldmatrix {
    %p = irdl.any
    %w = irdl.is i32
    irdl.operands(ptr: %p)
    irdl.results(words: variadic %w)
  }
  irdl.operation @cp_async {
    %d = irdl.any
    %s = irdl.any
    %n = irdl.is i32
    irdl.operands(dst: %d, src: %s, src_bytes: %n)
  }
  irdl.operation @cp_async_commit {
  }
  irdl.operation @cp_async_wait {
  }
  irdl.operation @wgmma_fence {
  }
  irdl.operation @wgmma_commit {
  }
  irdl.operation @wgmma_wait {
  }
  irdl.operation @wgmma {
    %d = irdl.is i64
    %acc = irdl.any
    irdl.operands(desc_a: %d, desc_b: %d, c: %acc)
    irdl.results(d: %acc)
  }
  irdl.operation @wgmma_rs {
    %w = irdl.is i32
    %d = irdl.is i64
    %acc = irdl.any
    irdl.operands(a: variadic %w, desc_b: %d, c: %acc)
    irdl.results(d: %acc)
  }
  irdl.operation @mbarrier_init {
    %b = irdl.any
    irdl.operands(bar: %b)
  }
  irdl.operation @mbarrier_arrive_expect_tx {
    %b = irdl.any
    %n = irdl.is i32
    irdl.operands(bar: %b, tx_bytes: %n)
  }
  irdl.operation @mbarrier_try_wait_parity {
    %b = irdl.any
    %n = irdl.is i32
    irdl.operands(bar: %b, phase: %n)
  }
  irdl.operation @mbarrier_inval {
    %b = irdl.any
    irdl.operands(bar: %b)
  }
  irdl.operation @tma_load {
    %d = irdl.any
    %t = irdl.any
    %b = irdl.any
    %c = irdl.is i32
    irdl.operands(dst: %d, tensor_map: %t, bar: %b, coords: variadic %c)
  }
  irdl.operation @tma_store {
    %t = irdl.any
    %s = irdl.any
    %c = irdl.is i32
    irdl.operands(tensor_map: %t, src: %s, coords: variadic %c)
  }
  irdl.operation @bulk_commit_group {
  }
  irdl.operation @bulk_wait_group_read {
  }
  irdl.operation @mma_sync {
    %i32 = irdl.is i32
    %f64 = irdl.is f64
    %w = irdl.any_of(%i32, %f64)
    %acc = irdl.any
    irdl.operands(a: variadic %w, b: variadic %w, c: variadic %acc)
    irdl.results(d: variadic %acc)
  }
}
"""

CUTE_IRDL = """
irdl.dialect @cute {
  irdl.operation @thread_idx {
    %0 = irdl.is i32
    irdl.results(idx: %0)
  }
}
"""


def dialects() -> list[DialectDef]:
    return [DialectDef("cute", CUTE_IRDL), DialectDef("cute_nvgpu", CUTE_NVGPU_IRDL)]
