"""One test per verifier rule: a broken op is reported at its own location with a clear message."""

import pytest
from tilecore_tileas.cuda_tile.verifier import verify_module

from tilecore.errors import TilecoreError
from tilecore.mlir import ir
from tilecore.plugins import get_plugin_manager

D = -9223372036854775808


def tile(shape, el="f32"):
    return f"!cuda_tile.tile<array<i64{': ' + ', '.join(map(str, shape)) if shape else ''}>, {el}>"


def kernel(args, body):
    """Generic-form text of one entry whose block takes ``args`` and runs ``body`` lines."""
    sig = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    ftype = f"({', '.join(args)}) -> ()"
    lines = "\n".join("    " + b for b in body)
    return (f'"cuda_tile.entry"() ({{\n  ^bb0({sig}):\n{lines}\n    "cuda_tile_term.return"() : () -> ()\n'
            f'  }}) {{function_type = {ftype}, kernel, optimization_hints = '
            f'#cuda_tile.optimization_hints<{{default = {{}}}}>, sym_name = "k"}} : () -> ()')


def verify(text):
    ctx = get_plugin_manager().make_context()
    with ctx:
        module = ir.Module.parse(text)
        verify_module(module)


def error(text):
    with pytest.raises(TilecoreError) as e:
        verify(text)
    return e.value


AT = 'loc("k.py":7:3)'


def test_valid_kernel_passes():
    verify(kernel([tile([4]), tile([4])],
                  [f'%0 = "cuda_tile.addf"(%a0, %a1) {{rounding_mode = "nearest_even"}} : '
                   f'({tile([4])}, {tile([4])}) -> {tile([4])}']))


def test_elementwise_operands_share_a_tile_type():
    e = error(kernel([tile([4]), tile([8])],
                     [f'%0 = "cuda_tile.addf"(%a0, %a1) {{rounding_mode = "nearest_even"}} : '
                      f'({tile([4])}, {tile([8])}) -> {tile([4])} {AT}']))
    assert e.location == "k.py:7:3"
    assert e.message == ("'cuda_tile.addf' operands and result must have the same tile type, "
                         "got tile<4xf32>, tile<8xf32>, tile<4xf32>")


def test_elementwise_result_type_agrees():
    e = error(kernel([tile([4])], [f'%0 = "cuda_tile.absf"(%a0) : ({tile([4])}) -> {tile([4], "f16")} {AT}']))
    assert e.location == "k.py:7:3" and "same tile type" in e.message and "tile<4xf16>" in e.message


def test_unsigned_divi_cannot_round_to_negative_infinity():
    i = tile([4], "i32")
    e = error(kernel([i, i], [f'%0 = "cuda_tile.divi"(%a0, %a1) {{rounding = "negative_inf", signedness = "unsigned"}} '
                              f': ({i}, {i}) -> {i} {AT}']))
    assert e.location == "k.py:7:3"
    assert e.message == ("'cuda_tile.divi' rounding 'negative_inf' is not allowed with 'unsigned' operands "
                         "(unsigned division already rounds toward zero)")


def test_compare_result_is_i1_of_the_operand_shape():
    e = error(kernel([tile([4]), tile([4])],
                     [f'%0 = "cuda_tile.cmpf"(%a0, %a1) {{comparison_ordering = "ordered", comparison_predicate = '
                      f'"less_than"}} : ({tile([4])}, {tile([4])}) -> {tile([4], "i32")} {AT}']))
    assert e.message == "'cuda_tile.cmpf' result must be tile<4xi1>, got tile<4xi32>"


def test_broadcast_shapes():
    e = error(kernel([tile([2, 3])], [f'%0 = "cuda_tile.broadcast"(%a0) : ({tile([2, 3])}) -> {tile([2, 8])} {AT}']))
    assert e.location == "k.py:7:3"
    assert e.message.startswith("'cuda_tile.broadcast' cannot broadcast tile<2x3xf32> to tile<2x8xf32>")


def test_reshape_preserves_element_count():
    e = error(kernel([tile([2, 3])], [f'%0 = "cuda_tile.reshape"(%a0) : ({tile([2, 3])}) -> {tile([7])} {AT}']))
    assert e.message.startswith("'cuda_tile.reshape' cannot reshape tile<2x3xf32> to tile<7xf32>")


