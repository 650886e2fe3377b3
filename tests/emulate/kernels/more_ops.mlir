// Every other emulated op, written with nvvm ops inside a gpu.func: votes, match.all, redux,
// shuffle validity, lane masks, 2-D thread ids, bar.red.popc, a named barrier with a thread
// count, warp sync, dynamic shared memory, cluster registers, a fence.
// Launch: grid 2, block (32, 2); r[(cta * 64 + t) * 20 + f] holds field f:
//    0: vote.all (x < 1000)
//    1: vote.any (x == 5)
//    2: vote.uni (lane < 16)
//    3: match.all of 7: mask
//    4: match.all of 7: predicate
//    5: redux.sync min x
//    6: redux.sync max x
//    7: redux.sync or x
//    8: shfl.down 1 valid bit
//    9: lanemask.lt
//   10: lanemask.ge
//   11: tid.y
//   12: ntid.y
//   13: ctaid.x
//   14: nctaid.x
//   15: warpid
//   16: bar.red.popc (x odd)
//   17: named barrier 1 with 64 threads passed (1)
//   18: dynamic shared memory: value written by thread (t + 1) % 64
//   19: clusterid.x + 10 * cluster.nctarank
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.mlir.global external @dyn() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i32>
    gpu.func @more_ops(%x: !llvm.ptr<1>, %r: !llvm.ptr<1>) kernel {
      %full = llvm.mlir.constant(-1 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %c5 = llvm.mlir.constant(5 : i32) : i32
      %c7 = llvm.mlir.constant(7 : i32) : i32
      %c10 = llvm.mlir.constant(10 : i32) : i32
      %c16 = llvm.mlir.constant(16 : i32) : i32
      %c31 = llvm.mlir.constant(31 : i32) : i32
      %c32 = llvm.mlir.constant(32 : i32) : i32
      %c63 = llvm.mlir.constant(63 : i32) : i32
      %c64 = llvm.mlir.constant(64 : i32) : i32
      %c1000 = llvm.mlir.constant(1000 : i32) : i32
      %nf = llvm.mlir.constant(20 : i32) : i32
      %tx = nvvm.read.ptx.sreg.tid.x : i32
      %ty = nvvm.read.ptx.sreg.tid.y : i32
      %ntx = nvvm.read.ptx.sreg.ntid.x : i32
      %nty = nvvm.read.ptx.sreg.ntid.y : i32
      %cx = nvvm.read.ptx.sreg.ctaid.x : i32
      %ncx = nvvm.read.ptx.sreg.nctaid.x : i32
      %lane = nvvm.read.ptx.sreg.laneid : i32
      %wid = nvvm.read.ptx.sreg.warpid : i32
      %lmlt = nvvm.read.ptx.sreg.lanemask.lt : i32
      %lmge = nvvm.read.ptx.sreg.lanemask.ge : i32
      %clid = nvvm.read.ptx.sreg.clusterid.x : i32
      %cnr = nvvm.read.ptx.sreg.cluster.nctarank : i32
      %yoff = llvm.mul %ty, %ntx : i32
      %t = llvm.add %yoff, %tx : i32
      %ctaoff = llvm.mul %cx, %c64 : i32
      %gt = llvm.add %ctaoff, %t : i32
      %px = llvm.getelementptr %x[%gt] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      %xv = llvm.load %px : !llvm.ptr<1> -> i32
      %lt1000 = llvm.icmp "slt" %xv, %c1000 : i32
      %all = nvvm.vote.sync all %full, %lt1000 -> i1
      %all_i = llvm.zext %all : i1 to i32
      %is5 = llvm.icmp "eq" %xv, %c5 : i32
      %any = nvvm.vote.sync any %full, %is5 -> i1
      %any_i = llvm.zext %any : i1 to i32
      %low = llvm.icmp "ult" %lane, %c16 : i32
      %uni = nvvm.vote.sync uni %full, %low -> i1
      %uni_i = llvm.zext %uni : i1 to i32
      %mall = nvvm.match.sync all %full, %c7 : i32 -> !llvm.struct<(i32, i1)>
      %mall_m = llvm.extractvalue %mall[0] : !llvm.struct<(i32, i1)>
      %mall_p = llvm.extractvalue %mall[1] : !llvm.struct<(i32, i1)>
      %mall_pi = llvm.zext %mall_p : i1 to i32
      %rmin = nvvm.redux.sync min %xv, %full : i32 -> i32
      %rmax = nvvm.redux.sync max %xv, %full : i32 -> i32
      %ror = nvvm.redux.sync or %xv, %full : i32 -> i32
      %shv = nvvm.shfl.sync down %full, %xv, %c1, %c31 {return_value_and_is_valid} : i32 -> !llvm.struct<(i32, i1)>
      %shv_p = llvm.extractvalue %shv[1] : !llvm.struct<(i32, i1)>
      %shv_i = llvm.zext %shv_p : i1 to i32
      %odd = llvm.and %xv, %c1 : i32
      %popc = nvvm.barrier #nvvm.reduction<popc> %odd -> i32
      nvvm.bar.warp.sync %full : i32
      nvvm.barrier id = %c1 number_of_threads = %c64
      %nb = llvm.mlir.constant(1 : i32) : i32
      %dyn = llvm.mlir.addressof @dyn : !llvm.ptr<3>
      %pd = llvm.getelementptr %dyn[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
      llvm.store %gt, %pd : i32, !llvm.ptr<3>
      nvvm.memory.barrier #nvvm.mem_scope<cta>
      nvvm.barrier0
      %t1 = llvm.add %t, %c1 : i32
      %tn = llvm.and %t1, %c63 : i32
      %pn = llvm.getelementptr %dyn[%tn] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
      %dyn_next = llvm.load %pn : !llvm.ptr<3> -> i32
      %cn10 = llvm.mul %cnr, %c10 : i32
      %clu = llvm.add %clid, %cn10 : i32
      %rbase = llvm.mul %gt, %nf : i32
      %k0 = llvm.mlir.constant(0 : i32) : i32
      %i0 = llvm.add %rbase, %k0 : i32
      %o0 = llvm.getelementptr %r[%i0] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %all_i, %o0 : i32, !llvm.ptr<1>
      %k1 = llvm.mlir.constant(1 : i32) : i32
      %i1 = llvm.add %rbase, %k1 : i32
      %o1 = llvm.getelementptr %r[%i1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %any_i, %o1 : i32, !llvm.ptr<1>
      %k2 = llvm.mlir.constant(2 : i32) : i32
      %i2 = llvm.add %rbase, %k2 : i32
      %o2 = llvm.getelementptr %r[%i2] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %uni_i, %o2 : i32, !llvm.ptr<1>
      %k3 = llvm.mlir.constant(3 : i32) : i32
      %i3 = llvm.add %rbase, %k3 : i32
      %o3 = llvm.getelementptr %r[%i3] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %mall_m, %o3 : i32, !llvm.ptr<1>
      %k4 = llvm.mlir.constant(4 : i32) : i32
      %i4 = llvm.add %rbase, %k4 : i32
      %o4 = llvm.getelementptr %r[%i4] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %mall_pi, %o4 : i32, !llvm.ptr<1>
      %k5 = llvm.mlir.constant(5 : i32) : i32
      %i5 = llvm.add %rbase, %k5 : i32
      %o5 = llvm.getelementptr %r[%i5] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %rmin, %o5 : i32, !llvm.ptr<1>
      %k6 = llvm.mlir.constant(6 : i32) : i32
      %i6 = llvm.add %rbase, %k6 : i32
      %o6 = llvm.getelementptr %r[%i6] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %rmax, %o6 : i32, !llvm.ptr<1>
      %k7 = llvm.mlir.constant(7 : i32) : i32
      %i7 = llvm.add %rbase, %k7 : i32
      %o7 = llvm.getelementptr %r[%i7] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %ror, %o7 : i32, !llvm.ptr<1>
      %k8 = llvm.mlir.constant(8 : i32) : i32
      %i8 = llvm.add %rbase, %k8 : i32
      %o8 = llvm.getelementptr %r[%i8] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %shv_i, %o8 : i32, !llvm.ptr<1>
      %k9 = llvm.mlir.constant(9 : i32) : i32
      %i9 = llvm.add %rbase, %k9 : i32
      %o9 = llvm.getelementptr %r[%i9] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %lmlt, %o9 : i32, !llvm.ptr<1>
      %k10 = llvm.mlir.constant(10 : i32) : i32
      %i10 = llvm.add %rbase, %k10 : i32
      %o10 = llvm.getelementptr %r[%i10] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %lmge, %o10 : i32, !llvm.ptr<1>
      %k11 = llvm.mlir.constant(11 : i32) : i32
      %i11 = llvm.add %rbase, %k11 : i32
      %o11 = llvm.getelementptr %r[%i11] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %ty, %o11 : i32, !llvm.ptr<1>
      %k12 = llvm.mlir.constant(12 : i32) : i32
      %i12 = llvm.add %rbase, %k12 : i32
      %o12 = llvm.getelementptr %r[%i12] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %nty, %o12 : i32, !llvm.ptr<1>
      %k13 = llvm.mlir.constant(13 : i32) : i32
      %i13 = llvm.add %rbase, %k13 : i32
      %o13 = llvm.getelementptr %r[%i13] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %cx, %o13 : i32, !llvm.ptr<1>
      %k14 = llvm.mlir.constant(14 : i32) : i32
      %i14 = llvm.add %rbase, %k14 : i32
      %o14 = llvm.getelementptr %r[%i14] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %ncx, %o14 : i32, !llvm.ptr<1>
      %k15 = llvm.mlir.constant(15 : i32) : i32
      %i15 = llvm.add %rbase, %k15 : i32
      %o15 = llvm.getelementptr %r[%i15] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %wid, %o15 : i32, !llvm.ptr<1>
      %k16 = llvm.mlir.constant(16 : i32) : i32
      %i16 = llvm.add %rbase, %k16 : i32
      %o16 = llvm.getelementptr %r[%i16] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %popc, %o16 : i32, !llvm.ptr<1>
      %k17 = llvm.mlir.constant(17 : i32) : i32
      %i17 = llvm.add %rbase, %k17 : i32
      %o17 = llvm.getelementptr %r[%i17] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %nb, %o17 : i32, !llvm.ptr<1>
      %k18 = llvm.mlir.constant(18 : i32) : i32
      %i18 = llvm.add %rbase, %k18 : i32
      %o18 = llvm.getelementptr %r[%i18] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %dyn_next, %o18 : i32, !llvm.ptr<1>
      %k19 = llvm.mlir.constant(19 : i32) : i32
      %i19 = llvm.add %rbase, %k19 : i32
      %o19 = llvm.getelementptr %r[%i19] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %clu, %o19 : i32, !llvm.ptr<1>
      gpu.return
    }
  }
}
