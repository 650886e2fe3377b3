// Block reduction through shared memory with barriers: out[ctaid] = sum of x over the CTA
// (256 threads, tree of halving strides, gpu.barrier after every step; cf control flow).
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @block_reduce(%x: !llvm.ptr<1>, %out: !llvm.ptr<1>) workgroup(%buf : memref<256xf32, 3>) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c128 = arith.constant 128 : index
      %base = arith.muli %bid, %bdim : index
      %gi = arith.addi %base, %tid : index
      %g = arith.index_cast %gi : index to i32
      %px = llvm.getelementptr %x[%g] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      memref.store %v, %buf[%tid] : memref<256xf32, 3>
      gpu.barrier
      cf.br ^head(%c128 : index)
    ^head(%s: index):
      %more = arith.cmpi ugt, %s, %c0 : index
      cf.cond_br %more, ^step, ^done
    ^step:
      %low = arith.cmpi ult, %tid, %s : index
      cf.cond_br %low, ^add, ^sync
    ^add:
      %o = arith.addi %tid, %s : index
      %a = memref.load %buf[%tid] : memref<256xf32, 3>
      %b = memref.load %buf[%o] : memref<256xf32, 3>
      %sum = arith.addf %a, %b : f32
      memref.store %sum, %buf[%tid] : memref<256xf32, 3>
      cf.br ^sync
    ^sync:
      gpu.barrier
      %h = arith.shrui %s, %c1 : index
      cf.br ^head(%h : index)
    ^done:
      %first = arith.cmpi eq, %tid, %c0 : index
      cf.cond_br %first, ^write, ^exit
    ^write:
      %r = memref.load %buf[%c0] : memref<256xf32, 3>
      %b32 = arith.index_cast %bid : index to i32
      %po = llvm.getelementptr %out[%b32] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      llvm.store %r, %po : f32, !llvm.ptr<1>
      cf.br ^exit
    ^exit:
      gpu.return
    }
  }
}
