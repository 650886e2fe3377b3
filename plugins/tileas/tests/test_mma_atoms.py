"""Every tensor-core MMA atom of the cute plugin end to end: cuTile kernels exported, atom selected by
``tileas-select-atoms``, compiled for sm_80 / sm_86 / sm_89, numbers in the CPU emulator against numpy on
sizes that are not tile multiples; epilogues on the fragment layout (bias, scaling, activation)."""

from __future__ import annotations

import cutile_kernels as ck
import numpy as np
import pytest
from emulated_kernels import KernelSet, arr, cdiv

from tilecore.compiler import compile_file
from tilecore.narrow_floats import decode

ct = pytest.importorskip("cuda.tile")
mma_loop, mma_tf32_loop, mma_epilogue = ck.mma_loop, ck.mma_tf32_loop, ck.mma_epilogue  # shared with the sm100 tests


KERNELS = {
    "mma_f16_f32": (mma_loop, ["f16[2]", "f16[2]", "f32[2]", 64, 32, 32]),
    "mma_f16_f16": (mma_loop, ["f16[2]", "f16[2]", "f16[2]", 32, 64, 32]),
    "mma_bf16_f32": (mma_loop, ["bf16[2]", "bf16[2]", "f32[2]", 32, 32, 32]),
    "mma_tf32_f32": (mma_tf32_loop, ["f32[2]", "f32[2]", "f32[2]", 32, 32, 16]),
    "mma_s8_i32": (mma_loop, ["i8[2]", "i8[2]", "i32[2]", 32, 32, 64]),
    "mma_u8_i32": (mma_loop, ["u8[2]", "u8[2]", "i32[2]", 16, 32, 64]),
    "mma_e4m3_f32": (mma_loop, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 32, 32, 64]),
    "mma_e5m2_f32": (mma_loop, ["f8e5m2[2]", "f8e5m2[2]", "f32[2]", 32, 32, 64]),
    "mma_epilogue": (mma_epilogue, ["f16[2]", "f16[2]", "f32[1]", "f16[2]", "f32", 32, 64, 32]),
    # 64-row tiles: a warpgroup's m64 (sm_90a wgmma atoms)
    "wg_tf32_f32": (mma_tf32_loop, ["f32[2]", "f32[2]", "f32[2]", 64, 32, 16]),
    "wg_s8_i32": (mma_loop, ["i8[2]", "i8[2]", "i32[2]", 64, 32, 64]),
    "wg_u8_i32": (mma_loop, ["u8[2]", "u8[2]", "i32[2]", 64, 64, 32]),
    "wg_e4m3_f32": (mma_loop, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 64, 32, 64]),
    "wg_e5m2_f32": (mma_loop, ["f8e5m2[2]", "f8e5m2[2]", "f32[2]", 64, 64, 32]),
    "wg_f16_f16": (mma_loop, ["f16[2]", "f16[2]", "f16[2]", 64, 64, 32]),
    # K tiles of 8 16-bit elements: mma.sync m16n8k8 on every target
    "k8_f16_f32": (mma_loop, ["f16[2]", "f16[2]", "f32[2]", 32, 32, 8]),
    "k8_f16_f16": (mma_loop, ["f16[2]", "f16[2]", "f16[2]", 64, 32, 8]),
    "k8_bf16_f32": (mma_loop, ["bf16[2]", "bf16[2]", "f32[2]", 64, 16, 8]),
    # K tiles of 16 8-bit elements on sm_90a: wgmma m64nNk32 over K padded with zeros
    "wgk16_e4m3_f32": (mma_loop, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 64, 32, 16]),
    "wgk16_s8_i32": (mma_loop, ["i8[2]", "i8[2]", "i32[2]", 64, 64, 16]),
}
ATOM = {
    "mma_f16_f32": "mma.sm80.m16n8k16.f16.f32", "mma_f16_f16": "mma.sm80.m16n8k16.f16.f16",
    "mma_bf16_f32": "mma.sm80.m16n8k16.bf16.f32", "mma_tf32_f32": "mma.sm80.m16n8k8.tf32.f32",
    "mma_s8_i32": "mma.sm80.m16n8k32.i8.i32", "mma_u8_i32": "mma.sm80.m16n8k32.i8.i32",
    "mma_e4m3_f32": "mma.sm89.m16n8k32.f8.f32", "mma_e5m2_f32": "mma.sm89.m16n8k32.f8.f32",
    "mma_epilogue": "mma.sm80.m16n8k16.f16.f32",
}
_KERNELS = KernelSet(KERNELS, "tileas-mma-atoms-")
SMS = ("sm_80", "sm_86", "sm_89")


