"""One test per row of the shared LLVM type converter's ABI table (DESIGN.md / spec note 1)."""

from __future__ import annotations

import pytest

from tilecore.mlir import ir
from tilecore.typeconv import (
    TypeConverter,
    memory_space_to_addrspace,
    tiled_view_descriptor_type,
    token_type,
)


@pytest.fixture
def ctx():
    with ir.Context() as c:
        yield c


def T(text):
    return ir.Type.parse(text)


def test_row_ranked_memref_is_descriptor_in_field_order(ctx):
    conv = TypeConverter()
    assert str(conv.convert(T("memref<4x8xf32>"))) == \
        "!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>"
    assert str(conv.convert(T("memref<f32>"))) == "!llvm.struct<(ptr, ptr, i64)>"
    # memory space rides on both pointers
    assert str(conv.convert(T("memref<16xf16, 3>"))) == \
        "!llvm.struct<(ptr<3>, ptr<3>, i64, array<1 x i64>, array<1 x i64>)>"


def test_row_kernel_memref_argument_bare_pointer_abi(ctx):
    conv = TypeConverter()
    assert str(conv.convert_kernel_argument(T("memref<?x?xf32, 1>"))) == "!llvm.ptr<1>"
    assert str(conv.convert_kernel_argument(T("memref<128xf16>"))) == "!llvm.ptr"
    assert str(conv.convert_kernel_argument(T("i32"))) == "i32"
    full = TypeConverter(bare_pointer_kernel_abi=False)
    assert str(full.convert_kernel_argument(T("memref<8xf32, 1>"))).startswith("!llvm.struct<(ptr<1>, ptr<1>, i64")


def test_row_index_is_i64_by_default_and_configurable(ctx):
    assert str(TypeConverter().convert(ir.IndexType.get())) == "i64"
    assert str(TypeConverter(index_bitwidth=32).convert(ir.IndexType.get())) == "i32"
    # the index width also reaches memref descriptor fields
    assert str(TypeConverter(index_bitwidth=32).convert(T("memref<4xf32>"))) == \
        "!llvm.struct<(ptr, ptr, i32, array<1 x i32>, array<1 x i32>)>"


def test_row_vector_converts_element_type(ctx):
    conv = TypeConverter()
    assert str(conv.convert(T("vector<4xf32>"))) == "vector<4xf32>"
    assert str(conv.convert(T("vector<2xindex>"))) == "vector<2xi64>"
    assert str(conv.convert(T("vector<8xf16>"))) == "vector<8xf16>"


def test_row_async_pipeline_token_is_i32(ctx):
    conv = TypeConverter()
    assert str(token_type()) == "i32"
    assert str(conv.convert(T("!gpu.async.token"))) == "i32"
    assert str(conv.convert(T("!nvgpu.device.async.token"))) == "i32"


def test_row_tiled_view_descriptor_is_base_pointer_plus_packed_metadata(ctx):
    assert str(tiled_view_descriptor_type()) == "!llvm.struct<(ptr<1>, i64)>"
    assert str(tiled_view_descriptor_type(3)) == "!llvm.struct<(ptr<3>, i64)>"


@pytest.mark.parametrize("attr,space", [
    ("#gpu.address_space<global>", 1),
    ("#gpu.address_space<workgroup>", 3),
    ("#gpu.address_space<private>", 5),
    ("4", 4),
    ("6", 6),
])
def test_row_memory_spaces_stay_distinct(ctx, attr, space):
    a = ir.Attribute.parse(attr if attr.startswith("#") else f"{attr} : i64")
    assert memory_space_to_addrspace(a) == space
    assert memory_space_to_addrspace(None) == 0


def test_plugin_rule_extends_and_overrides(ctx):
    conv = TypeConverter()
    assert conv.convert(T("!llvm.ptr")) == T("!llvm.ptr")
    assert conv.convert(T("complex<f32>")) is None

    def complex_rule(t, c):
        if isinstance(t, ir.ComplexType):
            return T("!llvm.struct<(f32, f32)>")
        return None

    conv.add_conversion(complex_rule, plugin="demo")
    assert str(conv.convert(T("complex<f32>"))) == "!llvm.struct<(f32, f32)>"
    assert conv.rules[0] == ("demo", "complex_rule")

    def index_as_i32(t, c):
        return ir.IntegerType.get_signless(32) if isinstance(t, ir.IndexType) else None

    conv.add_conversion(index_as_i32, plugin="demo")
    assert str(conv.convert(ir.IndexType.get())) == "i32"
