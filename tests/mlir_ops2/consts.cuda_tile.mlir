// non-uniform 2-D constants (i32, i1) and a 2-D global: cuTile writes only splats and 1-D tables
cuda_tile.module @consts {
  global @table <f32: [[0.5, 1.5, 2.5, 3.5], [4.5, 5.5, 6.5, 7.5]]> : tile<2x4xf32>
  entry @consts(%x: tile<ptr<i32>>, %y: tile<ptr<i32>>, %g: tile<ptr<f32>>, %m: tile<i32>) {
    %bid, %by, %bz = get_tile_block_id : tile<i32>
    %z = constant <i32: 0> : tile<i32>
    %xv = make_tensor_view %x, shape = [%m, 4], strides = [4, 1] : tile<i32> -> tensor_view<?x4xi32, strides=[4,1]>
    %xp = make_partition_view %xv : partition_view<tile=(2x4), tensor_view<?x4xi32, strides=[4,1]>>
    %t, %tk = load_view_tko weak %xp[%bid, %z] : partition_view<tile=(2x4), tensor_view<?x4xi32, strides=[4,1]>>, tile<i32> -> tile<2x4xi32>, token
    %c = constant <i32: [[1, 2, 3, 4], [5, 6, 7, 8]]> : tile<2x4xi32>
    %k = constant <i1: [[true, false, false, true], [false, true, true, false]]> : tile<2x4xi1>
    %s = addi %t, %c : tile<2x4xi32>
    %n = negi %t overflow<no_signed_wrap> : tile<2x4xi32>
    %r = select %k, %s, %n : tile<2x4xi1>, tile<2x4xi32>
    %yv = make_tensor_view %y, shape = [%m, 4], strides = [4, 1] : tile<i32> -> tensor_view<?x4xi32, strides=[4,1]>
    %yp = make_partition_view %yv : partition_view<tile=(2x4), tensor_view<?x4xi32, strides=[4,1]>>
    %w = store_view_tko weak %r, %yp[%bid, %z] : tile<2x4xi32>, partition_view<tile=(2x4), tensor_view<?x4xi32, strides=[4,1]>>, tile<i32> -> token
    %tp = get_global @table : tile<ptr<f32>>
    %tv = make_tensor_view %tp, shape = [2, 4], strides = [4, 1] : tensor_view<2x4xf32, strides=[4,1]>
    %tpv = make_partition_view %tv : partition_view<tile=(2x4), tensor_view<2x4xf32, strides=[4,1]>>
    %gt, %gk = load_view_tko weak %tpv[%z, %z] : partition_view<tile=(2x4), tensor_view<2x4xf32, strides=[4,1]>>, tile<i32> -> tile<2x4xf32>, token
    %gv = make_tensor_view %g, shape = [2, 4], strides = [4, 1] : tensor_view<2x4xf32, strides=[4,1]>
    %gp = make_partition_view %gv : partition_view<tile=(2x4), tensor_view<2x4xf32, strides=[4,1]>>
    %first = cmpi equal %bid, %z, signed : tile<i32> -> tile<i1>
    if %first {
      %w2 = store_view_tko weak %gt, %gp[%z, %z] : tile<2x4xf32>, partition_view<tile=(2x4), tensor_view<2x4xf32, strides=[4,1]>>, tile<i32> -> token
    }
  }
}
