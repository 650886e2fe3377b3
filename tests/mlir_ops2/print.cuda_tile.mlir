// print_tko of i1 / bf16 / f16 / a 2-D i64 tile / f64 with flags / i8, a chained token, a holding assert
entry @pr(%x: tile<ptr<f32>>) {
  %c1 = constant <i1: true> : tile<i1>
  %c5 = constant <bf16: 5.5> : tile<bf16>
  %h = constant <f16: -2.25> : tile<f16>
  %w = constant <i64: [[1, 2], [3, 4]]> : tile<2x2xi64>
  %d = constant <f64: 0.125> : tile<f64>
  %u8 = constant <i8: -3> : tile<i8>
  %t = print_tko "a %i %f %f %%\n", %c1, %c5, %h : tile<i1>, tile<bf16>, tile<f16> -> token
  %t2 = print_tko "b %lld %+08.3f %d\n", %w, %d, %u8 token = %t : tile<2x2xi64>, tile<f64>, tile<i8> -> token
  %bid, %by, %bz = get_tile_block_id : tile<i32>
  %z = constant <i32: 0> : tile<i32>
  %ok = cmpi greater_than_or_equal %bid, %z, signed : tile<i32> -> tile<i1>
  assert %ok, "block id is negative" : tile<i1>
}
