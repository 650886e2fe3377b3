module attributes {cuda_tile.bytecode_version = "13.4"} {
  "cuda_tile.global"() {alignment = 16 : i64, sym_name = "table", sym_visibility = "public", value = dense<[10, 20, 30, 40]> : tensor<4xi32>} : () -> ()
  "cuda_tile.entry"() ({
  ^bb0(%out: !cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>):
    %c = "cuda_tile.constant"() {value = dense<[3, 1, 4, 1, 5, 9, 2, 6]> : tensor<8xi32>} : () -> !cuda_tile.tile<array<i64: 8>, i32>
    %g = "cuda_tile.get_global"() {name = "table"} : () -> !cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>
    %r = "cuda_tile.reshape"(%g) : (!cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>) -> !cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<i32>>
    %gb = "cuda_tile.broadcast"(%r) : (!cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<i32>>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>
    %i = "cuda_tile.iota"() : () -> !cuda_tile.tile<array<i64: 8>, i32>
    %three = "cuda_tile.constant"() {value = dense<3> : tensor<8xi32>} : () -> !cuda_tile.tile<array<i64: 8>, i32>
    %m = "cuda_tile.andi"(%i, %three) : (!cuda_tile.tile<array<i64: 8>, i32>, !cuda_tile.tile<array<i64: 8>, i32>) -> !cuda_tile.tile<array<i64: 8>, i32>
    %p = "cuda_tile.offset"(%gb, %m) : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>, !cuda_tile.tile<array<i64: 8>, i32>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>
    %v:2 = "cuda_tile.load_ptr_tko"(%p) {memory_ordering = "weak", operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>) -> (!cuda_tile.tile<array<i64: 8>, i32>, !cuda_tile.token)
    %s = "cuda_tile.addi"(%v#0, %c) {overflow = "none"} : (!cuda_tile.tile<array<i64: 8>, i32>, !cuda_tile.tile<array<i64: 8>, i32>) -> !cuda_tile.tile<array<i64: 8>, i32>
    %or = "cuda_tile.reshape"(%out) : (!cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>) -> !cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<i32>>
    %ob = "cuda_tile.broadcast"(%or) : (!cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<i32>>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>
    %op = "cuda_tile.offset"(%ob, %i) : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>, !cuda_tile.tile<array<i64: 8>, i32>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>
    %t = "cuda_tile.store_ptr_tko"(%op, %s) {memory_ordering = "weak", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<i32>>, !cuda_tile.tile<array<i64: 8>, i32>) -> !cuda_tile.token
    "cuda_tile_term.return"() : () -> ()
  }) {function_type = (!cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>) -> (), kernel, optimization_hints = #cuda_tile.optimization_hints<{}>, sym_name = "cst_global"} : () -> ()
  "cuda_tile.entry"() ({
  ^bb0(%x: !cuda_tile.tile<array<i64>, !cuda_tile.ptr<f32>>, %out: !cuda_tile.tile<array<i64>, !cuda_tile.ptr<f32>>):
    %xi = "cuda_tile.ptr_to_int"(%x) : (!cuda_tile.tile<array<i64>, !cuda_tile.ptr<f32>>) -> !cuda_tile.tile<array<i64>, i64>
    %r = "cuda_tile.reshape"(%xi) : (!cuda_tile.tile<array<i64>, i64>) -> !cuda_tile.tile<array<i64: 1>, i64>
    %b = "cuda_tile.broadcast"(%r) : (!cuda_tile.tile<array<i64: 1>, i64>) -> !cuda_tile.tile<array<i64: 8>, i64>
    %i = "cuda_tile.iota"() : () -> !cuda_tile.tile<array<i64: 8>, i64>
    %four = "cuda_tile.constant"() {value = dense<4> : tensor<8xi64>} : () -> !cuda_tile.tile<array<i64: 8>, i64>
    %off = "cuda_tile.muli"(%i, %four) {overflow = "none"} : (!cuda_tile.tile<array<i64: 8>, i64>, !cuda_tile.tile<array<i64: 8>, i64>) -> !cuda_tile.tile<array<i64: 8>, i64>
    %a = "cuda_tile.addi"(%b, %off) {overflow = "none"} : (!cuda_tile.tile<array<i64: 8>, i64>, !cuda_tile.tile<array<i64: 8>, i64>) -> !cuda_tile.tile<array<i64: 8>, i64>
    %p = "cuda_tile.int_to_ptr"(%a) : (!cuda_tile.tile<array<i64: 8>, i64>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<f32>>
    %q = "cuda_tile.ptr_to_ptr"(%p) : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<f32>>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<f32>>
    %v:2 = "cuda_tile.load_ptr_tko"(%q) {memory_ordering = "weak", operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<f32>>) -> (!cuda_tile.tile<array<i64: 8>, f32>, !cuda_tile.token)
    %or = "cuda_tile.reshape"(%out) : (!cuda_tile.tile<array<i64>, !cuda_tile.ptr<f32>>) -> !cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<f32>>
    %ob = "cuda_tile.broadcast"(%or) : (!cuda_tile.tile<array<i64: 1>, !cuda_tile.ptr<f32>>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<f32>>
    %op = "cuda_tile.offset"(%ob, %i) : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<f32>>, !cuda_tile.tile<array<i64: 8>, i64>) -> !cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<f32>>
    %t = "cuda_tile.store_ptr_tko"(%op, %v#0) {memory_ordering = "weak", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (!cuda_tile.tile<array<i64: 8>, !cuda_tile.ptr<f32>>, !cuda_tile.tile<array<i64: 8>, f32>) -> !cuda_tile.token
    "cuda_tile_term.return"() : () -> ()
  }) {function_type = (!cuda_tile.tile<array<i64>, !cuda_tile.ptr<f32>>, !cuda_tile.tile<array<i64>, !cuda_tile.ptr<f32>>) -> (), kernel, optimization_hints = #cuda_tile.optimization_hints<{}>, sym_name = "ptr_casts"} : () -> ()
}
