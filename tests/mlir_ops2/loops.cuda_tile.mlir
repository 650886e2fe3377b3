// a `loop` whose results (the values of `break`) differ from its iteration values (those of `continue`):
// the first power of two above each block's maximum, found by doubling an i32 counter; and a nested
// for / if / loop in which an inner loop breaks out with a tile
cuda_tile.module @loops {
  entry @firstpow(%x: tile<ptr<f32>>, %n: tile<i32>, %out: tile<ptr<f32>>, %its: tile<ptr<i32>>) {
    %bid, %by, %bz = get_tile_block_id : tile<i32>
    %xv = make_tensor_view %x, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
    %xp = make_partition_view %xv : partition_view<tile=(16), padding_value = neg_inf, tensor_view<?xf32, strides=[1]>>
    %t, %tk = load_view_tko weak %xp[%bid] : partition_view<tile=(16), padding_value = neg_inf, tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
    %m = reduce %t dim=0 identities=[0xFF800000 : f32] : tile<16xf32> -> tile<f32>
    (%a: tile<f32>, %b: tile<f32>) {
      %c = maxf %a, %b propagate_nan : tile<f32>
      yield %c : tile<f32>
    }
    %one = constant <f32: 1.0> : tile<f32>
    %two = constant <f32: 2.0> : tile<f32>
    %z = constant <i32: 0> : tile<i32>
    %i1 = constant <i32: 1> : tile<i32>
    %p, %k = loop iter_values(%v = %one, %i = %z) : tile<f32>, tile<i32> -> tile<f32>, tile<i32> {
      %above = cmpf greater_than ordered %v, %m : tile<f32> -> tile<i1>
      if %above {
        break %v, %i : tile<f32>, tile<i32>
      }
      %v2 = mulf %v, %two : tile<f32>
      %i2 = addi %i, %i1 : tile<i32>
      continue %v2, %i2 : tile<f32>, tile<i32>
    }
    %q = loop iter_values(%v = %one) : tile<f32> -> tile<f32> {
      %above = cmpf greater_than ordered %v, %m : tile<f32> -> tile<i1>
      if %above {
        %h = mulf %v, %two : tile<f32>
        break %h : tile<f32>
      }
      %v2 = mulf %v, %two : tile<f32>
      continue %v2 : tile<f32>
    }
    %cnt = loop iter_values(%v = %one, %i = %z) : tile<f32>, tile<i32> -> tile<i32> {
      %above = cmpf greater_than ordered %v, %m : tile<f32> -> tile<i1>
      if %above {
        break %i : tile<i32>
      }
      %v2 = mulf %v, %two : tile<f32>
      %i2 = addi %i, %i1 : tile<i32>
      continue %v2, %i2 : tile<f32>, tile<i32>
    }
    %s = addf %p, %q : tile<f32>
    %po = offset %out, %bid : tile<ptr<f32>>, tile<i32> -> tile<ptr<f32>>
    %w = store_ptr_tko weak %po, %s : tile<ptr<f32>>, tile<f32> -> token
    %pi = offset %its, %bid : tile<ptr<i32>>, tile<i32> -> tile<ptr<i32>>
    %kk = muli %k, %cnt overflow<no_wrap> : tile<i32>
    %w2 = store_ptr_tko relaxed device %pi, %kk : tile<ptr<i32>>, tile<i32> -> token
  }
}
