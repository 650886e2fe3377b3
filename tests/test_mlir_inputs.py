"""MLIR that nobody here wrote, at every stage entry (``bench/fuzz_mlir.py`` found these classes).

Each input is a real stage output (``tilecore compile K.tileirbc --dump-dir D``) with one edit an
outside author could make; the check is the exact message at the op's file:line:col, exit status 1,
no traceback and no output file.
"""

from __future__ import annotations

import os
import re

import pytest
from support import has_plugin, run_cli

VISIBLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "shared", "corpus", "visible")

pytestmark = pytest.mark.skipif(not (has_plugin("tileas") and os.path.isdir(VISIBLE)),
                                reason="needs the tileas plugin and the visible corpus")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """kernel -> {stage file prefix ("03") -> text} for sm_90a."""
    root = tmp_path_factory.mktemp("dumps")
    out = {}
    for k in ("vadd_f32", "row_softmax_f16", "matmul_f16"):
        d = root / k
        proc = run_cli("compile", os.path.join(VISIBLE, f"{k}.tileirbc"), "--gpu-name", "sm_90a", "--emit", "ptx",
                       "--no-cache", "--dump-dir", str(d), "-o", str(root / f"{k}.ptx"))
        assert proc.returncode == 0, proc.stderr
        out[k] = {f[:2]: (d / f).read_text() for f in os.listdir(d)}
    return out


def _bad(tmp_path, text: str, *args: str) -> tuple[str, str]:
    """Run tilecore on ``text``; assert a clean failure; return (the error line, the input path)."""
    src = tmp_path / "in.mlir"
    src.write_text(text)
    out = tmp_path / "out.bin"
    proc = run_cli(args[0], str(src), *args[1:], "--gpu-name", "sm_90a", "-o", str(out),
                   env={"TILECORE_NO_CACHE": "1"})
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert not out.exists()
    return proc.stderr.splitlines()[0], str(src)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_wrong_attribute_kind_is_reported_at_the_op(dumps, tmp_path):
    # div_by must be an integer: stage 3 (select atoms) read it with IntegerAttr(...): a ValueError in a walk
    text = dumps["vadd_f32"]["03"].replace("{div_by = 16 : i64}", "{div_by = dense<0> : tensor<2xi32>}", 1)
    err, src = _bad(tmp_path, text, "opt", "--stages", "tileas-select-atoms")
    line = _line_of(text, "dense<0> : tensor<2xi32>")
    assert err == (f"error: {src}:{line}:10: 'nv_tileas.assume' op attribute 'div_by' must be an integer, "
                   f"but got dense<0> : tensor<2xi32>")


def test_wrong_layouts_attribute_kind(dumps, tmp_path):
    text = re.sub(r"layouts = \[[^\]]*\]", "layouts = [1 : i32]", dumps["vadd_f32"]["05"], count=1)
    err, src = _bad(tmp_path, text, "compile", "--emit", "ptx")
    line = _line_of(text, "layouts = [1 : i32]")
    assert re.fullmatch(rf"error: {re.escape(src)}:{line}:\d+: 'nv_tileas\.\w+' op attribute 'layouts' must be "
                        r"an array of #nv_tileas\.blocked layouts, but got \[1 : i32\]", err), err


@pytest.mark.parametrize("extent, what", [("?", "a dynamic extent"), ("0", "a zero extent")])
def test_tile_extents_must_be_static_and_positive(dumps, tmp_path, extent, what):
    # tensor<128xf32> -> tensor<?xf32> / tensor<0xf32> everywhere: stage 4 failed with IndexError / ZeroDivisionError
    text = dumps["vadd_f32"]["05"].replace("tensor<128xf32>", f"tensor<{extent}xf32>")
    err, src = _bad(tmp_path, text, "opt", "--stages", "convert-tileas-to-llvm")
    line = _line_of(text, f"tensor<{extent}xf32>")
    assert re.fullmatch(rf"error: {re.escape(src)}:{line}:\d+: 'nv_tileas.tiled_load' op result #0 is a tile "
                        rf"with {what} \(tensor<{re.escape(extent)}xf32>\): tiles have static, positive extents",
                        err), err