def test_permute_result_shape():
    e = error(kernel([tile([2, 3])], [f'%0 = "cuda_tile.permute"(%a0) {{permutation = array<i32: 1, 0>}} : '
                                      f'({tile([2, 3])}) -> {tile([2, 3])} {AT}']))
    assert e.message == "'cuda_tile.permute' permuting tile<2x3xf32> by [1, 0] gives tile<3x2xf32>, not tile<2x3xf32>"


def test_permute_needs_a_permutation():
    e = error(kernel([tile([2, 3])], [f'%0 = "cuda_tile.permute"(%a0) {{permutation = array<i32: 0, 0>}} : '
                                      f'({tile([2, 3])}) -> {tile([2, 3])} {AT}']))
    assert "is not a permutation of the 2 dimensions" in e.message


def test_extract_subtile_shape():
    e = error(kernel([tile([8]), tile([], "i32")],
                     [f'%0 = "cuda_tile.extract"(%a0, %a1) : ({tile([8])}, {tile([], "i32")}) -> {tile([3])} {AT}']))
    assert e.message.startswith("'cuda_tile.extract' tile<3xf32> is not a sub-tile of tile<8xf32>")


def test_cat_shapes():
    e = error(kernel([tile([2, 4]), tile([3, 4])],
                     [f'%0 = "cuda_tile.cat"(%a0, %a1) {{dim = 0 : i64}} : ({tile([2, 4])}, {tile([3, 4])}) -> '
                      f'{tile([6, 4])} {AT}']))
    assert e.message == ("'cuda_tile.cat' concatenating tile<2x4xf32> and tile<3x4xf32> along 0 gives "
                         "tile<5x4xf32>, not tile<6x4xf32>")


def test_mmaf_shapes():
    e = error(kernel([tile([16, 8], "f16"), tile([4, 32], "f16"), tile([16, 32])],
                     [f'%0 = "cuda_tile.mmaf"(%a0, %a1, %a2) : ({tile([16, 8], "f16")}, {tile([4, 32], "f16")}, '
                      f'{tile([16, 32])}) -> {tile([16, 32])} {AT}']))
    assert e.location == "k.py:7:3"
    assert e.message == ("'cuda_tile.mmaf' shapes must be M x K . K x N -> M x N, got "
                         "tile<16x8xf16> . tile<4x32xf16> -> tile<16x32xf32>")


def test_mmaf_element_types():
    e = error(kernel([tile([16, 8], "i8"), tile([8, 32], "i8"), tile([16, 32])],
                     [f'%0 = "cuda_tile.mmaf"(%a0, %a1, %a2) : ({tile([16, 8], "i8")}, {tile([8, 32], "i8")}, '
                      f'{tile([16, 32])}) -> {tile([16, 32])} {AT}']))
    assert e.message.startswith("'cuda_tile.mmaf' element types i8 x i8 -> f32 are not allowed (allowed: f16 x f16")


def test_mmai_element_types():
    e = error(kernel([tile([16, 8], "i8"), tile([8, 32], "i8"), tile([16, 32], "i16")],
                     [f'%0 = "cuda_tile.mmai"(%a0, %a1, %a2) {{signedness_lhs = "signed", signedness_rhs = "signed"}} : '
                      f'({tile([16, 8], "i8")}, {tile([8, 32], "i8")}, {tile([16, 32], "i16")}) -> '
                      f'{tile([16, 32], "i16")} {AT}']))
    assert e.message == "'cuda_tile.mmai' element types i8 x i8 -> i16 are not allowed (allowed: i8 x i8 -> i32)"


TV = f"!cuda_tile.tensor_view<f32, array<i64: {D}, {D}>, array<i64: {D}, 1>>"
PV = f'!cuda_tile.partition_view<array<i32: 4, 8>, {TV}, array<i32: 0, 1>, "none">'


