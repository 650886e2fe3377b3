// float forms cuTile does not write: directed rounding, f16 truncation, NaN-propagating max, unordered
// comparisons, unsigned conversions, NaN padding
cuda_tile.module @floats {
  entry @floats(%xp: tile<ptr<f32>>, %yp: tile<ptr<f32>>, %out: tile<ptr<f32>>, %n: tile<i32>) {
    %bid, %by, %bz = get_tile_block_id : tile<i32>
    %xv = make_tensor_view %xp, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
    %yv = make_tensor_view %yp, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
    %vo = make_tensor_view %out, shape = [12, %n], strides = [%n, 1] : tile<i32> -> tensor_view<12x?xf32, strides=[?,1]>
    %po = make_partition_view %vo : partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>
    %px = make_partition_view %xv : partition_view<tile=(16), padding_value = zero, tensor_view<?xf32, strides=[1]>>
    %pnan = make_partition_view %xv : partition_view<tile=(16), padding_value = nan, tensor_view<?xf32, strides=[1]>>
    %py = make_partition_view %yv : partition_view<tile=(16), padding_value = pos_inf, tensor_view<?xf32, strides=[1]>>
    %x, %t1 = load_view_tko weak %px[%bid] : partition_view<tile=(16), padding_value = zero, tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
    %xn, %t2 = load_view_tko acquire device %pnan[%bid] : partition_view<tile=(16), padding_value = nan, tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
    %y, %t3 = load_view_tko relaxed tl_blk %py[%bid] : partition_view<tile=(16), padding_value = pos_inf, tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
    %ax = absf %x : tile<16xf32>
    %s0 = addf %x, %y rounding<positive_inf> : tile<16xf32>
    %o0 = reshape %s0 : tile<16xf32> -> tile<1x16xf32>
    %k0 = constant <i32: 0> : tile<i32>
    %w0 = store_view_tko weak %o0, %po[%k0, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %s1 = mulf %x, %y rounding<negative_inf> : tile<16xf32>
    %o1 = reshape %s1 : tile<16xf32> -> tile<1x16xf32>
    %k1 = constant <i32: 1> : tile<i32>
    %w1 = store_view_tko weak %o1, %po[%k1, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %h = ftof %x rounding<zero> : tile<16xf32> -> tile<16xf16>
    %s2 = ftof %h : tile<16xf16> -> tile<16xf32>
    %o2 = reshape %s2 : tile<16xf32> -> tile<1x16xf32>
    %k2 = constant <i32: 2> : tile<i32>
    %w2 = store_view_tko weak %o2, %po[%k2, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %s3 = maxf %x, %y propagate_nan : tile<16xf32>
    %o3 = reshape %s3 : tile<16xf32> -> tile<1x16xf32>
    %k3 = constant <i32: 3> : tile<i32>
    %w3 = store_view_tko weak %o3, %po[%k3, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %s4 = minf %x, %y : tile<16xf32>
    %o4 = reshape %s4 : tile<16xf32> -> tile<1x16xf32>
    %k4 = constant <i32: 4> : tile<i32>
    %w4 = store_view_tko weak %o4, %po[%k4, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %s5 = remf %x, %y : tile<16xf32>
    %o5 = reshape %s5 : tile<16xf32> -> tile<1x16xf32>
    %k5 = constant <i32: 5> : tile<i32>
    %w5 = store_view_tko weak %o5, %po[%k5, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %one = constant <f32: 1.0> : tile<16xf32>
    %zero = constant <f32: 0.0> : tile<16xf32>
    %c6 = cmpf less_than ordered %x, %y : tile<16xf32> -> tile<16xi1>
    %s6 = select %c6, %one, %zero : tile<16xi1>, tile<16xf32>
    %o6 = reshape %s6 : tile<16xf32> -> tile<1x16xf32>
    %k6 = constant <i32: 6> : tile<i32>
    %w6 = store_view_tko weak %o6, %po[%k6, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %c7 = cmpf less_than unordered %x, %y : tile<16xf32> -> tile<16xi1>
    %s7 = select %c7, %one, %zero : tile<16xi1>, tile<16xf32>
    %o7 = reshape %s7 : tile<16xf32> -> tile<1x16xf32>
    %k7 = constant <i32: 7> : tile<i32>
    %w7 = store_view_tko weak %o7, %po[%k7, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %c8 = cmpf not_equal ordered %x, %y : tile<16xf32> -> tile<16xi1>
    %s8 = select %c8, %one, %zero : tile<16xi1>, tile<16xf32>
    %o8 = reshape %s8 : tile<16xf32> -> tile<1x16xf32>
    %k8 = constant <i32: 8> : tile<i32>
    %w8 = store_view_tko weak %o8, %po[%k8, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %c9 = cmpf greater_than_or_equal unordered %x, %y : tile<16xf32> -> tile<16xi1>
    %s9 = select %c9, %one, %zero : tile<16xi1>, tile<16xf32>
    %o9 = reshape %s9 : tile<16xf32> -> tile<1x16xf32>
    %k9 = constant <i32: 9> : tile<i32>
    %w9 = store_view_tko weak %o9, %po[%k9, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %u = ftoi %ax unsigned : tile<16xf32> -> tile<16xi32>
    %s10 = itof %u unsigned rounding<zero> : tile<16xi32> -> tile<16xf32>
    %o10 = reshape %s10 : tile<16xf32> -> tile<1x16xf32>
    %k10 = constant <i32: 10> : tile<i32>
    %w10 = store_view_tko weak %o10, %po[%k10, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
    %pn = reduce %xn dim=0 identities=[0.0 : f32] : tile<16xf32> -> tile<f32>
    (%a: tile<f32>, %b: tile<f32>) {
      %c = addf %a, %b : tile<f32>
      yield %c : tile<f32>
    }
    %pn1 = reshape %pn : tile<f32> -> tile<1xf32>
    %s11 = broadcast %pn1 : tile<1xf32> -> tile<16xf32>
    %o11 = reshape %s11 : tile<16xf32> -> tile<1x16xf32>
    %k11 = constant <i32: 11> : tile<i32>
    %w11 = store_view_tko weak %o11, %po[%k11, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<12x?xf32, strides=[?,1]>>, tile<i32> -> token
  }
}