def test_combiner_block_with_an_extra_argument(dumps, tmp_path):
    # the reduce combiner takes (acc, value) pairs: a third argument was "internal error ... 2 values for 3 results"
    text = dumps["row_softmax_f16"]["05"]
    m = re.search(r"\^bb0\((%arg\d+): f32, (%arg\d+): f32\):", text)
    text = text[:m.start()] + f"^bb0({m.group(1)}: f32, {m.group(2)}: f32, %extra: i32):" + text[m.end():]
    err, src = _bad(tmp_path, text, "opt", "--stages", "convert-tileas-to-llvm")
    line = _line_of(text, "%extra: i32") - 1  # the reduce op, one line above its block
    assert re.fullmatch(rf"error: {re.escape(src)}:{line}:\d+: a block of 'nv_tileas.reduce' has 3 argument\(s\); "
                        r"stage 'convert-tileas-to-llvm' expects 2", err), err


def test_llvm_kernel_with_a_result(dumps, tmp_path):
    # an nvvm.kernel llvm.func returning i32: ptxas rejected the PTX ('func_retval0') without a source location
    text = dumps["vadd_f32"]["07"]
    text = re.sub(r"(llvm\.func @vadd_f32\([^)]*\))", r"\1 -> i32", text, count=1)
    text = text.replace("llvm.return\n", "llvm.return %arg1 : i32\n", 1) if "%arg1: i32" in text else text
    err, src = _bad(tmp_path, text, "compile", "--emit", "cubin")
    line = _line_of(text, "llvm.func @vadd_f32(")
    assert re.fullmatch(rf"error: {re.escape(src)}:{line}:5: kernel 'vadd_f32' must not return values "
                        r"\(its type is !llvm\.func<i32 \(.*\)>\)", err), err


def test_at_op_turns_any_exception_into_a_located_error(tmp_path):
    from tilecore.errors import LoweringError, at_op
    from tilecore.mlir import ir

    src = tmp_path / "m.mlir"
    src.write_text("module {\n  func.func @f() {\n    return\n  }\n}\n")
    with ir.Context():
        m = ir.Module.parseFile(str(src))
        fn = m.body.operations[0].operation
        with pytest.raises(LoweringError) as e, at_op(fn, "some-stage"):
            raise IndexError("list index out of range")
    assert e.value.render() == (f"error: {src}:2:3: cannot handle 'func.func' in stage 'some-stage' (unexpected "
                                "operands, types or attributes): IndexError: list index out of range")


# -- the quoted diagnostics of /work/shared/spec, through MLIR files on the command line ---------------

TILEAA_FUNC = '''"nv_tileaa.func"() ({{
^bb0(%a: tensor<128x32xf8E4M3FN>, %b: tensor<32x128xf8E4M3FN>, %c: tensor<128x128xf32>,
     %sa: tensor<128x1xi8>, %sb: tensor<1x128xi8>):
  {body}
  "nv_tileaa_term.return"() : () -> ()
}}) {{sym_name = "k", function_type = (tensor<128x32xf8E4M3FN>, tensor<32x128xf8E4M3FN>, tensor<128x128xf32>,
     tensor<128x1xi8>, tensor<1x128xi8>) -> (){attrs}}} : () -> ()
'''
BLOCK_SCALE = ('%d = "nv_tileaa.mma_block_scale"(%a, %b, %c, %sa, %sb) : (tensor<128x32xf8E4M3FN>, '
               'tensor<32x128xf8E4M3FN>, tensor<128x128xf32>, tensor<128x1xi8>, tensor<1x128xi8>) -> '
               'tensor<128x128xf32>')


def _opt(tmp_path, text: str, stages: str, gpu: str) -> tuple[list[str], str]:
    src = tmp_path / "in.mlir"
    src.write_text(text)
    out = tmp_path / "out.mlir"
    proc = run_cli("opt", str(src), "--stages", stages, "--gpu-name", gpu, "-o", str(out))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and not out.exists(), proc.stderr
    return proc.stderr.splitlines(), str(src)


