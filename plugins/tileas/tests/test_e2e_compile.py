"""End to end: TileIR bytecode -> cubin for sm_80 / sm_90a / sm_100a through all tileas stages.

Checks the bare-pointer kernel ABI (one .entry parameter per entry argument, pointers
as .u64 global pointers, in signature order), ``.reqntid 128, 1, 1`` (4 warps) and that
ptxas accepted the PTX (a cubin came back).
"""

import os
import re

import pytest
from tileas_test_paths import VISIBLE_CORPUS

from tilecore.compiler import compile_file, read_input
from tilecore.errors import TilecoreError
from tilecore.options import CompileOptions
from tilecore.plugins import get_plugin_manager

CORPUS = VISIBLE_CORPUS
NON_MMA = ["vadd_f32", "saxpy_f32", "relu_f16", "gelu_f16", "rowsum_f32", "row_softmax_f16", "transpose_f32",
           "rownorm_loop_if_f32"]
GENERATED = ["int_arith_i32", "uint_ops_u32", "float_unary_f32", "float_binary_f32", "powi_f32", "casts_mixed",
             "where_cmpf_f32", "arange_iota_i32", "cumsum_scan_f32", "cat_extract_insert_f32",
             "reshape_broadcast_f32", "gather_scatter_f32", "atomics_i32", "atomic_red_view_f32",
             "strided_view_f32", "print_assert_f32", "grid_queries_i32", "prod_min_reduce_f32",
             "pointer_offset_f32", "while_break_i32", "argmax_rows_f32", "pack_unpack_f16", "gdc_f32",
             "advanced_indexing_f32"]
SMS = ["sm_80", "sm_90a", "sm_100a"]


def _ptx(res) -> str:
    ptx = res.artifacts["ptx"]
    return "\n".join(ptx.values()) if isinstance(ptx, dict) else ptx


def _entry_params(ptx: str) -> list[str]:
    m = re.search(r"\.entry \w+\((.*?)\)", ptx, re.S)
    return [ln.strip().rstrip(",") for ln in m.group(1).splitlines() if ln.strip()]


def _signature(path) -> list[str]:
    mod, _ = read_input(path, get_plugin_manager())
    entry = next(op for op in mod.body.operations if op.operation.name == "cuda_tile.entry")
    return [str(a.type) for a in entry.operation.regions[0].blocks[0].arguments]


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("name", NON_MMA)
def test_corpus_kernel_compiles(name, sm):
    path = os.path.join(CORPUS, f"{name}.tileirbc")
    res = compile_file(path, sm)
    assert res.artifacts["cubin"][:4] == b"\x7fELF"
    ptx = _ptx(res)
    assert f".entry {name}(" in ptx
    assert ".reqntid 128, 1, 1" in ptx
    params = _entry_params(ptx)
    sig = _signature(path)
    assert len(params) == len(sig)
    for p, t in zip(params, sig):
        if "ptr<" in t:
            assert p.startswith(".param .u64 .ptr .global"), (p, t)
        else:
            assert p.startswith(".param .u32") or p.startswith(".param .f32") or p.startswith(".param .b32"), (p, t)


