cuda_tile.module @views {
  global private constant @bias <f32: [1.0, 2.0, 3.0, 4.0]> : tile<4xf32>
  // a column-major 6 x 10 matrix (static shape and strides) read as 4 x 4 tiles of its transpose (dim_map),
  // padded with -inf; the row maxima and their argmax (a two-operand reduce), i64 indices
  entry @colmax(%x: tile<ptr<f32>>, %out: tile<ptr<f32>>, %idx: tile<ptr<i32>>) {
    %bid, %by, %bz = get_tile_block_id : tile<i32>
    %b64 = exti %bid unsigned : tile<i32> -> tile<i64>
    %z64 = constant <i64: 0> : tile<i64>
    %tv = make_tensor_view %x, shape = [6, 10], strides = [1, 6] : tensor_view<6x10xf32, strides=[1,6]>
    %pv = make_partition_view %tv : partition_view<tile=(4x4), padding_value = neg_inf, tensor_view<6x10xf32, strides=[1,6]>, dim_map=[1, 0]>
    %t, %tok = load_view_tko weak %pv[%b64, %z64] : partition_view<tile=(4x4), padding_value = neg_inf, tensor_view<6x10xf32, strides=[1,6]>, dim_map=[1, 0]>, tile<i64> -> tile<4x4xf32>, token
    %io = iota : tile<4xi32>
    %i2 = reshape %io : tile<4xi32> -> tile<1x4xi32>
    %ib = broadcast %i2 : tile<1x4xi32> -> tile<4x4xi32>
    %m, %a = reduce %t, %ib dim=1 identities=[0xFF800000 : f32, 0 : i32] : tile<4x4xf32>, tile<4x4xi32> -> tile<4xf32>, tile<4xi32>
    (%v0: tile<f32>, %v1: tile<f32>, %i0: tile<i32>, %i1: tile<i32>) {
      %gt = cmpf greater_than ordered %v1, %v0 : tile<f32> -> tile<i1>
      %v = select %gt, %v1, %v0 : tile<i1>, tile<f32>
      %i = select %gt, %i1, %i0 : tile<i1>, tile<i32>
      yield %v, %i : tile<f32>, tile<i32>
    }
    %g = get_global @bias : tile<ptr<f32>>
    %g1 = reshape %g : tile<ptr<f32>> -> tile<1xptr<f32>>
    %g4 = broadcast %g1 : tile<1xptr<f32>> -> tile<4xptr<f32>>
    %gp = offset %g4, %io : tile<4xptr<f32>>, tile<4xi32> -> tile<4xptr<f32>>
    %bv, %bt = load_ptr_tko weak %gp : tile<4xptr<f32>> -> tile<4xf32>, token
    %mb = addf %m, %bv rounding<zero> : tile<4xf32>
    %ov = make_tensor_view %out, shape = [10], strides = [1] : tensor_view<10xf32, strides=[1]>
    %op = make_partition_view %ov : partition_view<tile=(4), tensor_view<10xf32, strides=[1]>>
    %w = store_view_tko weak %mb, %op[%b64] : tile<4xf32>, partition_view<tile=(4), tensor_view<10xf32, strides=[1]>>, tile<i64> -> token
    %iv = make_tensor_view %idx, shape = [10], strides = [1] : tensor_view<10xi32, strides=[1]>
    %ip = make_partition_view %iv : partition_view<tile=(4), tensor_view<10xi32, strides=[1]>>
    %w2 = store_view_tko weak %a, %ip[%b64] : tile<4xi32>, partition_view<tile=(4), tensor_view<10xi32, strides=[1]>>, tile<i64> -> token
  }
  // a reversed inclusive scan (suffix sums) of f64 rows, then a while loop with break on a 0-d i64 counter
  entry @suffix(%x: tile<ptr<f64>>, %n: tile<i64>, %y: tile<ptr<f64>>, %steps: tile<ptr<i64>>) {
    %bid, %by, %bz = get_tile_block_id : tile<i32>
    %tv = make_tensor_view %x, shape = [%n], strides = [1] : tile<i64> -> tensor_view<?xf64, strides=[1]>
    %pv = make_partition_view %tv : partition_view<tile=(8), padding_value = zero, tensor_view<?xf64, strides=[1]>>
    %t, %tok = load_view_tko weak %pv[%bid] : partition_view<tile=(8), padding_value = zero, tensor_view<?xf64, strides=[1]>>, tile<i32> -> tile<8xf64>, token
    %s = scan %t dim=0 reverse=true identities=[0.0 : f64] : tile<8xf64> -> tile<8xf64>
    (%a: tile<f64>, %b: tile<f64>) {
      %c = addf %a, %b : tile<f64>
      yield %c : tile<f64>
    }
    %yv = make_tensor_view %y, shape = [%n], strides = [1] : tile<i64> -> tensor_view<?xf64, strides=[1]>
    %yp = make_partition_view %yv : partition_view<tile=(8), tensor_view<?xf64, strides=[1]>>
    %w = store_view_tko weak %s, %yp[%bid] : tile<8xf64>, partition_view<tile=(8), tensor_view<?xf64, strides=[1]>>, tile<i32> -> token
    %c0 = constant <i64: 0> : tile<i64>
    %c1 = constant <i64: 1> : tile<i64>
    %lim = constant <i64: 5> : tile<i64>
    %cnt = loop iter_values(%i = %c0) : tile<i64> -> tile<i64> {
      %done = cmpi greater_than_or_equal %i, %lim, signed : tile<i64> -> tile<i1>
      if %done {
        break %i : tile<i64>
      }
      %j = addi %i, %c1 overflow<no_signed_wrap> : tile<i64>
      continue %j : tile<i64>
    }
    %b64 = exti %bid signed : tile<i32> -> tile<i64>
    %r = addi %cnt, %b64 : tile<i64>
    %p = offset %steps, %bid : tile<ptr<i64>>, tile<i32> -> tile<ptr<i64>>
    %w3 = store_ptr_tko weak %p, %r : tile<ptr<i64>>, tile<i64> -> token
  }
}