@pytest.mark.parametrize("gpu, attrs, message", [
    ("sm_90a", ", cute.kernel", "mma block scale is not supported by compute capability < sm100"),
    ("sm_100a", "", "failed to get the target spec"),  # no kernel: no kernel spec / target spec to read
])
def test_spec_block_scale_guard_diagnostics(tmp_path, gpu, attrs, message):
    lines, src = _opt(tmp_path, TILEAA_FUNC.format(body=BLOCK_SCALE, attrs=attrs), "convert-tileaa-to-tileas", gpu)
    assert lines[0] == f"error: {src}:4:8: {message}"


def test_spec_residual_tileaa_op(dumps, tmp_path):
    text = dumps["vadd_f32"]["01"].replace("    %c1_i32 = arith.constant 1 : i32\n", "    %c1_i32 = arith.constant "
                                           '1 : i32\n    %g = "nv_tileaa.generate"() ({ }) : () -> tensor<4xf32>\n', 1)
    lines, src = _opt(tmp_path, text, "convert-tileaa-to-tileas", "sm_90a")
    line = _line_of(text, "nv_tileaa.generate")
    assert lines == [f"error: {src}:{line}:10: failed to convert nv_tileaa to nv_tileas",
                     "note: failed to legalize operation 'nv_tileaa.generate' in stage 'convert-tileaa-to-tileas' "
                     "(no plugin has a pattern for it)"]


def test_spec_mbarrier_outside_shared_memory(tmp_path):
    bar = "!nvgpu.mbarrier.group<memorySpace = #gpu.address_space<global>>"
    text = ("module attributes {gpu.container_module} {\n  gpu.module @m {\n"
            f"    gpu.func @k(%g: {bar}) kernel {{\n"
            "      %c0 = arith.constant 0 : index\n      %n = arith.constant 128 : index\n"
            f"      nvgpu.mbarrier.init %g[%c0], %n : {bar}\n"
            "      gpu.return\n    }\n  }\n}\n")
    lines, src = _opt(tmp_path, text, "convert-nvgpu-and-gpu-to-nvvm", "sm_90a")
    assert lines[0] == (f"error: {src}:6:7: 'nvgpu.mbarrier.init' op operand #0 ('barriers') must be mbarrier "
                        f"barrier type, but got '{bar}' (the barrier must live in shared memory)")


# -- shapes that do not fit together (the handlers asserted, or indexed past a list) -----------------

def test_dot_shapes_must_form_a_matrix_product(tmp_path):
    # an nv_tileas.dot reaching stage 4 with [128, 64] x [64, 7] + [128, 128] failed in the MMA atom's code
    text = ('module {\n  "nv_tileaa.func"() ({\n'
            '  ^bb0(%a: tensor<128x64xf16>, %b: tensor<64x7xf16>, %c: tensor<128x128xf32>):\n'
            '    %d = "nv_tileas.dot"(%a, %b, %c) : (tensor<128x64xf16>, tensor<64x7xf16>, tensor<128x128xf32>) '
            '-> tensor<128x128xf32>\n'
            '    "nv_tileaa_term.return"() : () -> ()\n'
            '  }) {cute.kernel, function_type = (tensor<128x64xf16>, tensor<64x7xf16>, tensor<128x128xf32>) -> (), '
            'sym_name = "k"} : () -> ()\n}\n')
    lines, src = _opt(tmp_path, text, "tileas-assign-layouts", "sm_90a")
    assert lines[0] == (f"error: {src}:4:10: 'nv_tileas.dot' op operands do not form a matrix product [M, K] x "
                        "[K, N] + [M, N]: tensor<128x64xf16>, tensor<64x7xf16>, tensor<128x128xf32>")


