"""16- and 32-row tiles on the sm_100a tensor cores (issue 16): tcgen05 has no M under 64 (PTX ISA 9.7.16.2.1,
Table 39), so such a tile is computed by the M = 64 instructions (plain kinds) or one M = 128 instruction in layout
F (block-scaled kinds) over an A whose rows repeat the tile's (``RepeatedRowsOperand`` / ``LayoutFOperand`` with
``tile_rows``); thread ``l`` of warp ``w`` then holds row ``(16 w + l % 16) % M`` (tileas' ``TmemFragment``). A
pipelined loop's A stage (the tile's rows, by TMA) is copied into the repeated rows per dot, in the body's scratch
region past the ring. Stage-4 ops, ptxas + SASS on sm_100a / sm_103a, numbers in the emulator against numpy on
sizes that are not tile multiples."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tilecore.compiler import compile_file

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")
sys.path.insert(0, os.path.dirname(__file__))

import test_tcgen05_atoms as plain  # noqa: E402
import test_tcgen05_block_scaled as bs  # noqa: E402
from emulated_kernels import KernelSet, arr, cdiv  # noqa: E402
from test_tcgen05_atoms import ATOM, CUOBJDUMP, KIND, ck  # noqa: E402
from tilecore_sm100.mma_sm100 import instr_desc  # noqa: E402

ZERO = bs.ZERO


@ct.kernel
def mma_k2_then_k(a, b, a2, b2, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """c = a @ b + a2 @ b2, a / b with 2 TK of K, a2 / b2 with TK: two dots outside a loop, their operands written
    from registers to the same scratch slots, so the second's K padding (TK = 16 of 8-bit operands) lies where the
    first one's data was: it must be zeroed."""
    i, j = ct.bid(0), ct.bid(1)
    x = ct.load(a, index=(i, 0), shape=(TM, 2 * TK), padding_mode=ZERO)
    y = ct.load(b, index=(0, j), shape=(2 * TK, TN), padding_mode=ZERO)
    acc = ct.mma(x, y, ct.full((TM, TN), 0, dtype=c.dtype))
    x2 = ct.load(a2, index=(i, 0), shape=(TM, TK), padding_mode=ZERO)
    y2 = ct.load(b2, index=(0, j), shape=(TK, TN), padding_mode=ZERO)
    ct.store(c, index=(i, j), tile=ct.mma(x2, y2, acc))