@pytest.mark.parametrize("sm", SMS)
def test_matmul_compiles_through_ptxas(sm):
    """mmaf (dot) f16 -> f32 runs on the tensor cores: mma.sync m16n8k16 through shared memory (numbers:
    test_e2e_numeric), wgmma m64n128k16 on sm_90a (the warpgroup atoms); ``--option tileas.dot=fma`` keeps the
    FMA loop over K; tcgen05.mma on sm_100a (the sm100 plugin's tensor-memory atoms)."""
    path = os.path.join(CORPUS, "matmul_f16.tileirbc")
    res = compile_file(path, sm)
    assert res.artifacts["cubin"][:4] == b"\x7fELF"
    ptx = _ptx(res)
    assert ".entry matmul_f16(" in ptx and "bar.sync" in ptx
    inst = {"sm_90a": "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
            "sm_100a": "tcgen05.mma.cta_group::1.kind::f16"}.get(sm, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    assert inst in ptx and "fma.rn.f32" not in ptx
    fma = compile_file(path, sm, CompileOptions(extra={"tileas.dot": "fma"}))
    assert fma.artifacts["cubin"][:4] == b"\x7fELF"
    assert "fma.rn.f32" in _ptx(fma) and "mma.sync" not in _ptx(fma)


@pytest.mark.parametrize("sm", SMS)
def test_integer_matmul_runs_on_the_tensor_cores_and_wraps(sm):
    """mmai i8 x i8 -> i32 (64x64x32 tiles): mma.sync m16n8k32 s8, no .satfinite (mmai wraps like the
    FMA path; numbers: test_e2e_numeric test_mma_i8 / test_mma_u8_on_tensor_cores). 2 x 2 warps of 32 x 32:
    8 per K step, in the cp.async-pipelined loop and in its fallback (no stride hints: run-time check). On
    sm_90a: wgmma m64n64k32 s8, one per K step, in the pipelined loop (A by TMA; B stored K-major from
    registers) and its fallback; on sm_100a
    tcgen05.mma kind::i8 (M = 64, twice per K step)."""
    import cutile_kernels

    ptx = _ptx(compile_file(cutile_kernels.kernel_path("matmul_i8"), sm))
    if sm == "sm_90a":
        assert ptx.count("wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8") == 2
        assert "cp.async.bulk.tensor.2d" in ptx
    elif sm == "sm_100a":  # the sm100 plugin's tcgen05 atom: a 64-row tile issued twice (lanes 0 and 16) per K step
        assert ptx.count("tcgen05.mma.cta_group::1.kind::i8") == 2 * 2  # pipelined loop + fallback
    else:
        assert ptx.count("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32") == 2 * 8
        assert "cp.async.cg.shared.global" in ptx
    assert "satfinite" not in ptx


def test_argmax_and_scans_use_warp_shuffles():
    """argmax (a two-operand reduce) shuffles with shfl.bfly; a forward cumsum scans with shfl.up and a
    reverse cumprod with shfl.down (no serial loop over shared memory)."""
    import cutile_kernels

    argmax = _ptx(compile_file(cutile_kernels.kernel_path("argmax_rows_f32"), "sm_80"))
    assert "shfl.sync.bfly.b32" in argmax
    scans = _ptx(compile_file(cutile_kernels.kernel_path("cumsum_scan_f32"), "sm_80"))
    assert "shfl.sync.up.b32" in scans and "shfl.sync.down.b32" in scans


def test_block_scaled_mma_compiles_for_sm100a_only():
    """mmaf_scaled (f8E4M3FN operands, f8E8M0FNU scales) is an sm_100 form: the stage-2 guard rejects it
    below; on sm_100a it takes the block-scaled tcgen05 MMA (the sm100 plugin), with ``tileas.dot=fma`` the
    CUDA cores (scale codes decoded with integer ops, operands with cvt)."""
    import cutile_kernels

    path = cutile_kernels.kernel_path("mma_scaled_f8")
    for sm in ("sm_80", "sm_90a"):
        with pytest.raises(TilecoreError) as ei:
            compile_file(path, sm)
        assert "mma block scale is not supported by compute capability < sm100" in ei.value.message
    res = compile_file(path, "sm_100a")
    assert res.artifacts["cubin"][:4] == b"\x7fELF"
    ptx = _ptx(res)
    assert "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale" in ptx
    opts = CompileOptions(extra={"tileas.dot": "fma"})
    ptx = _ptx(compile_file(path, "sm_100a", options=opts))
    assert "tcgen05" not in ptx and "cvt.rn.f16x2.e4m3x2" in ptx and "fma.rn.f32" in ptx


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("name", GENERATED)
def test_generated_kernel_compiles(name, sm):
    import cutile_kernels

    res = compile_file(cutile_kernels.kernel_path(name), sm)
    assert res.artifacts["cubin"][:4] == b"\x7fELF"
    assert f".entry {name}(" in _ptx(res)


@pytest.mark.parametrize("flag", ["lineinfo", "debug"])
def test_line_tables_reach_the_cubin(flag, tmp_path):
    """--lineinfo / -g compile to a cubin (ptxas accepts it) that carries a line table."""
    import subprocess

    from tilecore.options import CompileOptions
    from tilecore.serialize import find_nvidia_tool

    opts = CompileOptions()
    setattr(opts, flag, True)
    cubin = compile_file(os.path.join(CORPUS, "rownorm_loop_if_f32.tileirbc"), "sm_80", options=opts)
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin.artifacts["cubin"])
    elf = subprocess.run([find_nvidia_tool("cuobjdump"), "-elf", str(path)], capture_output=True, text=True).stdout
    assert ".nv_debug_line_sass" in elf or ".debug_line" in elf


