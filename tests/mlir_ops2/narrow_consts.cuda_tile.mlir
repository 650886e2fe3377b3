// non-uniform f8E4M3FN / f8E5M2 / bf16 / f16 (hex) constants stored as they are
entry @c(%o8: tile<ptr<f8E4M3FN>>, %ob: tile<ptr<bf16>>, %oh: tile<ptr<f16>>, %oe: tile<ptr<f8E5M2>>) {
  %z = constant <i32: 0> : tile<i32>
  %a = constant <f8E4M3FN: [1.0, -2.0, 0.5, 448.0]> : tile<4xf8E4M3FN>
  %b = constant <bf16: [1.5, -2.25, 3.0e10, 0.1]> : tile<4xbf16>
  %h = constant <f16: [0x3C00, 0xC000, 0x7BFF, 0x0001]> : tile<4xf16>
  %e = constant <f8E5M2: [1.0, -0.5, 57344.0, 2.0]> : tile<4xf8E5M2>
  %v8 = make_tensor_view %o8, shape = [4], strides = [1] : tensor_view<4xf8E4M3FN, strides=[1]>
  %vb = make_tensor_view %ob, shape = [4], strides = [1] : tensor_view<4xbf16, strides=[1]>
  %vh = make_tensor_view %oh, shape = [4], strides = [1] : tensor_view<4xf16, strides=[1]>
  %ve = make_tensor_view %oe, shape = [4], strides = [1] : tensor_view<4xf8E5M2, strides=[1]>
  %p8 = make_partition_view %v8 : partition_view<tile=(4), tensor_view<4xf8E4M3FN, strides=[1]>>
  %pb = make_partition_view %vb : partition_view<tile=(4), tensor_view<4xbf16, strides=[1]>>
  %ph = make_partition_view %vh : partition_view<tile=(4), tensor_view<4xf16, strides=[1]>>
  %pe = make_partition_view %ve : partition_view<tile=(4), tensor_view<4xf8E5M2, strides=[1]>>
  %w8 = store_view_tko weak %a, %p8[%z] : tile<4xf8E4M3FN>, partition_view<tile=(4), tensor_view<4xf8E4M3FN, strides=[1]>>, tile<i32> -> token
  %wb = store_view_tko weak %b, %pb[%z] : tile<4xbf16>, partition_view<tile=(4), tensor_view<4xbf16, strides=[1]>>, tile<i32> -> token
  %wh = store_view_tko weak %h, %ph[%z] : tile<4xf16>, partition_view<tile=(4), tensor_view<4xf16, strides=[1]>>, tile<i32> -> token
  %we = store_view_tko weak %e, %pe[%z] : tile<4xf8E5M2>, partition_view<tile=(4), tensor_view<4xf8E5M2, strides=[1]>>, tile<i32> -> token
}
