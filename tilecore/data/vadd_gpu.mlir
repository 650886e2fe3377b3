// A vector add written in the gpu dialect: the core's bundled smoke-test kernel.
// c[i] = a[i] + b[i] for i = blockIdx.x * blockDim.x + threadIdx.x < n.
module attributes {gpu.container_module} {
  gpu.module @vadd_module {
    gpu.func @vadd(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>, %c: !llvm.ptr<1>, %n: i32) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %i32 = arith.index_cast %i : index to i32
      %inb = arith.cmpi slt, %i32, %n : i32
      cf.cond_br %inb, ^body, ^exit
    ^body:
      %pa = llvm.getelementptr %a[%i32] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %pb = llvm.getelementptr %b[%i32] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %pc = llvm.getelementptr %c[%i32] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %x = llvm.load %pa : !llvm.ptr<1> -> f32
      %y = llvm.load %pb : !llvm.ptr<1> -> f32
      %s = arith.addf %x, %y : f32
      llvm.store %s, %pc : f32, !llvm.ptr<1>
      cf.br ^exit
    ^exit:
      gpu.return
    }
  }
}