def _operand(rng, shape, name: str):
    """(the array the kernel gets, its values as float64 / int64): 8-bit floats as their codes (uint8),
    bf16 as its bits (uint16): numpy has neither type."""
    if name in ("s8", "u8"):
        lo, hi = (-128, 128) if name == "s8" else (0, 256)
        x = rng.integers(lo, hi, shape).astype(np.int8 if name == "s8" else np.uint8)
        return x, x.astype(np.int64)
    if name in ("e4m3", "e5m2"):
        fmt = "f8E4M3FN" if name == "e4m3" else "f8E5M2"
        table = np.array([decode(c, fmt) for c in range(256)])
        finite = np.flatnonzero(np.isfinite(table) & (np.abs(table) <= 16))
        codes = rng.choice(finite, shape).astype(np.uint8)
        return codes, table[codes]
    if name == "bf16":
        u = rng.standard_normal(shape).astype(np.float32).view(np.uint32)
        bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        return bits, (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    x = rng.standard_normal(shape).astype(np.float16 if name == "f16" else np.float32)
    if name == "tf32":
        return x, _tf32(x).astype(np.float64)
    return x, x.astype(np.float64)


def _tf32(x: np.ndarray) -> np.ndarray:
    """``ct.astype(x, ct.tfloat32)``: round to 10 mantissa bits, to nearest, ties to even (finite x)."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0xFFF) + ((bits >> 13) & 1)) & np.uint32(0xFFFFE000)).view(np.float32)


def _run_and_check(kset, name: str, sm: str, mnk: tuple, seed: int) -> None:
    """Run kernel ``name`` (``mma_loop``-like: a, b, c and TM / TN / TK last) on ``m x n x k`` random operands of
    its element type and compare c with numpy: exact for integers (wrapping), else within the accumulation
    error (f32: exact products summed in f32; an f16 accumulator is rounded after every mma)."""
    _kernel, params = kset.table[name]
    tm, tn, _tk = params[-3:]
    el = name.split("_")[1]
    m, n, k = mnk
    rng = np.random.default_rng(seed)
    (a, av), (b, bv) = _operand(rng, (m, k), el), _operand(rng, (k, n), el)
    acc_dt = {"f32": np.float32, "f16": np.float16, "i32": np.int32}[name.split("_")[2]]
    c = np.zeros((m, n), acc_dt)
    kset.run(name, sm, (cdiv(m, tm), cdiv(n, tn), 1), arr(a) + arr(b) + arr(c))
    want = av @ bv
    if acc_dt == np.int32:
        np.testing.assert_array_equal(c.astype(np.int64), (want + 2**31) % 2**32 - 2**31)
        return
    tol = 2e-2 * np.abs(want).max() if acc_dt == np.float16 else 1e-4 * np.abs(want).max()
    np.testing.assert_allclose(c.astype(np.float64), want, atol=tol, rtol=0)


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("name", [n for n in KERNELS if n.startswith("mma_") and n != "mma_epilogue"])
def test_mma_atom_numbers(name, sm):
    if "e4m3" in name or "e5m2" in name:
        if sm != "sm_89":
            pytest.skip("8-bit float mma needs sm_89")
    _kernel, params = KERNELS[name]
    tm, tn, tk = params[-3:]
    chosen = compile_file(_export(name), sm, stop_after="tileas-select-atoms").module
    assert f'#nv_tileas.atom<"{ATOM[name]}">' in str(chosen)
    _run_and_check(_KERNELS, name, sm, (2 * tm + 5, tn + 3, 2 * tk + 7), 3)  # no size a tile multiple


@pytest.mark.parametrize("sm", ("sm_80", "sm_90a"))
def test_mma_epilogue_on_the_fragment_layout(sm):
    m, n, k = 45, 70, 50
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    c = np.zeros((m, n), np.float16)
    alpha = np.float32(0.75)
    _KERNELS.run("mma_epilogue", sm, (cdiv(m, 32), cdiv(n, 64), 1), arr(a) + arr(b) + arr(bias) + arr(c) + [alpha])
    want = np.maximum(alpha * (a.astype(np.float64) @ b.astype(np.float64)) + bias[None, :], 0)
    np.testing.assert_allclose(c.astype(np.float64), want, atol=2e-2 * np.abs(want).max(), rtol=0)


def _export(name: str) -> str:
    return _export_from(_KERNELS, name)


# ------------------------------------------------------------------ the cp.async pipeline (K loops)
PIPELINED = {  # kernel -> (M, N, K): rows of whole 16-byte chunks (the run-time alignment check passes),
    # no size a tile multiple; 32 x 32 x 32 / 16 x 32 x 64 tiles: 3 stages, 64 x 32 x 32: 3 stages
    "mma_f16_f32": (133, 40, 72), "mma_f16_f16": (70, 72, 40), "mma_bf16_f32": (45, 48, 56),
    "mma_s8_i32": (40, 48, 80), "mma_u8_i32": (21, 32, 144), "mma_e4m3_f32": (33, 48, 96),
}


@pytest.mark.parametrize("name", list(PIPELINED))
def test_pipelined_k_loop_numbers(name):
    sm = "sm_89" if "e4m3" in name else "sm_80"
    text = str(compile_file(_export(name), sm, stop_after="convert-tileas-to-llvm").module)
    assert "cute_nvgpu.cp_async" in text  # the loop is pipelined (behind the alignment check)
    _run_and_check(_KERNELS, name, sm, PIPELINED[name], 11)


def test_pipelined_k_loop_structure():
    """32 x 32 x 32 bf16 tiles: a stage is A and B in the 64-byte XOR-swizzled layout (32 rows of 64 bytes each,
    2 KiB apiece, 1024-byte aligned) = 4096 bytes, so 3 stages; the prologue fills 2 (each guarded by the trip count, always committed), the loop waits for all
    but 1 group, synchronises, refills the stage freed last iteration and computes from its stage; one
    16-byte cp.async per thread per operand tile (32 x 32 halves = 128 chunks); misaligned arrays take the
    un-pipelined copy of the loop (run-time check)."""
    text = str(compile_file(_export("mma_bf16_f32"), "sm_80", stop_after="convert-tileas-to-llvm").module)
    lines = text.splitlines()
    copies = [ln for ln in lines if "cute_nvgpu.cp_async\"" in ln or "cute_nvgpu.cp_async(" in ln]
    assert len(copies) == 2 * 2 + 2  # prologue: 2 stages x (A, B); loop: A, B
    assert all("size = 16 : i32" in ln for ln in copies)
    waits = [ln for ln in lines if "cute_nvgpu.cp_async_wait" in ln]
    assert sorted(ln.split("n = ")[1].split(" ")[0] for ln in waits) == ["0", "1"]
    assert sum("cute_nvgpu.cp_async_commit" in ln for ln in lines) == 3
    # 2 x 2 warps of 16 x 16: 2 mma per K step, in the pipelined loop and in the fallback loop
    assert len([ln for ln in lines if "cute_nvgpu.mma_sync" in ln]) == 2 * 2
    assert "arith.constant 4096 : i32" in text  # the stage stride


@ct.kernel
def dot_once(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """One dot of loaded tiles (no K loop, so no pipeline): its operands go to shared memory from registers."""
    i, j = ct.bid(0), ct.bid(1)
    a = ct.load(A, index=(i, 0), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(B, index=(0, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(C, index=(i, j), tile=ct.mma(a, b, ct.zeros((TM, TN), dtype=C.dtype)))


@pytest.mark.parametrize("sm, dt, vec, tk", [("sm_80", np.float16, "vector<4xf16>", 64),
                                             ("sm_90a", np.float16, "vector<4xf16>", 64),
                                             ("sm_100a", np.float16, "vector<4xf16>", 64),
                                             ("sm_90a", np.int8, "vector<4xi8>", 64),
                                             ("sm_80", np.float16, "vector<4xf16>", 8)])  # A: padded 16-byte rows
def test_register_operands_are_stored_a_vector_per_group(sm, dt, vec, tk):
    """A dot's operands written from registers into their swizzled layouts (mma.sync, wgmma, tcgen05): each group of
    the blocked layout's 4 consecutive elements is one vector store into shared memory (one address and predicate a
    group, ``dot._vector_groups``; before, one of each an element, live across K loops: MLA's spills), and no
    scalar store of the element type remains (but for sm_90a's s8 B, which wgmma reads K-major: its transpose is
    written element by element); rows of 16 bytes (K = 8 f16 on sm_80) are padded rather than swizzled, and stored
    a vector per group too; the numbers on partial tiles."""
    import tilecore.cutile as tc

    rng = np.random.default_rng(8)
    m, n, k = 70, 45, 64
    if dt == np.int8:
        a, b, c = rng.integers(-9, 9, (m, k)).astype(dt), rng.integers(-9, 9, (k, n)).astype(dt), np.zeros((m, n), np.int32)
    else:
        a, b, c = rng.standard_normal((m, k)).astype(dt), rng.standard_normal((k, n)).astype(dt), np.zeros((m, n), np.float32)
    args = (a, b, c, 64, 32, tk)
    ck_ = tc.compile(dot_once, args, gpu_name=sm)
    elem = vec.split("x")[1].rstrip(">")
    lines = str(ck_.module).splitlines()
    vector_stores = [ln for ln in lines if "llvm.store" in ln and f": {vec}, !llvm.ptr<3>" in ln]
    scalar_stores = [ln for ln in lines if "llvm.store" in ln and f": {elem}, !llvm.ptr<3>" in ln]
    assert len(vector_stores) >= 2 and (dt == np.int8 or not scalar_stores), (len(vector_stores), len(scalar_stores))
    tc.launch(None, (cdiv(m, 64), cdiv(n, 32)), dot_once, args, gpu_name=sm)
    want = a[:, :tk].astype(np.float64) @ b[:tk].astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3)


def test_stride_hints_make_the_pipeline_unconditional():
    """With cuTile's stride facts (rows of 16-byte multiples: ``assume div_by``) and 16-byte aligned bases the
    alignment is known: one (pipelined) loop, no run-time check, no fallback; numbers on a partial tile."""
    kernel, params = ck.KERNELS["matmul_bf16_aligned"]
    aligned = KernelSet({"matmul_bf16_aligned": (kernel, params)}, "tileas-mma-aligned-")
    text = str(compile_file(_export_from(aligned, "matmul_bf16_aligned"), "sm_80",
                            stop_after="convert-tileas-to-llvm").module)
    assert text.count("cute_nvgpu.mma_sync") == 16 and "llvm.ptrtoint" not in text  # 128 x 64: 2 x 2 warps of 64 x 32
    m, n, k = 130, 72, 40  # rows of 16-byte multiples, no size a tile multiple
    rng = np.random.default_rng(2)
    (a, av), (b, bv) = _operand(rng, (m, k), "bf16"), _operand(rng, (k, n), "bf16")
    c = np.zeros((m, n), np.float32)
    aligned.run("matmul_bf16_aligned", "sm_80", (cdiv(m, 128), cdiv(n, 64), 1), arr(a) + arr(b) + arr(c))
    want = av @ bv
    np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


def _export_from(kset: KernelSet, name: str) -> str:
    import os

    path = os.path.join(kset._dir, f"{name}.tileirbc")
    if not os.path.exists(path):
        kernel, params = kset.table[name]
        ck.export_spec(kernel, params, name, path)
    return path


# ------------------------------------------------------------------ sm_90a: warpgroup MMA (wgmma)
@pytest.mark.parametrize("aligned", [False, True])
def test_wgmma_atom_numbers_on_sm90a(aligned):
    """f16 64 x 32 x 32 tiles on sm_90a take cute's wgmma atom (one m64n32k16 per K step for the warpgroup,
    operands in the 64-byte swizzled layouts through descriptors); the K loop is pipelined (cp.async into the
    swizzled stages) behind the alignment check: aligned rows run the pipelined loop, odd ones the fallback."""
    name = "mma_f16_f32"
    path = _export(name)
    assert '#nv_tileas.atom<"mma.sm90a.m64nNk16.f16.f32">' in str(
        compile_file(path, "sm_90a", stop_after="tileas-select-atoms").module)
    text = str(compile_file(path, "sm_90a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"cute_nvgpu.wgmma"') == 2 * 2  # 2 K steps, pipelined loop + fallback
    assert text.count('"cute_nvgpu.wgmma_fence"') == 2 and text.count('"cute_nvgpu.wgmma_wait"') == 2
    assert "cute_nvgpu.mma_sync" not in text and "cute_nvgpu.ldmatrix" not in text
    m, n, k = (133, 40, 72) if aligned else (133, 35, 71)
    rng = np.random.default_rng(8)
    (a, av), (b, bv) = _operand(rng, (m, k), "f16"), _operand(rng, (k, n), "f16")
    c = np.zeros((m, n), np.float32)
    _KERNELS.run(name, "sm_90a", (cdiv(m, 64), cdiv(n, 32), 1), arr(a) + arr(b) + arr(c))
    want = av @ bv
    np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


def test_wgmma_with_stride_hints_two_instructions_per_step():
    """128 x 64 x 32 bf16 tiles with stride hints on sm_90a: one pipelined loop (no fallback), two m64n64k16
    per K step (the warpgroup's 128 rows), numbers on partial tiles; ptxas accepts it."""
    kernel, params = ck.KERNELS["matmul_bf16_aligned"]
    kset = KernelSet({"matmul_bf16_aligned": (kernel, params)}, "tileas-wgmma-aligned-")
    path = _export_from(kset, "matmul_bf16_aligned")
    text = str(compile_file(path, "sm_90a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"cute_nvgpu.wgmma"') == 2 * 2  # 2 instructions x 2 K steps, one loop (no fallback)
    assert "shape = array<i32: 64, 64, 16>" in text
    assert compile_file(path, "sm_90a").artifacts["cubin"][:4] == b"\x7fELF"
    m, n, k = 130, 72, 40
    rng = np.random.default_rng(9)
    (a, av), (b, bv) = _operand(rng, (m, k), "bf16"), _operand(rng, (k, n), "bf16")
    c = np.zeros((m, n), np.float32)
    kset.run("matmul_bf16_aligned", "sm_90a", (cdiv(m, 128), cdiv(n, 64), 1), arr(a) + arr(b) + arr(c))
    want = av @ bv
    np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


def test_wgmma_f16_accumulator_on_sm90a():
    """f16 x f16 -> f16 on sm_90a: wgmma with an f16 D (two elements per register, packed as vector<2xf16>
    pairs of the fragment's consecutive elements); numbers on partial tiles (rounded to f16 per instruction)."""
    name = "wg_f16_f16"
    path = _export(name)
    assert '#nv_tileas.atom<"mma.sm90a.m64nNk16.f16.f16">' in str(
        compile_file(path, "sm_90a", stop_after="tileas-select-atoms").module)
    text = str(compile_file(path, "sm_90a", stop_after="convert-cute-to-llvm").module)
    assert "nvvm.wgmma.mma_async" in text and "D[<f16>" in text and "vector<2xf16>" in text
    assert "cute_nvgpu.mma_sync" not in text and "nvvm.mma.sync" not in text
    _run_and_check(_KERNELS, name, "sm_90a", (64 + 9, 64 + 8, 2 * 32 + 8), 14)


WG_ATOM = {"wg_tf32_f32": "mma.sm90a.m64nNk8.tf32.f32", "wg_s8_i32": "mma.sm90a.m64nNk32.i8.i32",
           "wg_u8_i32": "mma.sm90a.m64nNk32.i8.i32", "wg_e4m3_f32": "mma.sm90a.m64nNk32.f8.f32",
           "wg_e5m2_f32": "mma.sm90a.m64nNk32.f8.f32"}


@pytest.mark.parametrize("name", list(WG_ATOM))
def test_wgmma_k_major_b_types_on_sm90a(name):
    """tf32, s8, u8, e4m3, e5m2 on sm_90a: wgmma with B stored K-major (its transpose, written from registers:
    B is not pipelined, A is), ``layout_b = col``; numbers on partial tiles."""
    path = _export(name)
    assert f'#nv_tileas.atom<"{WG_ATOM[name]}">' in str(compile_file(path, "sm_90a",
                                                                     stop_after="tileas-select-atoms").module)
    text = str(compile_file(path, "sm_90a", stop_after="convert-cute-to-llvm").module)
    assert "nvvm.wgmma.mma_async" in text and "cute_nvgpu.cp_async" not in text
    assert "B[<" in text and ", <col>]" in text  # layout_b = col: K-major B
    _kernel, params = KERNELS[name]
    tm, tn, tk = params[-3:]
    _run_and_check(_KERNELS, name, "sm_90a", (tm + 9, tn + 5, 2 * tk + 3), 12)


@pytest.mark.parametrize("sm", ["sm_80", "sm_90a"])
def test_corpus_matmul_f16_pipelined(sm):
    """The corpus matmul_f16 (128 x 128 x 64 tiles, no stride hints) on arrays whose rows are 16-byte
    multiples: the run-time check takes the cp.async-pipelined loop (mma.sync on sm_80, wgmma m64n128k16 on
    sm_90a); partial tiles in M, N and K."""
    import os

    from tileas_test_paths import VISIBLE_CORPUS

    from tilecore import emulate

    path = os.path.join(VISIBLE_CORPUS, "matmul_f16.tileirbc")
    module = compile_file(path, sm, stop_after="convert-nvgpu-and-gpu-to-nvvm").module
    m, n, k = 200, 136, 104
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)

    def arr5(x):  # pointer, shape, strides: the corpus kernel's ABI
        return [x, *[np.int32(d) for d in x.shape], *[np.int32(s // x.itemsize) for s in x.strides]]

    emulate.launch(module, "matmul_f16", (cdiv(m, 128), cdiv(n, 128), 1), (128, 1, 1), arr5(a) + arr5(b) + arr5(c))
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), want, atol=2e-2 * np.abs(want).max(), rtol=0)


# ------------------------------------------------------------------ narrow K tiles
K8_ATOM = {"k8_f16_f32": "mma.sm80.m16n8k8.f16.f32", "k8_f16_f16": "mma.sm80.m16n8k8.f16.f16",
           "k8_bf16_f32": "mma.sm80.m16n8k8.bf16.f32"}


@pytest.mark.parametrize("sm", ["sm_80", "sm_90a", "sm_100a"])
@pytest.mark.parametrize("name", list(K8_ATOM))
def test_mma_sync_m16n8k8_for_k_tiles_of_8(name, sm):
    """16-bit K tiles of 8 (no K = 16 atom admits them; they ran on the CUDA cores): mma.sync m16n8k8 on sm_80,
    sm_90a and sm_100a (as NVIDIA's tileiras: HMMA.1688), A by ``ldmatrix .x2``, B by ``.x1 .trans``; ptxas
    accepts it; numbers on partial tiles."""
    path = _export(name)
    assert f'#nv_tileas.atom<"{K8_ATOM[name]}">' in str(compile_file(path, sm, stop_after="tileas-select-atoms").module)
    text = str(compile_file(path, sm, stop_after="convert-cute-to-llvm").module)
    assert "#nvvm.shape<m = 16, n = 8, k = 8>" in text and "nvvm.wgmma" not in text
    assert "num = 2 : i32" in text and "num = 1 : i32" in text  # ldmatrix .x2 (A), .x1 .trans (B)
    assert compile_file(path, sm).artifacts["cubin"]
    _kernel, params = KERNELS[name]
    tm, tn, tk = params[-3:]
    _run_and_check(_KERNELS, name, sm, (tm + 9, tn + 5, 4 * tk + 3), 15)


WGK16_ATOM = {"wgk16_e4m3_f32": "mma.sm90a.m64nNk32.f8.f32", "wgk16_s8_i32": "mma.sm90a.m64nNk32.i8.i32"}


@pytest.mark.parametrize("name", list(WGK16_ATOM))
def test_wgmma_pads_an_8bit_k_of_16_on_sm90a(name):
    """8-bit K tiles of 16 on sm_90a (wgmma's 8-bit K is 32; they ran on the CUDA cores): A and B laid out with K =
    32 (32-byte swizzle), elements 16 .. 31 zeroed by 16-byte stores every dot, one m64nNk32 per K tile; the loop
    is not pipelined (a stage would hold the tile's K only); ptxas accepts it; numbers on partial tiles."""
    path = _export(name)
    assert f'#nv_tileas.atom<"{WGK16_ATOM[name]}">' in str(compile_file(path, "sm_90a",
                                                                       stop_after="tileas-select-atoms").module)
    text = str(compile_file(path, "sm_90a", stop_after="convert-tileas-to-llvm").module)
    _kernel, params = KERNELS[name]
    tm, tn, tk = params[-3:]
    assert f"shape = array<i32: 64, {tn}, 32>" in text and "llvm.mlir.zero : vector<4xi32>" in text
    assert "cute_nvgpu.cp_async" not in text and "cute_nvgpu.tma_load" not in text
    assert compile_file(path, "sm_90a").artifacts["cubin"]
    _run_and_check(_KERNELS, name, "sm_90a", (tm + 9, tn + 5, 4 * tk + 3), 16)
