"""Stage 1, convert-cuda-tile-to-tileaa: populators A, B, C in order; no cuda_tile op survives."""

import os

import pytest
from tileas_test_paths import VISIBLE_CORPUS
from tilecore_tileas.stage1_cuda_tile_to_tileaa import POPULATORS

from tilecore.compiler import compile_module, read_input
from tilecore.options import CompileOptions
from tilecore.plugins import get_plugin_manager
from tilecore.targets import resolve_target

CORPUS = VISIBLE_CORPUS


def _stage1(name):
    pm = get_plugin_manager()
    mod, _ = read_input(os.path.join(CORPUS, f"{name}.tileirbc"), pm)
    res = compile_module(mod, resolve_target("sm_80", pm.targets()), CompileOptions(), pm,
                         stages=["convert-cuda-tile-to-tileaa"])
    return mod, res


def _names(mod):
    out = []
    mod.operation.walk(lambda op: (out.append(op.name), 0)[1] or __import__("tilecore.mlir").mlir.ir.WalkResult.ADVANCE)
    return out


def test_populator_order_is_a_b_c():
    assert [n.split(":")[0] for n, _ in POPULATORS] == ["A", "B", "C"]
    a, b, c = (t for _, t in POPULATORS)
    assert "cuda_tile.addf" in a and "cuda_tile.for" in a and "cuda_tile.if" in a
    assert "cuda_tile.load_view_tko" in b and "cuda_tile.make_token" in b and "cuda_tile.offset" in b
    assert set(c) == {"cuda_tile.mmaf", "cuda_tile.mmai", "cuda_tile.mmaf_scaled", "cuda_tile.reduce",
                      "cuda_tile.scan"}


@pytest.mark.parametrize("name", ["vadd_f32", "rownorm_loop_if_f32", "row_softmax_f16", "matmul_f16"])
def test_no_cuda_tile_op_survives(name):
    mod, _ = _stage1(name)
    names = _names(mod)
    assert not [n for n in names if n.startswith("cuda_tile")]
    assert "nv_tileaa.func" in names


def test_rownorm_lowering_shape():
    mod, _ = _stage1("rownorm_loop_if_f32")
    text = str(mod)
    # tiles become tensors, the loop and the ifs become scf, the reduce keeps its combiner region
    assert "scf.for" in text and "iter_args" in text and "-> (tensor<4x128xf32>)" in text
    assert "scf.if" in text
    assert '"nv_tileaa.reduce"' in text and '"nv_tileaa_term.yield"' in text
    assert "math.fma" in text and "math.absf" in text and "math.sqrt" in text
    # views fold into the memory ops: tile box, padding, mem_semantic re-encoded
    assert 'padding = "zero"' in text and "tile_shape = array<i64: 4, 128>" in text
    assert "#nv_tileaa.mem_semantic<0 : i32>" in text
    # pointers and tokens use the nv_tileaa types (type converter)
    assert "!nv_tileaa.ptr<f32, 1 : i32>" in text and "!nv_tileaa.mem_token" in text
    # the entry is a kernel carrying its hints
    assert "cute.kernel" in text and "optimization_hints" in text


def test_assume_predicates_become_attributes():
    mod, _ = _stage1("vadd_f32")
    text = str(mod)
    assert '"nv_tileaa.assume"(%arg0) {div_by = 16 : i64}' in text
    assert "{lb = 0 : i64}" in text


def test_approx_rounding_becomes_fastmath():
    pm = get_plugin_manager()
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "approx_math.cuda_tile.mlir")
    mod, _ = read_input(src, pm)
    compile_module(mod, resolve_target("sm_80", pm.targets()), CompileOptions(), pm,
                   stages=["convert-cuda-tile-to-tileaa"])
    text = str(mod)
    assert "math.exp %arg0 fastmath<afn> : f32" in text
    assert "arith.divf %0, %arg0 fastmath<afn> : f32" in text


def test_unsupported_op_is_named(tmp_path):
    """cuTile's writer kernel: mulhii, pointer casts, tensor shape, fence are lowered; alloca is not yet."""
    import cutile_kernels

    from tilecore.errors import TilecoreError

    path = tmp_path / "writer_ops.tileirbc"
    path.write_bytes(cutile_kernels.writer_ops_kernel())
    pm = get_plugin_manager()
    mod, _ = read_input(str(path), pm)
    with pytest.raises(TilecoreError, match="unsupported op 'cuda_tile.alloca' in stage 'convert-cuda-tile-to-tileaa'"):
        compile_module(mod, resolve_target("sm_80", pm.targets()), CompileOptions(), pm,
                       stages=["convert-cuda-tile-to-tileaa"])
