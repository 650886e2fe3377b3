"""Stage 2, convert-tileaa-to-tileas: spec note 2 (order, target, kernel spec, witnesses, diagnostics)."""

import os

import pytest
from tileas_test_paths import VISIBLE_CORPUS
from tilecore_tileas.stage2_tileaa_to_tileas import conversion_target, populate

from tilecore.compiler import compile_module, read_input
from tilecore.errors import TilecoreError
from tilecore.mlir import ir
from tilecore.options import CompileOptions
from tilecore.plugins import get_plugin_manager
from tilecore.targets import resolve_target

CORPUS = VISIBLE_CORPUS
STAGES = ["convert-cuda-tile-to-tileaa", "convert-tileaa-to-tileas"]


def _run(module, sm="sm_80", stages=STAGES):
    pm = get_plugin_manager()
    return compile_module(module, resolve_target(sm, pm.targets()), CompileOptions(), pm, stages=stages)


def _corpus(name, sm="sm_80"):
    pm = get_plugin_manager()
    mod, _ = read_input(os.path.join(CORPUS, f"{name}.tileirbc"), pm)
    _run(mod, sm)
    return mod


def _parse(text):
    pm = get_plugin_manager()
    ctx = pm.make_context()
    with ctx, ir.Location.unknown():
        return ir.Module.parse(text)


FUNC = '''
"nv_tileaa.func"() ({{
^bb0(%a: tensor<128x32xf8E4M3FN>, %b: tensor<32x128xf8E4M3FN>, %c: tensor<128x128xf32>,
     %sa: tensor<128x1xi8>, %sb: tensor<1x128xi8>, %q: i32):
  {body}
  "nv_tileaa_term.return"() : () -> ()
}}) {{sym_name = "k", function_type = (tensor<128x32xf8E4M3FN>, tensor<32x128xf8E4M3FN>, tensor<128x128xf32>,
     tensor<128x1xi8>, tensor<1x128xi8>, i32) -> (){attrs}}} : () -> ()
'''
BLOCK_SCALE = ('%d = "nv_tileaa.mma_block_scale"(%a, %b, %c, %sa, %sb) : (tensor<128x32xf8E4M3FN>, '
               'tensor<32x128xf8E4M3FN>, tensor<128x128xf32>, tensor<128x1xi8>, tensor<1x128xi8>) -> '
               'tensor<128x128xf32>')


def _func(body, kernel=True):
    return _parse(FUNC.format(body=body, attrs=", cute.kernel" if kernel else ""))


def test_populator_order_arith_math_core():
    assert [n for n, _ in populate()] == ["arith", "math", "core"]


def test_conversion_target_matches_the_spec():
    d = conversion_target().describe()
    assert {"nv_tileas", "arith", "math", "func", "gpu", "scf"} <= set(d["legal_dialects"])
    assert "nv_tileaa" in d["illegal_dialects"]
    assert {"nv_tileaa.func", "nv_tileaa_term.return", "nv_tileaa.mark_for_reuse"} <= set(d["legal_ops"])


def test_rowsum_after_stage2():
    text = str(_corpus("rowsum_f32"))
    assert '"nv_tileas.view"' in text and "!nv_tileaa.tiled_view<array<i64: 8, 256>" in text
    assert '"nv_tileas.tiled_load"' in text and "#nv_tileas.mem_semantic<0 : i32>" in text
    assert '"nv_tileas.reduce"' in text and '"nv_tileas_term.yield"' in text
    assert "nv_tileaa.kernel_spec = #nv_tileaa.kernel_spec<4 : i32, array<i32: 1, 1, 1>" in text
    assert "nv_tileaa.compute_capability = 80 : i32" in text
    assert '"nv_tileaa.func"' in text  # stays for stage 3
    assert '"nv_tileaa.tiled_load"' not in text


def test_witness_carried_verbatim_and_mem_attrs_rekeyed():
    mod = _corpus("vadd_f32")  # stage 2 output
    # put a witness on a TileAS op, run the TileAA input again through stage 2 with one attached
    pm = get_plugin_manager()
    src, _ = read_input(os.path.join(CORPUS, "vadd_f32.tileirbc"), pm)
    _run(src, stages=["convert-cuda-tile-to-tileaa"])

    def tag(op):
        if op.name == "nv_tileaa.tiled_load":
            op.attributes["atom"] = ir.Attribute.parse('#nv_tileas.atom<"my.copy">')
        return ir.WalkResult.ADVANCE

    with src.context:
        src.operation.walk(tag)
    _run(src, stages=["convert-tileaa-to-tileas"])
    text = str(src)
    assert text.count('atom = #nv_tileas.atom<"my.copy">') == 2
    assert "#nv_tileas.mem_scope<0 : i32>" in text and "#nv_tileaa.mem_scope" not in text
    assert mod is not None


def test_block_scale_needs_sm100():
    with pytest.raises(TilecoreError, match="mma block scale is not supported by compute capability < sm100"):
        _run(_func(BLOCK_SCALE), "sm_90a", stages=["convert-tileaa-to-tileas"])


