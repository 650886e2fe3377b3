// flush_to_zero on addf / mulf / maxf / divf / fma: f32 subnormal inputs and results become zeros of their sign
entry @ftz(%xp: tile<ptr<f32>>, %out: tile<ptr<f32>>) {
  %z = constant <i32: 0> : tile<i32>
  %xv = make_tensor_view %xp, shape = [16], strides = [1] : tensor_view<16xf32, strides=[1]>
  %px = make_partition_view %xv : partition_view<tile=(16), tensor_view<16xf32, strides=[1]>>
  %x, %t = load_view_tko weak %px[%z] : partition_view<tile=(16), tensor_view<16xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
  %zero = constant <f32: 0.0> : tile<16xf32>
  %one = constant <f32: 1.0> : tile<16xf32>
  %a = addf %x, %zero flush_to_zero : tile<16xf32>
  %m = mulf %x, %one flush_to_zero : tile<16xf32>
  %mx = maxf %x, %zero flush_to_zero : tile<16xf32>
  %d = divf %x, %one flush_to_zero : tile<16xf32>
  %f = fma %x, %one, %zero flush_to_zero : tile<16xf32>
  %ov = make_tensor_view %out, shape = [5, 16], strides = [16, 1] : tensor_view<5x16xf32, strides=[16,1]>
  %po = make_partition_view %ov : partition_view<tile=(1x16), tensor_view<5x16xf32, strides=[16,1]>>
  %a2 = reshape %a : tile<16xf32> -> tile<1x16xf32>
  %m2 = reshape %m : tile<16xf32> -> tile<1x16xf32>
  %mx2 = reshape %mx : tile<16xf32> -> tile<1x16xf32>
  %d2 = reshape %d : tile<16xf32> -> tile<1x16xf32>
  %f2 = reshape %f : tile<16xf32> -> tile<1x16xf32>
  %c0 = constant <i32: 0> : tile<i32>
  %c1 = constant <i32: 1> : tile<i32>
  %c2 = constant <i32: 2> : tile<i32>
  %c3 = constant <i32: 3> : tile<i32>
  %c4 = constant <i32: 4> : tile<i32>
  %w0 = store_view_tko weak %a2, %po[%c0, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<5x16xf32, strides=[16,1]>>, tile<i32> -> token
  %w1 = store_view_tko weak %m2, %po[%c1, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<5x16xf32, strides=[16,1]>>, tile<i32> -> token
  %w2 = store_view_tko weak %mx2, %po[%c2, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<5x16xf32, strides=[16,1]>>, tile<i32> -> token
  %w3 = store_view_tko weak %d2, %po[%c3, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<5x16xf32, strides=[16,1]>>, tile<i32> -> token
  %w4 = store_view_tko weak %f2, %po[%c4, %z] : tile<1x16xf32>, partition_view<tile=(1x16), tensor_view<5x16xf32, strides=[16,1]>>, tile<i32> -> token
}
