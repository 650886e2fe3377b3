// mmai with an unsigned left operand and a signed right one; an f64 mmaf; both with static views
cuda_tile.module @mm {
  entry @mmai_u(%a: tile<ptr<i8>>, %b: tile<ptr<i8>>, %c: tile<ptr<i32>>) {
    %z = constant <i32: 0> : tile<i32>
    %av = make_tensor_view %a, shape = [16, 32], strides = [32, 1] : tensor_view<16x32xi8, strides=[32,1]>
    %bv = make_tensor_view %b, shape = [32, 16], strides = [16, 1] : tensor_view<32x16xi8, strides=[16,1]>
    %cv = make_tensor_view %c, shape = [16, 16], strides = [16, 1] : tensor_view<16x16xi32, strides=[16,1]>
    %ap = make_partition_view %av : partition_view<tile=(16x32), tensor_view<16x32xi8, strides=[32,1]>>
    %bp = make_partition_view %bv : partition_view<tile=(32x16), tensor_view<32x16xi8, strides=[16,1]>>
    %cp = make_partition_view %cv : partition_view<tile=(16x16), tensor_view<16x16xi32, strides=[16,1]>>
    %at, %t1 = load_view_tko weak %ap[%z, %z] : partition_view<tile=(16x32), tensor_view<16x32xi8, strides=[32,1]>>, tile<i32> -> tile<16x32xi8>, token
    %bt, %t2 = load_view_tko weak %bp[%z, %z] : partition_view<tile=(32x16), tensor_view<32x16xi8, strides=[16,1]>>, tile<i32> -> tile<32x16xi8>, token
    %acc = constant <i32: 5> : tile<16x16xi32>
    %r = mmai %at, %bt, %acc unsigned signed : tile<16x32xi8>, tile<32x16xi8>, tile<16x16xi32>
    %w = store_view_tko weak %r, %cp[%z, %z] : tile<16x16xi32>, partition_view<tile=(16x16), tensor_view<16x16xi32, strides=[16,1]>>, tile<i32> -> token
  }
  entry @mmaf_f64(%a: tile<ptr<f64>>, %b: tile<ptr<f64>>, %c: tile<ptr<f64>>) {
    %z = constant <i32: 0> : tile<i32>
    %av = make_tensor_view %a, shape = [16, 8], strides = [8, 1] : tensor_view<16x8xf64, strides=[8,1]>
    %bv = make_tensor_view %b, shape = [8, 16], strides = [16, 1] : tensor_view<8x16xf64, strides=[16,1]>
    %cv = make_tensor_view %c, shape = [16, 16], strides = [16, 1] : tensor_view<16x16xf64, strides=[16,1]>
    %ap = make_partition_view %av : partition_view<tile=(16x8), tensor_view<16x8xf64, strides=[8,1]>>
    %bp = make_partition_view %bv : partition_view<tile=(8x16), tensor_view<8x16xf64, strides=[16,1]>>
    %cp = make_partition_view %cv : partition_view<tile=(16x16), tensor_view<16x16xf64, strides=[16,1]>>
    %at, %t1 = load_view_tko weak %ap[%z, %z] : partition_view<tile=(16x8), tensor_view<16x8xf64, strides=[8,1]>>, tile<i32> -> tile<16x8xf64>, token
    %bt, %t2 = load_view_tko weak %bp[%z, %z] : partition_view<tile=(8x16), tensor_view<8x16xf64, strides=[16,1]>>, tile<i32> -> tile<8x16xf64>, token
    %acc = constant <f64: 0.5> : tile<16x16xf64>
    %r = mmaf %at, %bt, %acc : tile<16x8xf64>, tile<8x16xf64>, tile<16x16xf64>
    %w = store_view_tko weak %r, %cp[%z, %z] : tile<16x16xf64>, partition_view<tile=(16x16), tensor_view<16x16xf64, strides=[16,1]>>, tile<i32> -> token
  }
}
