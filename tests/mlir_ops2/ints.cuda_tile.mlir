// integer forms cuTile does not write: unsigned predicates / division / shifts, floor division, mulhi
cuda_tile.module @ints {
  entry @ints(%a: tile<ptr<i32>>, %b: tile<ptr<i32>>, %out: tile<ptr<i32>>, %n: tile<i32>) {
    %t0 = make_token : token
    %one = constant <i32: 1> : tile<i32>
    %bid, %by, %bz = get_tile_block_id : tile<i32>
    %va = make_tensor_view %a, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xi32, strides=[1]>
    %vb = make_tensor_view %b, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xi32, strides=[1]>
    %vo = make_tensor_view %out, shape = [6, %n], strides = [%n, 1] : tile<i32> -> tensor_view<6x?xi32, strides=[?,1]>
    %pa = make_partition_view %va : partition_view<tile=(16), padding_value = zero, tensor_view<?xi32, strides=[1]>>
    %pb = make_partition_view %vb : partition_view<tile=(16), padding_value = zero, tensor_view<?xi32, strides=[1]>>
    %po = make_partition_view %vo : partition_view<tile=(1x16), tensor_view<6x?xi32, strides=[?,1]>>
    %x, %tx = load_view_tko weak %pa[%bid] token = %t0 : partition_view<tile=(16), padding_value = zero, tensor_view<?xi32, strides=[1]>>, tile<i32> -> tile<16xi32>, token
    %y0, %ty = load_view_tko weak %pb[%bid] : partition_view<tile=(16), padding_value = zero, tensor_view<?xi32, strides=[1]>>, tile<i32> -> tile<16xi32>, token
    %ones = constant <i32: 1> : tile<16xi32>
    %y = ori %y0, %ones : tile<16xi32>
    %r0 = divi %x, %y signed rounding<negative_inf> : tile<16xi32>
    %r1 = remi %x, %y unsigned : tile<16xi32>
    %c31 = constant <i32: 31> : tile<16xi32>
    %sh = andi %y, %c31 : tile<16xi32>
    %r2 = shri %x, %sh unsigned : tile<16xi32>
    %r3 = maxi %x, %y unsigned : tile<16xi32>
    %lt = cmpi less_than %x, %y, unsigned : tile<16xi32> -> tile<16xi1>
    %r4 = select %lt, %x, %y : tile<16xi1>, tile<16xi32>
    %r5 = mulhii %x, %y : tile<16xi32>
    %k0 = constant <i32: 0> : tile<i32>
    %k1 = constant <i32: 1> : tile<i32>
    %k2 = constant <i32: 2> : tile<i32>
    %k3 = constant <i32: 3> : tile<i32>
    %k4 = constant <i32: 4> : tile<i32>
    %k5 = constant <i32: 5> : tile<i32>
    %s0 = reshape %r0 : tile<16xi32> -> tile<1x16xi32>
    %s1 = reshape %r1 : tile<16xi32> -> tile<1x16xi32>
    %s2 = reshape %r2 : tile<16xi32> -> tile<1x16xi32>
    %s3 = reshape %r3 : tile<16xi32> -> tile<1x16xi32>
    %s4 = reshape %r4 : tile<16xi32> -> tile<1x16xi32>
    %s5 = reshape %r5 : tile<16xi32> -> tile<1x16xi32>
    %w0 = store_view_tko weak %s0, %po[%k0, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<6x?xi32, strides=[?,1]>>, tile<i32> -> token
    %w1 = store_view_tko weak %s1, %po[%k1, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<6x?xi32, strides=[?,1]>>, tile<i32> -> token
    %w2 = store_view_tko weak %s2, %po[%k2, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<6x?xi32, strides=[?,1]>>, tile<i32> -> token
    %w3 = store_view_tko weak %s3, %po[%k3, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<6x?xi32, strides=[?,1]>>, tile<i32> -> token
    %w4 = store_view_tko weak %s4, %po[%k4, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<6x?xi32, strides=[?,1]>>, tile<i32> -> token
    %w5 = store_view_tko weak %s5, %po[%k5, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<6x?xi32, strides=[?,1]>>, tile<i32> -> token
  }
}
