"""Pipelined K loops through ``ct.astype(x, ct.tfloat32)``: the f32 tile is copied into the stage as it is (TMA on
sm_90a, cp.async on sm_80 / with ``tileas.tma=off``) and the conversion rounds the stage in place (per word, then on
sm_90+ fence.proxy.async and a barrier) before the dot reads it. The rounding is cuTile's (round to nearest, ties to
even: its test_cast.py; computed on the bits, one NaN test each); the MMA itself would only drop the low 13 bits of each
word (PTX ISA: the .tf32 operands of wgmma / mma.sync), so it is applied, not left to the MMA. wgmma takes a tf32
B K-major only: a row-major B is still written transposed from registers per dot, A is pipelined (tcgen05: both,
the sm100 atom transposing B's stage)."""

from __future__ import annotations

import cutile_kernels as ck
import numpy as np
import pytest
from emulated_kernels import KernelSet, cdiv

from tilecore import emulate
from tilecore.compiler import compile_file
from tilecore.options import CompileOptions

ct = pytest.importorskip("cuda.tile")

_K = KernelSet({
    "tf32_wg": (ck.mma_tf32_loop, ["f32[2]/16", "f32[2]/16", "f32[2]/16", 64, 32, 16]),
    "tf32_wg128": (ck.mma_tf32_loop, ["f32[2]/16", "f32[2]/16", "f32[2]/16", 128, 64, 32]),
    "tf32_sync": (ck.mma_tf32_loop, ["f32[2]/16", "f32[2]/16", "f32[2]/16", 32, 32, 16]),
}, "tileas-tf32-pipe-")


def _stage4(name: str, sm: str, extra: dict | None = None) -> str:
    _K.compiled(name, "sm_80")  # exports the kernel
    import os

    path = os.path.join(_K._dir, f"{name}.tileirbc")
    return str(compile_file(path, sm, CompileOptions(emit="mlir", extra=extra or {}),
                            stop_after="convert-tileas-to-llvm").module)


def test_tf32_a_pipelined_by_tma_on_sm90a():
    """sm_90a, 64 x 32 x 16: A's tiles come by TMA (3 stages: 2 boxes in the prologue, 1 per iteration), B's are
    loaded and written K-major per dot; the stage is rounded in place (8 words a thread: 64 x 16 / 128) and
    fenced for the async proxy; with ``tileas.tma=off`` cp.async copies A instead."""
    text = _stage4("tf32_wg", "sm_90a")
    assert text.count('"cute_nvgpu.tma_load"') == 3 and "cute_nvgpu.cp_async" not in text
    assert text.count('"cute_nvgpu.wgmma"') == 2  # m64n32k8 x 2 K steps
    # 8 roundings of A's stage words, 4 of B's registers (32 x 16 / 128): one NaN test each
    assert text.count("arith.cmpf uno") == 8 + 4 and "nvvm.convert.float.to.tf32" not in text
    assert text.count('"cute_nvgpu.fence_view_async_shared"') >= 2  # the rounding's + the refill's
    off = _stage4("tf32_wg", "sm_90a", {"tileas.tma": "off"})
    assert "tma_load" not in off and off.count('"cute_nvgpu.cp_async"') > 0


def test_tf32_pipelined_for_tcgen05():
    """sm_100a (tcgen05 .kind::tf32, B K-major only): both tiles come by TMA (A one 128B box, B two: 3 a stage, 2
    stages in the prologue + 1 per iteration), each stage rounded in place (A 128 x 32, B 32 x 64 words: 32 + 16 a
    thread); the sm100 atom copies B's MN-major stage into its K-major layout in the scratch buffer, so the loop keeps
    its body's scratch past the ring (the copy wrote into the ring's stages before: numbers below)."""
    text = _stage4("tf32_wg128", "sm_100a")
    assert text.count('"cute_nvgpu.tma_load"') == 3 * 3
    assert text.count("arith.cmpf uno") == 128 * 32 // 128 + 32 * 64 // 128


def test_tf32_pipelined_by_cp_async_on_sm80():
    """sm_80 (mma.sync m16n8k8 .tf32): both tiles copied by cp.async into swizzled stages (rows of 64 / 128 bytes),
    each rounded in place (32 x 16 and 16 x 32 words: 4 each a thread), no fence.proxy.async (no async proxy)."""
    text = _stage4("tf32_sync", "sm_80")
    assert text.count('"cute_nvgpu.cp_async"') > 0 and text.count("arith.cmpf uno") == 4 + 4
    assert "fence_view_async_shared" not in text


@pytest.mark.parametrize("name, sm, options, mnk", [
    ("tf32_wg", "sm_90a", {}, (100, 45, 52)), ("tf32_wg128", "sm_90a", {}, (130, 70, 100)),
    ("tf32_wg", "sm_90a", {"tileas.tma": "off"}, (70, 33, 36)), ("tf32_sync", "sm_80", {}, (45, 40, 52)),
    ("tf32_wg", "sm_90", {}, (70, 40, 36)), ("tf32_wg128", "sm_100a", {}, (130, 70, 100))])
def test_tf32_pipelined_numbers_exact(name, sm, options, mnk):
    """C = tf32(A) @ tf32(B) exactly, on partial tiles: A's elements have 12 fraction bits, so rounding to
    tf32's 10 (ties to even) and dropping the low bits (what the MMA alone would do) differ; B small integers
    (exact in tf32), every partial sum exact in f32. The arrays have 16-element row pitches (the kernel's
    stride facts), the tensors their leading rows x columns."""
    m, n, k = mnk
    rng = np.random.default_rng(21)
    a_full = np.zeros((m, -(-k // 16) * 16), np.float32)
    b_full = np.zeros((k, -(-n // 16) * 16), np.float32)
    c_full = np.zeros((m, -(-n // 16) * 16), np.float32)
    a, b, c = a_full[:, :k], b_full[:, :n], c_full[:, :n]
    a[:] = rng.integers(1, 4, (m, k)) * (1 + rng.integers(0, 4096, (m, k)) / 4096) * rng.choice([-1, 1], (m, k))
    b[:] = rng.integers(-3, 4, (k, n))
    import os

    path = os.path.join(_K._dir, f"{name}.tileirbc")
    _K.compiled(name, "sm_80")
    module = compile_file(path, sm, CompileOptions(emit="mlir", extra=options),
                          stop_after="convert-nvgpu-and-gpu-to-nvvm").module
    text = str(module)
    assert "cp.async" in text, "the loop is not pipelined"  # cp.async.bulk.tensor (TMA) or cp.async.shared.global
    tm, tn = _K.table[name][1][3:5]
    def padded(full, rows, cols):  # the whole padded array as the argument, its leading rows x cols as the tensor
        return [full, np.int32(rows), np.int32(cols), np.int32(full.shape[1]), np.int32(1)]

    emulate.launch(module, name, (cdiv(m, tm), cdiv(n, tn), 1), (128, 1, 1),
                   padded(a_full, m, k) + padded(b_full, k, n) + padded(c_full, m, n))
    bits = a.astype(np.float32).view(np.uint32)
    rn = ((bits + np.uint32(0xFFF) + ((bits >> 13) & 1)) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    want = rn @ b.astype(np.float64)
    np.testing.assert_array_equal(c, want.astype(np.float32))
    trunc = (bits & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64) @ b.astype(np.float64)
    assert not np.array_equal(want, trunc)  # the test tells rounding from truncation