def test_lineinfo_reaches_ptx():
    """Bytecode locations survive every tileas stage: the PTX has .file / .loc for the kernel source."""
    from tilecore.options import CompileOptions
    from tilecore.serialize import module_to_ptx

    opts = CompileOptions()
    opts.lineinfo = True
    res = compile_file(os.path.join(CORPUS, "vadd_f32.tileirbc"), "sm_80", options=opts,
                       stop_after="translate-debug-info")
    ptx = "\n".join(module_to_ptx(res.module).values())
    assert re.search(r'\.file\s+\d+ ".*gen_corpus.py"', ptx)
    assert re.search(r"\.loc\s+\d+ 2\d\d \d+", ptx)


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("name", ["layernorm_f32", "colsum_f32", "col_softmax_f32", "clamp_loop_if_f32",
                                  "broadcast_outer_f16", "cumsum_cols_f32", "permute3d_f32", "axpy_f64_i64"])
def test_own_kernel_compiles(name, sm):
    from test_e2e_numeric import _path

    res = compile_file(_path(name), sm)
    assert res.artifacts["cubin"][:4] == b"\x7fELF"
    assert f".entry {name}(" in _ptx(res)


def _nv_info(cubin: bytes, tmp) -> tuple[list, str]:
    """(ordinal, offset, size) of every kernel parameter and the REQNTID value, from cuobjdump -elf."""
    import subprocess

    from tilecore.serialize import find_nvidia_tool

    path = os.path.join(tmp, "k.cubin")
    with open(path, "wb") as fh:
        fh.write(cubin)
    elf = subprocess.run([find_nvidia_tool("cuobjdump"), "-elf", path], capture_output=True, text=True).stdout
    params = sorted(re.findall(r"Ordinal\s*:\s*(0x[0-9a-f]+)\s+Offset\s*:\s*(0x[0-9a-f]+)\s+Size\s*:\s*(0x[0-9a-f]+)",
                               elf))
    reqntid = re.search(r"EIATTR_REQNTID\s+Format:\s+\S+\s+Value:\s+([0-9a-fx ]+)", elf)
    return params, reqntid.group(1).strip() if reqntid else ""


@pytest.mark.parametrize("name", NON_MMA)
def test_kernel_abi_matches_tileiras(name, tmp_path):
    """Same parameter list (ordinal, offset, size) and the same required block size as tileiras' cubin."""
    import subprocess

    from tilecore.serialize import find_nvidia_tool

    src = os.path.join(CORPUS, f"{name}.tileirbc")
    ref = tmp_path / "ref.cubin"
    subprocess.run([find_nvidia_tool("tileiras"), "--gpu-name=sm_80", "--opt-level=3", f"--output-file={ref}", src],
                   check=True, capture_output=True)
    mine = compile_file(src, "sm_80").artifacts["cubin"]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert _nv_info(mine, tmp_path / "a") == _nv_info(ref.read_bytes(), tmp_path / "b")
