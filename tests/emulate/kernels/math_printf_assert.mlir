// libdevice math (exp, sqrt), device printf and a device assert.
// y[i] = exp(x[i]) + sqrt(x[i]); thread 0 of every CTA prints; asserts x[i] >= 0.
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @math_printf_assert(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>, %n: i32) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %c0 = arith.constant 0 : index
      %zero = arith.constant 0.0 : f32
      %base = arith.muli %bid, %bdim : index
      %gi = arith.addi %base, %tid : index
      %g = arith.index_cast %gi : index to i32
      %inb = arith.cmpi slt, %g, %n : i32
      cf.cond_br %inb, ^body, ^exit
    ^body:
      %px = llvm.getelementptr %x[%g] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %nonneg = arith.cmpf oge, %v, %zero : f32
      cf.assert %nonneg, "x must be non-negative"
      %e = math.exp %v : f32
      %s = math.sqrt %v : f32
      %r = arith.addf %e, %s : f32
      %py = llvm.getelementptr %y[%g] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      %first = arith.cmpi eq, %tid, %c0 : index
      cf.cond_br %first, ^print, ^exit
    ^print:
      %b = arith.index_cast %bid : index to i32
      gpu.printf "block %d: y=%.3f n=%d\n", %b, %r, %n : i32, f32, i32
      cf.br ^exit
    ^exit:
      gpu.return
    }
  }
}