def test_reduce_result_must_fit_its_operand(dumps, tmp_path):
    # row_softmax's row max: tensor<2x512xf32> -> tensor<2xf32> along dim 1; a result of tensor<3xf32> made
    # stage 4's reshape assert (its layout's register count differed from its source's)
    text = dumps["row_softmax_f16"]["05"]
    m = re.search(r'(%\d+) = "nv_tileas.reduce"', text)
    head, tail = text[:m.start()], text[m.start():]
    end = tail.index("-> tensor<2xf32>")
    text = head + tail[:end] + "-> tensor<3xf32>" + tail[end + len("-> tensor<2xf32>"):]
    line = _line_of(text, '"nv_tileas.reduce"')
    # the uses of the result keep tensor<2xf32>: the parser reports that first
    err, src = _bad(tmp_path, text, "opt", "--stages", "convert-tileas-to-llvm")
    assert err.startswith(f"error: {src}:") and "expects different type than prior uses" in err, err
    # consistent: every tensor<2xf32> of the file becomes tensor<3xf32>
    text = dumps["row_softmax_f16"]["05"].replace("tensor<2xf32>", "tensor<3xf32>")
    err, src = _bad(tmp_path, text, "opt", "--stages", "convert-tileas-to-llvm")
    assert err == (f"error: {src}:{line}:{m.start() - text.rfind(chr(10), 0, m.start()) + len(m.group(1)) + 3}: "
                   "'nv_tileas.reduce' op result #0 tensor<3xf32> does not fit operand #0 tensor<2x512xf32> (dim 1)")


def test_cuda_tile_text_gets_the_bytecode_verifier(tmp_path):
    # cuda_tile written as MLIR text skipped read_tileir's type rules: a make_tensor_view with its base and size
    # swapped reached stage 4 ("Cannot cast type to IntegerType")
    proc = run_cli("disasm", os.path.join(VISIBLE, "vadd_f32.tileirbc"))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    ptr, i32 = "!cuda_tile.tile<array<i64>, !cuda_tile.ptr<f32>>", "!cuda_tile.tile<array<i64>, i32>"
    m = re.search(r'"cuda_tile.make_tensor_view"\((%\w+), (%\w+)\) (\{[^}]*\}) : \(' + re.escape(f"{ptr}, {i32})"), text)
    a, b, attrs = m.groups()
    text = text[:m.start()] + f'"cuda_tile.make_tensor_view"({b}, {a}) {attrs} : ({i32}, {ptr})' + text[m.end():]
    err, src = _bad(tmp_path, text, "compile", "--emit", "ptx")
    assert re.fullmatch(r"error: gen_corpus\.py:\d+:\d+: 'cuda_tile\.make_tensor_view' base must be a scalar pointer "
                        r"tile, got tile<i32>", err), err


def test_dense_array_of_index_is_refused_before_the_parser_aborts(dumps, tmp_path):
    # MLIR's parser accepts array<index: ...> and then asserts (getIntOrFloatBitWidth): the process aborted
    text = dumps["vadd_f32"]["03"].replace("array<i64: 128>", "array<index: 128>", 1)
    err, src = _bad(tmp_path, text, "compile", "--emit", "cubin")
    line = _line_of(text, "array<index: 128>")
    col = text.splitlines()[line - 1].index("array<index") + 1
    assert err == (f"error: {src}:{line}:{col}: a dense array of 'index' elements (array<index: ...>) is not valid: "
                   "dense arrays take i1, i8, i16, i32, i64, f32 or f64 elements")


def test_memory_ops_take_views_and_pointers(dumps, tmp_path):
    # an nv_tileas.tiled_store among stage-1 output (a memref where stage 3 expects a tiled view) failed in a regex
    text = dumps["vadd_f32"]["01"].replace('"nv_tileaa.tiled_store"', '"nv_tileas.tiled_store"', 1)
    err, src = _bad(tmp_path, text, "compile", "--emit", "ptx")
    line = _line_of(text, '"nv_tileas.tiled_store"')
    assert re.fullmatch(rf"error: {re.escape(src)}:{line}:\d+: 'nv_tileas.tiled_store' op operand #1 must be a "
                        r"tiled view \(!nv_tileaa.tiled_view\), but got !nv_tileaa.memref<f32, .*>", err), err
    # make_memref's base and size swapped: "Cannot cast type to IntegerType" in stage 4
    text = re.sub(r'"nv_tileas.make_memref"\((%\w+), (%\w+)\) (\{[^}]*\}) : \((!nv_tileaa\.ptr<[^>]*>), (i32)\)',
                  r'"nv_tileas.make_memref"(\2, \1) \3 : (\5, \4)', dumps["vadd_f32"]["05"], count=1)
    err, src = _bad(tmp_path, text, "opt", "--stages", "convert-tileas-to-llvm")
    line = _line_of(text, ": (i32, !nv_tileaa.ptr<")
    assert re.fullmatch(rf"error: {re.escape(src)}:{line}:\d+: 'nv_tileas.make_memref' op operand #0 must be a "
                        r"pointer \(!nv_tileaa.ptr\), but got i32", err), err


