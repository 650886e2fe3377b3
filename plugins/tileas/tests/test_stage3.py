"""Stage 3, convert-tile-func-to-llvm: bare-pointer ABI and the nvvm.* kernel attributes (spec note 1)."""

import os

import pytest
from tileas_test_paths import VISIBLE_CORPUS
from tilecore_tileas.stage2_tileaa_to_tileas.kernel_spec import KernelSpec, hints_for, min_ctas_per_sm, spec_from_hints
from tilecore_tileas.stage3_tile_func_to_llvm import kernel_attributes

from tilecore.compiler import compile_module, read_input
from tilecore.errors import TilecoreError
from tilecore.mlir import ir
from tilecore.options import CompileOptions
from tilecore.plugins import get_plugin_manager
from tilecore.serialize import ptx_to_cubin
from tilecore.targets import resolve_target

CORPUS = VISIBLE_CORPUS
UP_TO_3 = ["convert-cuda-tile-to-tileaa", "convert-tileaa-to-tileas", "tileas-assign-layouts", "tileas-select-atoms",
           "convert-tile-func-to-llvm"]


def _target(sm):
    pm = get_plugin_manager()
    return resolve_target(sm, pm.targets())


def test_saxpy_kernel_boundary():
    pm = get_plugin_manager()
    mod, _ = read_input(os.path.join(CORPUS, "saxpy_f32.tileirbc"), pm)
    compile_module(mod, _target("sm_90a"), CompileOptions(), pm, stages=UP_TO_3)
    text = str(mod)
    assert "gpu.container_module" in text and "gpu.module @tileas_kernels" in text
    assert ("llvm.func @saxpy_f32(%arg0: f32, %arg1: !llvm.ptr<1>, %arg2: i32, %arg3: i32, %arg4: !llvm.ptr<1>, "
            "%arg5: i32, %arg6: i32, %arg7: !llvm.ptr<1>, %arg8: i32, %arg9: i32)") in text
    assert "nvvm.kernel" in text and "nvvm.reqntid = array<i32: 128, 1, 1>" in text
    assert "nvvm.minctasm = 1 : i32" in text
    assert "nvvm.cluster_dim" not in text and "nvvm.maxnreg" not in text
    assert "builtin.unrealized_conversion_cast" in text  # pointer args reach the nv_tileas body through casts
    assert "nv_tileaa.func" not in text


def _names(attrs):
    return set(attrs)


def test_cluster_attributes_only_with_cluster_support_and_more_than_one_cta():
    spec = KernelSpec(num_warps=8, cluster_dim=(2, 1, 1), max_registers=128)
    with ir.Context():
        a90 = kernel_attributes(spec, _target("sm_90a"))
        assert {"nvvm.cluster_dim", "nvvm.maxnreg"} <= _names(a90)
        assert "nvvm.blocksareclusters" not in a90  # sm_90a emits PTX 8.3; .blocksareclusters is PTX 9.0
        assert "nvvm.blocksareclusters" in kernel_attributes(spec, _target("sm_100a"))
        assert list(a90["nvvm.reqntid"]) == [256, 1, 1]
        assert list(a90["nvvm.cluster_dim"]) == [2, 1, 1]
        a80 = kernel_attributes(spec, _target("sm_80"))
        assert "nvvm.cluster_dim" not in a80 and "nvvm.blocksareclusters" not in a80
        one = kernel_attributes(KernelSpec(cluster_dim=(1, 1, 1)), _target("sm_90a"))
        assert "nvvm.cluster_dim" not in one


def test_hints_choose_the_spec_for_the_target():
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        hints = ir.Attribute.parse('{sm_90 = {num_cta_in_cga = 2 : i32, occupancy = 2 : i32}, default = {}}')
    assert hints_for(hints, _target("sm_90a")) == {"num_cta_in_cga": 2, "occupancy": 2}
    assert hints_for(hints, _target("sm_80")) == {}
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        both = ir.Attribute.parse("{default = {num_cta_in_cga = 1 : i32, occupancy = 2 : i32}, "
                                  "sm_100 = {num_cta_in_cga = 2 : i32}}")
    assert hints_for(both, _target("sm_100a")) == {"num_cta_in_cga": 2, "occupancy": 2}
    spec = spec_from_hints({"num_cta_in_cga": 2, "occupancy": 2})
    assert spec.cluster_dim == (2, 1, 1) and spec.num_ctas == 2 and spec.num_warps == 4


