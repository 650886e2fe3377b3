module attributes {cuda_tile.bytecode_version = "13.4"} {
  "cuda_tile.entry"() ({
  ^bb0(%x: !cuda_tile.tile<array<i64>, i32>):
    %t0 = "cuda_tile.make_token"() : () -> !cuda_tile.token
    %t1 = "cuda_tile.memory_fence_alias_tko"(%t0) : (!cuda_tile.token) -> !cuda_tile.token
    "cuda_tile_term.return"() : () -> ()
  }) {function_type = (!cuda_tile.tile<array<i64>, i32>) -> (), kernel, optimization_hints = #cuda_tile.optimization_hints<{}>, sym_name = "fence"} : () -> ()
}