def test_pointer_address_space_and_memref_form(dumps, tmp_path):
    # !nv_tileaa.ptr<f32, 65536 : i32>: the NVPTX back end asserted ("Calling a function with a bad signature!")
    text = dumps["vadd_f32"]["03"].replace("!nv_tileaa.ptr<f32, 1 : i32>", "!nv_tileaa.ptr<f32, 65536 : i32>")
    err, src = _bad(tmp_path, text, "compile", "--emit", "ptx")
    line = _line_of(text, '"nv_tileaa.func"')
    assert err == (f"error: {src}:{line}:3: 'nv_tileaa.func' op block argument #0: !nv_tileaa.ptr<f32, 65536 : i32> "
                   "has address space 65536: kernel pointers are global (1 : i32)")
    # a memref whose strides parameter is not an i64 array: stage 4's type regex failed ('NoneType' ... 'group')
    text = dumps["vadd_f32"]["05"].replace("array<i64: 1>, 1 : i32>", "unit, 1 : i32>")
    err, src = _bad(tmp_path, text, "opt", "--stages", "convert-tileas-to-llvm")
    line = _line_of(text, "unit, 1 : i32>")
    assert re.fullmatch(rf"error: {re.escape(src)}:{line}:\d+: 'nv_tileas\.make_memref' op result #0: "
                        r"!nv_tileaa\.memref<f32, array<i64: -9223372036854775808>, unit, 1 : i32> is not "
                        r"!nv_tileaa\.memref<element type, array<i64: shape>, array<i64: strides>, address space : "
                        r"i32>", err), err


def test_memory_semantic_out_of_range(dumps, tmp_path):
    # #nv_tileas.mem_semantic<42 : i64>: a KeyError in stage 4
    text = dumps["vadd_f32"]["05"].replace("#nv_tileas.mem_semantic<0 : i32>", "#nv_tileas.mem_semantic<42 : i64>", 1)
    err, src = _bad(tmp_path, text, "opt", "--stages", "convert-tileas-to-llvm")
    line = _line_of(text, "mem_semantic<42")
    assert re.fullmatch(rf"error: {re.escape(src)}:{line}:\d+: 'nv_tileas\.tiled_load' op attribute 'mem_semantic' "
                        r"must be #nv_tileaa\.mem_semantic<N : i32> or #nv_tileas\.mem_semantic<N : i32> with N one "
                        r"of \[0, 1, 2, 3, 4\], but got #nv_tileas\.mem_semantic<42 : i64>", err), err


@pytest.mark.parametrize("spec", ["#nv_tileaa.kernel_spec<4 : i32, 0 : i32, 1 : i32, 0 : i32, 0 : i32>",
                                  "#nv_tileaa.kernel_spec<0 : i32, array<i32: 1, 1, 1>, 1 : i32, 0 : i32, 0 : i32>"])
def test_malformed_kernel_spec(dumps, tmp_path, spec):
    # a kernel_spec of another form: "internal error: ValueError: #nv_tileaa.kernel_spec<...>" in assign-layouts
    text = re.sub(r"#nv_tileaa\.kernel_spec<[^>]*>[^>]*>", spec, dumps["vadd_f32"]["02"], count=1)
    err, src = _bad(tmp_path, text, "opt", "--stages", "tileas-assign-layouts")
    line = _line_of(text, '"nv_tileaa.func"')
    if "array" in spec:  # the form is right, num_warps 0 is not
        assert err == (f"error: {src}:{line}:3: 'nv_tileaa.kernel_spec' {spec}: num_warps must be 1-32 (at most 1024 "
                       "threads), cluster sizes and num_ctas at least 1, occupancy and max_registers not negative")
    else:
        assert err == (f"error: {src}:{line}:3: 'nv_tileaa.kernel_spec' must be #nv_tileaa.kernel_spec<num_warps : "
                       "i32, array<i32: x, y, z>, num_ctas : i32, occupancy : i32, max_registers : i32>, but got "
                       f"{spec}")


