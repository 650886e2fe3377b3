// divf approx / full / rounding<zero>, sqrt approx and rounding<positive_inf> with flush_to_zero, exp / tanh approx
entry @ap(%xp: tile<ptr<f32>>, %out: tile<ptr<f32>>) {
  %z = constant <i32: 0> : tile<i32>
  %xv = make_tensor_view %xp, shape = [16], strides = [1] : tensor_view<16xf32, strides=[1]>
  %px = make_partition_view %xv : partition_view<tile=(16), tensor_view<16xf32, strides=[1]>>
  %x, %t = load_view_tko weak %px[%z] : partition_view<tile=(16), tensor_view<16xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
  %three = constant <f32: 3.0> : tile<16xf32>
  %a = divf %x, %three rounding<approx> : tile<16xf32>
  %b = divf %x, %three rounding<full> : tile<16xf32>
  %c = sqrt %x rounding<approx> : tile<16xf32>
  %d = exp %x rounding<approx> : tile<16xf32>
  %e = tanh %x rounding<approx> : tile<16xf32>
  %f = sqrt %x rounding<positive_inf> flush_to_zero : tile<16xf32>
  %g = divf %x, %three rounding<zero> : tile<16xf32>
  %ov = make_tensor_view %out, shape = [7, 16], strides = [16, 1] : tensor_view<7x16xf32, strides=[16,1]>
  %po = make_partition_view %ov : partition_view<tile=(1x16), tensor_view<7x16xf32, strides=[16,1]>>
  %a2 = reshape %a : tile<16xf32> -> tile<1x16xf32>
  %b2 = reshape %b : tile<16xf32> -> tile<1x16xf32>
  %c2 = reshape %c : tile<16xf32> -> tile<1x16xf32>
  %d2 = reshape %d : tile<16xf32> -> tile<1x16xf32>
  %e2 = reshape %e : tile<16xf32> -> tile<1x16xf32>
  %f2 = reshape %f : tile<16xf32> -> tile<1x16xf32>
  %g2 = reshape %g : tile<16xf32> -> tile<1x16xf32>
  %c0 = constant <i32: 0> : tile<i32>
  %c1 = constant <i32: 1> : tile<i32>
  %c2i = constant <i32: 2> : tile<i32>
  %c3 = constant <i32: 3> : tile<i32>
  %c4 = constant <i32: 4> : tile<i32>
  %c5 = constant <i32: 5> : tile<i32>
  %c6 = constant <i32: 6> : tile<i32>
  %w0 = store_view_tko weak %a2, %po[%c0, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<7x16xf32, strides=[16,1]>>, tile<i32> -> token
  %w1 = store_view_tko weak %b2, %po[%c1, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<7x16xf32, strides=[16,1]>>, tile<i32> -> token
  %w2 = store_view_tko weak %c2, %po[%c2i, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<7x16xf32, strides=[16,1]>>, tile<i32> -> token
  %w3 = store_view_tko weak %d2, %po[%c3, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<7x16xf32, strides=[16,1]>>, tile<i32> -> token
  %w4 = store_view_tko weak %e2, %po[%c4, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<7x16xf32, strides=[16,1]>>, tile<i32> -> token
  %w5 = store_view_tko weak %f2, %po[%c5, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<7x16xf32, strides=[16,1]>>, tile<i32> -> token
  %w6 = store_view_tko weak %g2, %po[%c6, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<7x16xf32, strides=[16,1]>>, tile<i32> -> token
}
