// Warp collectives: a shuffle-xor sum per warp, shuffle up / down / idx, a ballot,
// elect, match.any and a redux.sync add.
// out[w] = sum of x over warp w; up/down/idx[t] = the shuffled x; ballot[w] = mask of odd x;
// (idx reads lane 3 of the warp) elect[t] = 1 on the elected lane; match[t] = lanes with the same x % 4; redux[w] = sum of tid.
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @warp_ops(%x: !llvm.ptr<1>, %out: !llvm.ptr<1>, %up: !llvm.ptr<1>, %down: !llvm.ptr<1>,
                       %idx: !llvm.ptr<1>, %ballot: !llvm.ptr<1>, %elect: !llvm.ptr<1>, %match: !llvm.ptr<1>,
                       %redux: !llvm.ptr<1>) kernel {
      %tid = gpu.thread_id x
      %t = arith.index_cast %tid : index to i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %c4 = arith.constant 4 : i32
      %c5 = arith.constant 5 : i32
      %c8 = arith.constant 8 : i32
      %c16 = arith.constant 16 : i32
      %c32 = arith.constant 32 : i32
      %full = arith.constant -1 : i32
      %w = arith.shrui %t, %c5 : i32
      %px = llvm.getelementptr %x[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %s1, %ok1 = gpu.shuffle xor %v, %c16, %c32 : f32
      %a1 = arith.addf %v, %s1 : f32
      %s2, %ok2 = gpu.shuffle xor %a1, %c8, %c32 : f32
      %a2 = arith.addf %a1, %s2 : f32
      %s3, %ok3 = gpu.shuffle xor %a2, %c4, %c32 : f32
      %a3 = arith.addf %a2, %s3 : f32
      %s4, %ok4 = gpu.shuffle xor %a3, %c2, %c32 : f32
      %a4 = arith.addf %a3, %s4 : f32
      %s5, %ok5 = gpu.shuffle xor %a4, %c1, %c32 : f32
      %sum = arith.addf %a4, %s5 : f32
      %po = llvm.getelementptr %out[%w] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      llvm.store %sum, %po : f32, !llvm.ptr<1>
      %u, %oku = gpu.shuffle up %v, %c3, %c32 : f32
      %pu = llvm.getelementptr %up[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      llvm.store %u, %pu : f32, !llvm.ptr<1>
      %d, %okd = gpu.shuffle down %v, %c5, %c32 : f32
      %pd = llvm.getelementptr %down[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      llvm.store %d, %pd : f32, !llvm.ptr<1>
      %i, %oki = gpu.shuffle idx %v, %c3, %c32 : f32
      %pi = llvm.getelementptr %idx[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      llvm.store %i, %pi : f32, !llvm.ptr<1>
      %xi = arith.fptosi %v : f32 to i32
      %odd = arith.andi %xi, %c1 : i32
      %isodd = arith.cmpi eq, %odd, %c1 : i32
      %b = nvvm.vote.sync ballot %full, %isodd -> i32
      %pb = llvm.getelementptr %ballot[%w] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %b, %pb : i32, !llvm.ptr<1>
      %e = nvvm.elect.sync -> i1
      %ei = arith.extui %e : i1 to i32
      %pe = llvm.getelementptr %elect[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %ei, %pe : i32, !llvm.ptr<1>
      %m4 = arith.remui %xi, %c4 : i32
      %mt = nvvm.match.sync any %full, %m4 : i32 -> i32
      %pm = llvm.getelementptr %match[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %mt, %pm : i32, !llvm.ptr<1>
      %rd = nvvm.redux.sync add %t, %full : i32 -> i32
      %pr = llvm.getelementptr %redux[%w] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %rd, %pr : i32, !llvm.ptr<1>
      gpu.return
    }
  }
}
