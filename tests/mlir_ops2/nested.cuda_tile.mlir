// i16 / i8 index and extent types, an unsigned for with an i64 induction variable holding an if whose
// branch holds a two-operand scan (sum and running max), get_index_space_shape into i8
cuda_tile.module @p {
  entry @idx(%x: tile<ptr<f32>>, %y: tile<ptr<f32>>, %n: tile<i16>) {
    %bid, %by, %bz = get_tile_block_id : tile<i32>
    %b16 = trunci %bid : tile<i32> -> tile<i16>
    %b8 = trunci %bid : tile<i32> -> tile<i8>
    %xv = make_tensor_view %x, shape = [%n], strides = [1] : tile<i16> -> tensor_view<?xf32, strides=[1]>
    %xp = make_partition_view %xv : partition_view<tile=(8), tensor_view<?xf32, strides=[1]>>
    %t, %tk = load_view_tko weak %xp[%b16] : partition_view<tile=(8), tensor_view<?xf32, strides=[1]>>, tile<i16> -> tile<8xf32>, token
    %nt:1 = get_index_space_shape %xp : partition_view<tile=(8), tensor_view<?xf32, strides=[1]>> -> tile<i8>
    %nt32 = exti %nt unsigned : tile<i8> -> tile<i32>
    %ntf = itof %nt32 signed : tile<i32> -> tile<f32>
    %ntf1 = reshape %ntf : tile<f32> -> tile<1xf32>
    %ntb = broadcast %ntf1 : tile<1xf32> -> tile<8xf32>
    %z = constant <i64: 0> : tile<i64>
    %one = constant <i64: 1> : tile<i64>
    %three = constant <i64: 3> : tile<i64>
    %acc = for unsigned %i in (%z to %three, step %one) : tile<i64> iter_values(%a = %t) -> (tile<8xf32>) {
      %odd = trunci %i : tile<i64> -> tile<i1>
      %r = if %odd -> (tile<8xf32>) {
        %s:2 = scan %a, %a dim=0 reverse=false identities=[0.0 : f32, 1.0 : f32] : tile<8xf32>, tile<8xf32> -> tile<8xf32>, tile<8xf32>
        (%l0: tile<f32>, %r0: tile<f32>, %l1: tile<f32>, %r1: tile<f32>) {
          %s0 = addf %l0, %r0 : tile<f32>
          %s1 = maxf %l1, %r1 : tile<f32>
          yield %s0, %s1 : tile<f32>, tile<f32>
        }
        %q = addf %s#0, %s#1 : tile<8xf32>
        yield %q : tile<8xf32>
      } else {
        %q = addf %a, %ntb : tile<8xf32>
        yield %q : tile<8xf32>
      }
      continue %r : tile<8xf32>
    }
    %yv = make_tensor_view %y, shape = [%n], strides = [1] : tile<i16> -> tensor_view<?xf32, strides=[1]>
    %yp = make_partition_view %yv : partition_view<tile=(8), tensor_view<?xf32, strides=[1]>>
    %w = store_view_tko weak %acc, %yp[%b8] : tile<8xf32>, partition_view<tile=(8), tensor_view<?xf32, strides=[1]>>, tile<i8> -> token
  }
}
