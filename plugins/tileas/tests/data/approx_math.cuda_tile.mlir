module attributes {cuda_tile.bytecode_version = "13.4"} {
  "cuda_tile.entry"() ({
  ^bb0(%x: !cuda_tile.tile<array<i64>, f32>):
    %e = "cuda_tile.exp"(%x) {rounding_mode = "approx"} : (!cuda_tile.tile<array<i64>, f32>) -> !cuda_tile.tile<array<i64>, f32>
    %d = "cuda_tile.divf"(%e, %x) {rounding_mode = "approx"} : (!cuda_tile.tile<array<i64>, f32>, !cuda_tile.tile<array<i64>, f32>) -> !cuda_tile.tile<array<i64>, f32>
    "cuda_tile_term.return"() : () -> ()
  }) {function_type = (!cuda_tile.tile<array<i64>, f32>) -> (), kernel, optimization_hints = #cuda_tile.optimization_hints<{}>, sym_name = "k"} : () -> ()
}
