// reduce / scan bodies cuTile does not write: bitwise and / or / xor, i1 any / all, unsigned max, a 3-d
// reduce over its middle dimension, a product scan and a reversed i64 running max
cuda_tile.module @bodies {
  entry @bodies(%a: tile<ptr<i32>>, %out: tile<ptr<i32>>, %f: tile<ptr<f32>>, %fo: tile<ptr<f32>>, %w: tile<ptr<i64>>) {
    %z = constant <i32: 0> : tile<i32>
    %av = make_tensor_view %a, shape = [4, 16], strides = [16, 1] : tensor_view<4x16xi32, strides=[16,1]>
    %ap = make_partition_view %av : partition_view<tile=(4x16), tensor_view<4x16xi32, strides=[16,1]>>
    %x, %t = load_view_tko weak %ap[%z, %z] : partition_view<tile=(4x16), tensor_view<4x16xi32, strides=[16,1]>>, tile<i32> -> tile<4x16xi32>, token
    %and = reduce %x dim=1 identities=[-1 : i32] : tile<4x16xi32> -> tile<4xi32>
    (%land: tile<i32>, %rand: tile<i32>) {
      %yand = andi %land, %rand : tile<i32>
      yield %yand : tile<i32>
    }
    %or = reduce %x dim=1 identities=[0 : i32] : tile<4x16xi32> -> tile<4xi32>
    (%lor: tile<i32>, %ror: tile<i32>) {
      %yor = ori %lor, %ror : tile<i32>
      yield %yor : tile<i32>
    }
    %xor = reduce %x dim=0 identities=[0 : i32] : tile<4x16xi32> -> tile<16xi32>
    (%lxor: tile<i32>, %rxor: tile<i32>) {
      %yxor = xori %lxor, %rxor : tile<i32>
      yield %yxor : tile<i32>
    }
    %umax = reduce %x dim=1 identities=[0 : i32] : tile<4x16xi32> -> tile<4xi32>
    (%lumax: tile<i32>, %rumax: tile<i32>) {
      %yumax = maxi %lumax, %rumax unsigned : tile<i32>
      yield %yumax : tile<i32>
    }
    %zero = constant <i32: 0> : tile<4x16xi32>
    %neg = cmpi less_than %x, %zero, signed : tile<4x16xi32> -> tile<4x16xi1>
    %any = reduce %neg dim=1 identities=[false : i1] : tile<4x16xi1> -> tile<4xi1>
    (%lany: tile<i1>, %rany: tile<i1>) {
      %yany = ori %lany, %rany : tile<i1>
      yield %yany : tile<i1>
    }
    %all = reduce %neg dim=1 identities=[true : i1] : tile<4x16xi1> -> tile<4xi1>
    (%lall: tile<i1>, %rall: tile<i1>) {
      %yall = andi %lall, %rall : tile<i1>
      yield %yall : tile<i1>
    }
    %anyi = exti %any unsigned : tile<4xi1> -> tile<4xi32>
    %alli = exti %all unsigned : tile<4xi1> -> tile<4xi32>
    %x3 = reshape %x : tile<4x16xi32> -> tile<4x4x4xi32>
    %mid = reduce %x3 dim=1 identities=[0 : i32] : tile<4x4x4xi32> -> tile<4x4xi32>
    (%lmid: tile<i32>, %rmid: tile<i32>) {
      %ymid = addi %lmid, %rmid : tile<i32>
      yield %ymid : tile<i32>
    }
    %mid16 = reshape %mid : tile<4x4xi32> -> tile<16xi32>
    %ov = make_tensor_view %out, shape = [7, 16], strides = [16, 1] : tensor_view<7x16xi32, strides=[16,1]>
    %op = make_partition_view %ov : partition_view<tile=(1x4), tensor_view<7x16xi32, strides=[16,1]>>
    %op16 = make_partition_view %ov : partition_view<tile=(1x16), tensor_view<7x16xi32, strides=[16,1]>>
    %s0 = reshape %and : tile<4xi32> -> tile<1x4xi32>
    %r0 = constant <i32: 0> : tile<i32>
    %w0 = store_view_tko weak %s0, %op[%r0, %z] : tile<1x4xi32>, partition_view<tile=(1x4), tensor_view<7x16xi32, strides=[16,1]>>, tile<i32> -> token
    %s1 = reshape %or : tile<4xi32> -> tile<1x4xi32>
    %r1 = constant <i32: 1> : tile<i32>
    %w1 = store_view_tko weak %s1, %op[%r1, %z] : tile<1x4xi32>, partition_view<tile=(1x4), tensor_view<7x16xi32, strides=[16,1]>>, tile<i32> -> token
    %s2 = reshape %umax : tile<4xi32> -> tile<1x4xi32>
    %r2 = constant <i32: 2> : tile<i32>
    %w2 = store_view_tko weak %s2, %op[%r2, %z] : tile<1x4xi32>, partition_view<tile=(1x4), tensor_view<7x16xi32, strides=[16,1]>>, tile<i32> -> token
    %s3 = reshape %anyi : tile<4xi32> -> tile<1x4xi32>
    %r3 = constant <i32: 3> : tile<i32>
    %w3 = store_view_tko weak %s3, %op[%r3, %z] : tile<1x4xi32>, partition_view<tile=(1x4), tensor_view<7x16xi32, strides=[16,1]>>, tile<i32> -> token
    %s4 = reshape %alli : tile<4xi32> -> tile<1x4xi32>
    %r4 = constant <i32: 4> : tile<i32>
    %w4 = store_view_tko weak %s4, %op[%r4, %z] : tile<1x4xi32>, partition_view<tile=(1x4), tensor_view<7x16xi32, strides=[16,1]>>, tile<i32> -> token
    %xr = reshape %xor : tile<16xi32> -> tile<1x16xi32>
    %r5 = constant <i32: 5> : tile<i32>
    %w5 = store_view_tko weak %xr, %op16[%r5, %z] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<7x16xi32, strides=[16,1]>>, tile<i32> -> token
    %fv = make_tensor_view %f, shape = [16], strides = [1] : tensor_view<16xf32, strides=[1]>
    %fp = make_partition_view %fv : partition_view<tile=(16), tensor_view<16xf32, strides=[1]>>
    %fx, %ft = load_view_tko weak %fp[%z] : partition_view<tile=(16), tensor_view<16xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
    %prod = scan %fx dim=0 reverse=false identities=[1.0 : f32] : tile<16xf32> -> tile<16xf32>
    (%lprod: tile<f32>, %rprod: tile<f32>) {
      %yprod = mulf %lprod, %rprod : tile<f32>
      yield %yprod : tile<f32>
    }
    %fov = make_tensor_view %fo, shape = [16], strides = [1] : tensor_view<16xf32, strides=[1]>
    %fop = make_partition_view %fov : partition_view<tile=(16), tensor_view<16xf32, strides=[1]>>
    %fw = store_view_tko weak %prod, %fop[%z] : tile<16xf32>, partition_view<tile=(16), tensor_view<16xf32, strides=[1]>>, tile<i32> -> token
    %x64 = exti %x signed : tile<4x16xi32> -> tile<4x16xi64>
    %rmax = scan %x64 dim=1 reverse=true identities=[-9223372036854775808 : i64] : tile<4x16xi64> -> tile<4x16xi64>
    (%lrmax: tile<i64>, %rrmax: tile<i64>) {
      %yrmax = maxi %lrmax, %rrmax signed : tile<i64>
      yield %yrmax : tile<i64>
    }
    %wv = make_tensor_view %w, shape = [4, 16], strides = [16, 1] : tensor_view<4x16xi64, strides=[16,1]>
    %wp = make_partition_view %wv : partition_view<tile=(4x16), tensor_view<4x16xi64, strides=[16,1]>>
    %ww = store_view_tko weak %rmax, %wp[%z, %z] : tile<4x16xi64>, partition_view<tile=(4x16), tensor_view<4x16xi64, strides=[16,1]>>, tile<i32> -> token
    %mv = reshape %mid16 : tile<16xi32> -> tile<1x16xi32>
    %r6 = constant <i32: 6> : tile<i32>
    %w6 = store_view_tko weak %mv, %op16[%r6, %z] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<7x16xi32, strides=[16,1]>>, tile<i32> -> token
  }
}
