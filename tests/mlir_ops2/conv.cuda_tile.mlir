// ftof to f16 and itof from signed / unsigned i32 in every IEEE rounding mode; ftoi truncation
cuda_tile.module @conv {
  entry @conv(%xp: tile<ptr<f32>>, %ap: tile<ptr<i32>>, %out: tile<ptr<f32>>, %n: tile<i32>) {
    %bid, %by, %bz = get_tile_block_id : tile<i32>
    %xv = make_tensor_view %xp, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
    %av = make_tensor_view %ap, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xi32, strides=[1]>
    %px = make_partition_view %xv : partition_view<tile=(16), padding_value = zero, tensor_view<?xf32, strides=[1]>>
    %pa = make_partition_view %av : partition_view<tile=(16), padding_value = zero, tensor_view<?xi32, strides=[1]>>
    %x, %t1 = load_view_tko weak %px[%bid] : partition_view<tile=(16), padding_value = zero, tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
    %a, %t2 = load_view_tko weak %pa[%bid] : partition_view<tile=(16), padding_value = zero, tensor_view<?xi32, strides=[1]>>, tile<i32> -> tile<16xi32>, token
    %vo = make_tensor_view %out, shape = [13, %n], strides = [%n, 1] : tile<i32> -> tensor_view<13x?xf32, strides=[?,1]>
    %po = make_partition_view %vo : partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>
    %h_nearest_even = ftof %x : tile<16xf32> -> tile<16xf16>
    %hf_nearest_even = ftof %h_nearest_even : tile<16xf16> -> tile<16xf32>
    %o0 = reshape %hf_nearest_even : tile<16xf32> -> tile<1x16xf32>
    %k0 = constant <i32: 0> : tile<i32>
    %w0 = store_view_tko weak %o0, %po[%k0, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %h_zero = ftof %x rounding<zero> : tile<16xf32> -> tile<16xf16>
    %hf_zero = ftof %h_zero : tile<16xf16> -> tile<16xf32>
    %o1 = reshape %hf_zero : tile<16xf32> -> tile<1x16xf32>
    %k1 = constant <i32: 1> : tile<i32>
    %w1 = store_view_tko weak %o1, %po[%k1, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %h_negative_inf = ftof %x rounding<negative_inf> : tile<16xf32> -> tile<16xf16>
    %hf_negative_inf = ftof %h_negative_inf : tile<16xf16> -> tile<16xf32>
    %o2 = reshape %hf_negative_inf : tile<16xf32> -> tile<1x16xf32>
    %k2 = constant <i32: 2> : tile<i32>
    %w2 = store_view_tko weak %o2, %po[%k2, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %h_positive_inf = ftof %x rounding<positive_inf> : tile<16xf32> -> tile<16xf16>
    %hf_positive_inf = ftof %h_positive_inf : tile<16xf16> -> tile<16xf32>
    %o3 = reshape %hf_positive_inf : tile<16xf32> -> tile<1x16xf32>
    %k3 = constant <i32: 3> : tile<i32>
    %w3 = store_view_tko weak %o3, %po[%k3, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %is_nearest_even = itof %a signed : tile<16xi32> -> tile<16xf32>
    %o4 = reshape %is_nearest_even : tile<16xf32> -> tile<1x16xf32>
    %k4 = constant <i32: 4> : tile<i32>
    %w4 = store_view_tko weak %o4, %po[%k4, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %iu_nearest_even = itof %a unsigned : tile<16xi32> -> tile<16xf32>
    %o5 = reshape %iu_nearest_even : tile<16xf32> -> tile<1x16xf32>
    %k5 = constant <i32: 5> : tile<i32>
    %w5 = store_view_tko weak %o5, %po[%k5, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %is_zero = itof %a signed rounding<zero> : tile<16xi32> -> tile<16xf32>
    %o6 = reshape %is_zero : tile<16xf32> -> tile<1x16xf32>
    %k6 = constant <i32: 6> : tile<i32>
    %w6 = store_view_tko weak %o6, %po[%k6, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %iu_zero = itof %a unsigned rounding<zero> : tile<16xi32> -> tile<16xf32>
    %o7 = reshape %iu_zero : tile<16xf32> -> tile<1x16xf32>
    %k7 = constant <i32: 7> : tile<i32>
    %w7 = store_view_tko weak %o7, %po[%k7, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %is_negative_inf = itof %a signed rounding<negative_inf> : tile<16xi32> -> tile<16xf32>
    %o8 = reshape %is_negative_inf : tile<16xf32> -> tile<1x16xf32>
    %k8 = constant <i32: 8> : tile<i32>
    %w8 = store_view_tko weak %o8, %po[%k8, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %iu_negative_inf = itof %a unsigned rounding<negative_inf> : tile<16xi32> -> tile<16xf32>
    %o9 = reshape %iu_negative_inf : tile<16xf32> -> tile<1x16xf32>
    %k9 = constant <i32: 9> : tile<i32>
    %w9 = store_view_tko weak %o9, %po[%k9, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %is_positive_inf = itof %a signed rounding<positive_inf> : tile<16xi32> -> tile<16xf32>
    %o10 = reshape %is_positive_inf : tile<16xf32> -> tile<1x16xf32>
    %k10 = constant <i32: 10> : tile<i32>
    %w10 = store_view_tko weak %o10, %po[%k10, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %iu_positive_inf = itof %a unsigned rounding<positive_inf> : tile<16xi32> -> tile<16xf32>
    %o11 = reshape %iu_positive_inf : tile<16xf32> -> tile<1x16xf32>
    %k11 = constant <i32: 11> : tile<i32>
    %w11 = store_view_tko weak %o11, %po[%k11, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
    %ti = ftoi %x signed : tile<16xf32> -> tile<16xi32>
    %tf = itof %ti signed : tile<16xi32> -> tile<16xf32>
    %o12 = reshape %tf : tile<16xf32> -> tile<1x16xf32>
    %k12 = constant <i32: 12> : tile<i32>
    %w12 = store_view_tko weak %o12, %po[%k12, %bid] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<13x?xf32, strides=[?,1]>>, tile<i32> -> token
  }
}