def test_view_coordinate_count():
    i32 = tile([], "i32")
    e = error(kernel([PV, i32],
                     ['%t = "cuda_tile.make_token"() : () -> !cuda_tile.token',
                      f'%0:2 = "cuda_tile.load_view_tko"(%a0, %a1, %t) {{inbounds = array<i1: false>, '
                      f'memory_ordering = "weak", operandSegmentSizes = array<i32: 1, 1{", 0" * 63}, 1>}} : '
                      f'({PV}, {i32}, !cuda_tile.token) -> ({tile([4, 8])}, !cuda_tile.token) {AT}']))
    assert e.location == "k.py:7:3"
    assert e.message.startswith("'cuda_tile.load_view_tko' partition_view<") and e.message.endswith(
        "takes 2 coordinates, got 1")


def test_make_tensor_view_dynamic_operand_count():
    ptr = tile([], "!cuda_tile.ptr<f32>")
    i32 = tile([], "i32")
    e = error(kernel([ptr, i32],
                     [f'%0 = "cuda_tile.make_tensor_view"(%a0, %a1) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : '
                      f'({ptr}, {i32}) -> {TV} {AT}']))
    assert e.message.endswith("has 2 dynamic sizes and 1 dynamic strides, got 1 and 0 operands")


def test_make_partition_view_needs_a_tensor_view_of_its_result():
    """A view made of a non-view value (a mutated operand index) used to reach the atom selection."""
    i32 = tile([], "i32")
    e = error(kernel([i32], [f'%0 = "cuda_tile.make_partition_view"(%a0) : ({i32}) -> {PV} {AT}']))
    assert e.location == "k.py:7:3"
    assert e.message == "'cuda_tile.make_partition_view' expected a tensor_view operand, got tile<i32>"
    tv16 = TV.replace("f32", "f16")
    e = error(kernel([tv16], [f'%0 = "cuda_tile.make_partition_view"(%a0) : ({tv16}) -> {PV} {AT}']))
    assert e.message.startswith("'cuda_tile.make_partition_view' result must be a view of tensor_view<")
    verify(kernel([TV], [f'%0 = "cuda_tile.make_partition_view"(%a0) : ({TV}) -> {PV}']))


def test_irdl_structure_is_checked_too():
    """Enum spellings and operand counts come from IRDL; reported at the op too."""
    ctx = get_plugin_manager().make_context()
    with ctx:
        module = ir.Module.parse(kernel([tile([4])], [f'%0 = "cuda_tile.addf"(%a0, %a0) {{rounding_mode = "zero"}} : '
                                                      f'({tile([4])}, {tile([4])}) -> {tile([4])} {AT}']))
        addf = module.body.operations[0].regions[0].blocks[0].operations[0]
        addf.attributes["rounding_mode"] = ir.StringAttr.get("sideways")
        with pytest.raises(TilecoreError) as e:
            verify_module(module)
    assert e.value.location == "k.py:7:3" and "sideways" in e.value.message


@pytest.mark.parametrize("dim_map,tile_shape,message", [
    ("0, 0", "4, 8", "dim_map [0, 0] is not a permutation of the 2 dimensions of tensor_view<"),
    ("1, 2", "4, 8", "dim_map [1, 2] is not a permutation of the 2 dimensions of tensor_view<"),
    ("0", "4", "has a rank-1 tile over a rank-2 tensor_view")])
def test_make_partition_view_dim_map_permutes_the_tensor_view(dim_map, tile_shape, message):
    """A dim_map (cuTile's order=) that is not a permutation used to index the memref's sizes blindly."""
    pv = f'!cuda_tile.partition_view<array<i32: {tile_shape}>, {TV}, array<i32: {dim_map}>, "none">'
    e = error(kernel([TV], [f'%0 = "cuda_tile.make_partition_view"(%a0) : ({TV}) -> {pv} {AT}']))
    assert e.location == "k.py:7:3"
    assert e.message.startswith("'cuda_tile.make_partition_view' ") and message in e.message
    verify(kernel([TV], [f'%0 = "cuda_tile.make_partition_view"(%a0) : ({TV}) -> {PV.replace("0, 1>", "1, 0>")}']))


def test_make_gather_scatter_view_sparse_dim_is_a_dimension():
    gv = f'!cuda_tile.gather_scatter_view<array<i32: 4, 8>, {TV}, 2 : i64, "none">'
    e = error(kernel([TV], [f'%0 = "cuda_tile.make_gather_scatter_view"(%a0) : ({TV}) -> {gv} {AT}']))
    assert e.message.startswith("'cuda_tile.make_gather_scatter_view' sparse dimension 2 is not a dimension of")
