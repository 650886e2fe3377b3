"""The sm_100a / sm_103a block-scaled tcgen05 atom (``tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale``,
:class:`tilecore_sm100.mma_sm100.BlockScaledUmma`) end to end: cuTile ``mma_scaled`` kernels (cuda_tile
``mmaf_scaled``) exported, the atom selected by ``tileas-select-atoms`` (kind ``block_scaled_mma``), the stage-4
ops, their nvvm forms (plugins/sm100/TCGEN05-FORMS.md), ptxas on sm_100a (and sm_103a: inline PTX) with UTC*MMA
in the SASS, numbers in the
CPU emulator against numpy on sizes that are not tile multiples; the CUDA-core fallback elsewhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tilecore.assembler import find_nvidia_tool
from tilecore.compiler import compile_file

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")  # the cuTile front end (tox -e sm100 installs the plugin without it)
_TILEAS_TESTS = os.path.join(os.path.dirname(__file__), "..", "..", "tileas", "tests")
if _TILEAS_TESTS not in sys.path:
    sys.path.insert(0, _TILEAS_TESTS)

import cutile_kernels as ck  # noqa: E402
from emulated_kernels import KernelSet, arr, cdiv  # noqa: E402
from tilecore_sm100.mma_sm100 import ScaleOperand, instr_desc_bs  # noqa: E402

from tilecore.narrow_floats import decode, encode  # noqa: E402

ZERO = ct.PaddingMode.ZERO
CUOBJDUMP = find_nvidia_tool("cuobjdump")
ATOM = "mma.sm100a.mMnNk32.mxf8.f32"


@ct.kernel
def mma_scaled_loop(A, SA, B, SB, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                    BLOCK: ct.Constant[int]):
    """C = sum over K tiles of (A * SA) @ (B * SB), one scale per BLOCK elements of K; zero padding."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        a = ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=ZERO)
        b = ct.load(B, index=(k, j), shape=(TK, TN), padding_mode=ZERO)
        sa = ct.load(SA, index=(i, k), shape=(TM, TK // BLOCK), padding_mode=ZERO)
        sb = ct.load(SB, index=(k, j), shape=(TK // BLOCK, TN), padding_mode=ZERO)
        acc = ct.mma_scaled(a, sa, b, sb, acc)
    ct.store(C, index=(i, j), tile=acc)


@ct.kernel
def mma_scaled_loop_bt(A, SA, BT, SB, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                       BLOCK: ct.Constant[int]):
    """:func:`mma_scaled_loop` with B given as its N x K transpose ``BT``, loaded through a transposed view
    (``order=(1, 0)``: the tile's K is contiguous)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        a = ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=ZERO)
        b = ct.load(BT, index=(k, j), shape=(TK, TN), order=(1, 0), padding_mode=ZERO)
        sa = ct.load(SA, index=(i, k), shape=(TM, TK // BLOCK), padding_mode=ZERO)
        sb = ct.load(SB, index=(k, j), shape=(TK // BLOCK, TN), padding_mode=ZERO)
        acc = ct.mma_scaled(a, sa, b, sb, acc)
    ct.store(C, index=(i, j), tile=acc)


@ct.kernel
def mma_scaled_loop_tb(A, SA, BT, SB, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                       BLOCK: ct.Constant[int]):
    """:func:`mma_scaled_loop_bt` with B's tile loaded as it lies in ``BT`` (N x K) and transposed
    (``ct.transpose``, cuTile's docstring form for B)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        a = ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=ZERO)
        b = ct.transpose(ct.load(BT, index=(j, k), shape=(TN, TK), padding_mode=ZERO))
        sa = ct.load(SA, index=(i, k), shape=(TM, TK // BLOCK), padding_mode=ZERO)
        sb = ct.load(SB, index=(k, j), shape=(TK // BLOCK, TN), padding_mode=ZERO)
        acc = ct.mma_scaled(a, sa, b, sb, acc)
    ct.store(C, index=(i, j), tile=acc)


@ct.kernel
def mma_scaled_single_tb(A, SA, BT, SB, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                         BLOCK: ct.Constant[int]):
    """:func:`mma_scaled_single` with B given as its N x K transpose ``BT``, its tile transposed after the load."""
    i, j = ct.bid(0), ct.bid(1)
    a = ct.load(A, index=(i, 0), shape=(TM, TK), padding_mode=ZERO)
    b = ct.transpose(ct.load(BT, index=(j, 0), shape=(TN, TK), padding_mode=ZERO))
    sa = ct.load(SA, index=(i, 0), shape=(TM, TK // BLOCK), padding_mode=ZERO)
    sb = ct.load(SB, index=(0, j), shape=(TK // BLOCK, TN), padding_mode=ZERO)
    ct.store(C, index=(i, j), tile=ct.mma_scaled(a, sa, b, sb, ct.full((TM, TN), 0, dtype=ct.float32)))


@ct.kernel
def mma_scaled_loop_notma(A, SA, B, SB, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                          BLOCK: ct.Constant[int]):
    """:func:`mma_scaled_loop` with cuTile's hint ``allow_tma=False`` on B's load."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        a = ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=ZERO)
        b = ct.load(B, index=(k, j), shape=(TK, TN), padding_mode=ZERO, allow_tma=False)
        sa = ct.load(SA, index=(i, k), shape=(TM, TK // BLOCK), padding_mode=ZERO)
        sb = ct.load(SB, index=(k, j), shape=(TK // BLOCK, TN), padding_mode=ZERO)
        acc = ct.mma_scaled(a, sa, b, sb, acc)
    ct.store(C, index=(i, j), tile=acc)


@ct.kernel
def mma_scaled_single(A, SA, B, SB, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                      BLOCK: ct.Constant[int]):
    """One block-scaled dot (K = TK), zero padding."""
    i, j = ct.bid(0), ct.bid(1)
    a = ct.load(A, index=(i, 0), shape=(TM, TK), padding_mode=ZERO)
    b = ct.load(B, index=(0, j), shape=(TK, TN), padding_mode=ZERO)
    sa = ct.load(SA, index=(i, 0), shape=(TM, TK // BLOCK), padding_mode=ZERO)
    sb = ct.load(SB, index=(0, j), shape=(TK // BLOCK, TN), padding_mode=ZERO)
    ct.store(C, index=(i, j), tile=ct.mma_scaled(a, sa, b, sb, ct.full((TM, TN), 0, dtype=ct.float32)))


F8 = {"e4m3": ("f8e4m3", "f8E4M3FN"), "e5m2": ("f8e5m2", "f8E5M2")}
KERNELS = {
    # MXFP8: e4m3 / e5m2 with e8m0 scale factors per 32 elements of K
    "bs_e4m3_loop": (mma_scaled_loop, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 128, 64, 128, 32]),
    "bs_e5m2_loop": (mma_scaled_loop, ["f8e5m2[2]", "f8e8m0[2]", "f8e5m2[2]", "f8e8m0[2]", "f32[2]", 128, 32, 64, 32]),
    "bs_e4m3_single": (mma_scaled_single, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 128, 32, 256,
                                           32]),
    "bs_e4m3_m256": (mma_scaled_loop, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 256, 128, 64,
                                       32]),
    # B K-major in memory (a transposed view): pipelined with B's stage K-major
    "bs_e4m3_loop_bt": (mma_scaled_loop_bt, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 128, 64, 128,
                                             32]),
    "bs_e5m2_loop_tb": (mma_scaled_loop_tb, ["f8e5m2[2]", "f8e8m0[2]", "f8e5m2[2]", "f8e8m0[2]", "f32[2]", 64, 64, 128,
                                             32]),
    "bs_e4m3_loop_notma": (mma_scaled_loop_notma, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 128, 64,
                                                   128, 32]),
    # 64-row tiles: one M = 128 MMA over A in layout F
    "bs_m64": (mma_scaled_single, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 64, 64, 64, 32]),
    "bs_m64_loop": (mma_scaled_loop, ["f8e5m2[2]", "f8e8m0[2]", "f8e5m2[2]", "f8e8m0[2]", "f32[2]", 64, 32, 128, 32]),
    # not admitted: sub-32-byte rows of B
    # MXFP4 (e2m1, e8m0 per 32: kind::mxf4, 2X) and NVFP4 (e2m1, e4m3 per 16: kind::mxf4nvf4 block16, 4X)
    "f4_mxfp4_loop": (mma_scaled_loop, ["f4[2]", "f8e8m0[2]", "f4[2]", "f8e8m0[2]", "f32[2]", 128, 64, 128, 32]),
    "f4_nvfp4_loop": (mma_scaled_loop, ["f4[2]", "f8e4m3[2]", "f4[2]", "f8e4m3[2]", "f32[2]", 128, 32, 64, 16]),
    "f4_nvfp4_single": (mma_scaled_single, ["f4[2]", "f8e4m3[2]", "f4[2]", "f8e4m3[2]", "f32[2]", 128, 64, 128,
                                            16]),
    "f4_mxfp4_m64": (mma_scaled_loop, ["f4[2]", "f8e8m0[2]", "f4[2]", "f8e8m0[2]", "f32[2]", 64, 32, 64, 32]),
    "f4_nvfp4_m256": (mma_scaled_single, ["f4[2]", "f8e4m3[2]", "f4[2]", "f8e4m3[2]", "f32[2]", 256, 32, 64, 16]),
    # e2m1 with e8m0 (UE8M0) per 16: kind::mxf4nvf4 block16 (4X), scale format bit 23 = 1
    "f4_e8x16_loop": (mma_scaled_loop, ["f4[2]", "f8e8m0[2]", "f4[2]", "f8e8m0[2]", "f32[2]", 128, 32, 128, 16]),
    "f4_e8x16_single": (mma_scaled_single, ["f4[2]", "f8e8m0[2]", "f4[2]", "f8e8m0[2]", "f32[2]", 128, 64, 128,
                                            16]),
    "f4_e8x16_m64": (mma_scaled_loop, ["f4[2]", "f8e8m0[2]", "f4[2]", "f8e8m0[2]", "f32[2]", 64, 32, 64, 16]),
    # e2m1 with B given as its N x K transpose (packed along K, as the mxf4 kinds read it): A and B by TMA
    "f4_mxfp4_loop_bt": (mma_scaled_loop_bt, ["f4[2]", "f8e8m0[2]", "f4[2]", "f8e8m0[2]", "f32[2]", 128, 64, 128, 32]),
    "f4_nvfp4_loop_tb": (mma_scaled_loop_tb, ["f4[2]", "f8e4m3[2]", "f4[2]", "f8e4m3[2]", "f32[2]", 128, 64, 128, 16]),
    "f4_e8x16_loop_bt": (mma_scaled_loop_bt, ["f4[2]", "f8e8m0[2]", "f4[2]", "f8e8m0[2]", "f32[2]", 64, 32, 128, 16]),
    "f4_nvfp4_single_tb": (mma_scaled_single_tb, ["f4[2]", "f8e4m3[2]", "f4[2]", "f8e4m3[2]", "f32[2]", 128, 64, 128,
                                                  16]),
    # K = 32 of e2m1 (one MMA takes 64: laid out as 64, zero codes and scale factors past 32); N = 16 of 8-bit
    # operands (rows of B under 32 bytes: B read K-major)
    "f4_k32": (mma_scaled_single, ["f4[2]", "f8e4m3[2]", "f4[2]", "f8e4m3[2]", "f32[2]", 128, 64, 32, 16]),
    "bs_n16": (mma_scaled_single, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 128, 16, 64, 32]),
}
ADMITTED = ["bs_e4m3_loop", "bs_e5m2_loop", "bs_e4m3_single", "bs_e4m3_m256", "bs_m64", "bs_m64_loop"]
F4_ATOMS = {"f4_mxfp4_loop": "mma.sm100a.mMnNk64.mxf4.f32", "f4_nvfp4_loop": "mma.sm100a.mMnNk64.nvf4.f32",
            "f4_nvfp4_single": "mma.sm100a.mMnNk64.nvf4.f32", "f4_mxfp4_m64": "mma.sm100a.mMnNk64.mxf4.f32",
            "f4_nvfp4_m256": "mma.sm100a.mMnNk64.nvf4.f32", "f4_e8x16_loop": "mma.sm100a.mMnNk64.nvf4ue8m0.f32",
            "f4_e8x16_single": "mma.sm100a.mMnNk64.nvf4ue8m0.f32", "f4_e8x16_m64": "mma.sm100a.mMnNk64.nvf4ue8m0.f32"}
_KERNELS = KernelSet(KERNELS, "sm100-tcgen05-bs-")


def _export(name: str) -> str:
    path = os.path.join(_KERNELS._dir, f"{name}.tileirbc")
    if not os.path.exists(path):
        kernel, params = KERNELS[name]
        ck.export_spec(kernel, params, name, path)
    return path


def _elems(name: str) -> tuple[str, str]:
    params = KERNELS[name][1]
    names = {"f8e4m3": "f8E4M3FN", "f8e5m2": "f8E5M2"}
    return names[params[0].split("[")[0]], names[params[2].split("[")[0]]


def _emulator_has_block_scale() -> bool:
    try:
        from tilecore.emulate import optable

        return all(optable.row(f"nvvm.tcgen05.{o}") is not None for o in ("mma.block_scale", "cp", "alloc", "ld"))
    except Exception:
        return False


# ------------------------------------------------------------------ descriptors and layouts
def test_block_scaled_instruction_descriptor_fields():
    """PTX ISA 9.7.16.4.2, Table 44: SF B ID 4-5, atype 7-9, btype 10-12, transpose B 16, N >> 3 at 17, scale
    format 23 (UE8M0 = 1), M >> 4 at 24, SF A ID 29-30."""
    d = instr_desc_bs("f8E4M3FN", "f8E5M2", 64, 3, 2)
    assert (d >> 4) & 3 == 2 and (d >> 29) & 3 == 3
    assert (d >> 7) & 7 == 0 and (d >> 10) & 7 == 1 and (d >> 16) & 1 == 1 and (d >> 15) & 1 == 0
    assert (d >> 17) & 63 == 64 >> 3 and (d >> 23) & 1 == 1 and (d >> 24) & 31 == 128 >> 4
    assert d & 0b1111 == 0 and (d >> 13) & 3 == 0


def test_scale_factor_chunks():
    """Scale factors of 256 rows x 6 blocks: chunks of 128 rows x 4 blocks (512 bytes, 4 tensor-memory columns
    each), block-group major."""
    sf = ScaleOperand(0, 256, 6)
    assert (sf.chunks, sf.groups, sf.cols, sf.nbytes) == (2, 2, 16, 2048)


# ------------------------------------------------------------------ selection, ops, forms
@pytest.mark.parametrize("name", ADMITTED)
def test_block_scaled_atom_selected(name):
    text = str(compile_file(_export(name), "sm_100a", stop_after="tileas-select-atoms").module)
    assert '"nv_tileas.block_scaled_mma"' in text and f'#nv_tileas.atom<"{ATOM}">' in text


@pytest.mark.parametrize("name, atom", F4_ATOMS.items())
def test_e2m1_atoms_selected(name, atom):
    text = str(compile_file(_export(name), "sm_100a", stop_after="tileas-select-atoms").module)
    assert '"nv_tileas.block_scaled_mma"' in text and f'#nv_tileas.atom<"{atom}">' in text


def test_block_scaled_narrow_n_and_short_k_admitted():
    """N = 16 of e4m3 (rows of B under 32 bytes): B written K-major (the instruction descriptor's transpose-B bit 0);
    e2m1 with K = 32 (an mxf4 MMA takes K = 64): the operands packed to 32-byte rows with zero codes past K (an
    ``arith.select`` of the packed byte) and the padded blocks' scale factors zeroed (i8 stores of 0)."""
    text = str(compile_file(_export("bs_n16"), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    assert f'#nv_tileas.atom<"{ATOM}">' in str(compile_file(_export("bs_n16"), "sm_100a",
                                                           stop_after="tileas-select-atoms").module)
    idesc = instr_desc_bs("f8E4M3FN", "f8E4M3FN", 16, 0, 0, b_mn_major=False)
    dots = text.count('"sm100.umma_commit"')  # the single dot's TMA form and its thread-copy form
    assert dots and text.count('"sm100.umma_bs"') == 2 * dots and f"arith.constant {idesc} : i32" in text
    text = str(compile_file(_export("f4_k32"), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    dots = text.count('"sm100.umma_commit"')
    assert dots and text.count('"sm100.umma_bs"') == dots and "arith.select" in text and "llvm.store %c0_i8" in text


@pytest.mark.parametrize("gpu", ["sm_100", "sm_120a"])
def test_block_scaled_atom_not_selected_elsewhere(gpu):
    text = str(compile_file(_export("bs_e4m3_loop"), gpu, stop_after="convert-tileas-to-llvm").module)
    assert ATOM not in text and "sm100.umma_bs" not in text


def test_block_scaled_fma_option_keeps_the_cuda_cores():
    from tilecore.compiler import CompileOptions

    text = str(compile_file(_export("bs_e4m3_loop"), "sm_100a", stop_after="convert-tileas-to-llvm",
                            options=CompileOptions(extra={"tileas.dot": "fma"})).module)
    assert "sm100.umma_bs" not in text


def test_block_scaled_stage4_ops():
    """Per dot: 128 / 32 scale-factor chunks copied (tcgen05.cp: one for A's 128 rows x 4 blocks, one for B's),
    K / 32 block-scaled MMAs (one N instruction), one commit; the allocation covers the accumulator (64
    columns) and the 8 scale-factor columns. The K loops are pipelined (test_tcgen05_block_scaled_tma.py): the
    dot is in the TMA-pipelined loop and in its form for unaligned tensors."""
    text = str(compile_file(_export("bs_e4m3_loop"), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    dots = text.count('"sm100.umma_commit"')
    assert dots == 2
    assert text.count('"sm100.tmem_cp"') == 2 * dots and text.count('"sm100.umma_bs"') == 4 * dots
    assert 'kind = "mxf8f6f4"' in text and "ncols = 128 : i32" in text
    text = str(compile_file(_export("bs_e4m3_m256"), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    # 2 row blocks x 1 N instruction x 2 K steps; A: 2 chunks (256 rows), B: 1 chunk (128 columns)
    assert text.count('"sm100.tmem_cp"') == 3 * dots and text.count('"sm100.umma_bs"') == 4 * dots


def test_block_scaled_m64_stage4_ops():
    """A 64-row tile: per K step one M = 128 MMA (block-scaled MMAs have no M = 64 shape) whose instruction
    descriptor says M = 128; A's rows written twice (layout F: rows 32 (i / 16) + i % 16 and + 16); one scale-factor
    chunk each for A (128 rows) and B. (Two forms of the dot: A / B by TMA, and by the threads for tensors that fail
    the run-time alignment check, test_tcgen05_block_scaled_tma.py.)"""
    text = str(compile_file(_export("bs_m64"), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    forms = 2
    assert text.count('"sm100.umma_bs"') == 2 * forms and text.count('"sm100.tmem_cp"') == 2 * forms
    for sid in (0, 1):
        d = instr_desc_bs("f8E4M3FN", "f8E4M3FN", 64, sid, sid)
        assert (d >> 24) & 31 == 128 >> 4
        assert f"arith.constant {d} : i32" in text or f"arith.constant {d - (1 << 32)} : i32" in text


def test_block_scaled_nvvm_forms():
    """Stage 5: the nvvm forms of TCGEN05-FORMS.md (tcgen05.mma.block_scale kind mxf8f6f4, cta_1; tcgen05.cp
    32x128b warpx4) and every K step's instruction descriptor (SF IDs = the K block % 4)."""
    text = str(compile_file(_export("bs_e4m3_loop"), "sm_100a", stop_after="convert-cute-to-llvm").module)
    assert re.search(r"nvvm\.tcgen05\.mma\.block_scale %\S+, %\S+, %\S+, %\S+, %\S+, %\S+, %\S+ \{ctaGroup = "
                     r"#nvvm\.cta_group<cta_1>, kind = #nvvm\.block_scale_kind<mxf8f6f4>\} : \(!llvm\.ptr<6>, i64, "
                     r"i64, i32, i1, !llvm\.ptr<6>, !llvm\.ptr<6>\)", text)
    assert re.search(r"nvvm\.tcgen05\.cp %\S+, %\S+ \{multicast = #nvvm\.tcgen05_cp_multicast<warpx4>, shape = "
                     r"#nvvm\.tcgen05_cp_shape<shape_32x128b>\}", text)
    for sid in range(4):
        d = instr_desc_bs("f8E4M3FN", "f8E4M3FN", 64, sid, sid)
        assert f"arith.constant {d} : i32" in text or f"llvm.mlir.constant({d} : i32)" in text \
            or f"arith.constant {d - (1 << 32)} : i32" in text or f"llvm.mlir.constant({d - (1 << 32)} : i32)" in text


def _sass(cubin: bytes, tmp_path) -> str:
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin)
    return subprocess.run([CUOBJDUMP, "-sass", str(path)], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(not CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
@pytest.mark.parametrize("name", ["bs_e4m3_loop", "bs_e4m3_single", "bs_m64"])
def test_block_scaled_ptxas_and_sass(name, tmp_path):
    """ptxas takes the sm_100a PTX; the SASS has the block-scaled tensor-memory MMA (UTCQMMA with the scale
    factors' tensor-memory operand after the instruction descriptor) and the tensor-memory copy (UTCCP)."""
    res = compile_file(_export(name), "sm_100a")
    ptx = res.artifacts["ptx"]
    ptx = ptx if isinstance(ptx, str) else "".join(ptx.values())
    assert "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale" in ptx
    assert "tcgen05.cp.cta_group::1.32x128b.warpx4" in ptx
    cubin = res.artifacts["cubin"]
    cubin = cubin if isinstance(cubin, bytes) else next(iter(cubin.values()))
    assert cubin[:4] == b"\x7fELF"
    sass = _sass(cubin, tmp_path)
    mmas = [ln for ln in sass.splitlines() if re.search(r"\bUTC\w*MMA\b", ln)]
    # the block-scaled form: a tensor-memory operand (the scale factors) after the instruction descriptor,
    # which the plain tcgen05.mma's UTCQMMA lacks
    assert mmas and all(re.search(r"UTC\w*MMA .*idesc\[\w+\], tmem\[\w+\]", ln) for ln in mmas), mmas
    assert re.search(r"\bUTCCP\S* tmem\[", sass)  # tcgen05.cp


@pytest.mark.skipif(not CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
def test_block_scaled_sm103a_inline_ptx(tmp_path):
    """sm_103a: MLIR 22's nvvm verifier rejects tcgen05 ops there, so the block-scaled MMA and tcgen05.cp are inline
    PTX; ptxas takes it (UTCQMMA with the scale-factor operand, UTCCP)."""
    text = str(compile_file(_export("bs_e4m3_loop"), "sm_103a", stop_after="convert-cute-to-llvm").module)
    assert "nvvm.tcgen05" not in text and "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale" in text
    assert "tcgen05.cp.cta_group::1.32x128b.warpx4" in text
    cubin = compile_file(_export("bs_e4m3_loop"), "sm_103a").artifacts["cubin"]
    cubin = cubin if isinstance(cubin, bytes) else next(iter(cubin.values()))
    sass = _sass(cubin, tmp_path)
    assert re.search(r"UTC\w*MMA .*idesc\[\w+\], tmem\[\w+\]", sass) and re.search(r"\bUTCCP\S* tmem\[", sass)


# ------------------------------------------------------------------ numbers in the emulator
NUMERIC_SKIP = pytest.mark.skipif(not _emulator_has_block_scale(),
                                  reason="the emulator does not model tcgen05.mma.block_scale / tcgen05.cp")


def _f8(rng, shape, fmt):
    codes = np.array([encode(float(v), fmt) for v in rng.normal(0, 2, int(np.prod(shape)))],
                     np.uint8).reshape(shape)
    return codes, np.vectorize(lambda c: decode(int(c), fmt))(codes)


def _run(name: str, m: int, n: int, k: int, seed: int, gpu: str = "sm_100a", options=None):
    """Run kernel ``name`` on random m x n x k inputs (compiled with ``options``: a CompileOptions, else the
    default, cached per process); returns C and the scaled operands."""
    _kernel, params = KERNELS[name]
    tm, tn = params[-4], params[-3]
    ea, eb = _elems(name)
    rng = np.random.default_rng(seed)
    (a, av), (b, bv) = _f8(rng, (m, k), ea), _f8(rng, (k, n), eb)
    kb = cdiv(k, 32)
    sa = rng.integers(120, 134, (m, kb)).astype(np.uint8)
    sb = rng.integers(120, 134, (kb, n)).astype(np.uint8)
    c = np.zeros((m, n), np.float32)
    args = arr(a) + arr(sa) + arr(np.ascontiguousarray(b.T) if name.endswith(("_bt", "_tb")) else b) + arr(sb) + \
        arr(c)
    _launch(name, gpu, (cdiv(m, tm), cdiv(n, tn), 1), args, options)
    avs = av * np.repeat(2.0 ** (sa.astype(np.float64) - 127), 32, axis=1)[:, :k]
    bvs = bv * np.repeat(2.0 ** (sb.astype(np.float64) - 127), 32, axis=0)[:k]
    return c, avs, bvs


def _launch(name: str, gpu: str, grid, args, options=None) -> None:
    """Run kernel ``name`` in the emulator, compiled with ``options`` (a CompileOptions; None: the default, cached per
    process)."""
    if options is None:
        _KERNELS.run(name, gpu, grid, args)
        return
    from emulated_kernels import block_of

    from tilecore import emulate

    module = compile_file(_export(name), gpu, options=options).module
    emulate.launch(module, name, grid, block_of(module, name), args)


def _check(got, a, b):
    ref = a @ b
    bound = a.shape[1] * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b)) + 1e-30
    assert np.all(np.abs(got - ref) <= bound), float(np.max(np.abs(got - ref) / bound))


@NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk", [
    ("bs_e4m3_loop", (137, 70, 300)),  # K: 3 tiles, the last one partial (its scale blocks too)
    ("bs_e5m2_loop", (200, 45, 96)),
    ("bs_e4m3_single", (130, 50, 200)),  # 7 K blocks: SF IDs 0-3 of the first word, 0-2 of the next
    ("bs_e4m3_m256", (250, 140, 100)),  # one partial 256-row block, two column blocks (the second partial)
    ("bs_m64", (100, 70, 50)),  # 64-row tiles: M = 128 MMA over A in layout F
    ("bs_m64_loop", (70, 45, 300)),
])
def test_block_scaled_numbers(name, mnk):
    """(A * scale_A) @ (B * scale_B) on sizes that are not tile multiples, against numpy (within f32
    accumulation error)."""
    c, av, bv = _run(name, *mnk, seed=sum(mnk))
    _check(c.astype(np.float64), av, bv)


@NUMERIC_SKIP
def test_block_scaled_fallback_numbers():
    """N = 16 (rows of B under 32 bytes): tcgen05 with B K-major."""
    c, av, bv = _run("bs_n16", 130, 20, 64, seed=7)
    _check(c.astype(np.float64), av, bv)


@NUMERIC_SKIP
def test_corpus_mma_scaled_f8():
    """The corpus kernel (64 x 64 x 64 tiles, plugins/tileas/tests/cutile_kernels.py) compiles for sm_100a to one
    M = 128 block-scaled MMA per K step over A in layout F, A and B by TMA (one box each) in one form of the dot and
    by the threads in the other (tensors that fail the run-time alignment check); numbers against numpy."""
    path = ck.kernel_path("mma_scaled_f8")
    text = str(compile_file(path, "sm_100a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"sm100.umma_bs"') == 2 * 2 and text.count('"sm100.tmem_cp"') == 2 * 2
    assert text.count('"cute_nvgpu.tma_load"') == 2
    from tilecore import emulate

    rng = np.random.default_rng(9)
    (a, av), (b, bv) = _f8(rng, (64, 64), "f8E4M3FN"), _f8(rng, (64, 64), "f8E4M3FN")
    sa = rng.integers(120, 134, (64, 2)).astype(np.uint8)
    sb = rng.integers(120, 134, (2, 64)).astype(np.uint8)
    c = np.zeros((64, 64), np.float32)
    emulate.launch(compile_file(path, "sm_100a").module, "mma_scaled_f8", (1, 1, 1), (128, 1, 1),
                   arr(a) + arr(sa) + arr(b) + arr(sb) + arr(c))
    _check(c.astype(np.float64), av * np.repeat(2.0 ** (sa - 127.0), 32, axis=1),
           bv * np.repeat(2.0 ** (sb - 127.0), 32, axis=0))


# ------------------------------------------------------------------ e2m1: MXFP4 / NVFP4
def test_e2m1_stage4_ops():
    """Per dot: the codes packed (two to a byte) after a barrier, the scale-factor chunks copied, one MMA per K step
    of 64 with the kind, NVFP4's block16 and the instruction descriptor (E2M1 = 1, K-major B: no transpose bit;
    UE4M3: scale format 0; SF ID 0 (4X) or 0 / 2 (2X)). Both kernels have two forms of the dot (A by TMA, and the
    form for tensors that fail the run-time alignment check: test_tcgen05_block_scaled_tma.py)."""
    forms = 2
    text = str(compile_file(_export("f4_mxfp4_loop"), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"sm100.umma_bs"') == 2 * forms and 'kind = "mxf4"' in text and 'block = ' not in text
    for sid in (0, 2):
        d = instr_desc_bs("f4E2M1FN", "f4E2M1FN", 64, sid, sid)
        assert (d >> 16) & 1 == 0 and (d >> 7) & 7 == 1 and (d >> 10) & 7 == 1 and (d >> 23) & 1 == 1
        assert f"arith.constant {d} : i32" in text or f"arith.constant {d - (1 << 32)} : i32" in text
    text = str(compile_file(_export("f4_nvfp4_single"), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"sm100.umma_bs"') == 2 * forms and 'kind = "mxf4nvf4"' in text and 'block = "block16"' in text
    d = instr_desc_bs("f4E2M1FN", "f4E2M1FN", 64, 0, 0, ue8m0=False)
    assert (d >> 23) & 1 == 0 and (f"arith.constant {d} : i32" in text or f"arith.constant {d - (1 << 32)} : i32" in text)
    # 8 scale blocks: 2 words of A's 128 rows, 2 of B's 64 columns
    assert text.count('"sm100.tmem_cp"') == 4 * forms


def test_e2m1_ue8m0_per_16_stage4_ops():
    """e2m1 with UE8M0 scale factors per 16 (PTX ISA 9.7.16.10.7: .kind::mxf4nvf4 .scale_vec::4X takes .ue8m0 as
    well as .ue4m3): the NVFP4 path (kind mxf4nvf4, block16, SF ID 0, a tcgen05.cp per 128 rows x 4 blocks) with
    scale format bit 23 = 1 in the instruction descriptor."""
    text = str(compile_file(_export("f4_e8x16_single"), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    forms = 2  # A by TMA; by the threads for tensors that fail the run-time alignment check
    assert text.count('"sm100.umma_bs"') == 2 * forms and 'kind = "mxf4nvf4"' in text and 'block = "block16"' in text
    d = instr_desc_bs("f4E2M1FN", "f4E2M1FN", 64, 0, 0, ue8m0=True)
    assert (d >> 23) & 1 == 1 and (d >> 7) & 7 == 1 and (d >> 10) & 7 == 1 and (d >> 16) & 1 == 0
    assert (d >> 4) & 3 == 0 and (d >> 29) & 3 == 0
    assert f"arith.constant {d} : i32" in text or f"arith.constant {d - (1 << 32)} : i32" in text
    assert f"arith.constant {d & ~(1 << 23)} : i32" not in text  # not the UE4M3 descriptor
    assert text.count('"sm100.tmem_cp"') == 4 * forms  # 8 blocks of 16: 2 words of A's 128 rows, 2 of B's 64 columns
    text = str(compile_file(_export("f4_e8x16_m64"), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    assert 'kind = "mxf4nvf4"' in text and 'block = "block16"' in text
    d = instr_desc_bs("f4E2M1FN", "f4E2M1FN", 32, 0, 0, ue8m0=True)  # M = 128 over the layout-F A, N = 32
    assert f"arith.constant {d} : i32" in text or f"arith.constant {d - (1 << 32)} : i32" in text


@pytest.mark.skipif(not CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
@pytest.mark.parametrize("name, gpu, kind", [("f4_mxfp4_loop", "sm_100a", "mxf4.block_scale"),
                                             ("f4_nvfp4_single", "sm_100a", "mxf4nvf4.block_scale.block16"),
                                             ("f4_mxfp4_loop", "sm_103a", "mxf4.block_scale"),
                                             ("f4_nvfp4_single", "sm_103a", "mxf4nvf4.block_scale.scale_vec::4X"),
                                             ("f4_e8x16_single", "sm_100a", "mxf4nvf4.block_scale.block16"),
                                             ("f4_e8x16_loop", "sm_103a", "mxf4nvf4.block_scale.scale_vec::4X")])
def test_e2m1_ptxas_and_sass(name, gpu, kind, tmp_path):
    """ptxas takes the PTX (sm_103a: inline); the SASS has the block-scaled tensor-memory MMA with its scale-factor
    operand and UTCCP."""
    res = compile_file(_export(name), gpu)
    ptx = res.artifacts["ptx"]
    ptx = ptx if isinstance(ptx, str) else "".join(ptx.values())
    assert f"tcgen05.mma.cta_group::1.kind::{kind}" in ptx
    cubin = res.artifacts["cubin"]
    sass = _sass(cubin if isinstance(cubin, bytes) else next(iter(cubin.values())), tmp_path)
    mmas = [ln for ln in sass.splitlines() if re.search(r"\bUTC\w*MMA\b", ln)]
    # NVFP4: UTCOMMA.4X (scale_vec::4X)
    assert mmas and all(re.search(r"UTC\w*MMA\S* .*idesc\[\w+\], tmem\[\w+\]", ln) for ln in mmas), mmas
    assert re.search(r"\bUTCCP\S* tmem\[", sass)


@pytest.mark.skipif(not CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
def test_e2m1_ue8m0_per_16_ptx_and_sass(tmp_path):
    """UE8M0 per 16 on sm_100a: the PTX moves the instruction descriptor with scale format 1 (UE8M0) into the
    register of both ``.kind::mxf4nvf4.block_scale.block16`` MMAs (K = 128: two steps of 64) and not NVFP4's
    UE4M3 one; ptxas gives two UTCOMMA.4X and the four UTCCP of the scale-factor chunks, per form of the dot (A by
    TMA; by the threads for tensors that fail the run-time alignment check)."""
    res = compile_file(_export("f4_e8x16_single"), "sm_100a")
    ptx = res.artifacts["ptx"]
    ptx = ptx if isinstance(ptx, str) else "".join(ptx.values())
    mmas = [ln for ln in ptx.splitlines() if "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16" in ln]
    forms = 2
    assert len(mmas) == 2 * forms
    d = instr_desc_bs("f4E2M1FN", "f4E2M1FN", 64, 0, 0, ue8m0=True)
    regs = set(re.findall(rf"mov\.b32\s+(%r\d+), {d};", ptx))
    assert regs and all(any(f", {r}, [" in ln for r in regs) for ln in mmas), (d, mmas)
    assert str(d & ~(1 << 23)) not in ptx
    cubin = res.artifacts["cubin"]
    sass = _sass(cubin if isinstance(cubin, bytes) else next(iter(cubin.values())), tmp_path)
    assert len(re.findall(r"\bUTCOMMA\.4X ", sass)) == 2 * forms and len(re.findall(r"\bUTC\w*MMA\b", sass)) == 2 * forms
    assert len(re.findall(r"\bUTCCP\S* tmem\[", sass)) == 4 * forms


def _f4_run(name: str, m: int, n: int, k: int, seed: int, options=None):
    from test_narrow_float import packed

    params = KERNELS[name][1]
    tm, tn, block = params[-4], params[-3], params[-1]
    sf = {"f8e8m0": "f8E8M0FNU", "f8e4m3": "f8E4M3FN"}[params[1].split("[")[0]]
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 16, (m, k)), rng.integers(0, 16, (k, n))
    kb = cdiv(k, block)
    if sf == "f8E8M0FNU":
        sa, sb = rng.integers(120, 134, (m, kb)).astype(np.uint8), rng.integers(120, 134, (kb, n)).astype(np.uint8)
    else:  # UE4M3: positive e4m3
        sa, sb = (np.array([encode(float(v), sf) for v in rng.uniform(0.1, 4, int(np.prod(s)))], np.uint8).reshape(s)
                  for s in ((m, kb), (kb, n)))
    c = np.zeros((m, n), np.float32)
    bt = name.endswith(("_bt", "_tb"))  # B given as its N x K transpose
    _launch(name, "sm_100a", (cdiv(m, tm), cdiv(n, tn), 1),
            packed(a) + arr(sa) + packed(np.ascontiguousarray(b.T) if bt else b) + arr(sb) + arr(c), options)

    def values(codes, fmt):
        return np.vectorize(lambda x: decode(int(x), fmt))(codes)

    av = values(a, "f4E2M1FN") * np.repeat(values(sa, sf), block, axis=1)[:, :k]
    bv = values(b, "f4E2M1FN") * np.repeat(values(sb, sf), block, axis=0)[:k]
    return c, av, bv


@NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk", [
    ("f4_mxfp4_loop", (150, 70, 300)),  # K: 3 tiles, the last partial (its scale blocks too)
    ("f4_nvfp4_loop", (130, 40, 100)),
    ("f4_nvfp4_single", (140, 100, 120)),  # 8 blocks of 16 (the last one partial): 2 words, every SF ID 0
    ("f4_mxfp4_m64", (100, 50, 130)),  # 64-row tiles: layout F
    ("f4_nvfp4_m256", (270, 40, 60)),
    ("f4_e8x16_loop", (150, 70, 300)),  # UE8M0 per 16: 3 K tiles, the last partial (19 blocks, the last partial)
    ("f4_e8x16_single", (140, 100, 120)),
    ("f4_e8x16_m64", (100, 50, 130)),  # 64-row tiles: layout F
])
def test_e2m1_numbers(name, mnk):
    """MXFP4 / NVFP4 (A * scale_A) @ (B * scale_B) on sizes that are not tile multiples, against numpy."""
    c, av, bv = _f4_run(name, *mnk, seed=sum(mnk))
    _check(c.astype(np.float64), av, bv)


@NUMERIC_SKIP
def test_e2m1_fallback_numbers():
    """K = 32: tcgen05 with K padded to 64 (zero codes and scale factors)."""
    c, av, bv = _f4_run("f4_k32", 130, 70, 32, seed=5)
    _check(c.astype(np.float64), av, bv)