def test_occupancy_yields_to_a_large_accumulator():
    """cuTile's ``occupancy`` becomes ``.minnctapersm`` (ptxas caps registers at 65536 / (occupancy x threads)) only
    while that cap is at least twice the accumulator's registers a thread, as tileiras reads it (probed on sm_90:
    128 threads at occupancy 4 keep 128 registers with 128 x 64 f32, take 255 with 128 x 128; at 8: 64 with 64 x 64,
    255 with 128 x 64). MLA decode (512 x 64 f32 accumulator, occupancy 2, 256 threads) spilled 6 KB a thread at
    the 128 registers occupancy 2 left it; the registers count the largest dot operand's words too."""
    assert min_ctas_per_sm(4, 4, 128 * 64) == 4 and min_ctas_per_sm(4, 4, 128 * 128) == 1
    assert min_ctas_per_sm(8, 4, 64 * 64) == 8 and min_ctas_per_sm(8, 4, 128 * 64) == 1
    assert min_ctas_per_sm(3, 4, 128 * 64) == 3 and min_ctas_per_sm(3, 4, 128 * 128) == 1
    assert min_ctas_per_sm(1, 4, 0) == 1 and min_ctas_per_sm(2, 4, 0) == 2
    spec = spec_from_hints({"occupancy": 2}, 512 * 64, 90)
    assert spec.num_warps == 8 and spec.num_ctas == 1 and spec.occupancy == 2
    assert spec_from_hints({"occupancy": 2}, 64 * 64, 90).num_ctas == 2
    # an operand of 128 x 512 f16 (32768 words: in registers before its dot writes it to shared memory) takes 8 warps
    # on sm_90+ and lifts the register cap too (MLA decode with TH = 16, TN = 128: a 512 x 16 accumulator)
    spec = spec_from_hints({"occupancy": 2}, 512 * 16, 90, 128 * 512 // 2)
    assert spec.num_warps == 8 and spec.num_ctas == 1
    assert spec_from_hints({"occupancy": 2}, 512 * 16, 80, 128 * 512 // 2).num_warps == 4
    assert spec_from_hints({}, 64 * 64, 90, 64 * 512 // 2).num_warps == 4


def test_returning_kernel_is_rejected():
    pm = get_plugin_manager()
    ctx = pm.make_context()
    with ctx, ir.Location.unknown():
        mod = ir.Module.parse('''
"nv_tileaa.func"() ({
^bb0(%x: i32):
  "nv_tileaa_term.return"(%x) : (i32) -> ()
}) {sym_name = "k", function_type = (i32) -> (i32), cute.kernel} : () -> ()''')
    with pytest.raises(TilecoreError, match="a kernel entry must not return values"):
        compile_module(mod, _target("sm_80"), CompileOptions(), pm, stages=["convert-tile-func-to-llvm"])


def test_grid_constant_argument_attribute_migrates():
    pm = get_plugin_manager()
    ctx = pm.make_context()
    with ctx, ir.Location.unknown():
        mod = ir.Module.parse('''
"nv_tileaa.func"() ({
^bb0(%x: !llvm.ptr):
  "nv_tileaa_term.return"() : () -> ()
}) {sym_name = "k", function_type = (!llvm.ptr) -> (), cute.kernel,
    arg_attrs = [{cute_nvgpu.grid_constant, llvm.byval = !llvm.struct<(i64, i64)>}]} : () -> ()''')
    compile_module(mod, _target("sm_90a"), CompileOptions(), pm, stages=["convert-tile-func-to-llvm"])
    text = str(mod)
    assert "nvvm.grid_constant" in text and "cute_nvgpu.grid_constant" not in text


@pytest.mark.parametrize("sm,expect", [
    ("sm_80", ["nvvm.minctasm = 2 : i32"]),
    ("sm_90a", ["nvvm.minctasm = 4 : i32"]),
    ("sm_100a", ["nvvm.minctasm = 2 : i32", "nvvm.cluster_dim = array<i32: 2, 1, 1>", "nvvm.blocksareclusters"]),
])
def test_per_sm_hints_reach_the_kernel(sm, expect):
    import cutile_kernels

    pm = get_plugin_manager()
    mod, _ = read_input(cutile_kernels.kernel_path("hinted_vadd_f32"), pm)
    compile_module(mod, _target(sm), CompileOptions(), pm, stages=UP_TO_3)
    text = str(mod)
    for e in expect:
        assert e in text
    if sm != "sm_100a":
        assert "nvvm.cluster_dim" not in text


def test_clustered_kernel_compiles_through_ptxas_on_sm100a(tmp_path):
    """hinted_vadd_f32 asks for 2-CTA clusters on sm_100a: .reqnctapercluster + .blocksareclusters (PTX 9.0)."""
    import cutile_kernels

    pm = get_plugin_manager()
    mod, _ = read_input(cutile_kernels.kernel_path("hinted_vadd_f32"), pm)
    res = compile_module(mod, _target("sm_100a"), CompileOptions(emit="ptx"), pm)
    ptx = next(iter(res.artifacts["ptx"].values()))
    assert ".blocksareclusters" in ptx and ".reqnctapercluster 2, 1, 1" in ptx
    assert ptx_to_cubin(ptx, "sm_100a")[:4] == b"\x7fELF"


def test_blocksareclusters_needs_ptx_9():
    from tilecore.targets import Target

    spec = KernelSpec(num_warps=4, num_ctas=1, cluster_dim=(2, 1, 1))
    with ir.Context():
        old = kernel_attributes(spec, Target.make("sm_100a", 86))
        new = kernel_attributes(spec, Target.make("sm_100a", 90))
    assert "nvvm.cluster_dim" in old and "nvvm.blocksareclusters" not in old
    assert "nvvm.blocksareclusters" in new


def test_type_converter_rows_for_nv_tileaa():
    """The plugin's rows in the shared LLVM type converter (spec note 1's ABI table)."""
    pm = get_plugin_manager()
    conv = pm.type_converter(None)
    with pm.make_context():
        def c(text):
            return str(conv.convert(ir.Type.parse(text)))

        assert c("!nv_tileaa.ptr<f16, 1 : i32>") == "!llvm.ptr<1>"
        assert c("!nv_tileaa.mem_token") == "i32"
        assert c("!nv_tileaa.memref<f32, array<i64: -9223372036854775808, 4>, array<i64: -9223372036854775808, 1>, "
                 "1 : i32>") == "!llvm.struct<(ptr<1>, ptr<1>, i64, array<2 x i64>, array<2 x i64>)>"
        view = ("!nv_tileaa.tiled_view<array<i64: 4>, !nv_tileaa.memref<f32, array<i64: 8>, array<i64: 1>, 1 : i32>, "
                'array<i64: 0>, "zero">')
        assert c(view) == "!llvm.struct<(ptr<1>, i64)>"
        assert ("tileas", "nv_tileaa_rule") in conv.rules
