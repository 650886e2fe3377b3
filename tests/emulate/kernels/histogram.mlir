// Atomic histogram: every thread adds 1 to bins[x[i] % 16] with llvm.atomicrmw on global
// memory and to a per-CTA histogram in shared memory (memref.atomic_rmw); after a barrier,
// threads 0..15 add the CTA's counts into shared_bins with a global atomic.
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @histogram(%x: !llvm.ptr<1>, %bins: !llvm.ptr<1>, %shared_bins: !llvm.ptr<1>, %n: i32)
        workgroup(%local : memref<16xi32, 3>) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %c16 = arith.constant 16 : index
      %c1i = arith.constant 1 : i32
      %z = arith.constant 0 : i32
      %c16i = arith.constant 16 : i32
      %few = arith.cmpi ult, %tid, %c16 : index
      cf.cond_br %few, ^clear, ^counted
    ^clear:
      memref.store %z, %local[%tid] : memref<16xi32, 3>
      cf.br ^counted
    ^counted:
      gpu.barrier
      %base = arith.muli %bid, %bdim : index
      %gi = arith.addi %base, %tid : index
      %g = arith.index_cast %gi : index to i32
      %inb = arith.cmpi slt, %g, %n : i32
      cf.cond_br %inb, ^count, ^merge
    ^count:
      %px = llvm.getelementptr %x[%g] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      %v = llvm.load %px : !llvm.ptr<1> -> i32
      %bin = arith.remui %v, %c16i : i32
      %pb = llvm.getelementptr %bins[%bin] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      %old = llvm.atomicrmw add %pb, %c1i monotonic : !llvm.ptr<1>, i32
      %bi = arith.index_cast %bin : i32 to index
      %old2 = memref.atomic_rmw addi %c1i, %local[%bi] : (i32, memref<16xi32, 3>) -> i32
      cf.br ^merge
    ^merge:
      gpu.barrier
      cf.cond_br %few, ^flush, ^exit
    ^flush:
      %cnt = memref.load %local[%tid] : memref<16xi32, 3>
      %k32 = arith.index_cast %tid : index to i32
      %ps = llvm.getelementptr %shared_bins[%k32] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      %o = llvm.atomicrmw add %ps, %cnt monotonic : !llvm.ptr<1>, i32
      cf.br ^exit
    ^exit:
      gpu.return
    }
  }
}