def test_block_scale_default_cc_is_sm80():
    from tilecore_tileas.stage2_tileaa_to_tileas.kernel_spec import DEFAULT_CC

    assert DEFAULT_CC == 80


def test_block_scale_on_sm100_gets_an_atom():
    mod = _func(BLOCK_SCALE)
    _run(mod, "sm_100a", stages=["convert-tileaa-to-tileas"])
    text = str(mod)
    assert '"nv_tileas.block_scaled_mma"' in text and "umma_bs_f8e4m3fn_f8e4m3fn_f32" in text
    assert "cta_group = 1 : i32" in text


def test_block_scale_without_target_spec():
    with pytest.raises(TilecoreError, match="failed to get the target spec"):
        _run(_func(BLOCK_SCALE, kernel=False), "sm_100a", stages=["convert-tileaa-to-tileas"])


def test_residual_tileaa_op_fails_the_conversion():
    mod = _func('%g = "nv_tileaa.generate"() ({ }) : () -> tensor<4xf32>')  # no core pattern rewrites it
    with pytest.raises(TilecoreError) as ei:
        _run(mod, stages=["convert-tileaa-to-tileas"])
    assert ei.value.message == "failed to convert nv_tileaa to nv_tileas"
    assert any("nv_tileaa.generate" in n for n in ei.value.notes)


def test_mark_for_reuse_needs_queues():
    with pytest.raises(TilecoreError, match="expect operands with queue types"):
        _run(_func('"nv_tileaa.mark_for_reuse"(%q) : (i32) -> ()'), stages=["convert-tileaa-to-tileas"])


def test_cat_source_layout_diagnostics():
    bad_elem = ('%x = "nv_tileaa.cat"(%sa, %q) {dim = 0 : i64} : (tensor<128x1xi8>, i32) -> tensor<129x1xi8>')
    with pytest.raises(TilecoreError, match="missing source layout"):
        _run(_func(bad_elem), stages=["convert-tileaa-to-tileas"])
    bad_rank = ('%k = arith.constant dense<1> : tensor<4xi8>\n'
                '%x = "nv_tileaa.cat"(%sa, %k) {dim = 0 : i64} : (tensor<128x1xi8>, tensor<4xi8>) -> tensor<132x1xi8>')
    with pytest.raises(TilecoreError, match="failed to infer source layout"):
        _run(_func(bad_rank), stages=["convert-tileaa-to-tileas"])


def test_dot_layout_diagnostics():
    not_2d = '%x = "nv_tileaa.dot"(%q, %q, %q) : (i32, i32, i32) -> i32'
    with pytest.raises(TilecoreError, match="failed to infer 2d layout"):
        _run(_func(not_2d), stages=["convert-tileaa-to-tileas"])
    bad_k = ('%x = "nv_tileaa.dot"(%a, %a, %c) : (tensor<128x32xf8E4M3FN>, tensor<128x32xf8E4M3FN>, '
             'tensor<128x128xf32>) -> tensor<128x128xf32>')
    with pytest.raises(TilecoreError, match="failed to find available mma partition"):
        _run(_func(bad_k), stages=["convert-tileaa-to-tileas"])


def test_combiner_block_signature():
    body = ('%r = "nv_tileaa.reduce"(%c) ({ ^bb0(%x: i32, %y: i32): "nv_tileaa_term.yield"(%x) : (i32) -> () }) '
            '{dim = 1 : i64, identities = [0.0 : f32], operandSegmentSizes = array<i32: 1, 0, 0, 0>, '
            'resultSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<128x128xf32>) -> tensor<128xf32>')
    with pytest.raises(TilecoreError, match="failed to convert block signature"):
        _run(_func(body), stages=["convert-tileaa-to-tileas"])


def test_only_reg_and_smem_layouts():
    body = ('%x = "nv_tileaa.convert_layout"(%c) {layout_kind = "tmem"} : (tensor<128x128xf32>) '
            '-> tensor<128x128xf32>')
    with pytest.raises(TilecoreError, match="TODO: only reg and smem layouts are supported at the moment"):
        _run(_func(body), stages=["convert-tileaa-to-tileas"])
    ok = _func(body.replace("tmem", "smem"))
    _run(ok, stages=["convert-tileaa-to-tileas"])
    assert '"nv_tileas.convert_layout"' in str(ok)


def test_plugin_rewriter_diagnostics():
    unknown = ('%x = "nv_tileaa.plugin"(%c) {feature = "warp_specialize", operandSegmentSizes = '
               'array<i32: 1, 0, 0, 0>} : (tensor<128x128xf32>) -> tensor<128x128xf32>')
    with pytest.raises(TilecoreError, match="plugin has unsupported feature"):
        _run(_func(unknown), stages=["convert-tileaa-to-tileas"])
    no_layout = ('%x = "nv_tileaa.plugin"(%q) {feature = "passthrough", operandSegmentSizes = '
                 'array<i32: 1, 0, 0, 0>} : (i32) -> i32')
    with pytest.raises(TilecoreError, match="fails to assign layout"):
        _run(_func(no_layout), stages=["convert-tileaa-to-tileas"])