SMALL = {
    "m32_f16_f32": (ck.mma_loop, ["f16[2]", "f16[2]", "f32[2]", 32, 32, 16]),
    "m16_f16_f32": (ck.mma_loop, ["f16[2]", "f16[2]", "f32[2]", 16, 32, 32]),
    "m16_bf16_f32": (ck.mma_loop, ["bf16[2]", "bf16[2]", "f32[2]", 16, 16, 32]),
    "m32_s8_i32": (ck.mma_loop, ["i8[2]", "i8[2]", "i32[2]", 32, 32, 32]),
    "m16_e4m3_f32": (ck.mma_loop, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 16, 32, 64]),
    "m32_tf32_f32": (ck.mma_tf32_loop, ["f32[2]", "f32[2]", "f32[2]", 32, 32, 16]),
    "m16_f16_f16": (ck.mma_loop, ["f16[2]", "f16[2]", "f16[2]", 16, 64, 32]),
    # N = 16 of 8-bit operands (rows of B under 32 bytes): B read K-major
    "n16_e4m3_f32": (ck.mma_loop, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 128, 16, 64]),
    "m16_s8_n16": (ck.mma_loop, ["i8[2]", "i8[2]", "i32[2]", 16, 16, 32]),
    "m32_e5m2_n16": (ck.mma_loop, ["f8e5m2[2]", "f8e5m2[2]", "f16[2]", 32, 16, 32]),
    # K = 16 of 8-bit operands (rows of 16 bytes): A and B laid out with K = 32, the padding zeroed
    "k16_u8_i32": (ck.mma_loop, ["u8[2]", "u8[2]", "i32[2]", 64, 32, 16]),
    "m16_e4m3_k16": (ck.mma_loop, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 16, 16, 16]),
    "m32_s8_k16": (ck.mma_loop, ["i8[2]", "i8[2]", "i32[2]", 32, 16, 16]),
    # N = 8 (a decode's query group): M = 64 instructions of N = 8 (.kind::f16 / tf32 / f8f6f4, PTX ISA 9.7.16.2.1,
    # Table 39), B read K-major (16-bit B: rows of 16 bytes; e4m3: of 8)
    "n8_f16_f32": (ck.mma_loop, ["f16[2]", "f16[2]", "f32[2]", 64, 8, 32]),
    "m32_bf16_n8": (ck.mma_loop, ["bf16[2]", "bf16[2]", "f32[2]", 32, 8, 64]),
    "m16_f16_n8_f16": (ck.mma_loop, ["f16[2]", "f16[2]", "f16[2]", 16, 8, 32]),
    "n8_tf32_f32": (ck.mma_tf32_loop, ["f32[2]", "f32[2]", "f32[2]", 64, 8, 16]),
    "n8_e4m3_f32": (ck.mma_loop, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 64, 8, 64]),
}
K2 = {  # two single dots, K = 32 then the padded K = 16 (:func:`mma_k2_then_k`)
    "k2_s8_m16": (mma_k2_then_k, ["i8[2]", "i8[2]", "i8[2]", "i8[2]", "i32[2]", 16, 32, 16]),
    "k2_e4m3_n16": (mma_k2_then_k, ["f8e4m3[2]", "f8e4m3[2]", "f8e4m3[2]", "f8e4m3[2]", "f32[2]", 128, 16, 16]),
}
SMALL.update(K2)
BYTES = {"f16": 2, "bf16": 2, "tf32": 4}  # element bytes (8-bit otherwise)
SMALL_BS = {
    "bs_m32_loop": (bs.mma_scaled_loop, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 32, 64, 64, 32]),
    "bs_m16_single": (bs.mma_scaled_single, ["f8e5m2[2]", "f8e8m0[2]", "f8e5m2[2]", "f8e8m0[2]", "f32[2]", 16, 32, 64,
                                             32]),
    "f4_nvfp4_m16": (bs.mma_scaled_loop, ["f4[2]", "f8e4m3[2]", "f4[2]", "f8e4m3[2]", "f32[2]", 16, 32, 64, 16]),
    "f4_mxfp4_m32_bt": (bs.mma_scaled_loop_bt, ["f4[2]", "f8e8m0[2]", "f4[2]", "f8e8m0[2]", "f32[2]", 32, 32, 128,
                                                32]),
    # N = 16 in a K loop: B (K x 16, rows of 16 bytes) by a TMA box without swizzle, copied K-major per dot
    "bs_n16_loop": (bs.mma_scaled_loop, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 128, 16, 64, 32]),
}
bs.KERNELS.update(SMALL_BS)  # run by the block-scaled tests' helpers (their KernelSet reads this table)
_KERNELS = KernelSet(SMALL, "sm100-tcgen05-small-")


def _export(name: str) -> str:
    if name in SMALL_BS:
        return bs._export(name)
    path = os.path.join(_KERNELS._dir, f"{name}.tileirbc")
    if not os.path.exists(path):
        ck.export_spec(*SMALL[name], name, path)
    return path


def _el(name: str) -> str:
    return name.split("_")[1]


