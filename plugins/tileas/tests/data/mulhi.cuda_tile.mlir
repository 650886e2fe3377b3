module attributes {cuda_tile.bytecode_version = "13.4"} {
  "cuda_tile.entry"() ({
  ^bb0(%a: !cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>, %b: !cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>, %c: !cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>):
    %i = "cuda_tile.iota"() : () -> !cuda_tile.tile<array<i64: 8>, i32>
    %ar = "cuda_tile.reshape"(%a) : (!cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>) -> !cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<i32>>
    %ab = "cuda_tile.broadcast"(%ar) : (!cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<i32>>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>
    %ap = "cuda_tile.offset"(%ab, %i) : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>, !cuda_tile.tile<array<i64: 8>, i32>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>
    %br = "cuda_tile.reshape"(%b) : (!cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>) -> !cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<i32>>
    %bb = "cuda_tile.broadcast"(%br) : (!cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<i32>>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>
    %bp = "cuda_tile.offset"(%bb, %i) : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>, !cuda_tile.tile<array<i64: 8>, i32>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>
    %cr = "cuda_tile.reshape"(%c) : (!cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>) -> !cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<i32>>
    %cb = "cuda_tile.broadcast"(%cr) : (!cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<i32>>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>
    %cp = "cuda_tile.offset"(%cb, %i) : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>, !cuda_tile.tile<array<i64: 8>, i32>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>
    %x:2 = "cuda_tile.load_ptr_tko"(%ap) {memory_ordering = "weak", operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>) -> (!cuda_tile.tile<array<i64: 8>, i32>, !cuda_tile.token)
    %y:2 = "cuda_tile.load_ptr_tko"(%bp) {memory_ordering = "weak", operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>) -> (!cuda_tile.tile<array<i64: 8>, i32>, !cuda_tile.token)
    %h = "cuda_tile.mulhii"(%x#0, %y#0) : (!cuda_tile.tile<array<i64: 8>, i32>, !cuda_tile.tile<array<i64: 8>, i32>) -> !cuda_tile.tile<array<i64: 8>, i32>
    %t = "cuda_tile.store_ptr_tko"(%cp, %h) {memory_ordering = "weak", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>, !cuda_tile.tile<array<i64: 8>, i32>) -> !cuda_tile.token
    "cuda_tile_term.return"() : () -> ()
  }) {function_type = (!cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>, !cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>, !cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>) -> (), kernel, optimization_hints = #cuda_tile.optimization_hints<{}>, sym_name = "mulhi"} : () -> ()
}