def test_assume_predicate_parameters(tmp_path):
    # cuda_tile.assume bounded<0, array<...>>: stage 1 failed in int() on the parameter
    proc = run_cli("disasm", os.path.join(VISIBLE, "vadd_f32.tileirbc"))
    text = proc.stdout.replace("#cuda_tile.bounded<0 : i64, unit>", "#cuda_tile.bounded<0 : i64, array<i64: 1, 2>>", 1)
    assert "array<i64: 1, 2>>" in text
    err, src = _bad(tmp_path, text, "opt", "--stages", "convert-cuda-tile-to-tileaa")
    assert re.fullmatch(r"error: gen_corpus\.py:\d+:\d+: 'cuda_tile\.assume' predicate #cuda_tile\.bounded<0 : i64, "
                        r"array<i64: 1, 2>>: parameter 1 must be an integer, unit or \?, got array<i64: 1, 2>", err), err


def test_constant_value_must_be_dense_elements(tmp_path):
    # cuda_tile.constant {value = 7 : i64}: "Cannot cast attribute to DenseElementsAttr" in stage 1
    proc = run_cli("disasm", os.path.join(VISIBLE, "vadd_f32.tileirbc"))
    text = proc.stdout.replace("{value = dense<1> : tensor<i32>}", "{value = 7 : i64}", 1)
    err, src = _bad(tmp_path, text, "compile", "--emit", "ptx")
    assert re.fullmatch(r"error: gen_corpus\.py:\d+:\d+: 'cuda_tile\.constant' value must be dense elements "
                        r"\(dense<\.\.\.> : tensor<\.\.\.>\), got 7 : i64", err), err


@pytest.mark.parametrize("gpu", ["sm_80", "sm_90a"])
def test_nvvm_ops_below_their_floor(tmp_path, gpu):
    # an sm_100a e2m1 conversion compiled for an older target: "LLVM ERROR: Cannot select: intrinsic
    # %llvm.nvvm.e2m1x2.to.f16x2.rn" from the NVPTX back end
    text = ("module attributes {gpu.container_module} {\n  gpu.module @m {\n"
            "    llvm.func @k(%p: !llvm.ptr<1>, %b: i8) attributes {nvvm.kernel} {\n"
            "      %h = nvvm.convert.f4x2.to.f16x2 %b : i8 (f4E2M1FN) -> vector<2xf16>\n"
            "      llvm.store %h, %p : vector<2xf16>, !llvm.ptr<1>\n"
            "      llvm.return\n    }\n  }\n}\n")
    src = tmp_path / "in.mlir"
    src.write_text(text)
    out = tmp_path / "k.cubin"
    proc = run_cli("compile", str(src), "--gpu-name", gpu, "--no-cache", "-o", str(out))
    assert proc.returncode == 1 and not out.exists() and "LLVM ERROR" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[0] == (f"error: {src}:4:12: 'nvvm.convert.f4x2.to.f16x2' (packed e2m1x2 "
                                           f"conversion) requires sm_100 or newer; the compile target is {gpu}")
    ok = run_cli("compile", str(src), "--gpu-name", "sm_100a", "--no-cache", "-o", str(out))
    assert ok.returncode == 0 and out.exists(), ok.stderr


def test_dot_atom_must_admit_the_dot(dumps, tmp_path):
    # matmul's dot names the f16 WGMMA atom; with B turned into i32 tiles the atom's lowering built invalid NVVM
    # ('#nvvm.mma_type<i32>': "internal error in pattern cute:MmaSyncPattern" on the sm_80 atom)
    text = dumps["matmul_f16"]["05"].replace("tensor<64x128xf16>", "tensor<64x128xi32>")
    err, src = _bad(tmp_path, text, "opt", "--stages", "convert-tileas-to-llvm")
    line = _line_of(text, '"nv_tileas.dot"')
    assert err == (f"error: {src}:{line}:15: MMA atom 'mma.sm90a.m64nNk16.f16.f32' does not admit this dot on "
                   "sm_90a: tensor<128x64xf16>, tensor<64x128xi32>, tensor<128x128xf32> -> tensor<128x128xf32>")