@pytest.mark.parametrize("name", [n for n in SMALL if _el(n) in ATOM and SMALL[n][1][2] != "f16[2]" and n not in K2])
def test_small_tiles_take_tcgen05(name):
    """Selection, then stage 4: per K step two M = 64 MMAs for a tile of 64 rows or fewer (D lanes 0 and 16;
    M >> 4 = 4 in the instruction descriptor), an allocation of the accumulator's columns; the loop is pipelined
    (TMA) and a 16- / 32-row A stage copied into the 64 repeated rows (each 16-byte unit stored 64 / M times)
    before the dot's barrier. N = 16 of 8-bit operands, N = 8: the instruction descriptor's transpose-B bit 0 (B
    K-major), N >> 3 = 1 for N = 8."""
    _kernel, params = SMALL[name]
    tm, tn, tk = params[-3:]
    el = _el(name)
    text = str(compile_file(_export(name), "sm_100a", stop_after="tileas-select-atoms").module)
    assert f'#nv_tileas.atom<"{ATOM[el]}">' in text
    text = str(compile_file(_export(name), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    k_inst = {"f16": 16, "bf16": 16}.get(el, 32)
    dots = text.count('"sm100.umma_commit"')
    m64 = tm <= 64
    assert dots >= 1 and text.count('"sm100.umma"') == dots * (1 + m64) * max(1, tk // k_inst)
    assert ("arith.constant 1048576 : i32" in text) == m64  # D lane 16
    narrow = tn * BYTES.get(el, 1) < 32  # B's N-major rows under the narrowest swizzle
    idesc = instr_desc(KIND[el], plain.ELEM[el], plain.ELEM[el], "i32" if el in ("s8", "u8") else "f32", tn,
                       el != "u8", el != "u8", m=64 if m64 else 128, b_mn_major=not narrow)
    assert f"arith.constant {idesc} : i32" in text and ((idesc >> 16) & 1) == (not narrow)
    # K = 16 of 8-bit operands: the padding of A and B zeroed, 16 bytes a store
    assert ("llvm.mlir.zero : vector<4xi32>" in text) == (tk * BYTES.get(el, 1) == 16)
    # the pipelined loop: TMA (A's stage has the tile's rows; a tile of 16-byte rows is one box without swizzle;
    # 8-byte rows, an e4m3 B of N = 8, are not staged)
    assert '"cute_nvgpu.tma_load"' in text
    # the stage copy: one 16-byte load, 64 / M stores at rows r, r + M, ...
    assert "cute_nvgpu.mma_sync" not in text and "wgmma" not in text


@pytest.mark.parametrize("name, boxes", [("k16_u8_i32", [([16, 64], 0), ([32, 16], 32)]),
                                         ("m16_s8_n16", [([32, 16], 32), ([16, 32], 0)]),
                                         ("m16_e4m3_k16", [([16, 16], 0), ([16, 16], 0)]),
                                         ("bs_n16_loop", [([64, 128], 64), ([16, 64], 0)])])
def test_16_byte_rows_by_tma_boxes_without_swizzle(name, boxes):
    """A piped tile of 16-byte rows (8-bit K or N of 16: no swizzled layout) is one TMA box of 16-byte lines without
    swizzle (``CU_TENSOR_MAP_SWIZZLE_NONE``: recipe swizzle 0) into dense rows of its stage (tcgen05 dots only:
    their atoms copy such a stage into their layouts); the others keep their swizzled boxes. Recipes: A's, then
    B's (box innermost first, swizzle code 0 none / 1 32B)."""
    import json

    text = str(compile_file(_export(name), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    recipes = json.loads(re.search(r'tilecore.tensor_maps = "(.*?)"', text).group(1).replace("\\22", '"'))
    # (a third recipe: the epilogue's TMA store of C)
    assert [(r["box_dim"], r["swizzle"]) for r in recipes[:2]] == [(b, {0: 0, 32: 1, 64: 2}[sw]) for b, sw in boxes]
    assert text.count('"cute_nvgpu.tma_load"') >= 2


@pytest.mark.skipif(not CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
@pytest.mark.parametrize("name, gpu", [(n, g) for n in ["m32_f16_f32", "m16_e4m3_f32", "m32_tf32_f32", "n16_e4m3_f32",
                                                         "m16_e4m3_k16", "bs_m32_loop", "f4_nvfp4_m16", "n8_f16_f32",
                                                         "n8_tf32_f32"]
                                       for g in ("sm_100a", "sm_103a")] + [("m16_s8_n16", "sm_100a")])
def test_small_tiles_ptxas_and_sass(name, gpu, tmp_path):
    """ptxas accepts the kernels; the SASS has the tensor-core MMAs (UTC*MMA) and the TMA loads (UTMALDG; tiles of
    16-byte rows too), no HMMA. (s8 on sm_103a keeps IMMA: ptxas has no ``.kind::i8`` there.)"""
    cubin = compile_file(_export(name), gpu).artifacts["cubin"]
    cubin = cubin if isinstance(cubin, bytes) else next(iter(cubin.values()))
    path = tmp_path / f"{name}.cubin"
    path.write_bytes(cubin)
    sass = subprocess.run([CUOBJDUMP, "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    assert re.search(r"\bUTC\w*MMA\b", sass), sass[:2000]
    assert "UTMALDG" in sass and "HMMA." not in sass


@plain.NUMERIC_SKIP
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("name", [n for n in SMALL if n not in K2])
def test_small_tiles_numbers(name, aligned):
    """c = a @ b on sizes that are not tile multiples (odd: the loop's element-copy form; aligned: TMA), exact
    for integers, else within f32 accumulation error (f16 accumulators: one rounding per K tile)."""
    _kernel, params = SMALL[name]
    tm, tn, tk = params[-3:]
    el = _el(name)
    m, n, k = (tm + 9, tn + 5, 2 * tk + 3) if not aligned else (3 * tm + 16, tn + 16, 2 * tk + 16)
    rng = np.random.default_rng(tm + tn + tk)
    if el == "tf32":
        a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        av, bv = (x.view(np.uint32) & np.uint32(0xFFFFE000) for x in (a, b))  # tf32: 10 mantissa bits
        av, bv = av.view(np.float32).astype(np.float64), bv.view(np.float32).astype(np.float64)
    else:
        (a, av), (b, bv) = plain._operand(rng, (m, k), el), plain._operand(rng, (k, n), el)
    acc = params[2].split("[")[0]
    acc_dt = {"i32": np.int32, "f16": np.float16}.get(acc, np.float32)
    c = np.zeros((m, n), acc_dt)
    _KERNELS.run(name, "sm_100a", (cdiv(m, tm), cdiv(n, tn), 1), arr(a) + arr(b) + arr(c))
    want = av @ bv
    if acc_dt == np.int32:
        np.testing.assert_array_equal(c.astype(np.int64), (want + 2**31) % 2**32 - 2**31)
    else:
        tol = 1e-2 if acc_dt == np.float16 else 2e-3 if el == "tf32" else 1e-4
        np.testing.assert_allclose(c.astype(np.float64), want, atol=tol * np.abs(want).max(), rtol=0)


@plain.NUMERIC_SKIP
@pytest.mark.parametrize("name", list(K2))
def test_k_padding_is_zeroed_numbers(name):
    """Two single dots whose operands take the same scratch slots: K = 32, then K = 16 padded to 32 (the first
    dot's data lies in the second's padding, which is zeroed): exact for s8, within f32 error for e4m3."""
    _kernel, params = SMALL[name]
    tm, tn, tk = params[-3:]
    el = _el(name)
    m, n = tm + 5, tn + 7
    rng = np.random.default_rng(tm + tn)
    (a, av), (b, bv) = plain._operand(rng, (m, 2 * tk), el), plain._operand(rng, (2 * tk, n), el)
    (a2, av2), (b2, bv2) = plain._operand(rng, (m, tk), el), plain._operand(rng, (tk, n), el)
    c = np.zeros((m, n), np.int32 if el == "s8" else np.float32)
    _KERNELS.run(name, "sm_100a", (cdiv(m, tm), cdiv(n, tn), 1), arr(a) + arr(b) + arr(a2) + arr(b2) + arr(c))
    want = av @ bv + av2 @ bv2
    text = str(compile_file(_export(name), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"sm100.umma_commit"') == 2 and "llvm.mlir.zero : vector<4xi32>" in text
    if el == "s8":
        np.testing.assert_array_equal(c, want)
    else:
        np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


@pytest.mark.parametrize("name", list(SMALL_BS))
def test_small_block_scaled_tiles_stage4_ops(name):
    """A 16- / 32-row block-scaled tile: one M = 128 MMA per N instruction and K step (M >> 4 = 8), A and its scale
    factors in layout F with the tile's rows repeated (each A row stored 128 / M times)."""
    text = str(compile_file(_export(name), "sm_100a", stop_after="tileas-select-atoms").module)
    assert '"nv_tileas.block_scaled_mma"' in text and "#nv_tileas.atom<\"mma.sm100a" in text
    text = str(compile_file(_export(name), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    params = (SMALL_BS[name])[1]
    tk = params[-2]
    k_inst = 64 if name.startswith("f4") else 32
    dots = text.count('"sm100.umma_commit"')
    assert dots >= 1 and text.count('"sm100.umma_bs"') == dots * (tk // k_inst)
    assert '"sm100.tmem_cp"' in text


@bs.NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk", [("bs_m32_loop", (70, 90, 200)), ("bs_m16_single", (40, 50, 60)),
                                       ("f4_nvfp4_m16", (37, 40, 150)), ("f4_mxfp4_m32_bt", (50, 70, 300)),
                                       ("bs_n16_loop", (130, 40, 200)), ("bs_n16_loop", (150, 48, 256))])
def test_small_block_scaled_tiles_numbers(name, mnk):
    """(A * scale_A) @ (B * scale_B) with 16- / 32-row tiles, sizes not tile multiples, against numpy."""
    run = bs._f4_run if name.startswith("f4") else bs._run
    c, av, bv = run(name, *mnk, seed=sum(mnk))
    bs._check(c.astype(np.float64), av, bv)
